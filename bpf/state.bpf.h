/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * state.bpf.h — maps, per-process state, counters and the RSS attribution
 * slots.  Included once, by memwatch.bpf.c.
 */
#ifndef MW_STATE_BPF_H
#define MW_STATE_BPF_H

/* 6.2+; weak: absent, it is NULL and the code using it is dropped at load. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/*
 * A task's mm as an untrusted BTF pointer: its fields load directly (no
 * helper call), and loading a pointer field from it costs the verifier no
 * trust lookup (a scan of the kernel's BTF by name, for every such load in
 * every state it walks).  bpf_rdonly_cast() compiles to nothing.
 */
static __always_inline struct mm_struct *task_mm(struct task_struct *task)
{
#ifndef MW_COMPAT
	if (bpf_rdonly_cast)
		task = bpf_rdonly_cast(task, bpf_core_type_id_kernel(struct task_struct));
#endif
	return MW_LD(task, mm);
}

/* log2 of the kernel's page size: 12, 14 or 16 (arm64 has 4, 16 and 64 KiB
 * pages).  The loader sets it from sysconf(_SC_PAGESIZE); the verifier reads
 * it from the frozen .rodata as a constant. */
const volatile __u32 page_shift = 12;

#define MW_PAGE_SIZE	(1UL << page_shift)

/*
 * A user-space address.  Kernel addresses are the upper half on x86-64 and
 * arm64 alike (sign-extended), while user space ends at 2^47 (x86-64 with
 * 4 levels), 2^48, 2^52 (arm64 52-bit VA, Debian's 6.12) or 2^56 (5-level
 * paging): the sign bit tells them apart where no one bound does.
 */
static __always_inline bool mw_user_addr(__u64 addr)
{
	return (__s64)addr >= 0;
}
#define MW_PAGE_MASK	(~(MW_PAGE_SIZE - 1))
#define MW_PAGE_ALIGN(x) (((x) + MW_PAGE_SIZE - 1) & MW_PAGE_MASK)

/* Traced processes: their state in an array, found by tgid through
 * proc_index.  A lookup by index is inlined by the verifier (no call), so the
 * fault path, which keeps the index of its CPU's task (struct mw_cpu_fault),
 * pays no hash lookup per event.  The loader hands out the indexes and sizes
 * both maps. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct mw_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);	/* tgid */
	__type(value, __u32);	/* its index in procs */
} proc_index SEC(".maps");

/* mm key -> tgid, learned from events in the owner's context, so that
 * counter changes made from other contexts (reclaim, khugepaged, the owner's
 * own teardown) can be recognised.  The key is the mm pointer (raw
 * tracepoint) or kmem:rss_stat's mm_id (classic fallback). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u32);
} mm_owner SEC(".maps");

#define MW_FAULT_VMA_UNKNOWN (~0ULL)	/* not looked up yet */
/* mw_fault.flt of no fault in progress, and of one that is over, moved no
 * counter and still waits for its VMA's slot (fault.bpf.h: cpu_fault_end()):
 * neither equals a task's count of faults. */
#define MW_FLT_NONE (~0ULL)
#define MW_FLT_LEFT (~1ULL)

/* A fault in progress, and the VMA the last lookup found. */
struct mw_fault {
	__u64 addr;
	__u64 vma;		/* vm_start at fault time, 0 if not in a VMA */
	__u64 flt;		/* min_flt + maj_flt when the fault began */
	__u64 cache_start, cache_end;
	__u32 cache_tgid;	/* the process the cached VMA bounds belong to, */
	__u32 cache_seq;	/* as its proc seq stood */
	__u32 kind_seen;	/* MW_FKS_*: the counters it moved, which way */
	__u32 kind;		/* 1 + the enum mw_fault_kind it counts in, 0 none */
};

/* Is f's address in the VMA the CPU last found for process tgid, with
 * nothing structural since (its sequence still seq)? */
static __always_inline bool fault_vma_cached(const struct mw_fault *f, __u32 tgid, __u32 seq)
{
	return f->cache_seq == seq && f->cache_tgid == tgid &&
	       f->addr >= f->cache_start && f->addr < f->cache_end;
}

