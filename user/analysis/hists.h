/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hists.h — the distributions the analysis keeps, for the whole trace and
 * per phase, as log2 histograms (hist.h):
 *
 *   size   the length argument of each successful mmap, by the phase it
 *          was called in;
 *   life   how long mappings created while traced lived, mmap to munmap,
 *          in microseconds, by the phase they were unmapped in;
 *   touch  how much of each mapping created while traced was ever
 *          resident: peak RSS / size, in percent (0..100), by the phase
 *          that created it.
 *
 * account.c feeds it (hists_mmap() as each mmap record is applied,
 * hists_buried() as the table buries a mapping); touch counts mappings
 * still live at the end when asked (hists_get()), so a report of a
 * truncated recording has them too.  Per-iteration growth (the fourth
 * selectable histogram) is computed from the iterations (report.c).
 */
#ifndef MW_HISTS_H
#define MW_HISTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/hist.h"
#include "analysis/model.h"

enum mw_hist_kind {
	MW_HK_SIZE,
	MW_HK_LIFE,
	MW_HK_TOUCH,
	MW_NR_HK,
};

/* Which histograms the text report prints (--hist). */
enum {
	MW_HISTS_SIZE = 1 << 0,
	MW_HISTS_LIFE = 1 << 1,
	MW_HISTS_TOUCH = 1 << 2,
	MW_HISTS_ITER = 1 << 3,
	MW_HISTS_ALL = MW_HISTS_SIZE | MW_HISTS_LIFE | MW_HISTS_TOUCH | MW_HISTS_ITER,
	MW_HISTS_CHOSEN = 1 << 4,	/* set by --hist, even to "none" */
};

/* Under this many percent a mapping is listed as mostly untouched. */
#define MW_TOUCH_SPARSE_PCT 25

struct mw_hist_set {
	struct mw_hist h[MW_NR_HK];
};

struct mw_hists {
	struct mw_hist_set all;
	struct mw_hist_set *phase;	/* by phase index, grown on demand */
	size_t nphase;
};

void hists_init(struct mw_hists *hs);
void hists_free(struct mw_hists *hs);

/* A successful mmap of @len bytes (its length argument) in phase @phase. */
void hists_mmap(struct mw_hists *hs, int phase, uint64_t len);
/* @mp left the table (munmap, MAP_FIXED over it, exec...) in phase @phase:
 * its lifetime, and its touched fraction now that its peak is final. */
void hists_buried(struct mw_hists *hs, int phase, const struct mw_mapping *mp);

/* Peak RSS / size of @mp in percent (0..100), or -1 when it does not count:
 * there before tracing began, made by the kernel ([vdso], ...), or with no
 * access at all (a PROT_NONE reservation or guard cannot be touched). */
int hists_touched_pct(const struct mw_mapping *mp);
/* Lifetime of a buried @mp in microseconds, or -1 when unknown (it was
 * there before tracing began). */
int64_t hists_lifetime_us(const struct mw_mapping *mp);

/* The histograms of phase @phase (-1: the whole trace) as they stand, the
 * live mappings of @m included in touch. */
void hists_get(const struct mw_hists *hs, const struct mw_model *m, int phase,
	       struct mw_hist_set *out);

/* "size,life,touch,iter", "all" or "none" into MW_HISTS_* bits (with
 * MW_HISTS_CHOSEN); -1 on an unknown name. */
int hists_parse(const char *list, unsigned int *out);
/* What to print: @chosen from --hist, or the default (iter only). */
unsigned int hists_selected(unsigned int chosen);

#endif /* MW_HISTS_H */
