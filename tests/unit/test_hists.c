// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_hists.c — unit tests for user/analysis/hists.c and user/output/report_hist.c: the
 * bucket each mmap length, lifetime and touched percentage lands in, the
 * split by phase (sizes by the calling phase, lifetimes by the unmapping
 * phase, touched by the creating phase) driven through account_feed()
 * with synthetic records, mappings folded past --max-unmapped still
 * counted, --hist parsing, the JSON shape and the text sections.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "analysis/account.h"
#include "analysis/hists.h"
#include "records.h"
#include "output/report.h"
#include "output/report_hist.h"
#include "unit.h"
#include "util.h"

#define P	4096ull
#define KiB	1024ull
#define MiB	(1024ull * 1024)
#define RW	(MW_VM_READ | MW_VM_WRITE)

/* ---- buckets ------------------------------------------------------------------ */

/* The slot a value went to, from a histogram holding just that value. */
static int only_slot(const struct mw_hist *h)
{
	int first, last;

	if (!hist_range(h, &first, &last) || first != last || h->count != 1)
		return -2;
	return first;
}

/* [low, high] of the one slot @len lands in as an mmap length. */
static void check_size_bucket(uint64_t len, uint64_t want_lo, uint64_t want_hi)
{
	struct mw_hists hs;
	struct mw_hist_set set;
	uint64_t lo = 1, hi = 0;
	int s;

	hists_init(&hs);
	hists_mmap(&hs, 0, len);
	hists_get(&hs, NULL, -1, &set);
	s = only_slot(&set.h[MW_HK_SIZE]);
	if (s >= 0)
		hist_bounds(s, &lo, &hi);
	if (!CHECK(lo == want_lo && hi == want_hi))
		fprintf(stderr, "  length %llu: [%llu, %llu], want [%llu, %llu]\n",
			(unsigned long long)len, (unsigned long long)lo, (unsigned long long)hi,
			(unsigned long long)want_lo, (unsigned long long)want_hi);
	hists_free(&hs);
}

TEST(size_buckets)
{
	check_size_bucket(1, 1, 1);
	check_size_bucket(4095, 2048, 4095);
	check_size_bucket(4096, 4096, 8191);
	check_size_bucket(6 * KiB, 4096, 8191);
	check_size_bucket(8191, 4096, 8191);
	check_size_bucket(8192, 8192, 16383);
	check_size_bucket(96 * KiB, 65536, 131071);
	check_size_bucket(1536 * KiB, 1048576, 2097151);
	check_size_bucket(12 * MiB, 8388608, 16777215);
	check_size_bucket(16 * MiB, 16777216, 33554431);
	check_size_bucket(195 * MiB, 134217728, 268435455);
}

static struct mw_mapping mapping(uint64_t size, int64_t peak)
{
	struct mw_mapping m;

	memset(&m, 0, sizeof(m));
	m.start = 0x7f0000000000ull;
	m.end = m.start + size;
	m.flags = RW;
	m.kind = MW_K_ANON;
	m.rss_peak = peak;
	return m;
}

