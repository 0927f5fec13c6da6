// SPDX-License-Identifier: GPL-2.0
/*
 * stacks.c - known call sites for --stacks: each mapping is made by its own
 * function and first touched by another, so the report can be checked to
 * name them.  Built with frame pointers (as everything under tests/workloads
 * is); the Makefile also makes a stripped copy, stacks-stripped.
 *
 *   map_window()   one 16 MiB anonymous mapping, 4 MiB of it touched by
 *                  touch_window()
 *   load_tables()  three 1 MiB mappings (one VMA), fully touched by
 *                  fill_table()
 *
 * Checkpoint: final.
 */
#include <sys/mman.h>

#include "ckpt.h"

/* 2 MiB of PROT_NONE, mapped first, right below what ld.so mapped last (its
 * TLS block; too big for the holes above): the window then lands below
 * this, not next to that block, which it would merge with where the kernel
 * does not align large anonymous mappings to 2 MiB (before 6.7; KERNEL-NOTES
 * 3).  A function of its own: its VM is not map_window's. */
MW_PROBE_FN void guard(size_t size)
{
	if (mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
		die("mmap guard");
}

MW_PROBE_FN char *map_window(size_t size)
{
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap window");
	return p;
}

MW_PROBE_FN void touch_window(volatile char *p, size_t n)
{
	for (size_t off = 0; off < n; off += PAGE_SZ)
		p[off] = 1;
}

MW_PROBE_FN void fill_table(volatile char *p, size_t n)
{
	for (size_t off = 0; off < n; off += PAGE_SZ)
		p[off] = 2;
}

MW_PROBE_FN void load_tables(char **t, int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		/* MAP_NORESERVE: a VMA flag the window lacks, so the kernel
		 * does not merge the tables into it. */
		t[i] = mmap(NULL, size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (t[i] == MAP_FAILED)
			die("mmap table");
		fill_table(t[i], size);
	}
}

int main(int argc, char **argv)
{
	char *w, *tables[3];

	ckpt_init(argc, argv);
	guard(MIB(2));
	w = map_window(MIB(16));
	touch_window(w, MIB(4));
	load_tables(tables, 3, MIB(1));
	ckpt("final");
	return 0;
}
