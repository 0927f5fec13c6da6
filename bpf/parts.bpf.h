/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * parts.bpf.h — where a traced call's time goes inside memwatch's own
 * programs (MEMWATCH_BPF_STATS=1: scripts/bench/run --breakdown): the
 * time of each part of sys_exit's work, summed per CPU with the number of
 * times it ran (enum mw_part, bpf/memwatch.h).  The loader reads the sums
 * at the end beside the kernel's own per-program run times
 * (BPF_ENABLE_STATS).  Off by default, and then the verifier prunes every
 * timer: a run costs nothing more.
 */
#ifndef MW_PARTS_BPF_H
#define MW_PARTS_BPF_H

const volatile bool time_parts = false;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MW_NR_PARTS);
	__type(key, __u32);
	__type(value, struct mw_part_time);
} part_time SEC(".maps");

static __always_inline __u64 part_start(void)
{
	return time_parts ? bpf_ktime_get_ns() : 0;
}

static __always_inline void part_end(__u32 part, __u64 t0)
{
	struct mw_part_time *v;

	if (!time_parts)
		return;
	v = bpf_map_lookup_elem(&part_time, &part);
	if (v) {
		v->ns += bpf_ktime_get_ns() - t0;
		v->runs++;
	}
}

#endif /* MW_PARTS_BPF_H */