/* The percentages of the brief: log2 buckets 0, 1, 2-3, 4-7, ... 64-127. */
TEST(touched_percent)
{
	struct mw_mapping m = mapping(195 * MiB, 24 * MiB);

	CHECK_EQ_INT(hists_touched_pct(&m), 12);	/* 24 of 195 MiB */
	m = mapping(8 * P, P);
	CHECK_EQ_INT(hists_touched_pct(&m), 12);	/* 12.5% rounds down */
	m = mapping(2 * P, P);
	CHECK_EQ_INT(hists_touched_pct(&m), 50);
	m = mapping(50 * P, P);
	CHECK_EQ_INT(hists_touched_pct(&m), 2);
	m = mapping(200 * P, P);
	CHECK_EQ_INT(hists_touched_pct(&m), 0);		/* 0.5% */
	m = mapping(100 * P, P);
	CHECK_EQ_INT(hists_touched_pct(&m), 1);
	m = mapping(4 * P, 4 * P);
	CHECK_EQ_INT(hists_touched_pct(&m), 100);
	m = mapping(4 * P, 0);
	CHECK_EQ_INT(hists_touched_pct(&m), 0);
	m = mapping(4 * P, -P);				/* a damaged record */
	CHECK_EQ_INT(hists_touched_pct(&m), 0);
	m = mapping(4 * P, 9 * P);			/* a guessed split */
	CHECK_EQ_INT(hists_touched_pct(&m), 100);
	m = mapping(1ull << 46, INT64_MAX);		/* no overflow */
	CHECK_EQ_INT(hists_touched_pct(&m), 100);
	m = mapping(1ull << 46, (1ull << 46) - 1);
	CHECK_EQ_INT(hists_touched_pct(&m), 99);

	/* What does not count: there before the trace, the kernel's own,
	 * a reservation nothing can touch, an empty range. */
	m = mapping(4 * P, P);
	m.phase = -1;
	CHECK_EQ_INT(hists_touched_pct(&m), -1);
	m = mapping(4 * P, P);
	m.kind = MW_K_VDSO;
	CHECK_EQ_INT(hists_touched_pct(&m), -1);
	m.kind = MW_K_VVAR;
	CHECK_EQ_INT(hists_touched_pct(&m), -1);
	m = mapping(4 * P, 0);
	m.flags = 0;					/* PROT_NONE */
	CHECK_EQ_INT(hists_touched_pct(&m), -1);
	m.flags = MW_VM_READ;
	CHECK_EQ_INT(hists_touched_pct(&m), 0);
	m = mapping(0, 0);
	CHECK_EQ_INT(hists_touched_pct(&m), -1);
}

/* Percentages into the touch histogram: which slot each lands in. */
TEST(touched_buckets)
{
	static const struct { int pct, lo, hi; } want[] = {
		{ 0, 0, 0 }, { 1, 1, 1 }, { 2, 2, 3 }, { 3, 2, 3 }, { 4, 4, 7 },
		{ 7, 4, 7 }, { 8, 8, 15 }, { 12, 8, 15 }, { 15, 8, 15 },
		{ 16, 16, 31 }, { 50, 32, 63 }, { 63, 32, 63 }, { 64, 64, 127 },
		{ 100, 64, 127 },
	};

	for (size_t i = 0; i < MW_ARRAY_SIZE(want); i++) {
		struct mw_hists hs;
		struct mw_hist_set set;
		struct mw_mapping m = mapping(100 * P, want[i].pct * P);
		uint64_t lo = 999, hi = 999;
		int s;

		m.died_ns = 1;
		hists_init(&hs);
		hists_buried(&hs, 0, &m);
		hists_get(&hs, NULL, 0, &set);
		s = only_slot(&set.h[MW_HK_TOUCH]);
		if (s >= 0)
			hist_bounds(s, &lo, &hi);
		if (!CHECK(lo == (uint64_t)want[i].lo && hi == (uint64_t)want[i].hi))
			fprintf(stderr, "  %d%%: [%llu, %llu]\n", want[i].pct,
				(unsigned long long)lo, (unsigned long long)hi);
		hists_free(&hs);
	}
}

TEST(lifetime)
{
	struct mw_mapping m = mapping(P, 0);

	m.born_ns = 1000;
	m.died_ns = 2501000;
	CHECK_EQ_INT(hists_lifetime_us(&m), 2500);
	m.died_ns = 1999;			/* under a microsecond */
	CHECK_EQ_INT(hists_lifetime_us(&m), 0);
	m.died_ns = 500;			/* damaged: death before birth */
	CHECK_EQ_INT(hists_lifetime_us(&m), 0);
	m.born_ns = 0;
	m.died_ns = 3600ull * 1000000000;	/* an hour */
	CHECK_EQ_INT(hists_lifetime_us(&m), 3600ll * 1000000);
	m.phase = -1;				/* birth unknown */
	CHECK_EQ_INT(hists_lifetime_us(&m), -1);
}

/* ---- through account_feed --------------------------------------------------------- */

