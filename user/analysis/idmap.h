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

/* A 64-bit mix of a word, for keys made of several parts. */
static inline uint64_t mw_mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 29);
}

#endif /* MW_IDMAP_H */
