// SPDX-License-Identifier: GPL-2.0
/*
 * sizes.c - mmaps of known sizes, touched fractions and lifetimes, in two
 * phases, for memwatch's histograms (--hist, "histograms" in the JSON).
 *
 * usage: sizes
 *
 * Every mapping is MAP_SHARED anonymous: each is its own shmem object, so
 * no two ever merge into one VMA (private anonymous ones would, and would
 * get transparent huge pages, which would touch more than was written),
 * and every length is chosen inside a log2 bucket, away from its edges:
 *
 *   (start)  the dynamic loader and libc; nothing of ours
 *   alloc    7 x 6 KiB    (bucket 4096..8191)       first page written: 50%
 *            5 x 96 KiB   (65536..131071)           untouched: 0%
 *            2 x 12 MiB   (8388608..16777215)       one 12.5% written (1.5
 *                                                   MiB: 12%), one all: 100%
 *            3 x 1.5 MiB  (1048576..2097151)        all written: 100%
 *            then a pause of LONG_MS
 *   churn    the 3 x 1.5 MiB unmapped: they lived LONG_MS and a little
 *            more (bucket 65536..131071 us)
 *            9 x 24 KiB   (16384..32767)            each written whole and
 *                                                   unmapped at once
 *            4 x 200 KiB  (131072..262143)          one page of 50: 2%
 *            1 x 48 MiB   (33554432..67108863)      6 MiB written: 12.5%
 *
 * So alloc's mmap sizes are {4096: 7, 65536: 5, 8388608: 2, 1048576: 3},
 * churn's {16384: 9, 131072: 4, 33554432: 1}; nothing dies in alloc; churn
 * sees 3 long and 9 short lifetimes; touched by creating phase: alloc
 * {0: 5, 8: 1, 32: 7, 64: 4}, churn {2: 4, 8: 1, 64: 9}.
 * Checkpoints "alloc" and "churn" are taken right before the phase markers
 * (MEMWATCH_PHASE, USDT: needs <sys/sdt.h>); then "final".
 */
#include <errno.h>
#include <sys/mman.h>

#include "ckpt.h"
#include "../../include/memwatch.h"

#define LONG_MS		80	/* lifetime of the 1.5 MiB ones, at least */
#define END_MS		10

static char *map_shared(size_t len)
{
	return map_anon_flags(len, MAP_SHARED);
}

static void unmap(void *p, size_t len)
{
	if (munmap(p, len))
		die("munmap");
}

static char *mid[3];	/* the 1.5 MiB ones, unmapped in churn */

static void alloc(void)
{
	char *big;
	int i;

	for (i = 0; i < 7; i++)
		touch(map_shared(KIB(6)), PAGE_SZ);
	for (i = 0; i < 5; i++)
		map_shared(KIB(96));
	big = map_shared(MIB(12));
	touch(big, MIB(12) / 8);
	touch(map_shared(MIB(12)), MIB(12));
	/* Last, so that their lifetime is the pause and not much else. */
	for (i = 0; i < 3; i++) {
		mid[i] = map_shared(KIB(1536));
		touch(mid[i], KIB(1536));
	}
	sleep_ms(LONG_MS);
}

static void churn(void)
{
	char *p;
	int i;

	for (i = 0; i < 3; i++)
		unmap(mid[i], KIB(1536));
	for (i = 0; i < 9; i++) {
		p = map_shared(KIB(24));
		touch(p, KIB(24));
		unmap(p, KIB(24));
	}
	for (i = 0; i < 4; i++)
		touch(map_shared(KIB(200)), PAGE_SZ);
	touch(map_shared(MIB(48)), MIB(6));
	sleep_ms(END_MS);
}

int main(int argc, char **argv)
{
	ckpt_init(argc, argv);
	if (!MEMWATCH_MARKERS) {
		errno = ENOSYS;
		die("built without <sys/sdt.h>: no phase markers");
	}
	ckpt("alloc");
	MEMWATCH_PHASE("alloc");
	alloc();
	ckpt("churn");
	MEMWATCH_PHASE("churn");
	churn();
	ckpt_exit(0);
}
