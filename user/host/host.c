// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * host.c — the host-wide session: choose the processes, seed them from
 * /proc, let the kernel keep their totals (host.bpf.h), and read them back
 * per interval, per step and for the metrics endpoint.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "capture/capture.h"
#include "host/cgroups.h"
#include "host/containers.h"
#include "capture/control.h"
#include "capture/heapwarm.h"
#include "host/host.h"
#include "host/hostct.h"
#include "host/hostsnap.h"
#include "analysis/findings.h"
#include "analysis/idmap.h"
#include "capture/kernel.h"
#include "capture/launch.h"
#include "host/metrics.h"
#include "capture/preflight.h"
#include "capture/privs.h"
#include "capture/procfs.h"
#include "host/report_host.h"
#include "output/report_findings.h"
#include "capture/signals.h"
#include "util.h"

#define MAX_EXITS	1024	/* listed per interval or step; the rest counted */
#define PUBLISH_NS	MW_NS_PER_SEC	/* metrics refresh */
#define CONTAINERS_NS	MW_NS_PER_SEC	/* containers' peaks and ends */

struct exits {
	struct mw_hexit *v;
	size_t n;
	uint64_t more;
};

/* An interval or a step while it runs. */
struct span {
	struct mw_hsnap at;	/* the processes when it began */
	uint64_t avail;		/* MemAvailable then */
	struct exits exits;
	char name[MW_MARK_NAME_LEN];
};

struct host {
	const struct host_opts *o;
	struct mw_capture *cap;
	struct mw_control ctl;
	struct mw_cgnames names;
	struct mw_metrics *metrics;
	uint64_t start_ns;
	struct span iv, step;
	uint64_t mem_total;
	uint64_t events, exited;
	struct mw_hfind hf;	/* host-wide findings (findings.h) */
	struct mw_hct_life cts;	/* containers seen, until they end (hostct.h) */
	uint64_t next_ct;	/* when to look at them next */
	pid_t cmd_pid;		/* -- CMD, 0 if none */
	int cmd_status;		/* its wait status, -1 while it runs */
};

/* ---- /proc ---------------------------------------------------------------- */

static void meminfo(uint64_t *total, uint64_t *avail)
{
	char *text = NULL, *p;
	size_t len;
	unsigned long long kb;

	*total = *avail = 0;
	if (procfs_read_file("/proc/meminfo", &text, &len))
		return;
	if ((p = strstr(text, "MemTotal:")) && sscanf(p + 9, "%llu", &kb) == 1)
		*total = kb << 10;
	if ((p = strstr(text, "MemAvailable:")) && sscanf(p + 13, "%llu", &kb) == 1)
		*avail = kb << 10;
	free(text);
}

static void comm_of(pid_t pid, char out[MW_COMM_LEN])
{
	char path[64], *text = NULL;
	size_t len;

	memset(out, 0, MW_COMM_LEN);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (procfs_read_file(path, &text, &len))
		return;
	if (len && text[len - 1] == '\n')
		text[--len] = 0;
	memcpy(out, text, MW_MIN(len, (size_t)MW_COMM_LEN - 1));
	free(text);
}

/* Device VM of pid now (hostsnap.h): smaps only where maps says it may
 * have some. */
static uint64_t device_vm_of(pid_t pid)
{
	struct pm_maps m = { 0 };
	uint64_t sum = 0;

	if (procfs_read_maps(pid, &m))
		return 0;
	if (hsnap_maps_may_device(&m)) {
		procfs_maps_free(&m);
		if (procfs_read_smaps(pid, &m))
			return 0;
		sum = hsnap_device_vm(&m);
	}
	procfs_maps_free(&m);
	return sum;
}

