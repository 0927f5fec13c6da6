// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* preflight.c — start-up checks, each with one clear message. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "capture/preflight.h"
#include "capture/procfs.h"
#include "util.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static const char *const tracefs_dirs[] = {
	"/sys/kernel/tracing",
	"/sys/kernel/debug/tracing",
};

bool feature_disabled(const char *name)
{
	const char *env = getenv("MEMWATCH_DISABLE");
	size_t n = strlen(name);

	for (const char *p = env; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 1 : 0)) {
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0))
			return true;
	}
	return false;
}

static bool has_cap(const struct __user_cap_data_struct d[2], int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

bool privileges_ok(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };

	return syscall(SYS_capget, &h, d) == 0 && !feature_disabled("root") &&
	       ((has_cap(d, CAP_BPF) && has_cap(d, CAP_PERFMON)) || has_cap(d, CAP_SYS_ADMIN));
}

int preflight_privileges(void)
{
	if (privileges_ok())
		return 0;
	mw_err("needs root, or CAP_BPF and CAP_PERFMON (plus CAP_SYS_PTRACE and "
	       "CAP_DAC_READ_SEARCH for another user's process): run it with sudo");
	return MW_EXIT_PERM;
}

int preflight_btf(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0 && !feature_disabled("btf"))
		return 0;
	mw_err("this kernel has no BTF (/sys/kernel/btf/vmlinux is missing): "
	       "memwatch needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
	return MW_EXIT_NOBTF;
}

const char *tracefs_dir(void)
{
	char path[128];

	for (size_t i = 0; i < MW_ARRAY_SIZE(tracefs_dirs); i++) {
		snprintf(path, sizeof(path), "%s/events", tracefs_dirs[i]);
		if (access(path, R_OK) == 0)
			return tracefs_dirs[i];
	}
	return NULL;
}

static bool tracefs_ready(void)
{
	return tracefs_dir() != NULL;
}

/* Per-call syscall tracepoints, which libbpf attaches by their tracefs id. */
bool syscall_tracepoints_exist(void)
{
	char path[160];

	if (feature_disabled("syscall_tp"))
		return false;
	for (size_t i = 0; i < MW_ARRAY_SIZE(tracefs_dirs); i++) {
		snprintf(path, sizeof(path), "%s/events/syscalls/sys_exit_mmap/id",
			 tracefs_dirs[i]);
		if (access(path, R_OK) == 0)
			return true;
	}
	return false;
}

int preflight_tracefs(void)
{
	if (feature_disabled("tracefs")) {
		errno = ENOENT;
		goto fail;
	}
	if (tracefs_ready())
		return 0;
	/* Classic tracepoints are attached by the id tracefs gives them. */
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0 &&
	    tracefs_ready()) {
		mw_dbg("mounted tracefs on /sys/kernel/tracing");
		return 0;
	}
fail:
	mw_err("tracefs is not mounted and could not be mounted (%s): run "
	       "'mount -t tracefs nodev /sys/kernel/tracing'", strerror(errno ? errno : ENOENT));
	return MW_EXIT_TRACEFS;
}

/* Parsed on first use (a few MB, tens of milliseconds), for kernel_get();
 * freed by preflight_btf_release() before libbpf parses its own copies. */
static struct btf *cached_btf;

static struct btf *vmlinux_btf(void)
{
	if (!cached_btf)
		cached_btf = btf__load_vmlinux_btf();
	return cached_btf;
}

void preflight_btf_release(void)
{
	btf__free(cached_btf);
	cached_btf = NULL;
}

bool btf_tracepoint_exists(const char *name)
{
	struct btf *btf = vmlinux_btf();
	char type[128];

	if (!btf)
		return false;
	snprintf(type, sizeof(type), "btf_trace_%s", name);
	return btf__find_by_name_kind(btf, type, BTF_KIND_TYPEDEF) > 0;
}

int btf_func_id(const char *name)
{
	struct btf *btf = vmlinux_btf();
	int id = btf ? btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) : -1;

	return id > 0 ? id : 0;
}

/* The type of member 'name' of struct/union t, looking into its anonymous
 * members as C does; 0 if none. */
static __u32 btf_member_type(const struct btf *btf, const struct btf_type *t, const char *name,
			     int depth)
{
	const struct btf_member *m = btf_members(t);

	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *mname = btf__name_by_offset(btf, m->name_off);
		const struct btf_type *mt;
		__u32 id;

		if (mname && strcmp(mname, name) == 0)
			return m->type;
		if (mname && *mname)
			continue;
		mt = btf__type_by_id(btf, m->type);
		if (depth < 4 && mt && (btf_is_struct(mt) || btf_is_union(mt)) &&
		    (id = btf_member_type(btf, mt, name, depth + 1)))
			return id;
	}
	return 0;
}

