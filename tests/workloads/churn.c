// SPDX-License-Identifier: GPL-2.0
/*
 * churn.c - many short-lived mappings: an event-rate stress test.
 *
 * usage: churn [iterations=20000]
 *
 * Every iteration maps, touches and unmaps 64 KiB of anonymous memory, and
 * grows the heap by 64 KiB with sbrk(), touches it and shrinks it back.
 * That is 4 syscalls and 32 page faults per iteration, and nothing is left
 * behind: a tracer that drops or misorders events shows up as drift between
 * "start" and "final".  No malloc/stdio, which would move the break.
 *
 * Checkpoints:
 *   start  baseline
 *   half   with MW_STEPS only: half-way through; churn waits after "start"
 *          and "half" (ckpt_wait_step), so a test can stop the tracer's
 *          reader for the first half (tests/robustness/drop_cases.py)
 *   final  same VM size and RSS as start (VmPeak/VmHWM one chunk higher)
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"

#define CHUNK	KIB(64)

static void churn_mmap(void)
{
	char *p = map_anon(CHUNK);

	touch(p, CHUNK);
	if (munmap(p, CHUNK))
		die("munmap");
}

static void churn_brk(void)
{
	char *p = sbrk(CHUNK);

	if (p == (void *)-1)
		die("sbrk grow");
	touch(p, CHUNK);
	if (sbrk(-(intptr_t)CHUNK) == (void *)-1)
		die("sbrk shrink");
}

int main(int argc, char **argv)
{
	unsigned long i, n;
	uintptr_t cur;

	ckpt_init(argc, argv);
	n = arg_ulong(argc, argv, 1, 20000);

	/* A page-aligned break, so each grow covers exactly 16 fresh pages. */
	cur = (uintptr_t)sbrk(0);
	if (sbrk(-cur & (PAGE_SZ - 1)) == (void *)-1)
		die("sbrk align");
	ckpt("start");
	ckpt_wait_step("start");

	for (i = 0; i < n; i++) {
		if (i == n / 2 && ckpt_stepping()) {
			ckpt("half");
			ckpt_wait_step("half");
		}
		churn_mmap();
		churn_brk();
	}
	ckpt_exit(0);
}
