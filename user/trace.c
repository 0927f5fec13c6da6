// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * trace.c — one tracing session: start or attach, follow the process (with
 * -f every process of its tree, each with its own analysis), feed what the
 * kernel says into the analysis (trace_proc.c), stop on exit, signal or
 * duration.
 */
#include <dirent.h>
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
#include "capture/heapwarm.h"
#include "capture/launch.h"
#include "capture/preflight.h"
#include "capture/privs.h"
#include "capture/procfs.h"
#include "capture/seed.h"
#include "capture/signals.h"
#include "unwind/python.h"
#include "unwind/unwind.h"
#include "capture/kernel.h"
#include "trace_impl.h"
#include "util.h"

/* ---- the targets ---- */

static struct target *target_add(struct session *s, pid_t pid, pid_t ppid,
				 struct mw_account *a)
{
	struct target *t = mw_xcalloc(1, sizeof(*t));

	*t = (struct target){ .s = s, .pid = pid, .ppid = ppid, .acct = a, .alive = true,
			      .pagemap_fd = -1 };
	if (a) {
		a->pid = pid;
		a->model.oracle = (struct mw_oracle){ .range_rss = oracle_pagemap, .ctx = t };
	}
	pthread_mutex_lock(&s->lock);
	if (s->n == s->vcap) {
		s->vcap = s->vcap ? 2 * s->vcap : 16;
		s->v = mw_xrealloc(s->v, s->vcap, sizeof(*s->v));
	}
	idmap_put(&s->by_pid, (uint64_t)pid, (uint32_t)s->n);
	s->v[s->n++] = t;
	pthread_mutex_unlock(&s->lock);
	return t;
}

static void target_remove(struct session *s, struct target *t)
{
	uint32_t i;

	pthread_mutex_lock(&s->lock);
	if (idmap_get(&s->by_pid, (uint64_t)t->pid, &i)) {
		idmap_del(&s->by_pid, (uint64_t)t->pid);
		s->v[i] = s->v[--s->n];
		if (i < s->n)
			idmap_put(&s->by_pid, (uint64_t)s->v[i]->pid, i);
	}
	pthread_mutex_unlock(&s->lock);
	if (t == s->root)
		s->root = NULL;
}

#define for_each_target(t, s) \
	for (size_t _i = 0; _i < (s)->n && ((t) = (s)->v[_i]); _i++)

/* A target that has a model and the kernel follows. */
static bool modelled(const struct target *t)
{
	return t->acct && t->tracked;
}

/* privs_drop() asks: does bpf() on our maps work without CAP_BPF?  Any
 * answer but "not permitted" is a yes (the process may be gone). */
static bool bpf_probe(void *ctx)
{
	struct session *s = ctx;
	struct mw_proc *k = mw_xcalloc(1, sizeof(*k));
	int err = capture_proc_read(s->cap, s->root->pid, k);

	free(k);
	return err != -EPERM;
}

/* The markers' names: the kernel knows the specs by number only. */
static void feed_marknames(struct target *t)
{
	const struct trace_opts *o = t->s->o;

	for (size_t i = 0; i < o->nmarkers; i++) {
		struct mw_markname mn = { .id = i + 1, .kind = o->markers[i].kind };

		snprintf(mn.name, sizeof(mn.name), "%s",
			 o->markers[i].name ? o->markers[i].name : o->markers[i].symbol);
		feed(t, &(struct mw_srec){ .kind = MW_S_MARKNAME, .len = sizeof(mn), .data = &mn });
	}
}

/* Uprobes for --phase-at/--iter, USDT probes of the executable.  With -f
 * in every process (the kernel side takes only the tree's): a forked
 * worker runs the same code, and one born later could not be given its
 * own once the capabilities are gone. */
static int attach_markers(struct session *s, const struct trace_opts *o)
{
	char link[64], exe[PATH_MAX];
	pid_t pid = s->root->pid;
	ssize_t n;
	int err;

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	err = capture_attach_markers(s->cap, o->follow ? -1 : pid, n > 0 ? exe : NULL,
				     o->markers, o->nmarkers);
	if (!err)
		feed_marknames(s->root);
	return err;
}

/* The kernel follows pid from now; then its layout is read (exact if it is
 * stopped: launched, or born into the tree), then its first phase. */
