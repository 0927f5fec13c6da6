/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * trace_impl.h — the parts of a tracing session (trace.c) and of each
 * process it follows (trace_proc.c).  Private to those two.
 *
 * A session follows one process, or with -f every process of a tree: each
 * is a target with its own analysis (struct mw_account), its own pagemap,
 * symbolizer and unwinder.  Past --max-procs models a process is a target
 * with totals only: /proc's counters at its exit stop.
 */
#ifndef MW_TRACE_IMPL_H
#define MW_TRACE_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/account.h"
#include "analysis/idmap.h"
#include "capture/control.h"
#include "capture/procfs.h"
#include "capture/seed.h"
#include "trace.h"
#include "unwind/sitecache.h"

#define MAX_ORACLE_PER_RECORD 16
/* What the walks of malloc's arenas at one mark may take in all. */
#define MW_HEAPWALK_NS	(500 * MW_NS_PER_MS)
/* How long the end may spend applying what the ring buffer still holds,
 * and reading smaps for the end measure (what the drain left of it): -d N
 * ends by N + 0.5 s, and the reports and the freeing take up to 0.2 s
 * after that (stress-ng --mmap: 1000 mappings, 200 samples). */
#define MW_END_DRAIN_NS		(150 * MW_NS_PER_MS)

struct session;

struct target {
	struct session *s;
	pid_t pid, ppid;
	struct mw_account *acct;	/* NULL: totals only (past --max-procs) */
	bool alive;		/* the process still exists */
	bool held;		/* it stops at its exit for us (ptrace) */
	bool tracked;		/* in the kernel's table */
	uint64_t exit_stop_ns;	/* when it was held at its exit */
	int pagemap_fd;		/* its pagemap, opened with our capabilities
				 * (page frames: the zero page), -1: none */
	struct mw_symbolizer *syms;	/* --stacks */
	struct mw_unwinder *unwind;	/* --stacks with --stack-bytes */
	struct mw_frames *frames;	/* its output */
	struct mw_sitecache sites;	/* ... and what it has unwound */
	uint64_t ext_seen;	/* the kernel's external_changes last acted on */
	uint64_t ext_next;	/* when to look at it again */
	uint64_t resync_ok;	/* when /proc may be re-read again */
	struct pm_status last;	/* totals only: /proc at its exit stop */
	bool have_last;
};

struct session {
	const struct trace_opts *o;
	struct mw_capture *cap;
	struct mw_account *root_acct;	/* the caller's, for the root */
	struct target *root;
	struct target **v;	/* the targets being followed */
	size_t n, vcap;
	struct mw_idmap by_pid;	/* pid -> index in v */
	size_t nmodels;		/* of them, with a model */
	struct launch_tree *tree;	/* -f */
	pthread_mutex_t lock;	/* v, against the sampler's thread */
	/* pagemap answers given while analysing the current record: a
	 * recording stores them ahead of it, for replay */
	struct mw_oracle_ans answers[MAX_ORACLE_PER_RECORD];
	size_t nanswers;
	/* Time spent asking pagemap at splits in the current window
	 * (trace_proc.c: oracle_pagemap()). */
	uint64_t oracle_window, oracle_spent;
	struct mw_control ctl;	/* 'memwatch mark' */
	struct mw_python *py;	/* --python (user/unwind/python.c): the root's */
	uint32_t py_epoch;	/* address spaces it was looked for in */
	dev_t py_exe_dev;	/* the root's executable when last looked at */
	ino_t py_exe_ino;
	uint64_t py_recheck_until;	/* look for the interpreter each loop till then */
	struct trace_tree_stats stats;
};

/* trace_proc.c: one process's part. */
struct target *target_of(struct session *s, pid_t pid);
void feed(struct target *t, const struct mw_srec *r);
int feed_seed_until(struct target *t, enum mw_seed_mode mode, uint64_t until);
void feed_seed(struct target *t, enum mw_seed_mode mode);
void python_find(struct session *s);
/* At an exec: python_find(), waiting for ld.so to map a libpython the
 * program links. */
void python_find_exec(struct session *s);
void python_recheck(struct session *s);
/* Every ring-buffer record passes here on its way to the analysis. */
void sink(void *ctx, const struct mw_srec *in);
int oracle_pagemap(void *ctx, uint64_t start, uint64_t end, uint64_t *anon, uint64_t *file);
bool drain(struct session *s, uint64_t limit);
bool reconcile_splits(struct target *t, bool held);
void external_check(struct target *t, bool force);
void measure_due(struct target *t, uint64_t limit);
void walk_arenas(struct target *t);
void catch_up(struct target *t);
void finish(struct target *t, bool exited, int status, uint64_t drain_limit);
void target_free(struct target *t);

#endif /* MW_TRACE_IMPL_H */
