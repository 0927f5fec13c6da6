/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * model.h — the mapping table: one process's VMAs as the kernel keeps them.
 *
 * Live mappings are kept in a red-black tree by start address and never
 * overlap; every change is expressed as "carve a range out" plus "the kernel
 * now has this VMA", which makes re-applying a kernel-reported state
 * harmless.  Finding, splitting, placing and removing cost O(log n) in the
 * number of live mappings, and the totals a record is checked against are
 * kept as it goes, so a record costs the same with 100 mappings or 60,000.
 * Mappings that go away are kept (capped) with the RSS they had when they
 * went.
 */
#ifndef MW_MODEL_H
#define MW_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bsd/sys/tree.h>	/* libbsd-dev: the BSDs' red-black tree macros */
#include <sys/queue.h>

#include "memwatch.h"
#include "analysis/mapping.h"

/* A VMA as the kernel reports it (from BPF or from /proc/PID/maps). */
struct mw_vma_state {
	uint64_t start, end;
	uint64_t flags;		/* MW_VM_* bits */
	uint64_t flags_known;	/* of them, those the source tells (maps:
				 * the perms only); 0: all (the kernel's) */
	uint64_t pgoff;		/* bytes */
	uint64_t ino;
	uint32_t dev_major, dev_minor;
	bool deleted;
	bool has_file;
	const char *path;	/* file path, or a bracketed name, or NULL */
};

/* Tells how much of [start, end) is resident right now (pagemap), so a split
 * mapping's RSS can be divided exactly.  Returns 0 or -errno. */
struct mw_oracle {
	int (*range_rss)(void *ctx, uint64_t start, uint64_t end,
			 uint64_t *anon, uint64_t *file);
	void *ctx;
};

RB_HEAD(mw_live, mw_mapping);

struct mw_model {
	/* Only model.c changes the tree and the ranges of what is in it
	 * (model_first() and friends walk it). */
	struct mw_live live;
	size_t nlive;
	uint64_t vm_bytes;	/* running sum: model_vm_bytes() */
	uint64_t kind_vm[MW_NR_KINDS];	/* ... by kind: model_kind_vm() */
	uint64_t device_vm_peak;	/* the highest kind_vm[MW_K_DEVICE] */
	/* The live mappings with recheck set, oldest first, and how many. */
	TAILQ_HEAD(mw_recheck, mw_mapping) recheck;
	size_t nrecheck;
	struct mw_mapping **dead;
	size_t ndead, dead_cap;
	size_t dead_limit;	/* keep at most this many unmapped mappings */
	struct mw_mapping folded;	/* unmapped ones beyond the limit, summed */
	size_t nfolded;
	struct mw_oracle oracle;
	bool split_settles;	/* carving for a removal that carries its RSS */
	/* Carving a range whose pages stay where they are (a VMA described
	 * anew: mprotect, madvise, a seed): a split asks the oracle about
	 * its smaller side, not the one outside the range (pagemap's walk
	 * is the size of what it reads; a page madvised in a large VMA was
	 * two large reads). */
	bool split_either;
	uint64_t split_guesses;	/* splits of RSS divided by size (no oracle) */
	uint64_t now_ns;	/* time stamp the next change carries */
	uint32_t next_seq;
	int phase;		/* current phase index, stamped on births */
	uint32_t iter;		/* current iteration (1-based), 0: none yet */
	uint64_t start_brk, brk, start_stack;	/* model_set_brk(), or a seed */
	/* Devices of tmpfs-like mounts: their file pages count as shmem. */
	struct mw_dev *shmem_devs;
	size_t nshmem_devs;
	/* Told of each mapping as it is buried, before it may be folded
	 * away (account.c keeps lifetimes); may be NULL. */
	void (*on_bury)(void *ctx, const struct mw_mapping *mp);
	void *on_bury_ctx;
};

/* A list of pieces carved out of the table, and the parts of split
 * mappings that stayed behind on either side. */
struct mw_pieces {
	struct mw_mapping **v;
	size_t n, cap;
	struct mw_mapping *kept_left, *kept_right;
};

void model_init(struct mw_model *m, size_t dead_limit);
void model_free(struct mw_model *m);

/* Live mappings in address order: the lowest, the one after or before mp
 * (NULL at either end).  Nothing may be placed or carved while walking. */
struct mw_mapping *model_first(const struct mw_model *m);
struct mw_mapping *model_next(const struct mw_mapping *mp);
struct mw_mapping *model_prev(const struct mw_mapping *mp);
#define model_for_each(mp, m) \
	for ((mp) = model_first(m); (mp); (mp) = model_next(mp))