/* Remember [start, end) as process tgid's VMA as of its sequence seq. */
static __always_inline void fault_vma_note(struct mw_fault *f, __u64 start, __u64 end,
					   __u32 tgid, __u32 seq)
{
	f->cache_start = start;
	f->cache_end = end;
	f->cache_tgid = tgid;
	f->cache_seq = seq;
}

/* What one thread is doing: a traced syscall. */
struct mw_thread {
	__u32 sys_op;		/* enum mw_op in progress, 0 none */
	__u32 walking;		/* reading its user stack (stack.bpf.h) */
	/* Its process's index in procs as of procs_gen pgen - 1 (0: none),
	 * noted at its last traced call (syscalls.bpf.h: proc_of_call). */
	__u32 pidx;
	__u32 pgen;
	__u64 sys_args[6];
	__u64 sys_vm_before;	/* total_vm at syscall entry, pages */
	__u64 sys_aux[2];	/* op-specific: brk: old brk; shmdt: segment */
	__s64 sys_rss[MW_NR_MEMBERS];
	/* Kernels before 6.2 (split_rss.bpf.h): the task's own RSS
	 * caches as last looked at, and the fault that changes them now. */
	__s32 rss_snap[MW_NR_MEMBERS];
	__u32 snap_valid;
	__u32 in_fault;		/* f is this thread's current or last fault */
	__u32 f_counted;	/* ... counted in its VMA's slot */
	__u32 f_seen;		/* ... the MW_FKS_* counters it moved so far */
	struct mw_fault f;
	__u64 stack_vm;		/* the VM of the call whose stack is taken */
	/* --stack-bytes: [stk_lo, stk_end) is user stack that could be read
	 * to its end at the last copy (stack.bpf.h): the next copy from in
	 * there needs no VMA lookup and no search for the readable end. */
	__u64 stk_lo, stk_end;
};

/*
 * The fault each CPU is handling, whatever the process: noting it here costs
 * a few plain stores, where task storage costs a chain of helper calls, on
 * every fault of every process on the host.  The fault's RSS change normally
 * follows on the same CPU; a fault that slept and moved is looked for on the
 * other CPUs (fault.bpf.h).
 */
struct mw_cpu_fault {
	__u64 task;		/* the faulting task_struct */
	__u32 tgid;
	__u32 kernel;		/* a kernel-mode fault (maybe in a syscall) */
	__u32 pending;		/* its faults in no mapping's slot yet (traced:
				 * fault.bpf.h), or not yet in its host entry
				 * (host.bpf.h) */
	__u32 pad;
	__u32 traced;		/* its process is in 'procs' ... */
	__u32 gen;		/* ... as of this procs_gen */
	__u32 pidx;		/* at this index, when traced */
	__u32 ring;		/* key 0: where the next one set aside goes */
	struct mw_fault f;
};

/* Key 0: the CPU's last faulting task.  Keys 1 to MW_FAULT_RING: the last
 * traced ones another task's fault took key 0 from, set aside: a fault that
 * sleeps (a huge page's allocation and zeroing under THP "always") lets
 * other tasks fault on its CPU before its RSS change, on that CPU or on
 * another (fault.bpf.h: moved_fault()). */
#define MW_FAULT_RING	4

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1 + MW_FAULT_RING);
	__type(key, __u32);
	__type(value, struct mw_cpu_fault);
} fault_cpu SEC(".maps");

/* Bumped by the loader after each change to 'procs': a fault checks its
 * process against 'procs' only when its CPU's task or this changed. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} procs_gen SEC(".maps");

#ifndef MW_COMPAT
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mw_thread);
} threads SEC(".maps");
#else
/* Before 5.11: by thread ID, dropped as the thread exits (task.bpf.h); LRU,
 * so that a thread whose exit was missed costs only an old entry. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct mw_thread);
} threads SEC(".maps");

/* A zeroed thread, to create entries from (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mw_thread);
} thread_zero SEC(".maps");
#endif

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} rb SEC(".maps");

/* Records are built here, then copied into the ring buffer with their real
 * (variable) length. */
