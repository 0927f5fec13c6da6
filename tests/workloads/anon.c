// SPDX-License-Identifier: GPL-2.0
/*
 * anon.c - private anonymous memory: map, touch, split by munmap, split by
 * mprotect, drop pages with MADV_DONTNEED, then a short-lived peak.
 *
 * usage: anon [size_mib=64] [peak_mib=128]
 *
 * The region is laid out in sixteenths ("units", 4 MiB by default):
 *
 *   units  0..10  touched (40 MiB)
 *   units  6..10  unmapped              -> "split"    (hole in the middle)
 *   units  2..3   PROT_READ             -> "mprotect" (left piece in three)
 *   units  3..5   MADV_DONTNEED         -> "dontneed" (8 MiB RSS dropped)
 *
 * Checkpoints: mapped, touched, split, mprotect, dontneed, peak, final.
 */
#include <sys/mman.h>

#include "ckpt.h"

int main(int argc, char **argv)
{
	size_t size, unit, peak_size;
	char *p, *peak;

	ckpt_init(argc, argv);
	size = arg_mib(argc, argv, 1, 64);
	peak_size = arg_mib(argc, argv, 2, 128);
	unit = size / 16;
	if (!unit || unit % PAGE_SZ || !peak_size)
		die("size must be a positive number of MiB");

	p = map_anon(size);
	ckpt("mapped");

	touch(p, 10 * unit);
	ckpt("touched");

	/* A hole in the middle leaves two VMAs: [0, 6) touched, [10, 16) not. */
	if (munmap(p + 6 * unit, 4 * unit))
		die("munmap middle");
	ckpt("split");

	/* Different protection splits the left piece into three VMAs. */
	if (mprotect(p + 2 * unit, unit, PROT_READ))
		die("mprotect");
	ckpt("mprotect");

	/* Frees RSS but keeps the VMA: VM size must not move. */
	if (madvise(p + 3 * unit, 2 * unit, MADV_DONTNEED))
		die("madvise");
	ckpt("dontneed");

	/* The high-water mark for both VM and RSS. */
	peak = map_anon(peak_size);
	touch(peak, peak_size);
	ckpt("peak");

	if (munmap(peak, peak_size))
		die("munmap peak");
	ckpt_exit(0);
}
