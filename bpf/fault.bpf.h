/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fault.bpf.h — the hot path: page faults and RSS counter updates.
 *
 * kmem:rss_stat carries the exact value of one of the mm's RSS counters
 * after every change.  We keep the last value per counter (the process
 * totals) and attribute the change to a mapping: the syscall the thread is
 * in (carried by that syscall's record), else the VMA of the fault it is
 * handling, else "unattributed".  Nothing here is streamed per event.
 *
 * Every fault of every process on the host runs page_fault_user, and every
 * RSS change runs rss_stat: on the way to a traced process's counters both
 * avoid helper calls where a plain load will do (on CPUs with return-thunk
 * mitigations each call and return costs tens of cycles).
 */
#ifndef MW_FAULT_BPF_H
#define MW_FAULT_BPF_H

/* Faults finished by this task so far (mm_account_fault() bumps these at the
 * end of every fault, exception or get_user_pages alike).  task is the BTF
 * pointer of the current task: direct loads, no helper call per fault. */
static __always_inline __u64 task_faults_done(struct task_struct *task)
{
	return MW_LD(task, min_flt) + MW_LD(task, maj_flt);
}

static __always_inline struct mw_cpu_fault *cpu_fault(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&fault_cpu, &zero);
}

/* procs' generation: it moves whenever the loader adds or drops a process,
 * and an index noted under another is stale. */
static __always_inline __u32 procs_gen_now(void)
{
	__u32 zero = 0, *gen = bpf_map_lookup_elem(&procs_gen, &zero);

	return gen ? *gen : 0;
}

/* The index in procs of the current task's process if it is traced, else
 * ~0: from what this CPU noted when the task last faulted here under
 * generation gen (procs_gen_now(), which the caller may have read already:
 * an inlined array lookup), else by tgid (a hash lookup: a call, and the
 * cost of a few dozen instructions on every RSS change and traced syscall
 * on the host). */
static __always_inline __u32 proc_current_idx(struct task_struct *task, __u32 tgid, __u32 gen)
{
	struct mw_cpu_fault *c = cpu_fault();

	if (c && cpu_fault_of(c, task, tgid) && c->gen == gen)
		return c->traced ? c->pidx : ~0U;
	return proc_index_of(tgid);
}

static __always_inline struct mw_proc *proc_current(struct task_struct *task, __u32 tgid)
{
	/* One lookup after the branches, so that the verifier carries one
	 * pointer on through the caller, not one per way of finding it. */
	return proc_at(proc_current_idx(task, tgid, procs_gen_now()), tgid);
}

/* Take the faults CPU c counted for its task and gave to no mapping yet
 * (the process has them already: on_fault); returns how many. */
static __always_inline __u32 cpu_faults_take(struct mw_cpu_fault *c)
{
	__u32 n = c->pending;

	c->pending = 0;
	return n;
}

/* Key 0's fault, perhaps still in progress, before another task's takes
 * its place: into the CPU's ring (state.bpf.h: fault_cpu). */
static __always_inline void fault_set_aside(struct mw_cpu_fault *c)
{
	__u32 k = 1 + c->ring++ % MW_FAULT_RING;
	struct mw_cpu_fault *r = bpf_map_lookup_elem(&fault_cpu, &k);

	if (!r)
		return;
	*r = *c;
	r->pending = 0;		/* for the task that takes its place */
}

/* Does CPU c's last fault wait for its VMA's slot?  Counted (pending),
 * it moved no counter (copy on write: no RSS change took it to a slot),
 * and it is in progress or over (MW_FLT_LEFT), not gone. */
static __always_inline bool cpu_fault_waits(const struct mw_cpu_fault *c)
{
	return c->pending && !c->f.kind && c->f.flt != MW_FLT_NONE;
}

/*
 * CPU c's last fault, from a traced thread, waits for its slot, and now
 * another task's fault takes the CPU, the loader's procs change under it,
 * or the thread exits.  It counts in its VMA's slot: the one c last found
 * for the process when the fault is inside it and nothing structural has
 * happened since, as in a run of such faults; else the slot keyed by the
 * fault's page, which the loader counts in the mapping that contains it
 * (resolve_fault_vma()'s EBUSY case).  No lookup in another task's mm.  A
 * fork moves the parent's sequence: the parent's first copy-on-write
 * fault after it, still here when the loader adds the child (procs'
 * generation moves), takes the second way.  It went to no mapping before
 * (tests/workloads/faultkinds: the region had 1023 of its 1024 now and
 * then).
 */
static __noinline void cpu_fault_leave(struct mw_cpu_fault *c)
{
	struct mw_proc *p;
	struct mw_slot *s;
	__u64 key;
	__u32 tgid;

	if (!c || !c->traced || !cpu_fault_waits(c))
		return;
	tgid = c->tgid;
	p = proc_at(c->pidx, tgid);
	if (!p)
		return;
	key = fault_vma_cached(&c->f, tgid, p->seq) ? c->f.cache_start : c->f.addr & MW_PAGE_MASK;
	if (!key)
		return;
	s = slot_get(p, tgid, key);
	if (!s)
		return;
	mw_add(&s->faults, cpu_faults_take(c));
	slot_note(p, s - p->slots);
}

