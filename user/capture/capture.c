// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* capture.c — load and attach the BPF programs, drain the ring buffer. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/bpfstats.h"
#include "capture/capture.h"
#include "capture/heapwarm.h"
#include "capture/kernel.h"
#include "capture/preflight.h"
#include "capture/procfs.h"
#include "util.h"
#include "memwatch.skel.h"
#include "memwatch_compat.skel.h"

struct mw_capture {
	struct memwatch_bpf *skel;
	struct memwatch_bpf *skel2;	/* per process: the sys_exit program, loaded in parallel */
	struct ring_buffer *rb;
	struct bpf_link *rss_link;
	struct bpf_link *key_link;	/* rss_key_learn, classic rss_stat only */
	bool rss_raw;
	bool sys_tp;		/* per-call syscall tracepoints (bpf/syscalls.bpf.h) */
	struct bpf_link *sys_links[2 * 20];	/* traced_calls, remote_calls */
	size_t nsys_links;
	__u32 procs_gen;	/* the last value written to the map */
	pid_t *proc_pids;	/* who has each index of 'procs', 0: free */
	size_t nprocs;		/* its entries: the maps' max_entries */
	bool host;		/* host-wide tracing */
	size_t nmarkers;	/* uprobe markers to attach */
	struct bpf_link **marker_links;
	size_t nmarker_links;
	mw_sink_fn sink;
	void *sink_ctx;
	int ncpus;
	uint64_t poll_until;	/* capture_poll()'s budget ends */
	uint64_t polled;	/* records this capture_poll() */
	uint64_t last_ts;	/* the kernel's time of the last record read */
	bool behind;		/* the last capture_poll() stopped on its budget */
	bool bpf_stats;		/* MEMWATCH_BPF_STATS: report the programs' costs */
	int stats_fd;		/* BPF_ENABLE_STATS held, -1: none */
};

static bool quiet_libbpf;	/* trying probes that may not be there */

/*
 * While the programs load, libbpf's warnings (the verifier's whole log among
 * them) are kept here, not printed: a failure is summed up in one line
 * (load_failure()), and -vv shows all of it as it comes.
 */
static struct {
	bool on;
	char prog[64];		/* the first program that failed */
	char why[160];		/* the verifier's last word on it */
} load_log;

/* A verifier line that says what is missing or wrong, kept whole. */
static void load_log_note(const char *line)
{
	static const char *const telling[] = {
		"unknown func", "invalid func", "program of this type cannot use helper",
		"invalid access", "invalid read", "invalid write", "invalid mem access",
		"unsupported", "not supported", "pointer arithmetic", "R0 invalid",
		"BPF program is too large", "cannot", "Unrecognized", "expected",
		"failed to resolve CO-RE relocation", "unknown opcode", "invalid BTF",
		"exceeds", "back-edge", "infinite loop", "not allowed", "unbounded",
		"out of bounds", "value is outside", "misaligned", "leaks addr", "type=",
	};
	const char *p;
	size_t n;

	if (!load_log.on)
		return;
	if ((p = strstr(line, "prog '")) && !load_log.prog[0] &&
	    (strstr(line, "failed to load") || strstr(line, "load failed") ||
	     strstr(line, "relo #"))) {
		p += 6;
		n = strcspn(p, "'");
		snprintf(load_log.prog, sizeof(load_log.prog), "%.*s", (int)MW_MIN(n, 63), p);
	}
	/* Not the verifier's verdict: the frame, its summary, and what it says
	 * of functions' BTF (arg#N) before it starts. */
	if (strstr(line, "-- END PROG LOAD LOG --") || strstr(line, "BEGIN PROG LOAD LOG") ||
	    strstr(line, "processed ") == line || strstr(line, "arg#"))
		return;
	for (size_t i = 0; i < MW_ARRAY_SIZE(telling); i++) {
		if (strstr(line, telling[i])) {
			n = strcspn(line, "\n");
			while (n && (line[n - 1] == ' ' || line[n - 1] == '\n'))
				n--;
			snprintf(load_log.why, sizeof(load_log.why), "%.*s", (int)MW_MIN(n, 159), line);
			return;
		}
	}
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (quiet_libbpf && mw_verbose < 2)
		return 0;
	if (level == LIBBPF_DEBUG && mw_verbose < 2)
		return 0;
	if (level == LIBBPF_INFO && !mw_verbose)
		return 0;
	if (load_log.on && mw_verbose < 2) {
		char buf[4096];
		char *line, *save = NULL;

		static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

		vsnprintf(buf, sizeof(buf), fmt, ap);
		pthread_mutex_lock(&lock);	/* two loads run at once */
		for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			load_log_note(line);
		pthread_mutex_unlock(&lock);
		return 0;
	}
	return vfprintf(stderr, fmt, ap);
}

/* One line for a load that failed: which program, on which kernel, why. */
static void load_failure(int err)
{
	mw_err("cannot load the BPF program %s%s%s on Linux %s (%s)%s%s; rerun with -vv "
	       "for the verifier log", load_log.prog[0] ? "'" : "", load_log.prog[0] ?
	       load_log.prog : "(unknown)", load_log.prog[0] ? "'" : "",
	       kernel_get()->release,
	       strerror(-err), load_log.why[0] ? ": " : "", load_log.why);
}

/*
 * One capture_poll() reads for at most this long: a producer faster than
 * the analysis must not keep the session from its samples, signals, marks
 * and deadline.  libbpf has moved past a record before its callback runs,
 * so a callback that says stop (-EAGAIN) loses nothing.
 */
#define MW_POLL_BUDGET_NS	(20 * MW_NS_PER_MS)

