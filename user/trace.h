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
};

/*
 * Run the session; acct receives everything.  Returns 0 or an enum mw_exit
 * code; *cmd_status gets CMD's wait status (-1 if none).
 */
int trace_run(const struct trace_opts *o, struct mw_account *acct, int *cmd_status);

#endif /* MW_TRACE_H */