/*
 * The current thread of a traced process enters a traced syscall, or exits
 * (place, a constant): its fault on this CPU is no longer in progress (a
 * fault that failed, SIGSEGV, did not move the count), so that the call's
 * own RSS changes do not go to it.  One that moved no counter (copy on
 * write) still counts in its VMA's slot: at the exit now, at a call's
 * entry when the thread faults here next or another task's fault takes
 * the CPU (MW_FLT_LEFT).  Placing it at the entry would carry
 * cpu_fault_leave()'s code into every traced call (make regress holds
 * sys_enter_tp to 1,000 instructions loaded).
 */
static __always_inline void cpu_fault_end(struct task_struct *task, bool place)
{
	struct mw_cpu_fault *c = cpu_fault();

	if (!c || !cpu_fault_of(c, task, MW_LD(task, tgid)))
		return;
	if (cpu_fault_waits(c)) {
		if (!place) {
			c->f.flt = MW_FLT_LEFT;
			return;
		}
		cpu_fault_leave(c);
	}
	cpu_faults_take(c);
	c->f.flt = MW_FLT_NONE;
}

/* Kernels before 6.2 count a task's own faults in per-task caches (below). */
const volatile bool split_rss = false;
static __noinline void split_fault(struct mw_proc *p, struct task_struct *task,
				   __u64 addr, bool user);
static __noinline __u32 cpu_fault_slot(struct mw_proc *p, __u32 tgid,
				       struct task_struct *task, struct mw_cpu_fault *c);

/* Note a fault of the current task on this CPU.  Finding its VMA waits until
 * the fault changes RSS (most do), in a process we trace; with --stacks it
 * is found now, to take the stack on this program's context. */