static int on_record(void *ctx, void *data, size_t len)
{
	struct mw_capture *c = ctx;
	struct mw_srec r = { .kind = MW_S_BPF, .len = len, .data = data };

	c->sink(c->sink_ctx, &r);
	if (len >= sizeof(struct mw_rec_hdr))
		c->last_ts = ((const struct mw_rec_hdr *)data)->ts;
	if (++c->polled % 32 == 0 && mw_now_ns() >= c->poll_until)
		return -EAGAIN;
	return 0;
}

/*
 * The raw rss_stat program sums the per-CPU RSS counters itself, which needs
 * the per-CPU offsets: cpu_offsets (a BPF_PROG_TYPE_SYSCALL program) notes
 * where a per-CPU map value lives on each CPU, and the difference from the
 * map's __percpu pointer is that CPU's offset.  Anything odd, and the classic
 * tracepoint (which formats a perf record for every RSS change on the host,
 * a good deal slower) does the job instead.
 */
static bool find_cpu_offsets(struct mw_capture *c)
{
	LIBBPF_OPTS(bpf_test_run_opts, ro);
	struct mw_cpu_offsets *o;
	__u32 zero = 0;
	bool ok = false;

	if (bpf_prog_test_run_opts(bpf_program__fd(c->skel->progs.cpu_offsets), &ro) || ro.retval)
		return false;
	o = mw_xcalloc(1, sizeof(*o));
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.cpu_offsets_map), &zero, o))
		goto out;
	if (!o->pptr || o->ncpus != (__u32)c->ncpus)
		goto out;
	for (__u32 i = 0; i < o->ncpus; i++) {
		o->off[i] = o->addr[i] - o->pptr;
		/* Each CPU's copy is a distinct address above the pointer's. */
		if (!o->addr[i] || (i && o->addr[i] == o->addr[i - 1]))
			goto out;
	}
	o->ready = 1;
	ok = bpf_map_update_elem(bpf_map__fd(c->skel->maps.cpu_offsets_map), &zero, o, 0) == 0;
out:
	free(o);
	return ok;
}

/* The kmem:rss_stat program of this mode and kernel: attached by hand, the
 * others of the four never load. */
static struct bpf_program *rss_program(struct mw_capture *c)
{
	struct memwatch_bpf *s = c->skel;

	if (c->host)
		return c->rss_raw ? s->progs.host_rss_stat_raw : s->progs.host_rss_stat;
	return c->rss_raw ? s->progs.rss_stat_raw : s->progs.rss_stat;
}

/*
 * The classic rss_stat keys an mm by a hash nothing can compute: a second
 * program on the raw tracepoint pairs it with the pointer for the mm of a
 * process that has not changed its own RSS since tracing began (bpf/fault.bpf.h
 * rss_key_learn), so that others' changes to an idle process are its own.
 */
static bool learn_keys(const struct mw_capture *c)
{
	return !c->host && !c->rss_raw && kernel_get()->rss_stat_btf &&
	       !feature_disabled("learn_keys");
}

static int attach_rss(struct mw_capture *c)
{
	c->rss_link = bpf_program__attach(rss_program(c));
	if (!c->rss_link)
		return -errno;
	/* After the classic one: it runs second, for the same event. */
	if (learn_keys(c)) {
		c->key_link = bpf_program__attach(c->skel->progs.rss_key_learn);
		if (!c->key_link)
			mw_dbg("cannot attach rss_key_learn (%s): an idle process's changes "
			       "by others count from its own first change", strerror(errno));
	}
	return 0;
}

static bool is_rss_program(const struct memwatch_bpf *s, const struct bpf_program *p)
{
	return p == s->progs.rss_stat || p == s->progs.rss_stat_raw ||
	       p == s->progs.host_rss_stat || p == s->progs.host_rss_stat_raw;
}

/*
 * The syscalls memwatch follows (bpf/syscalls.bpf.h: syscall_op), by their
 * tracepoints' names; HOST: the calls host-wide mode follows too, those
 * that change VM, VmLck or VmPin; HOST_ENTER: those that can remove a
 * device's mappings, seen at entry too (bpf/host.bpf.h: host_call_enter).
 * A kernel without one of them (mseal before 6.10) has no such call either.
 */
enum { HOST = 1, HOST_ENTER = 2 };
static const struct {
	const char *name;
	unsigned int host;
} traced_calls[] = {
	{ "mmap", HOST | HOST_ENTER }, { "munmap", HOST | HOST_ENTER },
	{ "mremap", HOST | HOST_ENTER }, { "brk", HOST }, { "shmat", HOST }, { "shmdt", HOST },
	{ "mprotect", 0 }, { "pkey_mprotect", 0 }, { "madvise", 0 }, { "mlock", HOST },
	{ "mlock2", HOST }, { "munlock", HOST }, { "mseal", 0 }, { "prctl", 0 },
};

/* Host-wide only: calls that move VmLck or VmPin and nothing a traced
 * process's model follows (bpf/host.bpf.h: host_pin_call). */
static const char *const host_calls[] = { "mlockall", "munlockall", "io_uring_register" };

/* Calls of other processes that change a traced one's RSS. */
static const char *const remote_calls[] = {
	"process_madvise", "process_vm_readv", "process_vm_writev", "process_mrelease",
};

static bool is_syscall_program(const struct memwatch_bpf *s, const struct bpf_program *p,
			       bool *tp)
{
	*tp = p == s->progs.sys_enter_tp || p == s->progs.sys_exit_tp ||
	      p == s->progs.host_sys_exit_tp || p == s->progs.host_sys_enter_tp ||
	      p == s->progs.remote_enter_tp || p == s->progs.remote_exit_tp;
	return *tp || p == s->progs.sys_enter_raw || p == s->progs.sys_exit_raw ||
	       p == s->progs.host_sys_exit || p == s->progs.host_sys_enter;
}

