/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pool.h — objects of one size from huge-page-sized chunks (pool.c).
 *
 * The model's mappings come from here: a traced process that maps and
 * unmaps all the time (an allocator's churn) makes and buries two or three
 * of them per call, and the loader's heap grew a fresh page at a time.
 */
#ifndef MW_POOL_H
#define MW_POOL_H

#include <stddef.h>

struct mw_pool {
	size_t size;		/* object size, at most 2 MiB: set before the first alloc */
	void *free;		/* freed objects, linked through their first word */
	char *next, *end;	/* the newest chunk's part not handed out yet */
	size_t chunks;		/* chunks taken from the kernel */
};

#define MW_POOL_INIT(type)	{ .size = sizeof(type) }

/* Under AddressSanitizer each object is calloc()ed and free()d, so that a
 * use after free is still caught: no chunks, no reuse. */
#if defined(__SANITIZE_ADDRESS__)
#define MW_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MW_POOL_ASAN 1
#endif
#endif

/* A zeroed object; exits as mw_xcalloc() does when memory runs out. */
void *pool_zalloc(struct mw_pool *p);
/* Back to the pool (NULL: nothing); chunks are kept for reuse. */
void pool_free(struct mw_pool *p, void *obj);

#endif /* MW_POOL_H */