static int track(struct target *t, bool after_exec, bool stopped)
{
	struct session *s = t->s;
	struct mw_proc init;
	int err = seed_proc_init(t->pid, after_exec, &init);

	if (!err)
		err = capture_track(s->cap, t->pid, &init);
	if (err)
		return err;
	t->tracked = true;
	/* Before the capabilities go: page frames (the zero page). */
	t->pagemap_fd = procfs_pagemap_open(t->pid);
	feed_seed(t, MW_SEED_ATTACH);
	/* -p: the process ran on while smaps was read, and the kernel side
	 * counted its changes from before the read: the records apply them
	 * to a seed that may hold them already (a Go heap faulting in and
	 * scavenging: MiBs).  Measure every mapping again once caught up. */
	if (!stopped) {
		struct mw_mapping *mp;

		model_for_each(mp, &t->acct->model)
			model_set_recheck(&t->acct->model, mp, true);
	}
	return 0;
}

static void adopt_descendants(struct session *s);

static int start_target(struct session *s, const struct trace_opts *o)
{
	pid_t pid = o->pid;
	int err;

	if (o->cmd) {
		char path[64];

		/* Its own markers without a fork of `memwatch mark`
		 * (include/memwatch_mark.*): where to send them. */
		if (control_path(&s->ctl, path, sizeof(path)))
			setenv(MW_CONTROL_ENV, path, 1);
		err = launch_start(o->cmd, &pid);
		if (err)
			return err;
	}
	s->root = target_add(s, pid, 0, s->root_acct);
	s->stats.procs = s->stats.models = 1;
	s->nmodels = s->stats.max_live = 1;
	/* -f: every thread of the tree traced, from now on. */
	if (o->follow && !(s->tree = launch_tree_new(pid, o->cmd != NULL))) {
		if (o->cmd)
			kill(pid, SIGKILL);
		return MW_EXIT_NOPID;
	}
	err = track(s->root, o->cmd != NULL, o->cmd != NULL);
	if (err) {
		mw_err("cannot start tracing PID %d: %s", pid, strerror(-err));
		if (o->cmd)
			kill(pid, SIGKILL);
		return err == -ENOENT ? MW_EXIT_NOPID : MW_EXIT_RUNTIME;
	}
	err = attach_markers(s, o);
	if (err) {
		if (o->cmd)
			kill(pid, SIGKILL);
		return err;
	}
	if (o->stacks && o->python) {
		s->py = python_new(pid);
		python_find(s);
	}
	if (s->tree && !o->cmd)
		adopt_descendants(s);
	/* -p: ask to hold it at its exit as well, so we can catch up then
	 * ('-- CMD' is held already); a debugger in the way just costs that. */
	s->root->held = o->cmd || s->tree || launch_seize(pid);
	if (!s->root->held)
		mw_dbg("PID %d cannot be held at its exit: final per-mapping RSS may lag", pid);
	/* The first phase, "start", with the totals as tracing begins. */
	capture_mark(s->cap, pid, MW_MARK_PHASE, "start");
	if (o->cmd && (s->tree ? (launch_tree_continue(s->tree, pid), 0) : launch_resume(pid))) {
		kill(pid, SIGKILL);
		return MW_EXIT_RUNTIME;
	}
	if (o->cmd && s->py)
		python_find_exec(s);	/* held at its exec until now */
	return 0;
}

/* '-- CMD': reap the child when it exits; returns true once it has. */
static bool reap_child(struct session *s, int *status, bool block)
{
	struct target *t = s->root;
	int st;

	for (;;) {
		/* *status is how it ended, never a stop seen on the way
		 * (a signal it ignores still stops it for us first). */
		switch (launch_poll(t->pid, &st, block)) {
		case LAUNCH_GONE:
			*status = st;
			t->alive = false;
			return true;
		case LAUNCH_AT_EXIT:
			/* Exiting, address space intact: everything it did is
			 * in the buffer now; take it all in, then let it go. */
			if (!t->exit_stop_ns)
				t->exit_stop_ns = mw_now_ns();
			catch_up(t);
			launch_continue(t->pid);
			break;
		case LAUNCH_EXECED:
			if (s->py)
				python_find_exec(s);
			break;
		default:
			return false;
		}
	}
}

/* ---- -f: the tree ---- */

/* A process of the tree is over: its end into its analysis, the whole of
 * it to the caller, then forgotten. */
