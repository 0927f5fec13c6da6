// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_findings.c — unit tests for user/analysis/findings.c: each detector
 * on an account built from mappings, phase and iteration markers (through
 * phase.c, as account.c feeds them), firing on what it is for and silent on
 * its twin and below its threshold; the threshold parser; the host-wide
 * detectors on sequences of snapshots.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/account.h"
#include "analysis/findings.h"
#include "host/hostview.h"
#include "util.h"
#include "unit.h"

#define KiB	1024ll
#define MiB	(1024ll * 1024)
#define RW	(MW_VM_READ | MW_VM_WRITE)
#define MS	1000000ull

static struct mw_account A;
static struct mw_find_opts O;
static struct mw_findings F;
/* the kernel's totals as the markers carry them; of now.faults, cow_faults
 * moved no RSS counter, the rest were first touches */
static struct mw_point now;
static uint64_t cow_faults;

static void begin(void)
{
	account_init(&A, 1, 100000);
	findings_defaults(&O);
	memset(&F, 0, sizeof(F));
	memset(&now, 0, sizeof(now));
	cow_faults = 0;
	now.ts = A.model.now_ns = 1000 * MS;
	now.vm = 64 * MiB;
}

static void end(void)
{
	findings_free(&F);
	account_free(&A);
}

static void tick(uint64_t ms)
{
	now.ts += ms * MS;
	A.model.now_ns = now.ts;
}

static void mark(__u32 kind, const char *name)
{
	now.fk[MW_FK_FIRST_TOUCH] = (int64_t)(now.faults - cow_faults);
	phases_mark(&A.phases, &A.model, kind, name, &now, now.vm, (uint64_t)point_rss(&now));
}

static void finish(void)
{
	A.end_ns = now.ts;
	now.fk[MW_FK_FIRST_TOUCH] = (int64_t)(now.faults - cow_faults);
	phases_finish(&A.phases, &A.model, &now, now.vm, (uint64_t)point_rss(&now));
}

static int member_of(enum mw_kind k)
{
	return k == MW_K_SHMEM ? MW_SHMEM : k == MW_K_FILE ? MW_FILE : MW_ANON;
}

/* A mapping made now, with rss resident (its peak). */
static struct mw_mapping *made(uint64_t start, uint64_t size, enum mw_kind kind, int64_t rss)
{
	struct mw_mapping *mp = mw_xcalloc(1, sizeof(*mp));

	mp->start = start;
	mp->end = start + size;
	mp->flags = RW;
	mp->kind = kind;
	/* What the model classifies as this kind (model_place() does). */
	if (kind == MW_K_FILE) {
		mp->has_file = true;
		mp->path = mw_xstrdup("/usr/lib/x86_64-linux-gnu/libmodel.so");
	} else if (kind == MW_K_SHMEM) {
		mp->flags |= MW_VM_MAYSHARE | MW_VM_SHARED;
	} else if (kind == MW_K_DEVICE) {
		mp->flags |= MW_VM_MAYSHARE | MW_VM_SHARED | MW_VM_PFNMAP | MW_VM_IO;
		mp->has_file = true;
		mp->path = mw_xstrdup("/dev/dri/renderD128");
	} else if (kind == MW_K_HEAP) {
		uint64_t lo = A.model.start_brk ? MW_MIN(A.model.start_brk, start) : start;

		model_set_brk(&A.model, lo, MW_MAX(A.model.brk, start + size), A.model.start_stack);
	}
	mp->requested = size;
	mp->born_ns = A.model.now_ns;
	mp->phase = A.model.phase;
	mp->born_iter = A.model.iter;
	mapping_take_rss(mp, member_of(kind), rss);
	model_place(&A.model, mp);
	now.vm += size;
	now.mapped += size;
	now.rss[member_of(kind)] += rss;
	return mp;
}

static void set_rss(struct mw_mapping *mp, int64_t rss)
{
	int64_t d = rss - mapping_rss_total(mp);

	now.rss[member_of(mp->kind)] += mapping_take_rss(mp, member_of(mp->kind), d);
}

static void gone(struct mw_mapping *mp)
{
	struct mw_pieces p = { 0 };
	uint64_t size = mp->end - mp->start;

	now.rss[member_of(mp->kind)] -= mapping_rss_total(mp);
	model_carve(&A.model, mp->start, mp->end, &p);
	model_bury_all(&A.model, &p);
	now.vm -= size;
	now.unmapped += size;
}

static void compute(void)
{
	findings_free(&F);
	findings_compute(&A, &O, &F);
}

static const struct mw_finding *find(enum mw_finding_kind k)
{
	for (size_t i = 0; i < F.n; i++)
		if (F.v[i].kind == k)
			return &F.v[i];
	return NULL;
}

static int64_t num(const struct mw_finding *f, const char *key)
{
	const struct mw_fnum *n = f ? finding_num(f, key) : NULL;

	return n ? n->v : -12345;
}

/* ---- steady-state churn -------------------------------------------------- */

/* n iterations; each maps and faults in chunk bytes (kind), unmaps it. */
static void churn_run(int n, uint64_t chunk, enum mw_kind kind, uint64_t faults)
{
	for (int i = 0; i < n; i++) {
		struct mw_mapping *mp;

		mark(MW_MARK_ITER, "");
		tick(1);
		mp = made(0x7f0000000000ull, chunk, kind, (int64_t)chunk);
		mp->faults = faults;
		now.faults += faults;
		tick(1);
		gone(mp);
		tick(1);
	}
	finish();
}

