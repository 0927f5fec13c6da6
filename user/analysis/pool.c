// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pool.c — objects of one size from 2 MiB chunks that may be huge pages.
 *
 * Why: under an allocator's churn (scripts/bench/mapchurn: mmap, munmap,
 * brk up and down) the model makes a mapping for each mmap and a piece for
 * each shrink, and keeps the unmapped ones (model_bury(), up to
 * --max-unmapped).  From malloc, each 384-byte mapping came from the top of
 * a heap that grew a page at a time, and a fresh page is a fault: on a VM
 * with shadow page tables, 11-16 us for every ten mappings.  Those faults
 * were 40% of the loader's CPU on mapchurn.
 *
 * A chunk is 2 MiB aligned to 2 MiB and advised MADV_HUGEPAGE, so where
 * transparent huge pages are "madvise" (Ubuntu's default, and this
 * project's CI) as where they are "always" (Debian's), one fault brings in
 * 5,400 mappings; where they are "never" it is an anonymous mapping like
 * malloc's.  Freed objects are reused before the chunk is cut further;
 * chunks are never given back (the model's peak is what they hold).
 *
 * Not thread-safe: a pool belongs to the thread that analyses (the model
 * is not shared).  Under AddressSanitizer it is calloc() and free()
 * (pool.h: MW_POOL_ASAN).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "analysis/pool.h"
#include "util.h"

#define MW_POOL_CHUNK	((size_t)2 << 20)
#define MW_POOL_ALIGN	16

#ifndef MW_POOL_ASAN
/* A chunk aligned to its size: map twice that and unmap the ends. */
static char *chunk_new(void)
{
	size_t len = 2 * MW_POOL_CHUNK, head;
	char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *c;

	if (raw == MAP_FAILED)
		return mw_xcalloc(1, MW_POOL_CHUNK);	/* exits if that fails too */
	c = (char *)(((uintptr_t)raw + MW_POOL_CHUNK - 1) & ~(uintptr_t)(MW_POOL_CHUNK - 1));
	head = (size_t)(c - raw);
	if (head)
		munmap(raw, head);
	if (len - head > MW_POOL_CHUNK)
		munmap(c + MW_POOL_CHUNK, len - head - MW_POOL_CHUNK);
	/* Refused (no THP in this kernel): still a chunk of small pages. */
	madvise(c, MW_POOL_CHUNK, MADV_HUGEPAGE);
	return c;
}
#endif

void *pool_zalloc(struct mw_pool *p)
{
	size_t size = (p->size + MW_POOL_ALIGN - 1) & ~(size_t)(MW_POOL_ALIGN - 1);
	void *obj;

#ifdef MW_POOL_ASAN
	obj = mw_xcalloc(1, size);
#else
	if (p->free) {
		obj = p->free;
		p->free = *(void **)obj;
		memset(obj, 0, size);
		return obj;
	}
	if (!p->next || (size_t)(p->end - p->next) < size) {
		p->next = chunk_new();	/* the old chunk's tail (< size) is left */
		p->end = p->next + MW_POOL_CHUNK;
		p->chunks++;
	}
	obj = p->next;		/* never handed out: still zero */
	p->next += size;
#endif
	return obj;
}

void pool_free(struct mw_pool *p, void *obj)
{
	if (!obj)
		return;
#ifdef MW_POOL_ASAN
	(void)p;
	free(obj);
#else
	*(void **)obj = p->free;
	p->free = obj;
#endif
}
