// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_callsite.c — call stacks through the analysis (--stacks): symbols,
 * the leaf fix-up, the cut at broken frame chains, which mapping gets which
 * stack, VM and RSS per call site and phase, folded output; and the id map
 * they are built on.
 */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/account.h"
#include "analysis/callsite.h"
#include "analysis/idmap.h"
#include "unit.h"
#include "records.h"
#include "util.h"

#define P	4096ull
#define MAP	0x7f0000000000ull
#define LIBC	0x7f1000000000ull	/* libc's text */
#define EXE	0x555555554000ull	/* the app's text */
#define RW	(MW_VM_READ | MW_VM_WRITE)
#define RET_MAIN	(EXE + 0x1200)	/* return address into main */
#define RET_ALLOC	(EXE + 0x1100)	/* return address into alloc_buf */
#define JUNK	0x1234567ull	/* a "return address" in no module */

/* An MW_S_SYM record naming @addr. */
static void feed_sym(struct mw_account *a, uint64_t addr, uint64_t sym_addr, const char *func,
		     const char *module, const char *file, uint32_t line, uint16_t flags)
{
	size_t fl = func ? strlen(func) + 1 : 0, ml = module ? strlen(module) + 1 : 0;
	size_t sl = file ? strlen(file) + 1 : 0, len = sizeof(struct mw_sym) + fl + ml + sl;
	struct mw_sym *s = calloc(1, len);
	char *p = (char *)(s + 1);

	*s = (struct mw_sym){ .pid = REC_PID, .addr = addr, .sym_addr = sym_addr,
			      .elf_addr = addr - EXE, .line = line, .func_len = fl,
			      .module_len = ml, .file_len = sl, .flags = flags };
	memcpy(p, func, fl);
	memcpy(p + fl, module, ml);
	memcpy(p + fl + ml, file, sl);
	feed_exact(a, MW_S_SYM, s, len);
	free(s);
}

/* The symbols capture would send for the stacks below. */
static void feed_syms(struct mw_account *a)
{
	feed_sym(a, LIBC + 0x10, LIBC, "__mmap", "/usr/lib/libc.so.6", NULL, 0, MW_SYM_LEAF);
	feed_sym(a, RET_ALLOC - 1, EXE + 0x10f0, "alloc_buf", "/usr/bin/app", "app.c", 21,
		 MW_SYM_FRAMED);
	feed_sym(a, RET_MAIN - 1, EXE + 0x11f0, "main", "/usr/bin/app", "app.c", 40,
		 MW_SYM_FRAMED);
	feed_sym(a, EXE + 0x1300, EXE + 0x1300, "fill", "/usr/bin/app", "app.c", 50,
		 MW_SYM_FRAMED);
	feed_sym(a, JUNK - 1, 0, NULL, NULL, NULL, 0, 0);
}

/* A stack record: @ips innermost first, @sp_word the word at the stack
 * pointer. */
static void feed_stack(struct mw_account *a, uint32_t kind, uint32_t seq, uint64_t addr,
		       uint64_t vm_bytes, uint64_t sp_word, const uint64_t *ips, uint32_t nr)
{
	struct mw_stack_rec r;

	memset(&r, 0, sizeof(r));
	r.hdr = rec_hdr(MW_REC_STACK, REC_PID, seq, 6000);
	r.kind = kind;
	r.nr = nr;
	r.addr = addr;
	r.vm_bytes = vm_bytes;
	r.sp_word = sp_word;
	memcpy(r.ips, ips, nr * sizeof(*ips));
	feed_exact(a, MW_S_BPF, &r, offsetof(struct mw_stack_rec, ips) + nr * sizeof(*ips));
}

static void attach(struct mw_account *a)
{
	attach_seed(a, SMAPS_APP_TEXT SMAPS_STACK, NULL);
}

/* mmap of @pages at MAP + @at, seq @seq, from alloc_buf via libc's leaf
 * wrapper: the frame-pointer chain has __mmap then main (alloc_buf has no
 * return address on the chain), and junk after. */
static void mmap_from_alloc(struct mw_account *a, uint32_t seq, uint64_t at, uint64_t pages)
{
	const uint64_t ips[] = { LIBC + 0x10, RET_MAIN, JUNK };
	struct mw_op_rec *r = op_new(MW_OP_MMAP, seq, 5000, MAP + at, MAP + at + pages * P,
				     35 + pages);

	r->args[1] = pages * P;
	r->ret = MAP + at;
	op_vma(r, MAP + at, MAP + at + pages * P, RW);
	feed_op(a, r);
	feed_stack(a, MW_STACK_OP, seq, MAP + at, pages * P, RET_ALLOC, ips, 3);
}