TEST(churn_glibc_mmap)
{
	const struct mw_finding *f;

	begin();
	churn_run(12, 40 * MiB, MW_K_ANON, 10240);
	compute();
	f = find(MW_F_CHURN);
	if (!CHECK(f != NULL))
		goto out;
	CHECK_EQ_INT(f->severity, MW_SEV_HIGH);
	CHECK_EQ_INT(num(f, "steady_iterations"), 11);
	CHECK_EQ_INT(num(f, "faults_per_iteration"), 10240);
	CHECK_EQ_INT(num(f, "faults"), 11 * 10240);
	CHECK_EQ_INT(num(f, "mapped_bytes_per_iteration"), 40 * MiB);
	CHECK_EQ_INT(num(f, "unmapped_bytes_per_iteration"), 40 * MiB);
	CHECK_EQ_INT(num(f, "vm_delta_bytes"), 0);
	CHECK_EQ_INT(num(f, "churned_mappings"), 11);
	if (CHECK_EQ_U64(f->nmaps, 1)) {
		CHECK_EQ_U64(f->maps[0].count, 11);
		CHECK_EQ_U64(f->maps[0].bytes, 40 * MiB);
	}
	/* 40 MiB is above glibc's largest mmap threshold */
	CHECK(f->remedy && strstr(f->remedy, "MALLOC_MMAP_MAX_=0"));
	CHECK(strstr(f->summary, "10,240 page faults") != NULL);
	CHECK(find(MW_F_FIRST_TOUCH) == NULL);	/* every iteration alike */
	CHECK(find(MW_F_LEAK) == NULL);
out:
	end();
}

/* Issue 26: iterations whose faults copy pages shared with a fork (Node's
 * execFileSync per mark): copy-on-write, not churn.  Then the same count
 * of first touches given back each time: churn, not copy-on-write. */
TEST(cow_is_not_churn)
{
	const struct mw_finding *f;

	begin();
	for (int i = 0; i < 12; i++) {
		mark(MW_MARK_ITER, "");
		tick(5);
		now.faults += 1270;
		cow_faults += 1270;
		now.faults += 2;	/* a stray first touch */
	}
	finish();
	compute();
	CHECK(find(MW_F_CHURN) == NULL);
	f = find(MW_F_COW);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "copy_on_write_per_iteration"), 1270);
		CHECK_EQ_INT(num(f, "faults_per_iteration"), 1272);
		CHECK_EQ_INT(num(f, "copy_on_write"), 11 * 1270);
		CHECK_EQ_INT(f->severity, MW_SEV_INFO);
		CHECK(strstr(f->summary, "1,270 copy-on-write faults") != NULL);
		CHECK(f->remedy && strstr(f->remedy, "posix_spawn"));
	}
	end();

	begin();
	churn_run(12, 5 * MiB, MW_K_ANON, 1280);
	compute();
	CHECK(find(MW_F_COW) == NULL);
	f = find(MW_F_CHURN);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "new_page_faults_per_iteration"), 1280);
		CHECK_EQ_INT(num(f, "copy_on_write_per_iteration"), 0);
		CHECK(strstr(f->summary, "first touch 14,080") != NULL);
	}
	end();
}

TEST(churn_glibc_threshold_and_heap)
{
	const struct mw_finding *f;

	begin();
	churn_run(6, 12 * MiB + 4096, MW_K_ANON, 3000);
	compute();
	f = find(MW_F_CHURN);
	CHECK(f && f->remedy && strstr(f->remedy, "MALLOC_MMAP_THRESHOLD_=13631488"));
	end();

	/* The heap trimmed and grown again every iteration. */
	begin();
	churn_run(6, 12 * MiB, MW_K_HEAP, 3000);
	compute();
	f = find(MW_F_CHURN);
	CHECK(f && f->remedy && strstr(f->remedy, "MALLOC_TRIM_THRESHOLD_=25165824") &&
	      strstr(f->remedy, "MALLOC_TOP_PAD_=12582912") &&
	      strstr(f->remedy, "MALLOC_MMAP_THRESHOLD_=12582912"));
	end();
}

TEST(churn_thresholds)
{
	/* Below both thresholds: faults 255 and 64 KiB mapped. */
	begin();
	churn_run(10, 64 * KiB, MW_K_ANON, 255);
	compute();
	CHECK(find(MW_F_CHURN) == NULL);
	end();

	/* At the fault threshold. */
	begin();
	churn_run(10, 64 * KiB, MW_K_ANON, 256);
	compute();
	CHECK(find(MW_F_CHURN) != NULL);
	/* ... raised above it, live or in a report: silent. */
	CHECK_EQ_INT(findings_set(&O, "churn-faults=257", &(const char *){ NULL }), 0);
	compute();
	CHECK(find(MW_F_CHURN) == NULL);
	end();

	/* Only mapping: 2 MiB an iteration, no faults (THP: a few). */
	begin();
	churn_run(10, 2 * MiB, MW_K_ANON, 1);
	compute();
	CHECK(find(MW_F_CHURN) != NULL);
	CHECK_EQ_INT(findings_set(&O, "churn-bytes=4M", &(const char *){ NULL }), 0);
	compute();
	CHECK(find(MW_F_CHURN) == NULL);
	end();

	/* Too few iterations to speak of a steady state. */
	begin();
	churn_run(2, 40 * MiB, MW_K_ANON, 10240);
	compute();
	CHECK(find(MW_F_CHURN) == NULL);
	end();
}

