/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace.h — one tracing session: start or attach, feed capture into the
 * analysis, stop on exit, signal or duration.
 */
#ifndef MW_TRACE_H
#define MW_TRACE_H

#include <stddef.h>
#include <sys/types.h>

#include "analysis/account.h"

struct mw_recorder;
struct mw_marker_spec;

/* -f: how a process of the tree ended, model or not. */
struct trace_proc_end {
	pid_t pid, ppid;
	char comm[16];
	bool model;		/* it had one (else totals only: --max-procs) */
	bool known;		/* its numbers are known (totals only: read at its
				 * exit stop, which a SIGKILL can skip) */
	bool exited;		/* it exited while traced (else: detached) */
	int wait_status;	/* -1 unknown */
	uint64_t vm_peak, vm_end, rss_peak, rss_end;	/* bytes, /proc's */
};

/* -f: the analysis of each process of the tree, from the caller. */
struct trace_tree_ops {
	/* A model for a new process; NULL: totals only. */
	struct mw_account *(*born)(void *ctx, pid_t pid, pid_t ppid);
	/* Its trace is over (acct NULL: totals only); the caller owns acct. */
	void (*ended)(void *ctx, struct mw_account *acct, const struct trace_proc_end *e);
	void *ctx;
};

struct trace_tree_stats {
	uint64_t procs;		/* processes followed, the root too */
	uint64_t models;	/* ... with a full model */
	uint64_t totals;	/* ... with totals only: past --max-procs */
	uint64_t untracked;	/* ... that the kernel's table had no room for */
	uint64_t unknown;	/* ... totals only, gone without an exit stop */
	size_t max_live;	/* most models alive at once */
};

struct trace_opts {
	pid_t pid;		/* -p, or 0 with cmd */
	char **cmd;		/* -- CMD ARGS, NULL-terminated */
	double duration;	/* seconds, 0: until exit or signal */
	size_t ringbuf_bytes;
	size_t max_procs;
	size_t dead_limit;	/* unmapped mappings kept in the table */
	struct mw_recorder *recorder;	/* 'memwatch record': save the stream */
	const struct mw_marker_spec *markers;	/* --phase-at, --iter */
	size_t nmarkers;
	double interval;	/* -i: seconds between samples, 0: none */
	bool auto_samples;	/* no -i, but -j or --svg: trace.c's auto_step() */
	bool stacks;		/* --stacks: call stacks of mappings, symbolised */
	uint32_t stack_bytes;	/* --stack-bytes: copied per stack, unwound here */
	bool python;		/* with stacks: CPython frames (--python, --no-python) */
	bool follow;		/* -f: every process of the tree, a model each */
	size_t max_models;	/* -f: at most this many at once; the rest totals */
	const struct trace_tree_ops *tree;	/* -f */
	struct trace_tree_stats *tree_stats;	/* -f: filled at the end */
};

/*
 * Run the session; acct receives everything (-f: the root's; every process,
 * the root too, ends through o->tree->ended).  Returns 0 or an enum mw_exit
 * code; *cmd_status gets CMD's wait status (-1 if none).
 */
int trace_run(const struct trace_opts *o, struct mw_account *acct, int *cmd_status);

#endif /* MW_TRACE_H */
