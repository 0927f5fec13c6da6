// SPDX-License-Identifier: GPL-2.0
/*
 * thp.c - transparent huge pages: a 2 MiB-aligned MADV_HUGEPAGE region.
 *
 * usage: thp [size_mib=64] [dontneed_mib=16]   (sizes: multiples of 2)
 *
 * We map size + 2 MiB, trim it to a 2 MiB-aligned size-byte VMA (so the
 * whole VMA is THP-eligible and nothing else shares it), mark it
 * MADV_HUGEPAGE and touch it.  With THP in "madvise" or "always" mode each
 * first touch of a 2 MiB extent faults in a whole huge page; otherwise RSS
 * grows page by page, to the same total.  smaps' AnonHugePages tells which.
 *
 * Checkpoints:
 *   touched  RssAnon += size (AnonHugePages = size if THP was available)
 *   final    MADV_DONTNEED of dontneed MiB from size/4 on (whole huge
 *            pages): RssAnon -= dontneed, VM unchanged
 */
#include <stdint.h>
#include <sys/mman.h>

#include "ckpt.h"

#define HPAGE_SZ	MIB(2)

/* A @size-byte anonymous VMA starting on a 2 MiB boundary. */
static char *map_aligned(size_t size)
{
	char *raw = map_anon(size + HPAGE_SZ);
	char *p = (char *)(((uintptr_t)raw + HPAGE_SZ - 1) & ~(HPAGE_SZ - 1));
	size_t head = p - raw, tail = HPAGE_SZ - head;

	/* Return the slack on both sides; either piece may be empty. */
	if (head && munmap(raw, head))
		die("munmap head");
	if (tail && munmap(p + size, tail))
		die("munmap tail");
	return p;
}

int main(int argc, char **argv)
{
	size_t size, drop, off;
	char *p;

	ckpt_init(argc, argv);
	size = arg_mib(argc, argv, 1, 64);
	drop = arg_mib(argc, argv, 2, 16);
	/* Drop from a quarter of the way in, so both neighbours stay. */
	off = size / 4 & ~(HPAGE_SZ - 1);
	if (!size || size % HPAGE_SZ || drop % HPAGE_SZ || off + drop > size)
		die("sizes must be multiples of 2 MiB, dontneed <= 3/4 size");

	p = map_aligned(size);
	if (madvise(p, size, MADV_HUGEPAGE))
		die("madvise hugepage");
	touch(p, size);
	ckpt("touched");

	/* Aligned to huge pages, so they are freed whole, not split. */
	if (madvise(p + off, drop, MADV_DONTNEED))
		die("madvise dontneed");
	ckpt_exit(0);
}