/* The per-process sys_exit program of this kernel, the one slowest to verify. */
static struct bpf_program *sys_exit_program(const struct mw_capture *c,
					    const struct memwatch_bpf *s)
{
	return c->sys_tp ? s->progs.sys_exit_tp : s->progs.sys_exit_raw;
}

static int attach_call(struct mw_capture *c, struct bpf_program *prog, const char *dir,
		       const char *call)
{
	char tp[64];
	struct bpf_link *l;

	snprintf(tp, sizeof(tp), "sys_%s_%s", dir, call);
	if (feature_disabled("syscall_tp_attach"))
		return -EPERM;	/* as a kernel that refuses them (tests) */
	quiet_libbpf = true;
	l = bpf_program__attach_tracepoint(prog, "syscalls", tp);
	quiet_libbpf = false;
	if (!l)
		return -errno;
	if (c->nsys_links < MW_ARRAY_SIZE(c->sys_links))
		c->sys_links[c->nsys_links++] = l;
	return 0;
}

/* One program on each call's tracepoint; the three calls every process makes
 * must be there, the others may be missing from an older kernel. */
static int attach_syscalls(struct mw_capture *c)
{
	struct memwatch_bpf *s = c->skel;
	struct bpf_program *exit_prog = c->host ? s->progs.host_sys_exit_tp :
				        sys_exit_program(c, c->skel2 ? c->skel2 : s);
	int err;

	if (!c->sys_tp)
		return 0;
	for (size_t i = 0; i < MW_ARRAY_SIZE(traced_calls); i++) {
		const char *call = traced_calls[i].name;

		if (c->host && !traced_calls[i].host)
			continue;
		const char *dir = "enter";

		if (c->host)
			err = traced_calls[i].host & HOST_ENTER ?
			      attach_call(c, s->progs.host_sys_enter_tp, dir, call) : 0;
		else
			err = attach_call(c, s->progs.sys_enter_tp, dir, call);
		if (!err)
			err = attach_call(c, exit_prog, dir = "exit", call);
		if (err && i < 4) {
			mw_dbg("cannot attach to the tracepoint syscalls:sys_%s_%s: %s",
			       dir, call, strerror(-err));
			return err;
		}
		if (err)
			mw_dbg("no tracepoint for %s: %s", call, strerror(-err));
	}
	for (size_t i = 0; c->host && i < MW_ARRAY_SIZE(host_calls); i++) {
		err = attach_call(c, exit_prog, "exit", host_calls[i]);
		if (err)
			mw_dbg("no tracepoint for %s: %s", host_calls[i], strerror(-err));
	}
	/* Other processes' calls on a traced one (bpf/remote.bpf.h);
	 * process_mrelease came in 5.15. */
	for (size_t i = 0; !c->host && i < MW_ARRAY_SIZE(remote_calls); i++) {
		/* The exit first: a call noted at entry must be closed. */
		err = attach_call(c, s->progs.remote_exit_tp, "exit", remote_calls[i]) ?:
		      attach_call(c, s->progs.remote_enter_tp, "enter", remote_calls[i]);
		if (err)
			mw_dbg("no tracepoint for %s: %s", remote_calls[i], strerror(-err));
	}
	return 0;
}

/* The hook a fault program uses (bpf/fault.bpf.h), or MW_FAULT_NONE if p
 * is none of them. */
static enum mw_fault_hook fault_program_hook(const struct memwatch_bpf *s,
					     const struct bpf_program *p)
{
	if (p == s->progs.page_fault_user || p == s->progs.page_fault_kernel ||
	    p == s->progs.host_fault_user || p == s->progs.host_fault_kernel)
		return MW_FAULT_TP;
	if (p == s->progs.mm_fault_fentry || p == s->progs.host_mm_fault_fentry)
		return MW_FAULT_FENTRY;
	if (p == s->progs.mm_fault_kprobe || p == s->progs.host_mm_fault_kprobe)
		return MW_FAULT_KPROBE;
	return MW_FAULT_NONE;
}

/*
 * Load what this mode uses and this kernel has (each program verified is
 * start-up time): host-wide, the host_* programs (host.bpf.h) and nothing
 * per process; else the reverse.  cpu_offsets serves both.
 */
static bool user_faults_available(void)
{
	return kernel_get()->user_faults;
}

static void drop_missing_programs(struct mw_capture *c)
{
	struct memwatch_bpf *s = c->skel;
	enum mw_fault_hook hook = kernel_get()->fault_hook;
	bool kfaults = kernel_get()->kernel_faults;
	struct bpf_program *p;
	bool tp;

	bpf_object__for_each_program(p, s->obj) {
		bool host = strncmp(bpf_program__name(p), "host_", 5) == 0;
		/* cpu_offsets serves the 6.2+ counters only (not in compat). */
		bool load = p == s->progs.cpu_offsets ? !kernel_get()->compat : host == c->host;

		if (strncmp(bpf_program__name(p), "mark_uprobe", 11) == 0) {
			/* mark_uprobe (attach cookies), or on the compat
			 * object the bank's first nmarkers (mark.bpf.h). */
			int n = -1;

			sscanf(bpf_program__name(p), "mark_uprobe_%d", &n);
			load = !c->host && (kernel_get()->compat ?
					    n >= 0 && (size_t)n < c->nmarkers : n < 0);
		} else if (p == s->progs.split_seed) {
			bpf_program__set_autoattach(p, false);
			load = !c->host && kernel_get()->split_rss;
		} else if (p == s->progs.mm_seed) {
			bpf_program__set_autoattach(p, false);
			load = !c->host && (c->rss_raw || learn_keys(c));
		} else if (p == s->progs.rss_key_learn) {
			bpf_program__set_autoattach(p, false);
			load = learn_keys(c);
		} else if (is_rss_program(s, p)) {
			bpf_program__set_autoattach(p, false);
			load = p == rss_program(c);
		} else if (is_syscall_program(s, p, &tp)) {
			/* One of the two forms (bpf/syscalls.bpf.h). */
			load = load && tp == c->sys_tp;
		} else if (fault_program_hook(s, p) != MW_FAULT_NONE) {
			bool kernel = p == s->progs.page_fault_kernel || p == s->progs.host_fault_kernel;

			load = load && fault_program_hook(s, p) == hook && (!kernel || kfaults);
		}
		bpf_program__set_autoload(p, load);
	}
}