/* The mapping containing addr, or NULL. */
struct mw_mapping *model_find(const struct mw_model *m, uint64_t addr);
/* The first mapping ending after addr, or NULL. */
struct mw_mapping *model_lower_bound(const struct mw_model *m, uint64_t addr);

/* Remove [lo, hi) from the table, splitting mappings at the edges; the parts
 * inside are appended to 'out' (the caller buries or places them). */
void model_carve(struct mw_model *m, uint64_t lo, uint64_t hi,
		 struct mw_pieces *out);
/* Insert a mapping that overlaps nothing. */
void model_place(struct mw_model *m, struct mw_mapping *mp);
/* Move a mapping to the unmapped list, as of m->now_ns. */
void model_bury(struct mw_model *m, struct mw_mapping *mp);
void model_bury_all(struct mw_model *m, struct mw_pieces *pieces);
void pieces_free(struct mw_pieces *p);

/* The kernel says this VMA exists now: the table takes exactly its range and
 * attributes, keeping the statistics of whatever it covered.  Returns it. */
struct mw_mapping *model_set_vma(struct mw_model *m,
				 const struct mw_vma_state *v);

/* A live mapping now starts lower, at start (a stack grown down to it):
 * nothing may be mapped in between. */
void model_grow_down(struct mw_model *m, struct mw_mapping *mp, uint64_t start);

/* Set or clear mp->recheck, keeping m->recheck and m->nrecheck.  Walk
 * those with TAILQ_FIRST() / TAILQ_NEXT(mp, recheck_node); clearing the
 * one walked is allowed. */
void model_set_recheck(struct mw_model *m, struct mw_mapping *mp, bool recheck);

/* Sum of live mapping sizes as /proc's VmSize counts them (no gate page):
 * kept as the table changes, O(1). */
uint64_t model_vm_bytes(const struct mw_model *m);
/* VM of the live mappings of one kind (MW_K_DEVICE: the device VM). */
uint64_t model_kind_vm(const struct mw_model *m, enum mw_kind k);
/* Sum of live mapping RSS of one member (a walk: for reports). */
int64_t model_rss(const struct mw_model *m, int member);
/* What the running totals and the tree should hold, re-derived the slow way:
 * NULL if they do, else what is wrong (tests, fuzzing). */
const char *model_check(const struct mw_model *m);

int64_t mapping_rss_total(const struct mw_mapping *mp);
/* mp's end measure, or NULL: none, or its range has changed since. */
const struct mw_smaps_meas *mapping_measured(const struct mw_mapping *mp);
/* Raise mp's peak RSS to total: whole pages, at most its size. */
void mapping_note_peak(struct mw_mapping *mp, int64_t total);
/*
 * A mapping's RSS is a whole number of pages, never below 0 and, resident,
 * never above its size.  mapping_take_rss() adds as much of @delta bytes
 * (whole pages) to member @member as that allows, raising the peak, and
 * returns what it took; mapping_clamp_rss() brings what an estimate left
 * outside back in, and says whether it had to (the caller flags the
 * mapping as estimated and re-measures it).
 */
int64_t mapping_take_rss(struct mw_mapping *mp, int member, int64_t delta);
bool mapping_clamp_rss(struct mw_mapping *mp);
/*
 * Add @delta bytes of member @member to the n mappings v[], in proportion
 * to w[i] (how much of each the change covered), in whole pages and within
 * the bounds above: the division's remainder, and what one cannot take, go
 * to the others.  Returns what none could take (0 unless @delta is more
 * than they hold or have room for, or no whole number of pages).
 */
int64_t mappings_apportion(struct mw_mapping *const *v, const uint64_t *w, size_t n,
			   int member, int64_t delta);
/* "rw-p" from the flags. */
void mapping_perms(const struct mw_mapping *mp, char out[5]);
/* Path as /proc/PID/maps prints it ("[heap]", "/x (deleted)", "" ...). */
const char *mapping_display_path(const struct mw_model *m,
				 const struct mw_mapping *mp,
				 char *buf, size_t len);
/* What kind mp is (mw_classify()) with m's heap, stack and tmpfs mounts. */
enum mw_kind model_kind(const struct mw_model *m, const struct mw_mapping *mp);
/* Re-derive kind (heap/stack depend on the model's brk and stack). */
void model_classify(struct mw_model *m, struct mw_mapping *mp);
/* The heap and the stack are now here: re-derive the kinds of the mappings
 * whose kind can change with them, those near the old and the new heap and
 * stack, and no others. */
void model_set_brk(struct mw_model *m, uint64_t start_brk, uint64_t brk,
		   uint64_t start_stack);

#endif /* MW_MODEL_H */
