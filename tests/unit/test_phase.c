// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_phase.c — unit tests for user/analysis/phase.c: settle detection on
 * per-iteration growth, phases and iterations driven directly and through
 * account_feed() with synthetic marker, op and delta records, per-phase top
 * growth, release accounting, and naming the mappings that keep growing.
 *
 * Every record is copied to a heap buffer of exactly the length it is fed
 * with, so under -fsanitize=address any read past mw_srec.len aborts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/account.h"
#include "analysis/faultkind.h"
#include "analysis/model.h"
#include "analysis/phase.h"
#include "records.h"
#include "unit.h"

#define P	4096ll
#define KiB	1024ll
#define MiB	(1024ll * 1024)
#define RW	(MW_VM_READ | MW_VM_WRITE)

/* ---- mw_settle ---------------------------------------------------------------- */

struct settled {
	size_t after;
	bool growing;
};

static struct settled settle(const int64_t *vm, const int64_t *rss, size_t n)
{
	struct settled s = { 12345, true };
	/* Exact-size heap copies: no read past n goes unnoticed. */
	int64_t *v = malloc((n ? n : 1) * sizeof(*v)), *r = malloc((n ? n : 1) * sizeof(*r));

	memcpy(v, vm, n * sizeof(*v));
	memcpy(r, rss, n * sizeof(*r));
	mw_settle(v, r, n, &s.after, &s.growing);
	free(v);
	free(r);
	return s;
}

TEST(settle_flat)
{
	int64_t vm[10] = { 64 * MiB }, rss[10] = { 64 * MiB };
	struct settled s = settle(vm, rss, 10);

	CHECK_EQ_U64(s.after, 1);
	CHECK(!s.growing);
}

TEST(settle_leak)
{
	int64_t vm[10] = { 64 * MiB }, rss[10] = { 48 * MiB };
	struct settled s;

	for (int i = 1; i < 10; i++)
		vm[i] = 256 * KiB;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 1);
	CHECK(s.growing);

	/* The same leak seen in RSS only. */
	for (int i = 1; i < 10; i++) {
		vm[i] = 0;
		rss[i] = 256 * KiB;
	}
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 1);
	CHECK(s.growing);

	/* A small VM leak (one page an iteration) is still growth: any VM. */
	for (int i = 1; i < 10; i++) {
		vm[i] = P;
		rss[i] = 0;
	}
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 1);
	CHECK(s.growing);

	/* A steady 1 MiB an iteration: no setup, settled at once, growing. */
	for (int i = 0; i < 10; i++)
		vm[i] = rss[i] = MiB;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 1);
	CHECK(s.growing);
}

/* Setup spread over the first three iterations, then nothing. */
TEST(settle_window_setup)
{
	int64_t vm[10] = { 32 * MiB, 16 * MiB, 16 * MiB }, rss[10] = { 20 * MiB, 8 * MiB, MiB };
	struct settled s = settle(vm, rss, 10);

	CHECK_EQ_U64(s.after, 3);
	CHECK(!s.growing);

	/* Growth seen in RSS alone counts the same. */
	int64_t vm2[10] = { 32 * MiB }, rss2[10] = { 20 * MiB, 8 * MiB, MiB };
	s = settle(vm2, rss2, 10);
	CHECK_EQ_U64(s.after, 3);
	CHECK(!s.growing);

	/* Setup, then a leak: settled after the setup, and growing. */
	for (int i = 3; i < 10; i++)
		vm[i] = 128 * KiB;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 3);
	CHECK(s.growing);
}

TEST(settle_noise)
{
	int64_t vm[10] = { 64 * MiB }, rss[10] = { 64 * MiB };
	struct settled s;

	for (int i = 1; i < 10; i++)
		rss[i] = i % 2 ? 4 * KiB : -4 * KiB;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 1);
	CHECK(!s.growing);

	/* Up to 64 KiB of RSS is noise, also when it happens every time... */
	for (int i = 1; i < 10; i++)
		rss[i] = 64 * KiB;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 1);
	CHECK(!s.growing);
	/* ...one byte more is growth. */
	for (int i = 1; i < 10; i++)
		rss[i] = 64 * KiB + 1;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 1);
	CHECK(s.growing);

	/* Shrinking iterations are not growth. */
	for (int i = 1; i < 10; i++)
		vm[i] = rss[i] = -MiB;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 1);
	CHECK(!s.growing);
}

TEST(settle_edges)
{
	int64_t vm[2] = { 64 * MiB, 0 }, rss[2] = { 64 * MiB, 0 };
	size_t after = 99;
	bool growing = true;
	struct settled s;

	/* No iterations: nothing to settle. */
	mw_settle(NULL, NULL, 0, &after, &growing);
	CHECK_EQ_U64(after, 0);
	CHECK(!growing);

	/* One: settled after it, whatever it did. */
	s = settle(vm, rss, 1);
	CHECK_EQ_U64(s.after, 1);
	CHECK(!s.growing);
	vm[0] = 0;
	s = settle(vm, rss, 1);
	CHECK_EQ_U64(s.after, 1);
	CHECK(!s.growing);

	/* Two. */
	vm[0] = 64 * MiB;
	s = settle(vm, rss, 2);
	CHECK_EQ_U64(s.after, 1);
	CHECK(!s.growing);
	vm[1] = 256 * KiB;
	s = settle(vm, rss, 2);
	CHECK_EQ_U64(s.after, 1);
	CHECK(s.growing);
	/* The second as big as the first: the steady rate, twice, is the
	 * limit, so it is not a setup iteration; it still grew. */
	vm[1] = rss[1] = 64 * MiB;
	s = settle(vm, rss, 2);
	CHECK_EQ_U64(s.after, 1);
	CHECK(s.growing);
	vm[1] = rss[1] = 4 * KiB;
	s = settle(vm, rss, 2);
	CHECK_EQ_U64(s.after, 1);
	CHECK(s.growing);		/* VM grew, by however little */
	vm[1] = 0;
	s = settle(vm, rss, 2);
	CHECK_EQ_U64(s.after, 1);
	CHECK(!s.growing);
}

TEST(settle_late_spike)
{
	int64_t vm[10] = { 64 * MiB }, rss[10] = { 64 * MiB };
	struct settled s;

	/* One late spike: settled only after it, and flat since. */
	vm[8] = rss[8] = 8 * MiB;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 9);
	CHECK(!s.growing);

	/* In the very last iteration: nothing after it to judge. */
	vm[8] = rss[8] = 0;
	rss[9] = 8 * MiB;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 10);
	CHECK(!s.growing);

	/* A spike on top of a leak: more than twice the rate (a first
	 * iteration of 16 MiB makes 256 KiB the scale's noise). */
	vm[0] = rss[0] = 16 * MiB;
	for (int i = 1; i < 10; i++)
		vm[i] = 256 * KiB;
	rss[9] = 0;
	vm[5] = 513 * KiB;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 6);
	CHECK(s.growing);
	/* Exactly twice the rate is not a spike. */
	vm[5] = 512 * KiB;
	s = settle(vm, rss, 10);
	CHECK_EQ_U64(s.after, 1);
	CHECK(s.growing);
}

/* A runtime's heap step late in the run (issue 26: V8's, a few hundred KiB,
 * beside a first inference that set up 195 MB) is noise against the
 * iterations' own scale: settled after the first, flat.  Beside a first
 * iteration of 4 MiB the same step is growth worth settling after. */