TEST(leaf_caller_put_back_and_junk_cut)
{
	struct mw_account a;
	struct mw_mapping *mp;
	const struct mw_stack *st;
	char buf[256];

	attach(&a);
	feed_syms(&a);
	mmap_from_alloc(&a, 1, 0, 16);
	mp = at(&a, MAP);
	if (!CHECK(mp != NULL) || !CHECK(mp->stack != 0))
		goto out;
	st = callsites_get(&a.sites, mp->stack);
	if (!CHECK_EQ_U64(st->nr, 3))	/* __mmap, alloc_buf, main; junk cut */
		goto out;
	CHECK_STR(callsites_frame_str(&a.sites, st->frames[0], buf, sizeof(buf)),
		  "__mmap+0x10 (libc.so.6)");
	CHECK_STR(callsites_frame_str(&a.sites, st->frames[1], buf, sizeof(buf)),
		  "alloc_buf+0xf (app) app.c:21");
	CHECK_STR(callsites_frame_str(&a.sites, st->frames[2], buf, sizeof(buf)),
		  "main+0xf (app) app.c:40");
	/* The call site is the first frame outside the C runtime. */
	CHECK_STR(callsites_site_str(&a.sites, mp->stack, buf, sizeof(buf)),
		  "alloc_buf+0xf (app) app.c:21");
	CHECK_EQ_U64(st->vm_bytes, 16 * P);
	CHECK_EQ_U64(st->calls, 1);
	CHECK_EQ_U64(a.sites.vm_bytes, 16 * P);
out:
	account_free(&a);
}

TEST(framed_function_keeps_its_chain)
{
	struct mw_account a;
	const uint64_t ips[] = { EXE + 0x1300, RET_MAIN };
	struct mw_mapping *mp;
	const struct mw_stack *st;

	attach(&a);
	feed_syms(&a);
	mmap_from_alloc(&a, 1, 0, 16);
	/* A fault in fill, which has its frame: sp_word is a local, even if
	 * it looks like a return address. */
	feed_stack(&a, MW_STACK_FAULT, 1, MAP, 0, RET_ALLOC, ips, 2);
	mp = at(&a, MAP);
	if (!CHECK(mp != NULL) || !CHECK(mp->fault_stack != 0))
		goto out;
	st = callsites_get(&a.sites, mp->fault_stack);
	CHECK_EQ_U64(st->nr, 2);
	CHECK(mp->fault_stack != mp->stack);
	/* A second first-fault record for the same mapping changes nothing. */
	feed_stack(&a, MW_STACK_FAULT, 1, MAP, 0, 0, ips + 1, 1);
	CHECK_EQ_U64(callsites_get(&a.sites, mp->fault_stack)->nr, 2);
out:
	account_free(&a);
}

TEST(same_stack_interned_once)
{
	struct mw_account a;
	uint32_t ids[4];

	attach(&a);
	feed_syms(&a);
	mmap_from_alloc(&a, 1, 0, 16);
	mmap_from_alloc(&a, 2, 0x100000, 4);
	CHECK_EQ_U64(at(&a, MAP)->stack, at(&a, MAP + 0x100000)->stack);
	CHECK_EQ_U64(callsites_top(&a.sites, -1, false, ids, 4), 1);
	CHECK_EQ_U64(callsites_get(&a.sites, ids[0])->vm_bytes, 20 * P);
	CHECK_EQ_U64(callsites_get(&a.sites, ids[0])->calls, 2);
	account_free(&a);
}

TEST(stack_of_another_op_not_attached)
{
	struct mw_account a;
	const uint64_t ips[] = { LIBC + 0x10 };

	attach(&a);
	feed_syms(&a);
	mmap_from_alloc(&a, 1, 0, 16);
	/* A stack whose seq is not the last op's (its op was lost): counted,
	 * attached to nothing. */
	feed_stack(&a, MW_STACK_OP, 7, MAP + 0x200000, 8 * P, 0, ips, 1);
	CHECK_EQ_U64(a.sites.vm_bytes, 24 * P);
	CHECK_EQ_U64(a.sites.nstacks, 2);
	account_free(&a);
}

