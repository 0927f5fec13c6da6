/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * account.h — analysis of one traced process: applies the capture stream
 * (stream.h) to the mapping table and keeps the process totals.
 */
#ifndef MW_ACCOUNT_H
#define MW_ACCOUNT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/callsite.h"
#include "analysis/hists.h"
#include "memwatch.h"
#include "analysis/model.h"
#include "analysis/phase.h"
#include "stream.h"

struct mw_account {
	pid_t pid;
	char comm[MW_COMM_LEN];
	struct mw_model model;

	struct mw_proc kstate;	/* last kernel aggregate (totals) */
	struct mw_drm_client *drm;	/* GPU memory at the end measure */
	size_t ndrm;
	bool have_kstate;
	uint64_t stats[MW_NR_STATS];	/* host-wide, from the kernel */

	uint32_t last_seq;	/* structural sequence, to detect lost records:
				 * the highest seen */
	/* Numbers skipped, waited for: two CPUs can send their records in
	 * the other order than they took their numbers (note_seq()). */
	struct mw_seq_wait {
		uint32_t seq;
		uint64_t due;	/* seq_seen by which it is lost */
		uint64_t ts;	/* ... or this + MW_LATE_READ_NS */
	} seq_wait[8];
	size_t nseq_wait;
	uint64_t seq_seen;	/* structural records seen */
	uint64_t seq_late;	/* ... that came after a later one */
	uint32_t last_hseq;	/* the last MW_REC_DELTAS applied (its hseq) */
	bool seq_known;
	uint64_t seq_gaps;	/* structural records known lost */
	uint64_t coalesced_windows; /* ring-buffer pressure windows (bpf/syscalls.bpf.h) */
	uint64_t behind_ns;	/* the end came this far behind the kernel */
	uint64_t unapplied;	/* ... with these structural records unread */
	bool need_resync;	/* the layout should be re-read from /proc */
	uint64_t resyncs;
	uint64_t reconciled;	/* mappings re-measured after a split */
	uint64_t remeasures;	/* every mapping re-measured: other contexts
				 * changed RSS at unknown addresses */
	uint64_t remote_calls;	/* other processes' calls placed (MW_REC_REMOTE) */
	int64_t remote_rss;	/* ... and the RSS they changed, bytes */
	bool concurrent;	/* the kernel saw concurrent RSS changes */
	uint64_t vm_mismatches;	/* model VM != kernel VM after a record */
	int64_t lost_attr[MW_NR_MEMBERS]; /* slot RSS that found no mapping */
	struct {			/* spread_rss()'s mappings and weights */
		struct mw_mapping **v;
		uint64_t *w;
		size_t cap;
	} spread;
	uint64_t lost_attr_faults;
	/* RSS a call changed in a range whose VMAs it could not read
	 * (MW_OPF_FIND_BUSY: a driver's insertion at mmap, MAP_POPULATE):
	 * kept with its range until the late read (MW_OP_REWALK) puts the
	 * mappings there, then spread, in the phase the call made it. */
	struct mw_late_rss {
		uint64_t start, end;
		__s64 rss[MW_NR_MEMBERS];
	} late[8];
	size_t nlate;
	/* Ranges calls could not read (MW_OPF_FIND_BUSY) that the kernel
	 * reads again at the process's next event (MW_OP_REWALK): the
	 * layout there is not re-read from /proc unless that read is not
	 * in within MW_LATE_READ_NS of the first, and the VM check waits
	 * for it.  busy_ts: the first such call's time, 0: none pending. */
	uint64_t busy_ts;
	/* A late read cut short (MW_OPF_WALK_SHORT: the range the kernel
	 * widened over many threads' calls held more VMAs than a record):
	 * the rest is re-read from /proc MW_LATE_READ_NS after, not at once
	 * (250 re-reads in 5 s on stress-ng --madvise's threads). */
	uint64_t short_ts;
	uint64_t seed_ts;	/* when the layout held was read from /proc */
	uint64_t late_reads;	/* ... read late, no /proc re-read */
	uint64_t execs;
	/* The end measure (MW_SEED_MEASURE): when, the sums over its VMAs,
	 * and smaps_rollup's Pss split, which no VMA's lines give. */
	struct {
		uint64_t ts;		/* 0: none */
		uint64_t nvmas, matched;	/* VMAs read, found in the table */
		struct mw_smaps_meas sum;
		bool rollup;
		uint64_t pss_anon, pss_file, pss_shmem;
	} smaps;
	/* The [uprobes] page memwatch's markers made the kernel map (the
	 * first hit that steps out of line), its own footprint: where, and
	 * the phase whose starting hit mapped it (-1: none). */
	uint64_t obs_start, obs_vm;
	int obs_phase;
	uint32_t umark_tid;	/* the thread whose marker was its last record */
	uint32_t umark_kind;

	struct mw_phases phases;
	struct mw_hists hists;	/* sizes, lifetimes, touched (hists.h) */
	struct mw_callsites sites;	/* --stacks: who mapped what (callsite.h) */
	struct mw_markname *marknames;
	size_t nmarknames;

	uint64_t start_ns, end_ns;
	uint64_t exit_ns;	/* when the last thread exited, from its record */
	bool ended, exited;
	int wait_status;	/* -1 unknown */
	uint64_t records;	/* stream records applied */
	bool json_started;	/* the JSON "start" line is out */
};

void account_init(struct mw_account *a, pid_t pid, size_t dead_limit);
/* Every mapping is to be measured again (MW_S_REMEASURE). */
void account_remeasure(struct mw_account *a);
void account_free(struct mw_account *a);

/* Apply one stream record. */
void account_feed(struct mw_account *a, const struct mw_srec *r);
/* now: CLOCK_MONOTONIC ns (the records' clock).  A late read the kernel
 * still owes past MW_LATE_READ_NS (memwatch.h) asks for a re-read from
 * /proc, and a record waited for that long counts as lost. */
void account_late_overdue(struct mw_account *a, uint64_t now);
/* Part of the layout is owed by a late read: phase ends re-read it. */
static inline bool account_layout_owed(const struct mw_account *a)
{
	return a->busy_ts || a->short_ts;
}

/* Totals, as /proc/PID/status showed them at the end (bytes). */
uint64_t account_lost(const struct mw_account *a);
uint64_t account_vm(const struct mw_account *a);
uint64_t account_vm_peak(const struct mw_account *a);
int64_t account_rss(const struct mw_account *a, int member);
int64_t account_rss_total(const struct mw_account *a);
uint64_t account_rss_peak(const struct mw_account *a);
/* RSS the mapping table does not place: total - sum over live mappings. */
int64_t account_unattributed(const struct mw_account *a);

#endif /* MW_ACCOUNT_H */
