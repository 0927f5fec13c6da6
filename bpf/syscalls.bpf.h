/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * syscalls.bpf.h — address-space syscalls, one structural record each.
 *
 * At entry we note the call (and whatever must be read before the kernel
 * changes it: the old brk, the shm segment being detached).  RSS changes
 * while the call runs belong to its range.  At exit we read the kernel's
 * VMAs over the range and stream one mw_op_rec, preceded by the harvest of
 * the attribution slots.
 *
 * Two forms of the same hooks; the loader attaches one (user/capture/capture.c):
 *  - sys_enter_tp/sys_exit_tp on the per-call tracepoints, syscalls:sys_enter_mmap
 *    and so on, one program attached to each of our calls.  The kernel runs
 *    no program for the syscalls nobody asked for: a process memwatch does
 *    not trace pays the syscall tracepoint slow path, as it does under
 *    bpftrace, not a BPF program per syscall.
 *  - sys_enter_raw/sys_exit_raw on the raw sys_enter/sys_exit tracepoints,
 *    picking our calls by number, where the kernel has no per-call ones
 *    (CONFIG_FTRACE_SYSCALLS off).  Every syscall of every process runs the
 *    filter then: the floor of empty programs there is 1.37x on a getppid
 *    loop.
 * 64-bit processes only: compat (32-bit) syscall numbers differ, and the
 * per-call tracepoints ignore compat syscalls on x86.
 */
#ifndef MW_SYSCALLS_BPF_H
#define MW_SYSCALLS_BPF_H

#define MW_PR_SET_VMA		0x53564d41	/* include/uapi/linux/prctl.h */
#define MW_MREMAP_DONTUNMAP	4
#define MW_MAX_ERRNO		4095

#if defined(__TARGET_ARCH_x86)
enum {	/* arch/x86/entry/syscalls/syscall_64.tbl */
	MW_NR_mmap = 9, MW_NR_mprotect = 10, MW_NR_munmap = 11, MW_NR_brk = 12,
	MW_NR_mremap = 25, MW_NR_madvise = 28, MW_NR_shmat = 30, MW_NR_shmdt = 67,
	MW_NR_mlock = 149, MW_NR_munlock = 150, MW_NR_prctl = 157,
	MW_NR_mlock2 = 325, MW_NR_pkey_mprotect = 329, MW_NR_mseal = 462,
	MW_NR_mlockall = 151, MW_NR_munlockall = 152, MW_NR_io_uring_register = 427,
};
/* regs: the BTF pointer of a tp_btf argument, so this is a plain load. */
#define MW_SYSCALL_NR(regs)	((regs)->orig_ax)
#elif defined(__TARGET_ARCH_arm64)
enum {	/* include/uapi/asm-generic/unistd.h */
	MW_NR_mmap = 222, MW_NR_mprotect = 226, MW_NR_munmap = 215, MW_NR_brk = 214,
	MW_NR_mremap = 216, MW_NR_madvise = 233, MW_NR_shmat = 196, MW_NR_shmdt = 197,
	MW_NR_mlock = 228, MW_NR_munlock = 229, MW_NR_prctl = 167,
	MW_NR_mlock2 = 284, MW_NR_pkey_mprotect = 288, MW_NR_mseal = 462,
	MW_NR_mlockall = 230, MW_NR_munlockall = 231, MW_NR_io_uring_register = 427,
};
#define MW_SYSCALL_NR(regs)	BPF_CORE_READ((struct user_pt_regs *)(regs), regs[8])
#else
#error "memwatch: syscall numbers for this architecture are missing"
#endif

static __always_inline __u32 syscall_op(long nr)
{
	switch (nr) {
	case MW_NR_mmap:		return MW_OP_MMAP;
	case MW_NR_munmap:		return MW_OP_MUNMAP;
	case MW_NR_mremap:		return MW_OP_MREMAP;
	case MW_NR_brk:			return MW_OP_BRK;
	case MW_NR_mprotect:
	case MW_NR_pkey_mprotect:	return MW_OP_MPROTECT;
	case MW_NR_madvise:		return MW_OP_MADVISE;
	case MW_NR_mlock:
	case MW_NR_mlock2:
	case MW_NR_munlock:		return MW_OP_MLOCK;
	case MW_NR_mseal:		return MW_OP_MSEAL;
	case MW_NR_shmat:		return MW_OP_SHMAT;
	case MW_NR_shmdt:		return MW_OP_SHMDT;
	case MW_NR_prctl:		return MW_OP_PRCTL_VMA;
	default:			return MW_OP_NONE;
	}
}

