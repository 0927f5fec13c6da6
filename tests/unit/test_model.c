// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_model.c — unit tests for the mapping table (user/analysis/model.c) and the
 * classification of mappings (user/analysis/classify.c).
 *
 * Pure code: mappings are built with model_set_vma() and their statistics
 * poked in directly; splits are checked to the byte, both the proportional
 * way (no oracle) and the measured way (a fake oracle with fixed answers).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/classify.h"
#include "analysis/model.h"
#include "unit.h"

#define P	4096ull		/* one page */
#define RW	(MW_VM_READ | MW_VM_WRITE)
#define RX	(MW_VM_READ | MW_VM_EXEC)

/* ---- helpers ------------------------------------------------------------ */

static struct mw_mapping *add_vma(struct mw_model *m, uint64_t start, uint64_t end,
				  uint64_t flags, const char *path, bool file)
{
	struct mw_vma_state v = {
		.start = start, .end = end, .flags = flags,
		.path = path, .has_file = file,
	};

	return model_set_vma(m, &v);
}

/* The i-th live mapping in address order, or NULL. */
static struct mw_mapping *live_at(const struct mw_model *m, size_t i)
{
	struct mw_mapping *mp = model_first(m);

	while (mp && i--)
		mp = model_next(mp);
	return mp;
}

/* Where mp is in address order: nlive for NULL (past the end). */
static size_t live_index(const struct mw_model *m, const struct mw_mapping *mp)
{
	size_t i = 0;

	if (!mp)
		return m->nlive;
	while ((mp = model_prev(mp)))
		i++;
	return i;
}

static long find_index(const struct mw_model *m, uint64_t addr)
{
	const struct mw_mapping *mp = model_find(m, addr);

	return mp ? (long)live_index(m, mp) : -1;
}

/* The table invariant: sorted, non-overlapping, non-empty ranges, and the
 * running totals what a full walk gives. */
static bool table_sane(const struct mw_model *m)
{
	const char *why = model_check(m);

	if (why)
		fprintf(stderr, "  table: %s\n", why);
	return !why;
}

static void set_rss(struct mw_mapping *mp, int64_t file, int64_t anon,
		    int64_t swap, int64_t shmem)
{
	mp->rss[MW_FILE] = file;
	mp->rss[MW_ANON] = anon;
	mp->rss[MW_SWAP] = swap;
	mp->rss[MW_SHMEM] = shmem;
}

/* What a mapping went through: @faults, @requested bytes, RSS peak @rss_peak. */
static void set_history(struct mw_mapping *mp, uint64_t faults, uint64_t requested,
			int64_t rss_peak)
{
	mp->faults = faults;
	mp->requested = requested;
	mp->rss_peak = rss_peak;
}

/* A fake pagemap: fixed answers for exact ranges, -ENOENT for anything else
 * (or 'err' for everything when set); every query is recorded. */
struct fake_oracle {
	struct { uint64_t start, end, anon, file; } ans[8];
	int nans;
	int err;
	int calls;
	uint64_t qs[16], qe[16];
};

static int fake_range_rss(void *ctx, uint64_t start, uint64_t end,
			  uint64_t *anon, uint64_t *file)
{
	struct fake_oracle *o = ctx;

	if (o->calls < 16) {
		o->qs[o->calls] = start;
		o->qe[o->calls] = end;
	}
	o->calls++;
	if (o->err)
		return o->err;
	for (int i = 0; i < o->nans; i++)
		if (o->ans[i].start == start && o->ans[i].end == end) {
			*anon = o->ans[i].anon;
			*file = o->ans[i].file;
			return 0;
		}
	return -ENOENT;
}

static void oracle_answer(struct fake_oracle *o, uint64_t start, uint64_t end,
			  uint64_t anon, uint64_t file)
{
	o->ans[o->nans].start = start;
	o->ans[o->nans].end = end;
	o->ans[o->nans].anon = anon;
	o->ans[o->nans].file = file;
	o->nans++;
}

static void use_oracle(struct mw_model *m, struct fake_oracle *o)
{
	m->oracle.range_rss = fake_range_rss;
	m->oracle.ctx = o;
}

/* A new model asking a new fake oracle, with one private anonymous
 * mapping of 'pages' pages at a holding 'anon' bytes. */
static struct mw_mapping *oracle_model(struct mw_model *m, struct fake_oracle *o,
				       uint64_t a, uint64_t pages, int64_t anon)
{
	struct mw_mapping *mp;

	memset(o, 0, sizeof(*o));
	model_init(m, 0);
	use_oracle(m, o);
	mp = add_vma(m, a, a + pages * P, RW, NULL, false);
	set_rss(mp, 0, anon, 0, 0);
	return mp;
}

static char *dup_exact(const char *s, size_t len)
{
	char *d = malloc(len ? len : 1);

	if (!d)
		abort();
	memcpy(d, s, len);
	return d;
}

/* ---- lookup ------------------------------------------------------------- */

TEST(find_and_lower_bound)
{
	struct mw_model m;

	model_init(&m, 0);
	CHECK_EQ_INT(find_index(&m, 0x1000), -1);
	CHECK_EQ_U64(live_index(&m, model_lower_bound(&m, 0x1000)), 0);
	add_vma(&m, 0x10000, 0x12000, RW, NULL, false);
	add_vma(&m, 0x20000, 0x21000, RW, NULL, false);
	add_vma(&m, 0x30000, 0x38000, RW, NULL, false);
	CHECK_EQ_U64(m.nlive, 3);
	CHECK_EQ_INT(find_index(&m, 0xffff), -1);
	CHECK_EQ_INT(find_index(&m, 0x10000), 0);
	CHECK_EQ_INT(find_index(&m, 0x11fff), 0);
	CHECK_EQ_INT(find_index(&m, 0x12000), -1);	/* end is exclusive */
	CHECK_EQ_INT(find_index(&m, 0x20000), 1);
	CHECK_EQ_INT(find_index(&m, 0x37fff), 2);
	CHECK_EQ_INT(find_index(&m, 0x38000), -1);
	CHECK_EQ_U64(live_index(&m, model_lower_bound(&m, 0)), 0);
	CHECK_EQ_U64(live_index(&m, model_lower_bound(&m, 0x12000)), 1);
	CHECK_EQ_U64(live_index(&m, model_lower_bound(&m, 0x20fff)), 1);
	CHECK_EQ_U64(live_index(&m, model_lower_bound(&m, 0x21000)), 2);
	CHECK_EQ_U64(live_index(&m, model_lower_bound(&m, 0x38000)), 3);
	CHECK_EQ_U64(live_index(&m, model_lower_bound(&m, UINT64_MAX)), 3);
	model_free(&m);
	CHECK_EQ_U64(m.nlive, 0);
	CHECK(RB_EMPTY(&m.live));
}

/* ---- set_vma ------------------------------------------------------------ */

TEST(set_vma_empty_table)
{
	struct mw_model m;
	struct mw_vma_state v = {
		.start = 0x7f0000000000, .end = 0x7f0000003000,
		.flags = RX, .pgoff = 0x2000, .ino = 262283,
		.dev_major = 254, .dev_minor = 1,
		.has_file = true, .path = "/usr/lib/libc.so.6",
	};
	struct mw_mapping *mp;

	model_init(&m, 100);
	CHECK_EQ_U64(m.next_seq, 1);
	CHECK_EQ_U64(m.dead_limit, 100);
	m.now_ns = 123456789;
	m.phase = 3;
	mp = model_set_vma(&m, &v);
	if (!CHECK(mp != NULL))
		return;
	CHECK_EQ_U64(m.nlive, 1);
	CHECK(live_at(&m, 0) == mp);
	CHECK_EQ_U64(mp->start, 0x7f0000000000);
	CHECK_EQ_U64(mp->end, 0x7f0000003000);
	CHECK_EQ_U64(mp->flags, RX);
	CHECK_EQ_U64(mp->pgoff, 0x2000);
	CHECK_EQ_U64(mp->ino, 262283);
	CHECK_EQ_U64(mp->dev_major, 254);
	CHECK_EQ_U64(mp->dev_minor, 1);
	CHECK(mp->has_file);
	CHECK(!mp->deleted);
	CHECK(!mp->unmapped);
	CHECK(!mp->rss_estimated);
	CHECK_STR(mp->path, "/usr/lib/libc.so.6");
	CHECK(mp->path != v.path);	/* a copy, not the caller's buffer */
	CHECK_EQ_INT(mp->kind, MW_K_FILE);
	CHECK_EQ_U64(mp->born_ns, 123456789);
	CHECK_EQ_U64(mp->born_seq, 1);
	CHECK_EQ_U64(m.next_seq, 2);
	CHECK_EQ_INT(mp->phase, 3);
	for (int i = 0; i < MW_NR_MEMBERS; i++)
		CHECK_EQ_INT(mp->rss[i], 0);
	CHECK_EQ_INT(mp->rss_peak, 0);
	CHECK_EQ_U64(mp->faults, 0);
	CHECK_EQ_U64(mp->requested, 0);
	CHECK_EQ_U64(model_vm_bytes(&m), 3 * P);

	/* An empty or inverted range is refused and changes nothing. */
	v.start = v.end = 0x1000;
	CHECK(model_set_vma(&m, &v) == NULL);
	v.start = 0x3000;
	v.end = 0x2000;
	CHECK(model_set_vma(&m, &v) == NULL);
	CHECK_EQ_U64(m.nlive, 1);
	CHECK_EQ_U64(m.next_seq, 2);

	/* Second and third mappings go into order whatever the call order. */
	add_vma(&m, 0x1000, 0x2000, RW, NULL, false);
	add_vma(&m, 0x7fff00000000, 0x7fff00001000, RW, NULL, false);
	CHECK_EQ_U64(m.nlive, 3);
	CHECK_EQ_U64(live_at(&m, 0)->start, 0x1000);
	CHECK_EQ_U64(live_at(&m, 0)->born_seq, 2);
	CHECK_EQ_U64(live_at(&m, 1)->start, 0x7f0000000000);
	CHECK_EQ_U64(live_at(&m, 2)->born_seq, 3);
	CHECK(table_sane(&m));
	model_free(&m);
}

TEST(set_vma_same_range_is_idempotent)
{
	struct mw_model m;
	struct mw_mapping *mp, *again;

	model_init(&m, 0);
	mp = add_vma(&m, 0x10000, 0x14000, RW, NULL, false);
	set_rss(mp, 0, 3 * P, P, 0);
	set_history(mp, 5, 4 * P, 3 * P);
	again = add_vma(&m, 0x10000, 0x14000, RW, NULL, false);
	CHECK(again == mp);
	CHECK_EQ_U64(m.nlive, 1);
	CHECK_EQ_U64(m.ndead, 0);
	CHECK_EQ_U64(m.next_seq, 2);
	CHECK_EQ_INT(mp->rss[MW_ANON], 3 * P);
	CHECK_EQ_INT(mp->rss[MW_SWAP], P);
	CHECK_EQ_U64(mp->faults, 5);
	CHECK_EQ_U64(mp->requested, 4 * P);
	CHECK(!mp->rss_estimated);
	model_free(&m);
}

