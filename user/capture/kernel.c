// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kernel.c — which of memwatch's BPF objects this kernel gets, and what runs
 * degraded on it.  The main object needs 5.17 (bpf_find_vma, bpf_loop and
 * what came before them); the compat one (bpf/compat.bpf.h) 5.8.  Each probe
 * asks the kernel itself (BTF, map-type and helper probes), never the
 * version number, and MEMWATCH_DISABLE=NAME forces one off for the tests.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>

#include "capture/kernel.h"
#include "capture/preflight.h"
#include "util.h"

/* What the main object uses that the compat one does without. */
static const struct kernel_feature main_needs[] = {
	{ "task_storage", "BPF task storage", "5.11", NULL, BPF_MAP_TYPE_TASK_STORAGE, 0 },
	{ "task_btf", "bpf_get_current_task_btf()", "5.11", NULL, 0,
	  BPF_FUNC_get_current_task_btf },
	{ "find_vma", "bpf_find_vma()", "5.17", NULL, 0, BPF_FUNC_find_vma },
	{ "bpf_loop", "bpf_loop()", "5.17", NULL, 0, BPF_FUNC_loop },
};

static void degrade(struct mw_kernel *k, const char *feature, const char *why)
{
	if (k->ndegraded < MW_KERNEL_MAX_DEGRADED)
		k->degraded[k->ndegraded++] = (struct mw_degraded){ feature, why };
}

/*
 * Can a fentry program attach to the kernel function with BTF id btf_id?
 * Loading is not enough: arm64's 6.1 loads one and refuses the trampoline
 * at attach (ENOTSUPP), and some kernels refuse tracing programs (EPERM).
 * An empty program, attached and let go at once.
 */
static bool fentry_attaches(int btf_id)
{
	const struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = BPF_TRACE_FENTRY,
		    .attach_btf_id = btf_id);
	int fd, link;

	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "mw_fentry_probe", "GPL", ret0,
			   MW_ARRAY_SIZE(ret0), &o);
	if (fd < 0)
		return false;
	link = bpf_raw_tracepoint_open(NULL, fd);
	if (link >= 0)
		close(link);
	close(fd);
	return link >= 0;
}

/* Can a kprobe be put on func?  As libbpf attaches one: a perf event of the
 * kprobe PMU (4.17), which the kernel refuses for a blacklisted function. */
