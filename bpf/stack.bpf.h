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
/* --stack-bytes: user stack copied with each stack, 0: none (frame
 * pointers only).  At most MW_STACK_COPY_MAX. */
const volatile __u32 stack_bytes = 0;

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

/* Stack records are built here, one per CPU (the loader sizes it to the
 * possible CPUs): with the copy a record is bigger than a per-CPU map value
 * may be (32 KiB).  A program runs on one CPU to its end, and the hooks that
 * take stacks do not nest on a CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mw_stack_rec);
} stack_buf SEC(".maps");

/*
 * The call-site cache (memwatch.h, struct mw_stack_rec): recipes and seen
 * sites are the loader's to write; here they are only read.  LRU both: a
 * process that maps from ever new places costs old entries, and a site
 * evicted is sent whole again.  MEMWATCH_DISABLE=stack_cache: off.
 */
const volatile bool stack_cache = true;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct mw_stack_recipe);
} stack_recipes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} stack_seen SEC(".maps");

/* The user registers of mw_task_pt_regs(): on x86 plain loads of its BTF
 * pointer (MW_LD: a probe read on the compat object), where each probe
 * read was a helper call; arm64 reads them as syscall_args() does. */
#if defined(__TARGET_ARCH_arm64)
#define MW_REG_IP(regs)	BPF_CORE_READ(regs, pc)
#define MW_REG_FP(regs)	BPF_CORE_READ(regs, regs[29])
#define MW_REG_SP(regs)	BPF_CORE_READ(regs, sp)
#else
#define MW_REG_IP(regs)	MW_LD(regs, ip)
#define MW_REG_FP(regs)	MW_LD(regs, bp)
#define MW_REG_SP(regs)	MW_LD(regs, sp)
#endif

