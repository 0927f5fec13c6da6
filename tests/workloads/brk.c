// SPDX-License-Identifier: GPL-2.0
/*
 * brk.c - the heap grown and shrunk with sbrk() directly.
 *
 * usage: brk [grow_mib=8] [shrink_mib=5] [regrow_mib=2]
 *
 * Nothing here may call malloc (glibc's malloc would move the break behind
 * our back), so there is no stdio at all.  The break is first rounded up to
 * a page boundary so that "touch every page" means exactly what it says.
 *
 * Checkpoints:
 *   start   break page-aligned, heap not yet grown
 *   grown   +grow MiB in 1 MiB sbrk() steps, each touched: RssAnon += grow
 *   shrunk  sbrk(-shrink): VM and RssAnon -= shrink
 *   final   +regrow MiB touched: VM and RssAnon += regrow
 */
#include <stdint.h>
#include <unistd.h>

#include "ckpt.h"

/* sbrk(@inc) or die; returns the old break. */
static char *xsbrk(intptr_t inc)
{
	void *old = sbrk(inc);

	if (old == (void *)-1)
		die("sbrk");
	return old;
}

/* Grow the heap by @len in 1 MiB steps, touching each step as it comes. */
static void grow(size_t len)
{
	size_t step;

	for (; len; len -= step) {
		step = len < MIB(1) ? len : MIB(1);
		touch(xsbrk(step), step);
	}
}

int main(int argc, char **argv)
{
	size_t grow_sz, shrink_sz, regrow_sz;
	uintptr_t cur;

	ckpt_init(argc, argv);
	grow_sz = arg_mib(argc, argv, 1, 8);
	shrink_sz = arg_mib(argc, argv, 2, 5);
	regrow_sz = arg_mib(argc, argv, 3, 2);
	if (shrink_sz > grow_sz)
		die("cannot shrink below the start");

	cur = (uintptr_t)xsbrk(0);
	xsbrk(-cur & (PAGE_SZ - 1));
	ckpt("start");

	grow(grow_sz);
	ckpt("grown");

	xsbrk(-(intptr_t)shrink_sz);
	ckpt("shrunk");

	grow(regrow_sz);
	ckpt_exit(0);
}
