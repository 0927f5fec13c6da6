/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * preflight.h — start-up checks.  Each returns 0 or an enum mw_exit code
 * after printing one line that says what is missing and what to do.
 */
#ifndef MW_PREFLIGHT_H
#define MW_PREFLIGHT_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/bpf.h>

int preflight_privileges(void);
bool privileges_ok(void);	/* preflight_privileges() without the message */
const char *tracefs_dir(void);	/* where tracefs is mounted, or NULL */
int preflight_btf(void);
int preflight_tracefs(void);	/* mounts tracefs when it can */
/* BPF features memwatch cannot do without; kernel_check() (kernel.h) then
 * checks the object this kernel gets. */
int preflight_kernel(void);
/* --version: a line on f for each of those this kernel lacks; how many. */
int preflight_missing(FILE *f);
int preflight_pid(pid_t pid);

/* A kernel feature memwatch probes for: a raw tracepoint's BTF type
 * (tp_btf/ programs came with them), a map type, or a helper. */
struct kernel_feature {
	const char *name;	/* for MEMWATCH_DISABLE */
	const char *what;	/* for messages */
	const char *since;	/* the Linux release that brought it */
	const char *btf_tp;
	enum bpf_map_type map;
	enum bpf_func_id helper;
};

/* Is f there, and not forced off by MEMWATCH_DISABLE? */
bool kernel_feature_present(const struct kernel_feature *f);

/* Does vmlinux BTF have a raw tracepoint for tp_btf/name? */
bool btf_tracepoint_exists(const char *name);
bool btf_has_percpu_rss(void);
/* The BTF id of kernel function name (fentry attaches by it), or 0. */
int btf_func_id(const char *name);
/* syscalls:sys_enter_mmap and the rest (tracefs, CONFIG_FTRACE_SYSCALLS)? */
bool syscall_tracepoints_exist(void);
bool btf_has_split_rss(void);
bool btf_struct_has(const char *type, const char *member);
/* Free the parsed kernel BTF (kernel_get() has what it needs from it);
 * a later question parses it again. */
void preflight_btf_release(void);
/* MEMWATCH_DISABLE=feat1,feat2 forces a feature off (tests of fallbacks). */
bool feature_disabled(const char *name);

#endif /* MW_PREFLIGHT_H */