/* What the raw rss_stat program reads the counters with: mm->rss_stat an
 * array of percpu_counters (6.2, f1a7941243c1) and the bpf_rdonly_cast()
 * kfunc (6.2). */
bool btf_has_percpu_rss(void)
{
	struct btf *btf = vmlinux_btf();
	const struct btf_type *t;
	__u32 member;
	int id;

	if (!btf || btf__find_by_name_kind(btf, "bpf_rdonly_cast", BTF_KIND_FUNC) < 0)
		return false;
	id = btf__find_by_name_kind(btf, "mm_struct", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	member = t ? btf_member_type(btf, t, "rss_stat", 0) : 0;
	return member && btf_is_array(btf__type_by_id(btf, member));
}

/* Kernels before 6.2 (f1a7941243c1) count a task's own faults in per-task
 * caches first (SPLIT_RSS_COUNTING): task_struct has rss_stat then. */
bool btf_has_split_rss(void)
{
	return btf_struct_has("task_struct", "rss_stat") && !feature_disabled("split_rss");
}

bool btf_struct_has(const char *type, const char *member)
{
	struct btf *btf = vmlinux_btf();
	int id = btf ? btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT) : -1;
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;

	return t && btf_member_type(btf, t, member, 0) != 0;
}

/*
 * What memwatch cannot do without, oldest first, each probed as the kernel
 * has it (kernel_feature_present()).  MEMWATCH_DISABLE=NAME forces one off,
 * so the tests see the message a kernel without it gives.
 */
static const struct kernel_feature required[] = {
	{ "tp_btf", "BTF-typed tracepoints (tp_btf)", "5.5", "sys_enter", 0, 0 },
	{ "ringbuf", "BPF ring buffers", "5.8", NULL, BPF_MAP_TYPE_RINGBUF, 0 },
	/* Task storage, bpf_find_vma() and the rest of what came after: the
	 * compat object does without them (user/capture/kernel.c). */
};

bool kernel_feature_present(const struct kernel_feature *f)
{
	if (feature_disabled(f->name))
		return false;
	if (f->btf_tp)
		return btf_tracepoint_exists(f->btf_tp);
	if (f->map)
		return libbpf_probe_bpf_map_type(f->map, NULL) == 1;
	/* As tracepoint programs have it: libbpf cannot probe tp_btf ones. */
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, f->helper, NULL) == 1;
}

int preflight_missing(FILE *f)
{
	int n = 0;

	for (size_t i = 0; i < MW_ARRAY_SIZE(required); i++)
		if (!kernel_feature_present(&required[i]) && ++n)
			fprintf(f, "  missing: %s (Linux %s or later): memwatch cannot trace here\n",
				required[i].what, required[i].since);
	return n;
}

int preflight_kernel(void)
{
	for (size_t i = 0; i < MW_ARRAY_SIZE(required); i++) {
		const struct kernel_feature *f = &required[i];
		bool forced = feature_disabled(f->name);

		if (kernel_feature_present(f))
			continue;
		mw_err("this kernel lacks %s (Linux %s or later): memwatch cannot trace here%s",
		       f->what, f->since, forced ? " (forced by MEMWATCH_DISABLE)" : "");
		return MW_EXIT_KERNEL;
	}
	return 0;
}

int preflight_pid(pid_t pid)
{
	struct pm_status st;
	int err;

	if (pid <= 0) {
		mw_err("invalid PID %d: it must be a positive process ID", pid);
		return MW_EXIT_USAGE;
	}
	if (pid == getpid()) {
		mw_err("PID %d is memwatch itself: refusing to trace it", pid);
		return MW_EXIT_NOPID;
	}
	err = procfs_read_status(pid, &st);
	if (err) {
		mw_err("no process with PID %d", pid);
		return MW_EXIT_NOPID;
	}
	if (st.tgid != pid) {
		mw_err("PID %d is a thread of process %d: trace the process with -p %d",
		       pid, st.tgid, st.tgid);
		return MW_EXIT_NOPID;
	}
	if (st.state == 'Z' || st.state == 'X') {
		mw_err("PID %d is a zombie: it has already exited", pid);
		return MW_EXIT_NOPID;
	}
	if (st.kernel_thread) {
		mw_err("PID %d is a kernel thread: it has no user address space", pid);
		return MW_EXIT_NOPID;
	}
	return 0;
}
