/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fault.bpf.h — the hot path: page faults and RSS counter updates.
 *
 * kmem:rss_stat carries the exact value of one of the mm's RSS counters
 * after every change.  We keep the last value per counter (the process
 * totals) and attribute the change to a mapping: the VMA of the fault this
 * thread is handling, else the syscall it is in (carried by that syscall's
 * record), else "unattributed".  Nothing here is streamed per event.
 */
#ifndef MW_FAULT_BPF_H
#define MW_FAULT_BPF_H

static __always_inline struct mw_thread *thread_get(struct task_struct *task,
						    bool create)
{
	struct mw_thread *t;

	t = bpf_task_storage_get(&threads, task, 0,
				 create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!t && create)
		stat_inc(MW_STAT_THREAD_FAIL);
	return t;
}

/* Faults finished by this task so far (mm_account_fault() bumps these at the
 * end of every fault, exception or get_user_pages alike). */
static __always_inline __u64 task_faults_done(struct task_struct *task)
{
	return BPF_CORE_READ(task, min_flt) + BPF_CORE_READ(task, maj_flt);
}

/*
 * The fault tracepoint only notes the fault on the thread: finding its VMA
 * waits until the fault changes RSS (most do), and the counts ride along.
 */
static __always_inline void on_fault(__u64 addr, bool user)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mw_thread *t = thread_get(task, false);

	if (!t) {
		/* A thread we have not met: is its process traced? */
		struct mw_proc *p = proc_lookup(current_tgid());

		if (!p || (p->flags & MW_PROC_DEAD))
			return;
		t = thread_get(task, true);
		if (!t)
			return;
	}
	/* Our own reads of its user stack (--stacks) may fault; they are
	 * not the process's, and must not replace the fault it is in. */
	if (t->walking)
		return;
	t->fault_addr = addr;
	t->fault_flt = task_faults_done(task);
	t->fault_live = 1;
	t->fault_vma = MW_FAULT_VMA_UNKNOWN;
	if (user)
		t->faults_pending++;
	else
		t->kfaults_pending++;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(page_fault_user, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	on_fault(address, true);
	return 0;
}

/* Kernel-mode faults on user addresses: read() into an untouched buffer,
 * copy_to_user in general.  They change RSS like any other fault. */
SEC("tp_btf/page_fault_kernel")
int BPF_PROG(page_fault_kernel, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	if (address < (1UL << 47))
		on_fault(address, false);
	return 0;
}

/*
 * The fault that produced this RSS change was outside every VMA, and VM grew:
 * the stack was expanded.  Report it as a structural record so the loader's
 * table follows (KERNEL-NOTES: the stack grows without a syscall).
 */
static __always_inline void note_vm_growth(struct mw_proc *p, __u32 tgid,
					   struct mw_thread *t)
{
	struct mm_struct *mm = current_mm();
	__u64 total_vm = BPF_CORE_READ(mm, total_vm);
	union mw_scratch *sc;
	struct mw_op_rec *rec;

	if (total_vm == p->total_vm)
		return;
	proc_note_vm(p, total_vm, BPF_CORE_READ(mm, hiwater_vm));
	p->calls[MW_OP_VMGROW]++;
	slots_harvest(p, tgid);
	sc = scratch_get(0);
	if (!sc)
		return;
	rec = &sc->op;
	__builtin_memset(rec, 0, offsetof(struct mw_op_rec, vmas));
	rec->op = MW_OP_VMGROW;
	rec->start = t->fault_addr & MW_PAGE_MASK;
	rec->end = rec->start + MW_PAGE_SIZE;
	rec->args[0] = t->fault_addr;
	rec->total_vm = total_vm;
	rec->start_stack = BPF_CORE_READ(mm, start_stack);
	hdr_fill(&rec->hdr, MW_REC_OP, tgid, __sync_add_and_fetch(&p->seq, 1));
	emit(p, rec, offsetof(struct mw_op_rec, vmas));
	/* Later faults in the grown stack key their slot by its new start. */
	t->fault_vma = rec->start;
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
				      __s64 pages, __u64 w_old, __u64 mine)
{
	__u32 prev_slot1 = w_old & MW_W_SLOT_MASK;
	__s64 old = w_val(w_old), dprev = w_delta(w_old), prev_old = old - dprev, mv;
	struct mw_slot *from, *to;

	if (!slot1 || !prev_slot1 || prev_slot1 == slot1 || !dprev)
		return false;
	if ((prev_old < pages && pages < old) || (prev_old > pages && pages > old))
		mv = pages - prev_old;		/* we came second, computed first */
	else if (pages == old && member != MW_FILE && (dprev >= 2 || dprev <= -2))
		mv = dprev > 0 ? dprev >> 1 : -((-dprev) >> 1); /* both changed first */
	else
		return false;
	from = &p->slots[(prev_slot1 - 1) & (MW_SLOTS - 1)];
	to = &p->slots[(slot1 - 1) & (MW_SLOTS - 1)];
	slot_add_rss(from, member, -(mv << MW_PAGE_SHIFT));
	slot_add_rss(to, member, mv << MW_PAGE_SHIFT);
	if (__sync_val_compare_and_swap(&p->rss_word[member & (MW_NR_MEMBERS - 1)], mine,
					w_pack(old, prev_slot1, dprev - mv)) == mine)
		p->rss[member & (MW_NR_MEMBERS - 1)] = old << MW_PAGE_SHIFT;
	p->reorders++;
	return true;
}

