// SPDX-License-Identifier: GPL-2.0
/*
 * stack.c - the main stack grows by page faults alone, with no syscall.
 *
 * usage: stack [depth_kib=2048]
 *
 * Recursion with one page-sized volatile array per frame pushes the stack
 * about depth_kib deeper; returning does not give the pages back, so the
 * [stack] VMA and RssAnon stay grown.  A tracer that only follows mmap-family
 * syscalls sees nothing here; only fault or RSS tracking can.
 *
 * Checkpoints:
 *   before  baseline
 *   after   recursion returned: [stack] VMA and RssAnon ~ += depth_kib
 *   final   same as after
 */
#include "ckpt.h"

#define FRAME_BYTES	PAGE_SZ

/* Where the result goes, so the recursion cannot be optimised away. */
static volatile unsigned long sink;

/*
 * noinline and using the array after the recursive call keep the compiler
 * from turning this into a loop or dropping the frames.
 */
static __attribute__((noinline)) unsigned long dive(unsigned long frames)
{
	volatile char frame[FRAME_BYTES];

	/* Both ends: every page the array spans gets written. */
	frame[0] = (char)frames;
	frame[FRAME_BYTES - 1] = (char)frames;
	if (frames > 1)
		return dive(frames - 1) + frame[0] + frame[FRAME_BYTES - 1];
	return frame[0];
}

int main(int argc, char **argv)
{
	unsigned long depth;

	ckpt_init(argc, argv);
	depth = arg_ulong(argc, argv, 1, 2048);
	/* The default 8 MiB stack rlimit bounds how deep we may go. */
	if (!depth || depth > 6144)
		die("depth_kib must be 1..6144");
	ckpt("before");

	sink = dive(KIB(depth) / FRAME_BYTES);
	ckpt("after");
	ckpt_exit(0);
}
