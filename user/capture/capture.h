/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture.h — the BPF side of the loader: load, attach, read the ring buffer
 * and the per-process aggregates.  Everything it learns leaves as stream
 * records (stream.h) through the sink; it knows nothing of the analysis.
 */
#ifndef MW_CAPTURE_H
#define MW_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memwatch.h"
#include "stream.h"

typedef void (*mw_sink_fn)(void *ctx, const struct mw_srec *r);

struct mw_capture_opts {
	size_t max_procs;	/* entries in the 'procs' map */
	size_t ringbuf_bytes;	/* power of two, >= 4096 */
	bool batch_wakeups;	/* wake only per ringbuf_bytes/8 (see state.bpf.h) */
	bool stacks;		/* --stacks: MW_REC_STACK records (stack.bpf.h) */
	uint32_t stack_bytes;	/* --stack-bytes: user stack copied with each */
	bool python;		/* with stacks: MW_REC_PYSTACK too (python.bpf.h) */
	size_t nmarkers;	/* --phase-at/--iter specs to come (compat: one program each) */
	/* Host-wide tracing (host.bpf.h): */
	size_t host_procs;	/* entries in 'hosts'; 0: not host-wide */
	bool host_join;		/* new processes join by themselves (-a, --cgroup) */
	int host_cgroup_fd;	/* with host_join: only under this cgroup; -1: all */
	mw_sink_fn sink;
	void *sink_ctx;
};

struct mw_capture;

/* Returns 0 or an enum mw_exit code (the message is already printed). */
int capture_open(struct mw_capture **out, const struct mw_capture_opts *o);
void capture_close(struct mw_capture *c);

/* Start tracing pid with the given starting values (from /proc). */
int capture_track(struct mw_capture *c, pid_t pid, const struct mw_proc *init);
void capture_untrack(struct mw_capture *c, pid_t pid);

/* Deliver pending ring-buffer records to the sink, for at most ~20 ms past
 * the wait; returns how many (more may be waiting when that ran out), or a
 * negative errno (-EINTR when a signal arrived). */
int capture_poll(struct mw_capture *c, int timeout_ms);
/* The last capture_poll() ran out of time with records still waiting. */
bool capture_behind(const struct mw_capture *c);
/* The kernel's timestamp (CLOCK_MONOTONIC ns) of the last record read. */
uint64_t capture_last_ts(const struct mw_capture *c);

/* A --phase-at / --iter spec: BINARY:SYMBOL[=NAME]. */
struct mw_marker_spec {
	char *binary;		/* path, or a library name ("libfoo.so") */
	char *symbol;
	char *name;		/* phase name; NULL: the symbol */
	__u32 kind;		/* MW_MARK_PHASE or MW_MARK_ITER */
};

/* Attach the uprobes of specs[] (the cookie carries kind and index + 1) and
 * the USDT probes of exe.  0, or MW_EXIT_PROBE after saying which spec
 * failed. */
int capture_attach_markers(struct mw_capture *c, pid_t pid, const char *exe,
			   const struct mw_marker_spec *specs, size_t n);
/* Emit a marker for pid now, from BPF, in order with its records, with
 * VmLck and VmPin read from its status; kind MW_MARK_NOTE notes those two
 * in the kernel's aggregate and emits nothing. */
int capture_mark(struct mw_capture *c, pid_t pid, __u32 kind, const char *name);
/* The kernel's aggregate for pid, read now; 0 or -errno. */
int capture_proc_read(struct mw_capture *c, pid_t pid, struct mw_proc *out);
/* An fd that becomes readable when records are waiting. */
int capture_fd(struct mw_capture *c);

/* --python: where pid's interpreter is and how its version is laid out,
 * for the BPF walk, with a number new for each of its address spaces;
 * NULL forgets it. */
int capture_python_set(struct mw_capture *c, pid_t pid, const struct mw_py_target *t);
/* The call-site cache of --stacks (user/unwind/sitecache.h): a class's
 * recipe (NULL: withdrawn), a site unwound (or no longer). */
int capture_stack_recipe(struct mw_capture *c, uint64_t cls, const struct mw_stack_recipe *r);
int capture_stack_site(struct mw_capture *c, uint64_t site, bool seen);
/* Host-wide: start tracing pid with these totals (from /proc). */
int capture_host_add(struct mw_capture *c, pid_t pid, const struct mw_host *init);
/* Host-wide: every entry now, into *out (caller frees); count or -errno. */
long capture_host_read(struct mw_capture *c, uint32_t **pids, struct mw_host **out);

/* The kernel's aggregate for pid, delivered as an MW_S_STATE record. */
int capture_emit_state(struct mw_capture *c, pid_t pid, int final);
/* Host-wide counters, summed over CPUs (enum mw_stat). */
void capture_stats(struct mw_capture *c, uint64_t out[MW_NR_STATS]);

#endif /* MW_CAPTURE_H */