/*
 * The object this kernel gets (user/capture/kernel.c), through the main object's
 * skeleton either way: the compat object has every program, map and global
 * the skeleton names (scripts/skel-compat-check, at build time).
 */
static struct memwatch_bpf *skel_open(void)
{
	struct memwatch_bpf *s;
	int err;

	if (!kernel_get()->compat)
		return memwatch_bpf__open();
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	err = memwatch_bpf__create_skeleton(s);
	if (!err) {
		s->skeleton->data = memwatch_compat_bpf__elf_bytes(&s->skeleton->data_sz);
		err = bpf_object__open_skeleton(s->skeleton, NULL);
	}
	if (err) {
		memwatch_bpf__destroy(s);
		errno = -err;
		return NULL;
	}
	return s;
}

static struct memwatch_bpf *open_configured(const struct mw_capture *c,
					    const struct mw_capture_opts *o)
{
	struct memwatch_bpf *s = skel_open();
	struct bpf_program *prog;

	if (!s) {
		mw_err("cannot open the BPF object: %s", strerror(errno));
		return NULL;
	}
	/* -vvv: the verifier's statistics of each program loaded (libbpf
	 * prints them as "processed N insns"), what start-up costs
	 * (scripts/bench/regress keeps sys_exit's under a budget). */
	if (mw_verbose >= 3)
		bpf_object__for_each_program(prog, s->obj)
			bpf_program__set_log_level(prog, 4 /* BPF_LOG_STATS */);
	s->rodata->nr_cpus = MW_MIN(c->ncpus, MW_MAX_CPUS);
	s->rodata->wake_bytes = o->batch_wakeups ? o->ringbuf_bytes / 8 : 0;
	s->rodata->rb_size = o->ringbuf_bytes;
	s->rodata->rb_look = o->ringbuf_bytes / 16 / MW_MAX(c->ncpus, 1);
	s->rodata->want_stacks = o->stacks;
	s->rodata->stack_bytes = o->stacks ? MW_MIN(o->stack_bytes, MW_STACK_COPY_MAX) : 0;
	s->rodata->want_python = o->stacks && o->python;
	s->rodata->user_faults = user_faults_available();
	s->rodata->page_shift = mw_page_shift;
	s->rodata->split_rss = kernel_get()->split_rss;
	s->rodata->rss_key_ptr = c->rss_raw && !c->host;
	s->rodata->learn_keys = learn_keys(c);
	s->rodata->coalesce = !feature_disabled("coalesce");
	s->rodata->stack_cache = !feature_disabled("stack_cache");
	s->rodata->test_exit_busy = feature_disabled("exit_walk");
	s->rodata->host_join = o->host_join;
	s->rodata->host_in_cgroup = o->host_cgroup_fd >= 0;
	s->rodata->time_parts = c->bpf_stats && bpfstats_parts_wanted();
	bpf_map__set_max_entries(s->maps.procs, o->max_procs);
	bpf_map__set_max_entries(s->maps.proc_index, o->max_procs);
	bpf_map__set_max_entries(s->maps.rb, o->ringbuf_bytes);
	if (o->host_procs) {
		bpf_map__set_max_entries(s->maps.hosts, o->host_procs);
		bpf_map__set_max_entries(s->maps.host_mm, o->host_procs);
	}
	if (!o->stacks)		/* unused: do not reserve its memory */
		bpf_map__set_max_entries(s->maps.fault_stacked, 1);
	else
		bpf_map__set_max_entries(s->maps.stack_buf, MW_MAX(c->ncpus, 1));
	return s;
}

/* dst uses src's maps (same object, so the same names and shapes). */
static int reuse_maps(struct memwatch_bpf *dst, const struct memwatch_bpf *src)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, dst->obj) {
		const struct bpf_map *sm = bpf_object__find_map_by_name(src->obj, bpf_map__name(m));

		if (!sm || bpf_map__reuse_fd(m, bpf_map__fd(sm)))
			return -ENOENT;
	}
	return 0;
}

struct load_job {
	struct memwatch_bpf *skel;
	int err;
};

static void *load_job_run(void *arg)
{
	struct load_job *j = arg;

	j->err = memwatch_bpf__load(j->skel);
	return NULL;
}

/*
 * Per process, the verifier takes longest over the sys_exit program (~0.09 s
 * here, all the others together ~0.02 s), and libbpf's CO-RE pass over the
 * vmlinux BTF about as long.  So: a copy of the object with no programs
 * creates the maps (and the frozen .rodata the verifier reads its constants
 * from); then two more copies over those maps load sys_exit and the rest at
 * the same time, on two CPUs.  Host-wide programs are small: one copy.
 */