union mw_scratch {
	struct mw_op_rec op;
	struct mw_deltas_rec deltas;
	struct mw_task_rec task;
	struct mw_mark_rec mark;
	struct mw_remote_rec remote;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);		/* 0: op/task record, 1: deltas */
	__type(key, __u32);
	__type(value, union mw_scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MW_NR_STATS);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		(*v)++;
}

/* A record the ring buffer had no room for: counted, and by kind, so that
 * a report (and a test) tells coalescing's misses from the rest. */
static __always_inline void stat_lost(__u32 type)
{
	stat_inc(MW_STAT_RB_LOST);
	if (type == MW_REC_DELTAS)
		stat_inc(MW_STAT_RB_LOST_DELTAS);
	else if (type == MW_REC_STACK || type == MW_REC_PYSTACK || type == MW_REC_PYCODE)
		stat_inc(MW_STAT_RB_LOST_STACK);
	else
		stat_inc(MW_STAT_RB_LOST_OP);
}

static __always_inline __u32 current_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

/* The state at index idx, if it is still tgid's: an index the loader has
 * freed and handed to another process does not match. */
static __always_inline struct mw_proc *proc_at(__u32 idx, __u32 tgid)
{
	struct mw_proc *p = bpf_map_lookup_elem(&procs, &idx);

	return p && p->tgid == tgid ? p : NULL;
}

/* tgid's index in procs (a hash lookup), ~0 if it is not traced. */
static __always_inline __u32 proc_index_of(__u32 tgid)
{
	__u32 *idx = bpf_map_lookup_elem(&proc_index, &tgid);

	return idx ? *idx : ~0U;
}

static __always_inline struct mw_proc *proc_lookup(__u32 tgid)
{
	return proc_at(proc_index_of(tgid), tgid);
}

/* CPU c's note is about this task: the same task_struct, not one freed and
 * come back as another task (hence the tgid too). */
static __always_inline bool cpu_fault_of(const struct mw_cpu_fault *c,
					 struct task_struct *task, __u32 tgid)
{
	return c->task == (__u64)task && c->tgid == tgid;
}

static __always_inline union mw_scratch *scratch_get(__u32 idx)
{
	return bpf_map_lookup_elem(&scratch, &idx);
}

/*
 * How full the ring buffer is, looked at once per rb_look bytes a CPU
 * emits, not per record: the look reads the consumer's position, a cache
 * line the loader writes as it reads, and three looks per traced call were
 * a tenth of sys_exit's time.  Between looks a CPU adds what it emitted
 * itself; what other CPUs emitted since is missing from that, at most
 * rb_look each (the loader sets rb_look to a sixteenth of the ring over the
 * CPUs), and what the loader read is not taken off until the next look.
 */
const volatile __u64 rb_size = 8 << 20;	/* the ring's size (the loader's) */
const volatile __u64 rb_look = 0;	/* 0: look at every record */

struct mw_rb_cpu {
	__u64 since;	/* bytes this CPU emitted since it last looked */
	__u64 fill;	/* what the look saw */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mw_rb_cpu);
} rb_cpu SEC(".maps");

static __always_inline struct mw_rb_cpu *rb_cpu_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&rb_cpu, &zero);
}

/* The ring's fill now; look: read it (and start a new count). */
static __always_inline __u64 rb_fill(bool look)
{
	struct mw_rb_cpu *c = rb_cpu_get();
	__u64 fill;

	if (c && !look && c->since < rb_look)
		return c->fill + c->since;
	fill = bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA);
	if (c) {
		c->since = 0;
		c->fill = fill;
	}
	return fill;
}

/* Wake the loader only when this much is waiting (it reads the buffer every
 * 50 ms anyway): a wakeup per record costs the traced process microseconds
 * (4 us per call under stress-ng --mmap here: an IPI, a VM exit under a
 * hypervisor).  0: as soon as there is something to read. */
const volatile __u64 wake_bytes = 0;

/*
 * The ring-buffer flags of a record of size bytes (urgent: exec, exit and
 * markers, which the loader acts on at once), counted to this CPU's next
 * look.  A global function, verified once per program, not at each of the
 * dozen records a program can emit: inlined there it added 300
 * instructions to each program and 16,000 to rss_stat_raw's verification.
 */
