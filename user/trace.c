// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * trace.c — one tracing session.
 *
 * Order matters for exactness: the BPF programs are attached before the
 * process is added to the traced set, and the process is added before its
 * layout is read from /proc, so nothing that happens after the read can be
 * missed (records that reach us for changes the read already shows are
 * harmless: each states the kernel's VMAs, not a delta).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture.h"
#include "capture/control.h"
#include "capture/drmfdinfo.h"
#include "capture/heapwalk.h"
#include "capture/heapwarm.h"
#include "capture/launch.h"
#include "capture/preflight.h"
#include "capture/privs.h"
#include "capture/procfs.h"
#include "capture/recording.h"
#include "capture/seed.h"
#include "capture/signals.h"
#include "analysis/findings.h"
#include "unwind/symbolize.h"
#include "unwind/unwind.h"
#include "unwind/python.h"
#include "capture/kernel.h"
#include "trace.h"
#include "util.h"

#define MAX_ORACLE_PER_RECORD 16

struct session {
	const struct trace_opts *o;
	struct mw_account *acct;
	struct mw_capture *cap;
	pid_t pid;
	bool alive;		/* the process still exists */
	uint64_t exit_stop_ns;	/* when the command was held at its exit */
	bool held;		/* it will stop at its exit for us (ptrace) */
	/* pagemap answers given while analysing the current record: a
	 * recording stores them ahead of it, for replay */
	struct mw_oracle_ans answers[MAX_ORACLE_PER_RECORD];
	size_t nanswers;
	struct mw_control ctl;	/* 'memwatch mark' */
	int pagemap_fd;		/* its pagemap, opened with our capabilities
				 * (page frames: the zero page), -1: none */
	struct mw_symbolizer *syms;	/* --stacks */
	struct mw_python *py;		/* --python (user/unwind/python.c) */
	struct mw_unwinder *unwind;	/* --stacks with --stack-bytes */
	struct mw_frames *frames;	/* its output */
	uint32_t py_epoch;		/* address spaces it was looked for in */
	uint64_t ext_seen;	/* the kernel's external_changes last acted on */
	uint64_t ext_next;	/* when to look at it again */
};

/* Everything capture learns passes here: into the analysis, and into the
 * recording if there is one. */
static void feed(struct session *s, const struct mw_srec *r)
{
	struct mw_recorder *w = s->o->recorder;

	s->nanswers = 0;
	account_feed(s->acct, r);
	if (!w)
		return;
	for (size_t i = 0; i < s->nanswers; i++)
		recorder_write(w, &(struct mw_srec){ .kind = MW_S_ORACLE,
						     .len = sizeof(s->answers[i]),
						     .data = &s->answers[i] });
	recorder_write(w, r);
}

/* until: see seed_build(); 0 for none. */
static int feed_seed_until(struct session *s, enum mw_seed_mode mode, uint64_t until)
{
	struct mw_seed *seed;
	uint32_t len;
	int err = seed_build(s->pid, mode, until, &seed, &len);

	if (err) {
		mw_dbg("cannot read /proc/%d for a %d seed: %s", s->pid, mode, strerror(-err));
		return err;
	}
	feed(s, &(struct mw_srec){ .kind = MW_S_SEED, .len = len, .data = seed });
	free(seed);
	/* With the end measure: GPU memory its DRM drivers report. */
	if (mode == MW_SEED_MEASURE) {
		size_t dlen;
		struct mw_drm_mem *drm = drm_read_clients(s->pid, MW_DRM_CLIENTS, &dlen);

		if (drm)
			feed(s, &(struct mw_srec){ .kind = MW_S_DRM, .len = (uint32_t)dlen,
						   .data = drm });
		free(drm);
	}
	return 0;
}

static void feed_seed(struct session *s, enum mw_seed_mode mode)
{
	feed_seed_until(s, mode, 0);
}

static void feed_sym(void *ctx, const struct mw_srec *r)
{
	feed(ctx, r);
}

/* ---- --python ---- */
/* Is the process a CPython memwatch knows?  Then its BPF walk starts. */
static void python_find(struct session *s)
{
	uint64_t rt = python_detect(s->py);
	int err;

	if (rt && (err = capture_python_set(s->cap, s->pid, rt, python_code_type(s->py),
						 s->py_epoch)))
		mw_dbg("python: cannot set PID %d's runtime: %s", s->pid, strerror(-err));
}

/* Look for the interpreter again when a file that may hold it is mapped. */
static void python_record(struct session *s, const struct mw_rec_hdr *h, uint32_t len)
{
	const struct mw_op_rec *op = (const void *)h;
	size_t have;

	if (h->type != MW_REC_OP || python_settled(s->py) ||
	    len < offsetof(struct mw_op_rec, paths))
		return;
	/* The record ends after its last path. */
	have = (len - offsetof(struct mw_op_rec, paths)) / MW_PATH_LEN;
	for (uint32_t i = 0; i < op->nr_paths && i < MW_MAX_VMAS && i < have; i++)
		if (memchr(op->paths[i], 0, MW_PATH_LEN) && python_path_candidate(op->paths[i])) {
			python_find(s);
			break;
		}
}
/* ---- end of --python ---- */
/*
 * A stack record: with a copy of the user stack, unwound (unwind.c) into an
 * MW_S_FRAMES record ahead of it, and the copy left out of what follows (the
 * analysis and a recording keep the frames); the frame-pointer ips[] are
 * named only when the unwind found nothing.
 */
static void feed_stack(struct session *s, const struct mw_srec *r)
{
	const struct mw_stack_rec *rec = r->data;
	struct mw_srec cut = *r;
	uint32_t nr = 0;

	if (!s->syms)
		s->syms = symbolizer_new(s->pid);
	if (unwind_has_copy(rec, r->len)) {
		if (!s->unwind) {
			s->unwind = unwinder_new(s->syms, s->pid);
			s->frames = mw_xcalloc(1, sizeof(*s->frames) +
						  MW_FRAMES_MAX * sizeof(s->frames->ips[0]));
		}
		nr = unwinder_run(s->unwind, rec, r->len, s->frames);
		if (mw_verbose > 1)
			mw_dbg("stack %u/%u kind %u: copy %u bytes from %#llx, flags %#x: %u frames%s",
			       rec->hdr.tid, rec->hdr.seq, rec->kind, rec->copy_len,
			       (unsigned long long)rec->copy_sp, rec->copy_flags, nr,
			       s->frames->flags & MW_FRAMES_TRUNCATED ? ", truncated" : "");
		cut.len = (uint32_t)(offsetof(struct mw_stack_rec, ips) +
				     MW_MIN(rec->nr, (uint32_t)MW_STACK_DEPTH) * sizeof(rec->ips[0]));
	}
	if (nr) {
		symbolizer_frames(s->syms, s->frames->ips, nr, feed_sym, s);
		feed(s, &(struct mw_srec){ .kind = MW_S_FRAMES,
					   .len = (uint32_t)(sizeof(*s->frames) +
							     nr * sizeof(s->frames->ips[0])),
					   .data = s->frames });
	} else {
		symbolizer_stack(s->syms, r->data, cut.len, feed_sym, s);
	}
	feed(s, &cut);
}

/*
 * A marker's late read of a call's VMAs comes without paths (bpf/syscalls.bpf.h:
 * rewalk()): each file's is read from /proc/PID/map_files now, into the
 * record that goes on (and into a recording).  One that cannot be read
 * (the mapping gone since) is marked truncated, and /proc is read again.
 */
static void rewalk_paths(struct session *s, struct mw_srec *r, struct mw_op_rec *full)
{
	const struct mw_op_rec *op = r->data;
	uint32_t n;

	if (r->len < offsetof(struct mw_op_rec, vmas) || op->op != MW_OP_REWALK ||
	    op->nr_paths || r->len > sizeof(*full))
		return;
	n = MW_MIN(op->nr_vmas, (uint32_t)MW_MAX_VMAS);
	memset(full, 0, sizeof(*full));
	memcpy(full, op, r->len);
	for (uint32_t i = 0; i < n; i++) {
		struct mw_vma *v = &full->vmas[i];
		char link[96], *p = full->paths[i];
		ssize_t len;

		if (!(v->vflags & MW_VMA_FILE))
			continue;
		snprintf(link, sizeof(link), "/proc/%d/map_files/%llx-%llx", (int)s->pid,
			 (unsigned long long)v->start, (unsigned long long)v->end);
		len = readlink(link, p, MW_PATH_LEN - 1);
		if (len <= 0) {
			v->vflags |= MW_VMA_PATH_TRUNC;
			len = 0;
		}
		p[len] = 0;
		if (len > 10 && !strcmp(p + len - 10, " (deleted)"))
			p[len - 10] = 0;
		full->nr_paths = i + 1;
	}
	if (full->nr_paths) {
		r->data = full;
		r->len = sizeof(*full);
	}
}

/* Every ring-buffer record passes here on its way to the analysis. */
static void sink(void *ctx, const struct mw_srec *in)
{
	struct session *s = ctx;
	const struct mw_rec_hdr *h = in->data;
	static struct mw_op_rec full;
	struct mw_srec rec = *in, *r = &rec;

	if (r->kind == MW_S_BPF && (r->len < sizeof(*h) || h->tgid != (uint32_t)s->pid))
		return;
	if (r->kind == MW_S_BPF && s->py)
		python_record(s, h, r->len);
	/* Unwind and name a stack while the process is there to ask. */
	if (r->kind == MW_S_BPF && h->type == MW_REC_STACK) {
		feed_stack(s, r);
		return;
	}
	if (r->kind == MW_S_BPF && h->type == MW_REC_OP)
		rewalk_paths(s, r, &full);
	feed(s, r);
	if (r->kind == MW_S_BPF && h->type == MW_REC_EXEC && s->syms)
		symbolizer_reset(s->syms);
	/* exec built a new address space without syscalls: read it now,
	 * before anything that follows in the buffer is applied. */
	if (r->kind == MW_S_BPF && h->type == MW_REC_EXEC) {
		/* The pagemap opened before reads the old address space. */
		if (s->pagemap_fd >= 0)
			close(s->pagemap_fd);
		s->pagemap_fd = -1;
		feed_seed(s, MW_SEED_EXEC);
	}
	if (r->kind == MW_S_BPF && h->type == MW_REC_PYCODE && s->py)
		python_fill(s->py, r->data, r->len, feed_sym, s);
	if (r->kind == MW_S_BPF && h->type == MW_REC_EXEC && s->py) {
		/* The old interpreter is gone; a new one is looked for. */
		python_reset(s->py);
		capture_python_set(s->cap, s->pid, 0, 0, 0);
		s->py_epoch++;
		python_find(s);
	}
}

/* privs_drop() asks: does bpf() on our maps work without CAP_BPF?  Any
 * answer but "not permitted" is a yes (the process may be gone). */
static bool bpf_probe(void *ctx)
{
	struct session *s = ctx;
	struct mw_proc *k = mw_xcalloc(1, sizeof(*k));
	int err = capture_proc_read(s->cap, s->pid, k);

	free(k);
	return err != -EPERM;
}

/* RSS of [start, end) of the process: from the pagemap opened at the
 * start while it is the same address space, else opened now. */
static int session_pagemap(struct session *s, uint64_t start, uint64_t end,
			   uint64_t *anon, uint64_t *file)
{
	if (s->pagemap_fd >= 0)
		return procfs_pagemap_rss_fd(s->pagemap_fd, start, end, anon, file);
	return procfs_pagemap_rss(s->pid, start, end, anon, file);
}

static int oracle_pagemap(void *ctx, uint64_t start, uint64_t end,
			  uint64_t *anon, uint64_t *file)
{
	struct session *s = ctx;
	int err = -ESRCH;

	*anon = *file = 0;
	if (s->alive && !s->acct->exited)
		err = session_pagemap(s, start, end, anon, file);
	if (s->nanswers < MAX_ORACLE_PER_RECORD)
		s->answers[s->nanswers++] = (struct mw_oracle_ans){
			.pid = s->pid, .err = err, .start = start, .end = end,
			.anon = *anon, .file = *file,
		};
	return err;
}

/* Uprobes for --phase-at/--iter, USDT probes of the executable; the names
 * go into the stream, the kernel knows the specs by number only. */
static int attach_markers(struct session *s, const struct trace_opts *o)
{
	char link[64], exe[PATH_MAX];
	ssize_t n;
	int err;

	snprintf(link, sizeof(link), "/proc/%d/exe", s->pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	err = capture_attach_markers(s->cap, s->pid, n > 0 ? exe : NULL, o->markers, o->nmarkers);
	if (err)
		return err;
	for (size_t i = 0; i < o->nmarkers; i++) {
		struct mw_markname mn = { .id = i + 1, .kind = o->markers[i].kind };

		snprintf(mn.name, sizeof(mn.name), "%s",
			 o->markers[i].name ? o->markers[i].name : o->markers[i].symbol);
		feed(s, &(struct mw_srec){ .kind = MW_S_MARKNAME, .len = sizeof(mn), .data = &mn });
	}
	return 0;
}

static int start_target(struct session *s, const struct trace_opts *o)
{
	struct mw_proc init;
	int err;

	if (o->cmd) {
		char path[64];

		/* Its own markers without a fork of `memwatch mark`
		 * (include/memwatch_mark.*): where to send them. */
		if (control_path(&s->ctl, path, sizeof(path)))
			setenv(MW_CONTROL_ENV, path, 1);
		err = launch_start(o->cmd, &s->pid);
		if (err)
			return err;
	} else {
		s->pid = o->pid;
	}
	s->alive = true;
	s->acct->pid = s->pid;
	err = seed_proc_init(s->pid, o->cmd != NULL, &init);
	if (!err)
		err = capture_track(s->cap, s->pid, &init);
	if (err) {
		mw_err("cannot start tracing PID %d: %s", s->pid, strerror(-err));
		if (o->cmd)
			kill(s->pid, SIGKILL);
		return err == -ENOENT ? MW_EXIT_NOPID : MW_EXIT_RUNTIME;
	}
	err = attach_markers(s, o);
	if (err) {
		if (o->cmd)
			kill(s->pid, SIGKILL);
		return err;
	}
	/* Before the capabilities go: page frames (the zero page). */
	s->pagemap_fd = procfs_pagemap_open(s->pid);
	feed_seed(s, MW_SEED_ATTACH);
	if (o->stacks && o->python) {
		s->py = python_new(s->pid);
		python_find(s);
	}
	/* -p: the process ran on while smaps was read, and the kernel side
	 * counted its changes from before the read: the records apply them
	 * to a seed that may hold them already (a Go heap faulting in and
	 * scavenging: MiBs).  Measure every mapping again once caught up. */
	if (!o->cmd) {
		struct mw_mapping *mp;

		model_for_each(mp, &s->acct->model)
			model_set_recheck(&s->acct->model, mp, true);
	}
	/* -p: ask to hold it at its exit as well, so we can catch up then
	 * ('-- CMD' is held already); a debugger in the way just costs that. */
	s->held = o->cmd || launch_seize(s->pid);
	if (!s->held)
		mw_dbg("PID %d cannot be held at its exit: final per-mapping RSS may lag", s->pid);
	/* The first phase, "start", with the totals as tracing begins. */
	capture_mark(s->cap, s->pid, MW_MARK_PHASE, "start");
	if (o->cmd && launch_resume(s->pid)) {
		kill(s->pid, SIGKILL);
		return MW_EXIT_RUNTIME;
	}
	return 0;
}

/* '-- CMD': reap the child when it exits; returns true once it has. */
static void catch_up(struct session *s);

static bool reap_child(struct session *s, int *status, bool block)
{
	int st;

	for (;;) {
		/* *status is how it ended, never a stop seen on the way
		 * (a signal it ignores still stops it for us first). */
		switch (launch_poll(s->pid, &st, block)) {
		case LAUNCH_GONE:
			*status = st;
			s->alive = false;
			return true;
		case LAUNCH_AT_EXIT:
			/* Exiting, address space intact: everything it did is
			 * in the buffer now; take it all in, then let it go. */
			if (!s->exit_stop_ns)
				s->exit_stop_ns = mw_now_ns();
			catch_up(s);
			launch_continue(s->pid);
			break;
		default:
			return false;
		}
	}
}

/* In '-- CMD' mode signals go on to the command (as the terminal's SIGINT
 * already does) and the trace ends when it exits; a second one ends it now. */
static bool handle_signal(struct session *s, int *forwarded)
{
	int sig = mw_stop_signal();

	if (!sig)
		return false;
	if (!s->o->cmd || mw_stop_count() > 1)
		return true;
	if (*forwarded != sig && sig != SIGINT)
		kill(s->pid, sig);
	*forwarded = sig;
	return false;
}

/* The attribution slots' contents for keys inside [start, end). */
static void slots_in(const struct mw_proc *k, uint64_t start, uint64_t end,
		     int64_t out[MW_NR_MEMBERS])
{
	memset(out, 0, sizeof(int64_t) * MW_NR_MEMBERS);
	for (int j = 0; j < MW_SLOTS; j++) {
		const struct mw_slot *sl = &k->slots[j];

		if (sl->vm_start < start || sl->vm_start >= end)
			continue;
		for (int mb = 0; mb < MW_NR_MEMBERS; mb++)
			out[mb] += sl->rss[mb];
	}
}

/*
 * Mappings a split divided by guess (or measured while the process ran
 * ahead) get their RSS measured again once we have caught up with the
 * kernel: pagemap now, less what the attribution slots still hold for them,
 * and not while a thread is inside a traced syscall (munmap, madvise): what
 * it zaps is gone from pagemap, but comes with its record later.
 * held: the process is stopped at its exit and the buffer drained, so
 * nothing more is in flight: caught up even if records were lost on the way
 * (the kernel's sequence then runs ahead of ours for good).
 */
static void reconcile_splits(struct session *s, bool held)
{
	const struct mw_model *m = &s->acct->model;
	struct mw_proc *k = NULL, *k2 = NULL;
	const struct mw_mapping *mp, *next;

	if (!m->nrecheck || !s->alive || s->acct->exited)
		return;
	k = mw_xcalloc(1, sizeof(*k));
	k2 = mw_xcalloc(1, sizeof(*k2));
	/* Caught up: every structural record the kernel emitted is applied,
	 * and every harvest of the slots: one still in the buffer holds RSS
	 * that pagemap shows already and the slots no longer do (a sample's
	 * harvest, taken by the sampler thread: brk -p under load, the heap
	 * +1 MiB). */
	if (capture_proc_read(s->cap, s->pid, k) ||
	    (!held && (k->seq != s->acct->last_seq || k->in_sys)))
		goto out;
	/* Held too: 'memwatch mark' harvests from our side.  Records lost on
	 * the way leave the count ahead for good: held, nothing is in flight. */
	if ((uint32_t)k->harvests != s->acct->last_hseq && !(held && k->lost))
		goto out;
	s->acct->concurrent |= k->reorders != 0;
	/* The walk may clear mp's recheck (feed: MW_S_RECONCILE), not others'. */
	for (mp = TAILQ_FIRST(&m->recheck); mp; mp = next) {
		struct mw_reconcile rc = { .start = mp->start, .end = mp->end };
		int other = mp->kind == MW_K_SHMEM ? MW_SHMEM : MW_FILE;
		int64_t before[MW_NR_MEMBERS], after[MW_NR_MEMBERS];
		uint64_t anon, file;

		next = TAILQ_NEXT(mp, recheck_node);
		if (session_pagemap(s, mp->start, mp->end, &anon, &file))
			continue;
		/* The slots hold what the table has yet to receive; if they
		 * moved while pagemap was read, the mapping is busy: later. */
		slots_in(k, mp->start, mp->end, before);
		if (capture_proc_read(s->cap, s->pid, k2) || k2->seq != k->seq ||
		    k2->harvests != k->harvests || (!held && k2->in_sys))
			break;
		slots_in(k2, mp->start, mp->end, after);
		if (memcmp(before, after, sizeof(before)))
			continue;
		if (mw_verbose >= 3)
			mw_dbg("recon %llx: pagemap anon %llu file %llu, slots anon %lld file %lld, seq %llu hseq %llu held %d",
			       (unsigned long long)mp->start, (unsigned long long)anon,
			       (unsigned long long)file, (long long)before[MW_ANON],
			       (long long)before[other], (unsigned long long)k->seq,
			       (unsigned long long)k->harvests, held);
		rc.rss[MW_ANON] = (int64_t)anon - before[MW_ANON];
		rc.rss[other] = (int64_t)file - before[other];
		feed(s, &(struct mw_srec){ .kind = MW_S_RECONCILE, .len = sizeof(rc), .data = &rc });
	}
out:
	free(k);
	free(k2);
}

/* How often other contexts' changes may have every mapping measured again,
 * and how often the kernel's count of them is looked at. */
#define MW_REMEASURE_GAP_NS	(150 * MW_NS_PER_MS)
#define MW_EXTERNAL_LOOK_NS	(50 * MW_NS_PER_MS)

/*
 * Other contexts changed the process's RSS at addresses nobody named
 * (reclaim, khugepaged, KSM, /proc/PID/mem: bpf/fault.bpf.h counts them in
 * external_changes): its mappings are measured again from pagemap, so that
 * per-mapping RSS is right shortly after, not at the process's next change
 * of its own.  At most every 150 ms, and at most a fifth of the time (a
 * process under reclaim changes all the time); force: at the end.
 */
static void external_check(struct session *s, bool force)
{
	uint64_t now = mw_now_ns(), done;
	struct mw_proc *k;

	if (!s->alive || s->acct->exited || (!force && now < s->ext_next))
		return;
	s->ext_next = now + MW_EXTERNAL_LOOK_NS;
	k = mw_xcalloc(1, sizeof(*k));
	if (!capture_proc_read(s->cap, s->pid, k) && k->external_changes != s->ext_seen) {
		struct mw_remeasure rm = { .pid = (uint32_t)s->pid,
					   .external_changes = k->external_changes };

		s->ext_seen = k->external_changes;
		feed(s, &(struct mw_srec){ .kind = MW_S_REMEASURE, .len = sizeof(rm), .data = &rm });
		reconcile_splits(s, false);
		done = mw_now_ns();
		s->ext_next = done + MW_MAX(MW_REMEASURE_GAP_NS, 4 * (done - now));
	}
	free(k);
}

/* Apply what the ring buffer holds until it is empty, or until limit (0:
 * none; the producer is held or gone).  Returns false if some is left. */
static bool drain(struct session *s, uint64_t limit)
{
	while (capture_poll(s->cap, 0) > 0)
		if (limit && mw_now_ns() >= limit)
			return false;
	return true;
}

/* What the walks of malloc's arenas at one mark may take in all. */
#define MW_HEAPWALK_NS	(500 * MW_NS_PER_MS)

static void feed_heapfree(void *ctx, const struct mw_heapfree *hf)
{
	feed(ctx, &(struct mw_srec){ .kind = MW_S_HEAPFREE, .len = sizeof(*hf), .data = hf });
}

/*
 * The phase ending now is named for a release, and the program waits (for
 * its mark's answer, or held at its exit): what glibc's malloc holds free
 * in each of its arenas (capture/heapwalk.h), one MW_S_HEAPFREE record
 * each, applied to that phase ("released but kept" sizes itself by them).
 */
static void walk_arenas(struct session *s)
{
	const struct mw_phases *ph = &s->acct->phases;
	const struct mw_mapping *mp;
	struct hw_region *r;
	size_t n = 0;

	drain(s, mw_now_ns() + MW_HEAPWALK_NS);
	if (!s->alive || !ph->n || !findings_release_name(ph->v[ph->n - 1].name))
		return;
	r = mw_xcalloc(s->acct->model.nlive + 1, sizeof(*r));
	model_for_each(mp, &s->acct->model)
		if (mp->kind == MW_K_HEAP || (mp->kind == MW_K_ANON && (mp->flags & MW_VM_WRITE)))
			r[n++] = (struct hw_region){ mp->start, mp->end, mp->kind == MW_K_HEAP };
	heapwalk_process(s->pid, s->pagemap_fd, r, n, mw_now_ns() + MW_HEAPWALK_NS,
			 feed_heapfree, s);
	free(r);
}

/* The process is held (at its exit): apply everything, correct the layout
 * and the RSS of re-checked mappings while /proc still shows them. */
static void catch_up(struct session *s)
{
	struct mw_mapping *mp;

	drain(s, 0);
	feed_seed(s, MW_SEED_RESYNC);	/* names and layout, as /proc has them */
	walk_arenas(s);			/* the last phase a release: what malloc keeps */
	/* Every mapping's RSS, measured while it is still there; again if a
	 * harvest from our side ('memwatch mark') came in between. */
	model_for_each(mp, &s->acct->model)
		model_set_recheck(&s->acct->model, mp, true);
	for (int i = 0; i < 3 && s->acct->model.nrecheck; i++) {
		reconcile_splits(s, true);
		drain(s, 0);
	}
	feed_seed(s, MW_SEED_MEASURE);	/* Pss, Locked, ...: as of now */
	/* VmLck and VmPin as they end: calls memwatch does not trace move
	 * them too (io_uring_register, mlockall, a driver's pin). */
	capture_mark(s->cap, s->pid, MW_MARK_NOTE, NULL);
}

/* Files still mapped whose name is gone now show "(deleted)" in /proc. */
static void note_unlinked_files(struct session *s)
{
	const struct mw_model *m = &s->acct->model;
	const struct mw_mapping *mp;

	model_for_each(mp, m) {
		struct mw_unlinked u = { mp->ino, mp->dev_major, mp->dev_minor };
		struct stat st;

		if (!mp->has_file || mp->deleted || !mp->path || mp->path[0] != '/')
			continue;
		/* Inode only: st_dev differs from the mapping's s_dev on btrfs.
		 * A path we may not look up (capabilities dropped) tells
		 * nothing: only a name that is gone or another file counts. */
		if (stat(mp->path, &st) == 0 ? st.st_ino == mp->ino :
		    errno != ENOENT && errno != ENOTDIR)
			continue;
		feed(s, &(struct mw_srec){ .kind = MW_S_UNLINKED, .len = sizeof(u), .data = &u });
	}
}

/*
 * The end came while the process still runs (-d, a signal) and the analysis
 * is behind a producer faster than it: it gets until limit, then what is
 * left is counted, said in one line, and the layout re-read from /proc so
 * that the totals and the table are exact all the same.
 */
static void stop_behind(struct session *s, struct mw_end *end)
{
	struct mw_proc *k = mw_xcalloc(1, sizeof(*k));
	uint64_t now = mw_now_ns(), last = capture_last_ts(s->cap);

	end->behind_ns = last && now > last ? now - last : 0;
	if (!capture_proc_read(s->cap, s->pid, k) && s->acct->seq_known &&
	    k->seq > s->acct->last_seq)
		end->unapplied = k->seq - s->acct->last_seq;
	free(k);
	s->acct->need_resync = true;
	mw_err("stopped %.1f s behind the kernel: %llu records not applied, counted as lost "
	       "(the totals and the layout are re-read from /proc)", end->behind_ns / 1e9,
	       (unsigned long long)end->unapplied);
}

/* How long the end may spend applying what the ring buffer still holds,
 * and reading smaps for the end measure (what the drain left of it): -d N
 * ends by N + 0.5 s, and the reports and the freeing take up to 0.2 s
 * after that (stress-ng --mmap: 1000 mappings, 200 samples). */
#define MW_END_DRAIN_NS		(150 * MW_NS_PER_MS)
/* A quiet process's measure has this long of its own: a stopped process's
 * smaps is quick (29,000 VMAs in 52 ms); a busy one's waits on its
 * mmap_lock (stress-ng --mmap: 0.2 s) and gets what the drain left. */
#define MW_END_MEASURE_NS	(500 * MW_NS_PER_MS)

/* Has the process made no call memwatch follows since sequence seq? */
static bool quiet_since(struct session *s, uint64_t seq)
{
	struct mw_proc *k = mw_xcalloc(1, sizeof(*k));
	bool quiet = !capture_proc_read(s->cap, s->pid, k) && k->seq == seq && !k->in_sys;

	free(k);
	return quiet;
}

static void finish(struct session *s, bool exited, int status, uint64_t drain_limit)
{
	struct mw_end end = {
		.pid = s->pid,
		.how = exited ? MW_END_EXITED : MW_END_DETACHED,
		.wait_status = status,
		/* Held at its exit, the process ended when it got there. */
		.ts = exited && s->exit_stop_ns ? s->exit_stop_ns : mw_now_ns(),
	};

	uint64_t seq;

	if (!drain(s, exited ? 0 : drain_limit))
		stop_behind(s, &end);
	seq = s->acct->last_seq;
	if (s->alive && !s->acct->exited &&
	    model_vm_bytes(&s->acct->model) != account_vm(s->acct))
		s->acct->need_resync = true;
	if (s->alive && !s->acct->exited && s->acct->need_resync)
		feed_seed(s, MW_SEED_RESYNC);
	/* -p, or a command still running: every mapping measured again if
	 * the process is quiet now (as at the exit hold).  What the attach
	 * could not place exactly ends here: the first counter change after
	 * capture_track() carries every change since seed_proc_init() read
	 * status, which the smaps seed holds as well when it came in between
	 * (Go -p: a 4 MiB arena +480 KiB, once in 40 runs). */
	if (s->alive && !s->acct->exited) {
		struct mw_mapping *mp;

		model_for_each(mp, &s->acct->model)
			model_set_recheck(&s->acct->model, mp, true);
	}
	external_check(s, true);
	reconcile_splits(s, false);
	/* Pss, Locked, ...: under a deadline, given up rather than end late
	 * (the report then has no "smaps"). */
	if (s->alive && !s->acct->exited &&
	    feed_seed_until(s, MW_SEED_MEASURE, exited ? 0 : quiet_since(s, seq) ?
			    mw_now_ns() + MW_END_MEASURE_NS : drain_limit) == -ETIME)
		mw_err("no end measure of Pss, Swap, AnonHugePages and Locked: reading smaps "
			"would end the trace late");
	note_unlinked_files(s);
	capture_emit_state(s->cap, s->pid, 1);
	feed(s, &(struct mw_srec){ .kind = MW_S_END, .len = sizeof(end), .data = &end });
	capture_untrack(s->cap, s->pid);
}

/* One 'memwatch mark' request, if one is waiting. */
static void serve_control(struct session *s)
{
	struct mw_control_req req;
	int c = control_accept(&s->ctl, &req);

	if (c < 0)
		return;
	/* The program waits for the answer: what it did is taken in, and
	 * what it changed at no address memwatch knows (a driver's pins) is
	 * measured again, so that both land in what ends here; so is a
	 * layout a call could not read (bpf/syscalls.bpf.h: rewalk()). */
	drain(s, mw_now_ns() + MW_HEAPWALK_NS);
	external_check(s, true);
	if (s->alive && !s->acct->exited && s->acct->need_resync)
		feed_seed(s, MW_SEED_RESYNC);
	if (!req.iter)
		walk_arenas(s);
	if (capture_mark(s->cap, s->pid, req.iter ? MW_MARK_ITER : MW_MARK_PHASE, req.name))
		control_reply(c, "error cannot mark\n");
	else
		control_reply(c, "ok\n");
}

/* Wait up to timeout_ms for records or a control request. */
static int wait_events(struct session *s, int timeout_ms)
{
	struct pollfd pfd[2] = {
		{ .fd = capture_fd(s->cap), .events = POLLIN },
		{ .fd = control_poll_fd(&s->ctl), .events = POLLIN },
	};
	int n = poll(pfd, pfd[1].fd >= 0 ? 2 : 1, timeout_ms);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if ((pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) || control_due(&s->ctl))
		serve_control(s);
	return capture_poll(s->cap, 0);
}

/*
 * The default sampling (-j or --svg without -i): fine while the run is
 * young, coarser as it ages, so a run of a second still draws a curve and
 * one of a day does not flood the JSON: every 10 ms for the first 5 s, every
 * 100 ms to the first minute, then every second.
 */
static uint64_t auto_step(uint64_t elapsed_ns)
{
	if (elapsed_ns < 5 * MW_NS_PER_SEC)
		return MW_NS_PER_SEC / 100;
	if (elapsed_ns < 60 * MW_NS_PER_SEC)
		return MW_NS_PER_SEC / 10;
	return MW_NS_PER_SEC;
}

/*
 * Samples (-i, or the default with -j/--svg) are taken by the kernel when a
 * thread of their own asks, on time, whatever the session's loop is doing:
 * symbolising stacks (--stacks) or catching up with a fast producer does
 * not leave holes in the timeline.  Each sample is a record with the
 * kernel's totals and timestamp, applied in order with the rest.
 */
struct sampler {
	struct session *s;
	pthread_t th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	bool running;
};

static void *sampler_run(void *arg)
{
	struct sampler *sp = arg;
	const struct trace_opts *o = sp->s->o;
	uint64_t t0 = mw_now_ns();
	uint64_t step = o->auto_samples ? auto_step(0) : (uint64_t)(o->interval * 1e9);
	uint64_t next = t0 + step, now;
	struct timespec ts;

	pthread_mutex_lock(&sp->lock);
	while (!sp->stop) {
		ts.tv_sec = (time_t)(next / MW_NS_PER_SEC);
		ts.tv_nsec = (long)(next % MW_NS_PER_SEC);
		pthread_cond_timedwait(&sp->cond, &sp->lock, &ts);
		now = mw_now_ns();
		if (sp->stop || now < next)
			continue;
		capture_mark(sp->s->cap, sp->s->pid, MW_MARK_SAMPLE, NULL);
		if (o->auto_samples)
			step = auto_step(now - t0);
		next += step * ((now - next) / step + 1);
	}
	pthread_mutex_unlock(&sp->lock);
	return NULL;
}

static void sampler_start(struct sampler *sp, struct session *s)
{
	pthread_condattr_t ca;
	sigset_t all, old;

	memset(sp, 0, sizeof(*sp));
	sp->s = s;
	if (!s->o->auto_samples && s->o->interval <= 0)
		return;
	pthread_mutex_init(&sp->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sp->cond, &ca);
	pthread_condattr_destroy(&ca);
	/* Signals stay the session loop's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	sp->running = pthread_create(&sp->th, NULL, sampler_run, sp) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!sp->running)
		mw_err("cannot start the sampling thread: no samples");
}

static void sampler_stop(struct sampler *sp)
{
	if (!sp->running)
		return;
	pthread_mutex_lock(&sp->lock);
	sp->stop = true;
	pthread_cond_signal(&sp->cond);
	pthread_mutex_unlock(&sp->lock);
	pthread_join(sp->th, NULL);
	sp->running = false;
	pthread_cond_destroy(&sp->cond);
	pthread_mutex_destroy(&sp->lock);
}

static int loop(struct session *s, int *cmd_status)
{
	const struct trace_opts *o = s->o;
	uint64_t now = mw_now_ns();
	uint64_t deadline = o->duration > 0 ? now + (uint64_t)(o->duration * 1e9) : 0;
	uint64_t next_check = 0, resync_ok = 0;
	int forwarded = 0, status = -1, n;
	bool exited = false;
	struct sampler sp;

	sampler_start(&sp, s);
	for (;;) {
		n = wait_events(s, 50);
		if (n < 0 && n != -EINTR) {
			mw_err("reading the ring buffer failed: %s", strerror(-n));
			sampler_stop(&sp);
			finish(s, false, -1, mw_now_ns() + MW_END_DRAIN_NS);
			return MW_EXIT_RUNTIME;
		}
		reconcile_splits(s, false);
		external_check(s, false);
		now = mw_now_ns();
		if (handle_signal(s, &forwarded))
			break;
		if (s->held && reap_child(s, &status, o->cmd && s->acct->exited)) {
			exited = true;
			break;
		}
		if (!o->cmd && s->acct->exited) {
			exited = true;
			break;
		}
		if (!o->cmd && now >= next_check) {
			/* The exit record can be lost like any other. */
			next_check = now + 500000000ull;
			if (kill(s->pid, 0) && errno == ESRCH) {
				exited = true;
				break;
			}
		}
		if (deadline && now >= deadline)
			break;
		/* A process that changes its layout faster than /proc can be
		 * read (stress-ng --brk: 30,000 VMAs, a re-read racing
		 * thousands of calls) would keep the loop re-reading and never
		 * applying: at most a fifth of the time goes to re-reads, and
		 * none past -d's end (the end re-reads in any case; a re-read
		 * racing stress-ng --mmap under ASan ran 0.55 s past it). */
		if (s->acct->need_resync && s->alive && now >= resync_ok) {
			feed_seed_until(s, MW_SEED_RESYNC, deadline);
			resync_ok = mw_now_ns() + 4 * (mw_now_ns() - now);
		}
	}
	sampler_stop(&sp);
	if (exited && !o->cmd)
		s->alive = false;
	/* -d N ends within N + 0.5 s: the rest of the end (reads of /proc,
	 * the reports) needs the last 0.35 of it. */
	finish(s, exited, status, (deadline && now >= deadline ? deadline : mw_now_ns()) +
	       MW_END_DRAIN_NS);
	*cmd_status = status;
	return 0;
}