/* RSS faulted in, per call site and phase, from the slots' peaks. */
TEST(rss_by_call_site_and_phase)
{
	struct mw_account a;
	struct mw_deltas_rec *d;
	struct mw_mark_rec mk;
	uint32_t ids[4], id;

	attach(&a);
	/* Tracing opens phase 0 ("start") with a marker of its own. */
	mk = mark_new(MW_MARK_PHASE, 0, 1500, 35, 16 * 1024, 8192);
	strcpy(mk.name, "start");
	feed_exact(&a, MW_S_BPF, &mk, sizeof(mk));
	feed_syms(&a);
	mmap_from_alloc(&a, 1, 0, 16);
	id = at(&a, MAP)->stack;
	d = deltas_new(0, 7000);
	deltas_add(d, MAP, 0, 8 * P, 0, 0, 10 * P, 10);	/* 10 pages in, 2 out */
	deltas_add(d, 0x7ffd00000000ull, 0, P, 0, 0, P, 1);	/* the stack: before */
	feed_deltas(&a, d);
	CHECK_EQ_U64(callsites_sum(&a.sites, -1, id).rss_bytes, 10 * P);
	CHECK_EQ_U64(callsites_sum(&a.sites, 0, id).rss_bytes, 10 * P);
	CHECK_EQ_U64(a.sites.rss_bytes, 11 * P);
	CHECK_EQ_U64(callsites_top(&a.sites, -1, true, ids, 4), 2);
	CHECK_EQ_U64(ids[0], id);
	CHECK_STR(callsites_site_str(&a.sites, ids[1], (char[64]){ 0 }, 64),
		  "[mapped before tracing]");

	mk = mark_new(MW_MARK_PHASE, 2, 8000, 51, 9 * P, 0);
	strcpy(mk.name, "load");
	feed_exact(&a, MW_S_BPF, &mk, sizeof(mk));
	d = deltas_new(0, 9000);
	deltas_add(d, MAP, 0, 3 * P, 0, 0, 3 * P, 3);
	feed_deltas(&a, d);
	CHECK_EQ_U64(callsites_sum(&a.sites, 1, id).rss_bytes, 3 * P);
	CHECK_EQ_U64(callsites_sum(&a.sites, 0, id).rss_bytes, 10 * P);
	CHECK_EQ_U64(callsites_sum(&a.sites, 1, id).vm_bytes, 0);
	CHECK_EQ_U64(callsites_sum(&a.sites, -1, id).rss_bytes, 13 * P);
	account_free(&a);
}

TEST(folded_sums_and_shape)
{
	struct mw_account a;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	attach(&a);
	feed_syms(&a);
	mmap_from_alloc(&a, 1, 0, 16);
	mmap_from_alloc(&a, 2, 0x100000, 4);
	f = open_memstream(&text, &len);
	CHECK_EQ_INT(callsites_folded(f, &a.sites, "my;app", false), 0);
	fclose(f);
	/* Root first, innermost last, no ';' inside a frame. */
	CHECK_STR(text, "my_app;main;alloc_buf;__mmap 81920\n");
	free(text);
	account_free(&a);
}

TEST(exec_forgets_addresses_keeps_stacks)
{
	struct mw_account a;
	struct mw_task_rec t;
	char buf[128];
	uint32_t id;

	attach(&a);
	feed_syms(&a);
	mmap_from_alloc(&a, 1, 0, 16);
	id = at(&a, MAP)->stack;
	memset(&t, 0, sizeof(t));
	t.hdr = rec_hdr(MW_REC_EXEC, REC_PID, 2, 9000);
	feed_exact(&a, MW_S_BPF, &t, sizeof(t));
	CHECK_EQ_U64(a.sites.by_addr.n, 0);
	CHECK_STR(callsites_site_str(&a.sites, id, buf, sizeof(buf)),
		  "alloc_buf+0xf (app) app.c:21");
	account_free(&a);
}