static __always_inline __u64 site_mix(__u64 h, __u64 v)
{
	h = (h + v + 1) * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

/*
 * Read n bytes of user stack at sp into copy[] (n at most
 * MW_STACK_COPY_MAX).  The clamp is in asm, on the register itself: clang
 * 19 tested a copy of n and passed the other, whose bound 5.10's verifier
 * did not know ("R2 unbounded memory access" in page_fault_user).
 */
static __always_inline bool copy_read(struct mw_stack_rec *rec, __u32 len, __u64 sp)
{
	__u64 n = len;

	asm volatile("if %[n] <= %[max] goto +1\n\t"
		     "%[n] = %[max]"
		     : [n] "+r"(n)
		     : [max] "i"(MW_STACK_COPY_MAX));
	return bpf_probe_read_user(rec->copy, n, (void *)sp) == 0;
}

/*
 * rec's site_class and, where the loader has a recipe for the class, its
 * site.  Nothing (0) until the thread's stack end is known, from its first
 * copy: the distance to it is part of the class.
 *
 * The recipe's words come from one read of the stack, from the stack
 * pointer to its last word (sitecache.c sorts them), into copy[]: a
 * probe read costs about as much for 8 bytes as for a few KiB, and the
 * recipes of map churn's sites hold 5 to 16 words over 0.4 to 5.6 KiB.
 * A word the read did not cover (it failed: a page gone since; or a
 * recipe not in order) is read on its own, as before.  Returns true when
 * copy[] holds the stack from its pointer on.  A subprogram: inlined, its
 * locals took 6.1's combined stack of sys_exit_tp -> emit_stack -> py_stack
 * -> py_name to 544 bytes on arm64 (at most 512).
 */
static __noinline bool stack_site(struct task_struct *task, struct pt_regs *regs,
				  struct mw_thread *t, struct mw_stack_rec *rec)
{
	struct mw_stack_recipe *r;
	__u64 sp, fp, depth, h, w, span = 0;
	bool block = false;
	__u32 n, o;

	if (!regs || !t->stk_end)
		return false;
	sp = MW_REG_SP(regs);
	if (sp < t->stk_lo || sp >= t->stk_end)
		return false;
	depth = t->stk_end - sp;
	fp = MW_REG_FP(regs) - sp;
	/* The address space: its stack's start differs at each exec. */
	h = site_mix(MW_LD(task_mm(task), start_stack), current_tgid());
	h = site_mix(h, MW_REG_IP(regs));
	h = site_mix(h, depth);
	/* A frame pointer (a chain the unwinder may follow) as where it is
	 * on the stack; another value is no frame pointer. */
	h = site_mix(h, fp < depth ? fp : ~0ULL);
#if defined(__TARGET_ARCH_arm64)
	h = site_mix(h, BPF_CORE_READ(regs, regs[30]));	/* a leaf's caller */
#endif
	rec->site_class = h ? h : 1;
	r = bpf_map_lookup_elem(&stack_recipes, &rec->site_class);
	if (!r)
		return false;
	n = r->n;
	if (n) {
		span = (__u64)r->off[(n - 1) & (MW_STACK_RECIPE_MAX - 1)] + sizeof(w);
		block = span <= MW_STACK_COPY_MAX && copy_read(rec, span, sp);
	}
	for (int i = 0; i < MW_STACK_RECIPE_MAX; i++) {
		if (i >= n)
			break;
		o = r->off[i];
		/* From copy[] where the read covered it: an aligned word (a
		 * return address, a saved register), so the mask that bounds
		 * it for the verifier leaves it as it is. */
		if (block && !(o & (sizeof(w) - 1)) && o + sizeof(w) <= span)
			w = *(__u64 *)(rec->copy + (o & (MW_STACK_COPY_MAX - sizeof(w))));
		else if (bpf_probe_read_user(&w, sizeof(w),
					     (void *)(sp + (o & (MW_STACK_COPY_MAX - 1)))))
			return block;
		h = site_mix(h, w);
	}
	rec->site = h ? h : 1;
	return block;
}

/* The caller of a frameless leaf: the return address the call pushed (x86),
 * from copy[] when it holds the stack from its pointer on, or the link
 * register (arm64). */
static __always_inline __u64 leaf_caller(struct pt_regs *regs, const struct mw_stack_rec *rec,
					 bool copied)
{
	__u64 word = 0;

	if (!regs)
		return 0;
#if defined(__TARGET_ARCH_arm64)
	word = BPF_CORE_READ(regs, regs[30]);
#else
	if (copied)
		word = *(const __u64 *)rec->copy;
	else
		bpf_probe_read_user(&word, sizeof(word), (void *)MW_REG_SP(regs));
#endif
	return word;
}

/*
 * A stack copy that fails part-way is cut back to what can be read, found
 * by bisection over lengths that end on a boundary of 4 KiB, the smallest
 * page any architecture has: pages of 16 or 64 KiB end on such a boundary
 * too.  A constant, not page_shift: with a shift the verifier only knows
 * from .rodata, clang's code for the clamp below loses the bound on 6.1.
 */
#define MW_COPY_GRANULE_SHIFT	12
#define MW_COPY_GRANULE		(1U << MW_COPY_GRANULE_SHIFT)

/*
 * --stack-bytes: the user registers and the stack above the stack pointer,
 * up to the end of its VMA (a read across it fails whole).  Where the VMA
 * cannot be looked up (at a fault, bpf_find_vma() is busy until the fault
 * path's own lookup has unlocked the mm; the compat object's walk may stop
 * short) and the whole read fails, the readable length is searched for
 * page by page (5 more reads at most): the stack ends at the first page
 * that cannot be read.
 */
static __always_inline __u32 stack_copy(struct task_struct *task, struct pt_regs *regs,
					struct mw_stack_rec *rec, struct mw_thread *t)
{
	struct vma_probe pr = {};
	__u32 len = stack_bytes, flags = 0, sz, head;
	__u64 base = 0;		/* the stack's low end, when known */
	__u32 lo, hi, k_max;
	bool last_ok = false;
	__u64 sp;

	rec->copy_len = 0;
	rec->copy_flags = 0;
	if (!regs)
		return 0;
	sz = bpf_core_type_size(struct pt_regs);
	if (sz > sizeof(rec->regs))
		sz = sizeof(rec->regs);
	if (bpf_probe_read_kernel(rec->regs, sz, regs) == 0)
		flags |= MW_COPY_REGS;
	sp = MW_REG_SP(regs);
	rec->copy_sp = sp;
	if (t->stk_end && sp >= t->stk_lo && sp < t->stk_end) {
		base = t->stk_lo;
		if (t->stk_end - sp <= len) {
			len = t->stk_end - sp;
			flags |= MW_COPY_TOP;
		}
	} else if (vma_at(task, sp, &pr) == 0 && pr.found && pr.end > sp) {
		base = pr.start;
		if (pr.end - sp <= len) {
			len = pr.end - sp;
			flags |= MW_COPY_TOP;
		}
	}
	/* Half full: the loader is behind (loading a big module's tables);
	 * a short copy, marked, beats a lost record.  A look of its own, not
	 * rb_fill(): its per-CPU lookup in emit_stack()'s frame took 6.1's
	 * combined stack of sys_exit_tp -> emit_stack -> py_stack -> py_name
	 * past 512 bytes. */
	if (len > MW_COPY_GRANULE && bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA) > rb_size / 2) {
		len = MW_COPY_GRANULE;
		flags = (flags & ~MW_COPY_TOP) | MW_COPY_PRESSURE;
	}
	if (len > MW_STACK_COPY_MAX)
		len = MW_STACK_COPY_MAX;
	if (!len || copy_read(rec, len, sp))
		goto out;
	/* Lengths that end on a granule boundary: j = 1 + k is head + k
	 * granules (k <= k_max), j = 0 nothing. */
	flags = (flags & ~MW_COPY_TOP) | MW_COPY_SHORT;
	head = MW_COPY_GRANULE - (sp & (MW_COPY_GRANULE - 1));
	if (head > len)
		head = len;
	k_max = (len - head) >> MW_COPY_GRANULE_SHIFT;
	lo = 0;			/* reads of length j <= lo work */
	hi = k_max + 2;		/* ... and j >= hi fail */
	for (int i = 0; i < 6 && hi - lo > 1; i++) {
		__u32 mid = (lo + hi) / 2;

		last_ok = copy_read(rec, head + ((mid - 1) << MW_COPY_GRANULE_SHIFT), sp);
		if (last_ok)
			lo = mid;
		else
			hi = mid;
	}
	len = lo ? head + ((lo - 1) << MW_COPY_GRANULE_SHIFT) : 0;
	if (len > MW_STACK_COPY_MAX)
		len = MW_STACK_COPY_MAX;
	if (len && !last_ok && !copy_read(rec, len, sp))
		len = 0;
	/* A page that cannot be read ends the stack (or is swapped out). */
	if (len && hi <= k_max + 1)
		flags |= MW_COPY_TOP;
out:
	rec->copy_len = len;
	rec->copy_flags = flags;
	/* Where the stack ends, for the thread's next copies. */
	if ((flags & MW_COPY_TOP) && len) {
		t->stk_lo = base && base <= sp ? base : sp & MW_PAGE_MASK;
		t->stk_end = sp + len;
	}
	return len;
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
	__u32 cpu = bpf_get_smp_processor_id();
	struct mw_stack_rec *rec = bpf_map_lookup_elem(&stack_buf, &cpu);
	struct pt_regs *regs;
	bool copied;
	__u64 size;
	long n;

	if (!rec || !t)
		return 0;
	regs = mw_task_pt_regs(task);
	t->walking = 1;
	if (stack_bytes) {
		/* The copy is unwound; the kernel's frame-pointer walk would
		 * cost a fault at its end (a chain ends in a frame pointer of
		 * 0, or in garbage where there are none): an exception, ~3 us
		 * under a hypervisor's shadow page tables, on every stack.
		 * The interrupted instruction alone, for a copy that fails. */
		rec->ips[0] = regs ? MW_REG_IP(regs) : 0;
		rec->nr = regs ? 1 : 0;
	} else {
		n = bpf_get_stack(ctx, rec->ips, sizeof(rec->ips), BPF_F_USER_STACK);
		rec->nr = n > 0 ? n / sizeof(__u64) : 0;
	}
	rec->site_class = rec->site = 0;
	rec->site_hit = 0;
	copied = stack_bytes && stack_cache && stack_site(task, regs, t, rec);
	rec->sp_word = leaf_caller(regs, rec, copied);
	if (stack_bytes && !(rec->site && bpf_map_lookup_elem(&stack_seen, &rec->site))) {
		/* The whole of ips[], then the copy. */
		size = offsetof(struct mw_stack_rec, copy) + stack_copy(task, regs, rec, t);
	} else {
		/* Frame pointers only, or a site the loader has unwound. */
		rec->site_hit = stack_bytes != 0;
		size = offsetof(struct mw_stack_rec, ips) +
		       (rec->nr & (MW_STACK_DEPTH - 1)) * sizeof(__u64) +
		       (rec->nr >= MW_STACK_DEPTH ? MW_STACK_DEPTH * sizeof(__u64) : 0);
	}
	/* --python: the interpreter's frames, in a record just ahead. */
	py_stack(current_tgid(), seq_kind, addr);
	t->walking = 0;
	rec->kind = seq_kind >> 32;
	rec->addr = addr;
	rec->vm_bytes = t->stack_vm;
	hdr_fill(&rec->hdr, MW_REC_STACK, current_tgid(), (__u32)seq_kind);
	barrier_var(size);
	if (size > sizeof(*rec))
		size = sizeof(*rec);
	if (bpf_ringbuf_output(&rb, rec, size, 0)) {
		stat_lost(MW_REC_STACK);
		mw_add(&p->lost, 1);
	}
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
 *
 * The CPU's cached VMA serves when nothing structural has happened since
 * (the call that mapped it leaves it there: cpu_fault_hint()).  A lookup
 * here is dear: the exception hook runs with interrupts off, and
 * bpf_find_vma() then gives back the mm's lock through irq_work, an
 * interrupt to itself: on map churn under a hypervisor,
 * page_fault_user took 4.1 us with the lookup, 0.75 us without.
 */
static __always_inline void fault_stack(void *ctx, struct mw_proc *p, __u32 tgid,
					struct task_struct *task, struct mw_fault *f)
{
	struct vma_probe pr = {};
	struct fault_key k = { .tgid = tgid };
	struct mw_thread *t;
	__u8 one = 1;

	if (fault_vma_cached(f, tgid, p->seq)) {
		pr.start = f->cache_start;
	} else {
		if (vma_at(task, f->addr, &pr))
			return;
		fault_vma_note(f, pr.start, pr.end, tgid, p->seq);
	}
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