/* Start tracing pid with its totals as /proc shows them now. */
static void seed(struct host *h, pid_t pid, uint32_t flags)
{
	struct mw_host init = { .flags = flags, .first_ns = mw_now_ns() };
	struct pm_status st;
	char *cg;

	if (procfs_read_status(pid, &st) || st.kernel_thread)
		return;
	comm_of(pid, init.comm);
	cg = cgroup_of_pid(pid);
	init.cgroup_id = cgroup_id_of_path(cg);
	free(cg);
	init.total_vm = st.vm_size >> mw_page_shift;
	init.vm_peak = st.vm_peak >> mw_page_shift;
	init.rss[MW_ANON] = st.rss_anon;
	init.rss[MW_FILE] = st.rss_file;
	init.rss[MW_SHMEM] = st.rss_shmem;
	init.rss[MW_SWAP] = st.vm_swap;
	init.rss_peak = st.vm_hwm;
	init.locked = st.vm_lck >> mw_page_shift;
	init.pinned = st.vm_pin >> mw_page_shift;
	init.device_bytes = init.device_peak = device_vm_of(pid);
	capture_host_add(h->cap, pid, &init);
}

static bool is_pid_name(const char *s)
{
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Every process on the host, and (ppids not NULL) each one's parent: a
 * status read per process, so only when asked. */
static size_t all_pids(pid_t **pids, pid_t **ppids)
{
	DIR *d = opendir("/proc");
	size_t n = 0, cap = 0;
	struct dirent *de;

	*pids = NULL;
	if (ppids)
		*ppids = NULL;
	while (d && (de = readdir(d))) {
		struct pm_status st;
		pid_t pid;

		if (!is_pid_name(de->d_name))
			continue;
		pid = (pid_t)atol(de->d_name);
		if (ppids && (procfs_read_status(pid, &st) || st.kernel_thread))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 512;
			*pids = mw_xrealloc(*pids, cap, sizeof(**pids));
			if (ppids)
				*ppids = mw_xrealloc(*ppids, cap, sizeof(**ppids));
		}
		if (ppids)
			(*ppids)[n] = st.ppid;
		(*pids)[n++] = pid;
	}
	if (d)
		closedir(d);
	return n;
}

/* -p PID ... [-f]: those, and with -f their descendants living now. */
static void seed_given(struct host *h, const pid_t *given, size_t ngiven)
{
	uint32_t flags = h->o->follow ? MW_HOST_FOLLOW : 0, one;
	struct mw_idmap set = { 0 };
	pid_t *pids = NULL, *ppids = NULL;
	size_t n = h->o->follow ? all_pids(&pids, &ppids) : 0;
	bool grew = true;

	for (size_t i = 0; i < ngiven; i++)
		idmap_put(&set, (uint64_t)given[i], 1);
	while (grew) {		/* the closure under "parent is in the set" */
		grew = false;
		for (size_t i = 0; i < n; i++) {
			if (idmap_get(&set, (uint64_t)pids[i], &one) ||
			    !idmap_get(&set, (uint64_t)ppids[i], &one))
				continue;
			idmap_put(&set, (uint64_t)pids[i], 1);
			grew = true;
		}
	}
	for (size_t i = 0; i < set.cap; i++)
		if (set.keys[i])
			seed(h, (pid_t)set.keys[i], flags);
	idmap_free(&set);
	free(pids);
	free(ppids);
}

static int seed_targets(struct host *h, int cgroup_fd)
{
	const struct host_opts *o = h->o;
	pid_t *pids;
	long n;

	if (o->all) {		/* seed() reads each one's status, once */
		n = (long)all_pids(&pids, NULL);
		for (long i = 0; i < n; i++)
			seed(h, pids[i], 0);
		free(pids);
	} else if (cgroup_fd >= 0) {
		n = cgroup_pids(cgroup_fd, &pids);
		if (n < 0) {
			mw_err("--cgroup: cannot list its processes: %s", strerror((int)-n));
			return MW_EXIT_NOPID;
		}
		for (long i = 0; i < n; i++)
			seed(h, pids[i], 0);
		free(pids);
	}
	if (o->npids)
		seed_given(h, o->pids, o->npids);
	return 0;
}

/* ---- exits ---------------------------------------------------------------- */

static void exits_add(struct exits *x, const struct mw_hexit *e)
{
	if (x->n >= MAX_EXITS) {
		x->more++;
		return;
	}
	x->v = mw_xrealloc(x->v, x->n + 1, sizeof(*x->v));
	x->v[x->n++] = *e;
}

