/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * compat.bpf.h — one source, two objects: what differs between the kernels
 * memwatch loads on.
 *
 * memwatch.bpf.o is for 5.17 and later.  memwatch.compat.bpf.o is the same
 * source built with MW_COMPAT, for 5.8 (BPF ring buffers) to 5.16, where
 * each of these came later:
 *
 *   bpf_get_current_task_btf()   5.11  fields read by probe here
 *   task storage maps            5.11  a hash by thread ID here
 *   atomic fetch, xchg, cmpxchg  5.12  plain loads and stores here
 *   bpf_find_vma()               5.17  mm->mm_rb searched here
 *   bpf_loop()                   5.17  bounded loops here
 *   BPF_PROG_TYPE_SYSCALL        5.14  raw_tp + test run here (5.10)
 *   bpf_get_attach_cookie()      5.15  a bank of uprobe programs, one per
 *                                      --phase-at/--iter spec (at most 16)
 *   bpf_task_pt_regs()           5.15  the top of the task's kernel stack
 *                                      here (mw_task_pt_regs)
 *
 * Both take user stacks (--stacks) with bpf_get_stack() on the program's
 * context, which every kernel here has for every program type memwatch
 * uses: bpf_get_task_stack() would need the task as a BTF pointer (5.11).
 *
 * The loader (user/capture/kernel.c) picks the object at start-up; both keep the
 * same programs, maps and globals, so one skeleton serves them.  Without
 * the atomics, a change made by two CPUs of one process at the same moment
 * can reach the wrong mapping (never the wrong process total: those are
 * plain additions, which 5.8 has).
 */
#ifndef MW_COMPAT_BPF_H
#define MW_COMPAT_BPF_H

#ifdef MW_COMPAT

/* The current task as a plain address: its fields are read by probe. */
#define mw_current_task()	((struct task_struct *)bpf_get_current_task())
#define MW_LD(p, f)		BPF_CORE_READ(p, f)

#define mw_xchg(p, v) ({						\
	typeof(*(p)) ___o = *(volatile typeof(*(p)) *)(p);		\
	*(p) = (v);							\
	___o; })
#define mw_cmpxchg(p, o, n) ({						\
	typeof(*(p)) ___c = *(volatile typeof(*(p)) *)(p);		\
	if (___c == (o))						\
		*(p) = (n);						\
	___c; })
/* An addition whose result is not used is BPF_XADD, which 5.8 has. */
#define mw_add(p, v)		((void)__sync_fetch_and_add(p, v))
#define mw_fetch_add(p, v) ({						\
	typeof(*(p)) ___o = *(volatile typeof(*(p)) *)(p);		\
	mw_add(p, v);							\
	___o; })
#define mw_or(p, v)		((void)(*(p) |= (v)))
#define mw_and(p, v)		((void)(*(p) &= (v)))

/*
 * task_pt_regs(): the user registers saved at the top of the task's kernel
 * stack (arch/x86/include/asm/processor.h; arm64's is the same).  THREAD_SIZE
 * is 16 KiB on x86-64 and on arm64 with 4 KiB pages, twice that with KASAN,
 * which distribution kernels leave off; x86-64 has no padding above pt_regs.
 */
#define MW_THREAD_SIZE		16384
static __always_inline struct pt_regs *mw_task_pt_regs(struct task_struct *task)
{
	__u64 stack = (__u64)BPF_CORE_READ(task, stack);

	return stack ? (struct pt_regs *)(stack + MW_THREAD_SIZE -
					   bpf_core_type_size(struct pt_regs)) : NULL;
}

#else

#define mw_current_task()	bpf_get_current_task_btf()
/* p is a BTF pointer: a plain load (with an exception-table fixup). */
#define MW_LD(p, f)		((p)->f)

#define mw_xchg(p, v)		__sync_lock_test_and_set(p, v)
#define mw_cmpxchg(p, o, n)	__sync_val_compare_and_swap(p, o, n)
#define mw_add(p, v)		((void)__sync_fetch_and_add(p, v))
#define mw_fetch_add(p, v)	__sync_fetch_and_add(p, v)
#define mw_or(p, v)		((void)__sync_fetch_and_or(p, v))
#define mw_and(p, v)		((void)__sync_fetch_and_and(p, v))
#define mw_task_pt_regs(task)	((struct pt_regs *)bpf_task_pt_regs(task))

#endif /* MW_COMPAT */

#define mw_add_fetch(p, v)	(mw_fetch_add(p, v) + (v))

/* bpf_loop(n, fn, ctx): up to n calls of fn(i, ctx) until it returns 1. */
#ifdef MW_COMPAT
#define mw_loop(n, fn, ctx) ({						\
	long ___i;							\
	for (___i = 0; ___i < (n); ___i++)				\
		if (fn(___i, ctx)) {					\
			___i++;						\
			break;						\
		}							\
	___i; })
#else
#define mw_loop(n, fn, ctx)	bpf_loop(n, fn, ctx, 0)
#endif

#endif /* MW_COMPAT_BPF_H */
