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

static __always_inline void on_fault(__u64 addr, bool user)
{
	__u32 tgid = current_tgid();
	struct mw_proc *p = proc_lookup(tgid);
	struct task_struct *task;
	struct mw_thread *t;
	struct vma_probe pr = {};
	__u32 seq;

	if (!p || (p->flags & MW_PROC_DEAD))
		return;
	task = bpf_get_current_task_btf();
	t = thread_get(task, true);
	if (!t)
		return;
	if (user)
		__sync_fetch_and_add(&p->faults, 1);
	else
		__sync_fetch_and_add(&p->kfaults, 1);

	t->fault_addr = addr;
	t->fault_flt = task_faults_done(task);
	t->fault_live = 1;

	/* Most faults land in the VMA the previous one did: skip the lookup
	 * while no structural change has happened since. */
	seq = p->seq;
	if (t->cache_seq == seq && addr >= t->cache_start && addr < t->cache_end) {
		t->fault_vma = t->cache_start;
	} else if (vma_at(task, addr, &pr) == 0) {
		t->cache_start = pr.start;
		t->cache_end = pr.end;
		t->cache_seq = seq;
		t->fault_vma = pr.start;
	} else {
		t->cache_end = 0;
		t->fault_vma = 0;
	}

	if (t->fault_vma) {
		struct mw_slot *s = slot_get(p, tgid, t->fault_vma);

		if (s)
			__sync_fetch_and_add(&s->faults, 1);
	}
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

static __always_inline void attribute_rss(struct mw_proc *p, __u32 tgid,
					  __u32 member, __s64 delta)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mw_thread *t = thread_get(task, false);
	struct mw_slot *s;

	if (t && t->sys_op) {
		if (member < MW_NR_MEMBERS)
			t->sys_rss[member] += delta;
		return;
	}
	/* Still inside the fault we saw begin?  Its VMA owns the change. */
	if (t && t->fault_live && task_faults_done(task) == t->fault_flt) {
		if (!t->fault_vma)
			note_vm_growth(p, tgid, t);
		if (t->fault_vma) {
			s = slot_get(p, tgid, t->fault_vma);
			if (s) {
				slot_add_rss(s, member, delta);
				return;
			}
		}
	}
	if (member < MW_NR_MEMBERS)
		__sync_fetch_and_add(&p->unattributed[member], delta);
}

static __always_inline void note_rss(struct mw_proc *p, __u32 member, __s64 size)
{
	__s64 sum;

	sum = p->rss[MW_FILE] + p->rss[MW_ANON] + p->rss[MW_SHMEM];
	if (member != MW_SWAP && sum > (__s64)p->rss_peak)
		p->rss_peak = sum;
}

SEC("tracepoint/kmem/rss_stat")
int rss_stat(struct trace_event_raw_rss_stat *ctx)
{
	__u32 member = ctx->member, mm_id = ctx->mm_id, tgid = current_tgid();
	__s64 size = ctx->size, old;
	struct mw_proc *p = NULL;
	__u32 *owner;

	if (member >= MW_NR_MEMBERS)
		return 0;
	if (ctx->curr)
		p = proc_lookup(tgid);
	if (!p) {
		/* Another context changed a traced mm: reclaim, khugepaged, a
		 * vfork child, or the owner's own teardown at exit/exec. */
		owner = bpf_map_lookup_elem(&mm_owner, &mm_id);
		if (!owner)
			return 0;
		p = proc_lookup(*owner);
		if (!p || p->mm_id != mm_id || (p->flags & MW_PROC_DEAD))
			return 0;
		if (!ctx->curr && tgid == *owner) {
			/* exit_mmap() of our own mm: the process as /proc
			 * last showed it is what we report. */
			p->mm_id = 0;
			return 0;
		}
		tgid = *owner;
		stat_inc(MW_STAT_EVENTS);
		old = __sync_lock_test_and_set(&p->rss[member], size);
		note_rss(p, member, size);
		__sync_fetch_and_add(&p->unattributed[member], size - old);
		return 0;
	}
	if (p->flags & MW_PROC_DEAD)
		return 0;
	stat_inc(MW_STAT_EVENTS);
	if (p->mm_id != mm_id) {
		/* A new mm (exec) starts from zero; the first mm we see for a
		 * process is the one the loader seeded from /proc. */
		if (p->mm_id || (p->flags & MW_PROC_HAD_MM)) {
			for (int m = 0; m < MW_NR_MEMBERS; m++)
				p->rss[m] = 0;
		}
		p->mm_id = mm_id;
		p->flags |= MW_PROC_HAD_MM;
		bpf_map_update_elem(&mm_owner, &mm_id, &tgid, BPF_ANY);
	}
	old = __sync_lock_test_and_set(&p->rss[member], size);
	note_rss(p, member, size);
	attribute_rss(p, tgid, member, size - old);
	return 0;
}

#endif /* MW_FAULT_BPF_H */
