/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * phase.h — phases and iterations: what each stage of a program's life cost.
 *
 * Markers (mw_mark_rec) carry the kernel's exact totals at the instant they
 * fire; a phase runs from one phase marker to the next, an iteration from
 * one iteration marker to the next (or to the next phase marker, or to the
 * end).  Per-mapping growth compares each mapping with a snapshot taken at
 * the phase's start.
 */
#ifndef MW_PHASE_H
#define MW_PHASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memwatch.h"
#include "analysis/model.h"

#define MW_TOP_GROWTH 5		/* mappings listed per phase */
#define MW_MAX_SAMPLES 4096	/* samples kept (even): more are thinned */
#define MW_MAX_ARENAS 4096	/* malloc arenas kept per phase: more count
				 * as given up (-E2BIG) */

struct mw_growth {
	uint64_t start, bytes, requested;
	int64_t vm_delta, rss_delta;
	enum mw_kind kind;
	char *path;		/* as /proc prints it */
	bool created;		/* born in this phase */
	bool unmapped;		/* gone by the phase's end */
};

/* Totals at one instant, from a marker or the kernel aggregate. */
struct mw_point {
	uint64_t ts;
	uint64_t vm;		/* bytes */
	uint64_t device_vm;	/* bytes of it in device mappings (the model's) */
	int64_t rss[MW_NR_MEMBERS];
	uint64_t faults, mapped, unmapped;
	int64_t fk[MW_FK_NR];	/* faults so far by kind (analysis/faultkind.h) */
	/* VmLck and VmPin (bytes), and their highest since the last phase
	 * mark as the kernel side saw them (bpf/memwatch.h struct mw_pin) */
	uint64_t locked, pinned, locked_peak, pinned_peak;
};

/* One of glibc's arenas walked at a phase's end (stream.h mw_heapfree). */
struct mw_arena_free {
	uint64_t mapping;	/* start of the mapping that holds it */
	bool main;
	uint64_t free_bytes, free_resident, trim_resident;
	int64_t rss_walk;	/* the mapping's RSS when it was walked */
};

struct mw_phase {
	char name[MW_MARK_NAME_LEN];
	struct mw_point start, end;
	uint64_t vm_peak, rss_peak;	/* bytes */
	uint64_t device_vm_start, device_vm_end;	/* VM of device mappings */
	uint64_t locked_peak, pinned_peak;	/* bytes: VmLck, VmPin */
	uint64_t observer_vm;	/* of start.vm: memwatch's [uprobes] page,
				 * mapped by the hit that began the phase */
	bool open;
	struct mw_growth top[MW_TOP_GROWTH];
	size_t ntop;
	/* release accounting, filled at the end of the trace */
	uint64_t born_bytes, released_bytes, remaining_bytes;
	int64_t remaining_rss;
	/* malloc's arenas, walked at its end (a release's): those read whole,
	 * and how many were given up and why (the first error) */
	struct mw_arena_free *arenas;
	size_t narenas, arenas_failed;
	int arenas_err;
};

struct mw_iter {
	struct mw_point start, end;
	uint64_t observer_vm;	/* of start.vm: memwatch's [uprobes] page,
				 * mapped by the hit that began the iteration */
	bool open;
};

struct mw_sample {
	struct mw_point at;
};

struct mw_phases {
	struct mw_phase *v;
	size_t n, cap;
	struct mw_iter *it;
	size_t nit, itcap;
	/*
	 * Samples kept for the timeline: all of them up to MW_MAX_SAMPLES, then
	 * every other one is dropped and only one in sample_stride is kept,
	 * so a run of days stays bounded.  The newest is always the last.
	 */
	struct mw_sample *samples;
	size_t nsamples, scap;
	uint64_t nsampled;	/* samples taken, kept or not */
	uint64_t sample_stride;	/* keep one in this many (0: not yet set) */
	bool sample_tail;	/* the last one is the newest, off the stride */
	struct mw_point sample_prev;	/* the sample before the newest */
	/* results of mw_phases_finish() */
	size_t settled_after;	/* 1-based; 0 without iterations */
	bool growing;
	/* Called for each marker as it is applied (live output); may be NULL. */
	void (*on_mark)(void *ctx, const struct mw_phases *ph, __u32 kind);
	void *on_mark_ctx;
};

int64_t point_rss(const struct mw_point *p);
/* The sample taken before the newest one (kept or thinned), or NULL. */
const struct mw_point *phases_prev_sample(const struct mw_phases *ph);

void phases_init(struct mw_phases *ph);
/* An arena walked (err 0) or given up (-errno) at the current phase's end. */
void phases_arena(struct mw_phases *ph, int err, const struct mw_arena_free *a);
void phases_free(struct mw_phases *ph);

/* A marker (or the trace's start, kind MW_MARK_PHASE "start"). */
void phases_mark(struct mw_phases *ph, struct mw_model *m, __u32 kind,
		 const char *name, const struct mw_point *at,
		 uint64_t vm_peak, uint64_t rss_peak);
/* The end of the trace: close what is open; settle the iterations. */
void phases_finish(struct mw_phases *ph, struct mw_model *m, const struct mw_point *at,
		   uint64_t vm_peak, uint64_t rss_peak);

/*
 * Settle detection on per-iteration growth (bytes).  settled_after is the
 * 1-based iteration after which no iteration grew by more than noise (64 KiB,
 * or 1/64 of the largest iteration's growth, whichever is more) or twice the
 * steady rate (the median growth of the second half); growing: most
 * iterations after it still added VM or RSS.
 */
void mw_settle(const int64_t *vm_delta, const int64_t *rss_delta, size_t n,
	       size_t *settled_after, bool *growing);

/* Is this mapping one of those that keep growing in the steady state? */
bool phases_mapping_grows(const struct mw_phases *ph, const struct mw_mapping *mp);

#endif /* MW_PHASE_H */