#define MAP_A	0x7f0000000000ull	/* 6 KiB asked, 2 pages; 1 touched; unmapped in "two" */
#define MAP_B	0x7f0000100000ull	/* 100 KiB, 25 pages, all touched; half unmapped */
#define MAP_C	0x7f0000200000ull	/* 3 pages, phase "two", gone 500 ns later */
#define MAP_R	0x7f0000300000ull	/* PROT_NONE reservation, 16 pages */
#define MAP_W	0x7f0010000000ull	/* the 195 MiB window, 24 MiB touched */
#define W_SIZE	(195 * MiB)
#define SEED_VM	35			/* app text 2 pages, stack 33 */
#define TEXT_RSS	(2 * P)

static void mmap_op(struct mw_account *a, uint32_t seq, uint64_t ts, uint64_t start,
		    uint64_t asked, uint64_t flags, uint64_t total_vm)
{
	uint64_t end = start + ((asked + P - 1) & ~(P - 1));
	struct mw_op_rec *r = op_new(MW_OP_MMAP, seq, ts, start, end, total_vm);

	r->args[1] = asked;
	r->args[3] = 0x22;	/* MAP_PRIVATE | MAP_ANONYMOUS */
	op_vma(r, start, end, flags);
	feed_op(a, r);
}

static void touched(struct mw_account *a, uint32_t seq, uint64_t ts, uint64_t start,
		    int64_t bytes)
{
	struct mw_deltas_rec *d = deltas_new(seq, ts);

	deltas_add(d, start, 0, bytes, 0, 0, bytes, (uint64_t)bytes / P);
	feed_deltas(a, d);
}

static void mark(struct mw_account *a, uint32_t kind, uint32_t seq, uint64_t ts,
		 const char *name, uint64_t total_vm)
{
	struct mw_mark_rec mk = mark_new(kind, seq, ts, total_vm, 0, TEXT_RSS);

	if (name)
		strncpy(mk.name, name, sizeof(mk.name) - 1);
	feed_exact(a, MW_S_BPF, &mk, sizeof(mk));
}

static void finish(struct mw_account *a, uint64_t ts, uint64_t total_vm)
{
	struct mw_state *s = calloc(1, sizeof(*s));
	struct mw_end e = { .pid = REC_PID, .how = MW_END_EXITED, .wait_status = 0, .ts = ts };

	s->pid = REC_PID;
	s->final = 1;
	s->ts = ts - 1;
	s->proc.total_vm = total_vm;
	s->proc.rss[MW_FILE] = TEXT_RSS;
	feed_exact(a, MW_S_STATE, s, sizeof(*s));
	feed_exact(a, MW_S_END, &e, sizeof(e));
	free(s);
}

/*
 * start  mmap A (6 KiB asked: 2 pages, 1 touched), B (100 KiB, all 25
 *        touched), W (195 MiB, 24 MiB touched)
 * two    unmap A (lived 3990 us); map C (3 pages) and unmap it 500 ns
 *        later; map R (PROT_NONE, 16 pages); unmap the first 12 pages of
 *        B (lived 5980 us); two iterations
 */
static void run_session(struct mw_account *a, size_t dead_limit)
{
	account_init(a, REC_PID, dead_limit);
	feed_seed(a, MW_SEED_ATTACH, 1000, SB, BRK, SSTACK, SMAPS_APP_TEXT SMAPS_STACK,
		  NULL, "app");
	mark(a, MW_MARK_PHASE, 1, 2000, "start", SEED_VM);
	mmap_op(a, 2, 10000, MAP_A, 6 * KiB, RW, SEED_VM + 2);
	mmap_op(a, 3, 20000, MAP_B, 100 * KiB, RW, SEED_VM + 27);
	mmap_op(a, 4, 30000, MAP_W, W_SIZE, RW, SEED_VM + 27 + W_SIZE / P);
	touched(a, 4, 40000, MAP_A, P);
	touched(a, 4, 41000, MAP_B, 25 * P);
	touched(a, 4, 42000, MAP_W, 24 * MiB);

	mark(a, MW_MARK_PHASE, 5, 1000000, "two", SEED_VM + 27 + W_SIZE / P);
	feed_op(a, munmap_new(6, 4000000, MAP_A, MAP_A + 2 * P, P, SEED_VM + 25 + W_SIZE / P));
	mmap_op(a, 7, 5000000, MAP_C, 3 * P, RW, SEED_VM + 28 + W_SIZE / P);
	feed_op(a, munmap_new(8, 5000500, MAP_C, MAP_C + 3 * P, 0, SEED_VM + 25 + W_SIZE / P));
	mmap_op(a, 9, 5100000, MAP_R, 16 * P, 0, SEED_VM + 41 + W_SIZE / P);
	feed_op(a, munmap_new(10, 6000000, MAP_B, MAP_B + 12 * P, 12 * P,
			      SEED_VM + 29 + W_SIZE / P));
	mark(a, MW_MARK_ITER, 11, 6100000, NULL, SEED_VM + 29 + W_SIZE / P);
	mark(a, MW_MARK_ITER, 12, 6200000, NULL, SEED_VM + 29 + W_SIZE / P);
	finish(a, 7000000, SEED_VM + 29 + W_SIZE / P);
}

