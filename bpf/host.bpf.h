/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * host.bpf.h — host-wide tracing: every process (-a), those of one cgroup
 * (--cgroup), or given ones and their children (-p ... -f), each as a set of
 * totals in 'hosts'.  The RSS values are the kernel's counters, read whole at
 * every change, VM is mm->total_vm read after every address-space syscall;
 * nothing is attributed to mappings and nothing is streamed but exits, so a
 * busy host costs a map update per RSS change.  These programs load only
 * host-wide, in place of the per-process ones (capture.c).
 */
#ifndef MW_HOST_BPF_H
#define MW_HOST_BPF_H

const volatile bool host_join = false;		/* new processes join by themselves */
const volatile bool host_in_cgroup = false;	/* ... only under host_cg[0] */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);		/* sized by the loader in host mode */
	__type(key, __u32);
	__type(value, struct mw_host);
} hosts SEC(".maps");

/* mm -> tgid, to place changes made from other contexts (reclaim, a
 * parent's fork copying into the child). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, __u32);
} host_mm SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} host_cg SEC(".maps");

/* Device VM (bytes, bpf/vma.bpf.h: vma_is_device) in the range a call of
 * this thread is about to unmap or replace, from its entry to its exit;
 * only for processes that hold some. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} host_dev_gone SEC(".maps");

#define MW_MAP_FIXED		0x10	/* the same on every architecture here */
#define MW_MREMAP_FIXED		0x2
#define MW_HOST_DEV_WALK	16	/* VMAs walked in one call's range */
#define MW_DEV_SHORT		(1ULL << 63)

/* Does the current task belong to the traced set by itself? */
static __always_inline bool host_admits_current(void)
{
	if (!host_join)
		return false;
	return !host_in_cgroup || bpf_current_task_under_cgroup(&host_cg, 0) == 1;
}

/* RSS peak and VM peak after a change, as /proc's VmHWM and VmPeak. */
static __always_inline void host_note(struct mw_host *h)
{
	__u64 rss = h->rss[MW_FILE] + h->rss[MW_ANON] + h->rss[MW_SHMEM];

	if (rss > h->rss_peak)
		h->rss_peak = rss;
	if (h->total_vm > h->vm_peak)
		h->vm_peak = h->total_vm;
}

/* The counters of mm, whole: what /proc/PID/status would show now.  Needs
 * the per-CPU offsets (raw rss_stat); without them the first change of each
 * counter fills it in. */
static __always_inline void host_fill(struct mw_host *h, struct mm_struct *mm)
{
	__u32 zero = 0;
	struct mw_cpu_offsets *o = bpf_map_lookup_elem(&cpu_offsets_map, &zero);

	h->mm_key = (__u64)mm;
	h->total_vm = mm ? MW_LD(mm, total_vm) : 0;
	h->vm_peak = h->total_vm;
	h->locked = mm ? MW_LD(mm, locked_vm) : 0;
	h->pinned = mm ? MW_LD(mm, pinned_vm.counter) : 0;
	/* A new mm has no device mappings; a forked one is given its
	 * parent's (host_fork). */
	h->device_bytes = h->device_peak = 0;
	/* The peak is this mm's from here, read or not: before 6.2 (no
	 * per-CPU offsets) an exec kept the forked image's RSS peak, the
	 * parent's pages (a Python test runner's 18 MiB for a 12 MiB
	 * program), and its exit line said more than VmHWM. */
	h->rss_peak = 0;
	if (!o || !o->ready || !mm)
		return;
	for (__u32 m = 0; m < MW_NR_MEMBERS; m++)
		h->rss[m] = rss_counter_bytes(mm, m);
	host_note(h);
}