static void exits_clear(struct exits *x)
{
	free(x->v);
	memset(x, 0, sizeof(*x));
}

static const char *name_of(void *ctx, uint64_t id, uint32_t pid)
{
	struct host *h = ctx;

	return cgnames_get(&h->names, id, pid);
}

static void sink(void *ctx, const struct mw_srec *r)
{
	struct host *h = ctx;
	const struct mw_host_exit_rec *x = r->data;
	struct mw_hexit e;

	h->events++;
	if (r->kind != MW_S_BPF || r->len < sizeof(*x) || x->hdr.type != MW_REC_HOST_EXIT)
		return;
	hproc_from_host(&e.p, x->hdr.tgid, &x->h);
	e.exit_ns = x->hdr.ts;
	e.wait_status = x->exit_code;
	h->exited++;
	hfind_exit(&h->hf, h->o->find, &e.p);
	exits_add(&h->iv.exits, &e);
	exits_add(&h->step.exits, &e);
	hct_exit(&h->cts, name_of(h, e.p.cgroup_id, e.p.pid), &e.p, e.exit_ns);
	if (h->o->json)
		host_json_exit(h->o->json, &e, name_of(h, e.p.cgroup_id, e.p.pid), h->start_ns);
}

/* ---- snapshots, tables, metrics -------------------------------------------- */

static int snapshot(struct host *h, struct mw_hsnap *s)
{
	uint32_t *pids;
	struct mw_host *v;
	long n = capture_host_read(h->cap, &pids, &v);

	if (n < 0) {
		mw_err("reading the kernel's process table failed: %s", strerror((int)-n));
		return MW_EXIT_RUNTIME;
	}
	hsnap_build(s, mw_now_ns(), pids, v, (size_t)n, NULL);
	free(pids);
	free(v);
	return 0;
}

static uint64_t lost_events(struct host *h)
{
	uint64_t st[MW_NR_STATS];

	capture_stats(h->cap, st);
	return st[MW_STAT_RB_LOST];
}

/* The snapshot's processes folded per container (hostct.h). */
static size_t containers_of(struct host *h, const struct mw_hsnap *s, struct mw_hct **out)
{
	struct mw_hcgroup *cgs;
	size_t n = hsnap_cgroups(s->procs, s->n, name_of, h, &cgs);

	n = hct_fold(cgs, n, out);
	free(cgs);
	return n;
}

static void container_ended(void *ctx, const struct mw_hct_end *e)
{
	struct host *h = ctx;

	host_container_end(h->o->text, h->o->json, e, h->start_ns);
}

/* Containers' peaks move on; one whose processes are all gone is reported
 * once (at most a second late: the loop looks every CONTAINERS_NS). */
static void containers_check(struct host *h, const struct mw_hsnap *s, bool last)
{
	struct mw_hct *v;
	size_t n = containers_of(h, s, &v);

	hct_track(&h->cts, v, n, s->ts, last, container_ended, h);
	free(v);
	h->next_ct = s->ts + CONTAINERS_NS;
}

