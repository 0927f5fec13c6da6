// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_sitecache.c — user/unwind/sitecache.c, the loader's half of the
 * call-site cache of --stacks: what it tells the kernel side (recipes,
 * sites seen and withdrawn) for each kind of stack, and which frames a
 * stack sent without its copy gets.
 */
#include <string.h>

#include "unit.h"
#include "unwind/sitecache.h"

/* What the cache told the kernel side. */
static struct {
	int recipes, withdrawn_recipes, seen, withdrawn_sites;
	uint64_t last_cls, last_site;
	struct mw_stack_recipe last;
} k;

static void op_recipe(void *ctx, uint64_t cls, const struct mw_stack_recipe *r)
{
	if (!r) {
		k.withdrawn_recipes++;
		return;
	}
	k.recipes++;
	k.last_cls = cls;
	k.last = *r;
}

static void op_site(void *ctx, uint64_t site, bool seen)
{
	if (seen)
		k.seen++;
	else
		k.withdrawn_sites++;
	k.last_site = site;
}

static const struct mw_sitecache_ops ops = { .recipe = op_recipe, .site = op_site };

static struct {
	struct mw_frames f;
	uint64_t ips[4];
} frames(uint64_t a, uint64_t b, uint16_t flags)
{
	return (typeof(frames(0, 0, 0))){ .f = { .pid = 7, .tid = 7, .seq = 1, .nr = 2,
						  .source = MW_FRAMES_NATIVE, .flags = flags },
					  .ips = { a, b } };
}

static struct mw_stack_rec rec(uint64_t cls, uint64_t site, uint32_t hit)
{
	struct mw_stack_rec r;

	memset(&r, 0, offsetof(struct mw_stack_rec, ips));
	r.hdr.type = MW_REC_STACK;
	r.hdr.tid = 8;
	r.hdr.seq = 42;
	r.site_class = cls;
	r.site = site;
	r.site_hit = hit;
	r.copy_flags = MW_COPY_REGS | MW_COPY_TOP;
	return r;
}

TEST(a_site_is_learned_in_two_unwindings)
{
	struct mw_sitecache c;
	const uint32_t reads[] = { 24, 8, 16 }, fewer[] = { 8 }, wider[] = { 8, 32 };
	struct mw_stack_rec r = rec(0x100, 0, 0), *rr = &r;
	typeof(frames(0, 0, 0)) f = frames(0x401000, 0x402000, 0);
	const struct mw_frames *got;

	memset(&k, 0, sizeof(k));
	sitecache_init(&c, &ops);
	/* First stack of the class: its reads become the recipe, sorted. */
	sitecache_learn(&c, rr, &f.f, reads, 3);
	CHECK_EQ_INT(k.recipes, 1);
	CHECK_EQ_U64(k.last_cls, 0x100);
	CHECK_EQ_INT(k.last.n, 3);
	CHECK(k.last.off[0] == 8 && k.last.off[1] == 16 && k.last.off[2] == 24);
	CHECK_EQ_INT(k.seen, 0);
	/* Sent again before the kernel side had it: published again. */
	sitecache_learn(&c, rr, &f.f, reads, 3);
	CHECK_EQ_INT(k.recipes, 2);
	/* With the recipe: a site, seen, whose reads are within it. */
	r = rec(0x100, 0xabc, 0);
	sitecache_learn(&c, rr, &f.f, fewer, 1);
	CHECK_EQ_INT(k.seen, 1);
	CHECK_EQ_U64(k.last_site, 0xabc);
	CHECK_EQ_U64(c.st.sites, 1);
	/* A path of the class that read more than the recipe: not cached. */
	r = rec(0x100, 0xdef, 0);
	sitecache_learn(&c, rr, &f.f, wider, 2);
	CHECK_EQ_INT(k.seen, 1);
	CHECK_EQ_U64(c.st.wide, 1);
	/* A hit takes the kept frames; its own tid and seq are the caller's. */
	r = rec(0x100, 0xabc, 1);
	got = sitecache_frames(&c, rr);
	CHECK(got && got->nr == 2 && got->ips[0] == 0x401000 && got->ips[1] == 0x402000);
	CHECK_EQ_U64(c.st.hits, 1);
	/* A hit of a site not kept: none, counted, and withdrawn. */
	r = rec(0x100, 0xdef, 1);
	CHECK(sitecache_frames(&c, rr) == NULL);
	CHECK_EQ_U64(c.st.misses, 1);
	CHECK_EQ_INT(k.withdrawn_sites, 1);
	CHECK_EQ_U64(k.last_site, 0xdef);
	/* exec: everything goes, on both sides. */
	sitecache_clear(&c);
	CHECK_EQ_INT(k.withdrawn_recipes, 1);
	CHECK_EQ_INT(k.withdrawn_sites, 2);
	r = rec(0x100, 0xabc, 1);
	CHECK(sitecache_frames(&c, rr) == NULL);
	sitecache_clear(&c);
}

TEST(what_teaches_nothing)
{
	struct mw_sitecache c;
	const uint32_t reads[] = { 8 };
	struct mw_stack_rec r = rec(0, 0, 0), *rr = &r;
	typeof(frames(0, 0, 0)) f = frames(0x401000, 0x402000, 0),
				  cut = frames(0x401000, 0x402000, MW_FRAMES_TRUNCATED);

	memset(&k, 0, sizeof(k));
	sitecache_init(&c, &ops);
	/* No class (the thread's stack end not known yet). */
	sitecache_learn(&c, rr, &f.f, reads, 1);
	/* Truncated frames, a copy cut short by a full buffer, no frames,
	 * an unwinding that read more words than a recipe holds. */
	r = rec(0x200, 0, 0);
	sitecache_learn(&c, rr, &cut.f, reads, 1);
	r.copy_flags |= MW_COPY_PRESSURE;
	sitecache_learn(&c, rr, &f.f, reads, 1);
	r = rec(0x200, 0, 0);
	f.f.nr = 0;
	sitecache_learn(&c, rr, &f.f, reads, 1);
	f.f.nr = 2;
	sitecache_learn(&c, rr, &f.f, reads, -1);
	CHECK_EQ_INT(k.recipes, 0);
	CHECK_EQ_INT(k.seen, 0);
	CHECK_EQ_U64(c.st.wide, 1);
	/* An unwinding that read no stack word (a leaf's caller in a
	 * register): an empty recipe, then sites. */
	sitecache_learn(&c, rr, &f.f, reads, 0);
	CHECK_EQ_INT(k.recipes, 1);
	CHECK_EQ_INT(k.last.n, 0);
	r = rec(0x200, 0x300, 0);
	sitecache_learn(&c, rr, &f.f, reads, 0);
	CHECK_EQ_INT(k.seen, 1);
	sitecache_clear(&c);
}

int main(void)
{
	RUN(a_site_is_learned_in_two_unwindings);
	RUN(what_teaches_nothing);
	return unit_done();
}