__noinline __u64 emit_flags(__u64 size, __u32 urgent)
{
	struct mw_rb_cpu *c = rb_cpu_get();
	__u64 flags = 0;

	if (urgent) {
		flags = BPF_RB_FORCE_WAKEUP;
	} else if (wake_bytes) {
		/* Wake at a look that finds the mark passed, at most once per
		 * look: each forced wakeup is an IPI, and the loader's poll
		 * sees what waits anyway. */
		bool look = !c || c->since >= rb_look;

		flags = look && rb_fill(true) + size >= wake_bytes ? BPF_RB_FORCE_WAKEUP :
								     BPF_RB_NO_WAKEUP;
	}
	/* else 0: the kernel wakes the loader when the buffer was empty, the
	 * first record after it caught up, and not for the ones behind it. */
	if (c)
		c->since += size;
	return flags;
}

/* Emit 'size' bytes of 'rec' with these flags; a full buffer is counted,
 * never silent. */
static __always_inline int emit_flagged(struct mw_proc *p, void *rec, __u64 size,
					__u64 flags)
{
	/* Bounded right at the call: callers clamp their sizes, but an older
	 * verifier (6.1) loses a spilled bound on the way here. */
	barrier_var(size);
	if (size > sizeof(union mw_scratch))
		size = sizeof(union mw_scratch);
	if (bpf_ringbuf_output(&rb, rec, size, flags)) {
		stat_lost(((struct mw_rec_hdr *)rec)->type);
		mw_add(&p->lost, 1);
		return -1;
	}
	return 0;
}

static __always_inline int emit_rec(struct mw_proc *p, void *rec, __u64 size, bool urgent)
{
	return emit_flagged(p, rec, size, emit_flags(size, urgent));
}

static __always_inline int emit(struct mw_proc *p, void *rec, __u64 size)
{
	return emit_rec(p, rec, size, false);
}

/* emit() without emit_flags()' call, for the deepest callers (python.bpf.h:
 * four calls down from sys_exit_tp, where a fifth frame took 6.1's combined
 * stack past 512 bytes): it never wakes the loader, and its bytes count at
 * the CPU's next look, not before it. */
static __always_inline int emit_deep(struct mw_proc *p, void *rec, __u64 size)
{
	return emit_flagged(p, rec, size, wake_bytes ? BPF_RB_NO_WAKEUP : 0);
}

static __always_inline void hdr_set(struct mw_rec_hdr *h, __u32 type, __u32 tgid,
				    __u32 tid, __u32 seq, __u64 ts)
{
	h->type = type;
	h->tgid = tgid;
	h->tid = tid;
	h->seq = seq;
	h->ts = ts;
}

static __always_inline void hdr_fill(struct mw_rec_hdr *h, __u32 type,
				     __u32 tgid, __u32 seq)
{
	hdr_set(h, type, tgid, (__u32)bpf_get_current_pid_tgid(), seq, bpf_ktime_get_ns());
}

/* The marker programs' way to the mm (uprobe and syscall program types,
 * which task_mm()'s BTF pointer loads do not serve); one probe read. */
static __always_inline struct mm_struct *current_mm(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(task, mm);
}

/*
 * VM size is read from the mm itself, so it is exact whatever we missed.
 * Here and in proc_note_pin() a value is stored only when it changed: the
 * threads of one process, on several CPUs, would otherwise take the cache
 * line from each other at every call for an unchanged number.
 */
static __always_inline void proc_note_vm(struct mw_proc *p, __u64 total_vm,
					 __u64 hiwater_vm)
{
	if (p->total_vm != total_vm)
		p->total_vm = total_vm;
	if (total_vm > p->vm_peak)
		p->vm_peak = total_vm;
	if (total_vm > p->phase_vm_peak)
		p->phase_vm_peak = total_vm;
	/* hiwater_vm is raised just before VM shrinks; a raise since tracing
	 * began is a peak we may have seen only as the shrink's result. */
	if (hiwater_vm > p->hiwater_vm_base && hiwater_vm > p->vm_peak)
		p->vm_peak = hiwater_vm;
}

