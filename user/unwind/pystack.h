/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pystack.h — the analysis side of --python: the code objects capture
 * named (MW_S_PYCODE) and the Python frames of the stack record about to
 * come (MW_REC_PYSTACK), as (function, file, line) for callsite.c to merge
 * into the native stack.  Pure: tests/unit/test_callsite.c.
 */
#ifndef MW_UNWIND_PYSTACK_H
#define MW_UNWIND_PYSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/idmap.h"
#include "memwatch.h"

struct mw_pycode_ent {
	char *qualname, *file;		/* each may be NULL */
	int32_t firstlineno;
	uint32_t firsttraceable;
	uint64_t code_start;
	uint8_t *table;
	uint32_t table_len;
};

/* One Python frame of a stack: code (index into codes[]; PYF_NONE: an
 * empty interpreter call, whose frames were all left out) and its line.
 * seg_end: the last frame run by one _PyEval_EvalFrameDefault call. */
#define PYF_NONE	UINT32_MAX

struct mw_pyframe {
	uint32_t code;
	int32_t line;
	bool seg_end;
};

struct mw_pystacks {
	struct mw_pycode_ent *codes;
	size_t ncodes, codecap;
	struct mw_idmap by_code;	/* this address space: code address -> index */
	struct mw_py_rec pending;	/* the last MW_REC_PYSTACK, for its stack */
	bool pending_valid;
	uint64_t recs;			/* MW_REC_PYSTACK records seen */
};

void pystacks_init(struct mw_pystacks *ps);
void pystacks_free(struct mw_pystacks *ps);
void pystacks_exec(struct mw_pystacks *ps);
/* An MW_S_PYCODE stream record (the loader's), an MW_REC_PYCODE (BPF's). */
void pystacks_code(struct mw_pystacks *ps, const void *data, uint32_t len);
void pystacks_code_rec(struct mw_pystacks *ps, const void *data, uint32_t len);
void pystacks_rec(struct mw_pystacks *ps, const void *data, uint32_t len);
/*
 * The Python frames of the stack record with this header, kind and addr
 * (the pending record if it matches; it is used up either way), innermost
 * first, into out[max]: how many.  Frames whose code was never named and
 * frames not started yet (before the code's first traceable instruction,
 * as CPython's tracebacks leave them out) are skipped.
 */
size_t pystacks_take(struct mw_pystacks *ps, const struct mw_rec_hdr *h, uint32_t kind,
		     uint64_t addr, struct mw_pyframe *out, size_t max, bool *truncated);

#endif /* MW_UNWIND_PYSTACK_H */
