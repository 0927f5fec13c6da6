/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * remote.bpf.h — calls of other processes that change a traced process's
 * RSS, where the call says at which addresses: process_madvise() (pageout,
 * cold, willneed, collapse), process_vm_readv()/process_vm_writev() (they
 * fault the target's pages in), process_mrelease() (it reaps a killed
 * process's memory before its exit does).
 *
 * The caller is some other process, which memwatch does not trace, so these
 * four calls have tracepoints of their own (only they pay; the raw fallback
 * picks them by number, syscalls.bpf.h).  At entry the target is resolved
 * (the pid argument, or the pidfd's struct pid through the caller's fd
 * table); if it is traced, the call is noted by thread ID.  Every RSS change
 * of the target's mm that this thread makes meanwhile (kmem:rss_stat from a
 * context that is not the mm's: fault.bpf.h rss_event) is added to the note
 * instead of being a change nobody can place; at exit one mw_remote_rec
 * carries it with the target's ranges (the remote iovec), and the loader
 * credits the mappings there.
 */
#ifndef MW_REMOTE_BPF_H
#define MW_REMOTE_BPF_H

#if defined(__TARGET_ARCH_x86)
enum { MW_NR_process_vm_readv = 310, MW_NR_process_vm_writev = 311 };
#elif defined(__TARGET_ARCH_arm64)
enum { MW_NR_process_vm_readv = 270, MW_NR_process_vm_writev = 271 };
#endif
enum { MW_NR_process_madvise = 440, MW_NR_process_mrelease = 448 };	/* both */

static __always_inline __u32 remote_call_of(long nr)
{
	switch (nr) {
	case MW_NR_process_madvise:	return MW_REMOTE_MADVISE;
	case MW_NR_process_vm_readv:	return MW_REMOTE_VM_READV;
	case MW_NR_process_vm_writev:	return MW_REMOTE_VM_WRITEV;
	case MW_NR_process_mrelease:	return MW_REMOTE_MRELEASE;
	default:			return 0;
	}
}

/* A call in progress on a traced process, by the caller's thread ID. */
struct mw_remote_call {
	__u32 tgid;		/* the traced target */
	__u32 call;		/* enum mw_remote */
	__u64 args[6];
	__s64 rss[MW_NR_MEMBERS];	/* its changes of the target's RSS so far */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct mw_remote_call);
} remote_calls SEC(".maps");

/* The global PID a struct pid carries, if it is a traced process's. */
static __always_inline __u32 pid_traced(struct pid *pid)
{
	__u32 nr = pid ? BPF_CORE_READ(pid, numbers[0].nr) : 0;

	return nr && proc_lookup(nr) ? nr : 0;
}

/* The traced process a pidfd of the current task refers to, 0: none.  Its
 * struct pid is the file's private_data (5.3 on) or, with pidfs (6.9 on),
 * the inode's i_private.  A file that is not a pidfd gives no traced tgid,
 * or one the call then refuses (EBADF), which sends nothing. */
static __always_inline __u32 pidfd_tgid(__u64 fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *f = NULL;
	__u32 nr;

	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), fds + (fd & 0xffffff)) || !f)
		return 0;
	nr = pid_traced(BPF_CORE_READ(f, private_data));
	return nr ?: pid_traced(BPF_CORE_READ(f, f_inode, i_private));
}

static __always_inline int remote_enter(const __u64 *a, __u32 call)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mw_remote_call r = { .call = call };
	struct mw_proc *p;

	/* process_vm_*: the pid as the caller's namespace numbers it, which is
	 * the global one outside containers; elsewhere a miss (its changes
	 * stay external, re-measured). */
	r.tgid = call == MW_REMOTE_MADVISE || call == MW_REMOTE_MRELEASE ?
		 pidfd_tgid(a[0]) : (__u32)a[0];
	/* A process's calls on itself are its own changes (fault.bpf.h). */
	if (!r.tgid || r.tgid == id >> 32)
		return 0;
	p = proc_lookup(r.tgid);
	if (!p || (p->flags & MW_PROC_DEAD))
		return 0;
	for (int i = 0; i < 6; i++)
		r.args[i] = a[i];
	if (bpf_map_update_elem(&remote_calls, &(__u32){ (__u32)id }, &r, BPF_ANY))
		return 0;
	/* What it changes is in no slot until its record: the loader must
	 * not measure the target meanwhile (user/trace.c reconcile_splits). */
	mw_add(&p->in_sys, 1);
	return 0;
}