TEST(damaged_records_ignored)
{
	struct mw_account a;
	struct mw_sym s = { .addr = 0x1000, .func_len = 200 };
	char bad[sizeof(s) + 4];

	attach(&a);
	memcpy(bad, &s, sizeof(s));
	memcpy(bad + sizeof(s), "abcd", 4);
	feed_exact(&a, MW_S_SYM, bad, sizeof(bad));	/* lengths beyond the record */
	CHECK_EQ_U64(a.sites.nframes, 0);
	s.func_len = 4;					/* no NUL at its end */
	memcpy(bad, &s, sizeof(s));
	feed_exact(&a, MW_S_SYM, bad, sizeof(bad));
	CHECK(a.sites.nframes == 1 && !a.sites.frames[0].func);
	feed_exact(&a, MW_S_BPF, &(struct mw_stack_rec){ .hdr = rec_hdr(MW_REC_STACK, 1, 1, 1),
							 .nr = 64 },
		   offsetof(struct mw_stack_rec, ips) + 8);	/* claims 64, has 1 */
	CHECK_EQ_U64(a.sites.stack_recs, 1);
	CHECK_EQ_U64(a.sites.stacks[0].nr, 1);
	account_free(&a);
}

/* ---- --python ---- */
#define PYEXE	0x400000ull	/* python3.11's text */
#define CODE_MB	0x7e0000001000ull	/* code objects */
#define CODE_MAIN	0x7e0000002000ull
#define CODE_MOD	0x7e0000003000ull

/* An MW_REC_PYCODE: 8 code units, all on firstlineno + 3 (a no-column
 * entry of the location table). */
static void feed_pycode(struct mw_account *a, uint64_t code, const char *name, int first)
{
	struct mw_pycode_rec r;

	memset(&r, 0, sizeof(r));
	r.hdr = rec_hdr(MW_REC_PYCODE, REC_PID, 0, 5500);
	r.code = code;
	r.code_start = code + 184;
	r.firstlineno = first;
	snprintf(r.qualname, sizeof(r.qualname), "%s", name);
	snprintf(r.filename, sizeof(r.filename), "/home/u/script.py");
	r.linetable[0] = 0x80 | 13 << 3 | 7;
	r.linetable[1] = 6;	/* +3 */
	r.table_len = 2;
	feed_exact(a, MW_S_BPF, &r, offsetof(struct mw_pycode_rec, linetable) + 2);
}

/* make_buffer and main run in one _PyEval_EvalFrameDefault call (main is
 * its entry frame), <module> in an outer one. */
static void feed_pystack(struct mw_account *a, uint32_t seq, uint64_t addr)
{
	struct mw_py_rec r;

	memset(&r, 0, sizeof(r));
	r.hdr = rec_hdr(MW_REC_PYSTACK, REC_PID, seq, 6000);
	r.kind = MW_STACK_OP;
	r.addr = addr;
	r.nr = 3;
	r.frames[0] = (struct mw_py_frame){ CODE_MB, CODE_MB + 184 + 4 };
	r.frames[1] = (struct mw_py_frame){ CODE_MAIN, CODE_MAIN + 184 + 2 };
	r.frames[2] = (struct mw_py_frame){ CODE_MOD, CODE_MOD + 184 + 6 };
	r.entry_mask = 0x6;
	feed_exact(a, MW_S_BPF, &r, offsetof(struct mw_py_rec, frames) + 3 * sizeof(r.frames[0]));
}

static void py_mmap(struct mw_account *a, uint32_t seq, uint64_t at, const uint64_t *ips,
		    uint32_t nr, bool with_py)
{
	struct mw_op_rec *r = op_new(MW_OP_MMAP, seq, 5000, MAP + at, MAP + at + 16 * P, 51);

	r->args[1] = 16 * P;
	r->ret = MAP + at;
	op_vma(r, MAP + at, MAP + at + 16 * P, RW);
	feed_op(a, r);
	if (with_py)
		feed_pystack(a, seq, MAP + at);
	feed_stack(a, MW_STACK_OP, seq, MAP + at, 16 * P, 0, ips, nr);
}

static const char *frame_of(struct mw_account *a, const struct mw_stack *st, uint32_t i,
			    char *buf, size_t len)
{
	return i < st->nr ? callsites_frame_str(&a->sites, st->frames[i], buf, len) : "";
}