/* The six arguments from the user registers saved at syscall entry (regs:
 * a BTF pointer or, on the compat object, an address read by probe). */
static __always_inline void syscall_args(struct pt_regs *regs, __u64 *a)
{
#if defined(__TARGET_ARCH_x86)
	a[0] = MW_LD(regs, di);
	a[1] = MW_LD(regs, si);
	a[2] = MW_LD(regs, dx);
	a[3] = MW_LD(regs, r10);
	a[4] = MW_LD(regs, r8);
	a[5] = MW_LD(regs, r9);
#else
	for (int i = 0; i < 6; i++)
		a[i] = BPF_CORE_READ((struct user_pt_regs *)regs, regs[i]);
#endif
}

/* How much of an op record to send: up to its last VMA or, with paths,
 * its last path (an anonymous call's record is 248 bytes, not 392). */
static __always_inline __u64 op_rec_size(const struct mw_op_rec *rec)
{
	if (rec->nr_paths >= MW_MAX_VMAS)
		return sizeof(*rec);
	if (!rec->nr_paths)
		return offsetof(struct mw_op_rec, vmas) +
		       (__u64)(rec->nr_vmas < MW_MAX_VMAS ? rec->nr_vmas : MW_MAX_VMAS) *
		       sizeof(struct mw_vma);
	return offsetof(struct mw_op_rec, paths) +
	       (__u64)(rec->nr_paths & (MW_MAX_VMAS - 1)) * MW_PATH_LEN;
}

/* A range whose VMAs a call could not read (its mm locked: khugepaged, a
 * writer waiting), to read at the process's next event. */
static __always_inline void rewalk_note(struct mw_proc *p, __u64 start, __u64 end)
{
	if (end <= start)
		return;
	if (!p->rewalk_end) {
		p->rewalk_start = start;
		p->rewalk_end = end;
		return;
	}
	if (start < p->rewalk_start)
		p->rewalk_start = start;
	if (end > p->rewalk_end)
		p->rewalk_end = end;
}

/*
 * The VMAs of a range an earlier call could not read, read now, before the
 * record of this event (the process's next traced call, or a marker in it):
 * a phase that ends here has the mapping that call made.  Busy again: kept
 * for the next event, and the loader re-reads /proc as before.  A marker
 * reads them without paths (vma_walk_bare: its programs stay small), which
 * the loader takes from /proc/PID/map_files.
 */
static __always_inline void rewalk(struct mw_proc *p, __u32 tgid, struct task_struct *task,
				   bool path)
{
	__u64 start = p->rewalk_start, end = p->rewalk_end;
	union mw_scratch *sc;
	struct mw_op_rec *rec;

	if (!end || end <= start || (p->flags & MW_PROC_DEAD))
		return;
	if (mm_lock_busy(task_mm(task)))
		return;		/* kept for the next event, as if read busy */
	p->rewalk_end = 0;
	sc = scratch_get(0);
	if (!sc)
		return;
	rec = &sc->op;
	__builtin_memset(rec, 0, offsetof(struct mw_op_rec, vmas));
	rec->op = MW_OP_REWALK;
	rec->start = start;
	rec->end = end;
	if (path)
		vma_walk(start, end, MW_WALK_STRICT);
	else
		vma_walk_bare(start, end, MW_WALK_STRICT);
	if (rec->opflags & MW_OPF_FIND_BUSY) {
		rewalk_note(p, start, end);
		/* Locked again before its first VMA: a record would say
		 * nothing the loader does not know (it waits for the read). */
		if (!rec->nr_vmas)
			return;
	}
	rec->total_vm = p->total_vm;
	p->calls[MW_OP_REWALK]++;
	hdr_set(&rec->hdr, MW_REC_OP, tgid, MW_LD(task, pid), 0, bpf_ktime_get_ns());
	if (rec->opflags & MW_OPF_FIND_BUSY)
		p->late_told = rec->hdr.ts;
	rec->hdr.seq = mw_add_fetch(&p->seq, 1);
	emit(p, rec, op_rec_size(rec));
}

