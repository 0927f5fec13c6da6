/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_host.h — host-wide output: a top-like table per interval, a table
 * per step ('memwatch mark'), a line per exited process, and NDJSON of the
 * same ("interval", "step", "exit", "summary" lines).
 */
#ifndef MW_REPORT_HOST_H
#define MW_REPORT_HOST_H

#include <stdbool.h>
#include <stdio.h>

#include "host/hostct.h"
#include "host/hostsnap.h"

/* One interval or one step, as reported. */
struct host_frame {
	const char *kind;		/* "interval" or "step" */
	const char *name;		/* the step's name; NULL for intervals */
	uint64_t t0, t1;		/* ns since tracing began */
	const struct mw_hproc *rows;	/* growth rows, largest first */
	size_t nrows;
	const struct mw_hcgroup *cgroups;
	size_t ncgroups;
	const struct mw_hct *containers;	/* per container: now, and change in it */
	size_t ncontainers;
	const struct mw_hexit *exits;	/* exited in it (with their totals) */
	size_t nexits;
	uint64_t exits_more;		/* exited too, not listed (kept the largest) */
	uint64_t nprocs, joined;	/* traced now; joined in it */
	uint64_t vm;			/* all traced now */
	int64_t rss;
	int64_t d_vm, d_rss;		/* all traced: now less at its start */
	uint64_t mem_total, mem_avail0, mem_avail1;	/* /proc/meminfo */
	uint64_t lost;			/* records lost so far */
};

/* RSS the traced processes gave back that MemAvailable did not show
 * coming back (0 unless RSS fell in the frame). */
int64_t host_not_returned(const struct host_frame *fr);

/* The table: processes (or cgroups) that grew most, the exits, totals.
 * top: rows at most.  80 columns. */
void host_text_frame(FILE *f, const struct host_frame *fr, size_t top, enum host_by by,
		     mw_cgroup_name_fn name, void *ctx);
void host_json_frame(FILE *f, const struct host_frame *fr, size_t top,
		     mw_cgroup_name_fn name, void *ctx);
void host_json_exit(FILE *f, const struct mw_hexit *e, const char *cgroup, uint64_t start_ns);
/* A container none of whose processes is left: a text line, a JSON line
 * ("container_exit"); either file may be NULL. */
void host_container_end(FILE *text, FILE *json, const struct mw_hct_end *e, uint64_t start_ns);

#endif /* MW_REPORT_HOST_H */