/* ---- device memory -------------------------------------------------------- */

TEST(device_kinds_from_flags)
{
	struct mw_vma_state v = { .start = 0x20000, .end = 0x24000, .ino = 1038,
				  .dev_minor = 16, .flags = RW | MW_VM_SHARED | MW_VM_MAYSHARE |
				  MW_VM_MIXEDMAP, .has_file = true,
				  .path = "anon_inode:bpf-map" };
	struct mw_model m;
	struct mw_mapping *mp;

	model_init(&m, 0);
	mp = model_set_vma(&m, &v);
	if (!CHECK(mp != NULL))
		goto out;
	CHECK_EQ_INT(mp->kind, MW_K_DEVICE);
	CHECK_STR(mw_device_kind(mp), "mixed");
	CHECK_EQ_U64(model_kind_vm(&m, MW_K_DEVICE), 0x4000);
	/* /proc's maps says nothing of VM_MIXEDMAP (a resync): the kernel's
	 * word stands for the same file... */
	v.flags = RW | MW_VM_SHARED | MW_VM_MAYSHARE;
	v.flags_known = RW | MW_VM_EXEC | MW_VM_SHARED | MW_VM_MAYSHARE;
	v.has_file = false;
	mp = model_set_vma(&m, &v);
	CHECK_EQ_INT(mp->kind, MW_K_DEVICE);
	/* ... not for another one. */
	v.ino = 1039;
	mp = model_set_vma(&m, &v);
	CHECK_EQ_INT(mp->kind, MW_K_SHMEM);
	CHECK(mw_device_kind(mp) == NULL);
	CHECK_EQ_U64(model_kind_vm(&m, MW_K_DEVICE), 0);
	CHECK_EQ_U64(m.device_vm_peak, 0x4000);

	/* Page frames: I/O memory or not; a dma-buf; [vvar] stays itself. */
	mp = add_vma(&m, 0x30000, 0x31000, RW | MW_VM_PFNMAP | MW_VM_IO, "/dev/dri/card0", true);
	CHECK_STR(mw_device_kind(mp), "pfn_io");
	mp = add_vma(&m, 0x31000, 0x33000, RW | MW_VM_PFNMAP, "/dev/dri/renderD128", true);
	CHECK_STR(mw_device_kind(mp), "pfn");
	mp = add_vma(&m, 0x40000, 0x44000, RW, "/dmabuf:", true);
	CHECK_STR(mw_device_kind(mp), "dmabuf");
	mp = add_vma(&m, 0x50000, 0x51000, RW, "/dev/nvidiactl", true);
	CHECK_STR(mw_device_kind(mp), "char");
	/* A GEM buffer's shmem file mapped directly (5.10's vgem dma-buf). */
	mp = add_vma(&m, 0x52000, 0x54000, RW | MW_VM_SHARED, "/drm mm object", true);
	CHECK_STR(mw_device_kind(mp), "gem");
	mp = add_vma(&m, 0x60000, 0x64000, MW_VM_READ | MW_VM_PFNMAP | MW_VM_IO, "[vvar]", false);
	CHECK_EQ_INT(mp->kind, MW_K_VVAR);
	CHECK_EQ_U64(model_kind_vm(&m, MW_K_DEVICE), 0x1000 + 0x2000 + 0x4000 + 0x1000 + 0x2000);
	CHECK(model_check(&m) == NULL);
out:
	model_free(&m);
}

/* ---- carve -------------------------------------------------------------- */

TEST(carve_middle_proportional)
{
	struct mw_model m;
	struct mw_pieces out = { 0 };
	struct mw_mapping *mp, *l, *mid, *r;
	const uint64_t A = 0x7f1000000000;

	model_init(&m, 0);
	mp = add_vma(&m, A, A + 4 * P, RX, "/usr/lib/libfoo.so", true);
	mp->pgoff = 0x5000;
	set_rss(mp, 4 * P, 0, 0, 0);
	set_history(mp, 40, 4 * P, 4 * P);

	model_carve(&m, A + P, A + 3 * P, &out);
	if (!CHECK_EQ_U64(out.n, 1))
		return;
	l = out.kept_left;
	mid = out.v[0];
	r = out.kept_right;
	CHECK(l == mp);			/* the left part stays the same object */
	CHECK(l != NULL && r != NULL && mid != l && mid != r && l != r);
	CHECK_EQ_U64(m.nlive, 2);
	CHECK(live_at(&m, 0) == l && live_at(&m, 1) == r);
	CHECK(table_sane(&m));

	CHECK_EQ_U64(l->start, A);
	CHECK_EQ_U64(l->end, A + P);
	CHECK_EQ_U64(mid->start, A + P);
	CHECK_EQ_U64(mid->end, A + 3 * P);
	CHECK_EQ_U64(r->start, A + 3 * P);
	CHECK_EQ_U64(r->end, A + 4 * P);
	/* File offsets follow the split. */
	CHECK_EQ_U64(l->pgoff, 0x5000);
	CHECK_EQ_U64(mid->pgoff, 0x5000 + P);
	CHECK_EQ_U64(r->pgoff, 0x5000 + 3 * P);
	/* Everything else is inherited. */
	CHECK_STR(mid->path, "/usr/lib/libfoo.so");
	CHECK_STR(r->path, "/usr/lib/libfoo.so");
	CHECK(mid->path != l->path && r->path != l->path);
	CHECK_EQ_U64(mid->born_seq, l->born_seq);
	CHECK_EQ_U64(r->born_seq, l->born_seq);
	CHECK_EQ_INT(mid->kind, MW_K_FILE);
	CHECK(!mid->unmapped);

	/* RSS divided by size (1:2:1), page-aligned. */
	CHECK_EQ_INT(l->rss[MW_FILE], P);
	CHECK_EQ_INT(mid->rss[MW_FILE], 2 * P);
	CHECK_EQ_INT(r->rss[MW_FILE], P);
	CHECK_EQ_INT(l->rss[MW_ANON] + mid->rss[MW_ANON] + r->rss[MW_ANON], 0);
	CHECK(l->rss_estimated && mid->rss_estimated && r->rss_estimated);
	CHECK_EQ_U64(l->faults, 10);
	CHECK_EQ_U64(mid->faults, 20);
	CHECK_EQ_U64(r->faults, 10);
	CHECK_EQ_U64(l->requested, P);
	CHECK_EQ_U64(mid->requested, 2 * P);
	CHECK_EQ_U64(r->requested, P);
	CHECK_EQ_INT(l->rss_peak, P);
	CHECK_EQ_INT(mid->rss_peak, 2 * P);
	CHECK_EQ_INT(r->rss_peak, P);
	CHECK_EQ_U64(model_vm_bytes(&m), 2 * P);
	CHECK_EQ_INT(model_rss(&m, MW_FILE), 2 * P);

	/* The caller buries what it carved. */
	m.now_ns = 999;
	model_bury_all(&m, &out);
	CHECK_EQ_U64(out.n, 0);
	CHECK(out.v == NULL);
	CHECK_EQ_U64(m.ndead, 1);
	CHECK(m.dead[0] == mid);
	CHECK(mid->unmapped);
	CHECK_EQ_U64(mid->died_ns, 999);
	model_free(&m);
}

TEST(carve_spanning_mappings_and_holes)
{
	struct mw_model m;
	struct mw_pieces out = { 0 };
	struct mw_mapping *m1, *m2, *m3;

	model_init(&m, 0);
	m1 = add_vma(&m, 0x10000, 0x12000, RW, NULL, false);
	m2 = add_vma(&m, 0x13000, 0x14000, RW, NULL, false);
	m3 = add_vma(&m, 0x15000, 0x18000, RW, NULL, false);
	set_rss(m1, 0, 2 * P, 0, 0);
	set_rss(m2, 0, P, 0, 0);
	set_rss(m3, 0, 3 * P, 0, 0);

	model_carve(&m, 0x11000, 0x16000, &out);
	if (!CHECK_EQ_U64(out.n, 3))
		return;
	CHECK_EQ_U64(out.v[0]->start, 0x11000);
	CHECK_EQ_U64(out.v[0]->end, 0x12000);
	CHECK(out.v[1] == m2);		/* whole mappings are not copied */
	CHECK_EQ_U64(out.v[2]->start, 0x15000);
	CHECK_EQ_U64(out.v[2]->end, 0x16000);
	CHECK(out.kept_left == m1);
	CHECK_EQ_U64(m1->start, 0x10000);
	CHECK_EQ_U64(m1->end, 0x11000);
	CHECK(out.kept_right == live_at(&m, 1));
	CHECK_EQ_U64(out.kept_right->start, 0x16000);
	CHECK_EQ_U64(out.kept_right->end, 0x18000);
	CHECK(out.v[2] == m3);		/* the right split keeps m3 on the left */
	CHECK_EQ_U64(m.nlive, 2);
	CHECK(table_sane(&m));
	/* Halves and thirds of whole pages. */
	CHECK_EQ_INT(m1->rss[MW_ANON], P);
	CHECK_EQ_INT(out.v[0]->rss[MW_ANON], P);
	CHECK_EQ_INT(m2->rss[MW_ANON], P);
	CHECK_EQ_INT(out.v[2]->rss[MW_ANON], P);
	CHECK_EQ_INT(out.kept_right->rss[MW_ANON], 2 * P);
	CHECK(!m2->rss_estimated);	/* taken whole, nothing guessed */
	CHECK(m1->rss_estimated && out.kept_right->rss_estimated);
	model_bury_all(&m, &out);
	CHECK_EQ_U64(m.ndead, 3);

	/* Only a hole: nothing carved, nothing kept. */
	model_carve(&m, 0x11000, 0x16000, &out);
	CHECK_EQ_U64(out.n, 0);
	CHECK(out.kept_left == NULL && out.kept_right == NULL);
	/* Exact boundaries: no split. */
	model_carve(&m, 0x16000, 0x18000, &out);
	CHECK_EQ_U64(out.n, 1);
	CHECK(out.kept_left == NULL && out.kept_right == NULL);
	CHECK_EQ_U64(m.nlive, 1);
	pieces_free(&out);
	CHECK_EQ_U64(out.n, 0);
	/* Empty and inverted ranges carve nothing. */
	model_carve(&m, 0x10800, 0x10800, &out);
	model_carve(&m, 0x10800, 0x10000, &out);
	CHECK_EQ_U64(out.n, 0);
	CHECK_EQ_U64(m.nlive, 1);
	CHECK_EQ_U64(live_at(&m, 0)->end, 0x11000);
	/* Everything. */
	model_carve(&m, 0, UINT64_MAX, &out);
	CHECK_EQ_U64(out.n, 1);
	CHECK_EQ_U64(m.nlive, 0);
	model_bury_all(&m, &out);
	CHECK_EQ_U64(m.ndead, 4);
	model_free(&m);
}