TEST(settle_heap_step_is_noise)
{
	int64_t vm[21] = { 195 * MiB }, rss[21] = { 120 * MiB };
	struct settled s;

	vm[11] = rss[11] = 256 * KiB;
	rss[18] = 320 * KiB;
	s = settle(vm, rss, 21);
	CHECK_EQ_U64(s.after, 1);
	CHECK(!s.growing);
	/* 3 MiB is still noise there (1/64 of 195 MB); 4 MiB is not. */
	rss[18] = 3 * MiB;
	s = settle(vm, rss, 21);
	CHECK_EQ_U64(s.after, 1);
	rss[18] = 4 * MiB;
	s = settle(vm, rss, 21);
	CHECK_EQ_U64(s.after, 19);
	CHECK(!s.growing);

	vm[0] = rss[0] = 4 * MiB;
	rss[18] = 320 * KiB;
	s = settle(vm, rss, 21);
	CHECK_EQ_U64(s.after, 19);
	CHECK(!s.growing);
}

/* "Most iterations after it": more than half. */
TEST(settle_growing_majority)
{
	int64_t vm[9] = { 64 * MiB }, rss[9] = { 64 * MiB };
	struct settled s;

	/* 8 steady iterations, 4 grow: half is not most. */
	for (int i = 1; i < 9; i += 2)
		vm[i] = P;
	s = settle(vm, rss, 9);
	CHECK_EQ_U64(s.after, 1);
	CHECK(!s.growing);
	/* 5 of 8. */
	vm[2] = P;
	s = settle(vm, rss, 9);
	CHECK_EQ_U64(s.after, 1);
	CHECK(s.growing);
}

/* ---- phases_mark / phases_finish on their own --------------------------------- */

static struct mw_point pt(uint64_t ts, uint64_t vm, int64_t anon, int64_t file,
			  int64_t shmem, int64_t swap, uint64_t faults)
{
	struct mw_point p;

	memset(&p, 0, sizeof(p));
	p.ts = ts;
	p.vm = vm;
	p.rss[MW_ANON] = anon;
	p.rss[MW_FILE] = file;
	p.rss[MW_SHMEM] = shmem;
	p.rss[MW_SWAP] = swap;
	p.faults = faults;
	p.mapped = vm / 2;
	p.unmapped = vm / 4;
	return p;
}

struct calls {
	unsigned kinds[16];
	size_t n_at[16], nit_at[16];
	size_t n;
};

static void on_mark(void *ctx, const struct mw_phases *ph, __u32 kind)
{
	struct calls *c = ctx;

	if (c->n < 16) {
		c->kinds[c->n] = kind;
		c->n_at[c->n] = ph->n;
		c->nit_at[c->n] = ph->nit;
	}
	c->n++;
}

TEST(point_rss_excludes_swap)
{
	struct mw_point p = pt(1, 0, 3 * P, 2 * P, P, 100 * P, 0);

	CHECK_EQ_INT(point_rss(&p), 6 * P);
	p.rss[MW_FILE] = -10 * P;
	CHECK_EQ_INT(point_rss(&p), -6 * P);
}

TEST(marks_direct)
{
	struct mw_model m;
	struct mw_phases ph;
	struct calls c;
	struct mw_point p;

	memset(&c, 0, sizeof(c));
	model_init(&m, 0);
	phases_init(&ph);
	CHECK_EQ_U64(ph.n, 0);
	CHECK_EQ_U64(ph.nit, 0);
	ph.on_mark = on_mark;
	ph.on_mark_ctx = &c;

	p = pt(1000, 100 * P, 10 * P, 5 * P, 0, 7 * P, 50);
	phases_mark(&ph, &m, MW_MARK_PHASE, "start", &p, 0, 0);
	CHECK_EQ_U64(ph.n, 1);
	CHECK_STR(ph.v[0].name, "start");
	CHECK(ph.v[0].open);
	CHECK_EQ_U64(ph.v[0].start.ts, 1000);
	CHECK_EQ_INT(m.phase, 0);
	CHECK_EQ_U64(m.iter, 0);

	p = pt(2000, 120 * P, 12 * P, 5 * P, 0, 7 * P, 60);
	phases_mark(&ph, &m, MW_MARK_ITER, NULL, &p, 0, 0);
	CHECK_EQ_U64(ph.nit, 1);
	CHECK(ph.it[0].open);
	CHECK_EQ_U64(m.iter, 1);

	/* A sample is no boundary. */
	p = pt(2500, 130 * P, 13 * P, 5 * P, 0, 7 * P, 65);
	phases_mark(&ph, &m, MW_MARK_SAMPLE, NULL, &p, 0, 0);
	CHECK_EQ_U64(ph.nsamples, 1);
	CHECK_EQ_U64(ph.samples[0].at.ts, 2500);
	CHECK_EQ_U64(ph.samples[0].at.vm, 130 * P);
	CHECK_EQ_U64(ph.n, 1);
	CHECK_EQ_U64(ph.nit, 1);
	CHECK(ph.it[0].open);

	/* Unknown kinds: nothing, not even the callback. */
	phases_mark(&ph, &m, 0, "x", &p, 0, 0);
	phases_mark(&ph, &m, 99, "x", &p, 0, 0);
	CHECK_EQ_U64(ph.n, 1);
	CHECK_EQ_U64(ph.nit, 1);
	CHECK_EQ_U64(ph.nsamples, 1);

	/* A phase marker closes the iteration and the phase; NULL name. */
	p = pt(3000, 150 * P, 20 * P, 6 * P, 2 * P, 7 * P, 90);
	phases_mark(&ph, &m, MW_MARK_PHASE, NULL, &p, 140 * P, 40 * P);
	CHECK_EQ_U64(ph.n, 2);
	CHECK_EQ_U64(ph.nit, 1);
	CHECK(!ph.it[0].open);
	CHECK_EQ_U64(m.iter, 0);	/* between iterations: in none */
	CHECK_EQ_U64(ph.it[0].start.ts, 2000);
	CHECK_EQ_U64(ph.it[0].end.ts, 3000);
	CHECK_EQ_U64(ph.it[0].end.vm, 150 * P);
	CHECK(!ph.v[0].open);
	CHECK_EQ_U64(ph.v[0].end.ts, 3000);
	CHECK_EQ_U64(ph.v[0].end.faults, 90);
	CHECK_EQ_U64(ph.v[0].end.mapped, 75 * P);
	CHECK_EQ_U64(ph.v[0].end.unmapped, 150 * P / 4);
	CHECK_EQ_INT(ph.v[0].end.rss[MW_SHMEM], 2 * P);
	/* The peak given is below the end's VM: the end's; RSS peak given. */
	CHECK_EQ_U64(ph.v[0].vm_peak, 150 * P);
	CHECK_EQ_U64(ph.v[0].rss_peak, 40 * P);
	CHECK_EQ_U64(ph.v[0].ntop, 0);
	CHECK_STR(ph.v[1].name, "phase");
	CHECK(ph.v[1].open);
	CHECK_EQ_INT(m.phase, 1);

	/* Empty name too; the start's VM above both. */
	p = pt(4000, 90 * P, 20 * P, 6 * P, 2 * P, 0, 95);
	phases_mark(&ph, &m, MW_MARK_PHASE, "", &p, 0, 0);
	CHECK_STR(ph.v[2].name, "phase");
	CHECK_EQ_U64(ph.v[1].vm_peak, 150 * P);
	CHECK_EQ_U64(ph.v[1].rss_peak, 28 * P);	/* RSS at the start = at the end */

	/* RSS below zero at both ends (counters mid-teardown): peak 0. */
	p = pt(5000, 90 * P, -3 * P, 0, 0, 0, 95);
	ph.v[2].start.rss[MW_ANON] = -P;
	ph.v[2].start.rss[MW_FILE] = 0;
	ph.v[2].start.rss[MW_SHMEM] = 0;
	phases_finish(&ph, &m, &p, 0, 0);
	CHECK(!ph.v[2].open);
	CHECK_EQ_U64(ph.v[2].rss_peak, 0);
	CHECK_EQ_U64(ph.v[2].vm_peak, 90 * P);
	CHECK_EQ_U64(ph.v[2].end.ts, 5000);
	CHECK_EQ_U64(ph.settled_after, 1);
	CHECK(!ph.growing);

	/* The callback saw each marker once it was applied. */
	if (CHECK_EQ_U64(c.n, 5)) {
		CHECK_EQ_U64(c.kinds[0], MW_MARK_PHASE);
		CHECK_EQ_U64(c.n_at[0], 1);
		CHECK_EQ_U64(c.kinds[1], MW_MARK_ITER);
		CHECK_EQ_U64(c.nit_at[1], 1);
		CHECK_EQ_U64(c.kinds[2], MW_MARK_SAMPLE);
		CHECK_EQ_U64(c.kinds[3], MW_MARK_PHASE);
		CHECK_EQ_U64(c.n_at[3], 2);
		CHECK_EQ_U64(c.kinds[4], MW_MARK_PHASE);
		CHECK_EQ_U64(c.n_at[4], 3);
	}
	phases_free(&ph);
	CHECK(ph.v == NULL && ph.n == 0 && ph.it == NULL && ph.samples == NULL);
	model_free(&m);
}

