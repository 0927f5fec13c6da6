/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * callsite.h — who mapped it (--stacks): the call stacks of the calls that
 * add mappings and of the first fault in each, named by the MW_S_SYM records
 * capture sends ahead of them, and the VM and RSS each stack accounts for,
 * per phase and in all.  Pure analysis: tests/unit/test_callsite.c.
 */
#ifndef MW_CALLSITE_H
#define MW_CALLSITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/idmap.h"
#include "memwatch.h"
#include "analysis/model.h"
#include "stream.h"
#include "unwind/pystack.h"

/* One named code address. */
struct mw_frame {
	uint64_t addr;		/* the address looked up (mw_frame_lookup) */
	uint64_t sym_addr;	/* function start, with func */
	uint64_t elf_addr;	/* addr in the module's ELF numbering */
	uint32_t line;
	uint16_t flags;		/* MW_SYM_* */
	bool python;		/* a Python frame: func in file at line (--python) */
	char *func, *module, *file;	/* each may be NULL */
};

/* A distinct stack, innermost frame first.  Ids are index + 1; 0: none. */
struct mw_stack {
	uint32_t *frames;	/* indexes into mw_callsites.frames */
	uint32_t nr;
	uint32_t site;		/* frames[site] is the call site shown */
	uint32_t user_py;	/* frames[user_py]: the innermost Python frame
				 * past the site outside the Python library
				 * (the script's); 0: none */
	bool truncated;		/* the stack goes on beyond the copy */
	uint64_t vm_bytes;	/* VM added by calls with this stack */
	uint64_t rss_bytes;	/* RSS faulted into the mappings they made */
	uint64_t calls;
};

struct mw_site_sum {
	uint64_t vm_bytes, rss_bytes;
};

struct mw_callsites {
	struct mw_frame *frames;
	size_t nframes, framecap;
	struct mw_idmap by_addr;	/* this address space: addr -> frame */
	struct mw_stack *stacks;
	size_t nstacks, stackcap;
	struct mw_idmap by_content;	/* frames hash -> id */
	struct mw_site_sum *sums;	/* per (phase, stack) */
	size_t nsums, sumcap;
	struct mw_idmap by_phase;	/* (phase, id) -> sums index */
	uint32_t before_id;		/* "[mapped before tracing]" */
	uint32_t unknown_id;		/* made during the trace, stack unknown */
	/* The last op applied: its stack record follows it. */
	bool op_valid;
	uint32_t op_seq, op_tid;
	uint64_t op_start, op_end;
	uint64_t stack_recs;	/* MW_REC_STACK records applied */
	uint64_t unwound;	/* ... of them with frames from MW_S_FRAMES */
	uint64_t truncated;	/* ... cut short */
	uint64_t cached;	/* ... whose frames a call-site cache kept */
	uint64_t cache_missed;	/* sent as cached, with no frames kept */
	/* The MW_S_FRAMES record for the stack record to come. */
	struct mw_frames *pend;	/* room for MW_FRAMES_MAX */
	bool pend_valid;
	uint64_t vm_bytes, rss_bytes;	/* sums over every stack */
	/* --python: code objects and the frames for the next stack. */
	struct mw_pystacks py;
	struct mw_idmap py_frames;	/* (code index, line) -> frame */
};

void callsites_init(struct mw_callsites *cs);
void callsites_free(struct mw_callsites *cs);

/* Stream hooks (account.c). */
void callsites_sym(struct mw_callsites *cs, const void *data, uint32_t len);
void callsites_frames(struct mw_callsites *cs, const void *data, uint32_t len);
void callsites_exec(struct mw_callsites *cs);
void callsites_pycode(struct mw_callsites *cs, const void *data, uint32_t len);
void callsites_pycode_rec(struct mw_callsites *cs, const void *data, uint32_t len);
void callsites_pystack(struct mw_callsites *cs, const void *data, uint32_t len);
void callsites_op(struct mw_callsites *cs, const struct mw_op_rec *r);
void callsites_stack(struct mw_callsites *cs, struct mw_model *m,
		     const struct mw_stack_rec *r, uint32_t len);
/* RSS faulted into a mapping, in the current phase. */
void callsites_rss(struct mw_callsites *cs, const struct mw_model *m,
		   const struct mw_mapping *mp, uint64_t bytes);

bool callsites_any(const struct mw_callsites *cs);
const struct mw_stack *callsites_get(const struct mw_callsites *cs, uint32_t id);

/* Frame i of stack id as text: "func+0x1f (module) file.c:12",
 * "script.py:12 func" for a Python frame,
 * "module+0x1234" without a symbol, "0x7f..." without a module. */
const char *callsites_frame_str(const struct mw_callsites *cs, uint32_t frame,
				char *buf, size_t len);
/* The same with a C++ function's parameter list left out (the text
 * report's narrow columns): "ns::Class::f+0x1f (module) file.cc:12". */
const char *callsites_frame_brief(const struct mw_callsites *cs, uint32_t frame,
				  char *buf, size_t len);
/* The length of func without its parameter list ("a::f(int) const" -> 4;
 * "operator()(int)" -> 10), or all of it when it has none. */
size_t callsites_func_brief(const char *func);
/* Is frame one of the runtime's, the interpreter's or an allocator's (not
 * a call site)? */
bool callsites_frame_runtime(const struct mw_callsites *cs, uint32_t frame);
/* The call site of stack id (its frame 'site'), or "" for id 0. */
const char *callsites_site_str(const struct mw_callsites *cs, uint32_t id,
			       char *buf, size_t len);

/* The stacks with the most VM (by_rss: RSS) in phase (-1: the whole trace),
 * biggest first: ids in out[], how many returned. */
size_t callsites_top(const struct mw_callsites *cs, int phase, bool by_rss,
		     uint32_t *out, size_t max);
/* The sums of stack id in phase (-1: the whole trace). */
struct mw_site_sum callsites_sum(const struct mw_callsites *cs, int phase, uint32_t id);

/* Folded stacks ("root;outer;...;inner bytes" per line) weighted by VM
 * mapped or RSS faulted in; 0 or -errno. */
int callsites_folded(FILE *f, const struct mw_callsites *cs, const char *root, bool by_rss);

#endif /* MW_CALLSITE_H */