/* Locked and pinned pages (struct mw_pin), as read from the mm. */
static __always_inline void proc_note_pin(struct mw_proc *p, __u64 locked, __u64 pinned)
{
	if (p->pin.locked != locked)
		p->pin.locked = locked;
	if (p->pin.pinned != pinned)
		p->pin.pinned = pinned;
	if (locked > p->pin.locked_peak)
		p->pin.locked_peak = locked;
	if (pinned > p->pin.pinned_peak)
		p->pin.pinned_peak = pinned;
	if (locked > p->locked_peak)
		p->locked_peak = locked;
	if (pinned > p->pinned_peak)
		p->pinned_peak = pinned;
}

/* mm->pinned_vm is an atomic64_t since "mm: make mm->pinned_vm an atomic64
 * counter" (5.1), older than any kernel memwatch loads on (5.10). */
#define MW_MM_PIN(mm)	MW_LD(mm, locked_vm), MW_LD(mm, pinned_vm.counter)

/*
 * Attribution slots: a small two-way table in the process state, keyed by
 * VMA start.  Faults and RSS changes add to a slot; each structural record
 * first harvests every slot (mw_deltas_rec), so slot keys always refer to the
 * VMAs as they stood at the previous structural record.
 */
static __always_inline __u32 slot_index(__u64 vm_start)
{
	return ((vm_start >> page_shift) * 0x9E3779B1u) >> 26 & (MW_SLOTS - 1);
}

static __always_inline bool slot_empty(const struct mw_slot *s)
{
	/* One test, not six: each branch is states for the verifier. */
	return !(s->faults | s->rss[0] | s->rss[1] | s->rss[2] | s->rss[3] | s->peak);
}

/* Move a counter's value out, leaving 0.  A locked exchange costs tens of
 * cycles and most of a slot's counters are 0 (an anonymous mapping has no
 * file, swap or shmem pages): those are only read.  An addition that lands
 * after the read stays in the slot for the next harvest. */
static __always_inline __s64 take(void *counter)
{
	__s64 *v = counter;

#ifdef MW_COMPAT
	/* There mw_xchg() is a load and a store, no locked instruction
	 * (compat.bpf.h), and a branch per counter is states the verifier
	 * walks in each of the harvest loop's 64 unrolled steps. */
	return mw_xchg(v, 0);
#else
	return *(volatile __s64 *)v ? mw_xchg(v, 0) : 0;
#endif
}

/*
 * Move slot s's values out into o and leave its key: a fault on another CPU
 * may add to the slot at any moment, and clearing the key would strand that
 * addition in a slot no one owns.  A key that stays behind still names the
 * VMA start the next addition faulted in.
 */
static __always_inline void slot_take(struct mw_slot *o, struct mw_slot *s)
{
	o->vm_start = s->vm_start;
	o->faults = take(&s->faults);
	o->rss[0] = take(&s->rss[0]);
	o->rss[1] = take(&s->rss[1]);
	o->rss[2] = take(&s->rss[2]);
	o->rss[3] = take(&s->rss[3]);
	o->total = take(&s->total);
	o->peak = take(&s->peak);
	o->fk[0] = take(&s->fk[0]);
	o->fk[1] = take(&s->fk[1]);
	o->fk[2] = take(&s->fk[2]);
	o->fk[3] = take(&s->fk[3]);
	o->fk[4] = take(&s->fk[4]);
}

/* A subprogram: moving a slot's thirteen counters out, inlined at every
 * caller of slot_get(), was verified again in each caller's states. */
static __noinline void slot_evict(struct mw_proc *p, __u32 tgid, struct mw_slot *s)
{
	union mw_scratch *sc = scratch_get(1);

	p->slot_evictions++;
	if (!sc)
		return;
	hdr_fill(&sc->deltas.hdr, MW_REC_DELTAS, tgid, p->seq);
	sc->deltas.nr = 1;
	slot_take(&sc->deltas.slots[0], s);
	sc->deltas.hseq = (__u32)mw_add_fetch(&p->harvests, 1);
	emit(p, &sc->deltas, offsetof(struct mw_deltas_rec, slots) + sizeof(struct mw_slot));
}

/* Key slot s (which had cur) to vm_start; NULL if another CPU keyed it
 * to a third VMA first. */
static __always_inline struct mw_slot *slot_claim(struct mw_slot *s, __u64 cur,
						  __u64 vm_start)
{
	if (mw_cmpxchg(&s->vm_start, cur, vm_start) == cur || s->vm_start == vm_start)
		return s;
	return NULL;
}