/* Many phases, iterations and samples (past every initial capacity). */
TEST(marks_many)
{
	struct mw_model m;
	struct mw_phases ph;
	struct mw_point p;
	char name[80];
	uint64_t vm = 1000 * P;

	model_init(&m, 0);
	phases_init(&ph);
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		p = pt(1000 + i, vm, 0, 0, 0, 0, 0);
		phases_mark(&ph, &m, MW_MARK_PHASE, name, &p, 0, 0);
	}
	/* 100 iterations: 64 MiB, then one page each. */
	for (int i = 0; i < 100; i++) {
		p = pt(2000 + i, vm, (int64_t)(vm - 1000 * P), 0, 0, 0, 0);
		phases_mark(&ph, &m, MW_MARK_ITER, NULL, &p, 0, 0);
		phases_mark(&ph, &m, MW_MARK_SAMPLE, NULL, &p, 0, 0);
		vm += i == 0 ? 64 * MiB : P;
	}
	p = pt(3000, vm, (int64_t)(vm - 1000 * P), 0, 0, 0, 0);
	phases_finish(&ph, &m, &p, 0, 0);
	CHECK_EQ_U64(ph.n, 20);
	CHECK_STR(ph.v[0].name, "p0");
	CHECK_STR(ph.v[19].name, "p19");
	CHECK_EQ_U64(ph.v[18].end.ts, 1019);
	CHECK_EQ_U64(ph.nit, 100);
	CHECK_EQ_U64(ph.nsamples, 100);
	CHECK_EQ_U64(ph.it[0].end.vm - ph.it[0].start.vm, 64 * MiB);
	CHECK_EQ_INT(point_rss(&ph.it[0].end) - point_rss(&ph.it[0].start), 64 * MiB);
	int bad = 0;
	for (size_t i = 1; i < ph.nit; i++)
		bad += ph.it[i].end.vm - ph.it[i].start.vm != (uint64_t)P || ph.it[i].open;
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_U64(ph.it[99].end.ts, 3000);
	CHECK_EQ_U64(ph.settled_after, 1);
	CHECK(ph.growing);

	/* A name longer than the field is cut to fit. */
	memset(name, 'n', 79);
	name[79] = 0;
	phases_mark(&ph, &m, MW_MARK_PHASE, name, &p, 0, 0);
	CHECK_EQ_U64(strlen(ph.v[20].name), MW_MARK_NAME_LEN - 1);
	phases_free(&ph);
	model_free(&m);
}

/*
 * Samples of a run of days: the kept ones stay at most MW_MAX_SAMPLES, in
 * time order, evenly spaced (one in a power of two), the first always kept
 * and the newest always last; the one before the newest is known for the
 * text rows' deltas even when it was thinned away.
 */
static int check_samples(const struct mw_phases *ph, uint64_t taken)
{
	uint64_t stride = ph->sample_stride;
	int bad = 0;

	bad += ph->nsamples > MW_MAX_SAMPLES;
	bad += ph->nsampled != taken;
	bad += ph->samples[0].at.ts != 0;
	bad += ph->samples[ph->nsamples - 1].at.ts != taken - 1;
	bad += ph->samples[ph->nsamples - 1].at.faults != taken - 1;
	for (size_t i = 0; i + 1 < ph->nsamples; i++)
		bad += ph->samples[i].at.ts != i * stride;	/* on the stride but the last */
	if (taken > 1)
		bad += !phases_prev_sample(ph) || phases_prev_sample(ph)->ts != taken - 2;
	return bad;
}

TEST(samples_thinned)
{
	struct mw_model m;
	struct mw_phases ph;
	struct mw_point p;
	uint64_t n = 0, most = 0;
	int bad = 0;

	model_init(&m, 0);
	phases_init(&ph);
	CHECK(phases_prev_sample(&ph) == NULL);
	p = pt(n, P, P, 0, 0, 0, n);
	phases_mark(&ph, &m, MW_MARK_SAMPLE, NULL, &p, 0, 0);
	n++;
	CHECK(phases_prev_sample(&ph) == NULL);
	CHECK_EQ_U64(ph.nsamples, 1);
	/* Up to the cap: every one kept. */
	for (; n < MW_MAX_SAMPLES; n++) {
		p = pt(n, P, P, 0, 0, 0, n);
		phases_mark(&ph, &m, MW_MARK_SAMPLE, NULL, &p, 0, 0);
	}
	CHECK_EQ_U64(ph.nsamples, MW_MAX_SAMPLES);
	CHECK_EQ_U64(ph.sample_stride, 1);
	CHECK_EQ_INT(check_samples(&ph, n), 0);
	/* Past it: thinned, checked after every sample, through several halvings. */
	for (; n < 37 * MW_MAX_SAMPLES + 5; n++) {
		p = pt(n, P, P, 0, 0, 0, n);
		phases_mark(&ph, &m, MW_MARK_SAMPLE, NULL, &p, 0, 0);
		bad += check_samples(&ph, n + 1);
		if (ph.nsamples > most)
			most = ph.nsamples;
	}
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_U64(most, MW_MAX_SAMPLES);
	CHECK_EQ_U64(ph.sample_stride, 64);	/* 37 * cap samples: 32 < 37 <= 64 */
	CHECK(ph.nsamples >= MW_MAX_SAMPLES / 2);
	CHECK(ph.scap <= MW_MAX_SAMPLES);
	phases_free(&ph);
	model_free(&m);
}

