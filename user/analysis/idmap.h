/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * idmap.h — a small open-addressing hash map from 64-bit keys to 32-bit
 * values (indexes into the caller's arrays).  Key 0 is reserved.
 */
#ifndef MW_IDMAP_H
#define MW_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mw_idmap {
	uint64_t *keys;		/* 0: empty */
	uint32_t *vals;
	size_t n, cap;		/* cap: 0 or a power of two */
};

void idmap_free(struct mw_idmap *m);
/* The value of key, in *val; false if absent (or key is 0). */
bool idmap_get(const struct mw_idmap *m, uint64_t key, uint32_t *val);
/* Set key to val (key 0 is ignored). */
void idmap_put(struct mw_idmap *m, uint64_t key, uint32_t val);
/* Remove key, if present. */
void idmap_del(struct mw_idmap *m, uint64_t key);

/* splitmix64's finalizer: a bijection of 64-bit words. */
static inline uint64_t mw_fmix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * A 64-bit mix of a word into a hash, for keys made of several parts.  Both
 * go through the finalizer: the boost-style h ^ (v + K + (h << 6) + (h >> 2))
 * used before is no mix for small words (h 6, v 1080 and h 23, v 5 give
 * the same value), and a Python frame took another's name by it.
 */
static inline uint64_t mw_mix64(uint64_t h, uint64_t v)
{
	return mw_fmix64(mw_fmix64(h) + 0x9e3779b97f4a7c15ULL * (v + 1));
}

#endif /* MW_IDMAP_H */
