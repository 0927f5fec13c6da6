/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * syscalls.bpf.h — address-space syscalls, one structural record each.
 *
 * At entry we note the call (and whatever must be read before the kernel
 * changes it: the old brk, the shm segment being detached).  RSS changes
 * while the call runs belong to its range.  At exit we read the kernel's
 * VMAs over the range and stream one mw_op_rec, preceded by the harvest of
 * the attribution slots.
 */
#ifndef MW_SYSCALLS_BPF_H
#define MW_SYSCALLS_BPF_H

#define MW_PR_SET_VMA		0x53564d41	/* include/uapi/linux/prctl.h */
#define MW_MREMAP_DONTUNMAP	4
#define MW_MAX_ERRNO		4095

/*
 * nargs: how many arguments this syscall's tracepoint record holds.  Reading
 * past the record makes the attach fail with EACCES (the kernel checks the
 * program's highest context offset against the record size).
 */
static __always_inline int sys_enter(struct trace_event_raw_sys_enter *ctx,
				     __u32 op, int nargs)
{
	struct mw_proc *p = proc_lookup(current_tgid());
	struct task_struct *task;
	struct mm_struct *mm;
	struct mw_thread *t;

	if (!p || (p->flags & MW_PROC_DEAD))
		return 0;
	if (op == MW_OP_PRCTL_VMA && ctx->args[0] != MW_PR_SET_VMA)
		return 0;
	task = bpf_get_current_task_btf();
	t = thread_get(task, true);
	if (!t)
		return 0;
	mm = BPF_CORE_READ(task, mm);
	t->fault_live = 0;
	t->sys_op = op;
	/* ctx is read at constant offsets only (verifier rule). */
	t->sys_args[0] = ctx->args[0];
	t->sys_args[1] = nargs > 1 ? ctx->args[1] : 0;
	t->sys_args[2] = nargs > 2 ? ctx->args[2] : 0;
	t->sys_args[3] = nargs > 3 ? ctx->args[3] : 0;
	t->sys_args[4] = nargs > 4 ? ctx->args[4] : 0;
	t->sys_args[5] = nargs > 5 ? ctx->args[5] : 0;
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		t->sys_rss[m] = 0;
	t->sys_vm_before = BPF_CORE_READ(mm, total_vm);
	t->sys_aux[0] = t->sys_aux[1] = 0;
	if (op == MW_OP_BRK) {
		t->sys_aux[0] = BPF_CORE_READ(mm, brk);
	} else if (op == MW_OP_SHMDT) {
		struct vma_probe pr = {};

		if (vma_at(task, ctx->args[0], &pr) == 0) {
			t->sys_aux[0] = pr.start;
			t->sys_aux[1] = pr.end;
		}
	}
	return 0;
}

/* Did a call that failed leave the address space untouched? */
static __always_inline bool op_failed_cleanly(__u32 op, __s64 ret)
{
	if (ret >= 0 || ret < -MW_MAX_ERRNO)
		return false;
	/* Range operations can fail part-way (ENOMEM on a hole) after
	 * changing what came before it: report those. */
	return !(op == MW_OP_MPROTECT || op == MW_OP_MADVISE || op == MW_OP_MLOCK ||
		 op == MW_OP_PRCTL_VMA);
}

/* Fill rec's ranges and VMAs for one op; returns false to emit nothing. */
static __always_inline bool op_describe(struct task_struct *task,
					struct mm_struct *mm, struct mw_thread *t,
					struct mw_op_rec *rec, __u32 op, __s64 ret)
{
	__u64 *a = t->sys_args;
	__u64 lo, hi;

	switch (op) {
	case MW_OP_MMAP:
		rec->start = ret;
		rec->end = ret + MW_PAGE_ALIGN(a[1]);
		vma_walk(task, rec, rec->start, rec->end);
		break;
	case MW_OP_MUNMAP:
		rec->start = a[0] & MW_PAGE_MASK;
		rec->end = MW_PAGE_ALIGN(a[0] + a[1]);
		break;
	case MW_OP_MREMAP:
		rec->start = ret;
		rec->end = ret + MW_PAGE_ALIGN(a[2]);
		rec->start2 = a[0] & MW_PAGE_MASK;
		rec->end2 = rec->start2 + MW_PAGE_ALIGN(a[1]);
		vma_walk(task, rec, rec->start, rec->end);
		if (a[3] & MW_MREMAP_DONTUNMAP)
			vma_walk(task, rec, rec->start2, rec->end2);
		break;
	case MW_OP_BRK:
		lo = t->sys_aux[0];
		hi = BPF_CORE_READ(mm, brk);
		if (lo == hi)
			return false;	/* a query, or a refused move */
		rec->args[1] = lo;	/* old brk, for the loader */
		if (hi > lo) {
			rec->start = MW_PAGE_ALIGN(lo);
			rec->end = MW_PAGE_ALIGN(hi);
			vma_walk(task, rec, rec->start, rec->end);
		} else {
			rec->start = MW_PAGE_ALIGN(hi);
			rec->end = MW_PAGE_ALIGN(lo);
		}
		break;
	case MW_OP_SHMAT:
		rec->start = ret;
		vma_walk(task, rec, ret, ret + MW_PAGE_SIZE);
		rec->end = rec->nr_vmas ? rec->vmas[0].end : ret;
		break;
	case MW_OP_SHMDT:
		rec->start = t->sys_aux[0];
		rec->end = t->sys_aux[1];
		break;
	case MW_OP_PRCTL_VMA:
		rec->start = a[2] & MW_PAGE_MASK;
		rec->end = MW_PAGE_ALIGN(a[2] + a[3]);
		vma_walk(task, rec, rec->start, rec->end);
		break;
	default:	/* mprotect, madvise, mlock, mseal: (start, len, ...) */
		rec->start = a[0] & MW_PAGE_MASK;
		rec->end = MW_PAGE_ALIGN(a[0] + a[1]);
		vma_walk(task, rec, rec->start, rec->end);
		break;
	}
	return true;
}

