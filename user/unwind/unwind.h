/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unwind.h — native call stacks without frame pointers (--stacks with
 * --stack-bytes): the kernel copies the user registers and the top of the
 * user stack into each MW_REC_STACK record (bpf/stack.bpf.h); here, while
 * the process is alive, libdwfl unwinds the copy with the modules' CFI
 * (.eh_frame, .debug_frame), falling back to the frame-pointer chain per
 * frame where there is none (elfutils' backend unwinders), as perf's
 * --call-graph dwarf does.  The frames leave as an MW_S_FRAMES record.
 */
#ifndef MW_UNWIND_H
#define MW_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "memwatch.h"
#include "stream.h"
#include "unwind/symbolize.h"

struct mw_unwinder;

/* syms owns the process's Dwfl (its modules, reported once and refreshed
 * as libraries come); the unwinder attaches to it. */
struct mw_unwinder *unwinder_new(struct mw_symbolizer *syms, pid_t pid);
void unwinder_free(struct mw_unwinder *u);

/* Does the record (len bytes) carry a stack copy? */
int unwind_has_copy(const struct mw_stack_rec *rec, size_t len);

/*
 * Unwind the copy of rec into out (header and ips[], room for MW_FRAMES_MAX
 * frames).  Returns the frames found (0: none; the caller keeps the
 * frame-pointer ones).
 */
uint32_t unwinder_run(struct mw_unwinder *u, const struct mw_stack_rec *rec, size_t len,
		      struct mw_frames *out);

/* The stack words the last unwinding (into f) went by, as bytes above its
 * stack pointer, into off[MW_STACK_RECIPE_MAX]: how many, -1 more. */
int unwinder_reads(const struct mw_unwinder *u, const struct mw_frames *f, uint32_t *off);

/* Unwinds so far and their cost (wall time in the unwinder). */
struct mw_unwind_stats {
	uint64_t stacks, frames, truncated, failed;
	uint64_t pressure;	/* copies cut to 4 KiB by a half-full ring buffer */
	uint64_t ns, max_ns;
	uint64_t median_ns, p90_ns;	/* of every unwind (the first in a module
					 * reads its tables: the tail) */
};
void unwinder_stats(const struct mw_unwinder *u, struct mw_unwind_stats *st);

/* The register file of the copy in DWARF numbering (x86-64: rax rdx rcx rbx
 * rsi rdi rbp rsp r8-r15 rip, 17; arm64: x0-x30 sp pc, 33): how many. */
unsigned unwind_dwarf_regs(const uint64_t *raw, uint64_t *out);

#endif /* MW_UNWIND_H */
