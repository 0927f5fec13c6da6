// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* capture.c — load and attach the BPF programs, drain the ring buffer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture.h"
#include "preflight.h"
#include "util.h"
#include "memwatch.skel.h"

struct mw_capture {
	struct memwatch_bpf *skel;
	struct ring_buffer *rb;
	mw_sink_fn sink;
	void *sink_ctx;
	int ncpus;
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && mw_verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && !mw_verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct mw_capture *c = ctx;
	struct mw_srec r = { .kind = MW_S_BPF, .len = len, .data = data };

	c->sink(c->sink_ctx, &r);
	return 0;
}

/* Attach what this kernel has; say what it lacks. */
static void drop_missing_programs(struct mw_capture *c)
{
	struct memwatch_bpf *s = c->skel;

	if (!btf_tracepoint_exists("page_fault_user") || feature_disabled("page_fault")) {
		bpf_program__set_autoload(s->progs.page_fault_user, false);
		bpf_program__set_autoload(s->progs.page_fault_kernel, false);
	} else if (!btf_tracepoint_exists("page_fault_kernel")) {
		bpf_program__set_autoload(s->progs.page_fault_kernel, false);
	}
}

int capture_open(struct mw_capture **out, const struct mw_capture_opts *o)
{
	struct mw_capture *c = mw_xcalloc(1, sizeof(*c));
	int err, code = MW_EXIT_BPF;

	libbpf_set_print(libbpf_print);
	c->sink = o->sink;
	c->sink_ctx = o->sink_ctx;
	c->ncpus = libbpf_num_possible_cpus();
	c->skel = memwatch_bpf__open();
	if (!c->skel) {
		mw_err("cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	c->skel->rodata->tgid_self = getpid();
	bpf_map__set_max_entries(c->skel->maps.procs, o->max_procs);
	bpf_map__set_max_entries(c->skel->maps.rb, o->ringbuf_bytes);
	drop_missing_programs(c);

	err = memwatch_bpf__load(c->skel);
	if (err) {
		mw_err("cannot load the BPF programs (%s); rerun with -vv for the verifier log",
		       strerror(-err));
		goto fail;
	}
	err = memwatch_bpf__attach(c->skel);
	if (err) {
		mw_err("cannot attach the BPF programs: %s", strerror(-err));
		goto fail;
	}
	c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.rb), on_record, c, NULL);
	if (!c->rb) {
		mw_err("cannot open the ring buffer: %s", strerror(errno));
		goto fail;
	}
	*out = c;
	return 0;
fail:
	capture_close(c);
	return code;
}

void capture_close(struct mw_capture *c)
{
	if (!c)
		return;
	ring_buffer__free(c->rb);
	memwatch_bpf__destroy(c->skel);
	free(c);
}

int capture_track(struct mw_capture *c, pid_t pid, const struct mw_proc *init)
{
	__u32 key = pid;

	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.procs), &key, init, BPF_NOEXIST))
		return -errno;
	return 0;
}

void capture_untrack(struct mw_capture *c, pid_t pid)
{
	__u32 key = pid;

	bpf_map_delete_elem(bpf_map__fd(c->skel->maps.procs), &key);
}

int capture_poll(struct mw_capture *c, int timeout_ms)
{
	return ring_buffer__poll(c->rb, timeout_ms);
}

int capture_emit_state(struct mw_capture *c, pid_t pid, int final)
{
	struct mw_state st = { .pid = pid, .final = final };
	struct mw_srec r = { .kind = MW_S_STATE, .len = sizeof(st), .data = &st };
	__u32 key = pid;

	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.procs), &key, &st.proc))
		return -errno;
	st.ts = mw_now_ns();
	st.lost_global = capture_lost_global(c);
	c->sink(c->sink_ctx, &r);
	return 0;
}

uint64_t capture_lost_global(struct mw_capture *c)
{
	__u32 key = MW_STAT_RB_LOST;
	__u64 *vals = mw_xcalloc(c->ncpus, sizeof(*vals));
	uint64_t sum = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.stats), &key, vals) == 0)
		for (int i = 0; i < c->ncpus; i++)
			sum += vals[i];
	free(vals);
	return sum;
}