/*
 * Two ways per index (i and i ^ 1): two hot mappings that hash alike (1 in
 * 64 for any pair) no longer evict each other at every turn
 * (tests/workloads/slotpair.c).  An eviction is a record that coalescing
 * does not hold back: map churn's two mappings, in one slot, once lost 384
 * of them under pressure.  Two CPUs that key one VMA in both ways at once
 * only split its changes: the loader adds the slots up.
 */
static __always_inline struct mw_slot *slot_get(struct mw_proc *p, __u32 tgid,
						__u64 vm_start)
{
	__u32 i = slot_index(vm_start);
	struct mw_slot *s = &p->slots[i], *s2 = &p->slots[i ^ 1];
	__u64 cur = s->vm_start, cur2 = s2->vm_start;

	if (cur == vm_start)
		return s;
	if (cur2 == vm_start)
		return s2;
	/* A free or harvested way is taken over (its key stays behind after
	 * a harvest, naming the VMA that last faulted there). */
	if (!cur || slot_empty(s))
		return slot_claim(s, cur, vm_start);
	if (!cur2 || slot_empty(s2))
		return slot_claim(s2, cur2, vm_start);
	/* Both hold another VMA's changes: flush the first way's. */
	slot_evict(p, tgid, s);
	return slot_claim(s, cur, vm_start);
}

/* Note that slot i holds something, after adding to it: a harvest reads
 * only the slots noted since the last one (a call per slot costs). */
static __always_inline void slot_note(struct mw_proc *p, __u32 i)
{
	__u64 bit = 1ULL << (i & (MW_SLOTS - 1));

	if (!(p->slot_dirty & bit))
		mw_or(&p->slot_dirty, bit);
}

/* Add to p's slot (index + 1) slot1, and note it for the next harvest. */
static __always_inline void slot_add_rss(struct mw_proc *p, __u32 slot1, __u32 member,
					 __s64 delta)
{
	struct mw_slot *s = &p->slots[(slot1 - 1) & (MW_SLOTS - 1)];
	__s64 total;

	if (member >= MW_NR_MEMBERS)
		return;
	mw_add(&s->rss[member], delta);
	if (member != MW_SWAP) {
		total = mw_fetch_add(&s->total, delta) + delta;
		if (total > s->peak)
			s->peak = total;
	}
	slot_note(p, slot1 - 1);
}

struct harvest_ctx {
	struct mw_proc *p;
	struct mw_deltas_rec *out;	/* out->nr: slots written so far */
};

/* Index of the lowest set bit of x (x != 0), without branches: a branch
 * per bit would multiply the states the verifier walks in harvest_one(). */
static const volatile __u8 debruijn64[64] = {
	0, 1, 56, 2, 57, 49, 28, 3, 61, 58, 42, 50, 38, 29, 17, 4,
	62, 47, 59, 36, 45, 43, 51, 22, 53, 39, 33, 30, 24, 18, 12, 5,
	63, 55, 48, 27, 60, 41, 37, 16, 46, 35, 44, 21, 52, 32, 23, 11,
	54, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9, 13, 8, 7, 6,
};

static __always_inline __u32 lowest_bit(__u64 x)
{
	return debruijn64[((x & -x) * 0x03f79d71b4ca8b09ULL) >> 58];
}

/* Harvest the lowest slot noted since the last harvest. */
static long harvest_one(__u32 unused, struct harvest_ctx *c)
{
	__u64 dirty = c->p->slot_dirty;
	struct mw_slot *s;
	__u32 i, n;

	/* The mask is read from the map, not carried in c: the verifier
	 * then sees the same state each step and converges at once. */
	if (!dirty)
		return 1;
	/* clang 19 drops the mask (the table's values are all below 64),
	 * and the verifier, which sees a u8 from the table, refuses the
	 * index: the barrier keeps it. */
	i = lowest_bit(dirty);
	barrier_var(i);
	i &= MW_SLOTS - 1;
	mw_and(&c->p->slot_dirty, ~(1ULL << i));
	s = &c->p->slots[i];

	if (!s->vm_start || slot_empty(s))
		return 0;
	/* The count lives in the record (map memory), not in c: a count on
	 * the stack would be a new constant each step, and the verifier
	 * would walk the body once per value. */
	n = c->out->nr;
	slot_take(&c->out->slots[n & (MW_SLOTS - 1)], s);
	c->out->nr = n + 1;
	return 0;
}

