/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * mark.bpf.h — phase and iteration markers.
 *
 * A marker fires in the traced process itself (uprobe on --phase-at/--iter
 * symbols, USDT probes from include/memwatch.h) or from the loader on behalf
 * of 'memwatch mark' and -i samples (a BPF_PROG_TYPE_SYSCALL program run with
 * BPF_PROG_TEST_RUN).  Either way it is emitted from BPF, in order with the
 * process's own records, with the totals as they are at that instant.
 */
#ifndef MW_MARK_BPF_H
#define MW_MARK_BPF_H

static __always_inline void emit_mark(struct mw_proc *p, __u32 tgid, __u32 kind,
				      __u32 id, const char *name, bool user_name,
				      __u64 total_vm)
{
	union mw_scratch *sc;
	struct mw_mark_rec *m;

	if (p->flags & MW_PROC_DEAD)
		return;
	/* A boundary takes the slots' RSS into the phase that ends; a sample
	 * reads the totals only, and leaves the slots alone: its harvest,
	 * taken by the loader's sampler thread at any moment, was a record
	 * in flight that a re-measure could not see (brk -p under load: the
	 * heap re-measured at the exit hold with the last 1 MiB in the
	 * buffer, then that 1 MiB applied on top). */
	if (kind != MW_MARK_SAMPLE)
		slots_harvest(p, tgid);
	sc = scratch_get(0);
	if (!sc)
		return;
	m = &sc->mark;
	__builtin_memset(m, 0, sizeof(*m));
	if (name && user_name)
		bpf_probe_read_user_str(m->name, sizeof(m->name), name);
	else if (name)
		bpf_probe_read_kernel_str(m->name, sizeof(m->name), name);
	if (total_vm)
		proc_note_vm(p, total_vm, 0);
	m->kind = kind;
	m->id = id;
	m->total_vm = p->total_vm;
	m->phase_vm_peak = p->phase_vm_peak;
	for (int i = 0; i < MW_NR_MEMBERS; i++)
		m->rss[i] = p->rss[i];
	m->phase_rss_peak = p->phase_rss_peak;
	m->faults = p->faults + p->kfaults;
	m->mapped_bytes = p->mapped_bytes;
	m->unmapped_bytes = p->unmapped_bytes;
	for (int i = 0; i < MW_FK_NR; i++)
		m->fk[i] = p->fk[i];
	m->pin = p->pin;
	if (kind == MW_MARK_PHASE) {
		/* Peaks of the phase that starts now start from here. */
		p->phase_vm_peak = p->total_vm;
		p->phase_rss_peak = p->rss[MW_FILE] + p->rss[MW_ANON] + p->rss[MW_SHMEM];
		p->pin.locked_peak = p->pin.locked;
		p->pin.pinned_peak = p->pin.pinned;
	}
	/* No structural sequence number: a marker changes no mapping, and the
	 * loader's own (samples, 'memwatch mark') run on another CPU than the
	 * process, so one taken here could overtake the process's next op
	 * record in the buffer and look like a lost record. */
	hdr_fill(&m->hdr, MW_REC_MARK, tgid, 0);
	emit_rec(p, m, sizeof(*m), true);
}

/* A marker in the traced process: its own mm says what VM is right now. */
static __always_inline void mark_here(__u32 kind, __u32 id, const char *name)
{
	__u32 tgid = current_tgid();
	struct mw_proc *p = proc_lookup(tgid);
	struct mm_struct *mm;

	if (!p)
		return;
	/* Before 6.2 the step's fault is placed late: look at it at once;
	 * the thread's last fault is over, its kind told before the mark. */
	if (split_rss && !p->xol_start)
		mw_or(&p->flags, MW_PROC_XOL_WATCH);
	if (split_rss) {
		split_flush_global(tgid);
		split_fault_over(tgid);
	}
	/* A mapping a call could not read comes before the boundary. */
	if (p->rewalk_end)
		rewalk_bare(tgid);
	mm = current_mm();
	proc_note_pin(p, BPF_CORE_READ(mm, locked_vm), BPF_CORE_READ(mm, pinned_vm.counter));
	emit_mark(p, tgid, kind, id, name, true, BPF_CORE_READ(mm, total_vm));
}