TEST(churn_flat)
{
	struct mw_mapping *mp;

	begin();
	mp = made(0x7f0000000000ull, 40 * MiB, MW_K_ANON, 40 * MiB);
	(void)mp;
	for (int i = 0; i < 12; i++) {
		mark(MW_MARK_ITER, "");
		tick(2);
	}
	finish();
	compute();
	CHECK(find(MW_F_CHURN) == NULL);
	CHECK(find(MW_F_FIRST_TOUCH) == NULL);
	CHECK_EQ_U64(F.n, 0);
	end();
}

/* ---- first-touch cost ------------------------------------------------------ */

static void first_touch_run(uint64_t first_faults, int64_t first_rss)
{
	struct mw_mapping *win = NULL;

	for (int i = 0; i < 12; i++) {
		mark(MW_MARK_ITER, "");
		tick(i ? 2 : 50);
		if (!i) {
			win = made(0x7f0000000000ull, 64 * MiB, MW_K_ANON, first_rss);
			win->faults = first_faults;
			now.faults += first_faults;
		}
	}
	finish();
}

/* A 192 MiB window of device memory (no RSS) mapped by the first of 12
 * iterations: named as the device's, reused or mapped again. */
TEST(device_window)
{
	const struct mw_finding *f;

	for (int again = 0; again < 2; again++) {
		begin();
		for (int i = 0; i < 12; i++) {
			mark(MW_MARK_ITER, "");
			tick(2);
			if (!i)
				made(0x7f0000000000ull, 192 * MiB, MW_K_DEVICE, 0);
			if (again && i == 5)
				made(0x7f1000000000ull, 2 * MiB, MW_K_DEVICE, 0);
		}
		finish();
		compute();
		CHECK(find(MW_F_FIRST_TOUCH) == NULL);	/* no faults, no RSS */
		f = find(MW_F_DEVICE_WINDOW);
		if (CHECK(f != NULL)) {
			CHECK_EQ_INT(num(f, "first_device_vm_bytes"), 192 * MiB);
			CHECK_EQ_INT(num(f, "later_device_vm_bytes"), again ? 2 * MiB : 0);
			CHECK(f->nmaps == 1 && f->maps[0].value == 192 * MiB);
			CHECK(strstr(f->summary, "192.0 MiB of device memory") != NULL);
			CHECK(strstr(f->summary, "pfn_io, /dev/dri/renderD128") != NULL);
			CHECK(strstr(f->summary, again ? "map more beside: 2.0 MiB more" :
						 "reuse") != NULL);
		}
		end();
	}
	/* Under first-bytes: nothing. */
	begin();
	for (int i = 0; i < 4; i++) {
		mark(MW_MARK_ITER, "");
		tick(2);
		if (!i)
			made(0x7f0000000000ull, 1 * MiB, MW_K_DEVICE, 0);
	}
	finish();
	compute();
	CHECK(find(MW_F_DEVICE_WINDOW) == NULL);
	end();
}

/* Phases that lock or pin: the peaks over the start count, the mappings
 * locked at the end are named, and under pinned-bytes nothing is said. */
TEST(locked_or_pinned)
{
	struct mw_mapping *mp;
	const struct mw_finding *f;

	begin();
	mark(MW_MARK_PHASE, "load");
	tick(5);
	mp = made(0x7f0000000000ull, 64 * MiB, MW_K_ANON, 64 * MiB);
	mp->flags |= MW_VM_LOCKED;
	now.locked = now.locked_peak = 64 * MiB;
	now.pinned = now.pinned_peak = 8 * MiB;
	mark(MW_MARK_PHASE, "serve");
	/* The phase peaks restart at the mark; within "serve" 32 MiB more
	 * locked for a while, 8 MiB unpinned. */
	now.locked_peak = 96 * MiB;
	now.pinned_peak = 8 * MiB;
	now.pinned = 0;
	tick(5);
	finish();
	compute();
	f = find(MW_F_PINNED);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "locked_grown_bytes"), 96 * MiB);
		CHECK_EQ_INT(num(f, "pinned_grown_bytes"), 8 * MiB);
		CHECK_EQ_INT(num(f, "locked_end_bytes"), 64 * MiB);
		CHECK_EQ_INT(num(f, "pinned_end_bytes"), 0);
		CHECK_EQ_INT(num(f, "phases"), 2);
		CHECK(f->nmaps == 1 && f->maps[0].value == 64 * MiB &&
		      !strcmp(f->maps[0].what, "locked_vm_bytes"));
		CHECK(strstr(f->summary, "the most in \"load\"") != NULL);
	}
	end();

	begin();
	mark(MW_MARK_PHASE, "load");
	now.locked = now.locked_peak = 15 * MiB;
	tick(5);
	finish();
	compute();
	CHECK(find(MW_F_PINNED) == NULL);
	end();
}

