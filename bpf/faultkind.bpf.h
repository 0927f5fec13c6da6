/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * faultkind.bpf.h — what each fault did, told by the RSS counters it moves
 * (bpf/memwatch.h: enum mw_fault_kind).  Included by fault.bpf.h where its
 * counter changes need it.
 */
#ifndef MW_FAULTKIND_BPF_H
#define MW_FAULTKIND_BPF_H

/*
 * Fault kinds, from the counters a fault moves (mm/memory.c): a new
 * anonymous page adds to MM_ANONPAGES (do_anonymous_page, a huge page's
 * 512 at once); a file or shmem page mapped adds to MM_FILEPAGES or
 * MM_SHMEMPAGES (fault-around: many at once); a private copy of a file page
 * takes one from the file counter and adds one anon (wp_page_copy); a
 * swap-in adds one anon and takes one MM_SWAPENTS (do_swap_page).  The
 * copy of an anonymous page shared with a fork, and a write-protect fault,
 * move none.  Whatever order the counters move in, the kind follows all
 * that the fault has moved so far, and a fault counts in one kind.
 */
#define MW_FKS_ANON_UP		0x1
#define MW_FKS_FILE_UP		0x2
#define MW_FKS_FILE_DOWN	0x4
#define MW_FKS_SWAP_DOWN	0x8
#define MW_FKS_REFAULT		0x10	/* with ANON_UP: the process had given pages back */
#define MW_FKS_DECIDED		0x20	/* ... which was looked at, when ANON_UP came */

/* seen, the bits a fault moves now (before: what it had moved), with its
 * first new anonymous pages, anon of them, told apart: a refault while the
 * process's calls have given back pages no fault has taken again (it takes
 * them), else a first touch.  Decided as the pages come, not when the kind
 * is told (before 6.2 that is later, split_fault_over()). */
static __always_inline __u32 fk_anon_decide(struct mw_proc *p, __u32 before, __u32 seen,
					    __s64 anon)
{
	__s64 given;

	if ((seen & (MW_FKS_ANON_UP | MW_FKS_DECIDED)) != MW_FKS_ANON_UP ||
	    (before & MW_FKS_ANON_UP))
		return seen;
	given = p->anon_given;
	if (given <= 0)
		return seen | MW_FKS_DECIDED;
	mw_add(&p->anon_given, -(anon < given ? anon : given));
	return seen | MW_FKS_DECIDED | MW_FKS_REFAULT;
}

static __always_inline void fk_add(struct mw_proc *p, __u32 slot1, __u32 kind, int v)
{
	kind = kind < MW_FK_NR ? kind : 0;
	/* clang 19 tests the bound on a copy of kind (old's, before the
	 * "- 1"), which 5.10's verifier does not tie to it: a mask it can
	 * see, on a value clang cannot reason about. */
	barrier_var(kind);
	kind &= 7;
	mw_add(&p->fk[kind], (__s64)v);
	if (slot1)
		mw_add(&p->slots[(slot1 - 1) & (MW_SLOTS - 1)].fk[kind], (__s64)v);
}

/* 1 + the kind, by the MW_FKS_* bits a fault has shown: swap-in before a
 * file copy before a new anonymous page before a file page. */
static const volatile __u8 fk_by_seen[16] = {
	[MW_FKS_ANON_UP] = 1 + MW_FK_FIRST_TOUCH,
	[MW_FKS_FILE_UP] = 1 + MW_FK_FILE,
	[MW_FKS_ANON_UP | MW_FKS_FILE_UP] = 1 + MW_FK_FIRST_TOUCH,
	[MW_FKS_FILE_DOWN] = 1 + MW_FK_COW_FILE,
	[MW_FKS_FILE_DOWN | MW_FKS_ANON_UP] = 1 + MW_FK_COW_FILE,
	[MW_FKS_FILE_DOWN | MW_FKS_FILE_UP] = 1 + MW_FK_COW_FILE,
	[MW_FKS_FILE_DOWN | MW_FKS_FILE_UP | MW_FKS_ANON_UP] = 1 + MW_FK_COW_FILE,
	[8] = 1 + MW_FK_SWAP_IN, [9] = 1 + MW_FK_SWAP_IN, [10] = 1 + MW_FK_SWAP_IN,
	[11] = 1 + MW_FK_SWAP_IN, [12] = 1 + MW_FK_SWAP_IN, [13] = 1 + MW_FK_SWAP_IN,
	[14] = 1 + MW_FK_SWAP_IN, [15] = 1 + MW_FK_SWAP_IN,
};

/* The MW_FKS_* bit of counter member moving by dpages pages. */
static __always_inline __u32 fk_seen(__u32 member, __s64 dpages)
{
	if (!dpages)
		return 0;
	if (member == MW_ANON)
		return dpages > 0 ? MW_FKS_ANON_UP : 0;
	if (member == MW_SWAP)
		return dpages < 0 ? MW_FKS_SWAP_DOWN : 0;
	return dpages > 0 ? MW_FKS_FILE_UP : MW_FKS_FILE_DOWN;
}

/* Fault f of p, whose VMA has slot slot1 (0: none), moved the counters of
 * MW_FKS_* bits seen (a new anonymous page's already decided).  Few
 * branches: the verifier walks this once for every state its caller
 * reaches it in. */
static __always_inline void fault_kind_do(struct mw_proc *p, __u32 slot1, struct mw_fault *f,
					  __u32 seen)
{
	__u32 kind, old;

	if (!p || !f || !seen)
		return;
	old = f->kind;
	seen |= f->kind_seen;
	if (seen == f->kind_seen)
		return;
	f->kind_seen = seen;
	kind = fk_by_seen[seen & 15];
	if (kind == 1 + MW_FK_FIRST_TOUCH && (seen & MW_FKS_REFAULT))
		kind = 1 + MW_FK_REFAULT;
	if (!kind || kind == old)
		return;
	f->kind = kind;
	fk_add(p, slot1, kind - 1, 1);
	if (old)
		fk_add(p, slot1, old - 1, -1);
}

/* 6.2+ (own_change): a subprogram, verified once at its one call site.
 * Before 6.2 split_fault_over(), a global function, tells the kind. */
static __noinline void fault_kind_note(struct mw_proc *p, __u32 slot1, struct mw_fault *f,
				       __u32 member, __s64 dpages)
{
	if (!p || !f)
		return;
	fault_kind_do(p, slot1, f, fk_anon_decide(p, f->kind_seen, fk_seen(member, dpages),
						  dpages));
}

#endif /* MW_FAULTKIND_BPF_H */