/* The CPU time this process has used, in ns. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * MW_NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

int trace_run(const struct trace_opts *o, struct mw_account *acct, int *cmd_status)
{
	struct session s = { .o = o, .acct = acct, .pagemap_fd = -1,
			     .ctl = { .fd = -1, .dirfd = -1, .client = -1 } };
	struct mw_capture_opts co = {
		.max_procs = o->max_procs,
		.ringbuf_bytes = o->ringbuf_bytes,
		/* '-- CMD' is held at its exit to catch up: records can wait. */
		.batch_wakeups = o->cmd != NULL,
		.stacks = o->stacks,
		.python = o->python,
		.stack_bytes = o->stack_bytes,
		.nmarkers = o->nmarkers,
		.host_cgroup_fd = -1,
		.sink = sink,
		.sink_ctx = &s,
	};
	int err;

	*cmd_status = -1;
	if ((err = preflight_privileges()) || (err = preflight_btf()))
		return err;
	heapwarm_start(true);	/* load_split() loads in a thread */
	if ((err = preflight_tracefs()) || (err = preflight_kernel()) || (err = kernel_check()))
		return err;
	if (!o->cmd && (err = preflight_pid(o->pid)))
		return err;
	acct->model.oracle = (struct mw_oracle){ .range_rss = oracle_pagemap, .ctx = &s };
	procfs_pagemap_probe_zero();
	mw_dbg("preflight done");
	err = capture_open(&s.cap, &co);
	if (err)
		return err;
	mw_dbg("BPF programs attached");
	kernel_note();
	mw_signals_install();
	control_open(&s.ctl);
	err = start_target(&s, o);
	if (!err) {
		/* Attached, outputs open, the command started with the
		 * user's privileges: the rest needs little. */
		privs_drop(bpf_probe, &s);
		if (o->cmd)
			mw_dbg("tracing %s (PID %d) from its first instruction", o->cmd[0], s.pid);
		else
			fprintf(stderr, "memwatch: tracing PID %d (%s); Ctrl-C to stop\n",
				s.pid, acct->comm);
		uint64_t cpu0 = cpu_ns(), rec0 = acct->records;

		err = loop(&s, cmd_status);
		/* What the analysis costs per record (scripts/bench's manymaps). */
		mw_dbg("traced: %llu records in %llu us of CPU", (unsigned long long)(acct->records - rec0),
		       (unsigned long long)(cpu_ns() - cpu0) / 1000);
	}
	acct->model.oracle.range_rss = NULL;
	control_close(&s.ctl);
	mw_dbg("trace done, detaching");
	capture_close(s.cap);
	mw_dbg("detached");
	if (s.py) {
		uint64_t codes, gone, ns, stacks;

		python_costs(s.py, &codes, &gone, &ns, &stacks);
		mw_dbg("python: %llu stacks, %llu code objects read (%llu freed before), %llu us",
		       (unsigned long long)stacks, (unsigned long long)codes,
		       (unsigned long long)gone, (unsigned long long)ns / 1000);
	}
	python_free(s.py);
	if (s.unwind) {
		struct mw_unwind_stats st;

		unwinder_stats(s.unwind, &st);
		mw_dbg("unwind: %llu stacks, %llu frames, %llu truncated (%llu copies cut short "
		       "by ring-buffer pressure), %llu without frames; "
		       "%.1f us each on average, median %.1f, 90th percentile %.1f, %.1f at most",
		       (unsigned long long)st.stacks, (unsigned long long)st.frames,
		       (unsigned long long)st.truncated, (unsigned long long)st.pressure,
		       (unsigned long long)st.failed,
		       st.stacks ? st.ns / 1e3 / st.stacks : 0.0, st.median_ns / 1e3,
		       st.p90_ns / 1e3, st.max_ns / 1e3);
	}
	unwinder_free(s.unwind);
	free(s.frames);
	symbolizer_free(s.syms);
	if (s.pagemap_fd >= 0)
		close(s.pagemap_fd);
	return err;
}