TEST(first_touch)
{
	const struct mw_finding *f;

	begin();
	first_touch_run(4096, 16 * MiB);
	compute();
	f = find(MW_F_FIRST_TOUCH);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "first_faults"), 4096);
		CHECK_EQ_INT(num(f, "steady_faults"), 0);
		CHECK_EQ_INT(num(f, "first_rss_delta_bytes"), 16 * MiB);
		CHECK_EQ_INT(num(f, "fault_in_bytes"), 16 * MiB);
		CHECK_EQ_INT(num(f, "first_ns"), 50 * MS);
		CHECK_EQ_INT(num(f, "steady_ns"), 2 * MS);
		if (CHECK_EQ_U64(f->nmaps, 1)) {
			CHECK_EQ_U64(f->maps[0].start, 0x7f0000000000ull);
			CHECK_EQ_INT(f->maps[0].value, 16 * MiB);
		}
		CHECK(f->remedy && strstr(f->remedy, "MADV_POPULATE_WRITE"));
	}
	end();

	/* Huge pages: 8 faults, 16 MiB: the bytes tell. */
	begin();
	first_touch_run(8, 16 * MiB);
	compute();
	CHECK(find(MW_F_FIRST_TOUCH) != NULL);
	CHECK_EQ_INT(findings_set(&O, "first-bytes=32M", &(const char *){ NULL }), 0);
	compute();
	CHECK(find(MW_F_FIRST_TOUCH) == NULL);
	end();

	/* A small first iteration: under both thresholds. */
	begin();
	first_touch_run(200, 800 * KiB);
	compute();
	CHECK(find(MW_F_FIRST_TOUCH) == NULL);
	end();
}

/* ---- released but kept ------------------------------------------------------ */

TEST(kept_heap)
{
	struct mw_mapping *heap, *lib;
	const struct mw_finding *f;

	begin();
	mark(MW_MARK_PHASE, "start");
	heap = made(0x555500000000ull, 132 * KiB, MW_K_HEAP, 4 * KiB);
	lib = made(0x7f1000000000ull, 8 * MiB, MW_K_FILE, 0);
	lib->path = mw_xstrdup("/usr/lib/libbig.so.1");
	tick(5);
	mark(MW_MARK_PHASE, "alloc");
	heap->end += 32 * MiB;
	now.vm += 32 * MiB;
	set_rss(heap, 32 * MiB + 4 * KiB);
	set_rss(lib, 6 * MiB);		/* code: kept by design */
	tick(5);
	mark(MW_MARK_PHASE, "release");
	tick(5);
	finish();
	compute();
	f = find(MW_F_KEPT);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "kept_rss_bytes"), 32 * MiB);
		CHECK_EQ_INT(num(f, "release_unmapped_bytes"), 0);
		if (CHECK_EQ_U64(f->nmaps, 1)) {
			CHECK_EQ_U64(f->maps[0].start, 0x555500000000ull);
			CHECK_EQ_INT(f->maps[0].value, 32 * MiB);
		}
		CHECK(f->remedy && strstr(f->remedy, "malloc_trim"));
	}
	end();
}

/* What capture's walk of malloc's arenas says at the current phase's end. */
static void arena_walked(uint64_t mapping, bool main_arena, int err, uint64_t free_res,
			 uint64_t trim)
{
	struct mw_heapfree h = {
		.pid = 1, .err = err, .mapping = mapping, .main = main_arena,
		.free_bytes = free_res + 4 * KiB, .free_resident = free_res,
		.trim_resident = trim,
	};

	account_feed(&A, &(struct mw_srec){ .kind = MW_S_HEAPFREE, .len = sizeof(h), .data = &h });
}

/* The heap and a thread arena grew 32 and 8 MiB: "kept" is what malloc
 * holds free in them at the release's end, not what they grew. */
static void kept_arenas_run(void (*walk)(struct mw_mapping *heap, struct mw_mapping *arena),
			    bool trim_later)
{
	struct mw_mapping *heap, *arena, *small;

	mark(MW_MARK_PHASE, "start");
	heap = made(0x555500000000ull, 132 * KiB, MW_K_HEAP, 4 * KiB);
	arena = made(0x7f0004000000ull, 16 * MiB, MW_K_ANON, 0);
	small = made(0x7f0008000000ull, 1 * MiB, MW_K_ANON, 0);
	tick(5);
	mark(MW_MARK_PHASE, "alloc");
	heap->end += 32 * MiB;
	now.vm += 32 * MiB;
	set_rss(heap, 32 * MiB + 4 * KiB);
	set_rss(arena, 8 * MiB);
	set_rss(small, 256 * KiB);
	tick(5);
	mark(MW_MARK_PHASE, "release");
	tick(5);
	walk(heap, arena);
	arena_walked(small->start, false, 0, 32 * KiB, 32 * KiB);
	if (trim_later) {
		mark(MW_MARK_PHASE, "trim");
		set_rss(heap, 26 * MiB + 4 * KiB);
		set_rss(arena, 7 * MiB);
	}
	finish();
	compute();
}

static void walk_free(struct mw_mapping *heap, struct mw_mapping *arena)
{
	arena_walked(heap->start, true, 0, 20 * MiB, 18 * MiB);
	arena_walked(arena->start, false, 0, 3 * MiB, 1 * MiB);
}

static void walk_live(struct mw_mapping *heap, struct mw_mapping *arena)
{
	arena_walked(heap->start, true, 0, 1 * MiB, 1 * MiB);
	arena_walked(arena->start, false, 0, 2 * MiB, 0);
}

static void walk_failed(struct mw_mapping *heap, struct mw_mapping *arena)
{
	arena_walked(heap->start, true, -EAGAIN, 0, 0);
}