/* ---- merges ------------------------------------------------------------- */

TEST(set_vma_merges_neighbours)
{
	struct mw_model m;
	struct mw_mapping *a, *b, *c, *mp;

	model_init(&m, 0);
	m.now_ns = 100;
	a = add_vma(&m, 0x10000, 0x12000, RW, NULL, false);	/* seq 1 */
	m.now_ns = 200;
	m.phase = 1;
	b = add_vma(&m, 0x12000, 0x13000, RW, NULL, false);	/* seq 2 */
	set_rss(a, 0, P, 0, 0);
	a->faults = 2;
	a->requested = 2 * P;
	a->rss_peak = 3 * P;
	set_rss(b, 0, 2 * P, P, 0);
	b->faults = 5;
	b->requested = P;
	b->rss_peak = 2 * P;
	b->rss_estimated = true;

	/* The kernel merged them, plus the hole up to 0x14000. */
	m.now_ns = 300;
	mp = add_vma(&m, 0x10000, 0x14000, RW | MW_VM_EXEC, NULL, false);
	CHECK(mp == a);
	CHECK_EQ_U64(m.nlive, 1);
	CHECK_EQ_U64(m.ndead, 0);	/* absorbed, not buried */
	CHECK_EQ_U64(mp->start, 0x10000);
	CHECK_EQ_U64(mp->end, 0x14000);
	CHECK_EQ_U64(mp->flags, RW | MW_VM_EXEC);
	CHECK_EQ_U64(mp->born_seq, 1);
	CHECK_EQ_U64(mp->born_ns, 100);
	CHECK_EQ_INT(mp->phase, 0);
	CHECK_EQ_INT(mp->rss[MW_ANON], 3 * P);
	CHECK_EQ_INT(mp->rss[MW_SWAP], P);
	CHECK_EQ_U64(mp->faults, 7);
	CHECK_EQ_U64(mp->requested, 3 * P);
	CHECK_EQ_INT(mp->rss_peak, 3 * P);
	CHECK(mp->rss_estimated);	/* inherited from b */
	CHECK_EQ_U64(m.next_seq, 3);

	/* The older piece keeps identity even when it is on the right. */
	m.now_ns = 400;
	c = add_vma(&m, 0xf000, 0x10000, RW, NULL, false);	/* seq 3 */
	set_rss(c, 0, P, 0, 0);
	c->faults = 1;
	mp = add_vma(&m, 0xf000, 0x14000, RW, NULL, false);
	CHECK(mp == a);
	CHECK_EQ_U64(m.nlive, 1);
	CHECK_EQ_U64(mp->start, 0xf000);
	CHECK_EQ_U64(mp->born_seq, 1);
	CHECK_EQ_U64(mp->born_ns, 100);
	CHECK_EQ_INT(mp->rss[MW_ANON], 4 * P);
	CHECK_EQ_U64(mp->faults, 8);
	/* The peak follows the total when the sum exceeds every old peak. */
	CHECK_EQ_INT(mp->rss_peak, 4 * P);
	model_free(&m);
}

TEST(set_vma_merge_peak_is_max)
{
	struct mw_model m;
	struct mw_mapping *a, *b, *mp;

	model_init(&m, 0);
	a = add_vma(&m, 0x10000, 0x1a000, RW, NULL, false);	/* 10 pages */
	b = add_vma(&m, 0x1a000, 0x1e000, RW, NULL, false);	/* 4 */
	set_rss(a, 0, P, 0, 0);
	a->rss_peak = 10 * P;
	set_rss(b, 0, P, 0, 0);
	b->rss_peak = 4 * P;
	mp = add_vma(&m, 0x10000, 0x1e000, RW, NULL, false);
	CHECK(mp == a);
	CHECK_EQ_INT(mp->rss[MW_ANON], 2 * P);
	CHECK_EQ_INT(mp->rss_peak, 10 * P);
	model_free(&m);
}

/* ---- mprotect-like splits ------------------------------------------------ */

/* What the mprotect splits split: [a, a + 8 pages), 5 pages resident and 2
 * swapped out, after 8 faults and 8 pages asked for, at most 6 resident. */
static struct mw_mapping *split_victim(struct mw_model *m, uint64_t a)
{
	struct mw_mapping *mp = add_vma(m, a, a + 8 * P, RW, NULL, false);

	set_rss(mp, 0, 5 * P, 2 * P, 0);
	set_history(mp, 8, 8 * P, 6 * P);
	return mp;
}

TEST(mprotect_split_proportional)
{
	struct mw_model m;
	struct mw_mapping *mp, *l, *mid, *r;
	const uint64_t A = 0x7f2000000000;

	model_init(&m, 0);
	mp = split_victim(&m, A);

	mid = add_vma(&m, A + 2 * P, A + 4 * P, MW_VM_READ, NULL, false);
	if (!CHECK_EQ_U64(m.nlive, 3))
		return;
	l = live_at(&m, 0);
	r = live_at(&m, 2);
	CHECK(live_at(&m, 1) == mid);
	CHECK(l == mp);
	CHECK(table_sane(&m));
	CHECK_EQ_U64(l->end, A + 2 * P);
	CHECK_EQ_U64(mid->start, A + 2 * P);
	CHECK_EQ_U64(mid->end, A + 4 * P);
	CHECK_EQ_U64(r->start, A + 4 * P);
	CHECK_EQ_U64(r->end, A + 8 * P);
	/* Attributes change only in the middle. */
	CHECK_EQ_U64(l->flags, RW);
	CHECK_EQ_U64(mid->flags, MW_VM_READ);
	CHECK_EQ_U64(r->flags, RW);
	char perms[5];
	mapping_perms(mid, perms);
	CHECK_STR(perms, "r--p");
	/*
	 * 5 anon pages over 2:2:4 pages.  Split at A+2P, left measured by
	 * size (1/4): 1.25 pages -> 1 page, 4 left.  Then the rest split at
	 * A+4P, right measured (2/3): 2.67 -> 2 pages, middle keeps 2.
	 * Swap the same way: 0.5 -> 0, then 1.33 -> 1 page.
	 */
	CHECK_EQ_INT(l->rss[MW_ANON], P);
	CHECK_EQ_INT(mid->rss[MW_ANON], 2 * P);
	CHECK_EQ_INT(r->rss[MW_ANON], 2 * P);
	CHECK_EQ_INT(l->rss[MW_SWAP], 0);
	CHECK_EQ_INT(mid->rss[MW_SWAP], P);
	CHECK_EQ_INT(r->rss[MW_SWAP], P);
	CHECK_EQ_INT(model_rss(&m, MW_ANON), 5 * P);
	CHECK_EQ_INT(model_rss(&m, MW_SWAP), 2 * P);
	CHECK(l->rss_estimated && mid->rss_estimated && r->rss_estimated);
	CHECK_EQ_U64(m.split_guesses, 2);	/* diagnostics.splits_by_size */
	CHECK_EQ_U64(l->faults, 2);
	CHECK_EQ_U64(mid->faults, 2);
	CHECK_EQ_U64(r->faults, 4);
	CHECK_EQ_U64(l->requested, 2 * P);
	CHECK_EQ_U64(mid->requested, 2 * P);
	CHECK_EQ_U64(r->requested, 4 * P);
	/* Peak 6P, divided in whole pages: left max(1P, 1.5P -> 1P); rest
	 * 5P -> right max(2P, 3.33P -> 3P), middle max(2P, 2P). */
	CHECK_EQ_INT(l->rss_peak, P);
	CHECK_EQ_INT(r->rss_peak, 3 * P);
	CHECK_EQ_INT(mid->rss_peak, 2 * P);
	CHECK_EQ_U64(mid->born_seq, mp->born_seq);
	CHECK_EQ_U64(m.next_seq, 2);
	CHECK_EQ_U64(model_vm_bytes(&m), 8 * P);
	model_free(&m);
}

TEST(mprotect_split_oracle)
{
	struct mw_model m;
	struct fake_oracle o = { 0 };
	struct mw_mapping *l, *mid, *r;
	const uint64_t A = 0x7f3000000000;

	model_init(&m, 0);
	use_oracle(&m, &o);
	split_victim(&m, A);
	CHECK_EQ_INT(o.calls, 0);	/* nothing to divide yet */
	oracle_answer(&o, A, A + 2 * P, 2 * P, 0);
	oracle_answer(&o, A + 2 * P, A + 4 * P, 2 * P, 0);

	mid = add_vma(&m, A + 2 * P, A + 4 * P, MW_VM_READ, NULL, false);
	if (!CHECK_EQ_U64(m.nlive, 3))
		return;
	l = live_at(&m, 0);
	r = live_at(&m, 2);
	/* The pages stay (a VMA described anew): each split measures its
	 * smaller side, [A, A+2P) of 8P, then [A+2P, A+4P) of 6P. */
	CHECK_EQ_INT(o.calls, 2);
	CHECK_EQ_U64(o.qs[0], A);
	CHECK_EQ_U64(o.qe[0], A + 2 * P);
	CHECK_EQ_U64(o.qs[1], A + 2 * P);
	CHECK_EQ_U64(o.qe[1], A + 4 * P);
	CHECK_EQ_INT(l->rss[MW_ANON], 2 * P);
	CHECK_EQ_INT(r->rss[MW_ANON], P);
	CHECK_EQ_INT(mid->rss[MW_ANON], 2 * P);
	CHECK_EQ_INT(l->rss[MW_FILE] + mid->rss[MW_FILE] + r->rss[MW_FILE], 0);
	/* Swap is not in pagemap's answer: by size, in whole pages, the
	 * side that stays first (as without an oracle). */
	CHECK_EQ_INT(l->rss[MW_SWAP], 0);
	CHECK_EQ_INT(r->rss[MW_SWAP], P);
	CHECK_EQ_INT(mid->rss[MW_SWAP], P);
	CHECK(!l->rss_estimated && !mid->rss_estimated && !r->rss_estimated);
	CHECK_EQ_U64(m.split_guesses, 0);
	CHECK_EQ_U64(l->faults, 2);
	CHECK_EQ_U64(r->faults, 4);
	CHECK_EQ_U64(mid->faults, 2);
	CHECK_EQ_INT(l->rss_peak, 2 * P);
	CHECK_EQ_INT(r->rss_peak, 2 * P);	/* 4P of peak left, 2/3: 2.67P -> 2P */
	CHECK_EQ_INT(mid->rss_peak, 2 * P);
	model_free(&m);
}

/*
 * One page described anew in a large mapping (madvise, mprotect): the
 * splits measure the smaller sides, [A+5P, A+8P) and then the page, not
 * the 5P and 2P outside it.  A carve whose range does not keep its pages
 * (a removal, a placement) measures what stays outside it.
 */
