/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * task.bpf.h — exec and exit of a traced process.
 *
 * exec replaces the whole address space without a single mmap syscall
 * (KERNEL-NOTES 4): the record tells the loader to re-read /proc/PID/maps
 * before it applies anything that follows.  Exit of the last
 * thread freezes every counter at its final value: what /proc showed just
 * before the process went.
 */
#ifndef MW_TASK_BPF_H
#define MW_TASK_BPF_H

static __always_inline void task_record(struct mw_proc *p, __u32 tgid,
					__u32 type, struct task_struct *task)
{
	union mw_scratch *sc = scratch_get(0);
	struct mw_task_rec *rec;

	if (!sc)
		return;
	rec = &sc->task;
	__builtin_memset(rec, 0, sizeof(*rec));
	bpf_probe_read_kernel_str(rec->comm, sizeof(rec->comm), task->comm);
	rec->exit_code = BPF_CORE_READ(task, exit_code);
	rec->total_vm = p->total_vm;
	hdr_fill(&rec->hdr, type, tgid, mw_add_fetch(&p->seq, 1));
	emit_rec(p, rec, sizeof(*rec), true);
}

/*
 * The new mm's counters as exec leaves them: the arguments' pages it
 * faulted in before the switch (whose events came with another mm
 * current, and were dropped), and what the first faults of the new program
 * made.  The next change of each counter starts from them.  Without this
 * the first event of the new mm set every counter to zero and its own to
 * its value: the others lost what they held until their next change, and
 * before 6.2 for good (the new program's 65 file pages and 9 argument
 * pages of a traced sh's exec on 5.10; a counter's fold into the mm
 * changes nothing, fault.bpf.h).  The caches are counted at the thread's
 * first look (split_flush): exec folded the old ones into the old mm.
 */
static __always_inline void exec_counters(struct mw_proc *p, struct mm_struct *mm)
{
	__s64 v[MW_NR_MEMBERS];

	for (int m = 0; m < MW_NR_MEMBERS; m++) {
		v[m] = mm_counter_now(mm, m);
		if (v[m] < 0)
			return;		/* as before: zero at its first event */
	}
	for (int m = 0; m < MW_NR_MEMBERS; m++) {
		p->rss[m] = v[m];
		p->rss_word[m] = (__u64)(v[m] >> page_shift) << MW_W_VAL_SHIFT;
	}
	/* Known from here: its first event takes its key, zeroes nothing. */
	p->mm_key = 0;
	mw_and(&p->flags, ~MW_PROC_HAD_MM);
	note_rss(p);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_process_exec, struct task_struct *task, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 tgid = MW_LD(task, tgid);
	struct mw_proc *p = proc_lookup(tgid);
	struct mm_struct *mm;

	if (!p)
		return 0;
	slots_harvest(p, tgid);		/* keys of the old mm */
	if (split_rss) {
		/* Before 6.2: the old mm took this thread's caches; what
		 * loading the new program put in them is counted at the
		 * first look, as before tracing (fault.bpf.h). */
		struct mw_thread *t = thread_get(task, false);

		if (t) {
			t->snap_valid = 0;
			t->in_fault = 0;
		}
	}
	mm = task_mm(task);
	/* A new mm: VM peak and RSS peak start again, as /proc's do. */
	p->total_vm = BPF_CORE_READ(mm, total_vm);
	p->vm_peak = p->total_vm;
	p->hiwater_vm_base = 0;
	p->rss_peak = 0;
	exec_counters(p, mm);
	p->xol_start = 0;	/* the new mm has no [uprobes] page yet */
	task_record(p, tgid, MW_REC_EXEC, task);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit, struct task_struct *task)
{
	__u32 tgid = MW_LD(task, tgid);
	struct mw_proc *p = proc_lookup(tgid);

	if (!p || (p->flags & MW_PROC_DEAD))
		return 0;
#ifdef MW_COMPAT
	{	/* the thread's state (task storage is freed with the task) */
		__u32 tid = MW_LD(task, pid);

		bpf_map_delete_elem(&threads, &tid);
	}
#endif
	/* A fault the thread leaves behind on this CPU is over (its process
	 * counted it as it began: fault.bpf.h). */
	cpu_fault_end(task, true);
	/* signal->live drops to 0 as the last thread exits (group_dead). */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	mw_or(&p->flags, MW_PROC_DEAD);
	slots_harvest(p, tgid);
	task_record(p, tgid, MW_REC_EXIT, task);
	return 0;
}

#endif /* MW_TASK_BPF_H */