/* rewalk() without paths, for the current task's process: a global
 * function, verified once in each program that calls it (sys_enter, the
 * markers), not once per path through it. */
__noinline int rewalk_bare(__u32 tgid)
{
	struct mw_proc *p = proc_lookup(tgid);

	if (p)
		rewalk(p, tgid, mw_current_task(), false);
	return 0;
}

/*
 * The traced process of a thread entering a traced call: the index the
 * thread noted at its last one (task storage: one helper call), while
 * procs has not changed since, else as a fault finds it, which is a hash
 * lookup when this CPU's last fault was another task's.  Under stress-ng
 * --mmap sys_enter took 89 ns returning before any lookup, 176-187 ns
 * with proc_current() and 217 ns with the hash lookup every time.
 * *idx: the index found (~0: none).
 */
static __always_inline struct mw_proc *proc_of_call(struct task_struct *task, __u32 tgid,
						    struct mw_thread *t, __u32 gen, __u32 *idx)
{
	*idx = t && t->pgen == gen + 1 ? t->pidx : proc_current_idx(task, tgid, gen);
	return proc_at(*idx, tgid);
}

static __always_inline int sys_enter(const __u64 *args, __u32 op)
{
	struct task_struct *task = mw_current_task();
	__u32 tgid = MW_LD(task, tgid), gen = procs_gen_now(), idx;
	struct mw_thread *t = thread_get(task, false);
	struct mm_struct *mm;
	struct mw_proc *p;
	__u64 arg0 = args[0];

	p = proc_of_call(task, tgid, t, gen, &idx);
	if (!p || (p->flags & MW_PROC_DEAD))
		return 0;
	if (op == MW_OP_PRCTL_VMA && arg0 != MW_PR_SET_VMA)
		return 0;
	/* A call that can unmap what an earlier one could not read: read it
	 * first, while it is there (its mapping then goes as unmapped). */
	if (p->rewalk_end && (op == MW_OP_MUNMAP || op == MW_OP_MREMAP || op == MW_OP_MMAP ||
			      op == MW_OP_SHMDT || op == MW_OP_BRK))
		rewalk_bare(tgid);
	if (!t)
		t = thread_get(task, true);
	if (!t)
		return 0;
	t->pidx = idx;
	t->pgen = gen + 1;
	mm = task_mm(task);
	cpu_fault_end(task, false);
	split_look(task, t);	/* before 6.2: its last fault's gains */
	if (split_rss)
		split_fault_over(MW_LD(task, tgid));	/* ... and its kind */
	t->in_fault = 0;	/* ... and that fault is over */
	if (!t->sys_op)
		mw_add(&p->in_sys, 1);
	t->sys_op = op;
	for (int i = 0; i < 6; i++)
		t->sys_args[i] = args[i];
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		t->sys_rss[m] = 0;
	t->sys_vm_before = MW_LD(mm, total_vm);
	t->sys_aux[0] = t->sys_aux[1] = 0;
	if (op == MW_OP_BRK) {
		t->sys_aux[0] = MW_LD(mm, brk);
	} else if (op == MW_OP_SHMDT) {
		struct vma_probe pr = {};

		if (vma_at(task, arg0, &pr) == 0) {
			t->sys_aux[0] = pr.start;
			t->sys_aux[1] = pr.end;
		}
	}
	return 0;
}

/*
 * Advice that changes pages, not VMAs (include/uapi/asm-generic/
 * mman-common.h; madvise_update_vma() is not on its path in mm/madvise.c):
 * the loader's table has the range's VMAs already, and the record goes
 * without them.  An allocator's free (DONTNEED, FREE) is the common call.
 * The rest, and advice this list does not know, walk the range.
 */
