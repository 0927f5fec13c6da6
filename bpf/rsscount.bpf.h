/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rsscount.bpf.h — reading an mm's RSS counters whole, as
 * percpu_counter_sum_positive() does, from BPF: the raw rss_stat program and
 * host-wide tracing need the value, not the change.
 *
 * The raw rss_stat program sums the per-CPU RSS counters itself, which needs
 * the per-CPU offsets: cpu_offsets (a BPF_PROG_TYPE_SYSCALL program the
 * loader runs once) notes where a per-CPU map value lives on each CPU; the
 * difference from the map's __percpu pointer is that CPU's offset.
 */
#ifndef MW_RSSCOUNT_BPF_H
#define MW_RSSCOUNT_BPF_H

const volatile __u32 nr_cpus = 1;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mw_cpu_offsets);
} cpu_offsets_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} cpu_probe SEC(".maps");

/* Any kernel struct whose first member is an int: bpf_rdonly_cast() needs
 * a struct's BTF id to make a per-CPU counter's s32 a plain load. */
struct refcount_struct___x {
	atomic_t refs;
} __attribute__((preserve_access_index));

struct cpuoff_ctx {
	struct mw_cpu_offsets *o;
};

static long note_cpu(__u32 cpu, struct cpuoff_ctx *c)
{
	__u32 zero = 0;
	void *v = bpf_map_lookup_percpu_elem(&cpu_probe, &zero, cpu);

	if (!v || cpu >= MW_MAX_CPUS)
		return 1;
	c->o->addr[cpu & (MW_MAX_CPUS - 1)] = (__u64)v;
	c->o->ncpus = cpu + 1;
	return 0;
}

#ifndef MW_COMPAT
/* Run once by the loader (BPF_PROG_TEST_RUN).  The map's __percpu value
 * pointer is pptrs[0], at the offset this kernel's struct bpf_array has it:
 * the struct's size is no guide (6.1: 320 bytes with pptrs at 272; 6.12: 264
 * and 264), and neither is the size vmlinux.h gives it.  The map's head is
 * read up to that pointer into addr[], which note_cpu() fills afterwards
 * (a map pointer allows no arithmetic). */
SEC("syscall")
int cpu_offsets(void *ctx)
{
	struct bpf_array *arr = (void *)&cpu_probe;
	__u32 off = bpf_core_field_offset(arr->pptrs), zero = 0;
	struct cpuoff_ctx c;

	c.o = bpf_map_lookup_elem(&cpu_offsets_map, &zero);
	if (!c.o || off + sizeof(__u64) > sizeof(c.o->addr) ||
	    bpf_probe_read_kernel(c.o->addr, off + sizeof(__u64), arr))
		return 1;
	c.o->pptr = *(__u64 *)((void *)c.o->addr + (off & (sizeof(c.o->addr) - 8)));
	bpf_loop(nr_cpus, note_cpu, &c, 0);
	return 0;
}
#else
/* Before 6.2 the RSS counters are not per CPU: never loaded. */
SEC("raw_tp")
int cpu_offsets(void *ctx)
{
	return 1;
}
#endif

struct sum_ctx {
	struct mw_cpu_offsets *o;
	__u64 counters;
	__s64 sum;
};

/* Add CPU cpu's part of the counter (6.2+: bpf_rdonly_cast, checked by the
 * caller). */
static __always_inline void sum_add_cpu(struct sum_ctx *c, __u32 cpu)
{
	struct refcount_struct___x *r;

	r = bpf_rdonly_cast((void *)(c->counters + c->o->off[cpu & (MW_MAX_CPUS - 1)]),
			    bpf_core_type_id_kernel(struct refcount_struct___x));
	c->sum += r->refs.counter;
}

static long sum_cpu(__u32 cpu, struct sum_ctx *c)
{
	if (cpu >= c->o->ncpus)
		return 1;
	sum_add_cpu(c, cpu);
	return 0;
}

/* mm_struct as 6.2+ has it (f1a7941243c1: the RSS counters became
 * percpu_counters); on older kernels the field does not match and the raw
 * rss_stat program, which needs it, is never attached. */