/* Histogram @h holds exactly the (low, count) pairs given, 0-ended
 * (counts of 0 are not listed; low 0 is written as the value 1ull<<63|0). */
static void check_slots(const struct mw_hist *h, const char *what, ...)
{
	struct mw_hist want;
	va_list ap;
	uint64_t low;
	bool ok = true;

	memset(&want, 0, sizeof(want));
	va_start(ap, what);
	while ((low = va_arg(ap, uint64_t))) {
		uint64_t count = va_arg(ap, uint64_t);

		low &= ~(1ull << 63);
		want.slot[low ? 64 - __builtin_clzll(low) : 0] += count;
		want.count += count;
	}
	va_end(ap);
	for (int i = 0; i < MW_HIST_SLOTS; i++)
		ok &= want.slot[i] == h->slot[i];
	ok &= want.count == h->count;
	if (!CHECK(ok)) {
		fprintf(stderr, "  %s: got", what);
		for (int i = 0; i < MW_HIST_SLOTS; i++)
			if (h->slot[i])
				fprintf(stderr, " slot %d: %llu", i, (unsigned long long)h->slot[i]);
		fprintf(stderr, "\n");
	}
}

#define ZERO	(1ull << 63)	/* the value 0 in check_slots() */

TEST(per_phase_split)
{
	struct mw_account a;
	struct mw_hist_set all, p0, p1, p2;

	run_session(&a, 0);
	if (!CHECK_EQ_U64(a.phases.n, 2))
		goto out;
	CHECK_EQ_U64(a.vm_mismatches, 0);
	hists_get(&a.hists, &a.model, -1, &all);
	hists_get(&a.hists, &a.model, 0, &p0);
	hists_get(&a.hists, &a.model, 1, &p1);
	hists_get(&a.hists, &a.model, 2, &p2);	/* no such phase: empty */

	/* Sizes: by the phase of the call, as asked (6 KiB, not 8). */
	check_slots(&p0.h[MW_HK_SIZE], "start sizes", 4096ull, 1ull, 65536ull, 1ull,
		    134217728ull, 1ull, 0ull);
	check_slots(&p1.h[MW_HK_SIZE], "two sizes", 8192ull, 1ull, 65536ull, 1ull, 0ull);
	check_slots(&all.h[MW_HK_SIZE], "all sizes", 4096ull, 1ull, 8192ull, 1ull,
		    65536ull, 2ull, 134217728ull, 1ull, 0ull);

	/* Lifetimes: by the phase of the unmap.  A 3990 us, C 0 us, the
	 * piece of B 5980 us; nothing died in "start". */
	check_slots(&p0.h[MW_HK_LIFE], "start lifetimes", 0ull);
	check_slots(&p1.h[MW_HK_LIFE], "two lifetimes", 2048ull, 1ull, ZERO, 1ull,
		    4096ull, 1ull, 0ull);
	check_slots(&all.h[MW_HK_LIFE], "all lifetimes", 2048ull, 1ull, ZERO, 1ull,
		    4096ull, 1ull, 0ull);

	/* Touched: by the creating phase.  start: A 50% (dead), both halves
	 * of B 100% (one dead, one live), W 12% (live).  two: C 0%; R is
	 * PROT_NONE and the seeded text and stack were there before. */
	check_slots(&p0.h[MW_HK_TOUCH], "start touched", 32ull, 1ull, 64ull, 2ull,
		    8ull, 1ull, 0ull);
	check_slots(&p1.h[MW_HK_TOUCH], "two touched", ZERO, 1ull, 0ull);
	check_slots(&all.h[MW_HK_TOUCH], "all touched", 32ull, 1ull, 64ull, 2ull,
		    8ull, 1ull, ZERO, 1ull, 0ull);
	for (int k = 0; k < MW_NR_HK; k++)
		CHECK_EQ_U64(p2.h[k].count, 0);
out:
	account_free(&a);
}

