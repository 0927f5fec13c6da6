/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * split_rss.bpf.h — kernels before 6.2, where a task's own faults count in
 * caches of its own.  Included by fault.bpf.h where its counter changes
 * need it.
 */
#ifndef MW_SPLIT_RSS_BPF_H
#define MW_SPLIT_RSS_BPF_H

/* ---- kernels before 6.2: per-task RSS caches ------------------------------ */

/*
 * Before 6.2 (f1a7941243c1, "mm: convert mm's rss stats into
 * percpu_counter") a task's own faults add to caches in the task
 * (SPLIT_RSS_COUNTING: task->rss_stat.count[]), not to the mm's counters,
 * and fire no kmem:rss_stat.  sync_mm_rss() folds them into the mm every 64
 * faults (at the start of the next fault), at exit and at exec, and only
 * that fires the tracepoint, with 64 faults' worth from as many mappings.
 * /proc/PID/status shows the mm's counters alone (behind by the caches),
 * smaps the page tables (exact).
 *
 * So here each thread's caches are read at every event of its own (a
 * fault, a traced syscall, a counter change): what they gained since the
 * last look is what the thread's last fault did (to that fault's VMA) or
 * its syscall did (to the syscall's range), and a fold is recognised as a
 * counter change equal to the cache it folds, which changes nothing.  RSS
 * is then the mm's counters plus every cache: exact, as smaps.
 */
struct task_rss_stat___pre62 {
	int events;
	int count[MW_NR_MEMBERS];
} __attribute__((preserve_access_index));

struct task_struct___pre62 {
	struct task_rss_stat___pre62 rss_stat;
} __attribute__((preserve_access_index));

/* task->rss_stat.count[m]: task is a BTF pointer (plain loads). */
static __always_inline __s32 rss_cache(struct task_struct *task, __u32 m)
{
	struct task_struct___pre62 *t = (void *)task;

	if (!bpf_core_field_exists(t->rss_stat))
		return 0;
	switch (m) {
	case 0: return MW_LD(t, rss_stat.count[0]);
	case 1: return MW_LD(t, rss_stat.count[1]);
	case 2: return MW_LD(t, rss_stat.count[2]);
	case 3: return MW_LD(t, rss_stat.count[3]);
	}
	return 0;
}

/*
 * The slot (index + 1) of the VMA of thread t's current or last fault, 0:
 * none; the fault counts in it once.  The thread's own record of its fault,
 * not its CPU's: one that slept and woke on another CPU is found all the
 * same (where 6.2+ needs bpf_map_lookup_percpu_elem(), fault.bpf.h).
 */
static __always_inline __u32 split_fault_slot(struct mw_proc *p, __u32 tgid,
					      struct task_struct *task, struct mw_thread *t)
{
	struct mw_slot *s = NULL;

	if (!t->in_fault)
		return 0;
	if (t->f.vma == MW_FAULT_VMA_UNKNOWN)
		resolve_fault_vma(p, tgid, task, &t->f);
	if (t->f.vma)
		s = slot_get(p, tgid, t->f.vma);
	if (!s)
		return 0;
	if (!t->f_counted) {
		t->f_counted = 1;
		mw_add(&s->faults, 1);
		slot_note(p, s - p->slots);
	}
	return (__u32)(s - p->slots) + 1;
}

/* Credit what thread t's caches gained since the last look: to its
 * syscall, else to the VMA of its last fault, else unattributed.  The
 * first look at a thread (attached with -p, or the first event after
 * exec) finds what it gained before tracing: real, but nobody's. */
static __always_inline void split_flush(struct mw_proc *p, __u32 tgid,
					struct task_struct *task, struct mw_thread *t)
{
	__s64 d[MW_NR_MEMBERS], any = 0;
	bool first = !t->snap_valid;
	struct mw_thread *sys;
	__u32 slot1 = 0, seen = 0;

	for (int m = 0; m < MW_NR_MEMBERS; m++) {
		__s32 c = rss_cache(task, m);

		d[m] = (__s64)(c - (first ? 0 : t->rss_snap[m])) << page_shift;
		t->rss_snap[m] = c;
		any |= d[m];
	}
	t->snap_valid = 1;
	if (!any)
		return;
	/* One pass per case, each with a branch per member only: the
	 * verifier's states are a sum over members, not a product. */
	if (first) {
		for (int m = 0; m < MW_NR_MEMBERS; m++) {
			if (!d[m])
				continue;
			mw_add(&p->rss[m], d[m]);
			mw_add(&p->external[m], d[m]);
		}
		note_rss(p);
		return;
	}
	sys = t->sys_op ? t : NULL;
	if (!sys)
		slot1 = split_fault_slot(p, tgid, task, t);
	for (int m = 0; m < MW_NR_MEMBERS; m++) {
		if (!d[m])
			continue;
		mw_add(&p->rss[m], d[m]);
		change_credit(p, sys, slot1, m, d[m]);
	}
	note_rss(p);
	/* What the fault moved, for its kind (split_fault_over).  A pass of
	 * its own, tested on slot1, not sys: more live in the loop above made
	 * clang keep sys and its test apart, and the verifiers of 5.10 and
	 * 6.1 lost the pointer. */
	barrier_var(slot1);
	if (!slot1)
		return;
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		seen |= fk_seen(m, d[m]);
	t->f_seen |= fk_anon_decide(p, t->f_seen, seen, d[MW_ANON] >> page_shift);
}