/* Move the thread's fault counts into the process (and a slot). */
static __always_inline __u64 flush_faults(struct mw_proc *p, struct mw_thread *t)
{
	__u64 n = t->faults_pending, k = t->kfaults_pending;

	if (n) {
		__sync_fetch_and_add(&p->faults, n);
		t->faults_pending = 0;
	}
	if (k) {
		__sync_fetch_and_add(&p->kfaults, k);
		t->kfaults_pending = 0;
	}
	return n + k;
}

/* The VMA start of the fault this thread is in: the VMA the previous fault
 * hit while nothing structural has happened since, else the kernel's. */
static __always_inline void resolve_fault_vma(struct mw_proc *p, __u32 tgid,
					      struct task_struct *task, struct mw_thread *t)
{
	struct vma_probe pr = {};
	__u64 addr = t->fault_addr;
	__u32 seq = p->seq;
	long err;

	if (t->cache_seq == seq && addr >= t->cache_start && addr < t->cache_end) {
		t->fault_vma = t->cache_start;
		return;
	}
	err = vma_at(task, addr, &pr);
	/* The stack grew in this fault, before RSS did: a grows-down VMA that
	 * now starts at the faulting page, and VM changed with no syscall. */
	if (err == 0 && (pr.flags & MW_VM_GROWSDOWN) && pr.start == (addr & MW_PAGE_MASK) &&
	    BPF_CORE_READ(task, mm, total_vm) != p->total_vm) {
		note_vm_growth(p, tgid, t);
		t->cache_end = 0;
		return;
	}
	if (err == 0) {
		t->cache_start = pr.start;
		t->cache_end = pr.end;
		t->cache_seq = seq;
		t->fault_vma = pr.start;
		fault_stack(p, t, tgid, pr.start);
	} else if (err == -16 /* EBUSY: another thread is changing the mm */) {
		/* Any address inside the VMA will do: the loader looks the
		 * key up as "the mapping containing it". */
		t->cache_end = 0;
		t->fault_vma = addr & MW_PAGE_MASK;
	} else {
		t->cache_end = 0;
		t->fault_vma = 0;
	}
}

/* Which slot (index + 1) owns a change made by the current thread now:
 * the VMA of the fault it is in.  0: none (a syscall's, or unknown). */
static __always_inline __u32 change_slot(struct mw_proc *p, __u32 tgid,
					 struct task_struct *task, struct mw_thread *t)
{
	struct mw_slot *s;
	__u64 faults;

	if (!t || t->sys_op || !t->fault_live || task_faults_done(task) != t->fault_flt)
		return 0;
	faults = flush_faults(p, t);
	if (t->fault_vma == MW_FAULT_VMA_UNKNOWN)
		resolve_fault_vma(p, tgid, task, t);
	if (!t->fault_vma)
		return 0;
	s = slot_get(p, tgid, t->fault_vma);
	if (!s)
		return 0;
	if (faults)
		__sync_fetch_and_add(&s->faults, faults);
	return (__u32)(s - p->slots) + 1;
}