TEST(mapping_grows_rules)
{
	struct mw_phases ph;
	struct mw_mapping mp;

	phases_init(&ph);
	ph.settled_after = 2;
	ph.growing = true;
	memset(&mp, 0, sizeof(mp));

	/* Born in a steady iteration. */
	mp.born_iter = 3;
	CHECK(phases_mapping_grows(&ph, &mp));
	/* Born in setup, never grew after: no. */
	mp.born_iter = 2;
	mp.it_grows = 1;
	mp.it_last_grow = 2;
	CHECK(!phases_mapping_grows(&ph, &mp));
	/* Born in setup, grew once later: one grow is not a pattern... */
	mp.born_iter = 0;
	mp.it_grows = 1;
	mp.it_last_grow = 5;
	CHECK(!phases_mapping_grows(&ph, &mp));
	/* ...twice is. */
	mp.it_grows = 2;
	CHECK(phases_mapping_grows(&ph, &mp));
	/* Grew often, but only during setup. */
	mp.it_grows = 7;
	mp.it_last_grow = 2;
	CHECK(!phases_mapping_grows(&ph, &mp));
	/* Gone: not a suspect. */
	mp.it_last_grow = 5;
	mp.unmapped = true;
	CHECK(!phases_mapping_grows(&ph, &mp));
	mp.unmapped = false;
	CHECK(phases_mapping_grows(&ph, &mp));
	/* Nothing grows when the verdict is flat. */
	ph.growing = false;
	CHECK(!phases_mapping_grows(&ph, &mp));
	mp.born_iter = 9;
	CHECK(!phases_mapping_grows(&ph, &mp));
}

/* ---- through account_feed ------------------------------------------------------ */

#define STACK	0x7ffd00000000ull
#define MAP_A	0x7f0000000000ull	/* 16 pages, phase "start" */
#define MAP_B	0x7f0000100000ull	/* 64 pages, iteration 1 */
#define MAP_L	0x7f0000200000ull	/* the leak: one page more each iteration */
#define MAP_E	0x7f0000300000ull	/* one page, iteration 3 */
#define MAP_D	0x7f0000400000ull	/* two pages, phase "teardown" */

/* app text 2 pages (8 kB file), heap 33 (12 kB anon), stack 33 (16 kB). */
static const char smaps_seed[] =
	SMAPS_APP_TEXT
	"555555560000-555555581000 rw-p 00000000 00:00 0                          [heap]\n"
	"Size:                132 kB\n"
	"Rss:                  12 kB\n"
	"Anonymous:            12 kB\n"
	"VmFlags: rd wr mr mw me ac sd \n"
	SMAPS_STACK;
#define SEED_VM	68
#define TEXT_RSS	(2 * P)		/* the app text, resident throughout */

static void attach(struct mw_account *a)
{
	attach_seed(a, smaps_seed, NULL);
}

/* An anonymous mmap of [start, end); the kernel's VMA is [vstart, end)
 * (vstart < start: it merged with the mapping below). */
static void mmap_op(struct mw_account *a, uint32_t seq, uint64_t ts, uint64_t vstart,
		    uint64_t start, uint64_t end, uint64_t total_vm)
{
	struct mw_op_rec *r = op_new(MW_OP_MMAP, seq, ts, start, end, total_vm);

	r->args[1] = end - start;
	r->args[3] = 0x22;	/* MAP_PRIVATE | MAP_ANONYMOUS */
	op_vma(r, vstart, end, RW);
	feed_op(a, r);
}

static void munmap_op(struct mw_account *a, uint32_t seq, uint64_t ts, uint64_t start,
		      uint64_t end, int64_t anon_freed, uint64_t total_vm)
{
	feed_op(a, munmap_new(seq, ts, start, end, anon_freed, total_vm));
}

/* Anonymous RSS faulted into mappings: pairs of (vm_start, bytes), 0-ended. */
static void deltas(struct mw_account *a, uint32_t seq, uint64_t ts, ...)
{
	struct mw_deltas_rec *d = deltas_new(seq, ts);
	va_list ap;
	uint64_t start;

	va_start(ap, ts);
	while ((start = va_arg(ap, uint64_t))) {
		int64_t bytes = va_arg(ap, int64_t);

		deltas_add(d, start, 0, bytes, 0, 0, bytes > 0 ? bytes : 0,
			   bytes > 0 ? (uint64_t)bytes / P : 0);
	}
	va_end(ap);
	feed_deltas(a, d);
}

static void feed_mark(struct mw_account *a, const struct mw_mark_rec *mk)
{
	feed_exact(a, MW_S_BPF, mk, sizeof(*mk));
}

/* Phase marker, by name or by spec id. */
static void phase_mark(struct mw_account *a, uint32_t seq, uint64_t ts, uint32_t id,
		       const char *name, uint64_t total_vm, int64_t anon,
		       uint64_t vm_peak, uint64_t rss_peak, uint64_t faults)
{
	struct mw_mark_rec mk = mark_new(MW_MARK_PHASE, seq, ts, total_vm, anon, TEXT_RSS);

	mk.id = id;
	if (name)
		strncpy(mk.name, name, sizeof(mk.name) - 1);
	mk.phase_vm_peak = vm_peak;
	mk.phase_rss_peak = rss_peak;
	mk.faults = faults;
	mk.mapped_bytes = faults * 10;
	mk.unmapped_bytes = faults * 3;
	feed_mark(a, &mk);
}

static void iter_mark(struct mw_account *a, uint32_t seq, uint64_t ts, uint64_t total_vm,
		      int64_t anon, uint64_t faults)
{
	struct mw_mark_rec mk = mark_new(MW_MARK_ITER, seq, ts, total_vm, anon, TEXT_RSS);

	mk.faults = faults;
	feed_mark(a, &mk);
}

static void markname(struct mw_account *a, uint32_t id, uint32_t kind, const char *name)
{
	struct mw_markname mn;

	memset(&mn, 0, sizeof(mn));
	mn.id = id;
	mn.kind = kind;
	/* may fill the field, unterminated */
	memcpy(mn.name, name, strnlen(name, sizeof(mn.name)));
	feed_exact(a, MW_S_MARKNAME, &mn, sizeof(mn));
}

/* The final kernel state, then the end of the trace. */
static void finish(struct mw_account *a, uint64_t ts, uint64_t total_vm, int64_t anon,
		   uint64_t phase_vm_peak, uint64_t phase_rss_peak, uint64_t faults,
		   uint64_t slot_start, int64_t slot_anon)
{
	struct mw_state *s = calloc(1, sizeof(*s));
	struct mw_end e = { .pid = 4242, .how = MW_END_EXITED, .wait_status = 0, .ts = ts };

	s->pid = 4242;
	s->final = 1;
	s->ts = ts - 1;
	s->proc.total_vm = total_vm;
	s->proc.vm_peak = phase_vm_peak;
	s->proc.phase_vm_peak = phase_vm_peak;
	s->proc.rss[MW_ANON] = anon;
	s->proc.rss[MW_FILE] = TEXT_RSS;
	s->proc.rss_peak = phase_rss_peak;
	s->proc.phase_rss_peak = phase_rss_peak;
	s->proc.faults = faults;
	s->proc.kfaults = 5;
	s->proc.mapped_bytes = 1000 * P;
	s->proc.unmapped_bytes = 500 * P;
	if (slot_start)
		slot_set(&s->proc.slots[7], slot_start, 0, slot_anon, 0, 0, slot_anon,
			 (uint64_t)slot_anon / P);
	feed_exact(a, MW_S_STATE, s, sizeof(*s));
	feed_exact(a, MW_S_END, &e, sizeof(e));
	free(s);
}

static struct mw_mapping *dead_at(struct mw_account *a, uint64_t addr)
{
	for (size_t i = 0; i < a->model.ndead; i++)
		if (a->model.dead[i]->start == addr)
			return a->model.dead[i];
	return NULL;
}

static int64_t it_vm(const struct mw_iter *it)
{
	return (int64_t)it->end.vm - (int64_t)it->start.vm;
}

static int64_t it_rss(const struct mw_iter *it)
{
	return point_rss(&it->end) - point_rss(&it->start);
}

