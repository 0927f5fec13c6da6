// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* idmap.c — 64-bit key to 32-bit value, open addressing, linear probing. */
#include <stdlib.h>

#include "analysis/idmap.h"
#include "util.h"

static size_t home(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

void idmap_free(struct mw_idmap *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->n = m->cap = 0;
}

bool idmap_get(const struct mw_idmap *m, uint64_t key, uint32_t *val)
{
	if (!key || !m->cap)
		return false;
	for (size_t i = home(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			*val = m->vals[i];
			return true;
		}
	}
	return false;
}

static void grow(struct mw_idmap *m)
{
	struct mw_idmap old = *m;

	m->cap = old.cap ? old.cap * 2 : 64;
	m->keys = mw_xcalloc(m->cap, sizeof(*m->keys));
	m->vals = mw_xcalloc(m->cap, sizeof(*m->vals));
	m->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i])
			idmap_put(m, old.keys[i], old.vals[i]);
	idmap_free(&old);
}

void idmap_put(struct mw_idmap *m, uint64_t key, uint32_t val)
{
	size_t i;

	if (!key)
		return;
	if ((m->n + 1) * 4 > m->cap * 3)
		grow(m);
	for (i = home(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			break;
	if (!m->keys[i])
		m->n++;
	m->keys[i] = key;
	m->vals[i] = val;
}

/* Linear probing's deletion by backward shift: no tombstones, so a map
 * whose keys come and go (process IDs) stays as small as what it holds. */
void idmap_del(struct mw_idmap *m, uint64_t key)
{
	size_t i, j, h;

	if (!key || !m->cap)
		return;
	for (i = home(key, m->cap); m->keys[i] != key; i = (i + 1) & (m->cap - 1))
		if (!m->keys[i])
			return;
	for (j = i;;) {
		m->keys[i] = 0;
		for (;;) {
			j = (j + 1) & (m->cap - 1);
			if (!m->keys[j]) {
				m->n--;
				return;
			}
			/* Stays if its home lies cyclically in (i, j]. */
			h = home(m->keys[j], m->cap);
			if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
				continue;
			break;
		}
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		i = j;
	}
}
