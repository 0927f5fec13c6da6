/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * faultkind.h — what faults did: the kinds the kernel side tells apart
 * (bpf/memwatch.h: enum mw_fault_kind) and the one it leaves to us, the
 * faults that moved no RSS counter (copy-on-write of a page shared with a
 * fork, write-protect), which is all faults less the others.
 */
#ifndef MW_FAULTKIND_H
#define MW_FAULTKIND_H

#include <stdint.h>

#include "memwatch.h"

#define MW_FK_COW	MW_FK_NR	/* the derived kind, after the kernel's */
#define MW_FK_ALL	(MW_FK_NR + 1)

/* Faults by kind, all MW_FK_ALL of them, from a total and the kernel's. */
struct mw_fkinds {
	uint64_t n[MW_FK_ALL];
};

/* JSON key ("first_touch") and words ("first touch") of kind k. */
const char *mw_fk_key(int k);
const char *mw_fk_words(int k);

/* Kinds of 'faults' faults of which fk[] (kernel kinds, possibly from
 * differences, so signed) were told apart. */
struct mw_fkinds mw_fk_of(uint64_t faults, const int64_t fk[MW_FK_NR]);

/* The kinds of the faults between two markers' totals (analysis/phase.h). */
struct mw_point;
struct mw_fkinds mw_fk_between(const struct mw_point *from, const struct mw_point *to);

/* Faults that brought a page in: all but copy-on-write. */
uint64_t mw_fk_new_pages(const struct mw_fkinds *k);

#endif