TEST(split_oracle_measures_the_smaller_side)
{
	struct mw_model m;
	struct fake_oracle o;
	struct mw_pieces out = { 0 };
	struct mw_mapping *mid;
	const uint64_t A = 0x7f4800000000;

	oracle_model(&m, &o, A, 8, 6 * P);
	oracle_answer(&o, A + 5 * P, A + 8 * P, 3 * P, 0);
	oracle_answer(&o, A + 5 * P, A + 6 * P, P, 0);
	mid = add_vma(&m, A + 5 * P, A + 6 * P, MW_VM_READ, NULL, false);
	if (!CHECK_EQ_INT(o.calls, 2))
		return;
	CHECK_EQ_U64(o.qs[0], A + 5 * P);
	CHECK_EQ_U64(o.qe[0], A + 8 * P);
	CHECK_EQ_U64(o.qs[1], A + 5 * P);
	CHECK_EQ_U64(o.qe[1], A + 6 * P);
	CHECK_EQ_INT(live_at(&m, 0)->rss[MW_ANON], 3 * P);
	CHECK_EQ_INT(mid->rss[MW_ANON], P);
	CHECK_EQ_INT(live_at(&m, 2)->rss[MW_ANON], 2 * P);
	CHECK(!live_at(&m, 0)->rss_estimated && !mid->rss_estimated &&
	      !live_at(&m, 2)->rss_estimated);
	model_free(&m);

	oracle_model(&m, &o, A, 8, 6 * P);
	model_carve(&m, A + 5 * P, A + 6 * P, &out);
	CHECK_EQ_INT(o.calls, 2);
	CHECK_EQ_U64(o.qs[0], A);
	CHECK_EQ_U64(o.qe[0], A + 5 * P);
	CHECK_EQ_U64(o.qs[1], A + 6 * P);
	CHECK_EQ_U64(o.qe[1], A + 8 * P);
	pieces_free(&out);
	model_free(&m);
}

TEST(split_oracle_clamps_and_shmem)
{
	struct mw_model m;
	struct fake_oracle o;
	struct mw_mapping *mp, *mid;
	const uint64_t A = 0x7f4000000000;

	/* The oracle cannot give a part more than the whole had, nor more
	 * than its size: the rest takes the excess, and both are estimates. */
	oracle_model(&m, &o, A, 4, 3 * P);
	oracle_answer(&o, A, A + 2 * P, 10 * P, 7 * P);
	mid = add_vma(&m, A + 2 * P, A + 4 * P, MW_VM_READ, NULL, false);
	CHECK_EQ_INT(o.calls, 1);
	CHECK_EQ_INT(live_at(&m, 0)->rss[MW_ANON], 2 * P);
	CHECK_EQ_INT(live_at(&m, 0)->rss[MW_FILE], 0);
	CHECK_EQ_INT(mid->rss[MW_ANON], P);
	CHECK_EQ_INT(mid->rss[MW_FILE], 0);
	CHECK(live_at(&m, 0)->rss_estimated && mid->rss_estimated);
	model_free(&m);

	/* A shared anonymous mapping: pagemap's "file" pages are shmem. */
	memset(&o, 0, sizeof(o));
	model_init(&m, 0);
	use_oracle(&m, &o);
	mp = add_vma(&m, A, A + 4 * P, RW | MW_VM_SHARED | MW_VM_MAYSHARE, NULL, false);
	CHECK_EQ_INT(mp->kind, MW_K_SHMEM);
	set_rss(mp, 0, 0, 0, 4 * P);
	oracle_answer(&o, A, A + P, 0, P);
	mid = add_vma(&m, A + P, A + 4 * P, MW_VM_READ | MW_VM_SHARED | MW_VM_MAYSHARE, NULL, false);
	CHECK_EQ_INT(live_at(&m, 0)->rss[MW_SHMEM], P);
	CHECK_EQ_INT(live_at(&m, 0)->rss[MW_FILE], 0);
	CHECK_EQ_INT(mid->rss[MW_SHMEM], 3 * P);
	CHECK_EQ_INT(mid->rss[MW_FILE], 0);
	CHECK(!mid->rss_estimated);
	model_free(&m);

	/* A private file mapping: COW pages anon, page cache file. */
	memset(&o, 0, sizeof(o));
	model_init(&m, 0);
	use_oracle(&m, &o);
	mp = add_vma(&m, A, A + 4 * P, RW, "/data/file", true);
	set_rss(mp, 3 * P, P, 0, 0);
	oracle_answer(&o, A + 2 * P, A + 4 * P, P, P);	/* right part stays */
	mid = add_vma(&m, A, A + 2 * P, MW_VM_READ, "/data/file", true);
	CHECK_EQ_INT(live_at(&m, 1)->rss[MW_ANON], P);
	CHECK_EQ_INT(live_at(&m, 1)->rss[MW_FILE], P);
	CHECK_EQ_INT(mid->rss[MW_ANON], 0);
	CHECK_EQ_INT(mid->rss[MW_FILE], 2 * P);
	CHECK_EQ_U64(live_at(&m, 1)->pgoff, 2 * P);
	model_free(&m);
}

TEST(split_oracle_failure_falls_back)
{
	struct mw_model m;
	struct fake_oracle o = { .err = -ESRCH };
	struct mw_mapping *mp, *mid;
	const uint64_t A = 0x7f5000000000;

	model_init(&m, 0);
	use_oracle(&m, &o);
	mp = add_vma(&m, A, A + 4 * P, RW, NULL, false);
	set_rss(mp, 0, 4 * P, 0, 0);
	mid = add_vma(&m, A + 2 * P, A + 4 * P, MW_VM_READ, NULL, false);
	CHECK_EQ_INT(o.calls, 1);
	CHECK_EQ_INT(live_at(&m, 0)->rss[MW_ANON], 2 * P);
	CHECK_EQ_INT(mid->rss[MW_ANON], 2 * P);
	CHECK(live_at(&m, 0)->rss_estimated && mid->rss_estimated);
	CHECK(live_at(&m, 0)->recheck && mid->recheck);	/* measured when quiet */
	CHECK_EQ_U64(m.split_guesses, 1);		/* diagnostics.splits_by_size */
	/* Declined (the loader's pagemap budget, trace_proc.c): the same. */
	o.err = -EBUSY;
	mid = add_vma(&m, A + 3 * P, A + 4 * P, MW_VM_READ | MW_VM_EXEC, NULL, false);
	CHECK_EQ_INT(o.calls, 2);
	CHECK_EQ_INT(mid->rss[MW_ANON], P);
	CHECK_EQ_U64(m.split_guesses, 2);

	/* No RSS at all: the oracle is not asked, nothing is guessed. */
	mp = add_vma(&m, 0x10000, 0x14000, RW, NULL, false);
	add_vma(&m, 0x12000, 0x14000, MW_VM_READ, NULL, false);
	CHECK_EQ_INT(o.calls, 2);
	CHECK_EQ_U64(m.split_guesses, 2);
	CHECK(!live_at(&m, 0)->rss_estimated && !live_at(&m, 1)->rss_estimated);
	model_free(&m);
}

/*
 * A guess that puts all of a page on one side is still a guess: the flag
 * must be set so that later exact figures (munmap's RSS delta) can correct
 * the part that stayed.
 */
TEST(split_rounding_still_flags_estimate)
{
	struct mw_model m;
	struct mw_pieces out = { 0 };
	struct mw_mapping *mp;

	model_init(&m, 0);
	mp = add_vma(&m, 0x10000, 0x12000, RW, NULL, false);
	set_rss(mp, 0, P, 0, 0);
	model_carve(&m, 0x11000, 0x12000, &out);
	if (!CHECK_EQ_U64(out.n, 1))
		return;
	CHECK(out.kept_left == mp);
	/* Half a page rounds down to nothing on the measured (left) side. */
	CHECK_EQ_INT(mp->rss[MW_ANON], 0);
	CHECK_EQ_INT(out.v[0]->rss[MW_ANON], P);
	CHECK(mp->rss_estimated);
	CHECK(out.v[0]->rss_estimated);
	pieces_free(&out);
	model_free(&m);
}

/* ---- place, bury, fold ----------------------------------------------------- */

TEST(place_over_existing)
{
	struct mw_model m;
	struct mw_mapping *old, *nw;

	model_init(&m, 0);
	old = add_vma(&m, 0x10000, 0x14000, RW, NULL, false);
	set_rss(old, 0, 4 * P, 0, 0);
	add_vma(&m, 0x20000, 0x21000, RW, NULL, false);
	nw = calloc(1, sizeof(*nw));
	nw->start = 0x11000;
	nw->end = 0x12000;
	nw->flags = RX;
	nw->born_seq = 77;
	set_rss(nw, 0, 3 * P, 0, 0);
	m.now_ns = 5555;
	model_place(&m, nw);
	CHECK_EQ_U64(m.nlive, 4);
	CHECK(table_sane(&m));
	CHECK(live_at(&m, 0) == old);
	CHECK_EQ_U64(old->end, 0x11000);
	CHECK(live_at(&m, 1) == nw);
	CHECK_EQ_U64(live_at(&m, 2)->start, 0x12000);
	CHECK_EQ_U64(live_at(&m, 2)->end, 0x14000);
	CHECK_EQ_U64(live_at(&m, 3)->start, 0x20000);
	CHECK_EQ_INT(nw->rss[MW_ANON], 3 * P);	/* placed as given */
	/* The page that was there is buried with its share. */
	if (!CHECK_EQ_U64(m.ndead, 1))
		return;
	CHECK_EQ_U64(m.dead[0]->start, 0x11000);
	CHECK_EQ_U64(m.dead[0]->end, 0x12000);
	CHECK(m.dead[0]->unmapped);
	CHECK_EQ_U64(m.dead[0]->died_ns, 5555);
	CHECK_EQ_INT(m.dead[0]->rss[MW_ANON], P);
	CHECK_EQ_INT(old->rss[MW_ANON], P);
	CHECK_EQ_INT(live_at(&m, 2)->rss[MW_ANON], 2 * P);

	/* Into a hole: nothing buried. */
	nw = calloc(1, sizeof(*nw));
	nw->start = 0x30000;
	nw->end = 0x31000;
	model_place(&m, nw);
	CHECK_EQ_U64(m.nlive, 5);
	CHECK(live_at(&m, 4) == nw);
	CHECK_EQ_U64(m.ndead, 1);
	model_free(&m);
}