/* Report the span from its start to now, the snapshot 'now'. */
static void report_span(struct host *h, struct span *sp, const char *kind, const char *name,
			const struct mw_hsnap *now, uint64_t avail)
{
	struct host_frame fr = {
		.kind = kind, .name = name,
		.t0 = sp->at.ts - h->start_ns, .t1 = now->ts - h->start_ns,
		.exits = sp->exits.v, .nexits = sp->exits.n, .exits_more = sp->exits.more,
		.nprocs = now->n, .mem_total = h->mem_total, .mem_avail0 = sp->avail,
		.mem_avail1 = avail, .lost = lost_events(h),
	};
	struct mw_hproc *rows;
	struct mw_hcgroup *cgs;
	struct mw_hct *c0, *c1, *cts;
	size_t n0 = containers_of(h, &sp->at, &c0), n1 = containers_of(h, now, &c1);

	fr.nrows = hsnap_growth(&sp->at, now, sp->exits.v, sp->exits.n, &rows);
	fr.rows = rows;
	fr.ncgroups = hsnap_cgroups(rows, fr.nrows, name_of, h, &cgs);
	fr.cgroups = cgs;
	fr.ncontainers = hct_span(c0, n0, c1, n1, &cts);
	fr.containers = cts;
	free(c0);
	free(c1);
	for (size_t i = 0; i < now->n; i++) {
		const struct mw_hproc *p = &now->procs[i], *was;

		was = hsnap_find(&sp->at, p->pid, p->first_ns);
		fr.joined += !was;
		fr.vm += p->vm;
		fr.rss += hproc_rss(p);
		fr.d_vm += (int64_t)p->vm - (int64_t)(was ? was->vm : 0);
		fr.d_rss += hproc_rss(p) - (was ? hproc_rss(was) : 0);
	}
	for (size_t i = 0; i < sp->at.n; i++)		/* gone since: their share left */
		if (!hsnap_find(now, sp->at.procs[i].pid, sp->at.procs[i].first_ns)) {
			fr.d_vm -= (int64_t)sp->at.procs[i].vm;
			fr.d_rss -= hproc_rss(&sp->at.procs[i]);
		}
	if (h->o->text)
		host_text_frame(h->o->text, &fr, h->o->top, h->o->by, name_of, h);
	if (h->o->json)
		host_json_frame(h->o->json, &fr, h->o->top, name_of, h);
	free(rows);
	free(cgs);
	free(cts);
}

/* A new span starts at 'now' (which it takes). */
static void span_restart(struct span *sp, struct mw_hsnap *now, uint64_t avail)
{
	hsnap_free(&sp->at);
	sp->at = *now;
	sp->avail = avail;
	exits_clear(&sp->exits);
	memset(now, 0, sizeof(*now));
}

static void copy_snap(struct mw_hsnap *dst, const struct mw_hsnap *src)
{
	dst->ts = src->ts;
	dst->n = src->n;
	dst->procs = mw_xcalloc(src->n ? src->n : 1, sizeof(*dst->procs));
	memcpy(dst->procs, src->procs, src->n * sizeof(*dst->procs));
}