TEST(python_frames_stand_for_eval_frames)
{
	static const char py[] = "/usr/bin/python3.11";
	const uint64_t ips[] = { LIBC + 0x10, PYEXE + 0x101, PYEXE + 0x201, PYEXE + 0x301,
				 PYEXE + 0x202, PYEXE + 0x401 };
	const uint64_t fp[] = { LIBC + 0x10, PYEXE + 0x101 };
	static const char *const want[] = {
		"__mmap+0x10 (libc.so.6)", "PyByteArray_Resize+0x0 (python3.11)",
		"script.py:13 make_buffer", "script.py:23 main", "_PyObject_Call+0x0 (python3.11)",
		"script.py:3 <module>", "Py_BytesMain+0x0 (python3.11)",
	};
	struct mw_account a;
	const struct mw_stack *st;
	struct mw_mapping *mp;
	char buf[256];

	attach(&a);
	feed_sym(&a, LIBC + 0x10, LIBC, "__mmap", "/usr/lib/libc.so.6", NULL, 0, MW_SYM_LEAF);
	feed_sym(&a, PYEXE + 0x100, PYEXE + 0x100, "PyByteArray_Resize", py, NULL, 0, 0);
	feed_sym(&a, PYEXE + 0x200, PYEXE + 0x1f0, "_PyEval_EvalFrameDefault", py, NULL, 0, 0);
	feed_sym(&a, PYEXE + 0x201, PYEXE + 0x1f0, "_PyEval_EvalFrameDefault", py, NULL, 0, 0);
	feed_sym(&a, PYEXE + 0x300, PYEXE + 0x300, "_PyObject_Call", py, NULL, 0, 0);
	feed_sym(&a, PYEXE + 0x400, PYEXE + 0x400, "Py_BytesMain", py, NULL, 0, 0);
	feed_pycode(&a, CODE_MB, "make_buffer", 10);
	feed_pycode(&a, CODE_MAIN, "main", 20);
	feed_pycode(&a, CODE_MOD, "<module>", 0);
	py_mmap(&a, 1, 0, ips, 6, true);
	mp = at(&a, MAP);
	if (!CHECK(mp != NULL) || !CHECK(mp->stack != 0))
		goto out;
	st = callsites_get(&a.sites, mp->stack);
	CHECK_EQ_U64(st->nr, MW_ARRAY_SIZE(want));
	for (uint32_t i = 0; i < MW_ARRAY_SIZE(want); i++)
		CHECK_STR(frame_of(&a, st, i, buf, sizeof(buf)), want[i]);
	/* Past libc and the interpreter: the script's line. */
	CHECK_STR(callsites_site_str(&a.sites, mp->stack, buf, sizeof(buf)),
		  "script.py:13 make_buffer");

	/* A frame-pointer stack that stops inside the interpreter: the
	 * Python frames are its callers, at the outer end. */
	py_mmap(&a, 2, 64 * P, fp, 2, true);
	mp = at(&a, MAP + 64 * P);
	if (!CHECK(mp != NULL) || !CHECK(mp->stack != 0))
		goto out;
	st = callsites_get(&a.sites, mp->stack);
	CHECK_EQ_U64(st->nr, 5);
	CHECK_STR(frame_of(&a, st, 2, buf, sizeof(buf)), "script.py:13 make_buffer");
	CHECK_STR(frame_of(&a, st, 4, buf, sizeof(buf)), "script.py:3 <module>");

	/* Python frames of another record (seq 3) do not go with seq 4's stack. */
	feed_pystack(&a, 3, MAP + 128 * P);
	py_mmap(&a, 4, 128 * P, fp, 2, false);
	mp = at(&a, MAP + 128 * P);
	if (CHECK(mp != NULL) && CHECK(mp->stack != 0))
		CHECK_EQ_U64(callsites_get(&a.sites, mp->stack)->nr, 2);
out:
	account_free(&a);
}

/* Names read from a traced process reach text and JSON as valid UTF-8. */
TEST(names_made_printable)
{
	char *s;

	s = mw_xstrdup_text("at::empty_cpu(\xc3\xa9)");	/* é stays */
	CHECK_STR(s, "at::empty_cpu(\xc3\xa9)");
	free(s);
	s = mw_xstrdup_text("4\x80");		/* a stray continuation byte */
	CHECK_STR(s, "4?");
	free(s);
	s = mw_xstrdup_text("a\tb\xe2\x82");	/* a control, a cut sequence */
	CHECK_STR(s, "a?b??");
	free(s);
	s = mw_xstrdup_text("\xc0\xaf");		/* overlong '/' */
	CHECK_STR(s, "??");
	free(s);
}