/*
 * The whole life of a small program:
 *   start     maps A (16 pages, 10 resident); the heap gains 5, the stack 1
 *   load      4 iterations: #1 maps B (64 pages, 40 resident) and L (1
 *             page); each later one grows L by a page (merged mmap), #3
 *             also maps E (1 page, nothing resident)
 *   teardown  unmaps A and half of B, maps D (2 pages, 2 resident, known
 *             only from the final state's slots)
 */
static void run_session(struct mw_account *a)
{
	attach(a);
	markname(a, 1, MW_MARK_PHASE, "load");
	markname(a, 2, MW_MARK_ITER, "step");

	/* phase "start" */
	{
		struct mw_mark_rec mk = mark_new(MW_MARK_PHASE, 1, 2000, SEED_VM, 7 * P, TEXT_RSS);

		strcpy(mk.name, "start");
		mk.rss[MW_SWAP] = 3 * P;
		mk.phase_vm_peak = SEED_VM;
		mk.phase_rss_peak = 9 * P;
		mk.faults = 100;
		feed_mark(a, &mk);
	}
	mmap_op(a, 2, 2500, MAP_A, MAP_A, MAP_A + 16 * P, SEED_VM + 16);
	deltas(a, 2, 3000, MAP_A, 10 * P, SB, 5 * P, STACK, 1 * P, 0ull);

	/* phase "load", named by its spec id; peaks above its totals */
	phase_mark(a, 3, 4000, 1, NULL, 84, 23 * P, 100, 40 * P, 116);
	iter_mark(a, 4, 5000, 84, 23 * P, 120);
	mmap_op(a, 5, 5100, MAP_B, MAP_B, MAP_B + 64 * P, 148);
	mmap_op(a, 6, 5200, MAP_L, MAP_L, MAP_L + P, 149);
	deltas(a, 6, 5300, MAP_B, 40 * P, MAP_L, 1 * P, 0ull);
	iter_mark(a, 7, 6000, 149, 64 * P, 161);
	mmap_op(a, 8, 6100, MAP_L, MAP_L + P, MAP_L + 2 * P, 150);
	deltas(a, 8, 6200, MAP_L, 1 * P, 0ull);
	iter_mark(a, 9, 7000, 150, 65 * P, 162);
	mmap_op(a, 10, 7100, MAP_L, MAP_L + 2 * P, MAP_L + 3 * P, 151);
	mmap_op(a, 11, 7200, MAP_E, MAP_E, MAP_E + P, 152);
	deltas(a, 11, 7300, MAP_L, 1 * P, 0ull);
	iter_mark(a, 12, 8000, 152, 66 * P, 163);
	mmap_op(a, 13, 8100, MAP_L, MAP_L + 3 * P, MAP_L + 4 * P, 153);
	deltas(a, 13, 8200, MAP_L, 1 * P, 0ull);

	/* phase "teardown": its own name wins over the id; peaks of 0 */
	phase_mark(a, 14, 10000, 1, "teardown", 153, 67 * P, 0, 0, 164);
	munmap_op(a, 15, 10500, MAP_A, MAP_A + 16 * P, 10 * P, 137);
	munmap_op(a, 16, 10600, MAP_B, MAP_B + 32 * P, 20 * P, 105);
	mmap_op(a, 17, 10700, MAP_D, MAP_D, MAP_D + 2 * P, 107);
	finish(a, 12000, 107, 39 * P, 153, 69 * P, 170, MAP_D, 2 * P);
}

TEST(session_consistent)
{
	struct mw_account a;

	run_session(&a);
	/* The synthetic records agree with themselves: no loss, no drift. */
	CHECK_EQ_U64(a.seq_gaps, 0);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK(!a.need_resync);
	CHECK_EQ_U64(model_vm_bytes(&a.model), account_vm(&a));
	CHECK_EQ_INT(account_unattributed(&a), 0);
	CHECK(a.ended);
	CHECK_EQ_U64(a.end_ns, 12000);
	CHECK_EQ_U64(a.nmarknames, 2);
	account_free(&a);
}

TEST(phase_boundaries)
{
	struct mw_account a;
	const struct mw_phase *p;

	run_session(&a);
	if (!CHECK_EQ_U64(a.phases.n, 3))
		goto out;

	p = &a.phases.v[0];
	CHECK_STR(p->name, "start");
	CHECK(!p->open);
	CHECK_EQ_U64(p->start.ts, 2000);
	CHECK_EQ_U64(p->start.vm, SEED_VM * P);
	CHECK_EQ_INT(p->start.rss[MW_ANON], 7 * P);
	CHECK_EQ_INT(p->start.rss[MW_FILE], 2 * P);
	CHECK_EQ_INT(p->start.rss[MW_SWAP], 3 * P);
	CHECK_EQ_INT(point_rss(&p->start), 9 * P);
	/* The 100 faults counted before the start mark (with -p the process
	 * runs on between tracking and that mark) are the first phase's. */
	CHECK_EQ_U64(p->start.faults, 0);
	CHECK_EQ_U64(p->start.mapped, 0);
	CHECK_EQ_U64(p->start.unmapped, 0);
	CHECK_EQ_U64(p->end.ts, 4000);
	CHECK_EQ_U64(p->end.vm, 84 * P);
	CHECK_EQ_INT(p->end.rss[MW_ANON], 23 * P);
	CHECK_EQ_INT(point_rss(&p->end), 25 * P);
	CHECK_EQ_U64(p->end.faults, 116);
	CHECK_EQ_U64(p->end.mapped, 1160);
	CHECK_EQ_U64(p->end.unmapped, 348);
	/* Peaks: the closing marker's, in bytes. */
	CHECK_EQ_U64(p->vm_peak, 100 * P);
	CHECK_EQ_U64(p->rss_peak, 40 * P);

	p = &a.phases.v[1];
	CHECK_STR(p->name, "load");		/* spec id 1, from MW_S_MARKNAME */
	CHECK(!p->open);
	CHECK_EQ_U64(p->start.ts, 4000);
	CHECK_EQ_U64(p->start.vm, 84 * P);
	CHECK_EQ_INT(point_rss(&p->start), 25 * P);
	CHECK_EQ_U64(p->end.ts, 10000);
	CHECK_EQ_U64(p->end.vm, 153 * P);
	CHECK_EQ_INT(point_rss(&p->end), 69 * P);
	CHECK_EQ_U64(p->end.faults, 164);
	/* The marker's peaks (0) are below its totals: the totals. */
	CHECK_EQ_U64(p->vm_peak, 153 * P);
	CHECK_EQ_U64(p->rss_peak, 69 * P);

	p = &a.phases.v[2];
	CHECK_STR(p->name, "teardown");
	CHECK(!p->open);
	CHECK_EQ_U64(p->start.ts, 10000);
	/* Closed by the end: the final kernel state. */
	CHECK_EQ_U64(p->end.ts, 12000);
	CHECK_EQ_U64(p->end.vm, 107 * P);
	CHECK_EQ_INT(p->end.rss[MW_ANON], 39 * P);
	CHECK_EQ_INT(point_rss(&p->end), 41 * P);
	CHECK_EQ_U64(p->end.faults, 175);	/* user + kernel faults */
	CHECK_EQ_U64(p->end.mapped, 1000 * P);
	CHECK_EQ_U64(p->end.unmapped, 500 * P);
	CHECK_EQ_U64(p->vm_peak, 153 * P);
	CHECK_EQ_U64(p->rss_peak, 69 * P);
	/* The phases' counts add up to the totals. */
	CHECK_EQ_U64(a.phases.v[2].end.faults - a.phases.v[0].start.faults,
		     a.kstate.faults + a.kstate.kfaults);
	CHECK_EQ_U64(a.phases.v[2].end.mapped - a.phases.v[0].start.mapped,
		     a.kstate.mapped_bytes);

	/* Births are stamped with the phase; the seed's are "before". */
	CHECK_EQ_INT(at(&a, SB)->phase, -1);
	CHECK_EQ_INT(at(&a, STACK)->phase, -1);
	CHECK_EQ_INT(at(&a, 0x555555554000)->phase, -1);
	CHECK_EQ_INT(dead_at(&a, MAP_A)->phase, 0);
	CHECK_EQ_INT(at(&a, MAP_B + 32 * P)->phase, 1);
	CHECK_EQ_INT(dead_at(&a, MAP_B)->phase, 1);
	CHECK_EQ_INT(at(&a, MAP_L)->phase, 1);
	CHECK_EQ_INT(at(&a, MAP_E)->phase, 1);
	CHECK_EQ_INT(at(&a, MAP_D)->phase, 2);
out:
	account_free(&a);
}

