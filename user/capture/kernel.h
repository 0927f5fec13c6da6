/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kernel.h — what the running kernel has, and what memwatch does with it:
 * which BPF object loads (bpf/compat.bpf.h), how its RSS counters count,
 * and which features run degraded, each with its reason.
 */
#ifndef MW_KERNEL_H
#define MW_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "capture/preflight.h"

#define MW_KERNEL_MAX_DEGRADED 8

struct mw_degraded {
	const char *feature;	/* a short name: "phase-at", "stack-leaf", ... */
	const char *why;	/* what the kernel lacks, and since when */
};

/* How page faults are seen (bpf/fault.bpf.h), best first. */
enum mw_fault_hook {
	MW_FAULT_NONE = 0,
	MW_FAULT_TP,		/* exceptions:page_fault_user/_kernel (x86, riscv) */
	MW_FAULT_FENTRY,	/* fentry/handle_mm_fault */
	MW_FAULT_KPROBE,	/* kprobe/handle_mm_fault (arm64 before fentry) */
};

/* "exceptions:page_fault_user", "fentry/handle_mm_fault", ... */
const char *kernel_fault_hook_name(enum mw_fault_hook h);

struct mw_kernel {
	char release[65];		/* uname -r */
	bool compat;			/* memwatch.compat.bpf.o: 5.8 to 5.16 */
	const struct kernel_feature *compat_for; /* the first thing the main object
						  * needs and this kernel lacks */
	bool compat_ok;			/* ... and the compat object can read its VMAs */
	bool split_rss;			/* before 6.2: per-task RSS caches */
	bool attach_cookie;		/* bpf_get_attach_cookie(): --phase-at, --iter */
	bool syscall_tp;		/* syscalls:sys_{enter,exit}_<call> tracepoints */
	bool rss_raw;			/* raw rss_stat, per-CPU counters read whole
					 * (6.2; capture.c falls back if the per-CPU
					 * offsets are not found) */
	bool user_faults;		/* a page-fault hook (fault_hook) */
	bool kernel_faults;		/* ... that sees kernel-mode faults on user
					 * addresses too */
	enum mw_fault_hook fault_hook;
	bool rss_stat_btf;		/* kmem:rss_stat as a BTF-typed tracepoint */
	size_t ndegraded;
	struct mw_degraded degraded[MW_KERNEL_MAX_DEGRADED];
};

/* Probed once (BTF, map types, helpers); MEMWATCH_DISABLE applies. */
const struct mw_kernel *kernel_get(void);
/* A start-up check, after preflight_kernel(): 0, or MW_EXIT_KERNEL after
 * one line when the compat object this kernel gets cannot read its VMAs;
 * a note when no page-fault hook attaches. */
int kernel_check(void);
/* One line on stderr naming each degraded feature, if any: a per-process
 * session says it once attached (host-wide tracing uses none of them). */
void kernel_note(void);
/* What capture found it could not use after all (an attach refused). */
void kernel_degrade(const char *feature, const char *why);
/* memwatch --version: the kernel, and what memwatch would use of it. */
void kernel_describe(FILE *f);

#endif /* MW_KERNEL_H */