TEST(bury_and_fold)
{
	struct mw_model m;
	struct mw_mapping *v[5];

	model_init(&m, 2);
	for (int i = 0; i < 5; i++) {
		v[i] = add_vma(&m, 0x10000 * (i + 1), 0x10000 * (i + 1) + (i + 1) * P,
			       RW, "/x", true);
		set_rss(v[i], (i + 1) * 10, (i + 1) * 100, (i + 1), (i + 1) * 1000);
		v[i]->rss_peak = (i + 1) * 2000;
		v[i]->faults = i + 1;
		v[i]->requested = (i + 1) * P;
	}
	struct mw_pieces all = { 0 };
	m.now_ns = 42;
	model_carve(&m, 0, UINT64_MAX, &all);
	CHECK_EQ_U64(all.n, 5);
	model_bury_all(&m, &all);
	CHECK_EQ_U64(m.nlive, 0);
	CHECK_EQ_U64(m.ndead, 2);
	CHECK(m.dead[0] == v[0] && m.dead[1] == v[1]);
	CHECK(v[0]->unmapped && v[1]->unmapped);
	CHECK_EQ_U64(v[1]->died_ns, 42);
	CHECK_EQ_U64(m.nfolded, 3);
	/* v[2..4]: sizes 3+4+5 pages; rss (3+4+5) * 10/100/1/1000. */
	CHECK_EQ_U64(m.folded.end, 12 * P);
	CHECK_EQ_INT(m.folded.rss[MW_FILE], 120);
	CHECK_EQ_INT(m.folded.rss[MW_ANON], 1200);
	CHECK_EQ_INT(m.folded.rss[MW_SWAP], 12);
	CHECK_EQ_INT(m.folded.rss[MW_SHMEM], 12000);
	CHECK_EQ_INT(m.folded.rss_peak, 24000);
	CHECK_EQ_U64(m.folded.faults, 12);
	CHECK_EQ_U64(m.folded.requested, 12 * P);
	model_free(&m);

	/* dead_limit 0: keep everything. */
	model_init(&m, 0);
	for (int i = 0; i < 70; i++) {
		struct mw_mapping *mp = add_vma(&m, 0x100000 + i * 2 * P,
						0x100000 + i * 2 * P + P, RW, NULL, false);
		struct mw_pieces p = { 0 };

		model_carve(&m, mp->start, mp->end, &p);
		model_bury_all(&m, &p);
	}
	CHECK_EQ_U64(m.ndead, 70);
	CHECK_EQ_U64(m.nfolded, 0);
	CHECK_EQ_U64(m.folded.end, 0);
	model_free(&m);
}

/* ---- sizes and rss -------------------------------------------------------- */

TEST(vm_bytes_and_rss)
{
	struct mw_model m;
	struct mw_mapping *a, *b, *vs;

	model_init(&m, 0);
	CHECK_EQ_U64(model_vm_bytes(&m), 0);
	a = add_vma(&m, 0x10000, 0x13000, RW, NULL, false);
	b = add_vma(&m, 0x7ffd0000, 0x7ffd2000, RX, "[vdso]", false);
	vs = add_vma(&m, 0xffffffffff600000, 0xffffffffff601000, MW_VM_EXEC,
		     "[vsyscall]", false);
	CHECK_EQ_INT(vs->kind, MW_K_VSYSCALL);
	CHECK_EQ_U64(model_vm_bytes(&m), 5 * P);	/* no gate page */
	set_rss(a, 1, 2, 4, 8);
	set_rss(b, 16, 32, 64, 128);
	CHECK_EQ_INT(model_rss(&m, MW_FILE), 17);
	CHECK_EQ_INT(model_rss(&m, MW_ANON), 34);
	CHECK_EQ_INT(model_rss(&m, MW_SWAP), 68);
	CHECK_EQ_INT(model_rss(&m, MW_SHMEM), 136);
	CHECK_EQ_INT(mapping_rss_total(a), 11);	/* swap not resident */
	model_free(&m);
}

/*
 * Issue 14: after ld.so's mprotect splits, libc's 8 KiB rw-p showed a peak
 * of 21845 bytes and a 16 KiB r--p one of 53248.  A piece's peak is whole
 * pages and never more than the piece.
 */
TEST(split_peak_whole_pages_within_size)
{
	struct mw_model m;
	struct mw_mapping *mp, *l, *mid, *r;
	const uint64_t A = 0x7f3000000000;

	model_init(&m, 0);
	mp = add_vma(&m, A, A + 3 * P, RW, NULL, false);
	set_rss(mp, 0, P, 0, 0);
	set_history(mp, 0, 0, 65536);	/* 16 pages over 3: 21845.33 each */
	mid = add_vma(&m, A + P, A + 2 * P, MW_VM_READ, NULL, false);
	if (!CHECK_EQ_U64(m.nlive, 3))
		return;
	l = model_first(&m);
	CHECK(model_next(l) == mid);
	r = model_next(mid);
	for (struct mw_mapping *p = l; p; p = model_next(p)) {
		CHECK_EQ_INT(p->rss_peak % P, 0);
		CHECK(p->rss_peak <= (int64_t)(p->end - p->start));
		CHECK(p->rss_peak >= mapping_rss_total(p));
	}
	CHECK_EQ_INT(l->rss_peak + mid->rss_peak + r->rss_peak, 3 * P);
	model_free(&m);
}

TEST(take_rss_bounds_and_peak)
{
	struct mw_mapping mp = { .start = 0x10000, .end = 0x10000 + 16 * P };

	CHECK_EQ_INT(mapping_take_rss(&mp, MW_ANON, 3 * P), 3 * P);
	CHECK_EQ_INT(mp.rss[MW_ANON], 3 * P);
	CHECK_EQ_INT(mp.rss_peak, 3 * P);
	mapping_take_rss(&mp, MW_FILE, 2 * P);
	CHECK_EQ_INT(mp.rss_peak, 5 * P);
	/* Never below 0: it gives only the 3 pages it has. */
	CHECK_EQ_INT(mapping_take_rss(&mp, MW_ANON, -4 * (int64_t)P), -3 * (int64_t)P);
	CHECK_EQ_INT(mp.rss[MW_ANON], 0);
	CHECK_EQ_INT(mp.rss_peak, 5 * P);
	/* Swap is no peak, and bounded by the size on its own. */
	CHECK_EQ_INT(mapping_take_rss(&mp, MW_SWAP, 100 * P), 16 * P);
	CHECK_EQ_INT(mp.rss_peak, 5 * P);
	/* Never above the size: 2 file pages leave room for 14. */
	CHECK_EQ_INT(mapping_take_rss(&mp, MW_SHMEM, 20 * P), 14 * P);
	CHECK_EQ_INT(mp.rss_peak, 16 * P);
	CHECK_EQ_INT(mapping_take_rss(&mp, -1, P), 0);		/* out of range: ignored */
	CHECK_EQ_INT(mapping_take_rss(&mp, MW_NR_MEMBERS, P), 0);
	CHECK_EQ_INT(mapping_rss_total(&mp), 16 * P);
}

TEST(clamp_rss)
{
	struct mw_mapping mp = { .start = 0x10000, .end = 0x10000 + 4 * P };

	CHECK(!mapping_clamp_rss(&mp));
	mp.rss[MW_ANON] = -1408;
	mp.rss[MW_FILE] = P + 1408;
	CHECK(mapping_clamp_rss(&mp));
	CHECK_EQ_INT(mp.rss[MW_ANON], 0);
	CHECK_EQ_INT(mp.rss[MW_FILE], P);
	mp.rss[MW_ANON] = 5 * P;
	CHECK(mapping_clamp_rss(&mp));
	CHECK_EQ_INT(mapping_rss_total(&mp), 4 * P);
	CHECK_EQ_INT(mp.rss[MW_FILE], P);
	CHECK(!mapping_clamp_rss(&mp));
}

/* A damaged stream (the fuzzer's find): an empty or inverted range, and
 * members whose sum overflows.  The clamp ends, and leaves nothing. */
TEST(clamp_rss_damaged_range)
{
	struct mw_mapping mp = { .start = 0x20000, .end = 0x10000 };

	mp.rss[MW_ANON] = 3 * P;
	mp.rss[MW_FILE] = P;
	CHECK(mapping_clamp_rss(&mp));
	CHECK_EQ_INT(mapping_rss_total(&mp), 0);
	mp.start = mp.end = 0x10000;
	mp.rss[MW_ANON] = (INT64_MAX & ~(int64_t)(P - 1));
	mp.rss[MW_SHMEM] = (INT64_MAX & ~(int64_t)(P - 1));
	mp.rss[MW_FILE] = (INT64_MAX & ~(int64_t)(P - 1));
	CHECK(mapping_clamp_rss(&mp));
	CHECK_EQ_INT(mp.rss[MW_ANON] + mp.rss[MW_FILE] + mp.rss[MW_SHMEM], 0);
}

/* The unmap of issue 26: 12 KiB + 510 MiB pieces, the large one holding
 * all of it, the change spread by size.  Before: +1408 and -1408. */
TEST(apportion_whole_pages_never_negative)
{
	struct mw_mapping a = { .start = 0x100000, .end = 0x100000 + 3 * P };
	struct mw_mapping b = { .start = a.end, .end = a.end + 130560 * P };
	struct mw_mapping *v[] = { &a, &b };
	uint64_t w[] = { 3 * P, 130560 * P };

	b.rss[MW_ANON] = 15000 * P;
	/* Freed 15000 pages: the small piece has none to give. */
	CHECK_EQ_INT(mappings_apportion(v, w, 2, MW_ANON, -15000 * (int64_t)P), 0);
	CHECK_EQ_INT(a.rss[MW_ANON], 0);
	CHECK_EQ_INT(b.rss[MW_ANON], 0);
	/* 1000 pages more than there are: what nobody had is returned. */
	b.rss[MW_ANON] = 10 * P;
	CHECK_EQ_INT(mappings_apportion(v, w, 2, MW_ANON, -1010 * (int64_t)P), -1000 * (int64_t)P);
	/* Gains: whole pages, the remainder where it fits, none past a size. */
	CHECK_EQ_INT(mappings_apportion(v, w, 2, MW_FILE, 7 * P), 0);
	CHECK_EQ_INT(a.rss[MW_FILE] % P, 0);
	CHECK_EQ_INT(a.rss[MW_FILE] + b.rss[MW_FILE], 7 * P);
	CHECK_EQ_INT(mappings_apportion(v, w, 2, MW_FILE, 300000 * P),
		     (300000 - 130563 + 7) * P);
	CHECK_EQ_INT(a.rss[MW_FILE], 3 * P);
	CHECK_EQ_INT(b.rss[MW_FILE], 130560 * P);
	/* Less than a page is nobody's. */
	CHECK_EQ_INT(mappings_apportion(v, w, 2, MW_SWAP, 100), 100);
	CHECK_EQ_INT(mappings_apportion(v, w, 0, MW_SWAP, P), P);
}

/* ---- names and perms -------------------------------------------------------- */

/* mapping_perms() of a mapping with @flags. */
static void check_perms(uint64_t flags, const char *want)
{
	struct mw_mapping mp = { .flags = flags };
	char p[5];

	mapping_perms(&mp, p);
	if (!CHECK_STR(p, want))
		fprintf(stderr, "  flags 0x%" PRIx64 "\n", flags);
}