TEST(phase_top_mappings)
{
	struct mw_account a;
	const struct mw_phase *p;
	const struct mw_growth *g;

	run_session(&a);
	if (!CHECK_EQ_U64(a.phases.n, 3))
		goto out;

	/* start: A was created (all of it is growth), the heap and the
	 * stack were there before and grew. */
	p = &a.phases.v[0];
	if (CHECK_EQ_U64(p->ntop, 3)) {
		g = &p->top[0];
		CHECK_EQ_U64(g->start, MAP_A);
		CHECK(g->created);
		CHECK(!g->unmapped);
		CHECK_EQ_INT(g->rss_delta, 10 * P);
		CHECK_EQ_INT(g->vm_delta, 16 * P);
		CHECK_EQ_U64(g->bytes, 16 * P);
		CHECK_EQ_U64(g->requested, 16 * P);
		CHECK_EQ_INT(g->kind, MW_K_ANON);
		CHECK_STR(g->path, "");
		g = &p->top[1];
		CHECK_EQ_U64(g->start, SB);
		CHECK(!g->created);
		CHECK_EQ_INT(g->rss_delta, 5 * P);
		CHECK_EQ_INT(g->vm_delta, 0);
		CHECK_EQ_U64(g->bytes, 33 * P);
		CHECK_EQ_INT(g->kind, MW_K_HEAP);
		CHECK_STR(g->path, "[heap]");
		g = &p->top[2];
		CHECK_EQ_U64(g->start, STACK);
		CHECK(!g->created);
		CHECK_EQ_INT(g->rss_delta, P);
		CHECK_STR(g->path, "[stack]");
	}

	/* load: B, L, E created; A, heap, stack did not change. */
	p = &a.phases.v[1];
	if (CHECK_EQ_U64(p->ntop, 3)) {
		g = &p->top[0];
		CHECK_EQ_U64(g->start, MAP_B);
		CHECK(g->created);
		CHECK_EQ_INT(g->rss_delta, 40 * P);
		CHECK_EQ_INT(g->vm_delta, 64 * P);
		CHECK_EQ_U64(g->bytes, 64 * P);
		CHECK_EQ_U64(g->requested, 64 * P);
		g = &p->top[1];
		CHECK_EQ_U64(g->start, MAP_L);
		CHECK(g->created);
		CHECK_EQ_INT(g->rss_delta, 4 * P);
		CHECK_EQ_INT(g->vm_delta, 4 * P);
		CHECK_EQ_U64(g->bytes, 4 * P);
		CHECK_EQ_U64(g->requested, 4 * P);	/* four mmaps of a page */
		g = &p->top[2];
		CHECK_EQ_U64(g->start, MAP_E);
		CHECK(g->created);
		CHECK_EQ_INT(g->rss_delta, 0);
		CHECK_EQ_INT(g->vm_delta, P);
	}

	/* teardown: only D grew; what was unmapped shrank. */
	p = &a.phases.v[2];
	if (CHECK_EQ_U64(p->ntop, 1)) {
		g = &p->top[0];
		CHECK_EQ_U64(g->start, MAP_D);
		CHECK(g->created);
		CHECK_EQ_INT(g->rss_delta, 2 * P);	/* from the final slots */
		CHECK_EQ_INT(g->vm_delta, 2 * P);
	}
out:
	account_free(&a);
}

TEST(phase_release_accounting)
{
	struct mw_account a;
	const struct mw_phase *p;

	run_session(&a);
	if (!CHECK_EQ_U64(a.phases.n, 3))
		goto out;
	/* start mapped A; teardown unmapped all of it. */
	p = &a.phases.v[0];
	CHECK_EQ_U64(p->born_bytes, 16 * P);
	CHECK_EQ_U64(p->released_bytes, 16 * P);
	CHECK_EQ_U64(p->remaining_bytes, 0);
	CHECK_EQ_INT(p->remaining_rss, 0);
	/* load mapped B (64), L (4), E (1); half of B went. */
	p = &a.phases.v[1];
	CHECK_EQ_U64(p->born_bytes, 69 * P);
	CHECK_EQ_U64(p->released_bytes, 32 * P);
	CHECK_EQ_U64(p->remaining_bytes, 37 * P);
	CHECK_EQ_INT(p->remaining_rss, 24 * P);	/* B's half 20 + L 4 */
	/* teardown mapped D and kept it. */
	p = &a.phases.v[2];
	CHECK_EQ_U64(p->born_bytes, 2 * P);
	CHECK_EQ_U64(p->released_bytes, 0);
	CHECK_EQ_U64(p->remaining_bytes, 2 * P);
	CHECK_EQ_INT(p->remaining_rss, 2 * P);
	/* Each phase: mapped = released + left. */
	for (size_t i = 0; i < a.phases.n; i++)
		CHECK_EQ_U64(a.phases.v[i].born_bytes,
			     a.phases.v[i].released_bytes + a.phases.v[i].remaining_bytes);
out:
	account_free(&a);
}

TEST(session_iterations)
{
	struct mw_account a;
	const struct mw_phases *ph = &a.phases;

	run_session(&a);
	if (!CHECK_EQ_U64(ph->nit, 4))
		goto out;
	CHECK_EQ_U64(ph->it[0].start.ts, 5000);
	CHECK_EQ_U64(ph->it[0].end.ts, 6000);
	CHECK_EQ_INT(it_vm(&ph->it[0]), 65 * P);
	CHECK_EQ_INT(it_rss(&ph->it[0]), 41 * P);
	CHECK_EQ_U64(ph->it[0].end.faults - ph->it[0].start.faults, 41);
	CHECK_EQ_INT(it_vm(&ph->it[1]), P);
	CHECK_EQ_INT(it_rss(&ph->it[1]), P);
	CHECK_EQ_INT(it_vm(&ph->it[2]), 2 * P);
	CHECK_EQ_INT(it_rss(&ph->it[2]), P);
	/* The last one was closed by the phase marker, not by the end. */
	CHECK_EQ_U64(ph->it[3].start.ts, 8000);
	CHECK_EQ_U64(ph->it[3].end.ts, 10000);
	CHECK_EQ_INT(it_vm(&ph->it[3]), P);
	CHECK_EQ_INT(it_rss(&ph->it[3]), P);
	for (size_t i = 0; i < ph->nit; i++)
		CHECK(!ph->it[i].open);

	CHECK_EQ_U64(ph->settled_after, 1);
	CHECK(ph->growing);

	/* Per-mapping iteration bookkeeping. */
	struct mw_mapping *l = at(&a, MAP_L), *b = at(&a, MAP_B + 32 * P);
	struct mw_mapping *e = at(&a, MAP_E), *d = at(&a, MAP_D), *heap = at(&a, SB);

	CHECK_EQ_U64(l->born_iter, 1);
	CHECK_EQ_U64(l->it_grows, 4);
	CHECK_EQ_U64(l->it_last_grow, 4);
	CHECK_EQ_U64(b->born_iter, 1);
	CHECK_EQ_U64(b->it_grows, 1);
	CHECK_EQ_U64(b->it_last_grow, 1);
	CHECK_EQ_U64(e->born_iter, 3);
	CHECK_EQ_U64(heap->born_iter, 0);
	CHECK_EQ_U64(heap->it_grows, 0);
	/* D was mapped after the iterations were over. */
	CHECK_EQ_U64(d->born_iter, 0);

	/* L grew in every steady iteration: named.  B was only created in
	 * iteration 1: not.  E appeared in a steady iteration: named.  D
	 * came after the iterations, A is gone, the heap never moved. */
	CHECK(phases_mapping_grows(ph, l));
	CHECK(!phases_mapping_grows(ph, b));
	CHECK(phases_mapping_grows(ph, e));
	CHECK(!phases_mapping_grows(ph, d));
	CHECK(!phases_mapping_grows(ph, dead_at(&a, MAP_A)));
	CHECK(!phases_mapping_grows(ph, heap));
	CHECK(!phases_mapping_grows(ph, at(&a, STACK)));
out:
	account_free(&a);
}