static void target_end(struct target *t, bool exited, int status, uint64_t drain_limit)
{
	struct session *s = t->s;
	struct trace_proc_end e = { .pid = t->pid, .ppid = t->ppid, .exited = exited,
				    .wait_status = status, .model = t->acct != NULL };

	if (t->acct) {
		finish(t, exited, status, drain_limit);
		snprintf(e.comm, sizeof(e.comm), "%s", t->acct->comm);
		e.vm_peak = account_vm_peak(t->acct);
		e.vm_end = account_vm(t->acct);
		e.rss_peak = account_rss_peak(t->acct);
		e.rss_end = (uint64_t)MW_MAX(account_rss_total(t->acct), 0);
		e.known = true;
		t->acct->model.oracle.range_rss = NULL;
		s->nmodels--;
	} else if (t->have_last) {
		snprintf(e.comm, sizeof(e.comm), "%.15s", t->last.name);
		e.vm_peak = t->last.vm_peak;
		e.vm_end = t->last.vm_size;
		e.rss_peak = t->last.vm_hwm;
		e.rss_end = t->last.vm_rss;
		e.known = true;
	} else {
		s->stats.unknown++;
	}
	target_remove(s, t);
	s->o->tree->ended(s->o->tree->ctx, t->acct, &e);
	target_free(t);
}

/* A process joins the tree (stopped: born, its layout read exactly; else
 * found running at the start): a model if there is room for one, else
 * totals. */
static void tree_join(struct session *s, pid_t pid, pid_t ppid, bool after_exec, bool stopped)
{
	struct mw_account *a = NULL;
	struct target *t;
	int err;

	s->stats.procs++;
	if (s->nmodels < s->o->max_models)
		a = s->o->tree->born(s->o->tree->ctx, pid, ppid);
	t = target_add(s, pid, ppid, a);
	t->held = true;
	if (a) {
		feed_marknames(t);
		err = track(t, after_exec, stopped);
		if (!err) {
			s->nmodels++;
			s->stats.models++;
			s->stats.max_live = MW_MAX(s->stats.max_live, s->nmodels);
			capture_mark(s->cap, t->pid, MW_MARK_PHASE, "start");
			return;
		}
		mw_dbg("-f: PID %d has totals only: %s", t->pid, strerror(-err));
		s->stats.untracked += err == -E2BIG;
		/* Handed back at once: only its totals will come. */
		s->o->tree->ended(s->o->tree->ctx, a, NULL);
		t->acct = NULL;
	}
	s->stats.totals++;
}

/* -f -p: the processes of the tree running at the start, parents before
 * children (one read of every /proc/PID/stat: the kernel here may lack
 * /proc/PID/task/TID/children). */
static void adopt_descendants(struct session *s)
{
	struct { pid_t pid, ppid; } *all = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d = opendir("/proc");

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct pm_status st;
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid <= 0 || procfs_read_status(pid, &st) || st.kernel_thread)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			all = mw_xrealloc(all, cap, sizeof(*all));
		}
		all[n].pid = pid;
		all[n++].ppid = st.ppid;
	}
	closedir(d);
	/* Breadth first: v grows as the tree is found. */
	for (size_t k = 0; k < s->n; k++) {
		pid_t parent = s->v[k]->pid;

		for (size_t i = 0; i < n; i++)
			if (all[i].ppid == parent && !target_of(s, all[i].pid) &&
			    launch_tree_adopt(s->tree, all[i].pid))
				tree_join(s, all[i].pid, parent, false, false);
	}
	free(all);
}

