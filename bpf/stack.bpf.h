/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stack.bpf.h — user call stacks for --stacks: who mapped a range, and who
 * first touched each VMA.  Off (and removed by the verifier's dead-code
 * elimination) unless the loader sets want_stacks before load.
 *
 * The stack comes from bpf_get_stack() on the context of the program that
 * runs when the call or fault happens (every kernel from 5.8 has it for
 * tracepoints, raw and BTF ones): each hook passes its ctx down.
 */
#ifndef MW_STACK_BPF_H
#define MW_STACK_BPF_H

const volatile bool want_stacks = false;

/* VMAs whose first fault has been reported, by (tgid, vm_start).  An mmap at
 * a start forgets it again, so a new mapping at an old address is reported
 * anew.  LRU: a process that maps without end only costs old entries. */
struct fault_key {
	__u32 tgid;
	__u32 pad;
	__u64 vm_start;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct fault_key);
	__type(value, __u8);
} fault_stacked SEC(".maps");

/* The caller of a frameless leaf: the return address the call pushed (x86)
 * or the link register (arm64). */
static __always_inline __u64 leaf_caller(struct task_struct *task)
{
	struct pt_regs *regs = mw_task_pt_regs(task);
	__u64 word = 0;

	if (!regs)
		return 0;
#if defined(__TARGET_ARCH_arm64)
	word = BPF_CORE_READ(regs, regs[30]);
#else
	bpf_probe_read_user(&word, sizeof(word), (void *)BPF_CORE_READ(regs, sp));
#endif
	return word;
}

/*
 * A subprogram (at most five arguments: kind rides in seq_kind's upper half,
 * the VM the call added in t->stack_vm), so that the hot paths that call it
 * stay small to verify.  The walk reads user memory, and a read that faults
 * fires page_fault_kernel on this very thread: t->walking tells on_fault()
 * to leave the thread's state alone.
 */
static __noinline int emit_stack(void *ctx, struct mw_proc *p, struct mw_thread *t,
				 __u64 seq_kind, __u64 addr)
{
	struct task_struct *task = mw_current_task();
	union mw_scratch *sc = scratch_get(2);
	struct mw_stack_rec *rec;
	long n;

	if (!sc || !t)
		return 0;
	rec = &sc->stack;
	t->walking = 1;
	n = bpf_get_stack(ctx, rec->ips, sizeof(rec->ips), BPF_F_USER_STACK);
	rec->sp_word = leaf_caller(task);
	/* --python: the interpreter's frames, in a record just ahead. */
	py_stack(current_tgid(), seq_kind, addr);
	t->walking = 0;
	rec->nr = n > 0 ? n / sizeof(__u64) : 0;
	rec->kind = seq_kind >> 32;
	rec->addr = addr;
	rec->vm_bytes = t->stack_vm;
	hdr_fill(&rec->hdr, MW_REC_STACK, current_tgid(), (__u32)seq_kind);
	emit(p, rec, offsetof(struct mw_stack_rec, ips) +
		     (rec->nr & (MW_STACK_DEPTH - 1)) * sizeof(__u64) +
		     (rec->nr >= MW_STACK_DEPTH ? MW_STACK_DEPTH * sizeof(__u64) : 0));
	return 0;
}

static __always_inline __u64 seq_kind(__u32 seq, __u32 kind)
{
	return (__u64)kind << 32 | seq;
}

/* After an op record: the stack of the calls that add mappings. */
static __always_inline void op_stack(void *ctx, struct mw_proc *p, struct mw_thread *t,
				     __u32 tgid, const struct mw_op_rec *rec, __u64 vm_bytes)
{
	struct fault_key k = { .tgid = tgid, .vm_start = rec->start };

	if (!want_stacks)
		return;
	switch (rec->op) {
	case MW_OP_MMAP:
	case MW_OP_MREMAP:
	case MW_OP_SHMAT:
		bpf_map_delete_elem(&fault_stacked, &k);
		break;
	case MW_OP_BRK:
		break;
	default:
		if (!vm_bytes)
			return;
	}
	t->stack_vm = vm_bytes;
	emit_stack(ctx, p, t, seq_kind(rec->hdr.seq, MW_STACK_OP), rec->start);
}

/*
 * A fault of traced process p at addr, as it starts: the first in its VMA
 * reports the user stack.  Taken here, on the fault's own context, so the
 * VMA is looked up now (and left in the CPU's cache for the RSS change that
 * follows).  An address in no VMA yet (a stack about to grow) reports none.
 */
static __always_inline void fault_stack(void *ctx, struct mw_proc *p, __u32 tgid,
					struct task_struct *task, struct mw_fault *f)
{
	struct vma_probe pr = {};
	struct fault_key k = { .tgid = tgid };
	struct mw_thread *t;
	__u8 one = 1;

	if (vma_at(task, f->addr, &pr))
		return;
	f->cache_start = pr.start;
	f->cache_end = pr.end;
	f->cache_tgid = tgid;
	f->cache_seq = p->seq;
	k.vm_start = pr.start;
	if (bpf_map_lookup_elem(&fault_stacked, &k))
		return;
	if (bpf_map_update_elem(&fault_stacked, &k, &one, BPF_NOEXIST))
		return;		/* another thread reports it */
	t = thread_get(task, true);
	if (!t)
		return;
	t->stack_vm = 0;
	emit_stack(ctx, p, t, seq_kind(p->seq, MW_STACK_FAULT), pr.start);
}

#endif /* MW_STACK_BPF_H */
