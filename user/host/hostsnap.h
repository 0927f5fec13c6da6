/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hostsnap.h — snapshots of a host-wide session and what changed between
 * two of them: per process (matched by pid and the time it joined, so a
 * reused pid is a new process), per cgroup, and the processes that exited in
 * between.  Pure code: tests/unit/test_hostsnap.c.
 */
#ifndef MW_HOSTSNAP_H
#define MW_HOSTSNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/hostview.h"
#include "memwatch.h"

/* A process that exited: its totals as it went. */
struct mw_hexit {
	struct mw_hproc p;
	uint64_t exit_ns;
	int32_t wait_status;
};

/* Processes at one instant, sorted by pid. */
struct mw_hsnap {
	uint64_t ts;
	struct mw_hproc *procs;
	size_t n;
};

/* cgroup id -> path, filled by the caller (cgroups.c); NULL: unknown. */
typedef const char *(*mw_cgroup_name_fn)(void *ctx, uint64_t id, uint32_t pid);

void hsnap_free(struct mw_hsnap *s);
/* From the kernel's entries (pids[i] has h[i]), at ts.  Growth is against
 * prev (NULL: none, all growth 0); a process not in prev grew from nothing. */
void hsnap_build(struct mw_hsnap *s, uint64_t ts, const uint32_t *pids,
		 const struct mw_host *h, size_t n, const struct mw_hsnap *prev);
/* The process's row from a kernel entry. */
void hproc_from_host(struct mw_hproc *out, uint32_t pid, const struct mw_host *h);
/* The entry in s for (pid, first_ns), or NULL. */
const struct mw_hproc *hsnap_find(const struct mw_hsnap *s, uint32_t pid, uint64_t first_ns);
int64_t hproc_rss(const struct mw_hproc *p);

/*
 * Growth from 'from' to 'to' for every process in either, with those that
 * exited in between (exits[]) taking their final totals: what a step (two
 * 'memwatch mark's) cost.  Rows in *out (caller frees), largest RSS growth
 * first; returns how many.
 */
size_t hsnap_growth(const struct mw_hsnap *from, const struct mw_hsnap *to,
		    const struct mw_hexit *exits, size_t nexits, struct mw_hproc **out);

/* Per-cgroup sums of rows[] (the same fields, growth included), largest RSS
 * first; names from fn.  *out is the caller's to free (paths are fn's). */
size_t hsnap_cgroups(const struct mw_hproc *rows, size_t n, mw_cgroup_name_fn fn, void *ctx,
		     struct mw_hcgroup **out);

/*
 * Device VM (bytes) of a process from its smaps, by the kernel side's rule
 * (bpf/vma.bpf.h: vma_is_device): mapped by page frame or page by page, a
 * dma-buf's, or a character device's but the memory devices'.  For a
 * process that was there before tracing began.  hsnap_maps_may_device():
 * whether its maps (no flags) has a line that could be one, so that smaps is
 * read only then.
 */
struct pm_maps;
uint64_t hsnap_device_vm(const struct pm_maps *smaps);
bool hsnap_maps_may_device(const struct pm_maps *maps);

/* Order rows: largest growth (RSS, then VM) first. */
void hproc_sort_growth(struct mw_hproc *rows, size_t n);

#endif /* MW_HOSTSNAP_H */