TEST(idmap_basics)
{
	struct mw_idmap m = { 0 };
	uint32_t v = 0;

	CHECK(!idmap_get(&m, 5, &v));
	for (uint64_t k = 1; k <= 5000; k++)
		idmap_put(&m, k * 0x1000, (uint32_t)k);
	CHECK_EQ_U64(m.n, 5000);
	CHECK(idmap_get(&m, 4321 * 0x1000, &v) && v == 4321);
	idmap_put(&m, 4321 * 0x1000, 7);
	CHECK(idmap_get(&m, 4321 * 0x1000, &v) && v == 7);
	CHECK_EQ_U64(m.n, 5000);
	CHECK(!idmap_get(&m, 0, &v));
	idmap_put(&m, 0, 1);		/* reserved: ignored */
	CHECK_EQ_U64(m.n, 5000);
	idmap_free(&m);
	CHECK(!idmap_get(&m, 0x1000, &v));
}

/* Deletion keeps every other key reachable (backward shift): keys that
 * come and go, as process IDs do, against a plain array's truth. */
TEST(idmap_delete)
{
	struct mw_idmap m = { 0 };
	static uint32_t truth[20000];
	uint64_t x = 88172645463325252ULL;
	uint32_t v;
	int bad = 0;

	for (int round = 0; round < 200000; round++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint32_t k = (uint32_t)(x % 19999) + 1;

		if (x >> 60 < 9) {
			idmap_put(&m, k, round + 1);
			truth[k] = round + 1;
		} else {
			idmap_del(&m, k);
			truth[k] = 0;
		}
	}
	size_t n = 0;

	for (uint32_t k = 1; k < 20000; k++) {
		bool got = idmap_get(&m, k, &v);

		n += truth[k] != 0;
		bad += got != (truth[k] != 0) || (got && v != truth[k]);
	}
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(m.n, n);
	idmap_del(&m, 0);
	idmap_del(&m, 123456);		/* absent: nothing */
	CHECK_EQ_U64(m.n, n);
	idmap_free(&m);
}

/* Keys of small words do not collide: every pair (h, v) in [0, 512)^2
 * mixes to a different key (the old combiner gave mix(6, 1080) ==
 * mix(23, 5), and a Python frame took another's name). */
TEST(mix64_small_words)
{
	struct mw_idmap m = { 0 };
	uint32_t v = 0, clashes = 0;

	CHECK(mw_mix64(6, 1080) != mw_mix64(23, 5));
	for (uint64_t h = 0; h < 512; h++)
		for (uint64_t w = 0; w < 512; w++) {
			uint64_t k = mw_mix64(h, w);

			clashes += idmap_get(&m, k, &v) || !k;
			idmap_put(&m, k, (uint32_t)(h << 16 | w));
		}
	CHECK_EQ_U64(clashes, 0);
	CHECK_EQ_U64(m.n, 512 * 512);
	idmap_free(&m);
}

/* An MW_S_FRAMES record (capture's unwind of the copy) ahead of a stack. */
static void feed_frames(struct mw_account *a, uint32_t seq, const uint64_t *ips, uint32_t nr,
			uint16_t flags)
{
	size_t len = sizeof(struct mw_frames) + nr * sizeof(uint64_t);
	struct mw_frames *f = calloc(1, len);

	f->pid = REC_PID;
	f->tid = REC_PID;
	f->seq = seq;
	f->source = MW_FRAMES_NATIVE;
	f->flags = flags;
	f->nr = nr;
	memcpy(f->ips, ips, nr * sizeof(*ips));
	feed_exact(a, MW_S_FRAMES, f, len);
	free(f);
}