/* A new entry for task (the current one, or a child just forked). */
static __always_inline struct mw_host *host_add(__u32 tgid, struct task_struct *task,
						__u32 flags)
{
	struct mw_host h = {};
	struct mm_struct *mm = task_mm(task);

	h.flags = flags;
	h.cgroup_id = bpf_get_current_cgroup_id();
	h.first_ns = bpf_ktime_get_ns();
	bpf_probe_read_kernel_str(h.comm, sizeof(h.comm), task->comm);
	host_fill(&h, mm);
	if (bpf_map_update_elem(&hosts, &tgid, &h, BPF_NOEXIST))
		return bpf_map_lookup_elem(&hosts, &tgid);	/* raced: it is there */
	if (mm)
		bpf_map_update_elem(&host_mm, &h.mm_key, &tgid, BPF_ANY);
	return bpf_map_lookup_elem(&hosts, &tgid);
}

/* The current process's entry, made if it belongs to the traced set. */
static __always_inline struct mw_host *host_current(bool create)
{
	__u32 tgid = current_tgid();
	struct mw_host *h = bpf_map_lookup_elem(&hosts, &tgid);

	if (h || !create || !host_admits_current())
		return h;
	return host_add(tgid, mw_current_task(), 0);
}

/*
 * Faults are counted on the CPU (state.bpf.h: fault_cpu) and added to the
 * process's entry when the CPU's faulting task changes, at the process's
 * next RSS change, or at its exit: no map lookup per fault.
 */
static __always_inline void host_faults_add(struct mw_host *h, struct mw_cpu_fault *c)
{
	if (c->pending) {
		mw_add(&h->faults, c->pending);
		c->pending = 0;
	}
}

static __always_inline void host_fault(void)
{
	struct task_struct *task = mw_current_task();
	struct mw_cpu_fault *c = cpu_fault();

	if (!c)
		return;
	if (!cpu_fault_of(c, task, MW_LD(task, tgid))) {
		if (c->pending) {
			struct mw_host *h = bpf_map_lookup_elem(&hosts, &c->tgid);

			if (h)
				host_faults_add(h, c);
			c->pending = 0;
		}
		c->task = (__u64)task;
		c->tgid = MW_LD(task, tgid);
	}
	c->pending++;
}

/* The current task's faults counted on this CPU, into h. */
static __always_inline void host_faults_flush(struct mw_host *h, struct task_struct *task)
{
	struct mw_cpu_fault *c = cpu_fault();

	if (c && cpu_fault_of(c, task, MW_LD(task, tgid)))
		host_faults_add(h, c);
}

/* kmem:rss_stat, host-wide: one counter of the mm at key is now value,
 * or, given mm (a BTF pointer: the raw tracepoint), read it from mm. */
static __always_inline void host_rss(__u64 key, bool curr, __u32 member, __s64 value,
				     struct mm_struct *mm)
{
	struct mw_host *h = NULL;
	__u32 *owner, tgid;

	if (member >= MW_NR_MEMBERS)
		return;
	if (curr) {
		h = host_current(true);
		if (h && h->mm_key != key) {
			/* An mm we had not seen for it: the loader's seed
			 * from /proc, or a fresh one after exec. */
			h->mm_key = key;
			tgid = current_tgid();
			bpf_map_update_elem(&host_mm, &key, &tgid, BPF_ANY);
		}
	} else {
		owner = bpf_map_lookup_elem(&host_mm, &key);
		/* exit_mmap() of the process's own mm, by its last thread
		 * (task->mm already NULL).  Where do_exit() traces
		 * sched_process_exit after exit_mm() (6.12 and older; 6.18
		 * traces it before) this comes first, and would zero the
		 * counters the exit record should carry as /proc last
		 * showed them. */
		if (owner && *owner == current_tgid())
			return;
		if (owner)
			h = bpf_map_lookup_elem(&hosts, owner);
		if (h && h->mm_key != key)
			h = NULL;
	}
	if (!h)
		return;
	if (curr)
		host_faults_flush(h, mw_current_task());
	h->rss[member & (MW_NR_MEMBERS - 1)] = mm ? rss_counter_bytes(mm, member) : value;
	host_note(h);
}

