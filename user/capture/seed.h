/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * seed.h — what capture reads from /proc: the starting layout of a process
 * (as an MW_S_SEED stream record) and the starting values of its kernel
 * aggregate.  Capture side: it touches /proc, analysis never does.
 */
#ifndef MW_SEED_H
#define MW_SEED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "memwatch.h"
#include "stream.h"

/* A malloc'd MW_S_SEED payload for pid; 0 or -errno.  until: a
 * CLOCK_MONOTONIC ns past which reading smaps gives up (-ETIME), 0: never. */
int seed_build(pid_t pid, enum mw_seed_mode mode, uint64_t until, struct mw_seed **out,
	       uint32_t *len);

/*
 * Kernel aggregate to start from, read from /proc/PID/status.  after_exec:
 * the process is stopped right after exec, so its VmPeak is all "while
 * traced"; otherwise the peak counts only from now on.
 */
int seed_proc_init(pid_t pid, bool after_exec, struct mw_proc *init);

#endif /* MW_SEED_H */