/* --phase-at / --iter: the cookie is (kind << 32) | spec index. */
SEC("uprobe")
int mark_uprobe(struct pt_regs *ctx)
{
#ifndef MW_COMPAT
	__u64 cookie = bpf_get_attach_cookie(ctx);

	mark_here(cookie >> 32, (__u32)cookie, NULL);
#endif
	return 0;
}

/*
 * Before 5.15 a program cannot tell which of its uprobes fired (no attach
 * cookie): a bank of programs, mark_uprobe_N for the Nth marker spec, each
 * taking its cookie from uprobe_cookie[N].  The main object has them too,
 * empty and never loaded, so that one skeleton serves both objects.
 */
#ifdef MW_COMPAT
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MW_UPROBE_BANK);	/* bpf/memwatch.h */
	__type(key, __u32);
	__type(value, __u64);
} uprobe_cookie SEC(".maps");

#define MW_UPROBE(n)							\
SEC("uprobe")								\
int mark_uprobe_##n(struct pt_regs *ctx)				\
{									\
	__u32 k = n;							\
	__u64 *cookie = bpf_map_lookup_elem(&uprobe_cookie, &k);	\
									\
	if (cookie)							\
		mark_here(*cookie >> 32, (__u32)*cookie, NULL);		\
	return 0;							\
}
#else
#define MW_UPROBE(n)							\
SEC("uprobe")								\
int mark_uprobe_##n(struct pt_regs *ctx)				\
{									\
	return 0;							\
}
#endif
MW_UPROBE(0) MW_UPROBE(1) MW_UPROBE(2) MW_UPROBE(3)
MW_UPROBE(4) MW_UPROBE(5) MW_UPROBE(6) MW_UPROBE(7)
MW_UPROBE(8) MW_UPROBE(9) MW_UPROBE(10) MW_UPROBE(11)
MW_UPROBE(12) MW_UPROBE(13) MW_UPROBE(14) MW_UPROBE(15)

SEC("usdt")
int BPF_USDT(usdt_phase, const char *name)
{
	mark_here(MW_MARK_PHASE, 0, name);
	return 0;
}

SEC("usdt")
int BPF_USDT(usdt_iter)
{
	mark_here(MW_MARK_ITER, 0, NULL);
	return 0;
}

/* 'memwatch mark', -i samples and MW_MARK_NOTE, run by the loader. */
static __always_inline void mark_loader(const struct mw_mark_args *args)
{
	struct mw_proc *p = proc_lookup(args->tgid);

	if (!p || (p->flags & MW_PROC_DEAD))
		return;
	if (args->locked != MW_PIN_UNKNOWN && args->pinned != MW_PIN_UNKNOWN)
		proc_note_pin(p, args->locked, args->pinned);
	if (args->kind != MW_MARK_NOTE)
		emit_mark(p, args->tgid, args->kind, 0, args->name, false, 0);
}

#ifndef MW_COMPAT
SEC("syscall")
int mark_syscall(struct mw_mark_args *args)
{
	mark_loader(args);
	return 0;
}
#else
/* Before 5.14 (no syscall programs): a raw tracepoint program, run by
 * BPF_PROG_TEST_RUN (5.10+) with the arguments in mark_args. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mw_mark_args);
} mark_args SEC(".maps");

SEC("raw_tp")
int mark_syscall(void *ctx)
{
	__u32 zero = 0;
	struct mw_mark_args *args = bpf_map_lookup_elem(&mark_args, &zero);

	if (args)
		mark_loader(args);
	return 0;
}
#endif

#endif /* MW_MARK_BPF_H */