static __always_inline void on_fault(void *ctx, __u64 addr, bool user)
{
	struct task_struct *task = mw_current_task();
	struct mw_cpu_fault *c = cpu_fault();
	__u32 gen = procs_gen_now(), tgid = MW_LD(task, tgid);

	if (!c)
		return;
	if (!cpu_fault_of(c, task, tgid) || c->gen != gen) {
		/* Count only the faults of traced processes, from when the
		 * loader added them.  What the last task counted here and
		 * gave to no mapping (a fault that changed no RSS: copy on
		 * write, a racing thread's) stays in its process's total,
		 * and in its mapping's where that is known. */
		cpu_fault_leave(c);
		cpu_faults_take(c);
		if (c->traced && c->f.flt != MW_FLT_NONE && c->f.flt != MW_FLT_LEFT)
			fault_set_aside(c);
		c->task = (__u64)task;
		c->tgid = tgid;
		c->gen = gen;
		c->pidx = proc_index_of(tgid);
		c->traced = proc_at(c->pidx, tgid) != NULL;
	} else if (c->traced && cpu_fault_waits(c)) {
		/* Its last fault here moved no counter (copy on write, a
		 * write-protect fault), in progress till now or over
		 * (MW_FLT_LEFT): it counts in its own VMA's slot, not in
		 * that of the next fault that moves one. */
		cpu_fault_slot(proc_at(c->pidx, tgid), tgid, task, c);
	}
	c->kernel = !user;
	c->f.addr = addr;
	c->f.flt = task_faults_done(task);
	c->f.vma = MW_FAULT_VMA_UNKNOWN;
	c->f.kind_seen = 0;
	c->f.kind = 0;
	if (c->traced) {
		struct mw_proc *p = proc_at(c->pidx, tgid);

		if (!p || (p->flags & MW_PROC_DEAD))
			return;
		/* The process's count moves with every fault, on whatever
		 * CPU: a marker (mark.bpf.h) reads it where the kernel's
		 * stood, even while a worker thread's fault that changed no
		 * RSS waits here for a mapping to count it in (ONNX
		 * Runtime's copy-on-write faults after a fork landed
		 * iterations late).  The CPU's own count goes to the slot
		 * of the next RSS change (cpu_fault_slot). */
		mw_add(user ? &p->faults : &p->kfaults, 1);
		c->pending++;
		/* Few counter changes to find a mapping at: pre-6.2 kernels
		 * count each fault in its slot now. */
		if (split_rss) {
			split_fault(p, task, addr, user);
			cpu_faults_take(c);
		}
		if (want_stacks)
			fault_stack(ctx, p, tgid, task, &c->f);
	}
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(page_fault_user, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	on_fault(ctx, address, true);
	return 0;
}

/* Kernel-mode faults on user addresses: read() into an untouched buffer,
 * copy_to_user in general.  They change RSS like any other fault.  Our own
 * reads of a thread's user stack (--stacks) may fault; they are not the
 * process's, and must not replace the fault it is in. */
static __always_inline void on_kernel_fault(void *ctx, __u64 addr)
{
	struct mw_thread *t = thread_get(mw_current_task(), false);

	if (!t || !t->walking)
		on_fault(ctx, addr, false);
}

SEC("tp_btf/page_fault_kernel")
int BPF_PROG(page_fault_kernel, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	if (mw_user_addr(address))
		on_kernel_fault(ctx, address);
	return 0;
}

/*
 * VM that changed with no syscall (a stack that grew, the [uprobes] page):
 * a structural record of [start, end), with its VMA's state if pr is given.
 * The record ends after what it holds (syscalls.bpf.h: sys_exit_record).
 */
static __always_inline void vmgrow_emit(struct mw_proc *p, __u32 tgid, struct mm_struct *mm,
					__u64 total_vm, __u64 addr, __u64 start, __u64 end,
					__u32 opflags, const struct vma_probe *pr)
{
	__u64 size = offsetof(struct mw_op_rec, vmas);
	union mw_scratch *sc;
	struct mw_op_rec *rec;

	proc_note_vm(p, total_vm, MW_LD(mm, hiwater_vm));
	slots_harvest(p, tgid);
	sc = scratch_get(0);
	if (!sc)
		return;
	rec = &sc->op;
	__builtin_memset(rec, 0, offsetof(struct mw_op_rec, vmas) + sizeof(struct mw_vma));
	rec->op = MW_OP_VMGROW;
	rec->opflags = opflags;
	rec->start = start;
	rec->end = end;
	rec->args[0] = addr;
	rec->total_vm = total_vm;
	rec->start_stack = MW_LD(mm, start_stack);
	if (pr) {
		rec->nr_vmas = 1;
		rec->vmas[0].start = pr->start;
		rec->vmas[0].end = pr->end;
		rec->vmas[0].flags = pr->flags;
		size += sizeof(struct mw_vma);
	}
	hdr_fill(&rec->hdr, MW_REC_OP, tgid, mw_add_fetch(&p->seq, 1));
	emit(p, rec, size);
}

/*
 * The fault that produced this RSS change was outside every VMA, and VM grew:
 * the stack was expanded.  Report it as a structural record so the loader's
 * table follows (KERNEL-NOTES: the stack grows without a syscall).
 */
static __always_inline void note_vm_growth(struct mw_proc *p, __u32 tgid,
					   struct mw_fault *f)
{
	struct mm_struct *mm = task_mm(mw_current_task());
	__u64 total_vm = MW_LD(mm, total_vm), start = f->addr & MW_PAGE_MASK;

	if (total_vm == p->total_vm)
		return;
	p->calls[MW_OP_VMGROW]++;
	vmgrow_emit(p, tgid, mm, total_vm, f->addr, start, start + MW_PAGE_SIZE, 0, NULL);
	/* Later faults in the grown stack key their slot by its new start. */
	f->vma = start;
}

/*
 * Kernels without the exceptions tracepoints (arm64: 6.16 made the header
 * generic, but only x86 and riscv instantiate it): the fault handler every
 * architecture calls, handle_mm_fault(vma, address, flags, regs) since 5.9
 * (commit bce617edecad).  fentry where the kernel can attach it, else a
 * kprobe (the loader probes: capture/kernel.c).  Like the tracepoints, it
 * counts what mm_account_fault() counts in min_flt/maj_flt, once per fault:
 *   - regs NULL: get_user_pages() faulting for a syscall, not an exception
 *     (the x86 tracepoints do not see these either);
 *   - FAULT_FLAG_TRIED: the same fault again after VM_FAULT_RETRY;
 *   - FAULT_FLAG_USER: from user mode, else a kernel access to a user
 *     address (copy_to_user), which page_fault_kernel counts on x86.
 * The flags are stable bits of enum fault_flag (include/linux/mm_types.h).
 */
#define MW_FAULT_FLAG_TRIED	(1U << 5)
#define MW_FAULT_FLAG_USER	(1U << 6)

/*
 * The fault below the stack that grew it.  On this hook the VMA has grown
 * already (lock_mm_and_find_vma() or the arch's expand_stack(), before
 * handle_mm_fault()), where the tracepoints fire before: resolve_fault_vma()
 * would not see the growth at the next look when that comes after the
 * next fault (the per-task caches before 6.2), so it is noted here.
 */
static __noinline void mm_fault_stack(__u64 addr)
{
	struct task_struct *task = mw_current_task();
	struct mw_cpu_fault *c = cpu_fault();
	__u32 tgid = MW_LD(task, tgid);
	struct mw_thread *t;
	struct mw_proc *p;

	if (!c || !c->traced || !cpu_fault_of(c, task, tgid))
		return;
	p = proc_at(c->pidx, tgid);
	if (!p || (p->flags & MW_PROC_DEAD) ||
	    MW_LD(task_mm(task), total_vm) == p->total_vm)
		return;
	if (!split_rss) {
		note_vm_growth(p, tgid, &c->f);
		return;
	}
	t = thread_get(task, false);
	if (t && t->in_fault && t->f.addr == addr)
		note_vm_growth(p, tgid, &t->f);
}

/* The current task's fault, set aside on this CPU while it slept. */
static __always_inline struct mw_cpu_fault *aside_fault(struct task_struct *task, __u64 flt)
{
	__u32 key;

#pragma unroll
	for (int i = 1; i <= MW_FAULT_RING; i++) {
		struct mw_cpu_fault *c;

		key = i;
		c = bpf_map_lookup_elem(&fault_cpu, &key);
		if (c && c->task == (__u64)task && c->f.flt == flt)
			return c;
	}
	return NULL;
}

/*
 * The same fault once more.  Since 6.4 the arch handler first tries under
 * the VMA's own lock (FAULT_FLAG_VMA_LOCK); where that gives up
 * (VM_FAULT_RETRY: a shmem or file page it must wait for, an anon_vma to
 * set up) it takes mmap_lock and calls handle_mm_fault() again, without
 * FAULT_FLAG_TRIED.  mm_account_fault() does not count an attempt that
 * returned VM_FAULT_RETRY, so the task's count has not moved since this
 * CPU noted its fault at the same address: it is one fault (shm/cmd on
 * arm64 16k counted 2852 for the kernel's 2630 before this).  When another
 * task faulted on the CPU between the two attempts, the first is in the
 * CPU's ring (6.12 arm64: mtiter's first iteration counted 1 high).
 */
static __always_inline bool mm_fault_again(struct mw_cpu_fault *c, struct task_struct *task,
					   __u64 addr)
{
	__u64 flt = task_faults_done(task);

	if (c && c->task == (__u64)task)
		return c->f.addr == addr && c->f.flt == flt;
	c = aside_fault(task, flt);
	return c && c->f.addr == addr;
}

static __always_inline void on_mm_fault(void *ctx, struct vm_area_struct *vma, __u64 address,
					__u32 flags, void *regs)
{
	if (!regs || (flags & MW_FAULT_FLAG_TRIED))
		return;
	/* Nothing new when it is the same fault again: counted, its VMA
	 * found at its RSS change. */
	if (!mm_fault_again(cpu_fault(), mw_current_task(), address)) {
		if (flags & MW_FAULT_FLAG_USER)
			on_fault(ctx, address, true);
		else
			on_kernel_fault(ctx, address);
	}
	if ((BPF_CORE_READ(vma, vm_flags) & MW_VM_GROWSDOWN) &&
	    BPF_CORE_READ(vma, vm_start) == (address & MW_PAGE_MASK))
		mm_fault_stack(address);
}

SEC("fentry/handle_mm_fault")
int BPF_PROG(mm_fault_fentry, struct vm_area_struct *vma, unsigned long address,
	     unsigned int flags, struct pt_regs *regs)
{
	on_mm_fault(ctx, vma, address, flags, regs);
	return 0;
}

SEC("kprobe/handle_mm_fault")
int BPF_KPROBE(mm_fault_kprobe, struct vm_area_struct *vma, unsigned long address,
	       unsigned int flags, struct pt_regs *regs)
{
	on_mm_fault(ctx, vma, address, flags, regs);
	return 0;
}

/*
 * The kernel's [uprobes] page: where a uprobe hit steps the probed
 * instruction out of line (the first hit that cannot emulate it maps it, at
 * mm->uprobes_state.xol_area->vaddr).  0: none, or no uprobes here.
 */
struct uprobes_state___mw {
	struct xol_area *xol_area;
} __attribute__((preserve_access_index));

struct mm_struct___mw {
	struct uprobes_state___mw uprobes_state;
} __attribute__((preserve_access_index));

static __always_inline __u64 xol_vaddr(struct mm_struct *mm)
{
	struct mm_struct___mw *m = (void *)mm;
	struct xol_area *x;

	if (!bpf_core_field_exists(m->uprobes_state))
		return 0;
	x = BPF_CORE_READ(m, uprobes_state.xol_area);
	return x ? BPF_CORE_READ(x, vaddr) : 0;
}

/*
 * The first fault in the [uprobes] page, which the kernel mapped with no
 * syscall right after a uprobe hit (memwatch's own --phase-at/--iter
 * markers among them): one record, so that the loader knows the page is
 * its own and counts it in the boundary the hit made.
 */
static __always_inline void note_xol(struct mw_proc *p, __u32 tgid, struct mw_fault *f,
				     const struct vma_probe *pr)
{
	struct mm_struct *mm = task_mm(mw_current_task());

	p->xol_start = pr->start;
	vmgrow_emit(p, tgid, mm, MW_LD(mm, total_vm), f->addr, pr->start, pr->end,
		    MW_OPF_XOL, pr);
}

/* ---- the packed last change of one counter (bpf/memwatch.h) -------- */

static __always_inline __u64 w_pack(__s64 pages, __u32 slot1, __s64 dpages)
{
	__u64 d = dpages > 32767 || dpages < -32767 ? 0 : (__u64)dpages & 0xffff;

	return ((__u64)pages << MW_W_VAL_SHIFT) | (d << MW_W_DELTA_SHIFT) |
	       (slot1 & MW_W_SLOT_MASK);
}

static __always_inline __s64 w_val(__u64 w)
{
	return (__s64)(w >> MW_W_VAL_SHIFT);
}

static __always_inline __s64 w_delta(__u64 w)
{
	return (__s16)((w >> MW_W_DELTA_SHIFT) & 0xffff);
}

/*
 * kmem:rss_stat changes the counter, computes its value, then runs us; on two
 * CPUs both changes can land before either value is computed, or the values
 * can reach us in the other order.  Either way the change that reaches us
 * first carries both, and ours arrives with a value equal to it or strictly
 * inside its jump.  One atomic exchange of the packed word gives us the
 * previous change's value, size and slot together, so we can take our part
 * back for our own mapping: exactly, when our value is inside the jump; half
 * of it when the values are equal (concurrent anonymous faults change RSS by
 * the same amount, a page or a huge page; file fault-around does not, so
 * file pages stay where they landed).  Process totals never depend on this.
 */
static __always_inline bool overtaken(struct mw_proc *p, __u32 member, __u32 slot1,
				      __s64 pages, __u64 w_old, __u64 mine, __s64 *own)
{
	__u32 prev_slot1 = w_old & MW_W_SLOT_MASK;
	__s64 old = w_val(w_old), dprev = w_delta(w_old), prev_old = old - dprev, mv;

	if (!slot1 || !prev_slot1 || prev_slot1 == slot1 || !dprev)
		return false;
	if ((prev_old < pages && pages < old) || (prev_old > pages && pages > old))
		mv = pages - prev_old;		/* we came second, computed first */
	else if (pages == old && member != MW_FILE && (dprev >= 2 || dprev <= -2))
		mv = dprev > 0 ? dprev >> 1 : -((-dprev) >> 1); /* both changed first */
	else
		return false;
	*own = mv;
	slot_add_rss(p, prev_slot1, member, -(mv << page_shift));
	slot_add_rss(p, slot1, member, mv << page_shift);
	if (mw_cmpxchg(&p->rss_word[member & (MW_NR_MEMBERS - 1)], mine,
					w_pack(old, prev_slot1, dprev - mv)) == mine)
		p->rss[member & (MW_NR_MEMBERS - 1)] = old << page_shift;
	p->reorders++;
	return true;
}

/* The VMA start of fault f: the VMA the previous lookup found while nothing
 * structural has happened in the process since, else the kernel's. */
static __always_inline void resolve_fault_vma(struct mw_proc *p, __u32 tgid,
					      struct task_struct *task, struct mw_fault *f)
{
	struct vma_probe pr = {};
	__u64 addr = f->addr;
	__u32 seq = p->seq;
	long err;

	if (fault_vma_cached(f, tgid, seq)) {
		f->vma = f->cache_start;
		return;
	}
	err = vma_at(task, addr, &pr);
	/* The stack grew in this fault, before RSS did: a grows-down VMA that
	 * now starts at the faulting page, and VM changed with no syscall. */
	if (err == 0 && (pr.flags & MW_VM_GROWSDOWN) && pr.start == (addr & MW_PAGE_MASK) &&
	    MW_LD(task_mm(task), total_vm) != p->total_vm) {
		note_vm_growth(p, tgid, f);
		f->cache_end = 0;
		return;
	}
	/* ... or a uprobe hit mapped the [uprobes] page, and this is its
	 * first touch (the step out of line). */
	if (err == 0 && !p->xol_start && pr.start == xol_vaddr(task_mm(task)))
		note_xol(p, tgid, f, &pr);
	if (err == 0) {
		fault_vma_note(f, pr.start, pr.end, tgid, seq);
		f->vma = pr.start;
	} else if (err == -16 /* EBUSY: another thread is changing the mm */) {
		/* Any address inside the VMA will do: the loader looks the
		 * key up as "the mapping containing it". */
		f->cache_end = 0;
		f->vma = addr & MW_PAGE_MASK;
	} else {
		f->cache_end = 0;
		f->vma = 0;
	}
}

/*
 * A traced syscall of process tgid has just reported [start, end) as a VMA,
 * as of its structural sequence seq: the next fault there (the first touch
 * of what it mapped, most often on this CPU) finds its VMA in the cache and
 * needs no bpf_find_vma().
 */
static __always_inline void cpu_fault_hint(__u32 tgid, __u32 seq, __u64 start, __u64 end)
{
	struct mw_cpu_fault *c;

	if (start >= end)
		return;
	c = cpu_fault();
	if (!c)
		return;
	fault_vma_note(&c->f, start, end, tgid, seq);
}

/* CPU c's fault is the current thread's, still in progress. */
static __always_inline bool cpu_fault_mine(struct mw_cpu_fault *c, struct task_struct *task)
{
	return c && c->task == (__u64)task && c->f.flt == task_faults_done(task);
}

/* The slot (index + 1) of the VMA of the fault noted on CPU c, 0: none.  The
 * faults c counted, this one among them, now go to that slot.
 * A subprogram: the verifier meets it once, however the caller found c. */
static __noinline __u32 cpu_fault_slot(struct mw_proc *p, __u32 tgid,
				       struct task_struct *task, struct mw_cpu_fault *c)
{
	__u64 faults;
	struct mw_slot *s;

	if (!p || !c)
		return 0;
	faults = cpu_faults_take(c);
	if (c->f.vma == MW_FAULT_VMA_UNKNOWN)
		resolve_fault_vma(p, tgid, task, &c->f);
	if (!c->f.vma)
		return 0;
	s = slot_get(p, tgid, c->f.vma);
	if (!s)
		return 0;
	if (faults) {
		mw_add(&s->faults, faults);
		slot_note(p, s - p->slots);
	}
	return (__u32)(s - p->slots) + 1;
}

struct moved_ctx {
	__u64 task, flt;
	__u32 cpu, key;
};

static long find_moved(__u32 cpu, struct moved_ctx *m)
{
	__u32 key;

	/* Unrolled: the key's address is taken, and a counter kept in memory
	 * looks like an infinite loop to the verifier. */
#pragma unroll
	for (int i = 0; i <= MW_FAULT_RING; i++) {
		struct mw_cpu_fault *c;

		key = i;
		c = bpf_map_lookup_percpu_elem(&fault_cpu, &key, cpu);
		if (c && c->task == m->task && c->f.flt == m->flt) {
			m->cpu = cpu;
			m->key = i;
			return 1;
		}
	}
	return 0;
}

/* Set by the loader: the fault programs are attached. */
const volatile bool user_faults = true;

/* A change by a thread in no traced syscall and in no fault that this CPU
 * holds for it: a fault that slept, while another task's fault took its
 * place here (set aside in this CPU's ring), or that woke on another CPU.
 * Found where it began, there or in that CPU's ring; gone (counted) once
 * MW_FAULT_RING other tasks' faults have come since. */
static __always_inline struct mw_cpu_fault *moved_fault(struct task_struct *task)
{
	struct moved_ctx m = { .task = (__u64)task, .flt = task_faults_done(task),
			       .cpu = ~0U };
	struct mw_cpu_fault *c;

	if (user_faults && (c = aside_fault(task, m.flt))) {
		stat_inc(MW_STAT_FAULT_MOVED);
		return c;
	}
#ifdef MW_COMPAT
	/* A callback's address in the code (BPF_PSEUDO_FUNC, 5.13) makes a
	 * 5.10 verifier count subprograms wrong, even in dead code. */
	return NULL;
#endif
	if (!user_faults ||
	    !bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_map_lookup_percpu_elem))
		return NULL;	/* 5.19+ */
	bpf_loop(nr_cpus, find_moved, &m, 0);
	if (m.cpu == ~0U) {
		stat_inc(MW_STAT_FAULT_NONE);
		return NULL;
	}
	stat_inc(MW_STAT_FAULT_MOVED);
	return bpf_map_lookup_percpu_elem(&fault_cpu, &m.key, m.cpu);
}

