// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kernel.c — which of memwatch's BPF objects this kernel gets, and what runs
 * degraded on it.  The main object needs 5.17 (bpf_find_vma, bpf_loop and
 * what came before them); the compat one (bpf/compat.bpf.h) 5.8.  Each probe
 * asks the kernel itself (BTF, map-type and helper probes), never the
 * version number, and MEMWATCH_DISABLE=NAME forces one off for the tests.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

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
