/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * host.h — a host-wide session: every process (-a), those of a cgroup
 * (--cgroup), given ones (-p, several), with their children (-f), or a
 * command and its children (-f -- CMD).  Per-process totals, exact, from the
 * kernel's counters; a table per interval and per step; exits summed up and
 * forgotten, so it can run for days in bounded memory.
 */
#ifndef MW_HOST_H
#define MW_HOST_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "host/hostview.h"

struct mw_find_opts;

struct host_opts {
	bool all;		/* -a */
	const char *cgroup;	/* --cgroup PATH */
	const pid_t *pids;	/* -p, each */
	size_t npids;
	char **cmd;		/* -- CMD (with -f) */
	bool follow;		/* -f: children join as they fork */
	enum host_by by;	/* --by: tables per process, cgroup or container */
	double interval;	/* -i: a table every SECONDS; 0: at the end only */
	double duration;	/* -d */
	size_t top;		/* rows per table */
	size_t max_procs;	/* the kernel's table (LRU beyond it) */
	size_t ringbuf_bytes;
	const char *listen;	/* --listen ADDR:PORT, or NULL */
	FILE *json, *text;	/* NULL: none */
	const struct mw_find_opts *find;	/* --threshold (findings.h) */
};

/* Returns 0 or an enum mw_exit code; *cmd_status gets CMD's wait status
 * (-1 if none). */
int host_run(const struct host_opts *o, int *cmd_status);

#endif /* MW_HOST_H */
