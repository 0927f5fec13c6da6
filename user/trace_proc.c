// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * trace_proc.c — one traced process's part of a session: its records into
 * its analysis, its layout read from /proc when the kernel could not say,
 * its mappings measured again, its end.
 *
 * Order matters for exactness: the BPF programs are attached before the
 * process is added to the traced set, and the process is added before its
 * layout is read from /proc, so nothing that happens after the read can be
 * missed (records that reach us for changes the read already shows are
 * harmless: each states the kernel's VMAs, not a delta).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture.h"
#include "capture/drmfdinfo.h"
#include "capture/heapwalk.h"
#include "capture/recording.h"
#include "analysis/findings.h"
#include "unwind/symbolize.h"
#include "unwind/unwind.h"
#include "unwind/python.h"
#include "trace_impl.h"
#include "util.h"

struct target *target_of(struct session *s, pid_t pid)
{
	uint32_t i;

	return idmap_get(&s->by_pid, (uint64_t)(uint32_t)pid, &i) ? s->v[i] : NULL;
}

/* Its stacks' helpers and its pagemap; the account is the caller's. */
void target_free(struct target *t)
{
	if (!t)
		return;
	if (t->unwind) {
		struct mw_unwind_stats st;

		unwinder_stats(t->unwind, &st);
		mw_dbg("unwind of PID %d: %llu stacks, %llu frames, %llu truncated (%llu copies "
		       "cut short by ring-buffer pressure), %llu without frames; "
		       "%.1f us each on average, median %.1f, 90th percentile %.1f, %.1f at most",
		       t->pid, (unsigned long long)st.stacks, (unsigned long long)st.frames,
		       (unsigned long long)st.truncated, (unsigned long long)st.pressure,
		       (unsigned long long)st.failed,
		       st.stacks ? st.ns / 1e3 / st.stacks : 0.0, st.median_ns / 1e3,
		       st.p90_ns / 1e3, st.max_ns / 1e3);
		mw_dbg("call-site cache of PID %d: %llu stacks from kept frames, %llu sites and "
		       "%llu classes kept, %llu unwindings read past their recipe, %llu hits "
		       "of sites not kept, %llu past the limits",
		       t->pid, (unsigned long long)t->sites.st.hits,
		       (unsigned long long)t->sites.st.sites,
		       (unsigned long long)t->sites.st.recipes,
		       (unsigned long long)t->sites.st.wide,
		       (unsigned long long)t->sites.st.misses,
		       (unsigned long long)t->sites.st.full);
		sitecache_clear(&t->sites);
	}
	unwinder_free(t->unwind);
	free(t->frames);
	symbolizer_free(t->syms);
	if (t->pagemap_fd >= 0)
		close(t->pagemap_fd);
	free(t);
}

/* Everything capture learns passes here: into the analysis, and into the
 * recording if there is one. */
void feed(struct target *t, const struct mw_srec *r)
{
	struct mw_recorder *w = t->s->o->recorder;

	t->s->nanswers = 0;
	account_feed(t->acct, r);
	if (!w)
		return;
	for (size_t i = 0; i < t->s->nanswers; i++)
		recorder_write(w, &(struct mw_srec){ .kind = MW_S_ORACLE,
						     .len = sizeof(t->s->answers[i]),
						     .data = &t->s->answers[i] });
	recorder_write(w, r);
}

/* until: see seed_build(); 0 for none. */
int feed_seed_until(struct target *t, enum mw_seed_mode mode, uint64_t until)
{
	struct mw_seed *seed;
	uint32_t len;
	int err = seed_build(t->pid, mode, until, &seed, &len);

	if (err) {
		mw_dbg("cannot read /proc/%d for a %d seed: %s", t->pid, mode, strerror(-err));
		return err;
	}
	feed(t, &(struct mw_srec){ .kind = MW_S_SEED, .len = len, .data = seed });
	free(seed);
	/* With the end measure: GPU memory its DRM drivers report. */
	if (mode == MW_SEED_MEASURE) {
		size_t dlen;
		struct mw_drm_mem *drm = drm_read_clients(t->pid, MW_DRM_CLIENTS, &dlen);

		if (drm)
			feed(t, &(struct mw_srec){ .kind = MW_S_DRM, .len = (uint32_t)dlen,
						   .data = drm });
		free(drm);
	}
	return 0;
}

void feed_seed(struct target *t, enum mw_seed_mode mode)
{
	feed_seed_until(t, mode, 0);
}

static void feed_sym(void *ctx, const struct mw_srec *r)
{
	feed(ctx, r);
}

/* ---- --python ---- */
/* Is the process a CPython memwatch knows?  Then its BPF walk starts. */
void python_find(struct session *s)
{
	struct mw_py_target t;
	int err;

	if (!python_detect(s->py) || !python_target(s->py, &t))
		return;
	t.epoch = s->py_epoch;
	if ((err = capture_python_set(s->cap, s->root->pid, &t)))
		mw_dbg("python: cannot set PID %d's runtime: %s", s->root->pid, strerror(-err));
}

/*
 * An exec of a program that links libpython (pyenv's python3.12, any
 * --enable-shared build): ld.so maps the library a millisecond or so after
 * the exec, and the interpreter runs a script's first line some 25 ms
 * after that here.  The records of that mapping come behind the stacks of
 * ld.so's earlier calls, which the loop unwinds first (the first takes 11
 * ms): they were read 15 ms after they were written, 25 ms under ASan, more
 * under load, and a script that allocated at once went without Python
 * frames.  So at the exec (its record, or the loop letting go a process
 * held at it) the loader looks for the library itself until ld.so has
 * mapped it, for at most this long.
 */
#define MW_PY_LD_WAIT_NS	(20 * MW_NS_PER_MS)
#define MW_PY_LD_POLL_NS	(250 * 1000)

void python_find_exec(struct session *s)
{
	struct timespec ts = { 0, MW_PY_LD_POLL_NS };
	struct pm_status ps;
	uint64_t until;

	python_find(s);
	if (python_settled(s->py) || !python_links_lib(s->py))
		return;
	/* Held at its exec ('-- CMD', -f): ld.so runs once the loop lets
	 * it go, and looks then (LAUNCH_EXECED). */
	if (!procfs_read_status(s->root->pid, &ps) && ps.state == 't')
		return;
	until = mw_now_ns() + MW_PY_LD_WAIT_NS;
	while (!python_settled(s->py) && mw_now_ns() < until) {
		nanosleep(&ts, NULL);
		python_find(s);
	}
}

/*
 * The loop can be far behind the process (symbolising the stacks of what
 * ran before): a "chroot DIR python3" had run its script for 100 ms by the
 * time its exec's record was read, and the walk had not started.  So each
 * turn of the loop asks the kernel which executable the root runs (a
 * stat(), while no interpreter is found); for a second after it changes,
 * its mappings are searched too (libpython comes after the exec).
 */
#define MW_PY_RECHECK_NS	MW_NS_PER_SEC

void python_recheck(struct session *s)
{
	char path[64];
	struct stat st;
	uint64_t now;

	if (!s->py || python_settled(s->py))
		return;
	snprintf(path, sizeof(path), "/proc/%d/exe", s->root->pid);
	if (stat(path, &st))
		return;
	now = mw_now_ns();
	if (st.st_dev != s->py_exe_dev || st.st_ino != s->py_exe_ino) {
		s->py_exe_dev = st.st_dev;
		s->py_exe_ino = st.st_ino;
		s->py_recheck_until = now + MW_PY_RECHECK_NS;
	}
	if (now < s->py_recheck_until)
		python_find(s);
}

/* Look for the interpreter again when a file that may hold it is mapped. */
static void python_record(struct target *t, const struct mw_rec_hdr *h, uint32_t len)
{
	const struct mw_op_rec *op = (const void *)h;
	size_t have;

	if (h->type != MW_REC_OP || python_settled(t->s->py) ||
	    len < offsetof(struct mw_op_rec, paths))
		return;
	/* The record ends after its last path. */
	have = (len - offsetof(struct mw_op_rec, paths)) / MW_PATH_LEN;
	for (uint32_t i = 0; i < op->nr_paths && i < MW_MAX_VMAS && i < have; i++)
		if (memchr(op->paths[i], 0, MW_PATH_LEN) && python_path_candidate(op->paths[i])) {
			python_find(t->s);
			break;
		}
}
/* ---- end of --python ---- */

/* The call-site cache's ops: what the kernel side must learn. */
static void site_recipe(void *ctx, uint64_t cls, const struct mw_stack_recipe *r)
{
	struct target *t = ctx;

	capture_stack_recipe(t->s->cap, cls, r);
}

static void site_seen(void *ctx, uint64_t site, bool seen)
{
	struct target *t = ctx;

	capture_stack_site(t->s->cap, site, seen);
}

static void unwind_init(struct target *t)
{
	if (t->unwind)
		return;
	t->unwind = unwinder_new(t->syms, t->pid);
	t->frames = mw_xcalloc(1, sizeof(*t->frames) + MW_FRAMES_MAX * sizeof(t->frames->ips[0]));
	sitecache_init(&t->sites, &(struct mw_sitecache_ops){
		.recipe = site_recipe, .site = site_seen, .ctx = t });
}

/* The frames kept for a stack that came without its copy (its site's),
 * into t->frames as this record's; 0: none kept, its ips[] serve. */
static uint32_t site_frames(struct target *t, const struct mw_stack_rec *rec, size_t len)
{
	const struct mw_frames *f;

	if (len < offsetof(struct mw_stack_rec, ips) || !rec->site_hit)
		return 0;
	unwind_init(t);
	if (!(f = sitecache_frames(&t->sites, rec)))
		return 0;
	memcpy(t->frames, f, sizeof(*f) + f->nr * sizeof(f->ips[0]));
	t->frames->tid = rec->hdr.tid;
	t->frames->seq = rec->hdr.seq;
	return f->nr;
}

/*
 * A stack record: with a copy of the user stack, unwound (unwind.c) into an
 * MW_S_FRAMES record ahead of it, and the copy left out of what follows (the
 * analysis and a recording keep the frames); the frame-pointer ips[] are
 * named only when the unwind found nothing.  A stack sent without its copy
 * (a site unwound before) takes the frames the call-site cache kept.
 */
static void feed_stack(struct target *t, const struct mw_srec *r)
{
	const struct mw_stack_rec *rec = r->data;
	struct mw_srec cut = *r;
	uint32_t nr = 0;

	if (!t->syms)
		t->syms = symbolizer_new(t->pid);
	if (unwind_has_copy(rec, r->len)) {
		unwind_init(t);
		nr = unwinder_run(t->unwind, rec, r->len, t->frames);
		if (nr) {
			uint32_t reads[MW_STACK_RECIPE_MAX];
			int nreads = unwinder_reads(t->unwind, t->frames, reads);

			sitecache_learn(&t->sites, rec, t->frames, reads, nreads);
		}
		if (mw_verbose > 1)
			mw_dbg("stack %u/%u kind %u: copy %u bytes from %#llx, flags %#x: %u frames%s",
			       rec->hdr.tid, rec->hdr.seq, rec->kind, rec->copy_len,
			       (unsigned long long)rec->copy_sp, rec->copy_flags, nr,
			       t->frames->flags & MW_FRAMES_TRUNCATED ? ", truncated" : "");
		cut.len = (uint32_t)(offsetof(struct mw_stack_rec, ips) +
				     MW_MIN(rec->nr, (uint32_t)MW_STACK_DEPTH) * sizeof(rec->ips[0]));
	} else {
		nr = site_frames(t, rec, r->len);
	}
	if (nr) {
		symbolizer_frames(t->syms, t->frames->ips, nr, feed_sym, t);
		feed(t, &(struct mw_srec){ .kind = MW_S_FRAMES,
					   .len = (uint32_t)(sizeof(*t->frames) +
							     nr * sizeof(t->frames->ips[0])),
					   .data = t->frames });
	} else {
		symbolizer_stack(t->syms, r->data, cut.len, feed_sym, t);
	}
	feed(t, &cut);
}

/*
 * A marker's late read of a call's VMAs comes without paths (bpf/syscalls.bpf.h:
 * rewalk()): each file's is read from /proc/PID/map_files now, into the
 * record that goes on (and into a recording).  One that cannot be read
 * (the mapping gone since) is marked truncated, and /proc is read again.
 */
static void rewalk_paths(struct target *t, struct mw_srec *r, struct mw_op_rec *full)
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
		snprintf(link, sizeof(link), "/proc/%d/map_files/%llx-%llx", (int)t->pid,
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

/* The target a record is for: the kernel's records by their tgid, the
 * kernel's aggregate (MW_S_STATE) by its pid. */
static struct target *record_target(struct session *s, const struct mw_srec *r)
{
	const struct mw_rec_hdr *h = r->data;

	if (r->kind == MW_S_BPF)
		return r->len < sizeof(*h) ? NULL : target_of(s, (pid_t)h->tgid);
	if (r->kind == MW_S_STATE && r->len >= sizeof(struct mw_state))
		return target_of(s, (pid_t)((const struct mw_state *)r->data)->pid);
	return s->root;
}

void sink(void *ctx, const struct mw_srec *in)
{
	struct target *t = record_target(ctx, in);
	const struct mw_rec_hdr *h = in->data;
	static struct mw_op_rec full;
	struct mw_srec rec = *in, *r = &rec;
	bool root;

	if (!t || !t->acct)
		return;
	root = t == t->s->root;
	if (r->kind == MW_S_BPF && t->s->py && root)
		python_record(t, h, r->len);
	/* Unwind and name a stack while the process is there to ask. */
	if (r->kind == MW_S_BPF && h->type == MW_REC_STACK) {
		feed_stack(t, r);
		return;
	}
	if (r->kind == MW_S_BPF && h->type == MW_REC_OP)
		rewalk_paths(t, r, &full);
	feed(t, r);
	if (r->kind == MW_S_BPF && h->type == MW_REC_EXEC && t->syms)
		symbolizer_reset(t->syms);
	if (r->kind == MW_S_BPF && h->type == MW_REC_EXEC && t->unwind)
		sitecache_clear(&t->sites);
	/* exec built a new address space without syscalls: read it now,
	 * before anything that follows in the buffer is applied. */
	if (r->kind == MW_S_BPF && h->type == MW_REC_EXEC) {
		/* The pagemap opened before reads the old address space. */
		if (t->pagemap_fd >= 0)
			close(t->pagemap_fd);
		t->pagemap_fd = -1;
		feed_seed(t, MW_SEED_EXEC);
	}
	if (r->kind == MW_S_BPF && h->type == MW_REC_PYCODE && t->s->py && root)
		python_fill(t->s->py, r->data, r->len, feed_sym, t);
	if (r->kind == MW_S_BPF && h->type == MW_REC_EXEC && t->s->py && root) {
		/* The old interpreter is gone; a new one is looked for. */
		python_reset(t->s->py);
		capture_python_set(t->s->cap, t->pid, NULL);
		t->s->py_epoch++;
		python_find_exec(t->s);
	}
}

/* RSS of [start, end) of the process: from the pagemap opened at the
 * start while it is the same address space, else opened now. */
static int session_pagemap(struct target *t, uint64_t start, uint64_t end,
			   uint64_t *anon, uint64_t *file)
{
	if (t->pagemap_fd >= 0)
		return procfs_pagemap_rss_fd(t->pagemap_fd, start, end, anon, file);
	return procfs_pagemap_rss(t->pid, start, end, anon, file);
}

/*
 * A split's pagemap read holds the mmap lock the process wants for its
 * next call: on a process that splits VMAs all the time (stress-ng --mmap,
 * a page madvised at a time) the reads took half the loader's time and
 * stalled the process on the lock.  Past 2 ms of each 100 ms the split
 * is divided by size instead, and its mappings are measured again when
 * the process is quiet (reconcile_splits()), as after any split.  The
 * refusal is an answer like another: a replay divides the same way.
 */
#define MW_ORACLE_WINDOW_NS	(100 * MW_NS_PER_MS)
#define MW_ORACLE_BUDGET_NS	(2 * MW_NS_PER_MS)

int oracle_pagemap(void *ctx, uint64_t start, uint64_t end,
			  uint64_t *anon, uint64_t *file)
{
	struct target *t = ctx;
	struct session *s = t->s;
	uint64_t now = mw_now_ns();
	int err = -ESRCH;

	*anon = *file = 0;
	if (now - s->oracle_window >= MW_ORACLE_WINDOW_NS) {
		s->oracle_window = now;
		s->oracle_spent = 0;
	}
	if (s->oracle_spent >= MW_ORACLE_BUDGET_NS) {
		err = -EBUSY;
	} else if (t->alive && !t->acct->exited) {
		err = session_pagemap(t, start, end, anon, file);
		s->oracle_spent += mw_now_ns() - now;
	}
	if (t->s->nanswers < MAX_ORACLE_PER_RECORD)
		t->s->answers[t->s->nanswers++] = (struct mw_oracle_ans){
			.pid = t->pid, .err = err, .start = start, .end = end,
			.anon = *anon, .file = *file,
		};
	return err;
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
 * Returns false when not caught up (nothing measured: ask again later),
 * true when there was nothing to measure, no state to read, or the
 * mappings were looked at.
 */
bool reconcile_splits(struct target *t, bool held)
{
	const struct mw_model *m = &t->acct->model;
	struct mw_proc *k = NULL, *k2 = NULL;
	const struct mw_mapping *mp, *next;
	bool looked = false;

	if (!m->nrecheck || !t->alive || t->acct->exited)
		return true;
	k = mw_xcalloc(1, sizeof(*k));
	k2 = mw_xcalloc(1, sizeof(*k2));
	/* Caught up: every structural record the kernel emitted is applied,
	 * and every harvest of the slots: one still in the buffer holds RSS
	 * that pagemap shows already and the slots no longer do (a sample's
	 * harvest, taken by the sampler thread: brk -p under load, the heap
	 * +1 MiB). */
	if (capture_proc_read(t->s->cap, t->pid, k)) {
		looked = true;	/* no state: nothing to wait for */
		goto out;
	}
	if (!held && (k->seq != t->acct->last_seq || t->acct->nseq_wait || k->in_sys))
		goto out;
	/* Held too: 'memwatch mark' harvests from our side.  Records lost on
	 * the way leave the count ahead for good: held, nothing is in flight. */
	if ((uint32_t)k->harvests != t->acct->last_hseq && !(held && k->lost))
		goto out;
	t->acct->concurrent |= k->reorders != 0;
	looked = true;
	/* The walk may clear mp's recheck (feed: MW_S_RECONCILE), not others'. */
	for (mp = TAILQ_FIRST(&m->recheck); mp; mp = next) {
		struct mw_reconcile rc = { .start = mp->start, .end = mp->end };
		int other = mp->kind == MW_K_SHMEM ? MW_SHMEM : MW_FILE;
		int64_t before[MW_NR_MEMBERS], after[MW_NR_MEMBERS];
		uint64_t anon, file;

		next = TAILQ_NEXT(mp, recheck_node);
		if (session_pagemap(t, mp->start, mp->end, &anon, &file))
			continue;
		/* The slots hold what the table has yet to receive; if they
		 * moved while pagemap was read, the mapping is busy: later. */
		slots_in(k, mp->start, mp->end, before);
		if (capture_proc_read(t->s->cap, t->pid, k2) || k2->seq != k->seq ||
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
		feed(t, &(struct mw_srec){ .kind = MW_S_RECONCILE, .len = sizeof(rc), .data = &rc });
	}
out:
	free(k);
	free(k2);
	return looked;
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
void external_check(struct target *t, bool force)
{
	uint64_t now = mw_now_ns(), done;
	struct mw_proc *k;

	if (!t->alive || t->acct->exited || (!force && now < t->ext_next))
		return;
	t->ext_next = now + MW_EXTERNAL_LOOK_NS;
	k = mw_xcalloc(1, sizeof(*k));
	if (!capture_proc_read(t->s->cap, t->pid, k) && k->external_changes != t->ext_seen) {
		struct mw_remeasure rm = { .pid = (uint32_t)t->pid,
					   .external_changes = k->external_changes };

		t->ext_seen = k->external_changes;
		feed(t, &(struct mw_srec){ .kind = MW_S_REMEASURE, .len = sizeof(rm), .data = &rm });
		reconcile_splits(t, false);
		done = mw_now_ns();
		t->ext_next = done + MW_MAX(MW_REMEASURE_GAP_NS, 4 * (done - now));
	}
	free(k);
}

/*
 * At a boundary (a socket mark, the end of a trace): other contexts'
 * changes looked at now, and the mappings due a measure read from pagemap
 * once caught up with the kernel, tried again until limit while not (the
 * process inside a call, a sample's harvest in flight); 0: one try.
 */
void measure_due(struct target *t, uint64_t limit)
{
	const struct timespec ms = { .tv_nsec = MW_NS_PER_MS };

	external_check(t, true);
	while (!reconcile_splits(t, false) && mw_now_ns() < limit) {
		nanosleep(&ms, NULL);
		drain(t->s, limit);
	}
}

/* Apply what the ring buffer holds until it is empty, or until limit (0:
 * none; the producer is held or gone).  Returns false if some is left. */
bool drain(struct session *s, uint64_t limit)
{
	while (capture_poll(s->cap, 0) > 0)
		if (limit && mw_now_ns() >= limit)
			return false;
	return true;
}


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
void walk_arenas(struct target *t)
{
	const struct mw_phases *ph = &t->acct->phases;
	const struct mw_mapping *mp;
	struct hw_region *r;
	size_t n = 0;

	drain(t->s, mw_now_ns() + MW_HEAPWALK_NS);
	if (!t->alive || !ph->n || !findings_release_name(ph->v[ph->n - 1].name))
		return;
	r = mw_xcalloc(t->acct->model.nlive + 1, sizeof(*r));
	model_for_each(mp, &t->acct->model)
		if (mp->kind == MW_K_HEAP || (mp->kind == MW_K_ANON && (mp->flags & MW_VM_WRITE)))
			r[n++] = (struct hw_region){ mp->start, mp->end, mp->kind == MW_K_HEAP };
	heapwalk_process(t->pid, t->pagemap_fd, r, n, mw_now_ns() + MW_HEAPWALK_NS,
			 feed_heapfree, t);
	free(r);
}

/* The process is held (at its exit): apply everything, correct the layout
 * and the RSS of re-checked mappings while /proc still shows them. */
void catch_up(struct target *t)
{
	struct mw_mapping *mp;

	drain(t->s, 0);
	feed_seed(t, MW_SEED_RESYNC);	/* names and layout, as /proc has them */
	walk_arenas(t);			/* the last phase a release: what malloc keeps */
	/* Every mapping's RSS, measured while it is still there; again if a
	 * harvest from our side ('memwatch mark') came in between. */
	model_for_each(mp, &t->acct->model)
		model_set_recheck(&t->acct->model, mp, true);
	for (int i = 0; i < 3 && t->acct->model.nrecheck; i++) {
		reconcile_splits(t, true);
		drain(t->s, 0);
	}
	feed_seed(t, MW_SEED_MEASURE);	/* Pss, Locked, ...: as of now */
	/* VmLck and VmPin as they end: calls memwatch does not trace move
	 * them too (io_uring_register, mlockall, a driver's pin). */
	capture_mark(t->s->cap, t->pid, MW_MARK_NOTE, NULL);
}

/* Files still mapped whose name is gone now show "(deleted)" in /proc. */
static void note_unlinked_files(struct target *t)
{
	const struct mw_model *m = &t->acct->model;
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
		feed(t, &(struct mw_srec){ .kind = MW_S_UNLINKED, .len = sizeof(u), .data = &u });
	}
}

/*
 * The end came while the process still runs (-d, a signal) and the analysis
 * is behind a producer faster than it: it gets until limit, then what is
 * left is counted, said in one line, and the layout re-read from /proc so
 * that the totals and the table are exact all the same.
 */
static void stop_behind(struct target *t, struct mw_end *end)
{
	struct mw_proc *k = mw_xcalloc(1, sizeof(*k));
	uint64_t now = mw_now_ns(), last = capture_last_ts(t->s->cap);

	end->behind_ns = last && now > last ? now - last : 0;
	if (!capture_proc_read(t->s->cap, t->pid, k) && t->acct->seq_known &&
	    k->seq > t->acct->last_seq)
		end->unapplied = k->seq - t->acct->last_seq;
	free(k);
	t->acct->need_resync = true;
	mw_err("stopped %.1f s behind the kernel: %llu records not applied, counted as lost "
	       "(the totals and the layout are re-read from /proc)", end->behind_ns / 1e9,
	       (unsigned long long)end->unapplied);
}

/* A quiet process's measure has this long of its own: a stopped process's
 * smaps is quick (29,000 VMAs in 52 ms); a busy one's waits on its
 * mmap_lock (stress-ng --mmap: 0.2 s) and gets what the drain left. */
#define MW_END_MEASURE_NS	(500 * MW_NS_PER_MS)

/* Has the process made no call memwatch follows since sequence seq? */
static bool quiet_since(struct target *t, uint64_t seq)
{
	struct mw_proc *k = mw_xcalloc(1, sizeof(*k));
	bool quiet = !capture_proc_read(t->s->cap, t->pid, k) && k->seq == seq && !k->in_sys;

	free(k);
	return quiet;
}

void finish(struct target *t, bool exited, int status, uint64_t drain_limit)
{
	struct mw_end end = {
		.pid = t->pid,
		.how = exited ? MW_END_EXITED : MW_END_DETACHED,
		.wait_status = status,
		/* Held at its exit, the process ended when it got there. */
		.ts = exited && t->exit_stop_ns ? t->exit_stop_ns : mw_now_ns(),
	};

	uint64_t seq;

	if (!drain(t->s, exited ? 0 : drain_limit))
		stop_behind(t, &end);
	seq = t->acct->last_seq;
	if (t->alive && !t->acct->exited &&
	    (model_vm_bytes(&t->acct->model) != account_vm(t->acct) ||
	     account_layout_owed(t->acct)))
		t->acct->need_resync = true;
	if (t->alive && !t->acct->exited && t->acct->need_resync)
		feed_seed(t, MW_SEED_RESYNC);
	/* -p, or a command still running: every mapping measured again if
	 * the process is quiet now (as at the exit hold).  What the attach
	 * could not place exactly ends here: the first counter change after
	 * capture_track() carries every change since seed_proc_init() read
	 * status, which the smaps seed holds as well when it came in between
	 * (Go -p: a 4 MiB arena +480 KiB, once in 40 runs). */
	if (t->alive && !t->acct->exited) {
		struct mw_mapping *mp;

		model_for_each(mp, &t->acct->model)
			model_set_recheck(&t->acct->model, mp, true);
	}
	measure_due(t, 0);
	/* Pss, Locked, ...: under a deadline, given up rather than end late
	 * (the report then has no "smaps"). */
	if (t->alive && !t->acct->exited &&
	    feed_seed_until(t, MW_SEED_MEASURE, exited ? 0 : quiet_since(t, seq) ?
			    mw_now_ns() + MW_END_MEASURE_NS : drain_limit) == -ETIME)
		mw_err("no end measure of Pss, Swap, AnonHugePages and Locked: reading smaps "
			"would end the trace late");
	note_unlinked_files(t);
	capture_emit_state(t->s->cap, t->pid, 1);
	feed(t, &(struct mw_srec){ .kind = MW_S_END, .len = sizeof(end), .data = &end });
	capture_untrack(t->s->cap, t->pid);
}

