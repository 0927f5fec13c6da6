// SPDX-License-Identifier: GPL-2.0
/*
 * remap.c - mremap() growing in place, moving to a fixed address, shrinking.
 *
 * usage: remap [size_mib=8]
 *
 * Checkpoints (S = size):
 *   grown   S touched, grown in place to 2S, new half touched: RssAnon = 2S
 *   moved   whole 2S moved to an address we chose (MREMAP_FIXED): VM and
 *           RSS unchanged, the old range is gone, the new one holds the pages
 *   shrunk  shrunk to S/2 at the same address: VM and RssAnon -= 3S/2
 *   final   same as shrunk
 */
#include <sys/mman.h>

#include "ckpt.h"

/*
 * Map @size and leave a free hole of @size right above it, so that growing
 * it can happen in place: map twice the size, then give the top half back.
 */
static char *map_with_room(size_t size)
{
	char *p = map_anon(2 * size);

	if (munmap(p + size, size))
		die("munmap room");
	return p;
}

/* A free range of @size: reserve it PROT_NONE, then release it. */
static void *free_range(size_t size)
{
	void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		die("mmap reserve");
	if (munmap(p, size))
		die("munmap reserve");
	return p;
}

static char *xmremap(void *old, size_t old_size, size_t new_size, int flags,
		     void *new_addr)
{
	void *p = mremap(old, old_size, new_size, flags, new_addr);

	if (p == MAP_FAILED)
		die("mremap");
	return p;
}

int main(int argc, char **argv)
{
	size_t size;
	char *p, *target;

	ckpt_init(argc, argv);
	size = arg_mib(argc, argv, 1, 8);
	if (!size)
		die("size must be positive");

	p = map_with_room(size);
	touch(p, size);
	/* MAYMOVE is allowed, but the hole above means it grows in place. */
	p = xmremap(p, size, 2 * size, MREMAP_MAYMOVE, NULL);
	touch(p + size, size);
	ckpt("grown");

	/* Nothing can claim the range in between: single thread, no malloc. */
	target = free_range(2 * size);
	p = xmremap(p, 2 * size, 2 * size, MREMAP_MAYMOVE | MREMAP_FIXED,
		    target);
	ckpt("moved");

	p = xmremap(p, 2 * size, size / 2, 0, NULL);
	ckpt("shrunk");
	ckpt_exit(0);
}