/* Past --max-unmapped the table sums the dead into one row; the
 * histograms must not lose them. */
TEST(folded_still_counted)
{
	struct mw_account a;
	struct mw_hist_set all;

	run_session(&a, 1);
	CHECK_EQ_U64(a.model.ndead, 1);
	CHECK_EQ_U64(a.model.nfolded, 2);
	hists_get(&a.hists, &a.model, -1, &all);
	CHECK_EQ_U64(all.h[MW_HK_LIFE].count, 3);
	check_slots(&all.h[MW_HK_TOUCH], "all touched", 32ull, 1ull, 64ull, 2ull,
		    8ull, 1ull, ZERO, 1ull, 0ull);
	account_free(&a);
}

/* A phase index far beyond any real trace (a damaged recording) only
 * counts in the whole trace. */
TEST(phase_out_of_range)
{
	struct mw_hists hs;
	struct mw_hist_set set;

	hists_init(&hs);
	hists_mmap(&hs, -1, 4096);
	hists_mmap(&hs, 1 << 30, 4096);
	hists_mmap(&hs, 3, 4096);
	hists_get(&hs, NULL, -1, &set);
	CHECK_EQ_U64(set.h[MW_HK_SIZE].count, 3);
	CHECK(hs.nphase >= 4 && hs.nphase < 1024);
	hists_get(&hs, NULL, 3, &set);
	CHECK_EQ_U64(set.h[MW_HK_SIZE].count, 1);
	hists_get(&hs, NULL, 1 << 30, &set);
	CHECK_EQ_U64(set.h[MW_HK_SIZE].count, 0);
	hists_free(&hs);
}

/* ---- --hist ------------------------------------------------------------------------ */

static void check_parse(const char *list, int want_err, unsigned int want)
{
	unsigned int got = 12345;
	int err = hists_parse(list, &got);

	if (!CHECK(err == want_err && (want_err || got == want)))
		fprintf(stderr, "  \"%s\": err %d bits %#x\n", list, err, got);
}

TEST(parse)
{
	const unsigned int C = MW_HISTS_CHOSEN;

	check_parse("size", 0, C | MW_HISTS_SIZE);
	check_parse("life,touch", 0, C | MW_HISTS_LIFE | MW_HISTS_TOUCH);
	check_parse("iter,size,iter", 0, C | MW_HISTS_ITER | MW_HISTS_SIZE);
	check_parse("all", 0, C | MW_HISTS_ALL);
	check_parse("none", 0, C);
	check_parse("", -1, 0);
	check_parse("size,", -1, 0);
	check_parse(",size", -1, 0);
	check_parse("sizes", -1, 0);
	check_parse("siz", -1, 0);
	check_parse("SIZE", -1, 0);
	check_parse("size touch", -1, 0);

	CHECK_EQ_U64(hists_selected(0), MW_HISTS_ITER);	/* no --hist */
	CHECK_EQ_U64(hists_selected(C), 0);
	CHECK_EQ_U64(hists_selected(C | MW_HISTS_SIZE), MW_HISTS_SIZE);
	CHECK_EQ_U64(hists_selected(C | MW_HISTS_ALL), MW_HISTS_ALL);
}

/* ---- reports ----------------------------------------------------------------------- */