TEST(perms)
{
	check_perms(0, "---p");
	check_perms(MW_VM_READ | MW_VM_WRITE, "rw-p");
	check_perms(MW_VM_READ | MW_VM_EXEC, "r-xp");
	check_perms(MW_VM_READ | MW_VM_WRITE | MW_VM_SHARED | MW_VM_MAYSHARE, "rw-s");
	/* /proc shows 's' for VM_MAYSHARE (a read-only shared map drops
	 * VM_SHARED but stays 's'). */
	check_perms(MW_VM_READ | MW_VM_MAYSHARE, "r--s");
	check_perms(MW_VM_READ | MW_VM_SHARED, "r--p");
	check_perms(MW_VM_EXEC | MW_VM_GROWSDOWN | MW_VM_IO, "--xp");
}

TEST(perms_to_flags)
{
	CHECK_EQ_U64(mw_perms_to_flags("rw-p"), MW_VM_READ | MW_VM_WRITE);
	CHECK_EQ_U64(mw_perms_to_flags("r-xp"), MW_VM_READ | MW_VM_EXEC);
	CHECK_EQ_U64(mw_perms_to_flags("---p"), 0);
	CHECK_EQ_U64(mw_perms_to_flags("rwxs"), MW_VM_READ | MW_VM_WRITE | MW_VM_EXEC |
		     MW_VM_SHARED | MW_VM_MAYSHARE);
	CHECK_EQ_U64(mw_perms_to_flags("r--s"), MW_VM_READ | MW_VM_SHARED | MW_VM_MAYSHARE);
	CHECK_EQ_U64(mw_perms_to_flags("--xp"), MW_VM_EXEC);
	CHECK_EQ_U64(mw_perms_to_flags("rw-"), 0);	/* too short */
	CHECK_EQ_U64(mw_perms_to_flags(""), 0);
	CHECK_EQ_U64(mw_perms_to_flags(NULL), 0);
	/* Round trip through mapping_perms. */
	const char *all[] = { "---p", "r--p", "rw-p", "r-xp", "rwxp", "--xp",
			      "r--s", "rw-s", "rwxs", "---s" };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		check_perms(mw_perms_to_flags(all[i]), all[i]);
}

TEST(display_path)
{
	struct mw_model m;
	struct mw_mapping *mp;
	char buf[64];

	model_init(&m, 0);
	m.start_brk = 0x555555560000;
	m.brk = 0x555555581000;
	m.start_stack = 0x7ffd00020a50;

	mp = add_vma(&m, 0x555555560000, 0x555555581000, RW, NULL, false);
	CHECK_EQ_INT(mp->kind, MW_K_HEAP);
	CHECK_STR(mapping_display_path(&m, mp, buf, sizeof(buf)), "[heap]");
	mp = add_vma(&m, 0x7ffd00000000, 0x7ffd00021000, RW | MW_VM_GROWSDOWN, NULL, false);
	CHECK_EQ_INT(mp->kind, MW_K_STACK);
	CHECK_STR(mapping_display_path(&m, mp, buf, sizeof(buf)), "[stack]");
	mp = add_vma(&m, 0x7f0000000000, 0x7f0000001000, RX, "/usr/lib/libc.so.6", true);
	CHECK_STR(mapping_display_path(&m, mp, buf, sizeof(buf)), "/usr/lib/libc.so.6");
	mp->deleted = true;
	CHECK_STR(mapping_display_path(&m, mp, buf, sizeof(buf)), "/usr/lib/libc.so.6 (deleted)");
	/* Truncated to the buffer, still terminated. */
	char small[8];
	CHECK_STR(mapping_display_path(&m, mp, small, sizeof(small)), "/usr/li");
	mp = add_vma(&m, 0x7f0000010000, 0x7f0000011000, RW, NULL, false);
	CHECK_STR(mapping_display_path(&m, mp, buf, sizeof(buf)), "");
	mp = add_vma(&m, 0x7f0000020000, 0x7f0000022000, RX, "[vdso]", false);
	CHECK_STR(mapping_display_path(&m, mp, buf, sizeof(buf)), "[vdso]");
	mp = add_vma(&m, 0x7f0000030000, 0x7f0000031000, RW, "[anon:glibc malloc]", false);
	CHECK_STR(mapping_display_path(&m, mp, buf, sizeof(buf)), "[anon:glibc malloc]");
	/* A dead heap piece is no longer "[heap]". */
	mp = live_at(&m, 0);
	CHECK_EQ_INT(mp->kind, MW_K_HEAP);
	mp->unmapped = true;
	CHECK_STR(mapping_display_path(&m, mp, buf, sizeof(buf)), "");
	mp->unmapped = false;
	model_free(&m);
}

/* Kernel names survive attribute changes; a file name does not survive the
 * mapping becoming anonymous; a new path replaces the old one. */
TEST(set_vma_path_rules)
{
	struct mw_model m;
	struct mw_mapping *mp;

	model_init(&m, 0);
	mp = add_vma(&m, 0x10000, 0x12000, RW, "[anon:jit]", false);
	CHECK_EQ_INT(mp->kind, MW_K_ANON);
	mp = add_vma(&m, 0x10000, 0x12000, RX, NULL, false);	/* mprotect */
	CHECK_STR(mp->path, "[anon:jit]");
	CHECK_EQ_U64(mp->flags, RX);
	mp = add_vma(&m, 0x20000, 0x22000, RX, "/bin/true", true);
	CHECK_STR(mp->path, "/bin/true");
	mp = add_vma(&m, 0x20000, 0x22000, MW_VM_READ, "/bin/false", true);
	CHECK_STR(mp->path, "/bin/false");
	mp = add_vma(&m, 0x20000, 0x22000, RW, NULL, false);	/* now anonymous */
	CHECK(mp->path == NULL);
	CHECK(!mp->has_file);
	CHECK_EQ_INT(mp->kind, MW_K_ANON);
	mp = add_vma(&m, 0x30000, 0x32000, RX, "[vdso]", false);
	mp = add_vma(&m, 0x30000, 0x32000, MW_VM_READ, NULL, false);
	CHECK_STR(mp->path, "[vdso]");
	CHECK_EQ_INT(mp->kind, MW_K_VDSO);
	model_free(&m);
}

/* ---- classification -------------------------------------------------------- */

static enum mw_kind kind_of(struct mw_model *m, uint64_t s, uint64_t e, uint64_t flags,
			    const char *path, bool file, bool deleted,
			    uint32_t maj, uint32_t min)
{
	struct mw_mapping mp = {
		.start = s, .end = e, .flags = flags, .has_file = file,
		.deleted = deleted, .dev_major = maj, .dev_minor = min,
		.path = (char *)path,
	};

	return model_kind(m, &mp);
}

TEST(classify_heap_and_stack)
{
	struct mw_model m;
	const uint64_t SB = 0x555555560000, BRK = 0x555555581000;

	model_init(&m, 0);
	m.start_brk = SB;
	m.brk = BRK;
	m.start_stack = 0x7ffd00020a50;
#define K(s, e) kind_of(&m, (s), (e), RW, NULL, false, false, 0, 0)
	CHECK_EQ_INT(K(SB, BRK), MW_K_HEAP);
	CHECK_EQ_INT(K(SB, BRK + 0x10000), MW_K_HEAP);
	CHECK_EQ_INT(K(SB - P, SB + P), MW_K_HEAP);	/* bss merged with heap */
	CHECK_EQ_INT(K(BRK - P, BRK), MW_K_HEAP);
	CHECK_EQ_INT(K(BRK, BRK + P), MW_K_ANON);	/* start == brk */
	CHECK_EQ_INT(K(SB - P, SB), MW_K_ANON);		/* end == start_brk */
	/* brk == start_brk: no heap yet, nothing overlaps (start_brk, brk). */
	m.brk = SB;
	CHECK_EQ_INT(K(SB, SB + P), MW_K_ANON);
	CHECK_EQ_INT(K(SB - P, SB + P), MW_K_HEAP);	/* contains start_brk */
	m.brk = BRK;
	/* Stack: holds start_stack, both ends inclusive. */
	CHECK_EQ_INT(K(0x7ffd00000000, 0x7ffd00021000), MW_K_STACK);
	CHECK_EQ_INT(K(0x7ffd00020a50, 0x7ffd00021000), MW_K_STACK);
	CHECK_EQ_INT(K(0x7ffd00000000, 0x7ffd00020a50), MW_K_STACK);
	CHECK_EQ_INT(K(0x7ffd00000000, 0x7ffd00020000), MW_K_ANON);
	CHECK_EQ_INT(K(0x7ffd00021000, 0x7ffd00022000), MW_K_ANON);
	/* Named anonymous memory in the heap range is heap, as in /proc. */
	CHECK_EQ_INT(kind_of(&m, SB, BRK, RW, "[anon:x]", false, false, 0, 0), MW_K_HEAP);
	/* A file mapping is never heap or stack. */
	CHECK_EQ_INT(kind_of(&m, SB, BRK, RW, "/tmp/f", true, false, 8, 1), MW_K_FILE);
	/* No brk known: no heap. */
	m.start_brk = 0;
	m.brk = 0;
	CHECK_EQ_INT(K(0, 0x1000), MW_K_ANON);
	m.start_stack = 0;
	CHECK_EQ_INT(K(0, 0x1000), MW_K_ANON);
#undef K
	model_free(&m);
}

TEST(classify_files_and_shmem)
{
	struct mw_model m;

	model_init(&m, 0);
	m.shmem_devs = calloc(1, sizeof(*m.shmem_devs));
	m.shmem_devs[0].major = 0;
	m.shmem_devs[0].minor = 45;
	m.nshmem_devs = 1;
#define F(path, del, maj, min) \
	kind_of(&m, 0x10000, 0x11000, RW | MW_VM_SHARED | MW_VM_MAYSHARE, path, true, del, maj, min)
	CHECK_EQ_INT(F("/memfd:wayland-shm", true, 0, 1), MW_K_SHMEM);
	CHECK_EQ_INT(F("/SYSV00000000", true, 0, 1), MW_K_SHMEM);
	CHECK_EQ_INT(F("/dev/zero", true, 0, 6), MW_K_SHMEM);
	CHECK_EQ_INT(F("/dev/shm/seg", false, 0, 25), MW_K_SHMEM);
	CHECK_EQ_INT(F("/dev/shm/gone", true, 0, 25), MW_K_SHMEM);
	CHECK_EQ_INT(F("/run/user/1000/pulse", false, 0, 45), MW_K_SHMEM);	/* tmpfs dev */
	CHECK_EQ_INT(F("/run/user/1000/pulse", false, 0, 46), MW_K_FILE);
	CHECK_EQ_INT(F("/dev/dri/card0", false, 0, 5), MW_K_DEVICE);
	/* Not deleted: a private mapping, anonymous memory (mmap_zero()). */
	CHECK_EQ_INT(F("/dev/zero", false, 0, 5), MW_K_ANON);
	CHECK_EQ_INT(F("/home/u/memfd:x", true, 254, 1), MW_K_FILE);
	CHECK_EQ_INT(F("/usr/lib/libc.so.6", false, 254, 1), MW_K_FILE);
	CHECK_EQ_INT(F("/usr/lib/libc.so.6", true, 254, 1), MW_K_FILE);
	CHECK_EQ_INT(F(NULL, false, 254, 1), MW_K_FILE);	/* path unknown */
	CHECK_EQ_INT(F("/dev/shmx", false, 0, 5), MW_K_DEVICE);
#undef F
	model_free(&m);
}

