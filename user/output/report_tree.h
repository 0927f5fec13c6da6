/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_tree.h — -f: a report per process of the tree.
 *
 * Each process gets its own analysis as it is born (trace.h: struct
 * trace_tree_ops).  When it ends its JSON lines are written (each with its
 * pid), its row goes into the tree, and its analysis is freed unless it is
 * one of the --top N by peak RSS, whose text reports come at the end after
 * the table of the tree.  What memwatch keeps is bounded: N analyses and at
 * most MW_TREE_ROWS rows (the largest by peak RSS; the rest counted).
 */
#ifndef MW_REPORT_TREE_H
#define MW_REPORT_TREE_H

#include <stdio.h>

#include "output/report.h"
#include "trace.h"

#define MW_TREE_ROWS 1000

struct mw_tree_report;

struct mw_tree_report_opts {
	FILE *json, *text;		/* either may be NULL */
	bool rows;			/* -i: a text row per sample */
	size_t top;			/* text reports of this many processes */
	size_t dead_limit;		/* per analysis (account_init) */
	struct report_opts json_ro, text_ro;	/* cmd_status is set per process */
	struct mw_account *root;	/* the caller's, never freed here */
};

struct mw_tree_report *tree_report_new(const struct mw_tree_report_opts *o);
/* The callbacks for trace_opts.tree. */
const struct trace_tree_ops *tree_report_ops(struct mw_tree_report *r);
/* The tree's table, the kept reports, and the JSON "tree" line; frees r.
 * 0 or MW_EXIT_OUTPUT. */
int tree_report_finish(struct mw_tree_report *r, const struct trace_tree_stats *st);

#endif /* MW_REPORT_TREE_H */