static json_t *summary_of(const struct mw_account *a)
{
	struct report_opts ro = { .max_mappings = 100, .cmd_status = -1 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_t *o;

	if (!f)
		abort();
	report_json_summary(f, a, &ro);
	fclose(f);
	o = json_loads(buf, 0, NULL);
	free(buf);
	return o;
}

/* @arr is a histogram array: objects of exactly low, high, count; slots
 * adjacent; returns the sum of counts, or -1 when malformed. */
static long long hist_array_sum(json_t *arr)
{
	long long sum = 0, next = -1;
	size_t i;
	json_t *e;

	if (!json_is_array(arr))
		return -1;
	json_array_foreach(arr, i, e) {
		json_t *lo = json_object_get(e, "low"), *hi = json_object_get(e, "high");
		json_t *n = json_object_get(e, "count");

		if (!json_is_object(e) || json_object_size(e) != 3 || !json_is_integer(lo) ||
		    !json_is_integer(hi) || !json_is_integer(n))
			return -1;
		if ((next >= 0 && json_integer_value(lo) != next) ||
		    json_integer_value(hi) < json_integer_value(lo))
			return -1;
		next = json_integer_value(hi) + 1;
		sum += json_integer_value(n);
	}
	return sum;
}

/* The count of slot [@low, ...] in histogram array @arr, -1 if absent. */
static long long slot_count(json_t *arr, long long low)
{
	size_t i;
	json_t *e;

	json_array_foreach(arr, i, e)
		if (json_integer_value(json_object_get(e, "low")) == low)
			return json_integer_value(json_object_get(e, "count"));
	return -1;
}

TEST(json_shape)
{
	static const char *const keys[] = {
		"mmap_size_bytes", "lifetime_us", "touched_percent",
		"iteration_rss_growth_bytes", "iteration_vm_growth_bytes",
	};
	static const long long sums[] = { 5, 3, 5, 1, 1 };
	struct mw_account a;
	json_t *s, *h, *phases, *ph;

	run_session(&a, 0);
	s = summary_of(&a);
	if (!CHECK(s != NULL))
		goto out;
	h = json_object_get(s, "histograms");
	if (!CHECK(json_is_object(h)))
		goto out_json;
	CHECK_EQ_U64(json_object_size(h), MW_ARRAY_SIZE(keys));
	for (size_t k = 0; k < MW_ARRAY_SIZE(keys); k++)
		if (!CHECK_EQ_INT(hist_array_sum(json_object_get(h, keys[k])), sums[k]))
			fprintf(stderr, "  key %s\n", keys[k]);
	/* Bounds as hist.h has them: 6 KiB in [4096, 8191]. */
	CHECK_EQ_INT(json_integer_value(json_object_get(
		json_array_get(json_object_get(h, "mmap_size_bytes"), 0), "high")), 8191);
	CHECK_EQ_INT(slot_count(json_object_get(h, "touched_percent"), 8), 1);
	CHECK_EQ_INT(slot_count(json_object_get(h, "touched_percent"), 64), 2);
	/* The same numbers as the iterations' own. */
	CHECK(json_equal(json_object_get(h, "iteration_rss_growth_bytes"),
			 json_object_get(json_object_get(json_object_get(s, "iterations"), "steady"),
					 "rss_growth_hist")));

	phases = json_object_get(s, "phases");
	if (!CHECK_EQ_U64(json_array_size(phases), 2))
		goto out_json;
	ph = json_object_get(json_array_get(phases, 1), "histograms");
	if (CHECK(json_is_object(ph))) {
		CHECK_EQ_U64(json_object_size(ph), 3);
		CHECK_EQ_INT(hist_array_sum(json_object_get(ph, "mmap_size_bytes")), 2);
		/* 12 KiB and 64 KiB: the empty slots between are listed. */
		CHECK_EQ_U64(json_array_size(json_object_get(ph, "mmap_size_bytes")), 4);
		CHECK_EQ_INT(slot_count(json_object_get(ph, "mmap_size_bytes"), 16384), 0);
		CHECK_EQ_INT(hist_array_sum(json_object_get(ph, "lifetime_us")), 3);
		CHECK_EQ_INT(slot_count(json_object_get(ph, "lifetime_us"), 0), 1);
		CHECK_EQ_INT(slot_count(json_object_get(ph, "touched_percent"), 0), 1);
	}
	ph = json_object_get(json_array_get(phases, 0), "histograms");
	CHECK_EQ_INT(hist_array_sum(json_object_get(ph, "lifetime_us")), 0);
	CHECK_EQ_INT(hist_array_sum(json_object_get(ph, "touched_percent")), 4);
out_json:
	json_decref(s);
out:
	account_free(&a);
}

/* An empty histogram is an empty array, never absent or null. */
TEST(json_empty)
{
	struct mw_hist h;
	json_t *arr;

	memset(&h, 0, sizeof(h));
	arr = report_json_hist(&h);
	CHECK(json_is_array(arr) && json_array_size(arr) == 0);
	json_decref(arr);
	hist_add(&h, UINT64_MAX);	/* the top slot saturates, stays valid */
	arr = report_json_hist(&h);
	CHECK_EQ_INT(hist_array_sum(arr), 1);
	CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(arr, 0), "high")),
		     INT64_MAX);
	json_decref(arr);
}