TEST(classify_kernel_names)
{
	struct mw_model m;

	model_init(&m, 0);
	m.start_brk = 0x555555560000;
	m.brk = 0x555555581000;
	m.start_stack = 0x7ffd00020a50;
#define N(path, flags) kind_of(&m, 0x7f0000000000, 0x7f0000002000, flags, path, false, false, 0, 0)
	CHECK_EQ_INT(N("[vdso]", RX), MW_K_VDSO);
	CHECK_EQ_INT(N("[vvar]", MW_VM_READ), MW_K_VVAR);
	CHECK_EQ_INT(N("[vvar_vclock]", MW_VM_READ), MW_K_VVAR);
	CHECK_EQ_INT(N("[vsyscall]", MW_VM_EXEC), MW_K_VSYSCALL);
	CHECK_EQ_INT(N("[uprobes]", RX), MW_K_SPECIAL);
	CHECK_EQ_INT(N("[anon:glibc malloc]", RW), MW_K_ANON);
	CHECK_EQ_INT(N("[anon:shared thing]", RW | MW_VM_SHARED | MW_VM_MAYSHARE), MW_K_ANON);
	CHECK_EQ_INT(N("[anon_shmem:jit cache]", RW | MW_VM_SHARED | MW_VM_MAYSHARE), MW_K_SHMEM);
	CHECK_EQ_INT(N(NULL, RW), MW_K_ANON);
	CHECK_EQ_INT(N(NULL, RW | MW_VM_SHARED | MW_VM_MAYSHARE), MW_K_SHMEM);
	CHECK_EQ_INT(N(NULL, MW_VM_READ | MW_VM_MAYSHARE), MW_K_SHMEM);
	CHECK_EQ_INT(N(NULL, RW | MW_VM_SHARED), MW_K_ANON);	/* MAYSHARE decides */
	/* "[heap]"/"[stack]" texts do not make heap or stack on their own. */
	CHECK_EQ_INT(N("[heap]", RW), MW_K_ANON);
	CHECK_EQ_INT(N("[stack]", RW), MW_K_ANON);
	/* Kernel mappings win over the heap rule. */
	CHECK_EQ_INT(kind_of(&m, 0x555555560000, 0x555555562000, RX, "[vdso]", false, false, 0, 0),
		     MW_K_VDSO);
	/* Shared anonymous memory in the heap range is heap. */
	CHECK_EQ_INT(kind_of(&m, 0x555555560000, 0x555555562000, RW | MW_VM_MAYSHARE, NULL,
			     false, false, 0, 0), MW_K_HEAP);
#undef N
	CHECK_STR(mw_kind_name(MW_K_ANON), "anon");
	CHECK_STR(mw_kind_name(MW_K_HEAP), "heap");
	CHECK_STR(mw_kind_name(MW_K_STACK), "stack");
	CHECK_STR(mw_kind_name(MW_K_FILE), "file");
	CHECK_STR(mw_kind_name(MW_K_SHMEM), "shmem");
	CHECK_STR(mw_kind_name(MW_K_DEVICE), "device");
	CHECK_STR(mw_kind_name(MW_K_VDSO), "vdso");
	CHECK_STR(mw_kind_name(MW_K_VVAR), "vvar");
	CHECK_STR(mw_kind_name(MW_K_VSYSCALL), "vsyscall");
	CHECK_STR(mw_kind_name(MW_K_SPECIAL), "special");
	CHECK_STR(mw_kind_name(MW_NR_KINDS), "?");
	model_free(&m);
}

/* model_set_vma and model_classify use the model's brk, so kinds follow it. */
TEST(classify_follows_brk)
{
	struct mw_model m;
	struct mw_mapping *bss, *heap;

	model_init(&m, 0);
	m.start_brk = 0x555555560000;
	m.brk = 0x555555560000;
	bss = add_vma(&m, 0x55555555f000, 0x555555560000, RW, NULL, false);
	CHECK_EQ_INT(bss->kind, MW_K_ANON);
	m.brk = 0x555555563000;
	heap = add_vma(&m, 0x55555555f000, 0x555555563000, RW, NULL, false);
	CHECK(heap == bss);
	CHECK_EQ_INT(heap->kind, MW_K_HEAP);
	/* brk moves back below the mapping: re-derived on request only. */
	m.start_brk = 0x555555600000;
	m.brk = 0x555555600000;
	CHECK_EQ_INT(heap->kind, MW_K_HEAP);
	model_classify(&m, heap);
	CHECK_EQ_INT(heap->kind, MW_K_ANON);
	model_free(&m);
}

/* ---- running totals --------------------------------------------------------- */

static uint64_t rnd_below(uint64_t *x, uint64_t n)
{
	return unit_rand(x) % n;
}

/*
 * What model_check() does not derive itself: the size sum re-added here,
 * and every live mapping's kind as a full re-classification gives it now.
 * NULL if all agree.
 */
static const char *full_sums_agree(const struct mw_model *m)
{
	const char *why = model_check(m);
	const struct mw_mapping *mp;
	uint64_t vm = 0;
	size_t n = 0;

	if (why)
		return why;
	for (mp = live_at(m, 0); mp; mp = live_at(m, ++n))
		if (mp->kind != MW_K_VSYSCALL)
			vm += mp->end - mp->start;
	if (n != m->nlive || vm != model_vm_bytes(m))
		return "model_vm_bytes() is not the sum over the table";
	model_for_each(mp, m)
		if (mp->kind != model_kind(m, mp))
			return "a kind is not what classifying it again gives";
	return NULL;
}

#define RT_BASE	0x555555000000ull
#define RT_PAGES 64

static uint64_t rt_addr(uint64_t *x)
{
	return RT_BASE + rnd_below(x, RT_PAGES) * P;
}

/* One random change to the table, as account.c makes them. */
static void random_op(struct mw_model *m, uint64_t *x)
{
	static const uint64_t flags[] = {
		RW, MW_VM_READ, RX, RW | MW_VM_SHARED | MW_VM_MAYSHARE, RW | MW_VM_GROWSDOWN,
	};
	static const char *const names[] = {
		NULL, NULL, NULL, "[vsyscall]", "[vdso]", "[anon:x]", "/lib/x.so", "/dev/shm/y",
	};
	uint64_t lo = rt_addr(x), hi = lo + (1 + rnd_below(x, 8)) * P;
	struct mw_pieces pieces = { 0 };
	struct mw_mapping *mp;
	const char *name;

	switch (rnd_below(x, 8)) {
	case 0:
	case 1:		/* the kernel reports a VMA (mmap, mprotect, brk) */
		name = names[rnd_below(x, 8)];
		add_vma(m, lo, hi, flags[rnd_below(x, 5)], name, name && name[0] == '/');
		break;
	case 2:		/* munmap */
		model_carve(m, lo, hi, &pieces);
		model_bury_all(m, &pieces);
		break;
	case 3:		/* mremap: what was in [lo, hi) moves */
		model_carve(m, lo, hi, &pieces);
		lo = rt_addr(x) - lo;
		for (size_t i = 0; i < pieces.n; i++) {
			pieces.v[i]->start += lo;
			pieces.v[i]->end += lo;
			model_place(m, pieces.v[i]);
		}
		free(pieces.v);
		break;
	case 4:		/* brk and the stack move */
		model_set_brk(m, rnd_below(x, 4) ? rt_addr(x) : 0, rt_addr(x),
			      rnd_below(x, 4) ? rt_addr(x) + rnd_below(x, P) : 0);
		break;
	case 5:		/* a stack grows down into the gap below it */
		mp = model_find(m, lo);
		if (mp && mp->start > RT_BASE) {
			struct mw_mapping *below = model_prev(mp);
			uint64_t floor = below ? below->end : RT_BASE;

			if (floor < mp->start)
				model_grow_down(m, mp, mp->start - P * (1 + rnd_below(x, (mp->start - floor) / P)));
		}
		break;
	case 6:		/* RSS divided by guess, or measured again */
		mp = model_find(m, lo);
		if (mp)
			model_set_recheck(m, mp, rnd_below(x, 2));
		break;
	case 7:		/* a seed: every kind derived again */
		model_for_each(mp, m)
			model_classify(m, mp);
		break;
	}
}

/* The totals kept as the table changes are what summing it again gives,
 * after every step of random sequences of changes. */
TEST(running_totals_match_full_sums)
{
	for (uint64_t seed = 1; seed <= 20; seed++) {
		uint64_t x = seed * 0x9e3779b97f4a7c15ull;
		const char *why = NULL;
		struct mw_model m;
		int step;

		model_init(&m, 16);
		for (step = 0; step < 2000 && !why; step++) {
			random_op(&m, &x);
			why = full_sums_agree(&m);
		}
		if (!CHECK(why == NULL))
			fprintf(stderr, "  seed %llu, step %d: %s\n", (unsigned long long)seed,
				step, why);
		CHECK(m.nlive > 0 && m.nlive < RT_PAGES);
		model_free(&m);
	}
}