TEST(kept_sized_by_malloc)
{
	const struct mw_finding *f;

	begin();
	kept_arenas_run(walk_free, false);
	f = find(MW_F_KEPT);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "kept_rss_bytes"), 23 * MiB);
		CHECK_EQ_INT(num(f, "malloc_free_resident_bytes"), 23 * MiB);
		CHECK_EQ_INT(num(f, "malloc_trim_bytes"), 19 * MiB);
		/* The 32 KiB arena is not named. */
		if (CHECK_EQ_U64(f->nmaps, 2)) {
			CHECK_EQ_U64(f->maps[0].start, 0x555500000000ull);
			CHECK_EQ_INT(f->maps[0].value, 20 * MiB);
			CHECK_STR(f->maps[0].what, "malloc_free_resident_bytes");
			CHECK_EQ_U64(f->maps[1].start, 0x7f0004000000ull);
			CHECK_EQ_INT(f->maps[1].value, 3 * MiB);
		}
		CHECK(strstr(f->summary, "malloc holds 23.0 MiB free") != NULL);
		CHECK(strstr(f->summary, "in 2 arenas") != NULL);
		CHECK(strstr(f->summary, "malloc_trim(0) would give back 19.0 MiB") != NULL);
	}
	CHECK_EQ_U64(A.phases.v[2].narenas, 3);
	end();

	/* Most of what grew is live: 3 MiB free is under the threshold. */
	begin();
	kept_arenas_run(walk_live, false);
	CHECK(find(MW_F_KEPT) == NULL);
	end();

	/* A later phase gave some of it back (the heap 6 MiB, the arena
	 * 1 MiB): that came off the free pages. */
	begin();
	kept_arenas_run(walk_free, true);
	f = find(MW_F_KEPT);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "malloc_free_resident_bytes"), 16 * MiB);
		CHECK_EQ_INT(num(f, "malloc_trim_bytes"), 15 * MiB);
	}
	end();

	/* The walk gave up: the estimate from RSS, as without one. */
	begin();
	kept_arenas_run(walk_failed, false);
	f = find(MW_F_KEPT);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "kept_rss_bytes"), 40 * MiB);
		CHECK(finding_num(f, "malloc_trim_bytes") == NULL);
		CHECK_EQ_U64(A.phases.v[2].arenas_failed, 1);
		CHECK_EQ_INT(A.phases.v[2].arenas_err, -EAGAIN);
	}
	end();
}

TEST(kept_trimmed_and_no_release)
{
	struct mw_mapping *heap;

	/* The heap trimmed in the release: nothing stays. */
	begin();
	mark(MW_MARK_PHASE, "start");
	heap = made(0x555500000000ull, 132 * KiB, MW_K_HEAP, 4 * KiB);
	mark(MW_MARK_PHASE, "alloc");
	heap->end += 32 * MiB;
	now.vm += 32 * MiB;
	set_rss(heap, 32 * MiB + 4 * KiB);
	mark(MW_MARK_PHASE, "release");
	heap->end -= 32 * MiB;
	now.vm -= 32 * MiB;
	set_rss(heap, 4 * KiB);
	finish();
	compute();
	CHECK(find(MW_F_KEPT) == NULL);
	end();

	/* No phase frees: nothing is "kept". */
	begin();
	mark(MW_MARK_PHASE, "start");
	heap = made(0x555500000000ull, 132 * KiB, MW_K_HEAP, 4 * KiB);
	mark(MW_MARK_PHASE, "alloc");
	set_rss(heap, 32 * MiB);
	mark(MW_MARK_PHASE, "compute");
	finish();
	compute();
	CHECK(find(MW_F_KEPT) == NULL);
	end();
}

TEST(kept_by_unmapping)
{
	struct mw_mapping *model, *window;
	const struct mw_finding *f;

	/* A phase not named like a release that unmaps the model: the
	 * window made before it stays. */
	begin();
	mark(MW_MARK_PHASE, "start");
	mark(MW_MARK_PHASE, "load");
	model = made(0x7f2000000000ull, 48 * MiB, MW_K_FILE, 48 * MiB);
	model->path = mw_xstrdup("/tmp/model.bin");
	window = made(0x7f3000000000ull, 192 * MiB, MW_K_ANON, 24 * MiB);
	mark(MW_MARK_PHASE, "phase2");
	gone(model);
	finish();
	compute();
	f = find(MW_F_KEPT);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "kept_rss_bytes"), 24 * MiB);
		CHECK_EQ_INT(num(f, "release_unmapped_bytes"), 48 * MiB);
		CHECK(f->nmaps == 1 && f->maps[0].start == window->start);
	}
	end();
}

/* A phase named "release" that frees nothing, then one ("end") that unmaps
 * the model: the finding is about "release", where the program meant to
 * free (issue 26); a phase that maps and unmaps as much frees nothing. */