/* Record one counter change of a traced process made by its own thread. */
static __always_inline void own_change(struct mw_proc *p, __u32 tgid, __u32 member,
				       __s64 size)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mw_thread *t = thread_get(task, false);
	__s64 pages = size >> MW_PAGE_SHIFT, delta;
	__u32 slot1 = member == MW_SWAP ? 0 : change_slot(p, tgid, task, t);
	__u64 mine = w_pack(pages, slot1, 0), w_old;

	barrier_var(member);
	member &= MW_NR_MEMBERS - 1;
	w_old = __sync_lock_test_and_set(&p->rss_word[member], mine);
	if (overtaken(p, member, slot1, pages, w_old, mine))
		return;
	p->rss[member] = size;
	delta = (pages - w_val(w_old)) << MW_PAGE_SHIFT;
	/* Publish this change's size for the next one to check against. */
	__sync_val_compare_and_swap(&p->rss_word[member], mine,
				    w_pack(pages, slot1, pages - w_val(w_old)));
	if (t && t->sys_op)
		t->sys_rss[member] += delta;
	else if (slot1)
		slot_add_rss(&p->slots[(slot1 - 1) & (MW_SLOTS - 1)], member, delta);
	else
		__sync_fetch_and_add(&p->unattributed[member], delta);
}

/* A change made from another context: reclaim, khugepaged, ptrace peeks. */
static __always_inline void external_change(struct mw_proc *p, __u32 member, __s64 size)
{
	__s64 pages = size >> MW_PAGE_SHIFT;
	__u64 w_old;

	barrier_var(member);	/* keep the mask: the verifier needs the bound */
	member &= MW_NR_MEMBERS - 1;
	w_old = __sync_lock_test_and_set(&p->rss_word[member], w_pack(pages, 0, 0));
	p->rss[member] = size;
	__sync_fetch_and_add(&p->external[member],
			     (pages - w_val(w_old)) << MW_PAGE_SHIFT);
}

static __always_inline void note_rss(struct mw_proc *p)
{
	__s64 sum = p->rss[MW_FILE] + p->rss[MW_ANON] + p->rss[MW_SHMEM];

	if (sum > (__s64)p->rss_peak)
		p->rss_peak = sum;
	if (sum > (__s64)p->phase_rss_peak)
		p->phase_rss_peak = sum;
}

/* ---- kmem:rss_stat -------------------------------------------------------- */

/*
 * One counter change of the mm known by key, made in the current context.
 * size: the counter's exact value, or -1 to compute it, which the raw
 * tracepoint does only once it knows the mm is traced (it runs for every RSS
 * change on the host).
 */
static __always_inline void rss_event(__u64 key, bool curr, __u32 member, __s64 size,
				      struct mm_struct *mm)
{
	__u32 tgid = current_tgid();
	struct mw_proc *p = NULL;
	__u32 *owner;

	if (member >= MW_NR_MEMBERS)
		return;
	if (curr)
		p = proc_lookup(tgid);
	if (!p) {
		/* Another context changed a traced mm: reclaim, khugepaged, a
		 * vfork child, or the owner's own teardown at exit/exec. */
		owner = bpf_map_lookup_elem(&mm_owner, &key);
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
		external_change(p, member, size >= 0 ? size : rss_counter_bytes(mm, member));
		note_rss(p);
		return;
	}
	if (p->flags & MW_PROC_DEAD)
		return;
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
	own_change(p, tgid, member, size >= 0 ? size : rss_counter_bytes(mm, member));
	note_rss(p);
}

/* The raw tracepoint: no perf record to format and no counter sum for the
 * processes we do not trace.  Chosen by the loader when cpu_offsets worked. */
SEC("tp_btf/rss_stat")
int BPF_PROG(rss_stat_raw, struct mm_struct *mm, int member)
{
	struct task_struct *task = bpf_get_current_task_btf();

	rss_event((__u64)mm, task->mm == mm, member, -1, mm);
	return 0;
}

/* The fallback: the classic tracepoint, whose record carries the value. */
SEC("tracepoint/kmem/rss_stat")
int rss_stat(struct trace_event_raw_rss_stat *ctx)
{
	rss_event(ctx->mm_id, ctx->curr, ctx->member, ctx->size, NULL);
	return 0;
}

#endif /* MW_FAULT_BPF_H */