/*
 * split_flush() inlined at each of its callers' sites (a fault, a call's
 * entry and exit, a counter change) was verified in each caller's state:
 * sys_enter_tp took 36,244 instructions on 6.1, and with 5.10's bounded
 * loops (no bpf_loop()) 301,924.  A global function is verified once per
 * program; its argument is a plain number, so it finds the current
 * thread's state again (two hash lookups, before 6.2 only).
 */
__noinline int split_flush_global(__u32 tgid)	/* the current thread's */
{
	struct task_struct *task = mw_current_task();
	struct mw_proc *p = proc_lookup(tgid);
	struct mw_thread *t = thread_get(task, false);

	if (p && t)
		split_flush(p, tgid, task, t);
	return 0;
}

/*
 * The current thread's last fault is over (another begins, a traced call
 * begins, a marker fires in it), its gains flushed: its kind, from the
 * counters it moved; one that moved none (copy on write) counts in its
 * VMA's slot too.  Global: verified once, not at each caller.
 */
__noinline int split_fault_over(__u32 tgid)
{
	struct task_struct *task = mw_current_task();
	struct mw_proc *p = proc_lookup(tgid);
	struct mw_thread *t = thread_get(task, false);
	__u32 slot1;

	if (!p || !t || !t->in_fault)
		return 0;
	if (t->f_seen || !t->f_counted) {
		slot1 = split_fault_slot(p, tgid, task, t);
		fault_kind_do(p, slot1, &t->f, t->f_seen);
	}
	t->f_seen = 0;
	t->in_fault = 0;
	return 0;
}

/* A fault of the current thread begins: the last one's gains are known now. */
static __noinline void split_fault(struct mw_proc *p, struct task_struct *task,
				   __u64 addr, bool user)
{
	struct mw_thread *t;

	if (!p || (p->flags & MW_PROC_DEAD))
		return;
	t = thread_get(task, true);
	if (!t || t->walking)
		return;
	split_flush_global(MW_LD(task, tgid));
	split_fault_over(MW_LD(task, tgid));
	t->in_fault = 1;
	t->f_counted = 0;
	t->f.addr = addr;
	t->f.vma = MW_FAULT_VMA_UNKNOWN;
	t->f.kind_seen = 0;
	t->f.kind = 0;
	/* The first fault after a marker's uprobe hit: the step out of line
	 * in a [uprobes] page the hit has just mapped?  Said now, next to the
	 * marker: the caches tell the fault's VMA only at the next look. */
	if (p->flags & MW_PROC_XOL_WATCH) {
		__u64 x = xol_vaddr(task_mm(task));

		mw_and(&p->flags, ~MW_PROC_XOL_WATCH);
		if (x && !p->xol_start && (addr & MW_PAGE_MASK) == x) {
			struct vma_probe pr = { .start = x, .end = x + MW_PAGE_SIZE,
						.flags = MW_VM_EXEC | MW_VM_IO };

			note_xol(p, MW_LD(task, tgid), &t->f, &pr);
			t->f.vma = x;
		}
	}
}

/* The thread enters or leaves a traced syscall, or exits. */
static __always_inline void split_look(struct task_struct *task, struct mw_thread *t)
{
	if (split_rss && t)
		split_flush_global(MW_LD(task, tgid));
}

/* One counter change of a traced process by its own thread, before 6.2:
 * size is the mm's counter, the caches are the rest. */
static __noinline void split_own_change(struct mw_proc *p, struct task_struct *task,
					__u32 tgid, __u32 member, __s64 size)
{
	struct mw_thread *t = thread_get(task, true), *sys;
	__s64 pages = size >> page_shift, dpages, delta;
	__u32 slot1 = 0;
	__s32 cache;

	member &= MW_NR_MEMBERS - 1;
	dpages = pages - w_val(mw_xchg(&p->rss_word[member], w_pack(pages, 0, 0)));
	cache = rss_cache(task, member);
	if (cache && dpages == cache) {
		/* sync_mm_rss(): the cache moves into the mm (and is zeroed
		 * right after us); RSS is what it was. */
		if (t)
			t->rss_snap[member] -= cache;
		return;
	}
	delta = dpages << page_shift;
	mw_add(&p->rss[member], delta);
	/* Its owner from the thread's own state: its syscall, else its
	 * fault (swap entries stay with the syscall or nobody). */
	sys = t && t->sys_op ? t : NULL;
	if (!sys && t && member != MW_SWAP)
		slot1 = split_fault_slot(p, tgid, task, t);
	change_credit(p, sys, slot1, member, delta);
	if (!sys && t && t->in_fault)
		t->f_seen |= fk_anon_decide(p, t->f_seen, fk_seen(member, dpages), dpages);
	note_rss(p);
}

/* The process the loader has just begun to trace (split_seed). */
__u32 seed_tgid;

/*
 * Before 6.2, once as tracing of seed_tgid begins: each of its threads'
 * caches hold what /proc/PID/status, which the loader seeded the process
 * from, does not show.  Looked at now (bpf_iter over every task, run by the
 * loader), they are counted, as before tracing, and later changes are
 * measured from here.
 */
SEC("iter/task")
int split_seed(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	__u32 tgid = seed_tgid;
	struct mw_thread *t;
	struct mw_proc *p;

	if (!split_rss || !task || MW_LD(task, tgid) != tgid)
		return 0;
	p = proc_lookup(tgid);
	if (!p || (p->flags & MW_PROC_DEAD))
		return 0;
	t = thread_get(task, true);
	if (t && !t->snap_valid)
		split_flush(p, tgid, task, t);
	return 0;
}

#endif /* MW_SPLIT_RSS_BPF_H */