static int load_split(struct mw_capture *c, const struct mw_capture_opts *o)
{
	struct memwatch_bpf *maps = open_configured(c, o);
	struct load_job job = { .skel = NULL };
	struct bpf_program *p;
	bool threaded = false;
	pthread_t th;
	int err;

	if (!maps || !(c->skel2 = open_configured(c, o))) {
		memwatch_bpf__destroy(maps);
		return -ENOMEM;
	}
	bpf_object__for_each_program(p, maps->obj)
		bpf_program__set_autoload(p, false);
	bpf_object__for_each_program(p, c->skel2->obj)
		bpf_program__set_autoload(p, p == sys_exit_program(c, c->skel2));
	bpf_program__set_autoload(sys_exit_program(c, c->skel), false);
	err = memwatch_bpf__load(maps);
	if (!err)
		err = reuse_maps(c->skel, maps) ?: reuse_maps(c->skel2, maps);
	if (!err) {
		job.skel = c->skel2;
		threaded = pthread_create(&th, NULL, load_job_run, &job) == 0;
		if (!threaded)
			load_job_run(&job);
		err = memwatch_bpf__load(c->skel);
		if (threaded)
			pthread_join(th, NULL);
		err = err ?: job.err;
	}
	memwatch_bpf__destroy(maps);	/* the other two hold the maps */
	return err;
}

static int open_and_load(struct mw_capture *c, const struct mw_capture_opts *o)
{
	int err;

	c->skel = open_configured(c, o);
	if (!c->skel)
		return -1;
	drop_missing_programs(c);
	memset(&load_log, 0, sizeof(load_log));
	load_log.on = true;
	err = c->host ? memwatch_bpf__load(c->skel) : load_split(c, o);
	load_log.on = false;
	if (err)
		load_failure(err);
	return err;
}

/* Links and objects, for a second try with other programs. */
static void detach_all(struct mw_capture *c)
{
	for (size_t i = 0; i < c->nsys_links; i++)
		bpf_link__destroy(c->sys_links[i]);
	c->nsys_links = 0;
	bpf_link__destroy(c->rss_link);
	c->rss_link = NULL;
	bpf_link__destroy(c->key_link);
	c->key_link = NULL;
	memwatch_bpf__destroy(c->skel2);
	memwatch_bpf__destroy(c->skel);
	c->skel = c->skel2 = NULL;
}

/* 0, a negative errno from attaching, or an exit code (> 0) already said. */
static int load_and_attach(struct mw_capture *c, const struct mw_capture_opts *o)
{
	int err = open_and_load(c, o);

	if (!err && c->rss_raw && !find_cpu_offsets(c)) {
		/* No per-CPU offsets: load again with the classic one. */
		mw_dbg("RSS from the classic kmem:rss_stat tracepoint");
		memwatch_bpf__destroy(c->skel);
		memwatch_bpf__destroy(c->skel2);
		c->skel2 = NULL;
		c->rss_raw = false;
		err = open_and_load(c, o);
	}
	if (err)
		return MW_EXIT_BPF;
	if (o->host_procs && o->host_cgroup_fd >= 0) {
		__u32 zero = 0;

		if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.host_cg), &zero,
					&o->host_cgroup_fd, BPF_ANY)) {
			mw_err("cannot select the cgroup: %s", strerror(errno));
			return MW_EXIT_BPF;
		}
	}
	err = memwatch_bpf__attach(c->skel);
	if (!err && c->skel2)
		err = memwatch_bpf__attach(c->skel2);
	if (!err)
		err = attach_rss(c);
	if (!err)
		err = attach_syscalls(c);
	return err;
}

int capture_open(struct mw_capture **out, const struct mw_capture_opts *o)
{
	struct mw_capture *c = mw_xcalloc(1, sizeof(*c));
	int err, code = MW_EXIT_BPF;

	libbpf_set_print(libbpf_print);
	c->sink = o->sink;
	c->sink_ctx = o->sink_ctx;
	c->ncpus = libbpf_num_possible_cpus();
	c->nprocs = o->max_procs;
	c->proc_pids = mw_xcalloc(c->nprocs, sizeof(*c->proc_pids));
	c->rss_raw = kernel_get()->rss_raw;
	c->host = o->host_procs > 0;
	c->sys_tp = kernel_get()->syscall_tp;
	c->nmarkers = o->nmarkers;
	c->bpf_stats = bpfstats_wanted();
	c->stats_fd = -1;
	/* kernel_get() has what it needed of preflight's BTF: libbpf parses
	 * its own copy for each object. */
	preflight_btf_release();
	heapwarm_join();
	err = load_and_attach(c, o);
	if ((err == -EPERM || err == -EACCES) && c->sys_tp) {
		/* Some kernels let CAP_PERFMON attach BPF to the raw syscall
		 * tracepoints but not to the per-call ones (perf events of
		 * syscalls: Debian's 6.12): the raw pair then, said as
		 * degraded. */
		mw_dbg("per-call syscall tracepoints refused (%s): the raw ones", strerror(-err));
		detach_all(c);
		c->sys_tp = false;
		kernel_degrade("syscall-filter", "the per-call syscall tracepoints could not be "
			       "attached (perf events of syscalls need more privilege here): every "
			       "process's syscalls run memwatch's filter on the raw sys_enter/sys_exit");
		err = load_and_attach(c, o);
	}
	if (err > 0) {
		code = err;
		goto fail;
	}
	if (err) {
		mw_err("cannot attach the BPF programs: %s", strerror(-err));
		goto fail;
	}
	c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.rb), on_record, c, NULL);
	if (!c->rb) {
		mw_err("cannot open the ring buffer: %s", strerror(errno));
		goto fail;
	}
	if (c->bpf_stats)
		c->stats_fd = bpfstats_enable();
	heapwarm_release();
	*out = c;
	return 0;
