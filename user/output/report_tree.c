// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report_tree.c — -f: a report per process of the tree (report_tree.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "output/jsonutil.h"
#include "output/report_tree.h"
#include "util.h"

struct kept {
	struct mw_account *a;
	int wait_status;
};

struct mw_tree_report {
	struct mw_tree_report_opts o;
	struct trace_tree_ops ops;
	struct trace_proc_end *rows;	/* at most MW_TREE_ROWS */
	size_t nrows;
	uint64_t rows_left_out;		/* ended, their rows not kept */
	struct kept *kept;		/* at most o.top, for the text reports */
	size_t nkept;
	int err;
};

/* A process's analysis, with its live output. */
static struct mw_account *born(void *ctx, pid_t pid, pid_t ppid)
{
	struct mw_tree_report *r = ctx;
	struct mw_account *a = mw_xcalloc(1, sizeof(*a));
	struct report_live *l = mw_xcalloc(1, sizeof(*l));

	(void)ppid;
	account_init(a, pid, r->o.dead_limit);
	*l = (struct report_live){ .json = r->o.json, .text = r->o.text, .rows = r->o.rows };
	report_live(a, l);
	return a;
}

static void drop(struct mw_tree_report *r, struct mw_account *a)
{
	if (!a || a == r->o.root)
		return;
	free(a->phases.on_mark_ctx);
	account_free(a);
	free(a);
}

/* Index of the smallest of n by peak RSS. */
static size_t min_row(const struct trace_proc_end *v, size_t n)
{
	size_t m = 0;

	for (size_t i = 1; i < n; i++)
		if (v[i].rss_peak < v[m].rss_peak)
			m = i;
	return m;
}

static void add_row(struct mw_tree_report *r, const struct trace_proc_end *e)
{
	size_t m;

	if (r->nrows < MW_TREE_ROWS) {
		if (!r->rows)
			r->rows = mw_xcalloc(MW_TREE_ROWS, sizeof(*r->rows));
		r->rows[r->nrows++] = *e;
		return;
	}
	r->rows_left_out++;
	m = min_row(r->rows, r->nrows);
	if (e->rss_peak > r->rows[m].rss_peak)
		r->rows[m] = *e;
}

/* Keep a for its text report if it is among the --top by peak RSS. */
static void keep(struct mw_tree_report *r, struct mw_account *a, int status)
{
	size_t m = 0;

	if (!r->o.text || !r->o.top) {
		drop(r, a);
		return;
	}
	if (!r->kept)
		r->kept = mw_xcalloc(r->o.top, sizeof(*r->kept));
	if (r->nkept < r->o.top) {
		r->kept[r->nkept++] = (struct kept){ a, status };
		return;
	}
	for (size_t i = 1; i < r->nkept; i++)
		if (account_rss_peak(r->kept[i].a) < account_rss_peak(r->kept[m].a))
			m = i;
	if (account_rss_peak(a) <= account_rss_peak(r->kept[m].a)) {
		drop(r, a);
		return;
	}
	drop(r, r->kept[m].a);
	r->kept[m] = (struct kept){ a, status };
}

static void ended(void *ctx, struct mw_account *a, const struct trace_proc_end *e)
{
	struct mw_tree_report *r = ctx;

	if (!e) {		/* never traced: nothing of it to report */
		drop(r, a);
		return;
	}
	add_row(r, e);
	if (a && r->o.json) {
		struct report_opts ro = r->o.json_ro;

		ro.cmd_status = e->wait_status;
		if ((!a->json_started && report_json_start(r->o.json, a)) ||
		    report_json_summary(r->o.json, a, &ro))
			r->err = MW_EXIT_OUTPUT;
	}
	if (a)
		keep(r, a, e->wait_status);
}

struct mw_tree_report *tree_report_new(const struct mw_tree_report_opts *o)
{
	struct mw_tree_report *r = mw_xcalloc(1, sizeof(*r));

	r->o = *o;
	r->ops = (struct trace_tree_ops){ .born = born, .ended = ended, .ctx = r };
	return r;
}

const struct trace_tree_ops *tree_report_ops(struct mw_tree_report *r)
{
	return &r->ops;
}

/* "exit 0", "killed by SIGKILL", "detached". */
static const char *how(const struct trace_proc_end *e, char *buf, size_t len)
{
	if (!e->exited || e->wait_status < 0)
		snprintf(buf, len, "%s", e->exited ? "exited" : "detached");
	else if (WIFSIGNALED(e->wait_status))
		snprintf(buf, len, "signal %d", WTERMSIG(e->wait_status));
	else
		snprintf(buf, len, "exit %d", WEXITSTATUS(e->wait_status));
	return buf;
}