/*
 * The thread in a traced syscall that owns a change the current thread makes
 * now, else NULL and *slot1: the slot (index + 1) of the VMA of the fault it
 * is in, 0 if none.  A user-mode fault runs no syscall, so the common case, a
 * user fault begun on this CPU, needs nothing of the thread's state.
 */
static __always_inline struct mw_thread *change_owner(struct mw_proc *p, __u32 tgid,
						      struct task_struct *task, __u32 member,
						      __u32 *slot1, struct mw_fault **f)
{
	struct mw_cpu_fault *c = cpu_fault();
	struct mw_thread *t;

	if (member == MW_SWAP || !cpu_fault_mine(c, task) || c->kernel) {
		t = thread_get(task, false);
		if (t && t->sys_op)
			return t;
		if (member == MW_SWAP) {
			/* A swap entry gone in a fault: a swap-in (its
			 * slot took the anonymous page). */
			if (cpu_fault_mine(c, task))
				*f = &c->f;
			return NULL;
		}
		if (!cpu_fault_mine(c, task))
			c = moved_fault(task);
	}
	if (c) {
		*slot1 = cpu_fault_slot(p, tgid, task, c);
		*f = &c->f;
	}
	return NULL;
}

/* A change of a traced process's counter goes to the syscall that made it
 * (its record carries it), else to the slot of its fault's VMA, else it is
 * unattributed: made by a call memwatch does not trace, outside any fault
 * (a driver pinning pages in an ioctl, cudaMallocHost's 256 MiB on
 * NVIDIA's; io_uring_register; mlockall), at no address it knows, so the
 * loader measures the mappings again, as for another context's change. */
