/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sitecache.h — the loader's half of the call-site cache of --stacks with
 * --stack-bytes (bpf/memwatch.h, struct mw_stack_rec): one per traced
 * process, from the unwindings of the stacks that came with their copies.
 *
 * A stack's class (site_class) is what its unwinding starts from.  The
 * first unwinding of a class names the stack words it read: the class's
 * recipe, which the kernel side reads again at each later stack of that
 * class and mixes into the stack's site.  A later unwinding of the class
 * that read no word outside the recipe makes its site known: its frames are
 * kept here, and the kernel side sends the stacks of that site without a
 * copy (site_hit).  The unwinder being a function of the registers in the
 * class and of the words it reads, such a stack unwinds to those frames.
 *
 * What the kernel side must learn goes through the ops; this file keeps the
 * rules and the tables (tests/unit/test_sitecache.c).
 */
#ifndef MW_SITECACHE_H
#define MW_SITECACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "analysis/idmap.h"
#include "memwatch.h"
#include "stream.h"

/* Tables per process at most, as the kernel side's maps hold in all. */
#define MW_SITES_MAX		16384
#define MW_SITE_CLASSES_MAX	4096

struct mw_sitecache_ops {
	/* Publish (or with r NULL, withdraw) the recipe of a class. */
	void (*recipe)(void *ctx, uint64_t cls, const struct mw_stack_recipe *r);
	/* Mark a site as unwound here (or with seen false, no longer). */
	void (*site)(void *ctx, uint64_t site, bool seen);
	void *ctx;
};

struct mw_sitecache_stats {
	uint64_t recipes;	/* classes given a recipe */
	uint64_t sites;		/* sites whose frames are kept */
	uint64_t hits;		/* stacks that took kept frames */
	uint64_t misses;	/* stacks sent as hits of a site not kept here */
	uint64_t wide;		/* unwindings that read outside their recipe */
	uint64_t full;		/* sites or classes past the limits */
};

struct mw_sitecache {
	struct mw_sitecache_ops ops;
	struct mw_idmap classes;	/* class -> index in recipes[] */
	struct mw_stack_recipe *recipes;
	uint32_t nclasses;
	struct mw_idmap sites;		/* site -> index in frames[] */
	struct mw_frames **frames;
	uint32_t nsites;
	struct mw_sitecache_stats st;
};

void sitecache_init(struct mw_sitecache *c, const struct mw_sitecache_ops *ops);
/* Forget every class and site, here and on the kernel side (exec, exit). */
void sitecache_clear(struct mw_sitecache *c);

/*
 * A stack that came with its copy (rec), unwound into f, its unwinding
 * having read the stack words at reads[0..nreads) bytes above the stack
 * pointer (nreads < 0: more than a recipe holds).  f truncated or empty
 * teaches nothing.
 */
void sitecache_learn(struct mw_sitecache *c, const struct mw_stack_rec *rec,
		     const struct mw_frames *f, const uint32_t *reads, int nreads);

/* The frames kept for a stack sent without its copy (rec->site_hit), or
 * NULL: a site not kept (counted; the kernel side then sends it whole). */
const struct mw_frames *sitecache_frames(struct mw_sitecache *c, const struct mw_stack_rec *rec);

#endif /* MW_SITECACHE_H */
