// SPDX-License-Identifier: GPL-2.0
/*
 * advise.c - calls that change VMA flags and no page, back to back.
 *
 * usage: advise [pages=32]
 *
 * A private anonymous mapping of @pages pages (the system's page size) is
 * touched.  Then, one page and one call at a time, every other page is
 * advised MADV_DONTFORK (the mapping splits into @pages VMAs) and every
 * fourth made read-only; then MADV_DONTNEED drops four pages' RSS (a call
 * that moves pages and no VMA).  Under MEMWATCH_DISABLE=exit_walk no call
 * can read its VMAs at its exit: the first of the run says so and the rest
 * join its late read (bpf/syscalls.bpf.h late_fold()).
 *
 * Checkpoints: touched, advised, final (the mapping unmapped).
 */
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"

int main(int argc, char **argv)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), n, i;
	char *p;

	ckpt_init(argc, argv);
	n = arg_ulong(argc, argv, 1, 32);
	if (n < 8 || n % 4)
		die("pages must be a multiple of 4, at least 8");
	p = map_anon(n * ps);
	touch(p, n * ps);
	ckpt("touched");

	for (i = 1; i < n; i += 2)
		if (madvise(p + i * ps, ps, MADV_DONTFORK))
			die("madvise DONTFORK");
	for (i = 1; i < n; i += 4)
		if (mprotect(p + i * ps, ps, PROT_READ))
			die("mprotect");
	if (madvise(p + 4 * ps, 4 * ps, MADV_DONTNEED))
		die("madvise DONTNEED");
	ckpt("advised");

	if (munmap(p, n * ps))
		die("munmap");
	ckpt_exit(0);
}