static __always_inline void change_credit(struct mw_proc *p, struct mw_thread *sys,
					  __u32 slot1, __u32 member, __s64 delta)
{
	if (sys)
		sys->sys_rss[member & (MW_NR_MEMBERS - 1)] += delta;
	else if (slot1)
		slot_add_rss(p, slot1, member, delta);
	else {
		mw_add(&p->unattributed[member & (MW_NR_MEMBERS - 1)], delta);
		mw_add(&p->external_changes, 1);
	}
}

#include "faultkind.bpf.h"

/* Record one counter change of a traced process made by its own thread. */
static __always_inline void own_change(struct mw_proc *p, struct task_struct *task,
				       __u32 tgid, __u32 member, __s64 size)
{
	__s64 pages = size >> page_shift, delta, own = 0;
	__u32 slot1 = 0;
	struct mw_fault *f = NULL;
	bool over;
	struct mw_thread *sys = change_owner(p, tgid, task, member, &slot1, &f);
	__u64 mine = w_pack(pages, slot1, 0), w_old;

	barrier_var(member);
	member &= MW_NR_MEMBERS - 1;
	w_old = mw_xchg(&p->rss_word[member], mine);
	over = overtaken(p, member, slot1, pages, w_old, mine, &own);
	/* One call site: the verifier walks a subprogram once per site. */
	fault_kind_note(p, slot1, f, member, over ? own : pages - w_val(w_old));
	if (over)
		return;
	p->rss[member] = size;
	delta = (pages - w_val(w_old)) << page_shift;
	/* Publish this change's size for the next one to check against. */
	mw_cmpxchg(&p->rss_word[member], mine, w_pack(pages, slot1, pages - w_val(w_old)));
	change_credit(p, sys, slot1, member, delta);
}

