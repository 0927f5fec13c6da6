// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sitecache.c — the loader's half of the call-site cache (sitecache.h).
 */
#include <stdlib.h>
#include <string.h>

#include "unwind/sitecache.h"
#include "util.h"

void sitecache_init(struct mw_sitecache *c, const struct mw_sitecache_ops *ops)
{
	memset(c, 0, sizeof(*c));
	if (ops)
		c->ops = *ops;
}

void sitecache_clear(struct mw_sitecache *c)
{
	for (size_t i = 0; i < c->classes.cap; i++)
		if (c->classes.keys[i] && c->ops.recipe)
			c->ops.recipe(c->ops.ctx, c->classes.keys[i], NULL);
	for (size_t i = 0; i < c->sites.cap; i++)
		if (c->sites.keys[i] && c->ops.site)
			c->ops.site(c->ops.ctx, c->sites.keys[i], false);
	for (uint32_t i = 0; i < c->nsites; i++)
		free(c->frames[i]);
	free(c->frames);
	free(c->recipes);
	idmap_free(&c->classes);
	idmap_free(&c->sites);
	c->frames = NULL;
	c->recipes = NULL;
	c->nsites = c->nclasses = 0;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Is every offset of reads[] in the recipe (sorted)? */
static bool within(const struct mw_stack_recipe *r, const uint32_t *reads, int nreads)
{
	for (int i = 0; i < nreads; i++)
		if (!bsearch(&reads[i], r->off, r->n, sizeof(r->off[0]), u32_cmp))
			return false;
	return true;
}

void sitecache_learn(struct mw_sitecache *c, const struct mw_stack_rec *rec,
		     const struct mw_frames *f, const uint32_t *reads, int nreads)
{
	struct mw_stack_recipe *r;
	struct mw_frames *keep;
	uint32_t i;
	size_t sz;

	if (!rec->site_class || !f || !f->nr || (f->flags & MW_FRAMES_TRUNCATED) ||
	    (rec->copy_flags & MW_COPY_PRESSURE))
		return;
	if (nreads < 0 || nreads > MW_STACK_RECIPE_MAX) {
		c->st.wide++;
		return;
	}
	if (!idmap_get(&c->classes, rec->site_class, &i)) {
		/* The class's first unwinding: its reads are the recipe. */
		if (c->nclasses >= MW_SITE_CLASSES_MAX) {
			c->st.full++;
			return;
		}
		i = c->nclasses++;
		c->recipes = mw_xrealloc(c->recipes, c->nclasses, sizeof(*c->recipes));
		r = &c->recipes[i];
		memset(r, 0, sizeof(*r));
		memcpy(r->off, reads, (size_t)nreads * sizeof(reads[0]));
		r->n = (uint32_t)nreads;
		qsort(r->off, r->n, sizeof(r->off[0]), u32_cmp);
		idmap_put(&c->classes, rec->site_class, i);
		c->st.recipes++;
	}
	r = &c->recipes[i];
	if (!rec->site) {
		/* Sent before the kernel side had the recipe (or after it let
		 * it go): publish it (again). */
		if (c->ops.recipe)
			c->ops.recipe(c->ops.ctx, rec->site_class, r);
		return;
	}
	if (!within(r, reads, nreads)) {
		/* This path's unwinding needs words the site does not mix
		 * in: it is not cached, and comes whole every time. */
		c->st.wide++;
		return;
	}
	if (!idmap_get(&c->sites, rec->site, &i)) {
		if (c->nsites >= MW_SITES_MAX) {
			c->st.full++;
			return;
		}
		sz = sizeof(*f) + f->nr * sizeof(f->ips[0]);
		keep = mw_xcalloc(1, sz);
		memcpy(keep, f, sz);
		c->frames = mw_xrealloc(c->frames, c->nsites + 1, sizeof(*c->frames));
		c->frames[c->nsites] = keep;
		idmap_put(&c->sites, rec->site, c->nsites++);
		c->st.sites++;
	}
	if (c->ops.site)
		c->ops.site(c->ops.ctx, rec->site, true);
}

const struct mw_frames *sitecache_frames(struct mw_sitecache *c, const struct mw_stack_rec *rec)
{
	uint32_t i;

	if (rec->site && idmap_get(&c->sites, rec->site, &i)) {
		c->st.hits++;
		return c->frames[i];
	}
	/* The kernel side had it from an earlier address space of this
	 * process, or one that ended: it sends the next one whole. */
	c->st.misses++;
	if (rec->site && c->ops.site)
		c->ops.site(c->ops.ctx, rec->site, false);
	return NULL;
}