/* The rows in tree order: each process after its parent, indented. */
static void text_rows(FILE *f, const struct trace_proc_end *v, size_t n, pid_t parent,
		      int depth, bool *done)
{
	for (size_t i = 0; i < n; i++) {
		char vp[16], ve[16], rp[16], re[16], st[32], comm[64], pp[16];
		bool top = true;

		if (done[i])
			continue;
		/* A top-level row: its parent has no row. */
		if (parent == 0)
			for (size_t j = 0; j < n && top; j++)
				top = v[j].pid != v[i].ppid;
		if (parent ? v[i].ppid != parent : !top)
			continue;
		done[i] = true;
		snprintf(pp, sizeof(pp), v[i].ppid > 0 ? "%d" : "-", v[i].ppid);
		fprintf(f, "  %*s%-8d %-8s %-16s %9s %9s %9s %9s  %s%s\n", 2 * MW_MIN(depth, 8), "",
			v[i].pid, pp, printable(v[i].comm, comm, sizeof(comm), 16),
			size_short((int64_t)v[i].vm_peak, vp, sizeof(vp)),
			size_short((int64_t)v[i].vm_end, ve, sizeof(ve)),
			size_short((int64_t)v[i].rss_peak, rp, sizeof(rp)),
			size_short((int64_t)v[i].rss_end, re, sizeof(re)),
			how(&v[i], st, sizeof(st)), v[i].model ? "" : v[i].known ? ", totals only" :
			", totals unknown (no exit stop)");
		text_rows(f, v, n, v[i].pid, depth + 1, done);
	}
}

static int by_peak(const void *a, const void *b)
{
	uint64_t x = account_rss_peak(((const struct kept *)a)->a);
	uint64_t y = account_rss_peak(((const struct kept *)b)->a);

	return x < y ? 1 : x > y ? -1 : 0;
}

static json_t *row_json(const struct trace_proc_end *e)
{
	return json_pack("{s:i, s:i, s:o, s:b, s:b, s:b, s:i, s:I, s:I, s:I, s:I}",
			 "pid", e->pid, "ppid", e->ppid, "comm", jstr(e->comm),
			 "model", e->model, "known", e->known, "exited", e->exited,
			 "exit_status", e->wait_status,
			 "vm_peak_bytes", (json_int_t)e->vm_peak,
			 "vm_end_bytes", (json_int_t)e->vm_end,
			 "rss_peak_bytes", (json_int_t)e->rss_peak,
			 "rss_end_bytes", (json_int_t)e->rss_end);
}

int tree_report_finish(struct mw_tree_report *r, const struct trace_tree_stats *st)
{
	int err = r->err;

	if (r->o.json) {
		json_t *rows = json_array();

		for (size_t i = 0; i < r->nrows; i++)
			json_array_append_new(rows, row_json(&r->rows[i]));
		if (jline(r->o.json, json_pack("{s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
					       "type", "tree", "root", r->o.root->pid,
					       "processes", (json_int_t)st->procs,
					       "models", (json_int_t)st->models,
					       "totals_only", (json_int_t)st->totals,
					       "totals_unknown", (json_int_t)st->unknown,
					       "no_room", (json_int_t)st->untracked,
					       "max_live_models", (json_int_t)st->max_live,
					       "rows_left_out", (json_int_t)r->rows_left_out,
					       "rows", rows)))
			err = MW_EXIT_OUTPUT;
	}
	if (r->o.text) {
		FILE *f = r->o.text;
		bool *done = mw_xcalloc(r->nrows + 1, sizeof(*done));

		fprintf(f, "memwatch: the tree of PID %d: %llu process%s, %llu with a model "
			"(at most %zu at once), %llu with totals only\n", r->o.root->pid,
			(unsigned long long)st->procs, st->procs == 1 ? "" : "es",
			(unsigned long long)st->models,
			st->max_live, (unsigned long long)st->totals);
		fprintf(f, "  %-8s %-8s %-16s %9s %9s %9s %9s  %s\n", "PID", "PPID", "COMMAND",
			"VM PEAK", "VM END", "RSS PEAK", "RSS END", "END");
		text_rows(f, r->rows, r->nrows, 0, 0, done);
		free(done);
		if (r->rows_left_out)
			fprintf(f, "  (%llu more processes: the table keeps the %d largest by peak RSS)\n",
				(unsigned long long)r->rows_left_out, MW_TREE_ROWS);
		qsort(r->kept, r->nkept, sizeof(*r->kept), by_peak);
		for (size_t i = 0; i < r->nkept; i++) {
			struct report_opts ro = r->o.text_ro;

			ro.cmd_status = r->kept[i].wait_status;
			fprintf(f, "\n== PID %d (%s): %zu of %zu by peak RSS ==\n", r->kept[i].a->pid,
				r->kept[i].a->comm, i + 1, r->nkept);
			report_text(f, r->kept[i].a, &ro);
		}
	}
	for (size_t i = 0; i < r->nkept; i++)
		drop(r, r->kept[i].a);
	free(r->kept);
	free(r->rows);
	free(r);
	return err;
}