/*
 * A change made from another context: reclaim, khugepaged, KSM, ptrace and
 * /proc/PID/mem peeks, or another process's call that names the addresses
 * (remote.bpf.h: r, which then carries it to the loader).  The others have
 * no address: external_changes tells the loader to measure the process's
 * mappings again (user/trace.c).
 */
static __always_inline void external_change(struct mw_proc *p, __u32 member, __s64 size,
					    struct mw_remote_call *r)
{
	__s64 pages = size >> page_shift, delta;
	__u64 w_old;

	barrier_var(member);	/* keep the mask: the verifier needs the bound */
	member &= MW_NR_MEMBERS - 1;
	w_old = mw_xchg(&p->rss_word[member], w_pack(pages, 0, 0));
	delta = (pages - w_val(w_old)) << page_shift;
	if (split_rss)	/* before 6.2: the mm's counter is not all of RSS */
		mw_add(&p->rss[member], delta);
	else
		p->rss[member] = size;
	mw_add(&p->external[member], delta);
	if (r)
		mw_add(&r->rss[member], delta);
	else
		mw_add(&p->external_changes, 1);
}

static __always_inline void note_rss(struct mw_proc *p)
{
	__s64 sum = p->rss[MW_FILE] + p->rss[MW_ANON] + p->rss[MW_SHMEM];

	if (sum > (__s64)p->rss_peak)
		p->rss_peak = sum;
	if (sum > (__s64)p->phase_rss_peak)
		p->phase_rss_peak = sum;
}