TEST(kept_named_release_wins)
{
	struct mw_mapping *model, *window, *tmp;
	const struct mw_finding *f;

	begin();
	mark(MW_MARK_PHASE, "start");
	mark(MW_MARK_PHASE, "load");
	model = made(0x7f2000000000ull, 48 * MiB, MW_K_FILE, 48 * MiB);
	model->path = mw_xstrdup("/tmp/model.bin");
	window = made(0x7f3000000000ull, 192 * MiB, MW_K_ANON, 24 * MiB);
	mark(MW_MARK_PHASE, "release");
	tick(1);
	mark(MW_MARK_PHASE, "end");
	gone(model);
	finish();
	compute();
	f = find(MW_F_KEPT);
	if (CHECK(f != NULL)) {
		CHECK_STR(A.phases.v[num(f, "release_phase")].name, "release");
		CHECK_EQ_INT(num(f, "release_unmapped_bytes"), 0);
		CHECK_EQ_INT(num(f, "kept_rss_bytes"), 24 * MiB);	/* the window */
		CHECK(strstr(f->summary, "after phase \"release\"") != NULL);
	}
	end();

	/* Unnamed phases: one that churns (maps and unmaps 64 MiB) is no
	 * release; the model stays with no phase that freed: no finding. */
	begin();
	mark(MW_MARK_PHASE, "start");
	mark(MW_MARK_PHASE, "load");
	window = made(0x7f3000000000ull, 192 * MiB, MW_K_ANON, 24 * MiB);
	mark(MW_MARK_PHASE, "steady");
	tmp = made(0x7f4000000000ull, 64 * MiB, MW_K_ANON, 64 * MiB);
	gone(tmp);
	finish();
	compute();
	CHECK(find(MW_F_KEPT) == NULL);
	(void)window;
	end();
}

/* ---- reserved, never touched ----------------------------------------------- */

TEST(sparse)
{
	const struct mw_finding *f;
	struct mw_mapping *file;

	begin();
	mark(MW_MARK_PHASE, "start");
	made(0x7f0000000000ull, 128 * MiB, MW_K_ANON, 4 * MiB);	/* 3% */
	made(0x7f1000000000ull, 32 * MiB, MW_K_ANON, 32 * MiB);	/* all */
	made(0x7f2000000000ull, 64 * MiB, MW_K_ANON, 16 * MiB);	/* exactly 25% */
	made(0x7f3000000000ull, 8 * MiB, MW_K_ANON, 0);		/* too small */
	file = made(0x7f4000000000ull, 64 * MiB, MW_K_FILE, 0);	/* a file's pages */
	file->path = mw_xstrdup("/usr/share/big.dat");
	finish();
	compute();
	f = find(MW_F_SPARSE);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "mappings"), 1);
		CHECK_EQ_INT(num(f, "mapped_bytes"), 128 * MiB);
		CHECK_EQ_INT(num(f, "rss_peak_bytes"), 4 * MiB);
		CHECK(f->nmaps == 1 && f->maps[0].start == 0x7f0000000000ull);
	}
	CHECK_EQ_INT(findings_set(&O, "sparse-pct=2", &(const char *){ NULL }), 0);
	compute();
	CHECK(find(MW_F_SPARSE) == NULL);
	CHECK_EQ_INT(findings_set(&O, "sparse-pct=26,sparse-bytes=64M", &(const char *){ NULL }), 0);
	compute();
	f = find(MW_F_SPARSE);
	CHECK(f && num(f, "mappings") == 2);	/* the 25% one joins */
	end();
}

/* ---- rounding waste ----------------------------------------------------------- */

TEST(waste)
{
	const struct mw_finding *f;

	/* 64 tensors of 5000 bytes padded to 64 KiB, two pages written. */
	begin();
	for (int i = 0; i < 64; i++)
		made(0x7f0000000000ull + i * MiB, 64 * KiB, MW_K_SHMEM, 8 * KiB);
	finish();
	compute();
	f = find(MW_F_WASTE);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(num(f, "mappings"), 64);
		CHECK_EQ_INT(num(f, "mapped_bytes"), 4 * MiB);
		CHECK_EQ_INT(num(f, "waste_bytes"), 64 * 56 * KiB);
		CHECK_EQ_INT(num(f, "untouched_bytes"), 64 * 56 * KiB);
		CHECK_EQ_INT(num(f, "rounded_bytes"), 0);
	}
	end();

	/* Never touched at all: unused, not padded. */
	begin();
	for (int i = 0; i < 64; i++)
		made(0x7f0000000000ull + i * MiB, 64 * KiB, MW_K_SHMEM, 0);
	finish();
	compute();
	CHECK(find(MW_F_WASTE) == NULL);
	end();

	/* Page-sized buffers, all written: nothing. */
	begin();
	for (int i = 0; i < 64; i++)
		made(0x7f0000000000ull + i * MiB, 8 * KiB, MW_K_SHMEM, 8 * KiB);
	finish();
	compute();
	CHECK(find(MW_F_WASTE) == NULL);
	end();

	/* mmap(5000): the kernel rounds to 8 KiB; 39% is under waste-pct. */
	begin();
	for (int i = 0; i < 400; i++) {
		struct mw_mapping *mp = made(0x7f0000000000ull + i * MiB, 8 * KiB, MW_K_ANON,
					     8 * KiB);

		mp->requested = 5000;
	}
	finish();
	compute();
	CHECK(find(MW_F_WASTE) == NULL);
	CHECK_EQ_INT(findings_set(&O, "waste-pct=30", &(const char *){ NULL }), 0);
	compute();
	f = find(MW_F_WASTE);
	CHECK(f && num(f, "rounded_bytes") == 400 * (8192 - 5000) && num(f, "untouched_bytes") == 0);
	end();
}

/* ---- leak ------------------------------------------------------------------------ */