static char *text_of(const struct mw_account *a, unsigned int hists, bool whole)
{
	struct report_opts ro = { .max_mappings = 25, .cmd_status = -1, .hists = hists };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	if (whole)
		report_text(f, a, &ro);
	else
		report_text_hists(f, a, &ro);
	fclose(f);
	return buf;
}

static size_t widest_line(const char *s)
{
	size_t w = 0;

	while (*s) {
		size_t l = strcspn(s, "\n");

		w = MW_MAX(w, l);
		s += l + (s[l] == '\n');
	}
	return w;
}

TEST(text_sections)
{
	struct mw_account a;
	unsigned int all;
	char *t;

	run_session(&a, 0);
	hists_parse("all", &all);
	t = text_of(&a, all, false);
	CHECK(widest_line(t) <= 80);
	CHECK(strstr(t, "mmap sizes asked (length argument), whole trace: 5 calls\n"));
	CHECK(strstr(t, "  mmap sizes in phase two: 2 calls\n"));
	CHECK(strstr(t, "      4096 -> 8191       : 1        |"));
	CHECK(strstr(t, "Lifetimes, mmap to munmap, of mappings made while traced: 3\n"));
	CHECK(strstr(t, "  unmapped in phase two: 3\n"));
	CHECK(!strstr(t, "  unmapped in phase start"));	/* nothing died there */
	CHECK(strstr(t, "Touched, peak RSS / size, of mappings made while traced: 5\n"));
	CHECK(strstr(t, "  made in phase start: 4\n"));
	CHECK(strstr(t, "              percent    : count    distribution\n"));
	/* The window stands out: listed first, 12% of 195 MiB. */
	CHECK(strstr(t, "Largest mappings touched under 25%, peak RSS / size (2 of 2; * gone)\n"));
	CHECK(strstr(t, "7f0010000000 anon    195.0 MiB   24.0 MiB   12% start         \n"));
	CHECK(strstr(t, "7f0000200000 anon     12.0 KiB        0 B    0% two          *\n"));
	CHECK(strstr(t, "195.0 MiB") < strstr(t, "12.0 KiB        0 B"));
	free(t);

	/* Only what was asked for. */
	hists_parse("life", &all);
	t = text_of(&a, all, false);
	CHECK(strstr(t, "Lifetimes") && !strstr(t, "mmap sizes") && !strstr(t, "Touched") &&
	      !strstr(t, "Largest mappings"));
	free(t);

	/* The default: the steady-state histogram only, as before --hist. */
	t = text_of(&a, 0, true);
	CHECK(strstr(t, "RSS growth per steady iteration:"));
	CHECK(!strstr(t, "mmap sizes") && !strstr(t, "Lifetimes") && !strstr(t, "Touched"));
	free(t);
	hists_parse("size", &all);
	t = text_of(&a, all, true);
	CHECK(!strstr(t, "RSS growth per steady iteration:") && strstr(t, "mmap sizes"));
	free(t);
	account_free(&a);
}

int main(void)
{
	RUN(size_buckets);
	RUN(touched_percent);
	RUN(touched_buckets);
	RUN(lifetime);
	RUN(per_phase_split);
	RUN(folded_still_counted);
	RUN(phase_out_of_range);
	RUN(parse);
	RUN(json_shape);
	RUN(json_empty);
	RUN(text_sections);
	return unit_done();
}
