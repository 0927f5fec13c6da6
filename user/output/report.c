// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report.c — what the text and JSON reports share. */
#include <stdlib.h>
#include <string.h>

#include "analysis/hist.h"
#include "output/report.h"
#include "util.h"

static const char *const op_names[MW_NR_OPS] = {
	[MW_OP_NONE] = "none",
	[MW_OP_MMAP] = "mmap",
	[MW_OP_MUNMAP] = "munmap",
	[MW_OP_MREMAP] = "mremap",
	[MW_OP_BRK] = "brk",
	[MW_OP_MPROTECT] = "mprotect",
	[MW_OP_MADVISE] = "madvise",
	[MW_OP_MLOCK] = "mlock",
	[MW_OP_MSEAL] = "mseal",
	[MW_OP_SHMAT] = "shmat",
	[MW_OP_SHMDT] = "shmdt",
	[MW_OP_PRCTL_VMA] = "prctl_vma",
	[MW_OP_REWALK] = "rewalk",
	[MW_OP_VMGROW] = "stack_growth",
};

const char *report_op_name(int op)
{
	return op >= 0 && op < MW_NR_OPS ? op_names[op] : "?";
}

/* Live mappings first, then those unmapped during the trace; each group
 * largest first. */
static int by_size_desc(const void *x, const void *y)
{
	const struct mw_mapping *a = *(struct mw_mapping *const *)x;
	const struct mw_mapping *b = *(struct mw_mapping *const *)y;
	uint64_t sa = a->end - a->start, sb = b->end - b->start;

	if (a->unmapped != b->unmapped)
		return a->unmapped ? 1 : -1;
	if (sa != sb)
		return sa < sb ? 1 : -1;
	return a->start < b->start ? -1 : a->start > b->start;
}

struct mw_mapping **report_sorted_mappings(const struct mw_account *a, size_t *n)
{
	const struct mw_model *m = &a->model;
	struct mw_mapping **v = mw_xcalloc(m->nlive + m->ndead + 1, sizeof(*v)), *mp;
	size_t k = 0;

	model_for_each(mp, m)
		v[k++] = mp;
	for (size_t i = 0; i < m->ndead; i++)
		v[k++] = m->dead[i];
	qsort(v, k, sizeof(*v), by_size_desc);
	*n = k;
	return v;
}

const char *report_phase_name(const struct mw_account *a, const struct mw_mapping *mp)
{
	if (mp->phase < 0)
		return "(before)";
	if ((size_t)mp->phase >= a->phases.n)
		return "";
	return a->phases.v[mp->phase].name;
}

static void iter_delta(const struct mw_iter *it, int64_t *vm, int64_t *rss)
{
	*vm = (int64_t)it->end.vm - (int64_t)it->start.vm;
	*rss = point_rss(&it->end) - point_rss(&it->start);
}

void report_steady_hist(const struct mw_account *a, struct mw_hist *vm, struct mw_hist *rss)
{
	const struct mw_phases *ph = &a->phases;

	memset(vm, 0, sizeof(*vm));
	memset(rss, 0, sizeof(*rss));
	for (size_t i = ph->settled_after; i < ph->nit; i++) {
		int64_t dv, dr;

		iter_delta(&ph->it[i], &dv, &dr);
		hist_add(vm, dv > 0 ? dv : 0);
		hist_add(rss, dr > 0 ? dr : 0);
	}
}

void report_steady_totals(const struct mw_account *a, size_t *count, int64_t *vm,
			  int64_t *rss, uint64_t *faults, int64_t fk[MW_FK_NR])
{
	const struct mw_phases *ph = &a->phases;

	*count = 0;
	*vm = *rss = 0;
	*faults = 0;
	memset(fk, 0, MW_FK_NR * sizeof(*fk));
	for (size_t i = ph->settled_after; i < ph->nit; i++) {
		int64_t dv, dr;

		iter_delta(&ph->it[i], &dv, &dr);
		*vm += dv;
		*rss += dr;
		*faults += ph->it[i].end.faults - ph->it[i].start.faults;
		for (int k = 0; k < MW_FK_NR; k++)
			fk[k] += ph->it[i].end.fk[k] - ph->it[i].start.fk[k];
		(*count)++;
	}
}

static void on_mark(void *ctx, const struct mw_phases *ph, __u32 kind)
{
	struct report_live *l = ctx;

	(void)ph;
	if (l->json)
		report_json_event(l->json, l->acct, kind);
	if (l->text && l->rows && kind == MW_MARK_SAMPLE)
		report_text_sample(l->text, l->acct);
}

void report_live(struct mw_account *a, struct report_live *l)
{
	l->acct = a;
	a->phases.on_mark = on_mark;
	a->phases.on_mark_ctx = l;
}