fail:
	capture_close(c);
	return code;
}

/*
 * Detaching a uprobe or a classic tracepoint waits for RCU grace periods,
 * serialised in the kernel: half a second for a handful of USDT probes, as
 * much for the syscall tracepoints.  A holder with copies of every
 * descriptor lets us return at once; when we exit, it exits, and the
 * kernel releases the probes then.  Nothing is left attached either way.
 *
 * The holder shares our memory (CLONE_VM) but not our descriptor table.
 * A fork() would share the heap copy-on-write instead: every page the
 * reports and the freeing then write is copied, each with a TLB shootdown,
 * and -d 2 on stress-ng --mmap under THP "always" ended 0.55 s late
 * (tests/robustness drops, perf: do_wp_page under _int_free).  Sharing
 * our memory, the holder must not touch it: no allocator, no errno (it
 * makes only calls that cannot fail), no sanitizer's state, no signal
 * handler (all blocked before the clone, so it inherits them blocked).
 */
struct holder {
	int rfd;		/* the pipe's read end: EOF when we are gone */
	int wfd;		/* its write end, ours only */
	bool stdio[3];		/* which of 0, 1 and 2 are open */
};

#define MW_HOLDER_STACK	(64 * 1024)

__attribute__((no_sanitize("address", "undefined")))
static int holder_run(void *arg)
{
	const struct holder *h = arg;
	char b;

	/* Hold no terminal or pipe a caller may wait on. */
	for (int i = 0; i < 3; i++)
		if (h->stdio[i])
			syscall(SYS_close, i);
	syscall(SYS_close, h->wfd);
	syscall(SYS_read, h->rfd, &b, 1);	/* signals blocked: no EINTR */
	return 0;
}

static void detach_in_background(struct mw_capture *c)
{
	struct holder *h;
	sigset_t all, old;
	void *stack;
	int fds[2];
	pid_t pid;

	if (!c->nmarker_links && !c->nsys_links)
		return;
	/* Its state at the bottom of its stack, which grows down from the
	 * top: its own, read until it exits. */
	stack = mmap(NULL, MW_HOLDER_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return;
	if (pipe2(fds, O_CLOEXEC)) {
		munmap(stack, MW_HOLDER_STACK);
		return;
	}
	h = stack;
	h->rfd = fds[0];
	h->wfd = fds[1];
	for (int i = 0; i < 3; i++)
		h->stdio[i] = fcntl(i, F_GETFD) >= 0;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* Where clone() refuses (valgrind takes only forks and threads),
	 * the detach below waits, as without a holder. */
	pid = clone(holder_run, (char *)stack + MW_HOLDER_STACK, CLONE_VM | SIGCHLD, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(fds[0]);
	if (pid < 0) {
		close(fds[1]);
		munmap(stack, MW_HOLDER_STACK);
	}
	/* Else fds[1] stays open until we exit: then the holder does (its
	 * stack is never unmapped: it runs on it until then). */
}

void capture_close(struct mw_capture *c)
{
	if (!c)
		return;
	if (c->bpf_stats && c->skel) {
		struct bpf_object *objs[] = { c->skel->obj, c->skel2 ? c->skel2->obj : NULL };

		bpfstats_report(objs, 2, bpf_map__fd(c->skel->maps.part_time), c->ncpus);
	}
	if (c->stats_fd >= 0)
		close(c->stats_fd);
	detach_in_background(c);
	ring_buffer__free(c->rb);
	bpf_link__destroy(c->rss_link);
	bpf_link__destroy(c->key_link);
	for (size_t i = 0; i < c->nsys_links; i++)
		bpf_link__destroy(c->sys_links[i]);
	for (size_t i = 0; i < c->nmarker_links; i++)
		bpf_link__destroy(c->marker_links[i]);
	free(c->marker_links);
	memwatch_bpf__destroy(c->skel2);
	memwatch_bpf__destroy(c->skel);
	free(c->proc_pids);
	free(c);
}

/* Tell the fault programs that 'procs' changed (bpf/state.bpf.h). */
static void procs_changed(struct mw_capture *c)
{
	__u32 zero = 0;

	c->procs_gen++;
	bpf_map_update_elem(bpf_map__fd(c->skel->maps.procs_gen), &zero, &c->procs_gen, BPF_ANY);
}

/* pid's index in 'procs', or -1. */
static long proc_index_of(const struct mw_capture *c, pid_t pid)
{
	for (size_t i = 0; i < c->nprocs; i++)
		if (c->proc_pids[i] == pid)
			return (long)i;
	return -1;
}

/*
 * A task iterator over every task, for pid as tracing begins (bpf/fault.bpf.h):
 * split_seed, before 6.2: what its threads hold in their RSS caches, which
 * /proc/PID/status (the seed) leaves out; mm_seed: its mm's key.
 */
static void run_task_iter(struct mw_capture *c, struct bpf_program *prog, pid_t pid)
{
	struct bpf_link *link;
	char buf[64];
	int fd;

	if (bpf_program__fd(prog) < 0)
		return;		/* not loaded on this kernel */
	c->skel->bss->seed_tgid = (__u32)pid;
	link = bpf_program__attach_iter(prog, NULL);
	fd = link ? bpf_iter_create(bpf_link__fd(link)) : -1;
	if (fd < 0) {
		mw_dbg("no task iterator for %s (%s)", bpf_program__name(prog), strerror(errno));
	} else {
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
	bpf_link__destroy(link);
}

/* pid's state goes to a free index of 'procs' first, then 'proc_index'
 * points to it (bpf/state.bpf.h). */
int capture_track(struct mw_capture *c, pid_t pid, const struct mw_proc *init)
{
	struct mw_proc p = *init;
	long free_idx = proc_index_of(c, 0);
	__u32 key = pid, idx;

	if (pid <= 0)
		return -EINVAL;
	if (proc_index_of(c, pid) >= 0)
		return -EEXIST;
	if (free_idx < 0)
		return -E2BIG;
	idx = (__u32)free_idx;
	p.tgid = (__u32)pid;
	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.procs), &idx, &p, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(c->skel->maps.proc_index), &key, &idx, BPF_NOEXIST))
		return -errno;
	c->proc_pids[idx] = pid;
	procs_changed(c);
	/* Before 6.2: the threads' RSS caches at attach, else counted at
	 * their first event (bpf/fault.bpf.h split_seed).  6.2+: its mm, else
	 * learned at its first change (mm_seed). */
	run_task_iter(c, c->skel->progs.split_seed, pid);
	run_task_iter(c, c->skel->progs.mm_seed, pid);
	return 0;
}

