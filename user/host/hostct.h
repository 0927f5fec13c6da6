/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hostct.h — containers host-wide: a snapshot's cgroups folded per
 * container (--by container: a row per container, the rest of the host one
 * more), and each container's life across snapshots: when it was first and
 * last seen, its peaks, and its end, reported once when none of its
 * processes is left.
 *
 * A container's VM and RSS are the sums over its processes, which the
 * kernel keeps exactly.  Its RSS peak is the highest sum seen at a
 * snapshot (every interval, step and second), or the highest peak of one
 * of its processes, exact, live or exited, if that is more: a floor of
 * the true peak of the sum.  Its
 * cgroup's memory.peak (Linux 5.19+: every page charged to it, the page
 * cache too) is the kernel's own peak, read while the cgroup exists.
 */
#ifndef MW_HOSTCT_H
#define MW_HOSTCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/idmap.h"
#include "host/containers.h"
#include "host/hostview.h"

/* One container in a frame (or, with c.engine NULL, the host's processes
 * in no container). */
struct mw_hct {
	uint64_t key;			/* who it is (1: no container) */
	struct mw_hcgroup g;		/* sums over its cgroups; g.path: label */
	struct mw_container c;
	char label[MW_CT_NAME_LEN + 24];	/* "ENGINE:NAME", "(no container)" */
	const char *top;		/* its topmost cgroup's path */
};

/* cgs folded per container, largest RSS first; *out: caller frees. */
size_t hct_fold(const struct mw_hcgroup *cgs, size_t n, struct mw_hct **out);
/*
 * A span's rows: every container of either snapshot, as it is now (zero if
 * gone), d_vm and d_rss from the first: a container destroyed in a step
 * gives back all it held.  Largest RSS change first; *out: caller frees.
 */
size_t hct_span(const struct mw_hct *at, size_t nat, const struct mw_hct *now, size_t nnow,
		struct mw_hct **out);

/* A container whose processes are all gone. */
struct mw_hct_end {
	const struct mw_container *c;
	const char *label;
	uint64_t first_ns, last_ns;	/* first and last seen with a process */
	uint32_t procs_peak;		/* most processes at once (sampled) */
	uint64_t vm_peak, rss_peak;	/* highest sums seen, or one process's peak */
	int64_t mem_peak;		/* its cgroup's memory.peak; -1: unknown */
	uint64_t snapshots;		/* how many saw it */
};

typedef void (*mw_hct_end_fn)(void *ctx, const struct mw_hct_end *e);

/* A container is over once none of its processes has been seen for this
 * long (a snapshot comes every second at least). */
#define MW_HCT_GONE_NS	(1500 * 1000 * 1000ull)

struct mw_hct_life {
	struct mw_idmap by_key;		/* container key -> index */
	struct hct_alive *v;
	size_t n, cap;
};

/*
 * A snapshot at ts, folded (hct_fold): each container's peaks move on; one
 * seen before and absent since MW_HCT_GONE_NS (last: the session's last
 * snapshot, absent from it at all) has ended: end is called, then it is
 * forgotten.  A container still there when the session ends is not an end:
 * none is reported for it.
 */
void hct_track(struct mw_hct_life *l, const struct mw_hct *v, size_t n, uint64_t ts,
	       bool last, mw_hct_end_fn end, void *ctx);
/* A process of the container cgroup is in has exited: its peaks count. */
void hct_exit(struct mw_hct_life *l, const char *cgroup, const struct mw_hproc *p, uint64_t ts);
void hct_life_free(struct mw_hct_life *l);

#endif /* MW_HOSTCT_H */
