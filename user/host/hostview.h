/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * hostview.h — one snapshot of a host-wide session (-a, --cgroup, several
 * -p, -f): every traced process's totals, as the kernel keeps them, what each
 * grew by since the previous snapshot, the same per cgroup, the host's
 * memory, and memwatch's own health.  The top table, the JSON interval lines
 * and the metrics endpoint all show one of these.
 */
#ifndef MW_HOSTVIEW_H
#define MW_HOSTVIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "memwatch.h"

/* What the host-wide tables have a row for (--by). */
enum host_by { HOST_BY_PROCESS, HOST_BY_CGROUP, HOST_BY_CONTAINER };

struct mw_hproc {
	uint32_t pid;
	uint64_t first_ns;		/* when it joined: with pid, who it is */
	char comm[MW_COMM_LEN];		/* NUL-terminated; any bytes */
	uint64_t cgroup_id;		/* cgroup v2 id (inode of its directory) */
	uint64_t vm, vm_peak;		/* bytes */
	int64_t rss[MW_NR_MEMBERS];	/* bytes, by enum mw_member */
	uint64_t rss_peak;		/* bytes, file + anon + shmem */
	uint64_t faults;		/* page faults since tracing began */
	uint64_t mapped, unmapped;	/* VM bytes added / removed since then */
	uint64_t locked, pinned;	/* bytes: VmLck, VmPin after its last call that moves them */
	uint64_t device_vm;		/* bytes of kind "device" (a driver's, a dma-buf's) */
	uint64_t device_vm_peak;
	bool device_vm_exact;		/* false: a call removed some memwatch could not walk */
	int64_t d_vm, d_rss;		/* growth since the previous snapshot */
	uint64_t d_faults;
};

struct mw_hcgroup {
	uint64_t id;
	const char *path;		/* below the cgroup2 mount, "/" for the root */
	uint32_t nprocs;		/* traced processes in it now */
	uint64_t vm;
	int64_t rss[MW_NR_MEMBERS];
	uint64_t faults, mapped, unmapped;
	uint64_t locked, pinned;
	uint64_t device_vm;
	int64_t d_vm, d_rss;
	uint64_t rss_peak_max;		/* the largest of its processes' RSS peaks */
};

struct mw_health {
	uint64_t events;		/* ring-buffer records read */
	uint64_t lost;			/* ring-buffer records dropped (full buffer) */
	uint64_t procs_seen;		/* processes traced so far */
	uint64_t procs_exited;
	uint64_t procs_tracked;		/* in the kernel's table now */
	uint64_t procs_capacity;	/* its size (LRU: the oldest go when full) */
	uint64_t loader_cpu_ns;		/* memwatch's own user + system CPU */
	uint64_t loader_rss_bytes;	/* memwatch's own RSS */
};

struct mw_hostview {
	uint64_t ts_ns;			/* CLOCK_MONOTONIC */
	uint64_t start_ns;		/* when tracing began */
	uint64_t interval_ns;		/* since the previous snapshot */
	const struct mw_hproc *procs;	/* every live traced process, any order */
	size_t nprocs;
	const struct mw_hcgroup *cgroups;	/* any order (metrics.c ranks both) */
	size_t ncgroups;
	uint64_t mem_total, mem_available;	/* /proc/meminfo, bytes */
	const char *phase;		/* the step now ('memwatch mark'), "start" */
	struct mw_health health;
};

#endif /* MW_HOSTVIEW_H */