/* Iterations to the end of the trace: the last one closes with the final
 * kernel state.  Setup in the first, noise after: flat. */
TEST(iterations_closed_by_end)
{
	struct mw_account a;
	const struct mw_phases *ph = &a.phases;
	struct mw_mapping *x;

	attach(&a);
	phase_mark(&a, 1, 2000, 0, "start", SEED_VM, 7 * P, 0, 0, 0);
	iter_mark(&a, 2, 3000, SEED_VM, 7 * P, 10);
	mmap_op(&a, 3, 3100, MAP_B, MAP_B, MAP_B + 32 * P, SEED_VM + 32);
	deltas(&a, 3, 3200, MAP_B, 32 * P, 0ull);
	iter_mark(&a, 4, 4000, SEED_VM + 32, 39 * P, 42);
	deltas(&a, 4, 4100, SB, P, 0ull);
	iter_mark(&a, 5, 5000, SEED_VM + 32, 40 * P, 43);
	deltas(&a, 5, 5100, SB, -P, 0ull);
	finish(&a, 6000, SEED_VM + 32, 39 * P, SEED_VM + 32, 41 * P, 48, 0, 0);

	CHECK_EQ_U64(a.seq_gaps, 0);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	if (!CHECK_EQ_U64(ph->nit, 3))
		goto out;
	CHECK_EQ_INT(it_vm(&ph->it[0]), 32 * P);
	CHECK_EQ_INT(it_rss(&ph->it[0]), 32 * P);
	CHECK_EQ_INT(it_vm(&ph->it[1]), 0);
	CHECK_EQ_INT(it_rss(&ph->it[1]), P);
	CHECK_EQ_U64(ph->it[2].start.ts, 5000);
	CHECK_EQ_U64(ph->it[2].end.ts, 6000);	/* the end */
	CHECK_EQ_U64(ph->it[2].end.vm, (SEED_VM + 32) * P);
	CHECK_EQ_INT(it_rss(&ph->it[2]), -P);
	CHECK_EQ_U64(ph->it[2].end.faults, 53);
	CHECK(!ph->it[2].open);
	CHECK_EQ_U64(ph->settled_after, 1);
	CHECK(!ph->growing);

	if (CHECK_EQ_U64(ph->n, 1)) {
		CHECK_STR(ph->v[0].name, "start");
		CHECK(!ph->v[0].open);
		CHECK_EQ_U64(ph->v[0].end.ts, 6000);
		CHECK_EQ_U64(ph->v[0].vm_peak, (SEED_VM + 32) * P);
		CHECK_EQ_U64(ph->v[0].rss_peak, 41 * P);
		CHECK_EQ_U64(ph->v[0].born_bytes, 32 * P);
		CHECK_EQ_U64(ph->v[0].remaining_bytes, 32 * P);
		CHECK_EQ_INT(ph->v[0].remaining_rss, 32 * P);
		/* The heap's +1 -1 page is no net growth: not listed. */
		if (CHECK_EQ_U64(ph->v[0].ntop, 1)) {
			CHECK_EQ_U64(ph->v[0].top[0].start, MAP_B);
			CHECK_EQ_INT(ph->v[0].top[0].rss_delta, 32 * P);
			CHECK_EQ_INT(ph->v[0].top[0].vm_delta, 32 * P);
			CHECK(ph->v[0].top[0].created);
		}
		CHECK_EQ_INT(at(&a, SB)->rss[MW_ANON], 3 * P);
	}
	/* Flat: nothing is named as growing, not even the setup mapping. */
	x = at(&a, MAP_B);
	CHECK_EQ_U64(x->born_iter, 1);
	CHECK(!phases_mapping_grows(ph, x));
	CHECK(!phases_mapping_grows(ph, at(&a, SB)));
out:
	account_free(&a);
}

/* A marker's name: its own, else its spec's (MW_S_MARKNAME), else "phase". */
/* Faults by kind: the markers' totals give each iteration its own, a
 * slot's go to its mapping, and the kinds the kernel did not tell apart
 * are copy-on-write, never below 0 nor above the faults. */
TEST(fault_kinds)
{
	struct mw_account a;
	struct mw_mark_rec mk;
	struct mw_deltas_rec *d;
	struct mw_mapping *mp;
	struct mw_fkinds k;
	uint32_t seq = 1;
	int64_t raw[MW_FK_NR] = { 0 };

	attach(&a);
	mmap_op(&a, seq++, 1500, MAP_B, MAP_B, MAP_B + 64 * P, SEED_VM + 64);
	mk = mark_new(MW_MARK_ITER, seq++, 2000, SEED_VM + 64, 7 * P, TEXT_RSS);
	mk.faults = 100;
	mk.fk[MW_FK_FIRST_TOUCH] = 90;
	feed_mark(&a, &mk);
	d = deltas_new(seq++, 2100);
	deltas_add(d, MAP_B, 0, 64 * P, 0, 0, 64 * P, 80);
	d->slots[0].fk[MW_FK_FIRST_TOUCH] = 16;
	d->slots[0].fk[MW_FK_REFAULT] = 48;
	feed_deltas(&a, d);
	mk = mark_new(MW_MARK_ITER, seq++, 3000, SEED_VM + 64, 71 * P, TEXT_RSS);
	mk.faults = 180;
	mk.fk[MW_FK_FIRST_TOUCH] = 106;
	mk.fk[MW_FK_REFAULT] = 48;
	feed_mark(&a, &mk);
	if (CHECK_EQ_U64(a.phases.nit, 2)) {
		const struct mw_iter *it = &a.phases.it[0];

		CHECK_EQ_INT(it->end.fk[MW_FK_FIRST_TOUCH] - it->start.fk[MW_FK_FIRST_TOUCH], 16);
		CHECK_EQ_INT(it->end.fk[MW_FK_REFAULT] - it->start.fk[MW_FK_REFAULT], 48);
		CHECK_EQ_U64(it->end.faults - it->start.faults, 80);
	}
	mp = at(&a, MAP_B);
	if (CHECK(mp != NULL)) {
		k = mw_fk_of(mp->faults, mp->fk);
		CHECK_EQ_U64(k.n[MW_FK_FIRST_TOUCH], 16);
		CHECK_EQ_U64(k.n[MW_FK_REFAULT], 48);
		CHECK_EQ_U64(k.n[MW_FK_COW], 16);	/* 80 faults, 64 told apart */
	}
	/* A race's trace: a kind below 0, kinds above the faults. */
	raw[MW_FK_FILE] = -2;
	raw[MW_FK_FIRST_TOUCH] = 7;
	raw[MW_FK_COW_FILE] = 9;
	k = mw_fk_of(10, raw);
	CHECK_EQ_U64(k.n[MW_FK_FILE], 0);
	CHECK_EQ_U64(k.n[MW_FK_FIRST_TOUCH], 7);
	CHECK_EQ_U64(k.n[MW_FK_COW_FILE], 3);
	CHECK_EQ_U64(k.n[MW_FK_COW], 0);
	CHECK_EQ_U64(mw_fk_new_pages(&k), 10);
	CHECK_STR(mw_fk_key(MW_FK_COW), "copy_on_write");
	CHECK_STR(mw_fk_key(MW_FK_ALL), "?");
	account_free(&a);
}