static bool kprobe_attaches(const char *func)
{
	struct perf_event_attr a = { .size = sizeof(a) };
	FILE *f = fopen("/sys/bus/event_source/devices/kprobe/type", "re");
	int type = -1, fd;

	if (f) {
		if (fscanf(f, "%d", &type) != 1)
			type = -1;
		fclose(f);
	}
	if (type < 0)
		return false;
	a.type = type;
	a.config1 = (uintptr_t)func;
	fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* The best way this kernel has to see page faults (bpf/fault.bpf.h).
 * MEMWATCH_DISABLE: page_fault (all of them), page_fault_tp, fentry and
 * kprobe (one each: the x86 guests of the kernel matrix prove the arm64
 * ways with them). */
static enum mw_fault_hook fault_hook_probe(void)
{
	int id;

	if (feature_disabled("page_fault"))
		return MW_FAULT_NONE;
	if (btf_tracepoint_exists("page_fault_user") && !feature_disabled("page_fault_tp"))
		return MW_FAULT_TP;
	id = btf_func_id("handle_mm_fault");
	if (!id)
		return MW_FAULT_NONE;
	if (!feature_disabled("fentry") && fentry_attaches(id))
		return MW_FAULT_FENTRY;
	if (!feature_disabled("kprobe") && kprobe_attaches("handle_mm_fault"))
		return MW_FAULT_KPROBE;
	return MW_FAULT_NONE;
}

const char *kernel_fault_hook_name(enum mw_fault_hook h)
{
	switch (h) {
	case MW_FAULT_TP: return "exceptions:page_fault_user";
	case MW_FAULT_FENTRY: return "fentry/handle_mm_fault";
	case MW_FAULT_KPROBE: return "kprobe/handle_mm_fault";
	default: return "none";
	}
}

const struct mw_kernel *kernel_get(void)
{
	static struct mw_kernel k;
	static bool done;
	struct utsname u;

	if (done)
		return &k;
	done = true;
	snprintf(k.release, sizeof(k.release), "%s", uname(&u) ? "?" : u.release);
	for (size_t i = 0; i < MW_ARRAY_SIZE(main_needs); i++) {
		if (kernel_feature_present(&main_needs[i]))
			continue;
		k.compat = true;
		k.compat_for = &main_needs[i];
		break;
	}
	/* The compat object finds VMAs in mm->mm_rb: before 6.1's maple tree. */
	k.compat_ok = k.compat && btf_struct_has("mm_struct", "mm_rb");
	k.split_rss = btf_has_split_rss();
	k.rss_stat_btf = btf_tracepoint_exists("rss_stat");
	k.rss_raw = !k.compat && k.rss_stat_btf && btf_has_percpu_rss() &&
		    !feature_disabled("rss_raw");
	k.fault_hook = fault_hook_probe();
	k.user_faults = k.fault_hook != MW_FAULT_NONE;
	/* handle_mm_fault() sees kernel-mode faults on user addresses too. */
	k.kernel_faults = k.fault_hook == MW_FAULT_TP ? btf_tracepoint_exists("page_fault_kernel") :
			  k.user_faults;
	/* The compat object does without both (bpf/compat.bpf.h): uprobe
	 * markers are a bank of programs there, one per spec. */
	k.attach_cookie = !k.compat;

	/* Per-call syscall tracepoints (CONFIG_FTRACE_SYSCALLS): without them
	 * every syscall on the host runs memwatch's filter (syscalls.bpf.h). */
	k.syscall_tp = syscall_tracepoints_exist();
	if (!k.syscall_tp)
		degrade(&k, "syscall-filter", "no per-call syscall tracepoints "
			"(syscalls:sys_enter_mmap; CONFIG_FTRACE_SYSCALLS): every process's "
			"syscalls run memwatch's filter on the raw sys_enter/sys_exit");
	/* A fault that moved CPU: found through bpf_map_lookup_percpu_elem()
	 * (5.19) where counters are per CPU (6.2+), and before that from the
	 * thread's own state (fault.bpf.h): nothing degrades. */
	return &k;
}

/*
 * The rest of preflight_kernel()'s check, on the object kernel_get() chose.
 * Here, not in preflight.c: kernel.c asks preflight.c's probes, so
 * preflight.c asks nothing of kernel.c.
 */
int kernel_check(void)
{
	const struct mw_kernel *k = kernel_get();

	if (k->compat && !k->compat_ok) {
		mw_err("this kernel lacks %s (Linux %s), and the compat object for kernels "
		       "before that reads VMAs from mm->mm_rb, which this one has not (a "
		       "maple tree, 6.1+): memwatch cannot trace here%s", k->compat_for->what,
		       k->compat_for->since, feature_disabled(k->compat_for->name) ?
		       " (forced by MEMWATCH_DISABLE)" : "");
		return MW_EXIT_KERNEL;
	}
	if (!k->user_faults)
		mw_err("note: no page-fault hook on this kernel (no exceptions:page_fault_user "
		       "tracepoint, and neither fentry nor a kprobe attaches to handle_mm_fault): "
		       "RSS is attributed from syscalls only, per-mapping RSS is partial");
	return 0;
}

void kernel_degrade(const char *feature, const char *why)
{
	degrade((struct mw_kernel *)kernel_get(), feature, why);
}

void kernel_note(void)
{
	const struct mw_kernel *k = kernel_get();
	char line[512];
	size_t n = 0;

	if (k->compat)
		mw_dbg("BPF object: compat, for Linux 5.8 to 5.16 (no %s: Linux %s)",
		       k->compat_for->what, k->compat_for->since);
	if (k->split_rss)
		mw_dbg("RSS: per-task caches before 6.2, read at each event");
	if (!k->ndegraded)
		return;
	for (size_t i = 0; i < k->ndegraded && n < sizeof(line); i++)
		n += snprintf(line + n, sizeof(line) - n, "%s%s", i ? ", " : "",
			      k->degraded[i].feature);
	mw_err("degraded on Linux %s: %s (-v says why)", k->release, line);
	for (size_t i = 0; i < k->ndegraded; i++)
		mw_dbg("degraded %s: %s", k->degraded[i].feature, k->degraded[i].why);
}

/* The lines of memwatch --version after its own and libbpf's: what this
 * kernel has and which of memwatch's ways it would take here. */
void kernel_describe(FILE *f)
{
	const char *tracefs;
	const struct mw_kernel *k;
	struct utsname u;

	if (uname(&u))
		memset(&u, 0, sizeof(u));
	fprintf(f, "kernel: Linux %s %s\n", u.release, u.machine);
	if (access("/sys/kernel/btf/vmlinux", R_OK) || feature_disabled("btf")) {
		fprintf(f, "  BTF: none (/sys/kernel/btf/vmlinux): memwatch cannot run here\n");
		return;
	}
	fprintf(f, "  BTF: /sys/kernel/btf/vmlinux\n");
	/* tracefs is root's; the map-type and helper probes load BPF. */
	if (!privileges_ok()) {
		fprintf(f, "  tracefs, BPF features: not probed without root (or CAP_BPF and "
			"CAP_PERFMON): sudo memwatch --version\n");
		return;
	}
	tracefs = tracefs_dir();
	fprintf(f, "  tracefs: %s\n", tracefs ? tracefs : "not mounted (memwatch mounts it at "
		"/sys/kernel/tracing, with CAP_SYS_ADMIN)");
	if (preflight_missing(f))
		return;
	k = kernel_get();
	if (k->compat)
		fprintf(f, "  BPF object: compat, for Linux 5.8 to 5.16 (no %s: Linux %s)%s\n",
			k->compat_for->what, k->compat_for->since,
			k->compat_ok ? "" : "; it cannot read this kernel's VMAs: memwatch "
			"cannot trace here");
	else
		fprintf(f, "  BPF object: main (Linux 5.17 and later)\n");
	fprintf(f, "  RSS counters: %s\n", k->split_rss ?
		"mm counters + per-task caches (before 6.2), read at each event" :
		k->rss_raw ? "per-CPU mm counters, read whole by the raw rss_stat tracepoint" :
		"per-CPU mm counters, from the classic kmem:rss_stat tracepoint");
	fprintf(f, "  page faults: %s%s\n", kernel_fault_hook_name(k->fault_hook),
		k->user_faults ? "" : " (per-mapping RSS from syscalls only)");
	fprintf(f, "  page size: %llu KiB\n", (unsigned long long)(mw_page_size() >> 10));
	fprintf(f, "  --phase-at, --iter: %s\n", k->attach_cookie ?
		"uprobes with attach cookies" : "a bank of uprobe programs, at most 16 specs");
	fprintf(f, "  syscalls: %s\n", k->syscall_tp ?
		"per-call tracepoints (syscalls:sys_enter_mmap, ...)" :
		"raw sys_enter/sys_exit, filtered by number (every process's syscalls run it)");
	fprintf(f, "  --stacks: yes (bpf_get_stack)\n");
	fprintf(f, "  degraded: ");
	for (size_t i = 0; i < k->ndegraded; i++)
		fprintf(f, "%s%s", i ? ", " : "", k->degraded[i].feature);
	fprintf(f, "%s\n", k->ndegraded ? "" : "none");
}