static uint64_t self_rss(void)
{
	char *text = NULL;
	size_t len;
	unsigned long long pages = 0;

	if (!procfs_read_file("/proc/self/statm", &text, &len))
		sscanf(text, "%*s %llu", &pages);
	free(text);
	return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void publish(struct host *h, const struct mw_hsnap *now, uint64_t avail)
{
	struct mw_hcgroup *cgs;
	struct rusage ru;
	struct mw_hostview v = {
		.ts_ns = now->ts, .start_ns = h->start_ns, .mem_total = h->mem_total,
		.mem_available = avail, .phase = h->step.name,
	};

	/* As they are: the renderer ranks them itself. */
	v.procs = now->procs;
	v.nprocs = now->n;
	v.ncgroups = hsnap_cgroups(now->procs, now->n, name_of, h, &cgs);
	v.cgroups = cgs;
	getrusage(RUSAGE_SELF, &ru);
	v.health = (struct mw_health){
		.events = h->events, .lost = lost_events(h), .procs_exited = h->exited,
		.procs_seen = h->exited + now->n, .procs_tracked = now->n,
		.procs_capacity = h->o->max_procs,
		.loader_cpu_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * MW_NS_PER_SEC +
				 (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000,
		.loader_rss_bytes = self_rss(),
	};
	metrics_publish(h->metrics, &v);
	free(cgs);
}

/* 'memwatch mark NAME': the step so far is reported, a new one begins. */
static void serve_control(struct host *h)
{
	struct mw_control_req req;
	struct mw_hsnap now = { 0 };
	uint64_t total, avail;
	int c = control_accept(&h->ctl, &req);

	if (c < 0)
		return;
	if (req.iter || snapshot(h, &now)) {
		control_reply(c, req.iter ? "error no iterations host-wide\n" :
					    "error cannot read the processes\n");
		return;
	}
	meminfo(&total, &avail);
	containers_check(h, &now, false);
	report_span(h, &h->step, "step", h->step.name, &now, avail);
	span_restart(&h->step, &now, avail);
	snprintf(h->step.name, sizeof(h->step.name), "%s", req.name[0] ? req.name : "step");
	control_reply(c, "ok\n");
}

/* ---- the loop ------------------------------------------------------------- */

static bool cmd_gone(struct host *h)
{
	int status;

	if (!h->cmd_pid || h->cmd_status >= 0)
		return h->cmd_pid && h->cmd_status >= 0;
	switch (launch_poll(h->cmd_pid, &status, false)) {
	case LAUNCH_AT_EXIT:
		launch_continue(h->cmd_pid);
		return false;
	case LAUNCH_GONE:
		h->cmd_status = status;
		return true;
	default:
		return false;
	}
}

static bool stop_now(struct host *h, uint64_t deadline, int *forwarded)
{
	int sig = mw_stop_signal();

	if (deadline && mw_now_ns() >= deadline)
		return true;
	if (cmd_gone(h))
		return true;
	if (!sig)
		return false;
	if (!h->cmd_pid || mw_stop_count() > 1)
		return true;
	/* -- CMD: the command decides; a second signal ends it at once. */
	if (*forwarded != sig && sig != SIGINT)
		kill(h->cmd_pid, sig);
	*forwarded = sig;
	return false;
}

static int loop(struct host *h)
{
	const struct host_opts *o = h->o;
	uint64_t now = mw_now_ns(), total, avail;
	uint64_t step = (uint64_t)(o->interval * 1e9);
	uint64_t next_iv = step ? now + step : 0, next_pub = h->metrics ? now : 0;
	uint64_t deadline = o->duration > 0 ? now + (uint64_t)(o->duration * 1e9) : 0;
	int forwarded = 0;

	while (!stop_now(h, deadline, &forwarded)) {
		struct pollfd pfd[2] = {
			{ .fd = capture_fd(h->cap), .events = POLLIN },
			{ .fd = control_poll_fd(&h->ctl), .events = POLLIN },
		};
		struct mw_hsnap snap = { 0 };

		if ((poll(pfd, pfd[1].fd >= 0 ? 2 : 1, 100) > 0 &&
		     (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))) || control_due(&h->ctl))
			serve_control(h);
		capture_poll(h->cap, 0);
		now = mw_now_ns();
		if ((next_iv && now >= next_iv) || (next_pub && now >= next_pub) ||
		    now >= h->next_ct) {
			if (snapshot(h, &snap))
				return MW_EXIT_RUNTIME;
			meminfo(&total, &avail);
			containers_check(h, &snap, false);
			if (next_pub && now >= next_pub) {
				publish(h, &snap, avail);
				next_pub = now + PUBLISH_NS;
			}
			if (next_iv && now >= next_iv) {
				report_span(h, &h->iv, "interval", NULL, &snap, avail);
				hfind_interval(&h->hf, h->o->find, snap.ts, snap.procs, snap.n);
				span_restart(&h->iv, &snap, avail);
				next_iv += step * ((now - next_iv) / step + 1);
			}
			hsnap_free(&snap);
		}
	}
	return 0;
}

/* The end: what is left of the interval, the last step. */
static int finish(struct host *h)
{
	struct mw_hsnap now = { 0 };
	uint64_t total, avail;

	capture_poll(h->cap, 0);
	if (snapshot(h, &now))
		return MW_EXIT_RUNTIME;
	meminfo(&total, &avail);
	containers_check(h, &now, true);
	if (h->o->interval > 0 && now.ts > h->iv.at.ts + MW_NS_PER_SEC / 10) {
		report_span(h, &h->iv, "interval", NULL, &now, avail);
		hfind_interval(&h->hf, h->o->find, now.ts, now.procs, now.n);
	}
	report_span(h, &h->step, "step", h->step.name, &now, avail);
	report_host_findings(h->o->text, h->o->json, &h->hf, h->o->find, h->start_ns);
	if (h->metrics)
		publish(h, &now, avail);
	hsnap_free(&now);
	return 0;
}

/* ---- start and stop --------------------------------------------------------- */

/* privs_drop() asks: do our maps still answer without CAP_BPF? */
static bool bpf_probe(void *ctx)
{
	struct host *h = ctx;
	uint32_t *pids;
	struct mw_host *v;
	long n = capture_host_read(h->cap, &pids, &v);

	if (n >= 0) {
		free(pids);
		free(v);
	}
	return n != -EPERM;
}

static int start(struct host *h, int *cgroup_fd)
{
	const struct host_opts *o = h->o;
	struct mw_capture_opts co = {
		.max_procs = 1, .ringbuf_bytes = o->ringbuf_bytes,
		.host_procs = o->max_procs, .host_join = o->all || o->cgroup,
		.host_cgroup_fd = -1, .sink = sink, .sink_ctx = h,
	};
	char *rel = NULL;
	int err;

	if (o->cgroup) {
		err = cgroup_open(o->cgroup, cgroup_fd, &rel);
		free(rel);
		if (err)
			return err;
		co.host_cgroup_fd = *cgroup_fd;
	}
	if (o->listen && (err = metrics_listen(&h->metrics, o->listen, o->top)))
		return err;
	err = capture_open(&h->cap, &co);
	if (err)
		return err;
	mw_signals_install();
	control_open(&h->ctl);
	if (o->cmd) {
		err = launch_start(o->cmd, &h->cmd_pid);
		if (err)
			return err;
		seed(h, h->cmd_pid, o->follow ? MW_HOST_FOLLOW : 0);
		if (launch_resume(h->cmd_pid))
			return MW_EXIT_RUNTIME;
	}
	return seed_targets(h, *cgroup_fd);
}

static int check_pids(const struct host_opts *o)
{
	int err;

	for (size_t i = 0; i < o->npids; i++)
		if ((err = preflight_pid(o->pids[i])))
			return err;
	return 0;
}

int host_run(const struct host_opts *o, int *cmd_status)
{
	struct host h = { .o = o, .cmd_status = -1, .ctl = { .fd = -1, .dirfd = -1, .client = -1 } };
	int err, cgroup_fd = -1;
	uint64_t avail;

	*cmd_status = -1;
	if ((err = preflight_privileges()) || (err = preflight_btf()))
		return err;
	heapwarm_start(false);	/* host-wide programs load in one object */
	if ((err = preflight_tracefs()) || (err = preflight_kernel()) || (err = kernel_check()) ||
	    (err = check_pids(o)))
		return err;
	h.start_ns = mw_now_ns();
	snprintf(h.step.name, sizeof(h.step.name), "start");
	err = start(&h, &cgroup_fd);
	if (!err) {
		privs_drop(bpf_probe, &h);
		meminfo(&h.mem_total, &avail);
		err = snapshot(&h, &h.iv.at);
		if (!err) {
			copy_snap(&h.step.at, &h.iv.at);
			h.iv.avail = h.step.avail = avail;
			if (!o->cmd)
				fprintf(stderr, "memwatch: tracing %zu processes host-wide; Ctrl-C to stop\n",
					h.iv.at.n);
			err = loop(&h) ?: finish(&h);
			/* Its pair: a service's journal shows when and how it ended. */
			if (!err && !o->cmd)
				fprintf(stderr, "memwatch: stopped after %.1f s; %llu processes "
					"exited while traced, %llu events lost\n",
					(mw_now_ns() - h.start_ns) / 1e9,
					(unsigned long long)h.exited,
					(unsigned long long)lost_events(&h));
		}
	}
	*cmd_status = h.cmd_status;
	control_close(&h.ctl);
	if (h.metrics)
		metrics_stop(h.metrics);
	capture_close(h.cap);
	if (cgroup_fd >= 0)
		close(cgroup_fd);
	hsnap_free(&h.iv.at);
	hsnap_free(&h.step.at);
	exits_clear(&h.iv.exits);
	exits_clear(&h.step.exits);
	hfind_free(&h.hf);
	hct_life_free(&h.cts);
	cgnames_free(&h.names);
	containers_free();
	return err;
}