struct mm_struct___pcp {
	struct percpu_counter rss_stat[MW_NR_MEMBERS];
} __attribute__((preserve_access_index));

/* &mm->rss_stat[member], as a BTF pointer: its fields load directly (a plain
 * load with an exception-table fixup), where bpf_probe_read_kernel() is a
 * helper call, and this runs on every page fault of a traced process. */
static __always_inline struct percpu_counter *rss_counter(struct mm_struct *mm,
							  __u32 member)
{
	struct mm_struct___pcp *m = (void *)mm;

	if (!bpf_core_field_exists(m->rss_stat))
		return NULL;
	switch (member) {
	case 0: return &m->rss_stat[0];
	case 1: return &m->rss_stat[1];
	case 2: return &m->rss_stat[2];
	case 3: return &m->rss_stat[3];
	}
	return NULL;
}

/* percpu_counter_sum_positive(&mm->rss_stat[member]): what the classic
 * tracepoint computes for its 'size' (6.2+: percpu rss counters).  mm must
 * be a BTF pointer (a tp_btf argument, or a field of one). */
static __always_inline __s64 rss_counter_bytes(struct mm_struct *mm, __u32 member)
{
	struct percpu_counter *fbc = rss_counter(mm, member);
	__u32 zero = 0;
	struct sum_ctx c = {
		.o = bpf_map_lookup_elem(&cpu_offsets_map, &zero),
	};

#ifdef MW_COMPAT
	return 0;	/* before 6.2 the counters are not per CPU */
#endif
	if (!c.o || !fbc || !bpf_rdonly_cast)	/* 6.2+: the loader checks */
		return 0;
	c.counters = (__u64)fbc->counters;
	c.sum = fbc->count;
#ifndef MW_COMPAT	/* no callbacks there (fault.bpf.h: moved_fault) */
	if (nr_cpus <= 8) {
		/* Small machines: no callback per CPU. */
		for (int cpu = 0; cpu < 8; cpu++) {
			if (cpu >= nr_cpus)
				break;
			sum_add_cpu(&c, cpu);
		}
	} else {
		bpf_loop(nr_cpus, sum_cpu, &c, 0);
	}
#endif
	return c.sum > 0 ? c.sum << page_shift : 0;
}

/* mm_struct before 6.2: the counters are plain atomics. */
struct mm_rss_stat___atomic {
	atomic_long_t count[MW_NR_MEMBERS];
} __attribute__((preserve_access_index));

struct mm_struct___atomic {
	struct mm_rss_stat___atomic rss_stat;
} __attribute__((preserve_access_index));

/*
 * Before 6.2: the atomic counter, pages, into *v (0, or -1 if unread).  A
 * subprogram of its own: clang 19 hoists the CO-RE offset of
 * rss_stat.count above the bpf_core_field_exists() guard, and libbpf
 * poisons that instruction where the field is missing (6.2+), so the
 * verifier met it on the path that skips the guarded code.  A call keeps
 * it behind the guard.
 */
static __noinline int mm_counter_atomic(struct mm_struct___atomic *a, __u32 member, long *v)
{
	return bpf_probe_read_kernel(v, sizeof(*v),
				     &a->rss_stat.count[member & (MW_NR_MEMBERS - 1)]) ? -1 : 0;
}

/*
 * An mm's counter of member as it is now, bytes, or -1 where it cannot be
 * read here (6.2+ before the loader has found the per-CPU offsets).
 */
static __always_inline __s64 mm_counter_now(struct mm_struct *mm, __u32 member)
{
	struct mm_struct___atomic *a = (void *)mm;
	struct mw_cpu_offsets *o;
	__u32 zero = 0;
	long v;

	if (bpf_core_field_exists(a->rss_stat)) {
		if (mm_counter_atomic(a, member, &v))
			return -1;
		return v > 0 ? (__s64)v << page_shift : 0;
	}
	o = bpf_map_lookup_elem(&cpu_offsets_map, &zero);
	if (!o || !o->ready)
		return -1;
	return rss_counter_bytes(mm, member);
}

#endif /* MW_RSSCOUNT_BPF_H */
