/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bpfstats.h — what memwatch's own BPF programs cost per run, for the
 * benchmark (MEMWATCH_BPF_STATS=1, scripts/bench/run --breakdown): the
 * kernel's run-time statistics of each program (BPF_ENABLE_STATS, held
 * for the run) and the time of each part of a traced call's work
 * (bpf/parts.bpf.h), printed on stderr when the capture ends.
 */
#ifndef MW_CAPTURE_BPFSTATS_H
#define MW_CAPTURE_BPFSTATS_H

#include <stdbool.h>
#include <stddef.h>

struct bpf_object;

/* MEMWATCH_BPF_STATS is set (and not 0). */
bool bpfstats_wanted(void);
/* ... and not to "programs": the parts are timed too (their clock reads
 * are in the programs' times then). */
bool bpfstats_parts_wanted(void);
/* The kernel's statistics on for as long as the returned fd is open; -1 and
 * one line on stderr where it refuses (before 5.8). */
int bpfstats_enable(void);
/* One line per program that ran ("memwatch: bpf: NAME N runs, X ns/run")
 * over the loaded programs of objs, then one per part of part_fd's
 * per-CPU sums (enum mw_part). */
void bpfstats_report(struct bpf_object *const *objs, size_t nobjs, int part_fd, int ncpus);

#endif /* MW_CAPTURE_BPFSTATS_H */