static __always_inline bool madvise_keeps_vmas(__u64 advice)
{
	switch (advice) {
	case 3:		/* MADV_WILLNEED */
	case 4:		/* MADV_DONTNEED */
	case 8:		/* MADV_FREE */
	case 9:		/* MADV_REMOVE */
	case 20:	/* MADV_COLD */
	case 21:	/* MADV_PAGEOUT */
	case 22:	/* MADV_POPULATE_READ */
	case 23:	/* MADV_POPULATE_WRITE */
	case 24:	/* MADV_DONTNEED_LOCKED */
		return true;
	default:
		return false;
	}
}

/* Did the call in progress on t change any of its process's counters? */
static __always_inline bool call_moved_rss(const struct mw_thread *t)
{
	_Static_assert(MW_NR_MEMBERS == 4, "call_moved_rss() looks at four counters");
	return t->sys_rss[0] || t->sys_rss[1] || t->sys_rss[2] || t->sys_rss[3];
}

/*
 * A call whose VMAs could not be read (its mm locked): its range is read
 * at the process's next event (rewalk()).  If such a read was owed already
 * and a record told the loader so within MW_LATE_FOLD_NS, and this call
 * read no VMA and moved no RSS, its range joins that read and it sends
 * nothing: the records of mprotect, madvise, mlock and mseal carry only
 * VMAs and RSS (user/analysis/account.c apply_op()), so its record would
 * say no more than "owed".  On stress-ng --madvise's threads 51,000 of
 * 71,000 madvise records in 1 s were such.
 * Returns true: counted in late_folded, no record.
 */