TEST(mark_names)
{
	struct mw_account a;
	struct mw_markname mn;
	char long_name[MW_MARK_NAME_LEN];
	uint32_t seq = 1;

	attach(&a);
	memset(long_name, 'x', sizeof(long_name));
	markname(&a, 1, MW_MARK_PHASE, "load");
	markname(&a, 2, MW_MARK_PHASE, "");
	/* A name filling the record, with no NUL: cut to 63. */
	markname(&a, 3, MW_MARK_PHASE, long_name);
	/* A short MW_S_MARKNAME is ignored. */
	memset(&mn, 0, sizeof(mn));
	mn.id = 4;
	strcpy(mn.name, "short");
	feed_exact(&a, MW_S_MARKNAME, &mn, sizeof(mn) - 1);
	CHECK_EQ_U64(a.nmarknames, 3);

	phase_mark(&a, seq++, 2000, 1, NULL, SEED_VM, 7 * P, 0, 0, 0);
	phase_mark(&a, seq++, 2100, 1, "own", SEED_VM, 7 * P, 0, 0, 0);
	phase_mark(&a, seq++, 2200, 0, NULL, SEED_VM, 7 * P, 0, 0, 0);
	phase_mark(&a, seq++, 2300, 9, NULL, SEED_VM, 7 * P, 0, 0, 0);
	phase_mark(&a, seq++, 2400, 2, NULL, SEED_VM, 7 * P, 0, 0, 0);
	phase_mark(&a, seq++, 2500, 3, NULL, SEED_VM, 7 * P, 0, 0, 0);
	phase_mark(&a, seq++, 2600, 4, NULL, SEED_VM, 7 * P, 0, 0, 0);
	if (CHECK_EQ_U64(a.phases.n, 7)) {
		CHECK_STR(a.phases.v[0].name, "load");
		CHECK_STR(a.phases.v[1].name, "own");
		CHECK_STR(a.phases.v[2].name, "phase");
		CHECK_STR(a.phases.v[3].name, "phase");	/* unknown id */
		CHECK_STR(a.phases.v[4].name, "phase");	/* empty spec name */
		CHECK_EQ_U64(strlen(a.phases.v[5].name), MW_MARK_NAME_LEN - 1);
		CHECK(strspn(a.phases.v[5].name, "x") == MW_MARK_NAME_LEN - 1);
		CHECK_STR(a.phases.v[6].name, "phase");	/* its MARKNAME was short */
	}

	/* A short marker record is not applied (its sequence still counts). */
	struct mw_mark_rec mk = mark_new(MW_MARK_PHASE, seq++, 3000, SEED_VM, 7 * P, TEXT_RSS);
	strcpy(mk.name, "cut");
	feed_exact(&a, MW_S_BPF, &mk, sizeof(mk) - 1);
	CHECK_EQ_U64(a.phases.n, 7);
	CHECK_EQ_U64(a.last_seq, seq - 1);
	CHECK_EQ_U64(a.seq_gaps, 0);

	/* Samples and iterations through the account. */
	mk = mark_new(MW_MARK_SAMPLE, seq++, 3100, SEED_VM, 8 * P, TEXT_RSS);
	feed_mark(&a, &mk);
	CHECK_EQ_U64(a.phases.nsamples, 1);
	CHECK_EQ_INT(point_rss(&a.phases.samples[0].at), 10 * P);
	CHECK_EQ_U64(a.phases.n, 7);
	mk = mark_new(MW_MARK_ITER, seq++, 3200, SEED_VM, 8 * P, TEXT_RSS);
	mk.id = 1;	/* iterations are not named: the id is harmless */
	feed_mark(&a, &mk);
	CHECK_EQ_U64(a.phases.nit, 1);
	CHECK_EQ_U64(a.phases.n, 7);
	account_free(&a);
}

/* At most MW_TOP_GROWTH mappings per phase, most RSS first, then most VM. */
TEST(top_growth_capped_and_ordered)
{
	struct mw_account a;
	static const int rss_pages[7] = { 3, 7, 1, 7, 5, 2, 6 };
	const struct mw_phase *p;
	uint64_t vm = SEED_VM;
	uint32_t seq = 1;

	attach(&a);
	phase_mark(&a, seq++, 2000, 0, "start", vm, 7 * P, 0, 0, 0);
	phase_mark(&a, seq++, 2100, 0, "grow", vm, 7 * P, 0, 0, 0);
	for (int i = 0; i < 7; i++) {
		uint64_t s = 0x7f0001000000ull + (uint64_t)i * 0x100000;

		/* i + 8 pages: room for its RSS (at most 7). */
		vm += (uint64_t)i + 8;
		mmap_op(&a, seq, 3000 + i, s, s, s + ((uint64_t)i + 8) * P, vm);
		deltas(&a, seq++, 3000 + i, s, rss_pages[i] * P, 0ull);
	}
	phase_mark(&a, seq++, 4000, 0, "after", vm, 38 * P, 0, 0, 0);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	if (!CHECK_EQ_U64(a.phases.n, 3))
		goto out;
	CHECK_EQ_U64(a.phases.v[0].ntop, 0);	/* nothing happened in "start" */
	p = &a.phases.v[1];
	if (CHECK_EQ_U64(p->ntop, MW_TOP_GROWTH)) {
		/* 7 pages twice: the bigger mapping (i=3, 11 pages) first. */
		static const int want[MW_TOP_GROWTH] = { 3, 1, 6, 4, 0 };

		for (int k = 0; k < MW_TOP_GROWTH; k++) {
			CHECK_EQ_U64(p->top[k].start, 0x7f0001000000ull + (uint64_t)want[k] * 0x100000);
			CHECK_EQ_INT(p->top[k].rss_delta, rss_pages[want[k]] * P);
			CHECK_EQ_INT(p->top[k].vm_delta, (want[k] + 8) * P);
			CHECK(p->top[k].created);
		}
	}
out:
	account_free(&a);
}

int main(void)
{
	RUN(settle_flat);
	RUN(settle_leak);
	RUN(settle_window_setup);
	RUN(settle_noise);
	RUN(settle_edges);
	RUN(settle_late_spike);
	RUN(settle_heap_step_is_noise);
	RUN(settle_growing_majority);
	RUN(point_rss_excludes_swap);
	RUN(marks_direct);
	RUN(marks_many);
	RUN(samples_thinned);
	RUN(mapping_grows_rules);
	RUN(session_consistent);
	RUN(phase_boundaries);
	RUN(phase_top_mappings);
	RUN(phase_release_accounting);
	RUN(session_iterations);
	RUN(iterations_closed_by_end);
	RUN(mark_names);
	RUN(fault_kinds);
	RUN(top_growth_capped_and_ordered);
	return unit_done();
}