/* Set key's value in map, or with val NULL forget it (absent is fine). */
static int map_set(const struct bpf_map *map, const void *key, const void *val)
{
	int fd = bpf_map__fd(map);

	if (!val)
		return bpf_map_delete_elem(fd, key) && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(fd, key, val, BPF_ANY) ? -errno : 0;
}

/* --python: pid's interpreter, its _PyRuntime and layout (bpf/python.bpf.h);
 * NULL: forget it. */
int capture_python_set(struct mw_capture *c, pid_t pid, const struct mw_py_target *t)
{
	__u32 key = (__u32)pid;

	return map_set(c->skel->maps.py_runtime, &key, t);
}

int capture_stack_recipe(struct mw_capture *c, uint64_t cls, const struct mw_stack_recipe *r)
{
	return map_set(c->skel->maps.stack_recipes, &cls, r);
}

int capture_stack_site(struct mw_capture *c, uint64_t site, bool seen)
{
	__u8 one = 1;

	return map_set(c->skel->maps.stack_seen, &site, seen ? &one : NULL);
}

int capture_host_add(struct mw_capture *c, pid_t pid, const struct mw_host *init)
{
	__u32 key = pid;

	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.hosts), &key, init, BPF_NOEXIST))
		return -errno;
	return 0;
}

/* In batches: one syscall per few hundred entries, not two per entry. */
long capture_host_read(struct mw_capture *c, uint32_t **pids, struct mw_host **out)
{
	int fd = bpf_map__fd(c->skel->maps.hosts);
	size_t cap = bpf_map__max_entries(c->skel->maps.hosts), n = 0;
	__u32 batch = 0, count;
	bool first = true;
	int err;

	*pids = mw_xcalloc(cap, sizeof(**pids));
	*out = mw_xcalloc(cap, sizeof(**out));
	for (;;) {
		count = (__u32)MW_MIN(cap - n, (size_t)256);
		if (!count)
			break;
		err = bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, *pids + n,
					   *out + n, &count, NULL);
		first = false;
		n += count;
		if (err) {
			if (errno == ENOENT)
				break;	/* the end */
			free(*pids);
			free(*out);
			*pids = NULL;
			*out = NULL;
			return -errno;
		}
	}
	return (long)n;
}

/* The index is forgotten first, then its state cleared (its tgid with it,
 * so a CPU still holding the index finds nothing there), then freed. */
void capture_untrack(struct mw_capture *c, pid_t pid)
{
	static const struct mw_proc none;
	long i = proc_index_of(c, pid);
	__u32 key = pid, idx;

	if (i < 0)
		return;
	idx = (__u32)i;
	bpf_map_delete_elem(bpf_map__fd(c->skel->maps.proc_index), &key);
	bpf_map_update_elem(bpf_map__fd(c->skel->maps.procs), &idx, &none, BPF_ANY);
	c->proc_pids[idx] = 0;
	procs_changed(c);
}

int capture_poll(struct mw_capture *c, int timeout_ms)
{
	int n;

	c->polled = 0;
	c->poll_until = mw_now_ns() + MW_POLL_BUDGET_NS + (uint64_t)timeout_ms * MW_NS_PER_MS;
	/* Most records are written without a wakeup (see emit_rec()): read
	 * the buffer itself, not only what epoll reports. */
	if (timeout_ms == 0)
		n = ring_buffer__consume(c->rb);
	else
		n = ring_buffer__poll(c->rb, timeout_ms);
	c->behind = n == -EAGAIN;
	if (n == -EAGAIN)	/* the budget ran out: more may be waiting */
		return (int)MW_MIN(c->polled, (uint64_t)INT_MAX);
	return n;
}

bool capture_behind(const struct mw_capture *c)
{
	return c->behind;
}

uint64_t capture_last_ts(const struct mw_capture *c)
{
	return c->last_ts;
}

int capture_emit_state(struct mw_capture *c, pid_t pid, int final)
{
	struct mw_state st = { .pid = pid, .final = final };
	struct mw_srec r = { .kind = MW_S_STATE, .len = sizeof(st), .data = &st };
	int err = capture_proc_read(c, pid, &st.proc);

	if (err)
		return err;
	st.ts = mw_now_ns();
	capture_stats(c, st.stats);
	c->sink(c->sink_ctx, &r);
	return 0;
}

