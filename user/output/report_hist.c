// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_hist.c — histograms in the reports.  Text: one section per
 * histogram --hist selects, the whole trace then each phase that has
 * something, in bcc's log2 layout (hist_print), 80 columns.  JSON: all of
 * them, always; tools pick what they need.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/classify.h"
#include "analysis/hists.h"
#include "output/report_hist.h"
#include "util.h"

#define SPARSE_ROWS 5		/* mostly untouched mappings listed */

struct hist_kind {
	int kind;		/* MW_HK_* */
	unsigned int bit;	/* MW_HISTS_* */
	const char *unit;	/* hist_print's column head */
	const char *json;	/* key in "histograms" */
	const char *title;	/* whole trace */
	const char *per_phase;	/* before the phase's name */
	const char *noun;	/* after the count */
};

static const struct hist_kind kinds[MW_NR_HK] = {
	{ MW_HK_SIZE, MW_HISTS_SIZE, "bytes", "mmap_size_bytes",
	  "mmap sizes asked (length argument), whole trace", "mmap sizes in phase", " calls" },
	{ MW_HK_LIFE, MW_HISTS_LIFE, "usecs", "lifetime_us",
	  "Lifetimes, mmap to munmap, of mappings made while traced", "unmapped in phase", "" },
	{ MW_HK_TOUCH, MW_HISTS_TOUCH, "percent", "touched_percent",
	  "Touched, peak RSS / size, of mappings made while traced", "made in phase", "" },
};

/* ---- text ------------------------------------------------------------------ */

static void text_kind(FILE *f, const struct mw_account *a, const struct hist_kind *k)
{
	const struct mw_phases *ph = &a->phases;
	struct mw_hist_set set;
	char name[32];

	hists_get(&a->hists, &a->model, -1, &set);
	fprintf(f, "%s: %llu%s\n", k->title, (unsigned long long)set.h[k->kind].count, k->noun);
	hist_print(f, &set.h[k->kind], k->unit);
	/* One phase is the whole trace again. */
	for (size_t i = 0; ph->n > 1 && i < ph->n; i++) {
		hists_get(&a->hists, &a->model, (int)i, &set);
		if (!set.h[k->kind].count)
			continue;
		fprintf(f, "  %s %s: %llu%s\n", k->per_phase,
			printable(ph->v[i].name, name, sizeof(name), 20),
			(unsigned long long)set.h[k->kind].count, k->noun);
		hist_print(f, &set.h[k->kind], k->unit);
	}
	fputc('\n', f);
}

static bool is_sparse(const struct mw_mapping *mp)
{
	int pct = hists_touched_pct(mp);

	return pct >= 0 && pct < MW_TOUCH_SPARSE_PCT;
}

static int by_size_desc(const void *x, const void *y)
{
	const struct mw_mapping *a = *(struct mw_mapping *const *)x;
	const struct mw_mapping *b = *(struct mw_mapping *const *)y;
	uint64_t sa = a->end - a->start, sb = b->end - b->start;

	if (sa != sb)
		return sa < sb ? 1 : -1;
	return a->start < b->start ? -1 : a->start > b->start;
}

static void sparse_row(FILE *f, const struct mw_account *a, const struct mw_mapping *mp)
{
	char b1[24], b2[24], name[32], path[32], buf[4200];

	fprintf(f, "%12llx %-6s %10s %10s %4d%% %-12s %c%s\n", (unsigned long long)mp->start,
		mw_kind_name(mp->kind), mw_human(mp->end - mp->start, b1, sizeof(b1)),
		mw_human(MW_MAX(mp->rss_peak, 0), b2, sizeof(b2)), hists_touched_pct(mp),
		printable(report_phase_name(a, mp), name, sizeof(name), 12), mp->unmapped ? '*' : ' ',
		printable(mapping_display_path(&a->model, mp, buf, sizeof(buf)), path,
		      sizeof(path), 18));
}

/*
 * The mappings reserved far beyond what was used (a window of which 12% was
 * touched), largest first: live and unmapped ones, since a mapping unmapped
 * before the end could have been smaller just as well.
 */
static void text_sparse(FILE *f, const struct mw_account *a)
{
	const struct mw_model *m = &a->model;
	struct mw_mapping **v = mw_xcalloc(m->nlive + m->ndead + 1, sizeof(*v)), *mp;
	size_t n = 0;

	model_for_each(mp, m)
		if (is_sparse(mp))
			v[n++] = mp;
	for (size_t i = 0; i < m->ndead; i++)
		if (is_sparse(m->dead[i]))
			v[n++] = m->dead[i];
	if (n) {
		qsort(v, n, sizeof(*v), by_size_desc);
		fprintf(f, "Largest mappings touched under %d%%, peak RSS / size (%zu of %zu; * gone)\n",
			MW_TOUCH_SPARSE_PCT, MW_MIN(n, (size_t)SPARSE_ROWS), n);
		fprintf(f, "%12s %-6s %10s %10s %5s %-12s  %s\n", "START", "KIND", "SIZE",
			"PEAK RSS", "TOUCH", "PHASE", "PATH");
		for (size_t i = 0; i < n && i < SPARSE_ROWS; i++)
			sparse_row(f, a, v[i]);
		fputc('\n', f);
	}
	free(v);
}

void report_text_hists(FILE *f, const struct mw_account *a, const struct report_opts *ro)
{
	unsigned int sel = hists_selected(ro->hists);

	for (int k = 0; k < MW_NR_HK; k++)
		if (sel & kinds[k].bit)
			text_kind(f, a, &kinds[k]);
	if (sel & MW_HISTS_TOUCH)
		text_sparse(f, a);
}

/* ---- JSON ------------------------------------------------------------------ */

json_t *report_json_hist(const struct mw_hist *h)
{
	json_t *arr = json_array();
	uint64_t low, high;
	int first, last;

	if (!hist_range(h, &first, &last))
		return arr;
	for (int i = first; i <= last; i++) {
		hist_bounds(i, &low, &high);
		/* json_int_t is signed: the top slot's bound saturates. */
		json_array_append_new(arr, json_pack("{s:I, s:I, s:I}",
			"low", (json_int_t)MW_MIN(low, (uint64_t)INT64_MAX),
			"high", (json_int_t)MW_MIN(high, (uint64_t)INT64_MAX),
			"count", (json_int_t)MW_MIN(h->slot[i], (uint64_t)INT64_MAX)));
	}
	return arr;
}

static json_t *set_json(const struct mw_hist_set *set)
{
	json_t *o = json_object();

	for (int k = 0; k < MW_NR_HK; k++)
		json_object_set_new(o, kinds[k].json, report_json_hist(&set->h[kinds[k].kind]));
	return o;
}

json_t *report_json_hists(const struct mw_account *a)
{
	struct mw_hist_set set;
	struct mw_hist vm, rss;
	json_t *o;

	hists_get(&a->hists, &a->model, -1, &set);
	o = set_json(&set);
	report_steady_hist(a, &vm, &rss);
	json_object_set_new(o, "iteration_rss_growth_bytes", report_json_hist(&rss));
	json_object_set_new(o, "iteration_vm_growth_bytes", report_json_hist(&vm));
	return o;
}

json_t *report_json_phase_hists(const struct mw_account *a, size_t i)
{
	struct mw_hist_set set;

	hists_get(&a->hists, &a->model, (int)MW_MIN(i, (size_t)INT32_MAX), &set);
	return set_json(&set);
}