struct dev_walk {
	__u64 addr, end, sum;
	bool hole;
};

static long dev_walk_step(__u64 i, struct dev_walk *w)
{
	struct vma_probe pr = {};

	if (w->addr >= w->end)
		return 1;
	if (vma_device_at(mw_current_task(), w->addr, &pr)) {
		w->hole = true;
		return 1;
	}
	if (pr.device)
		w->sum += (pr.end < w->end ? pr.end : w->end) - w->addr;
	w->addr = pr.end;
	return 0;
}

/*
 * Bytes of device VMAs in [start, end) of the current task's mm, walking at
 * most MW_HOST_DEV_WALK VMAs from start; MW_DEV_SHORT set where the walk
 * stopped before end (a hole, or more VMAs), and what lies beyond is not
 * counted.  Global, and its step a bpf_loop() callback: verified once.
 */
__noinline __u64 host_dev_bytes(__u64 start, __u64 end)
{
	struct dev_walk w = { .addr = start, .end = end };

	mw_loop(MW_HOST_DEV_WALK, dev_walk_step, &w);
	return w.hole || w.addr < w.end ? w.sum | MW_DEV_SHORT : w.sum;
}

/*
 * Before mmap(MAP_FIXED), mremap and munmap of a process holding device
 * memory: how much of it the call may remove, for its exit to take off.
 * Per thread, so concurrent calls of two threads do not mix.
 */
static __always_inline void host_call_enter(long nr, struct pt_regs *regs)
{
	__u64 a[6], gone, more = 0;
	struct mw_host *h;
	__u32 tid;

	if (nr != MW_NR_munmap && nr != MW_NR_mremap && nr != MW_NR_mmap)
		return;
	h = host_current(false);
	if (!h || !h->device_bytes || !regs)
		return;
	syscall_args(regs, a);
	if (nr == MW_NR_mmap && !(a[3] & MW_MAP_FIXED))
		return;		/* a free range: nothing replaced */
	gone = host_dev_bytes(a[0], MW_PAGE_ALIGN(a[0] + a[1]));
	if (nr == MW_NR_mremap && (a[3] & MW_MREMAP_FIXED))
		more = host_dev_bytes(a[4], MW_PAGE_ALIGN(a[4] + a[2]));
	if ((gone | more) & MW_DEV_SHORT)
		h->flags |= MW_HOST_DEV_SHORT;
	gone = (gone & ~MW_DEV_SHORT) + (more & ~MW_DEV_SHORT);
	if (!gone)
		return;
	tid = (__u32)bpf_get_current_pid_tgid();
	bpf_map_update_elem(&host_dev_gone, &tid, &gone, BPF_ANY);
}

/* After mmap, mremap or munmap: what left (host_call_enter), and what the
 * call mapped at ret, if a device's (its VMA: special mappings never
 * merge). */
static __always_inline void host_device(struct mw_host *h, long nr, long ret)
{
	struct vma_probe pr = {};
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	bool failed = ret < 0 && ret >= -MW_MAX_ERRNO;
	__u64 *gone;

	if (nr != MW_NR_munmap && nr != MW_NR_mremap && nr != MW_NR_mmap)
		return;
	gone = h->device_bytes ? bpf_map_lookup_elem(&host_dev_gone, &tid) : NULL;
	if (gone) {
		if (!failed)
			h->device_bytes -= *gone < h->device_bytes ? *gone : h->device_bytes;
		bpf_map_delete_elem(&host_dev_gone, &tid);
	}
	if (nr == MW_NR_munmap || failed)
		return;
	if (!vma_device_at(mw_current_task(), (__u64)ret, &pr) && pr.device && pr.start == (__u64)ret) {
		h->device_bytes += pr.end - pr.start;
		if (h->device_bytes > h->device_peak)
			h->device_peak = h->device_bytes;
	}
}

/* After an address-space syscall: VM, VmLck and VmPin as the mm has them,
 * and device VM. */