void capture_stats(struct mw_capture *c, uint64_t out[MW_NR_STATS])
{
	__u64 *vals = mw_xcalloc(c->ncpus, sizeof(*vals));

	for (__u32 key = 0; key < MW_NR_STATS; key++) {
		out[key] = 0;
		if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.stats), &key, vals) == 0)
			for (int i = 0; i < c->ncpus; i++)
				out[key] += vals[i];
	}
	free(vals);
}

int capture_fd(struct mw_capture *c)
{
	return ring_buffer__epoll_fd(c->rb);
}

static void keep_link(struct mw_capture *c, struct bpf_link *l)
{
	c->marker_links = mw_xrealloc(c->marker_links, c->nmarker_links + 1,
				      sizeof(*c->marker_links));
	c->marker_links[c->nmarker_links++] = l;
}

int capture_attach_markers(struct mw_capture *c, pid_t pid, const char *exe,
			   const struct mw_marker_spec *specs, size_t n)
{
	static const char *const usdt_names[] = { "phase", "iter" };
	struct bpf_program *usdt_progs[] = { c->skel->progs.usdt_phase, c->skel->progs.usdt_iter };

	bool bank = !kernel_get()->attach_cookie;

	if (bank && n > MW_UPROBE_BANK) {
		mw_err("at most %d --phase-at and --iter markers on this kernel (%s), which "
		       "lacks bpf_get_attach_cookie() (Linux 5.15); USDT probes have no limit",
		       MW_UPROBE_BANK, kernel_get()->release);
		return MW_EXIT_KERNEL;
	}
	for (size_t i = 0; i < n; i++) {
		__u64 cookie = ((__u64)specs[i].kind << 32) | (i + 1);
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = specs[i].symbol,
			    .bpf_cookie = bank ? 0 : cookie);
		struct bpf_program *prog = c->skel->progs.mark_uprobe;
		struct bpf_link *l;

		if (bank) {	/* program i of the bank, its cookie in a map */
			struct bpf_map *m = bpf_object__find_map_by_name(c->skel->obj,
									 "uprobe_cookie");
			char name[48];
			__u32 k = (__u32)i;

			snprintf(name, sizeof(name), "mark_uprobe_%zu", i);
			prog = bpf_object__find_program_by_name(c->skel->obj, name);
			if (!m || !prog ||
			    bpf_map_update_elem(bpf_map__fd(m), &k, &cookie, BPF_ANY)) {
				mw_err("cannot place marker %zu: %s", i, strerror(errno ?: ENOENT));
				return MW_EXIT_PROBE;
			}
		}
		l = bpf_program__attach_uprobe_opts(prog, pid, specs[i].binary, 0, &uo);
		if (!l) {
			mw_err("cannot place a marker on %s:%s (%s): is the path right and "
			       "the symbol in its symbol table?", specs[i].binary,
			       specs[i].symbol, strerror(errno));
			return MW_EXIT_PROBE;
		}
		keep_link(c, l);
	}
	/* USDT probes from include/memwatch.h, if the program has them. */
	for (size_t i = 0; exe && i < MW_ARRAY_SIZE(usdt_names); i++) {
		struct bpf_link *l;

		quiet_libbpf = true;
		l = bpf_program__attach_usdt(usdt_progs[i], pid, exe, "memwatch",
					     usdt_names[i], NULL);
		quiet_libbpf = false;
		if (l)
			keep_link(c, l);
		else
			mw_dbg("no memwatch:%s USDT probe in %s", usdt_names[i], exe);
	}
	return 0;
}

/* The session's loop (memwatch mark) and its sampling thread both mark;
 * the compat object passes the arguments through one map entry. */
static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER;

int capture_mark(struct mw_capture *c, pid_t pid, __u32 kind, const char *name)
{
	struct mw_mark_args args = {
		.tgid = pid, .kind = kind, .locked = MW_PIN_UNKNOWN, .pinned = MW_PIN_UNKNOWN,
	};
	LIBBPF_OPTS(bpf_test_run_opts, ro, .ctx_in = &args, .ctx_size_in = sizeof(args));
	__u64 raw_ctx[1] = { 0 };
	__u32 zero = 0;
	struct pm_status st;
	int err = 0;

	if (name)
		snprintf(args.name, sizeof(args.name), "%s", name);
	/* The program cannot read another task's mm: VmLck and VmPin as of
	 * now (exact where the process waits for the mark: the socket, the
	 * exit hold). */
	if (procfs_read_status(pid, &st) == 0 && !st.kernel_thread) {
		args.locked = st.vm_lck >> mw_page_shift;
		args.pinned = st.vm_pin >> mw_page_shift;
	}
	pthread_mutex_lock(&mark_lock);
	if (kernel_get()->compat) {
		/* A raw_tp program there (no syscall programs before 5.14),
		 * with its arguments in a map. */
		struct bpf_map *m = bpf_object__find_map_by_name(c->skel->obj, "mark_args");

		if (!m || bpf_map_update_elem(bpf_map__fd(m), &zero, &args, BPF_ANY))
			err = m ? -errno : -ENOENT;
		ro.ctx_in = raw_ctx;
		ro.ctx_size_in = sizeof(raw_ctx);
	}
	if (!err && bpf_prog_test_run_opts(bpf_program__fd(c->skel->progs.mark_syscall), &ro))
		err = -errno;
	pthread_mutex_unlock(&mark_lock);
	return err;
}

int capture_proc_read(struct mw_capture *c, pid_t pid, struct mw_proc *out)
{
	long i = proc_index_of(c, pid);
	__u32 idx = (__u32)i;

	if (i < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.procs), &idx, out))
		return -errno;
	return 0;
}