TEST(leak)
{
	struct mw_mapping *mp;
	const struct mw_finding *f;

	begin();
	/* Room to spare: its RSS grows by 4 KiB more than its size now
	 * and then. */
	mp = made(0x7f0000000000ull, 512 * KiB, MW_K_ANON, 256 * KiB);
	for (int i = 0; i < 20; i++) {
		mark(MW_MARK_ITER, "");
		tick(2);
		mp->end += 256 * KiB;
		now.vm += 256 * KiB;
		set_rss(mp, mapping_rss_total(mp) + (i % 2 ? 256 : 260) * KiB);
	}
	finish();
	compute();
	f = find(MW_F_LEAK);
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(f->severity, MW_SEV_HIGH);
		CHECK_EQ_INT(num(f, "settled_after"), 1);
		CHECK_EQ_INT(num(f, "steady_iterations"), 19);
		CHECK_EQ_INT(num(f, "rss_per_iteration_min"), 256 * KiB);
		CHECK_EQ_INT(num(f, "rss_per_iteration_max"), 260 * KiB);
		CHECK_EQ_INT(num(f, "vm_per_iteration"), 256 * KiB);
		CHECK_EQ_INT(num(f, "growing_mappings"), 1);
		CHECK(f->nmaps == 1 && f->maps[0].start == 0x7f0000000000ull);
		CHECK(F.v[0].kind == MW_F_LEAK);	/* the most severe first */
	}
	CHECK(find(MW_F_CHURN) == NULL);
	CHECK_EQ_INT(findings_set(&O, "leak-bytes=1M", &(const char *){ NULL }), 0);
	compute();
	CHECK(find(MW_F_LEAK) == NULL);
	end();
}

/* ---- thresholds ------------------------------------------------------------------ */

TEST(thresholds)
{
	struct mw_find_opts o;
	const char *bad = NULL;

	findings_defaults(&o);
	CHECK_EQ_INT(o.t[MW_T_CHURN_FAULTS], 256);
	CHECK_EQ_INT(o.t[MW_T_KEPT_BYTES], 4 * MiB);
	CHECK_EQ_INT(findings_set(&o, "churn-bytes=2M,sparse-pct=10,kept-bytes=64K", &bad), 0);
	CHECK_EQ_INT(o.t[MW_T_CHURN_BYTES], 2 * MiB);
	CHECK_EQ_INT(o.t[MW_T_SPARSE_PCT], 10);
	CHECK_EQ_INT(o.t[MW_T_KEPT_BYTES], 64 * KiB);
	CHECK_EQ_INT(findings_set(&o, "waste-bytes=1.5MiB,exit-bytes=1G", &bad), 0);
	CHECK_EQ_INT(o.t[MW_T_WASTE_BYTES], 3 * MiB / 2);
	CHECK_EQ_INT(o.t[MW_T_EXIT_BYTES], 1024 * MiB);
	CHECK_EQ_INT(findings_set(&o, "churn-bytes=1M,nosuch=1", &bad), -1);
	CHECK(bad && strcmp(bad, "nosuch=1") == 0);
	CHECK_EQ_INT(findings_set(&o, "churn-faults=1K", &bad), -1);	/* a count */
	CHECK_EQ_INT(findings_set(&o, "churn-bytes=", &bad), -1);
	CHECK_EQ_INT(findings_set(&o, "churn-bytes", &bad), -1);
	CHECK_EQ_INT(findings_set(&o, "churn-bytes=-1", &bad), -1);
	CHECK(!o.off);
	CHECK_EQ_INT(findings_set(&o, "none", &bad), 0);
	CHECK(o.off);
	for (int i = 0; i < MW_NR_THRESHOLDS; i++)
		CHECK(findings_threshold_name(i) && findings_threshold_doc(i));
	CHECK(findings_threshold_name(MW_NR_THRESHOLDS) == NULL);
}

TEST(off)
{
	begin();
	churn_run(12, 40 * MiB, MW_K_ANON, 10240);
	O.off = true;
	compute();
	CHECK_EQ_U64(F.n, 0);
	end();
}

/* ---- host-wide -------------------------------------------------------------------- */

static struct mw_hproc hp(uint32_t pid, int64_t rss)
{
	struct mw_hproc p = { .pid = pid, .first_ns = pid * 10 };

	p.rss[MW_ANON] = rss;
	p.rss_peak = (uint64_t)rss;
	memcpy(p.comm, "w", 2);
	return p;
}

