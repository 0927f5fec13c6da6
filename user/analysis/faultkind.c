// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* faultkind.c — fault kinds: names and the derived copy-on-write count. */
#include "analysis/faultkind.h"
#include "analysis/phase.h"

static const struct {
	const char *key, *words;
} names[MW_FK_ALL] = {
	[MW_FK_FIRST_TOUCH] = { "first_touch", "first touch" },
	[MW_FK_REFAULT] = { "refault", "refault" },
	[MW_FK_FILE] = { "file", "file" },
	[MW_FK_COW_FILE] = { "cow_file", "file copy" },
	[MW_FK_SWAP_IN] = { "swap_in", "swap-in" },
	[MW_FK_COW] = { "copy_on_write", "copy-on-write" },
};

const char *mw_fk_key(int k)
{
	return k >= 0 && k < MW_FK_ALL ? names[k].key : "?";
}

const char *mw_fk_words(int k)
{
	return k >= 0 && k < MW_FK_ALL ? names[k].words : "?";
}

struct mw_fkinds mw_fk_of(uint64_t faults, const int64_t fk[MW_FK_NR])
{
	struct mw_fkinds r = { { 0 } };
	uint64_t told = 0;

	/* A kind below 0 (a fault told anew after the last harvest took
	 * it) or a sum above the faults (a change seen before its fault was
	 * counted) is a race's trace: bounded, never negative. */
	for (int k = 0; k < MW_FK_NR; k++) {
		r.n[k] = fk[k] > 0 ? (uint64_t)fk[k] : 0;
		if (r.n[k] > faults - told)
			r.n[k] = faults - told;
		told += r.n[k];
	}
	r.n[MW_FK_COW] = faults - told;
	return r;
}

struct mw_fkinds mw_fk_between(const struct mw_point *from, const struct mw_point *to)
{
	int64_t fk[MW_FK_NR];

	for (int k = 0; k < MW_FK_NR; k++)
		fk[k] = to->fk[k] - from->fk[k];
	return mw_fk_of(to->faults - from->faults, fk);
}

uint64_t mw_fk_new_pages(const struct mw_fkinds *k)
{
	uint64_t n = 0;

	for (int i = 0; i < MW_FK_NR; i++)
		n += k->n[i];
	return n;
}