/*
 * From rss_event: a change of traced process p's mm (its owner) by the
 * current thread, from outside it.  Returns the note of the remote call that
 * makes it, NULL if none.
 */
static __always_inline struct mw_remote_call *remote_of(__u32 owner)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct mw_remote_call *r = bpf_map_lookup_elem(&remote_calls, &tid);

	return r && r->tgid == owner ? r : NULL;
}

/*
 * The classic tracepoint keys an mm by a hash nothing here can compute, so
 * the mm of a process that has made no change of its own since tracing
 * began (idle, attached with -p) is unknown: a change of an unknown mm by
 * the thread of a call on it is taken to be its.  Marked as a guess: the
 * process's own first change corrects it (fault.bpf.h rss_event).
 */
static __always_inline __u32 *remote_learn(__u64 key)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), tgid;
	struct mw_remote_call *r = bpf_map_lookup_elem(&remote_calls, &tid);
	struct mw_proc *p;

	if (!r)
		return NULL;
	tgid = r->tgid;
	p = proc_lookup(tgid);
	if (!p || p->mm_key || (p->flags & (MW_PROC_HAD_MM | MW_PROC_DEAD)))
		return NULL;
	p->mm_key = key;
	mw_or(&p->flags, MW_PROC_HAD_MM | MW_PROC_MM_GUESSED);
	bpf_map_update_elem(&mm_owner, &key, &tgid, BPF_ANY);
	return bpf_map_lookup_elem(&mm_owner, &key);
}

#define MW_IOV_SIZE	16	/* struct iovec: base, len */
/* Out of line, and its record in the per-CPU scratch: inlined into
 * sys_exit_raw with the record on the stack, it made that program's frame
 * 360 bytes, and 6.1's verifier refused the chain below it ("combined stack
 * size of 3 calls is 544"). */
static __noinline int remote_exit(__s64 ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct mw_remote_call *n = bpf_map_lookup_elem(&remote_calls, &tid), r;
	union mw_scratch *sc = scratch_get(0);
	struct mw_remote_rec *rec;
	struct mw_proc *p;
	__u64 vec, cnt, iov[2];
	bool any = false;

	if (!n || !sc)
		return 0;
	r = *n;
	bpf_map_delete_elem(&remote_calls, &tid);
	p = proc_lookup(r.tgid);
	if (!p)
		return 0;
	mw_add(&p->in_sys, -1);
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		any |= r.rss[m] != 0;
	if (!any || (p->flags & MW_PROC_DEAD) || r.call == MW_REMOTE_MRELEASE)
		return 0;
	/* In the op record's scratch, not on the stack (see above). */
	rec = &sc->remote;
	__builtin_memset(rec, 0, sizeof(*rec));
	rec->call = r.call;
	rec->caller = bpf_get_current_pid_tgid() >> 32;
	rec->ret = ret;
	for (int i = 0; i < 6; i++)
		rec->args[i] = r.args[i];
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		rec->rss_delta[m] = r.rss[m];
	if (r.call == MW_REMOTE_MADVISE) {
		vec = r.args[1];	/* (pidfd, iovec, vlen, advice, flags) */
		cnt = r.args[2];
	} else {
		vec = r.args[3];	/* (pid, lvec, liovcnt, rvec, riovcnt, flags) */
		cnt = r.args[4];
	}
	if (cnt > MW_REMOTE_RANGES)
		rec->flags |= MW_REMOTE_F_MORE;
	for (int i = 0; i < MW_REMOTE_RANGES; i++) {
		if (i >= cnt)
			break;
		if (bpf_probe_read_user(iov, sizeof(iov), (void *)(vec + i * MW_IOV_SIZE))) {
			rec->flags |= MW_REMOTE_F_MORE;
			break;
		}
		rec->ranges[i].start = iov[0] & MW_PAGE_MASK;
		rec->ranges[i].end = MW_PAGE_ALIGN(iov[0] + iov[1]);
		rec->nr_ranges = i + 1;
	}
	/* Numbered like a structural record, so that the loader measures the
	 * target's mappings only once it has applied this one. */
	hdr_fill(&rec->hdr, MW_REC_REMOTE, r.tgid, mw_add_fetch(&p->seq, 1));
	emit(p, rec, sizeof(*rec));
	return 0;
}

#endif /* MW_REMOTE_BPF_H */