static __always_inline bool late_fold(struct mw_proc *p, struct mw_thread *t,
				      const struct mw_op_rec *rec, __u32 op)
{
	bool owed = p->rewalk_end;

	rewalk_note(p, rec->start, rec->end);
	if (op == MW_OP_MREMAP)
		rewalk_note(p, rec->start2, rec->end2);
	if (!owed || rec->nr_vmas ||
	    !(op == MW_OP_MPROTECT || op == MW_OP_MADVISE || op == MW_OP_MLOCK ||
	      op == MW_OP_MSEAL) ||
	    call_moved_rss(t) || bpf_ktime_get_ns() - p->late_told >= MW_LATE_FOLD_NS)
		return false;
	mw_add(&p->late_folded, 1);
	return true;
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

/*
 * Fill rec's ranges and VMAs for one op; returns false to emit nothing.
 * The switch only sets the ranges and how to walk them, and the walk comes
 * after it: the verifier follows what comes after once per kind of walk,
 * not once per op.
 */
static __always_inline bool op_describe(struct task_struct *task,
					struct mm_struct *mm, struct mw_thread *t,
					struct mw_op_rec *rec, __u32 op, __s64 ret)
{
	__u64 *a = t->sys_args;
	__u32 how = MW_WALK_STRICT;
	bool kept = false;
	__u64 lo, hi, t0;

	switch (op) {
	case MW_OP_MMAP:
		rec->start = ret;
		rec->end = ret + MW_PAGE_ALIGN(a[1]);
		break;
	case MW_OP_MUNMAP:
		/* Another thread may have mapped into the range already: its
		 * record can reach the loader before this one. */
		rec->start = a[0] & MW_PAGE_MASK;
		rec->end = MW_PAGE_ALIGN(a[0] + a[1]);
		how = MW_WALK_UNMAPPED;
		break;
	case MW_OP_MREMAP:
		rec->start = ret;
		rec->end = ret + MW_PAGE_ALIGN(a[2]);
		rec->start2 = a[0] & MW_PAGE_MASK;
		rec->end2 = rec->start2 + MW_PAGE_ALIGN(a[1]);
		kept = a[3] & MW_MREMAP_DONTUNMAP;
		break;
	case MW_OP_BRK:
		lo = t->sys_aux[0];
		hi = MW_LD(mm, brk);
		if (lo == hi)
			return false;	/* a query, or a refused move */
		rec->args[1] = lo;	/* old brk, for the loader */
		if (hi > lo) {
			rec->start = MW_PAGE_ALIGN(lo);
			rec->end = MW_PAGE_ALIGN(hi);
		} else {
			rec->start = MW_PAGE_ALIGN(hi);
			rec->end = MW_PAGE_ALIGN(lo);
			how = MW_WALK_NONE;
		}
		break;
	case MW_OP_SHMAT:
		/* The segment's size is its VMA's: walk its first page. */
		rec->start = ret;
		rec->end = ret + MW_PAGE_SIZE;
		how = MW_WALK_FOUND;
		break;
	case MW_OP_SHMDT:
		rec->start = t->sys_aux[0];
		rec->end = t->sys_aux[1];
		how = MW_WALK_NONE;
		break;
	case MW_OP_PRCTL_VMA:
		rec->start = a[2] & MW_PAGE_MASK;
		rec->end = MW_PAGE_ALIGN(a[2] + a[3]);
		break;
	default:	/* mprotect, madvise, mlock, mseal: (start, len, ...) */
		rec->start = a[0] & MW_PAGE_MASK;
		rec->end = MW_PAGE_ALIGN(a[0] + a[1]);
		if (op == MW_OP_MADVISE && madvise_keeps_vmas(a[2]))
			how = MW_WALK_NONE;
		break;
	}
	if (how == MW_WALK_NONE)
		return true;
	t0 = part_start();
	vma_walk(rec->start, rec->end, how);
	if (kept)
		vma_walk(rec->start2, rec->end2, MW_WALK_STRICT);
	part_end(MW_PART_WALK, t0);
	if (how == MW_WALK_FOUND)	/* shmat */
		rec->end = rec->nr_vmas ? rec->vmas[0].end : rec->start;
	return true;
}

/*
 * Pressure: past 3/4 of the ring buffer, a process's calls are counted (the
 * totals live here and stay exact) instead of sent, until it is below 1/4;
 * the first record sent after says how many (mw_coalesced_rec) and the
 * loader re-reads the layout.  The window is named in the report; what it
 * loses is per-call detail (histograms, per-mapping growth inside it), not
 * records: nothing is dropped and nothing counts as lost.
 */
const volatile bool coalesce = true;	/* MEMWATCH_DISABLE=coalesce: off */

static __always_inline bool coalescing(struct mw_proc *p)
{
	if (!coalesce)
		return false;
	/* In a window the ring is looked at on every call: nothing is
	 * emitted then to count towards the next look. */
	if (p->coalescing)
		return rb_fill(true) > rb_size / 4;
	return rb_fill(false) > rb_size / 4 * 3;
}

/* The window closes: say so before the first record sent again. */
static __always_inline void coalesce_end(struct mw_proc *p, __u32 tgid)
{
	struct mw_coalesced_rec rec = {};

	rec.calls = mw_xchg(&p->coalescing, 0);
	if (!rec.calls)
		return;		/* another thread said it */
	rec.first_ts = p->coalesce_ts;
	mw_add(&p->coalesced, rec.calls);
	hdr_fill(&rec.hdr, MW_REC_COALESCED, tgid, 0);
	emit_rec(p, &rec, sizeof(rec), true);
}

/* MEMWATCH_DISABLE=exit_walk (tests): every read at a call's exit fails as
 * if its mm were locked (bpf_find_vma's -EBUSY), its own and the late read
 * of earlier calls' (rewalk()), which the process's next marker or call
 * that can unmap then makes.  Pruned by the verifier when off. */
const volatile bool test_exit_busy = false;

/* The record of a traced call that has just returned (or nothing: a dead
 * process, a coalescing window, a call that changed nothing). */
static __always_inline void sys_exit_record(void *ctx, __s64 ret, struct task_struct *task,
					    __u32 tgid, struct mw_proc *p, struct mw_thread *t,
					    __u32 op)
{
	struct mm_struct *mm;
	union mw_scratch *sc;
	struct mw_op_rec *rec;
	__u64 total_vm, size, t0;

	if (op >= MW_NR_OPS || (p->flags & MW_PROC_DEAD))
		return;

	mm = task_mm(task);
	total_vm = MW_LD(mm, total_vm);
	proc_note_vm(p, total_vm, MW_LD(mm, hiwater_vm));
	proc_note_pin(p, MW_MM_PIN(mm));
	/* Bounded again at the use: 6.1's verifier loses the bound of a u32
	 * spilled to the stack, and the compiler would drop a plain repeat. */
	barrier_var(op);
	if (op < MW_NR_OPS)
		p->calls[op]++;
	if (total_vm > t->sys_vm_before)
		p->mapped_bytes += (total_vm - t->sys_vm_before) << page_shift;
	else if (total_vm < t->sys_vm_before)
		p->unmapped_bytes += (t->sys_vm_before - total_vm) << page_shift;
	/* Anonymous pages the call gave back: a fault that brings one in
	 * while some are not taken again is a refault (fault.bpf.h). */
	if (t->sys_rss[MW_ANON] < 0)
		mw_add(&p->anon_given, (-t->sys_rss[MW_ANON]) >> page_shift);

	if (coalescing(p)) {
		if (!p->coalescing)
			p->coalesce_ts = bpf_ktime_get_ns();
		mw_add(&p->coalescing, 1);
		for (int m = 0; m < MW_NR_MEMBERS; m++)
			mw_add(&p->unattributed[m], t->sys_rss[m]);
		return;
	}
	if (p->coalescing)
		coalesce_end(p, tgid);
	if (!test_exit_busy)
		rewalk(p, tgid, task, true);
	/* Advice on pages, not VMAs, that changed none (stress-ng --madvise:
	 * half its calls; a populate of pages already there, a free of pages
	 * never touched): counted above, and its record would change nothing
	 * in the loader's table.  Failed or not: none was changed. */
	if (op == MW_OP_MADVISE && madvise_keeps_vmas(t->sys_args[2]) && !call_moved_rss(t))
		return;
	sc = scratch_get(0);
	if (!sc)
		return;
	rec = &sc->op;
	__builtin_memset(rec, 0, offsetof(struct mw_op_rec, vmas));
	/* Everything that depends on op before op_describe()'s switch, which
	 * leaves op a different constant on each path: unused after it, the
	 * verifier can merge those paths again. */
	rec->op = op;
	for (int i = 0; i < 6; i++)
		rec->args[i] = t->sys_args[i];	/* brk: op_describe() sets [1] */
	if (op_failed_cleanly(op, ret) || !op_describe(task, mm, t, rec, op, ret)) {
		for (int m = 0; m < MW_NR_MEMBERS; m++)
			mw_add(&p->unattributed[m], t->sys_rss[m]);
		return;
	}
	if (ret < 0 && ret >= -MW_MAX_ERRNO)
		rec->opflags |= MW_OPF_FAILED;
	if (test_exit_busy && rec->nr_vmas) {
		rec->nr_vmas = rec->nr_paths = 0;
		rec->opflags |= MW_OPF_FIND_BUSY;
	}
	if ((rec->opflags & MW_OPF_FIND_BUSY) && late_fold(p, t, rec, op))
		return;
	rec->ret = ret;
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		rec->rss_delta[m] = t->sys_rss[m];
	rec->total_vm = total_vm;
	rec->start_brk = MW_LD(mm, start_brk);
	rec->brk = MW_LD(mm, brk);
	rec->start_stack = MW_LD(mm, start_stack);

	hdr_set(&rec->hdr, MW_REC_OP, tgid, MW_LD(task, pid), 0, bpf_ktime_get_ns());
	if (rec->opflags & MW_OPF_FIND_BUSY)
		p->late_told = rec->hdr.ts;
	t0 = part_start();
	slots_harvest_before(p, tgid, &rec->hdr);
	part_end(MW_PART_HARVEST, t0);
	rec->hdr.seq = mw_add_fetch(&p->seq, 1);
	if (rec->nr_vmas)
		cpu_fault_hint(tgid, rec->hdr.seq, rec->vmas[0].start, rec->vmas[0].end);
	size = op_rec_size(rec);
	t0 = part_start();
	emit(p, rec, size);
	part_end(MW_PART_EMIT, t0);
	t0 = part_start();
	op_stack(ctx, p, t, tgid, rec, total_vm > t->sys_vm_before ?
			       (total_vm - t->sys_vm_before) << page_shift : 0);
	part_end(MW_PART_STACK, t0);
}

static __always_inline int sys_exit(void *ctx, __s64 ret)
{
	struct task_struct *task = mw_current_task();
	__u32 tgid = MW_LD(task, tgid), op;
	struct mw_thread *t = thread_get(task, false);
	struct mw_proc *p;
	__u64 t0;

	/* A thread of a process we do not trace has no call noted: no
	 * lookup of its process.  Ours has the index its entry found. */
	if (!t || !t->sys_op)
		return 0;
	p = proc_at(t->pidx, tgid);
	if (!p) {
		t->sys_op = 0;	/* no longer traced */
		return 0;
	}
	op = t->sys_op;
	split_look(task, t);	/* before 6.2: the call's own gains */
	t->in_fault = 0;
	t->sys_op = 0;
	t0 = part_start();
	sys_exit_record(ctx, ret, task, tgid, p, t, op);
	part_end(MW_PART_EXIT, t0);
	/*
	 * Out of the call only now that its record is out with the next
	 * sequence number.  A re-measure (user/trace.c reconcile_splits)
	 * trusts pagemap when no thread is in a traced call and the sequence
	 * has not moved: leaving earlier opened a window, while the record
	 * was being built, in which a madvise's zapped pages were already
	 * gone from pagemap and its RSS delta still to come, and the mapping
	 * lost them twice (Go's scavenger: -3024 KiB on a 4 MiB arena).
	 */
	mw_add(&p->in_sys, -1);
	return 0;
}

/*
 * The per-call tracepoints' records (syscall_trace_enter/exit in
 * kernel/trace/trace_syscalls.c): nr is an int.  The kernel refuses a
 * program that reads past the shortest record it is attached to (brk's: one
 * argument), so the arguments come from the saved user registers instead.
 */
struct mw_sys_enter_ctx {
	__u64 hidden;		/* the pt_regs pointer, not readable */
	__s32 nr;
};

struct mw_sys_exit_ctx {
	__u64 hidden;
	__s32 nr;
	__u32 pad;
	__s64 ret;
};

SEC("tracepoint")	/* attached to syscalls:sys_enter_<call> for each call */
int sys_enter_tp(struct mw_sys_enter_ctx *ctx)
{
	__u32 op = syscall_op(ctx->nr);
	struct pt_regs *regs;
	__u64 a[6];

	if (!op || !(regs = mw_task_pt_regs(mw_current_task())))
		return 0;
	syscall_args(regs, a);
	return sys_enter(a, op);
}

SEC("tracepoint")	/* attached to syscalls:sys_exit_<call> for each call */
int sys_exit_tp(struct mw_sys_exit_ctx *ctx)
{
	if (!syscall_op(ctx->nr))
		return 0;
	return sys_exit(ctx, ctx->ret);
}

/* Other processes' calls on a traced one (remote.bpf.h), each on its own
 * tracepoint. */
SEC("tracepoint")	/* syscalls:sys_enter_process_madvise and the others */
int remote_enter_tp(struct mw_sys_enter_ctx *ctx)
{
	__u32 call = remote_call_of(ctx->nr);
	struct pt_regs *regs;
	__u64 a[6];

	if (!call || !(regs = mw_task_pt_regs(mw_current_task())))
		return 0;
	syscall_args(regs, a);
	return remote_enter(a, call);
}

SEC("tracepoint")	/* syscalls:sys_exit_process_madvise and the others */
int remote_exit_tp(struct mw_sys_exit_ctx *ctx)
{
	return remote_exit(ctx->ret);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter_raw, struct pt_regs *regs, long id)
{
	__u32 op = syscall_op(id), call;
	__u64 a[6];

	if (!op) {
		call = remote_call_of(id);
		if (!call)
			return 0;
		syscall_args(regs, a);
		return remote_enter(a, call);
	}
	syscall_args(regs, a);
	return sys_enter(a, op);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit_raw, struct pt_regs *regs, long ret)
{
	long nr = MW_SYSCALL_NR(regs);

	if (!syscall_op(nr))
		return remote_call_of(nr) ? remote_exit(ret) : 0;
	return sys_exit(ctx, ret);
}

#endif /* MW_SYSCALLS_BPF_H */