TEST(unwound_frames_replace_the_chain)
{
	struct mw_account a;
	/* The unwind found alloc_buf itself (no sp_word guess), then main. */
	const uint64_t unwound[] = { LIBC + 0x10, RET_ALLOC, RET_MAIN };
	const uint64_t fp[] = { LIBC + 0x10 };
	struct mw_op_rec *r;
	const struct mw_stack *st;
	char buf[256];
	FILE *f;
	size_t n;

	attach(&a);
	feed_syms(&a);
	r = op_new(MW_OP_MMAP, 1, 5000, MAP, MAP + 16 * P, 51);
	op_vma(r, MAP, MAP + 16 * P, RW);
	feed_op(&a, r);
	feed_frames(&a, 1, unwound, 3, 0);
	feed_stack(&a, MW_STACK_OP, 1, MAP, 16 * P, 0, fp, 1);
	st = callsites_get(&a.sites, at(&a, MAP) ? at(&a, MAP)->stack : 0);
	if (!CHECK(st != NULL) || !CHECK_EQ_U64(st->nr, 3))
		goto out;
	CHECK(!st->truncated);
	CHECK_STR(callsites_frame_str(&a.sites, st->frames[1], buf, sizeof(buf)),
		  "alloc_buf+0xf (app) app.c:21");
	CHECK_EQ_U64(a.sites.unwound, 1);
	/* Truncated: the same frames are another stack, marked so, and the
	 * folded line is rooted at [truncated]. */
	r = op_new(MW_OP_MMAP, 2, 5001, MAP + 0x100000, MAP + 0x100000 + 4 * P, 55);
	op_vma(r, MAP + 0x100000, MAP + 0x100000 + 4 * P, RW);
	feed_op(&a, r);
	feed_frames(&a, 2, unwound, 3, MW_FRAMES_TRUNCATED);
	feed_stack(&a, MW_STACK_OP, 2, MAP + 0x100000, 4 * P, 0, fp, 1);
	st = callsites_get(&a.sites, at(&a, MAP + 0x100000)->stack);
	CHECK(st && st->truncated);
	CHECK(at(&a, MAP + 0x100000)->stack != at(&a, MAP)->stack);
	CHECK_EQ_U64(a.sites.truncated, 1);
	f = tmpfile();
	if (!CHECK(f != NULL))
		goto out;
	callsites_folded(f, &a.sites, "app", false);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	CHECK(strstr(buf, "app;main;alloc_buf;__mmap 65536\n") != NULL);
	CHECK(strstr(buf, "app;[truncated];main;alloc_buf;__mmap 16384\n") != NULL);
	/* Frames for another record (seq 9) are not this one's. */
	r = op_new(MW_OP_MMAP, 3, 5002, MAP + 0x200000, MAP + 0x200000 + 4 * P, 59);
	op_vma(r, MAP + 0x200000, MAP + 0x200000 + 4 * P, RW);
	feed_op(&a, r);
	feed_frames(&a, 9, unwound, 3, 0);
	feed_stack(&a, MW_STACK_OP, 3, MAP + 0x200000, 4 * P, 0, fp, 1);
	st = callsites_get(&a.sites, at(&a, MAP + 0x200000)->stack);
	CHECK(st && st->nr == 1);
	/* A damaged one (nr past its length) is ignored. */
	{
		struct mw_frames bad = { .pid = REC_PID, .tid = REC_PID, .seq = 4,
					 .source = MW_FRAMES_NATIVE, .nr = 5 };

		feed_exact(&a, MW_S_FRAMES, &bad, sizeof(bad));
		CHECK(!a.sites.pend_valid);
	}
out:
	account_free(&a);
}

TEST(cxx_parameter_lists_left_out)
{
	const char *f;

	f = "mwtest::pool::reserve_arena(unsigned long)";
	CHECK_EQ_U64(callsites_func_brief(f), strlen("mwtest::pool::reserve_arena"));
	f = "at::detail::empty_cpu(c10::ArrayRef<long>, c10::ScalarType, bool)";
	CHECK_EQ_U64(callsites_func_brief(f), strlen("at::detail::empty_cpu"));
	f = "std::function<void (int)>::operator()(int) const";
	CHECK_EQ_U64(callsites_func_brief(f), strlen("std::function<void (int)>::operator()"));
	f = "c10::alloc_cpu(unsigned long) [clone .cold]";
	CHECK_EQ_U64(callsites_func_brief(f), strlen(f));	/* left whole */
	CHECK_EQ_U64(callsites_func_brief("malloc"), 6);
	CHECK_EQ_U64(callsites_func_brief("(anonymous)"), strlen("(anonymous)"));
	CHECK_EQ_U64(callsites_func_brief(NULL), 0);
}

int main(void)
{
	RUN(leaf_caller_put_back_and_junk_cut);
	RUN(framed_function_keeps_its_chain);
	RUN(same_stack_interned_once);
	RUN(stack_of_another_op_not_attached);
	RUN(rss_by_call_site_and_phase);
	RUN(folded_sums_and_shape);
	RUN(exec_forgets_addresses_keeps_stacks);
	RUN(damaged_records_ignored);
	RUN(unwound_frames_replace_the_chain);
	RUN(cxx_parameter_lists_left_out);
	RUN(python_frames_stand_for_eval_frames);
	RUN(names_made_printable);
	RUN(idmap_basics);
	RUN(idmap_delete);
	RUN(mix64_small_words);
	return unit_done();
}