TEST(host_growth)
{
	struct mw_hfind h;
	struct mw_find_opts o;
	struct mw_findings fs;
	const struct mw_fnum *n;

	findings_defaults(&o);
	hfind_init(&h);
	for (int i = 0; i < 8; i++) {
		/* 1: grows 2 MiB every interval; 2: flat; 3: grows 4 times, rests, grows 4 */
		struct mw_hproc v[3] = { hp(1, 8 * MiB + i * 2 * MiB), hp(2, 8 * MiB),
					 hp(3, 8 * MiB + (i < 5 ? i : i - 1) * MiB) };

		hfind_interval(&h, &o, (uint64_t)(i + 1) * 250 * MS, v, 3);
	}
	hfind_findings(&h, &o, 0, &fs);
	if (CHECK_EQ_U64(fs.n, 1)) {
		CHECK_EQ_INT(fs.v[0].kind, MW_F_HOST_GROWTH);
		CHECK_EQ_U64(fs.v[0].pid, 1);
		n = finding_num(&fs.v[0], "intervals");
		CHECK(n && n->v == 7);
		n = finding_num(&fs.v[0], "rss_from_bytes");
		CHECK(n && n->v == 8 * MiB);
		n = finding_num(&fs.v[0], "rss_to_bytes");
		CHECK(n && n->v == 22 * MiB);
		n = finding_num(&fs.v[0], "rss_growth_per_interval");
		CHECK(n && n->v == 2 * MiB);
	}
	findings_free(&fs);
	/* Exits: a peak far above the end, and one near it. */
	{
		struct mw_hproc x = hp(4, 4 * MiB), y = hp(5, 60 * MiB), z = hp(6, 4 * MiB);

		x.rss_peak = 100 * MiB;
		y.rss_peak = 100 * MiB;	/* 40 MiB above, but not twice */
		z.rss_peak = 30 * MiB;	/* 7.5 times, but 26 MiB above */
		hfind_exit(&h, &o, &x);
		hfind_exit(&h, &o, &y);
		hfind_exit(&h, &o, &z);
	}
	hfind_findings(&h, &o, 0, &fs);
	CHECK_EQ_U64(fs.n, 2);
	for (size_t i = 0; i < fs.n; i++)
		if (fs.v[i].kind == MW_F_HOST_EXIT_PEAK) {
			CHECK_EQ_U64(fs.v[i].pid, 4);
			n = finding_num(&fs.v[i], "rss_peak_bytes");
			CHECK(n && n->v == 100 * MiB);
			n = finding_num(&fs.v[i], "rss_at_exit_bytes");
			CHECK(n && n->v == 4 * MiB);
		}
	findings_free(&fs);
	/* More intervals asked for than it grew in. */
	findings_set(&o, "host-intervals=8", &(const char *){ NULL });
	hfind_free(&h);
	hfind_init(&h);
	for (int i = 0; i < 8; i++) {
		struct mw_hproc v[1] = { hp(1, 8 * MiB + i * 2 * MiB) };

		hfind_interval(&h, &o, (uint64_t)(i + 1) * 250 * MS, v, 1);
	}
	hfind_findings(&h, &o, 0, &fs);
	CHECK_EQ_U64(fs.n, 0);
	findings_free(&fs);
	hfind_free(&h);
}

/* ---- churn inside a phase ------------------------------------------------ */

/* Phases "load" and "steady", no iterations: "steady" maps, faults in and
 * unmaps 10 x 64 MiB around 96 MiB resident and ends where it began. */
static void phase_churn_run(uint64_t chunk, int n)
{
	struct mw_mapping *model;

	mark(MW_MARK_PHASE, "load");
	tick(5);
	model = made(0x7e0000000000ull, 96 * MiB, MW_K_FILE, 96 * MiB);
	(void)model;
	now.faults += 96 * MiB / 4096;
	tick(5);
	mark(MW_MARK_PHASE, "steady");
	for (int i = 0; i < n; i++) {
		struct mw_mapping *mp;

		tick(1);
		mp = made(0x7f0000000000ull, chunk, MW_K_ANON, (int64_t)chunk);
		mp->faults = chunk / 4096;
		now.faults += chunk / 4096;
		tick(1);
		gone(mp);
	}
	tick(1);
	finish();
}

TEST(phase_churn)
{
	const struct mw_finding *f;

	begin();
	phase_churn_run(64 * MiB, 10);
	compute();
	f = find(MW_F_PHASE_CHURN);
	if (CHECK(f != NULL)) {
		CHECK_STR(A.phases.v[num(f, "phase")].name, "steady");
		CHECK_EQ_INT(num(f, "mapped_bytes"), 640 * MiB);
		CHECK_EQ_INT(num(f, "unmapped_bytes"), 640 * MiB);
		CHECK_EQ_INT(num(f, "faults"), 10 * 16384);
		CHECK_EQ_INT(num(f, "vm_delta_bytes"), 0);
		CHECK_EQ_INT(num(f, "rss_delta_bytes"), 0);
		CHECK(strstr(f->summary, "phase \"steady\" ends where it began") != NULL);
		CHECK(f->remedy && strstr(f->remedy, "--iter"));
	}
	/* "load" grew: not churn.  No iterations: no steady-state churn. */
	CHECK_EQ_U64(F.n, 1);
	end();

	/* Twice its peak RSS (96 + 64 MiB) is the line: 2 x 64 MiB is not. */
	begin();
	phase_churn_run(64 * MiB, 2);
	compute();
	CHECK(find(MW_F_PHASE_CHURN) == NULL);
	O.t[MW_T_PHASE_CHURN_RATIO] = 1;
	compute();
	CHECK(find(MW_F_PHASE_CHURN) != NULL);
	end();

	/* The same churn in marked iterations is steady_state_churn's. */
	begin();
	mark(MW_MARK_PHASE, "steady");
	churn_run(12, 40 * MiB, MW_K_ANON, 10240);
	compute();
	CHECK(find(MW_F_CHURN) != NULL);
	CHECK(find(MW_F_PHASE_CHURN) == NULL);
	end();
}

int main(void)
{
	RUN(churn_glibc_mmap);
	RUN(cow_is_not_churn);
	RUN(churn_glibc_threshold_and_heap);
	RUN(churn_thresholds);
	RUN(churn_flat);
	RUN(first_touch);
	RUN(device_window);
	RUN(locked_or_pinned);
	RUN(kept_heap);
	RUN(kept_sized_by_malloc);
	RUN(kept_trimmed_and_no_release);
	RUN(kept_by_unmapping);
	RUN(kept_named_release_wins);
	RUN(sparse);
	RUN(waste);
	RUN(leak);
	RUN(phase_churn);
	RUN(thresholds);
	RUN(off);
	RUN(host_growth);
	return unit_done();
}
