// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report_callsite.c — who mapped it: call sites in the text and JSON reports. */
#include <stdbool.h>
#include <stdio.h>

#include "analysis/callsite.h"
#include "output/jsonutil.h"
#include "output/report.h"
#include "output/report_callsite.h"
#include "util.h"

/* ---- text ---------------------------------------------------------------- */

/* One ranked row, then the callers of the call site, outermost last. */
static void site_rows(FILE *f, const struct mw_callsites *cs, int phase, bool by_rss,
		      size_t max)
{
	uint32_t ids[MW_TOP_SITES];
	size_t n = callsites_top(cs, phase, by_rss, ids, MW_MIN(max, (size_t)MW_TOP_SITES));
	char frame[512], shown[80], b1[16], b2[16];

	for (size_t i = 0; i < n; i++) {
		const struct mw_stack *st = callsites_get(cs, ids[i]);
		struct mw_site_sum s = callsites_sum(cs, phase, ids[i]);

		if (st->nr)
			callsites_frame_brief(cs, st->frames[st->site], frame, sizeof(frame));
		else
			callsites_site_str(cs, ids[i], frame, sizeof(frame));
		fprintf(f, "    %-54s %10s %10s\n", printable(frame, shown, sizeof(shown), 54),
			mw_human(s.vm_bytes, b1, sizeof(b1)), mw_human(s.rss_bytes, b2, sizeof(b2)));
		/* Two callers (past the interpreter's and the runtime's frames
		 * when the site is outside them), then the script's line that
		 * led there (--python). */
		bool skip = st->nr && !callsites_frame_runtime(cs, st->frames[st->site]);
		bool py_shown = false;

		for (uint32_t k = st->site + 1, n_shown = 0; k < st->nr && n_shown < 2; k++) {
			if (skip && callsites_frame_runtime(cs, st->frames[k]))
				continue;
			callsites_frame_brief(cs, st->frames[k], frame, sizeof(frame));
			fprintf(f, "      <- %s\n", printable(frame, shown, sizeof(shown), 70));
			py_shown |= k == st->user_py;
			n_shown++;
		}
		if (st->user_py && !py_shown) {
			callsites_frame_str(cs, st->frames[st->user_py], frame, sizeof(frame));
			fprintf(f, "      <- ... %s\n", printable(frame, shown, sizeof(shown), 66));
		}
		if (st->truncated)
			fprintf(f, "      <- ... [truncated: the stack is deeper than --stack-bytes]\n");
	}
}

/* The top call sites of a phase (-1: the whole trace) both ways; a ranking
 * with nothing in it is left out. */
static void site_block(FILE *f, const struct mw_callsites *cs, int phase, const char *title,
		       size_t max)
{
	uint32_t id;
	char name[40];

	fprintf(f, "  %s\n", printable(title, name, sizeof(name), 36));
	if (callsites_top(cs, phase, false, &id, 1)) {
		fprintf(f, "   by VM mapped%*s %10s %10s\n", 41, "", "VM", "RSS");
		site_rows(f, cs, phase, false, max);
	}
	if (callsites_top(cs, phase, true, &id, 1)) {
		fprintf(f, "   by RSS faulted in\n");
		site_rows(f, cs, phase, true, max);
	}
}

void report_text_callsites(FILE *f, const struct mw_account *a)
{
	const struct mw_callsites *cs = &a->sites;

	if (!callsites_any(cs))
		return;
	fprintf(f, "Call sites (--stacks: %llu stacks", (unsigned long long)cs->nstacks);
	if (cs->unwound)
		fprintf(f, "; %llu of %llu records unwound from stack copies, %llu truncated",
			(unsigned long long)cs->unwound, (unsigned long long)cs->stack_recs,
			(unsigned long long)cs->truncated);
	if (cs->cached || cs->cache_missed)
		fprintf(f, "; %llu sent without a copy as call sites unwound before%s",
			(unsigned long long)(cs->cached + cs->cache_missed),
			cs->cache_missed ? ", some of them not found" : "");
	fprintf(f, ")\n");
	site_block(f, cs, -1, "whole trace", MW_TOP_SITES);
	for (size_t i = 0; a->phases.n > 1 && i < a->phases.n; i++)
		site_block(f, cs, (int)i, a->phases.v[i].name, 3);
	fputc('\n', f);
}

/* ---- JSON ---------------------------------------------------------------- */

static json_t *stack_json(const struct mw_callsites *cs, const struct mw_stack *st)
{
	json_t *arr = json_array();
	char frame[512];

	for (uint32_t k = 0; k < st->nr; k++)
		json_array_append_new(arr, jstr(callsites_frame_str(cs, st->frames[k], frame,
								     sizeof(frame))));
	return arr;
}

static void add_stack(json_t *o, const struct mw_callsites *cs, uint32_t id,
		      const char *site_key, const char *stack_key)
{
	const struct mw_stack *st = callsites_get(cs, id);
	char frame[512];

	if (!st)
		return;
	json_object_set_new(o, site_key, jstr(callsites_site_str(cs, id, frame, sizeof(frame))));
	json_object_set_new(o, stack_key, stack_json(cs, st));
	snprintf(frame, sizeof(frame), "%s_truncated", stack_key);
	json_object_set_new(o, frame, json_boolean(st->truncated));
}

void report_json_mapping_stacks(json_t *o, const struct mw_account *a,
				const struct mw_mapping *mp)
{
	add_stack(o, &a->sites, mp->stack, "call_site", "stack");
	add_stack(o, &a->sites, mp->fault_stack, "first_touch", "first_touch_stack");
}

static json_t *ranked(const struct mw_callsites *cs, int phase, bool by_rss)
{
	uint32_t ids[MW_TOP_SITES];
	size_t n = callsites_top(cs, phase, by_rss, ids, MW_TOP_SITES);
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++) {
		struct mw_site_sum s = callsites_sum(cs, phase, ids[i]);
		json_t *o = json_object();

		add_stack(o, cs, ids[i], "site", "stack");
		json_object_set_new(o, "vm_bytes", json_integer(s.vm_bytes));
		json_object_set_new(o, "rss_bytes", json_integer(s.rss_bytes));
		json_object_set_new(o, "calls", json_integer(callsites_get(cs, ids[i])->calls));
		json_array_append_new(arr, o);
	}
	return arr;
}

json_t *report_json_callsites(const struct mw_account *a, int phase)
{
	return json_pack("{s:o, s:o}", "by_vm", ranked(&a->sites, phase, false),
			 "by_rss", ranked(&a->sites, phase, true));
}

json_t *report_json_stacks(const struct mw_account *a)
{
	const struct mw_callsites *cs = &a->sites;
	json_t *o;

	if (!callsites_any(cs))
		return NULL;
	o = report_json_callsites(a, -1);
	json_object_set_new(o, "records", json_integer(cs->stack_recs));
	json_object_set_new(o, "distinct", json_integer(cs->nstacks));
	json_object_set_new(o, "unwound", json_integer(cs->unwound));
	json_object_set_new(o, "truncated", json_integer(cs->truncated));
	json_object_set_new(o, "site_cached", json_integer(cs->cached));
	json_object_set_new(o, "site_cache_missed", json_integer(cs->cache_missed));
	json_object_set_new(o, "vm_bytes", json_integer(cs->vm_bytes));
	json_object_set_new(o, "rss_faulted_bytes", json_integer(cs->rss_bytes));
	return o;
}