/* Answer the tree's stops; true once none of it is left. */
static bool tree_poll(struct session *s, int *root_status)
{
	struct launch_ev ev;
	struct target *t;

	for (;;) {
		switch (launch_tree_poll(s->tree, &ev, false)) {
		case LAUNCH_BORN:
			tree_join(s, ev.pid, ev.ppid, ev.exec, true);
			launch_tree_continue(s->tree, ev.pid);
			break;
		case LAUNCH_AT_EXIT:
			if ((t = target_of(s, ev.pid))) {
				if (!t->exit_stop_ns)
					t->exit_stop_ns = mw_now_ns();
				if (modelled(t))
					catch_up(t);
				else
					t->have_last = !procfs_read_status(t->pid, &t->last);
			}
			launch_tree_continue(s->tree, ev.pid);
			break;
		case LAUNCH_EXECED:
			if (s->py && s->root && ev.pid == s->root->pid)
				python_find_exec(s);
			break;
		case LAUNCH_GONE:
			if ((t = target_of(s, ev.pid))) {
				if (t == s->root)
					*root_status = ev.status;
				t->alive = false;
				target_end(t, true, ev.status, 0);
			}
			break;
		default:
			return s->n == 0;
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
	if (*forwarded != sig && sig != SIGINT && s->root)
		kill(s->root->pid, sig);
	*forwarded = sig;
	return false;
}

/* Is pid a `memwatch mark` command (our own executable)? */
static bool is_memwatch(pid_t pid)
{
	char link[64];
	struct stat a, b;

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	return !stat(link, &a) && !stat("/proc/self/exe", &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/*
 * Before a socket mark: the mappings due a measure (RSS a driver or
 * get_user_pages() changed outside any fault: io_uring_register's pins
 * on 5.10, under load) are measured now, so that what the process did
 * before it asked lands in the phase it ends.  The main loop's try may
 * have found the process inside a call: tried again until caught up, for
 * at most 50 ms a mark over all its processes (measure_due()).
 */
#define MW_MARK_SETTLE_NS	(50 * MW_NS_PER_MS)

/* One 'memwatch mark' request, if one is waiting.  With -f it marks the
 * process that asks, if it has a model (include/memwatch_mark.*), else
 * every process of the tree (`memwatch mark`, from anywhere). */
static void serve_control(struct session *s)
{
	struct mw_control_req req;
	struct target *t, *only = NULL;
	int c = control_accept(&s->ctl, &req);
	uint64_t settle;
	bool ok = true;

	if (c < 0)
		return;
	if (s->tree && req.peer > 0 && (only = target_of(s, req.peer)) &&
	    (!modelled(only) || is_memwatch(req.peer)))
		only = NULL;
	/* The program waits for the answer: what it did is taken in, and
	 * what it changed at no address memwatch knows (a driver's pins) is
	 * measured again, so that both land in what ends here; so is a
	 * layout a call could not read (bpf/syscalls.bpf.h: rewalk()). */
	drain(s, mw_now_ns() + MW_HEAPWALK_NS);
	settle = mw_now_ns() + MW_MARK_SETTLE_NS;	/* for all of them */
	for_each_target(t, s) {
		if (!modelled(t) || (only && t != only))
			continue;
		measure_due(t, settle);
		if (t->alive && !t->acct->exited &&
		    (t->acct->need_resync || account_layout_owed(t->acct)))
			feed_seed(t, MW_SEED_RESYNC);
		if (!req.iter)
			walk_arenas(t);
		ok &= !capture_mark(s->cap, t->pid, req.iter ? MW_MARK_ITER : MW_MARK_PHASE,
				    req.name);
	}
	control_reply(c, ok ? "ok\n" : "error cannot mark\n");
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
	python_recheck(s);
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

/* One sample of every process with a model (the loop may add and remove
 * them meanwhile: under the lock). */
static void sample_all(struct session *s)
{
	struct target *t;

	pthread_mutex_lock(&s->lock);
	for_each_target(t, s)
		if (modelled(t))
			capture_mark(s->cap, t->pid, MW_MARK_SAMPLE, NULL);
	pthread_mutex_unlock(&s->lock);
}

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
		sample_all(sp->s);
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

/* The end of every process still followed (-d, a signal, an error). */
static void end_all(struct session *s, bool exited, int status, uint64_t limit)
{
	if (!s->tree) {
		if (s->root)
			finish(s->root, exited, status, limit);
		return;
	}
	while (s->n)
		target_end(s->v[s->n - 1], false, -1, limit);
}

/*
 * For the tests (docs/testing.md): MEMWATCH_TEST_LAG_MS=N starts the loop N
 * ms behind the process, as a loader busy unwinding the first stacks under
 * load is.  What must not wait for the loop (finding a Python interpreter)
 * is shown not to.
 */
static void test_lag(void)
{
	const char *e = getenv("MEMWATCH_TEST_LAG_MS");
	long ms = e ? strtol(e, NULL, 10) : 0;
	struct timespec ts = { ms / 1000, (ms % 1000) * MW_NS_PER_MS };

	if (ms > 0 && ms <= 10000)
		nanosleep(&ts, NULL);
}

static int loop(struct session *s, int *cmd_status)
{
	const struct trace_opts *o = s->o;
	uint64_t now = mw_now_ns();
	uint64_t deadline = o->duration > 0 ? now + (uint64_t)(o->duration * 1e9) : 0;
	uint64_t next_check = 0;
	int forwarded = 0, status = -1, n;
	bool exited = false;
	struct sampler sp;
	struct target *t;

	sampler_start(&sp, s);
	test_lag();
	for (;;) {
		n = wait_events(s, 50);
		if (n < 0 && n != -EINTR) {
			mw_err("reading the ring buffer failed: %s", strerror(-n));
			sampler_stop(&sp);
			end_all(s, false, -1, mw_now_ns() + MW_END_DRAIN_NS);
			return MW_EXIT_RUNTIME;
		}
		for_each_target(t, s) {
			if (!modelled(t))
				continue;
			reconcile_splits(t, false);
			/* A re-measure goes into the stream where the loop is:
			 * behind, it would come before records of what the
			 * process did earlier (a mapping not made yet, a phase
			 * not begun) and count what they did in the wrong
			 * place.  Marks and the end drain first, then look. */
			if (!capture_behind(s->cap))
				external_check(t, false);
		}
		now = mw_now_ns();
		if (handle_signal(s, &forwarded))
			break;
		if (s->tree) {
			if (tree_poll(s, &status)) {
				exited = true;
				break;
			}
		} else if (s->root->held && reap_child(s, &status, o->cmd && s->root->acct->exited)) {
			exited = true;
			break;
		} else if (!o->cmd && s->root->acct->exited) {
			exited = true;
			break;
		} else if (!o->cmd && now >= next_check) {
			/* The exit record can be lost like any other. */
			next_check = now + 500000000ull;
			if (kill(s->root->pid, 0) && errno == ESRCH) {
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
		for_each_target(t, s) {
			if (!modelled(t))
				continue;
			account_late_overdue(t->acct, now);
			if (!t->acct->need_resync || !t->alive || now < t->resync_ok ||
			    capture_behind(s->cap))
				continue;
			feed_seed_until(t, MW_SEED_RESYNC, deadline);
			t->resync_ok = mw_now_ns() + 4 * (mw_now_ns() - now);
		}
	}
	sampler_stop(&sp);
	if (exited && !o->cmd && s->root)
		s->root->alive = false;
	/* -d N ends within N + 0.5 s: the rest of the end (reads of /proc,
	 * the reports) needs the last 0.35 of it. */
	end_all(s, exited, status, (deadline && now >= deadline ? deadline : mw_now_ns()) +
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
	struct session s = { .o = o, .root_acct = acct, .lock = PTHREAD_MUTEX_INITIALIZER,
			     .ctl = { .fd = -1, .dirfd = -1, .client = -1 } };
	struct mw_capture_opts co = {
		/* -f: room for a model per process, and some: one the
		 * table has no room for gets totals (tree_join()). */
		.max_procs = o->follow ? o->max_models + 1 : o->max_procs,
		.ringbuf_bytes = o->ringbuf_bytes,
		/* Records can wait for the 50 ms poll: exec, exit and markers
		 * wake the loader at once, and '-- CMD' is held at its exit
		 * to catch up.  A wakeup per record cost stress-ng --mmap's
		 * worker half its speed under -p. */
		.batch_wakeups = true,
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
			mw_dbg("tracing %s (PID %d) from its first instruction%s", o->cmd[0],
			       s.root->pid, s.tree ? ", and every process it starts" : "");
		else
			fprintf(stderr, "memwatch: tracing PID %d (%s)%s; Ctrl-C to stop\n",
				s.root->pid, acct->comm, s.tree ? " and its children" : "");
		uint64_t cpu0 = cpu_ns(), rec0 = acct->records;

		err = loop(&s, cmd_status);
		/* What the analysis costs per record (scripts/bench's manymaps). */
		if (!o->follow)
			mw_dbg("traced: %llu records in %llu us of CPU",
			       (unsigned long long)(acct->records - rec0),
			       (unsigned long long)(cpu_ns() - cpu0) / 1000);
	}
	/* Whatever is left (an error at the start; the one process without
	 * -f) is the caller's now. */
	while (s.n) {
		struct target *t = s.v[s.n - 1];

		if (t->acct)
			t->acct->model.oracle.range_rss = NULL;
		if (s.tree && t->acct && t->acct != acct)
			o->tree->ended(o->tree->ctx, t->acct, NULL);
		target_remove(&s, t);
		target_free(t);
	}
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
	launch_tree_free(s.tree);
	if (o->tree_stats)
		*o->tree_stats = s.stats;
	free(s.v);
	idmap_free(&s.by_pid);
	return err;
}