/* A brk that moves re-derives the kinds it can change, and only those. */
TEST(set_brk_classifies_near_heap_and_stack)
{
	struct mw_model m;
	struct mw_mapping *below, *heap, *far, *stack, *file;

	model_init(&m, 0);
	model_set_brk(&m, 0x555555560000, 0x555555560000, 0x7ffd00020a50);
	below = add_vma(&m, 0x55555555f000, 0x555555560000, RW, NULL, false);
	heap = add_vma(&m, 0x555555560000, 0x555555563000, RW, NULL, false);
	far = add_vma(&m, 0x7f0000000000, 0x7f0000001000, RW, NULL, false);
	stack = add_vma(&m, 0x7ffd00000000, 0x7ffd00021000, RW | MW_VM_GROWSDOWN, NULL, false);
	file = add_vma(&m, 0x555555563000, 0x555555564000, RW, "/lib/x.so", true);
	CHECK_EQ_INT(heap->kind, MW_K_ANON);	/* brk at start_brk: no heap */
	CHECK_EQ_INT(stack->kind, MW_K_STACK);
	model_set_brk(&m, 0x555555560000, 0x555555563000, 0x7ffd00020a50);
	CHECK_EQ_INT(heap->kind, MW_K_HEAP);
	CHECK_EQ_INT(below->kind, MW_K_ANON);
	CHECK_EQ_INT(file->kind, MW_K_FILE);
	/* A kind poked wrong far from the heap and the stack stays wrong:
	 * nothing there is looked at again. */
	far->kind = MW_K_SHMEM;
	model_set_brk(&m, 0x555555560000, 0x555555561000, 0x7ffd00020a50);
	CHECK_EQ_INT(heap->kind, MW_K_HEAP);
	CHECK_EQ_INT(far->kind, MW_K_SHMEM);
	far->kind = MW_K_ANON;
	/* The stack moves away: the old one is stack no more. */
	model_set_brk(&m, 0x555555560000, 0x555555561000, 0x7f0000000800);
	CHECK_EQ_INT(stack->kind, MW_K_ANON);
	CHECK_EQ_INT(far->kind, MW_K_STACK);
	/* The heap shrinks to nothing. */
	model_set_brk(&m, 0x555555560000, 0x555555560000, 0x7f0000000800);
	CHECK_EQ_INT(heap->kind, MW_K_ANON);
	CHECK(full_sums_agree(&m) == NULL);
	model_free(&m);
}

/* VmSize leaves the gate page out, also when a mapping becomes it. */
TEST(vm_bytes_follow_kind_changes)
{
	struct mw_model m;
	struct mw_pieces out = { 0 };

	model_init(&m, 0);
	add_vma(&m, 0x10000, 0x14000, RW, NULL, false);
	CHECK_EQ_U64(model_vm_bytes(&m), 4 * P);
	add_vma(&m, 0x12000, 0x13000, RX, "[vsyscall]", false);
	CHECK_EQ_U64(model_vm_bytes(&m), 3 * P);
	/* Its name stays through a change of protection. */
	add_vma(&m, 0x12000, 0x13000, MW_VM_READ, NULL, false);
	CHECK_EQ_U64(model_vm_bytes(&m), 3 * P);
	model_carve(&m, 0x11000, 0x13000, &out);
	CHECK_EQ_U64(model_vm_bytes(&m), 2 * P);
	model_bury_all(&m, &out);
	add_vma(&m, 0x11000, 0x13000, RW, NULL, false);
	CHECK_EQ_U64(model_vm_bytes(&m), 4 * P);
	CHECK(full_sums_agree(&m) == NULL);
	model_free(&m);
	CHECK_EQ_U64(model_vm_bytes(&m), 0);
}

/* ---- mountinfo ------------------------------------------------------------ */

static const char mountinfo_sample[] =
	"22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
	"23 27 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
	"24 27 0:5 / /dev rw,nosuid,relatime shared:8 - devtmpfs udev rw,size=8126876k,nr_inodes=2031719,mode=755,inode64\n"
	"25 24 0:23 / /dev/pts rw,nosuid,noexec,relatime shared:9 - devpts devpts rw,gid=5,mode=620,ptmxmode=000\n"
	"26 24 0:25 / /dev/shm rw,nosuid,nodev shared:10 - tmpfs tmpfs rw,inode64\n"
	"27 1 252:1 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw,errors=remount-ro\n"
	"28 27 0:26 / /run rw,nosuid,nodev,noexec,relatime shared:11 - tmpfs tmpfs rw,size=1631676k,mode=755,inode64\n"
	"30 28 0:27 / /run/lock rw,nosuid,nodev,noexec,relatime shared:13 - tmpfs tmpfs rw,size=5120k,inode64\n"
	"35 23 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	"40 27 8:2 / /boot rw,relatime shared:30 - ext4 /dev/sda2 rw\n"
	"41 28 0:45 / /run/user/1000 rw,nosuid,nodev,relatime shared:500 - tmpfs tmpfs rw,size=1631672k,nr_inodes=407918,mode=700,uid=1000,gid=1000,inode64\n"
	"45 27 0:48 / /mnt/ram rw,relatime - ramfs ramfs rw\n"
	"46 27 0:49 / /mnt/huge rw,relatime - hugetlbfs hugetlbfs rw,pagesize=2M\n"
	"50 27 0:50 / /mnt/with\\040space rw,relatime - tmpfs my\\040tmp rw\n"
	"60 27 259:3 / /srv/data rw,relatime shared:7 master:3 - xfs /dev/nvme0n1p3 rw\n"
	"garbage line without separator\n"
	"61 27 x:y / /bad rw - tmpfs tmpfs rw\n"
	"62 27 0:52 / /bad2 rw -\n"
	"\n"
	"70 27 0:60 /sub /bind/tmp rw,relatime shared:40 - tmpfs tmpfs rw";	/* no newline */

TEST(mountinfo_tmpfs_devs)
{
	struct mw_dev *d = (void *)1;
	size_t n = 99;
	size_t len = sizeof(mountinfo_sample) - 1;
	char *buf = dup_exact(mountinfo_sample, len);
	static const uint32_t want[][2] = {
		{ 0, 25 }, { 0, 26 }, { 0, 27 }, { 0, 45 }, { 0, 50 }, { 0, 60 },
	};

	CHECK_EQ_INT(mw_shmem_devs_from_mountinfo(buf, len, &d, &n), 0);
	if (CHECK_EQ_U64(n, 6) && CHECK(d != NULL))
		for (size_t i = 0; i < 6; i++) {
			CHECK_EQ_U64(d[i].major, want[i][0]);
			CHECK_EQ_U64(d[i].minor, want[i][1]);
		}
	free(d);
	free(buf);

	/* Empty text: nothing, and the outputs are reset. */
	d = (void *)1;
	n = 5;
	CHECK_EQ_INT(mw_shmem_devs_from_mountinfo("", 0, &d, &n), 0);
	CHECK(d == NULL);
	CHECK_EQ_U64(n, 0);

	/* Cut in the middle of a tmpfs line: " - tmpfs" not reached. */
	buf = dup_exact(mountinfo_sample, 200);
	CHECK_EQ_INT(mw_shmem_devs_from_mountinfo(buf, 200, &d, &n), 0);
	CHECK_EQ_U64(n, 0);
	free(d);
	free(buf);

	/* Many tmpfs mounts: the array grows. */
	char big[64 * 80];
	size_t bl = 0;
	for (int i = 0; i < 64; i++)
		bl += snprintf(big + bl, sizeof(big) - bl,
			       "%d 1 %d:%d / /t%d rw - tmpfs tmpfs rw\n", 100 + i, i % 3, i, i);
	buf = dup_exact(big, bl);
	CHECK_EQ_INT(mw_shmem_devs_from_mountinfo(buf, bl, &d, &n), 0);
	if (CHECK_EQ_U64(n, 64)) {
		CHECK_EQ_U64(d[63].major, 0);
		CHECK_EQ_U64(d[63].minor, 63);
		CHECK_EQ_U64(d[7].major, 1);
		CHECK_EQ_U64(d[7].minor, 7);
	}
	free(d);
	free(buf);
}

/* A file on a tmpfs found through mountinfo classifies as shmem. */
TEST(mountinfo_drives_classification)
{
	struct mw_model m;
	struct mw_mapping *mp;

	model_init(&m, 0);
	CHECK_EQ_INT(mw_shmem_devs_from_mountinfo(mountinfo_sample, sizeof(mountinfo_sample) - 1,
						  &m.shmem_devs, &m.nshmem_devs), 0);
	struct mw_vma_state v = {
		.start = 0x7f0000000000, .end = 0x7f0000004000,
		.flags = RW | MW_VM_SHARED | MW_VM_MAYSHARE,
		.dev_major = 0, .dev_minor = 45, .has_file = true,
		.path = "/run/user/1000/pulse-shm-1",
	};
	mp = model_set_vma(&m, &v);
	CHECK_EQ_INT(mp->kind, MW_K_SHMEM);
	v.start = 0x7f0000010000;
	v.end = 0x7f0000011000;
	v.dev_major = 252;
	v.dev_minor = 1;
	v.path = "/home/u/data.bin";
	mp = model_set_vma(&m, &v);
	CHECK_EQ_INT(mp->kind, MW_K_FILE);
	v.start = 0x7f0000020000;
	v.end = 0x7f0000021000;
	v.dev_major = 0;
	v.dev_minor = 48;	/* ramfs: page cache, not shmem */
	v.path = "/mnt/ram/x";
	mp = model_set_vma(&m, &v);
	CHECK_EQ_INT(mp->kind, MW_K_FILE);
	model_free(&m);
	CHECK(m.shmem_devs == NULL);
}

/* A peak is whole pages and never above the mapping: a total an estimate
 * put above the size (a change spread over a range) is not kept. */
TEST(peak_whole_pages_within_size)
{
	struct mw_mapping mp = { .start = 0x10000, .end = 0x10000 + 4 * P };

	mapping_note_peak(&mp, P + 100);
	CHECK_EQ_INT(mp.rss_peak, 2 * P);
	mapping_note_peak(&mp, 9 * P);
	CHECK_EQ_INT(mp.rss_peak, 4 * P);
	mapping_note_peak(&mp, P);
	CHECK_EQ_INT(mp.rss_peak, 4 * P);
}

int main(void)
{
	RUN(find_and_lower_bound);
	RUN(set_vma_empty_table);
	RUN(set_vma_same_range_is_idempotent);
	RUN(device_kinds_from_flags);
	RUN(carve_middle_proportional);
	RUN(carve_spanning_mappings_and_holes);
	RUN(set_vma_merges_neighbours);
	RUN(set_vma_merge_peak_is_max);
	RUN(mprotect_split_proportional);
	RUN(mprotect_split_oracle);
	RUN(split_oracle_measures_the_smaller_side);
	RUN(split_oracle_clamps_and_shmem);
	RUN(split_oracle_failure_falls_back);
	RUN(split_rounding_still_flags_estimate);
	RUN(place_over_existing);
	RUN(bury_and_fold);
	RUN(vm_bytes_and_rss);
	RUN(split_peak_whole_pages_within_size);
	RUN(take_rss_bounds_and_peak);
	RUN(clamp_rss);
	RUN(clamp_rss_damaged_range);
	RUN(apportion_whole_pages_never_negative);
	RUN(peak_whole_pages_within_size);
	RUN(perms);
	RUN(perms_to_flags);
	RUN(display_path);
	RUN(set_vma_path_rules);
	RUN(classify_heap_and_stack);
	RUN(classify_files_and_shmem);
	RUN(classify_kernel_names);
	RUN(classify_follows_brk);
	RUN(running_totals_match_full_sums);
	RUN(set_brk_classifies_near_heap_and_stack);
	RUN(vm_bytes_follow_kind_changes);
	RUN(mountinfo_tmpfs_devs);
	RUN(mountinfo_drives_classification);
	return unit_done();
}
