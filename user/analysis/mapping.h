/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * mapping.h — the types of one mapping: its kind, what the table keeps of
 * it, the smaps measure it may carry, a device number.  Types only: the
 * table and the functions on mappings are in model.h, what kind a mapping
 * is in classify.h.  Both need these, and classify.h needs nothing else
 * of the model, so the two headers share this one instead of each other.
 */
#ifndef MW_MAPPING_H
#define MW_MAPPING_H

#include <stdbool.h>
#include <stdint.h>

#include <bsd/sys/tree.h>	/* libbsd-dev: the BSDs' red-black tree macros */
#include <sys/queue.h>

#include "memwatch.h"

enum mw_kind {
	MW_K_ANON,
	MW_K_HEAP,
	MW_K_STACK,
	MW_K_FILE,
	MW_K_SHMEM,
	MW_K_DEVICE,
	MW_K_VDSO,
	MW_K_VVAR,
	MW_K_VSYSCALL,	/* the gate page: in maps, not in VmSize */
	MW_K_SPECIAL,	/* other kernel-installed mappings ([uprobes], ...) */
	MW_NR_KINDS,
};

/*
 * The kernel's smaps counters of one VMA, in bytes, read once at the end:
 * no event gives them (Pss and Locked need the pages' sharing counts,
 * AnonHugePages the PMD mappings that a split changes silently).
 */
struct mw_smaps_meas {
	uint64_t start, end;	/* the VMA measured (0, 0: none); a mapping
				 * whose range changed since has no measure */
	uint64_t pss, pss_dirty, swap, swap_pss, anon_huge, locked;
};

struct mw_mapping {
	RB_ENTRY(mw_mapping) node;	/* in the live table, if in_table */
	TAILQ_ENTRY(mw_mapping) recheck_node;	/* in m->recheck, if also recheck */
	uint64_t start, end;
	uint64_t flags;
	uint64_t pgoff;
	uint64_t ino;
	uint32_t dev_major, dev_minor;
	bool deleted;
	bool has_file;
	bool unmapped;
	bool in_table;		/* live and in m->live (model.c alone sets it) */
	bool rss_estimated;	/* a split had to guess how RSS divides */
	bool recheck;		/* RSS divided by a split: measure when quiet
				 * (model_set_recheck() while in the table) */
	bool settling;		/* split by a removal whose RSS the kernel gave:
				 * exact once settle_removed() ran */
	bool observer;		/* memwatch's own: the [uprobes] page its
				 * markers made the kernel map */
	enum mw_kind kind;
	char *path;		/* file path or kernel name ("[vdso]"), or NULL */
	int64_t rss[MW_NR_MEMBERS];	/* bytes, by kmem:rss_stat member */
	int64_t rss_peak;	/* highest file+anon+shmem */
	uint64_t faults;
	int64_t fk[MW_FK_NR];	/* of them, by kind (analysis/faultkind.h) */
	uint64_t requested;	/* bytes asked for by the calls that built it */
	uint64_t born_ns, died_ns;
	uint32_t born_seq;	/* creation order, for identity on merges */
	int phase;		/* index of the phase that created it */
	/* snapshots for growth per phase and per iteration (phase.c) */
	int64_t ph_rss0, it_rss0;
	uint64_t ph_size0, it_size0;
	uint32_t born_iter;	/* iteration it was created in, 0: none */
	uint32_t it_grows;	/* iterations in which it grew */
	uint32_t it_last_grow;	/* the last of them */
	int64_t it1_rss;	/* RSS it gained in the first iteration */
	uint32_t stack;		/* --stacks: the call that mapped most of it (callsite.h), 0: unknown */
	uint64_t stack_vm;	/* ... how much that call mapped, bytes */
	uint32_t fault_stack;	/* --stacks: its first fault's stack, 0: unknown */
	struct mw_smaps_meas sm;	/* smaps at the end measure (MW_SEED_MEASURE) */
};

/* A device number, major:minor (a tmpfs mount's: classify.h). */
struct mw_dev { uint32_t major, minor; };

#endif /* MW_MAPPING_H */