#include "split_rss.bpf.h"

/* The raw rss_stat program is attached: an mm's key is its pointer.  Else
 * (the classic one), rss_key_learn pairs the two keys (below). */
const volatile bool rss_key_ptr = false;
const volatile bool learn_keys = false;

/*
 * Once as tracing of seed_tgid begins (a task iterator run by the loader):
 * its mm and its key, so that changes other contexts make to it are known
 * as its own from the start, not only after the process's next change of its
 * own (an idle process attached with -p may never make one).  The classic
 * tracepoint keys an mm by a hash of the pointer (mm_id) that nothing here
 * can compute: there the pointer is noted as the process's, and the first
 * change another context makes to it pairs the two (rss_key_learn).
 */
SEC("iter/task")
int mm_seed(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	__u32 tgid = seed_tgid;
	struct mm_struct *mm;
	struct mw_proc *p;
	__u64 key;

	if ((!rss_key_ptr && !learn_keys) || !task || MW_LD(task, tgid) != tgid)
		return 0;
	mm = MW_LD(task, mm);
	p = proc_lookup(tgid);
	if (!mm || !p || p->mm_key || (p->flags & MW_PROC_DEAD))
		return 0;
	key = (__u64)mm;
	bpf_map_update_elem(&mm_owner, &key, &tgid, BPF_ANY);
	if (rss_key_ptr) {
		p->mm_key = key;
		mw_or(&p->flags, MW_PROC_HAD_MM);
	}
	return 0;
}

/*
 * The classic tracepoint's change of an mm it could not place, handed on
 * this CPU to rss_key_learn, which runs next for the same event (probes
 * run in the order attached, the classic one first, with preemption off).
 */
struct mw_key_pending {
	__u64 mm_id;
	__s64 size;
	__u32 member;
	__u32 set;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mw_key_pending);
} key_pending SEC(".maps");

static __always_inline void key_pend(__u64 mm_id, __u32 member, __s64 size)
{
	__u32 zero = 0;
	struct mw_key_pending *k = bpf_map_lookup_elem(&key_pending, &zero);

	if (!k)
		return;
	k->mm_id = mm_id;
	k->size = size;
	k->member = member;
	k->set = 1;
}

/* ---- kmem:rss_stat -------------------------------------------------------- */

/*
 * One counter change of the mm known by key, made in the current context.
 * size: the counter's exact value (classic tracepoint); or, given mm (a BTF
 * pointer: the raw tracepoint), computed from mm, only once we know the mm is
 * traced (the tracepoint runs for every RSS change on the host).
 */
