/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report.h — the end-of-trace reports: text (report_text.c), JSON
 * (report_json.c), the SVG timeline (report_svg.c), and what they share
 * (report.c). */
#ifndef MW_REPORT_H
#define MW_REPORT_H

#include <stdio.h>

#include "analysis/account.h"
#include "analysis/findings.h"

struct report_opts {
	size_t max_mappings;	/* rows before the rest are folded into one */
	int cmd_status;		/* wait status of '-- CMD', -1 if none */
	unsigned int hists;	/* --hist (hists.h MW_HISTS_*); 0: the default */
	const struct mw_kernel *kernel;	/* the kernel traced on; NULL: a replay */
	const struct mw_find_opts *find;	/* --threshold; NULL: the defaults */
};

/* Live mappings, then unmapped ones, each largest first (caller frees). */
struct mw_mapping **report_sorted_mappings(const struct mw_account *a, size_t *n);
const char *report_op_name(int op);
/* The phase that created a mapping, by name. */
const char *report_phase_name(const struct mw_account *a, const struct mw_mapping *mp);
/* s for a terminal: control bytes as \xNN; at most width columns, keeping
 * the tail (0: no limit) (report_text.c). */
const char *printable(const char *s, char *buf, size_t len, size_t width);
/* "0", "512B", "64K", "1.5M", "2.25G", with a sign if negative: for tables
 * (report_text.c). */
const char *size_short(int64_t v, char *buf, size_t len);

struct mw_hist;
/* Growth per steady-state iteration (after settled_after), bytes >= 0. */
void report_steady_hist(const struct mw_account *a, struct mw_hist *vm, struct mw_hist *rss);
/* Totals of the steady-state iterations; fk[]: their faults by kind. */
void report_steady_totals(const struct mw_account *a, size_t *count, int64_t *vm,
			  int64_t *rss, uint64_t *faults, int64_t fk[MW_FK_NR]);

void report_text(FILE *f, const struct mw_account *a, const struct report_opts *ro);
/* One NDJSON line ("type":"start"). */
int report_json_start(FILE *f, const struct mw_account *a);
/* A line as a marker is applied: "sample", "phase" (one ended) or
 * "iteration" (one ended); the "start" line before the first. */
void report_json_event(FILE *f, const struct mw_account *a, unsigned int kind);
/* A row of -i output as a sample is applied (header before the first). */
void report_text_sample(FILE *f, const struct mw_account *a);
/* The closing NDJSON line ("type":"summary"); 0 or -errno. */
int report_json_summary(FILE *f, const struct mw_account *a, const struct report_opts *ro);
/*
 * Output while tracing: a JSON line per marker, a text row per -i sample
 * (rows), into the account's phases' on_mark hook.  l lives as long as a.
 */
struct report_live {
	FILE *json, *text;
	bool rows;
	struct mw_account *acct;
};
void report_live(struct mw_account *a, struct report_live *l);
/* The trace as an SVG 1.1 timeline (--svg); 0 or -errno. */
int report_svg(FILE *f, const struct mw_account *a);

#endif /* MW_REPORT_H */