static __always_inline void host_syscall(long nr, long ret)
{
	struct mm_struct *mm;
	struct mw_host *h;
	__u64 vm;

	h = host_current(true);
	if (!h)
		return;
	host_device(h, nr, ret);
	mm = task_mm(mw_current_task());
	vm = MW_LD(mm, total_vm);
	h->locked = MW_LD(mm, locked_vm);
	h->pinned = MW_LD(mm, pinned_vm.counter);
	if (vm > h->total_vm)
		mw_add(&h->mapped_bytes, (vm - h->total_vm) << page_shift);
	else
		mw_add(&h->unmapped_bytes, (h->total_vm - vm) << page_shift);
	h->total_vm = vm;
	host_note(h);
}

/* A child of a followed process (-f), or any new one with -a/--cgroup,
 * joins as it forks, with the counters its copied mm starts with. */
static __always_inline void host_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	struct mw_host *p, *c = NULL;

	if (child->pid != ctgid)
		return;		/* a thread: its process is there already */
	p = bpf_map_lookup_elem(&hosts, &ptgid);
	if (p && (p->flags & MW_HOST_FOLLOW))
		c = host_add(ctgid, child, MW_HOST_FOLLOW);
	else if (host_admits_current())
		c = host_add(ctgid, child, 0);
	/* The child's mm is a copy: its device mappings too, but those the
	 * driver marked VM_DONTCOPY, which are not counted off here. */
	if (c && p && p->device_bytes) {
		c->device_bytes = c->device_peak = p->device_bytes;
		c->flags |= p->flags & MW_HOST_DEV_SHORT;
	}
}

/* exec: a new mm, new peaks, a new name. */
static __always_inline void host_exec(struct task_struct *task)
{
	__u32 tgid = MW_LD(task, tgid);
	struct mw_host *h = bpf_map_lookup_elem(&hosts, &tgid);

	if (!h)
		return;
	bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), task->comm);
	__builtin_memset(h->rss, 0, sizeof(h->rss));
	host_fill(h, task_mm(task));
	bpf_map_update_elem(&host_mm, &h->mm_key, &tgid, BPF_ANY);
}

/* The last thread exits: its totals go to the loader, its entry goes. */
static __always_inline void host_exit(struct task_struct *task)
{
	__u32 tgid = MW_LD(task, tgid);
	struct mw_host *h = bpf_map_lookup_elem(&hosts, &tgid);
	struct mw_host_exit_rec *rec;

	if (!h)
		return;
	host_faults_flush(h, task);
	rec = bpf_ringbuf_reserve(&rb, sizeof(*rec), 0);
	if (rec) {
		__builtin_memset(rec, 0, sizeof(*rec));
		rec->exit_code = BPF_CORE_READ(task, exit_code);
		rec->h = *h;
		hdr_fill(&rec->hdr, MW_REC_HOST_EXIT, tgid, 0);
		bpf_ringbuf_submit(rec, 0);
	} else {
		stat_lost(MW_REC_HOST_EXIT);
	}
	bpf_map_delete_elem(&host_mm, &h->mm_key);
	bpf_map_delete_elem(&hosts, &tgid);
}

/* ---- the programs ---------------------------------------------------------- */

SEC("tp_btf/rss_stat")
int BPF_PROG(host_rss_stat_raw, struct mm_struct *mm, int member)
{
	struct task_struct *task = mw_current_task();

	host_rss((__u64)mm, task_mm(task) == mm, member, -1, mm);
	return 0;
}