static __always_inline void rss_event(struct task_struct *task, __u64 key, bool curr,
				      __u32 member, __u32 which, __s64 size, struct mm_struct *mm)
{
	__u32 tgid = MW_LD(task, tgid);
	struct mw_remote_call *r;
	struct mw_proc *p = NULL;
	__u32 *owner;

	if (member >= MW_NR_MEMBERS)
		return;
	if (curr)
		p = proc_current(task, tgid);
	if (!p) {
		/* Another context changed a traced mm: reclaim, khugepaged, a
		 * vfork child, another process's call (remote.bpf.h), or the
		 * owner's own teardown at exit/exec. */
		owner = bpf_map_lookup_elem(&mm_owner, &key);
		if (!owner && !curr)
			owner = remote_learn(key);
		if (!owner && !curr && !mm && learn_keys)
			key_pend(key, member, size);	/* rss_key_learn, next */
		if (!owner)
			return;
		p = proc_lookup(*owner);
		if (!p || p->mm_key != key || (p->flags & MW_PROC_DEAD))
			return;
		if (!curr && tgid == *owner) {
			/* exit_mmap() of our own mm: the process as /proc
			 * last showed it is what we report. */
			p->mm_key = 0;
			return;
		}
		r = remote_of(*owner);
		if (r && r->call == MW_REMOTE_MRELEASE) {
			/* process_mrelease() reaps a killed process's memory
			 * ahead of its exit_mmap(): the same teardown. */
			p->mm_key = 0;
			return;
		}
		external_change(p, member, mm ? rss_counter_bytes(mm, which) : size, r);
		note_rss(p);
		return;
	}
	if (p->flags & MW_PROC_DEAD)
		return;
	if (p->mm_key != key && (p->flags & MW_PROC_MM_GUESSED)) {
		/* Its mm was guessed wrong (remote_learn): this is its first. */
		__u64 old = p->mm_key;

		bpf_map_delete_elem(&mm_owner, &old);
		p->mm_key = 0;
		mw_and(&p->flags, ~(MW_PROC_MM_GUESSED | MW_PROC_HAD_MM));
	} else if (p->flags & MW_PROC_MM_GUESSED) {
		mw_and(&p->flags, ~MW_PROC_MM_GUESSED);	/* guessed right */
	}
	if (p->mm_key != key) {
		/* A new mm (exec) starts from zero; the first mm we see for a
		 * process is the one the loader seeded from /proc. */
		if (p->mm_key || (p->flags & MW_PROC_HAD_MM)) {
			for (int m = 0; m < MW_NR_MEMBERS; m++) {
				p->rss[m] = 0;
				p->rss_word[m] = 0;
			}
		}
		p->mm_key = key;
		p->flags |= MW_PROC_HAD_MM;
		bpf_map_update_elem(&mm_owner, &key, &tgid, BPF_ANY);
	}
	if (split_rss) {
		/* The thread's caches first, from here: called from
		 * split_own_change() the flush's frame came fourth in a chain
		 * past the 512 bytes of stack (6.1 arm64: 544). */
		split_flush_global(tgid);
		split_own_change(p, task, tgid, member, size);
		return;
	}
	own_change(p, task, tgid, member, mm ? rss_counter_bytes(mm, which) : size);
	note_rss(p);
}

/* The raw tracepoint: no perf record to format and no counter sum for the
 * processes we do not trace.  Chosen by the loader when cpu_offsets worked. */
SEC("tp_btf/rss_stat")
int BPF_PROG(rss_stat_raw, struct mm_struct *mm, int member)
{
	struct task_struct *task = mw_current_task();
	/* The member again, as a value the verifier does not link to the
	 * first: reading the counter switches on it, and a linked copy would
	 * carry each case's constant through the rest, four walks for one. */
	__u32 which = *(volatile __u64 *)&ctx[1];

	rss_event(task, (__u64)mm, task_mm(task) == mm, member, which, -1, mm);
	return 0;
}

/* Before 6.2 an mm's counters are plain atomics: the value the classic
 * program was given, read again, tells that this is the same change. */
struct mm_rss_stat___pre62 {
	atomic_long_t count[MW_NR_MEMBERS];
} __attribute__((preserve_access_index));

struct mm_struct___pre62 {
	struct mm_rss_stat___pre62 rss_stat;
} __attribute__((preserve_access_index));

static __always_inline bool same_change(struct mm_struct *mm, __u32 member, __s64 size)
{
	struct mm_struct___pre62 *m = (void *)mm;
	long v;

	if (!bpf_core_field_exists(m->rss_stat))
		return true;	/* 6.2+ (rss_raw disabled): order alone */
	if (bpf_probe_read_kernel(&v, sizeof(v), &m->rss_stat.count[member & (MW_NR_MEMBERS - 1)]))
		return false;
	return (__s64)v << page_shift == size;
}

/*
 * Classic mode only, attached after the classic program: the same event, with
 * the mm as a pointer.  A change the classic program could not place (its
 * mm_id unknown) whose pointer mm_seed noted as a traced process's: the
 * mm_id is that process's from now on, and the change is applied.  Every
 * RSS change on the host runs this; all but those return at the first test.
 */
SEC("tp_btf/rss_stat")
int BPF_PROG(rss_key_learn, struct mm_struct *mm, int member)
{
	__u32 zero = 0, *owner, tgid;
	struct mw_key_pending *k = bpf_map_lookup_elem(&key_pending, &zero);
	__u64 key = (__u64)mm, id;
	struct mw_proc *p;

	if (!k || !k->set)
		return 0;
	k->set = 0;
	if (k->member != (__u32)member || k->member >= MW_NR_MEMBERS ||
	    !same_change(mm, k->member, k->size))
		return 0;
	owner = bpf_map_lookup_elem(&mm_owner, &key);
	if (!owner)
		return 0;
	tgid = *owner;
	p = proc_lookup(tgid);
	/* Its own exit_mmap(): what /proc last showed is what we report. */
	if (!p || p->mm_key || (p->flags & (MW_PROC_HAD_MM | MW_PROC_DEAD)) ||
	    tgid == bpf_get_current_pid_tgid() >> 32)
		return 0;
	id = k->mm_id;
	bpf_map_update_elem(&mm_owner, &id, &tgid, BPF_ANY);
	p->mm_key = id;
	mw_or(&p->flags, MW_PROC_HAD_MM);
	external_change(p, k->member, k->size, remote_of(tgid));
	note_rss(p);
	return 0;
}

/* The fallback: the classic tracepoint, whose record carries the value. */
SEC("tracepoint/kmem/rss_stat")
int rss_stat(struct trace_event_raw_rss_stat *ctx)
{
	rss_event(mw_current_task(), ctx->mm_id, ctx->curr, ctx->member, ctx->member,
		  ctx->size, NULL);
	return 0;
}

#endif /* MW_FAULT_BPF_H */