static __always_inline int sys_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tgid = current_tgid(), op;
	struct mw_proc *p = proc_lookup(tgid);
	struct task_struct *task;
	struct mm_struct *mm;
	struct mw_thread *t;
	union mw_scratch *sc;
	struct mw_op_rec *rec;
	__s64 ret = ctx->ret;
	__u64 total_vm, size;

	if (!p)
		return 0;
	task = bpf_get_current_task_btf();
	t = thread_get(task, false);
	if (!t || !t->sys_op)
		return 0;
	op = t->sys_op;
	t->sys_op = 0;
	if (op >= MW_NR_OPS || (p->flags & MW_PROC_DEAD))
		return 0;

	mm = BPF_CORE_READ(task, mm);
	total_vm = BPF_CORE_READ(mm, total_vm);
	proc_note_vm(p, total_vm, BPF_CORE_READ(mm, hiwater_vm));
	p->calls[op]++;
	if (total_vm > t->sys_vm_before)
		p->mapped_bytes += (total_vm - t->sys_vm_before) << MW_PAGE_SHIFT;
	else
		p->unmapped_bytes += (t->sys_vm_before - total_vm) << MW_PAGE_SHIFT;

	sc = scratch_get(0);
	if (!sc)
		return 0;
	rec = &sc->op;
	__builtin_memset(rec, 0, offsetof(struct mw_op_rec, vmas));
	if (op_failed_cleanly(op, ret) || !op_describe(task, mm, t, rec, op, ret)) {
		for (int m = 0; m < MW_NR_MEMBERS; m++)
			__sync_fetch_and_add(&p->unattributed[m], t->sys_rss[m]);
		return 0;
	}
	if (ret < 0 && ret >= -MW_MAX_ERRNO)
		rec->opflags |= MW_OPF_FAILED;
	rec->op = op;
	for (int i = 0; i < 6; i++)
		if (!(op == MW_OP_BRK && i == 1))
			rec->args[i] = t->sys_args[i];
	rec->ret = ret;
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		rec->rss_delta[m] = t->sys_rss[m];
	rec->total_vm = total_vm;
	rec->start_brk = BPF_CORE_READ(mm, start_brk);
	rec->brk = BPF_CORE_READ(mm, brk);
	rec->start_stack = BPF_CORE_READ(mm, start_stack);

	slots_harvest(p, tgid);
	hdr_fill(&rec->hdr, MW_REC_OP, tgid, __sync_add_and_fetch(&p->seq, 1));
	size = offsetof(struct mw_op_rec, paths) +
	       (__u64)(rec->nr_paths & (MW_MAX_VMAS - 1)) * MW_PATH_LEN;
	if (rec->nr_paths >= MW_MAX_VMAS)
		size = sizeof(*rec);
	emit(p, rec, size);
	return 0;
}

#define MW_TRACE_SYSCALL(name, op, nargs)					\
SEC("tracepoint/syscalls/sys_enter_" #name)					\
int name##_enter(struct trace_event_raw_sys_enter *ctx)				\
{										\
	return sys_enter(ctx, op, nargs);					\
}										\
SEC("tracepoint/syscalls/sys_exit_" #name)					\
int name##_exit(struct trace_event_raw_sys_exit *ctx)				\
{										\
	return sys_exit(ctx);							\
}

MW_TRACE_SYSCALL(mmap, MW_OP_MMAP, 6)
MW_TRACE_SYSCALL(munmap, MW_OP_MUNMAP, 2)
MW_TRACE_SYSCALL(mremap, MW_OP_MREMAP, 5)
MW_TRACE_SYSCALL(brk, MW_OP_BRK, 1)
MW_TRACE_SYSCALL(mprotect, MW_OP_MPROTECT, 3)
MW_TRACE_SYSCALL(pkey_mprotect, MW_OP_MPROTECT, 4)
MW_TRACE_SYSCALL(madvise, MW_OP_MADVISE, 3)
MW_TRACE_SYSCALL(mlock, MW_OP_MLOCK, 2)
MW_TRACE_SYSCALL(mlock2, MW_OP_MLOCK, 3)
MW_TRACE_SYSCALL(munlock, MW_OP_MLOCK, 2)
MW_TRACE_SYSCALL(mseal, MW_OP_MSEAL, 3)		/* 6.10+: optional */
MW_TRACE_SYSCALL(shmat, MW_OP_SHMAT, 3)
MW_TRACE_SYSCALL(shmdt, MW_OP_SHMDT, 1)
MW_TRACE_SYSCALL(prctl, MW_OP_PRCTL_VMA, 5)

#endif /* MW_SYSCALLS_BPF_H */