/* Move every non-empty slot into one MW_REC_DELTAS record: one step per slot
 * added to since the last harvest, none when nothing was.  bpf_loop (5.17+)
 * keeps the verifier from walking 64 copies of the body.  next: the header
 * of the record that follows, whose thread and time the deltas share (one
 * clock read per syscall), or NULL to read them here. */
static __always_inline void harvest_emit(struct mw_proc *p, __u32 tgid, __u32 tid, __u64 ts);

#ifdef MW_COMPAT
/*
 * Without bpf_loop() the 64 steps are a bounded loop the verifier walks
 * step by step, at every call site (some ten, several inlined into each
 * program): kmem:rss_stat alone took 600,000 instructions on 5.10.  A
 * global function is verified once, on its own; its arguments are plain
 * numbers, so it finds the process again by tgid.  tid 0: now.
 */
__noinline int compat_harvest(__u32 tgid, __u32 tid, __u64 ts)
{
	struct mw_proc *p = proc_lookup(tgid);

	if (p)
		harvest_emit(p, tgid, tid, ts);
	return 0;
}
#endif

static __always_inline void slots_harvest_before(struct mw_proc *p, __u32 tgid,
						 const struct mw_rec_hdr *next)
{
	if (!p->slot_dirty)
		return;
#ifdef MW_COMPAT
	compat_harvest(tgid, next ? next->tid : 0, next ? next->ts : 0);
#else
	harvest_emit(p, tgid, next ? next->tid : 0, next ? next->ts : 0);
#endif
}

/* The harvest's record, with the thread and time of the record that
 * follows it (tid 0: read them here). */
static __always_inline void harvest_emit(struct mw_proc *p, __u32 tgid, __u32 tid, __u64 ts)
{
	union mw_scratch *sc = scratch_get(1);
	struct harvest_ctx c = { .p = p };
	__u64 size, n;

	if (!sc || !p->slot_dirty)
		return;
	c.out = &sc->deltas;
	c.out->nr = 0;
	/* Most often one slot (the mapping the thread faulted in since its
	 * last call): a direct call, not bpf_loop's helper and callbacks. */
	harvest_one(0, &c);
	if (p->slot_dirty)
		mw_loop(MW_SLOTS, harvest_one, &c);
	n = c.out->nr;
	if (!n || n > MW_SLOTS)
		return;
	if (tid)
		hdr_set(&sc->deltas.hdr, MW_REC_DELTAS, tgid, tid, p->seq, ts);
	else
		hdr_fill(&sc->deltas.hdr, MW_REC_DELTAS, tgid, p->seq);
	/* Counted before it is out: a re-measure that reads the count while
	 * the record is on its way waits for it (user/trace.c). */
	c.out->hseq = (__u32)mw_add_fetch(&p->harvests, 1);
	size = offsetof(struct mw_deltas_rec, slots) + n * sizeof(struct mw_slot);
	if (size > sizeof(sc->deltas))
		size = sizeof(sc->deltas);
	emit(p, &sc->deltas, size);
}

static __always_inline void slots_harvest(struct mw_proc *p, __u32 tgid)
{
	slots_harvest_before(p, tgid, NULL);
}

/* The current thread's state; create: make it if missing. */
static __always_inline struct mw_thread *thread_get(struct task_struct *task,
						    bool create)
{
	struct mw_thread *t;
#ifdef MW_COMPAT
	__u32 tid = MW_LD(task, pid), zero = 0;
	struct mw_thread *z;

	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t && create && (z = bpf_map_lookup_elem(&thread_zero, &zero))) {
		bpf_map_update_elem(&threads, &tid, z, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&threads, &tid);
	}
#else
	t = bpf_task_storage_get(&threads, task, 0,
				 create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
#endif
	if (!t && create)
		stat_inc(MW_STAT_THREAD_FAIL);
	return t;
}

#endif /* MW_STATE_BPF_H */