SEC("tracepoint/kmem/rss_stat")
int host_rss_stat(struct trace_event_raw_rss_stat *ctx)
{
	host_rss(ctx->mm_id, ctx->curr, ctx->member, ctx->size, NULL);
	return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(host_fault_user, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	host_fault();
	return 0;
}

SEC("tp_btf/page_fault_kernel")
int BPF_PROG(host_fault_kernel, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	if (mw_user_addr(address))
		host_fault();
	return 0;
}

/* Without the exceptions tracepoints (fault.bpf.h: on_mm_fault), each
 * fault once: not its retries, nor its second attempt after the per-VMA
 * lock's (mm_fault_again()). */
static __always_inline void host_mm_fault(__u64 address, __u32 flags, void *regs)
{
	struct task_struct *task = mw_current_task();
	struct mw_cpu_fault *c = cpu_fault();

	if (!c || !regs || (flags & MW_FAULT_FLAG_TRIED) || mm_fault_again(c, task, address))
		return;
	host_fault();
	c->f.addr = address;
	c->f.flt = task_faults_done(task);
}

SEC("fentry/handle_mm_fault")
int BPF_PROG(host_mm_fault_fentry, struct vm_area_struct *vma, unsigned long address,
	     unsigned int flags, struct pt_regs *regs)
{
	host_mm_fault(address, flags, regs);
	return 0;
}

SEC("kprobe/handle_mm_fault")
int BPF_KPROBE(host_mm_fault_kprobe, struct vm_area_struct *vma, unsigned long address,
	       unsigned int flags, struct pt_regs *regs)
{
	host_mm_fault(address, flags, regs);
	return 0;
}

/* Attached to syscalls:sys_exit_<call> for the calls that change VM, VmLck
 * or VmPin (the loader's list), or else the raw form below on every
 * syscall. */
SEC("tracepoint")
int host_sys_exit_tp(struct mw_sys_exit_ctx *ctx)
{
	host_syscall(ctx->nr, ctx->ret);
	return 0;
}

/* Attached to syscalls:sys_enter_{mmap,munmap,mremap} where the exits are
 * per call; else the raw form below. */
SEC("tracepoint")
int host_sys_enter_tp(struct mw_sys_enter_ctx *ctx)
{
	host_call_enter(ctx->nr, mw_task_pt_regs(mw_current_task()));
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(host_sys_enter, struct pt_regs *regs, long id)
{
	host_call_enter(id, regs);
	return 0;
}

/* Host-wide, the calls that move VmLck or VmPin and no VM are followed
 * too (user/capture/capture.c: host_calls). */
static __always_inline bool host_pin_call(long nr)
{
	return nr == MW_NR_mlockall || nr == MW_NR_munlockall || nr == MW_NR_io_uring_register;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(host_sys_exit, struct pt_regs *regs, long ret)
{
	long nr = MW_SYSCALL_NR(regs);

	if (syscall_op(nr) || host_pin_call(nr))
		host_syscall(nr, ret);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(host_process_fork, struct task_struct *parent, struct task_struct *child)
{
	host_fork(parent, child);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(host_process_exec, struct task_struct *task, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	host_exec(task);
	return 0;
}

/*
 * A process moved to another cgroup: its entry follows.  A container
 * runtime forks the payload in its own cgroup and moves it into the
 * container's after: the cgroup taken at the fork (host_add) was runc's.
 * The tracepoint fires after the move (cgroup_attach_task()), once per
 * hierarchy, with the thread group's leader.
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(host_cgroup_attach, struct cgroup *dst_cgrp, const char *path,
	     struct task_struct *task, bool threadgroup)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct mw_host *h = bpf_map_lookup_elem(&hosts, &tgid);

	if (h)
		h->cgroup_id = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(host_process_exit, struct task_struct *task)
{
	__u32 tgid = MW_LD(task, tgid);
	struct mw_host *h;

	/* signal->live drops to 0 as the last thread exits (group_dead). */
	if (BPF_CORE_READ(task, signal, live.counter) == 0) {
		host_exit(task);
	} else {
		/* A thread goes: the faults it left on this CPU stay counted. */
		h = bpf_map_lookup_elem(&hosts, &tgid);
		if (h)
			host_faults_flush(h, task);
	}
	return 0;
}

#endif /* MW_HOST_BPF_H */
