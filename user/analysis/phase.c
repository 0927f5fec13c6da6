// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * phase.c — phases and iterations.  Pure code: fed by account.c, covered by
 * tests/unit/test_phase.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/phase.h"
#include "util.h"

#define RSS_NOISE (64 << 10)	/* per-iteration RSS change that is not growth */
#define SCALE_NOISE 64		/* ... nor a step below 1/64 of the largest */

int64_t point_rss(const struct mw_point *p)
{
	return p->rss[MW_FILE] + p->rss[MW_ANON] + p->rss[MW_SHMEM];
}

void phases_init(struct mw_phases *ph)
{
	memset(ph, 0, sizeof(*ph));
}

static void growth_free(struct mw_phase *p)
{
	for (size_t i = 0; i < p->ntop; i++)
		free(p->top[i].path);
	p->ntop = 0;
}

void phases_free(struct mw_phases *ph)
{
	for (size_t i = 0; i < ph->n; i++) {
		growth_free(&ph->v[i]);
		free(ph->v[i].arenas);
	}
	free(ph->v);
	free(ph->it);
	free(ph->samples);
	memset(ph, 0, sizeof(*ph));
}

void phases_arena(struct mw_phases *ph, int err, const struct mw_arena_free *a)
{
	struct mw_phase *p = ph->n ? &ph->v[ph->n - 1] : NULL;

	if (!p)
		return;
	if (!err && p->narenas >= MW_MAX_ARENAS)
		err = -E2BIG;
	if (err) {
		if (!p->arenas_failed++)
			p->arenas_err = err;
		return;
	}
	p->arenas = mw_xrealloc(p->arenas, p->narenas + 1, sizeof(*p->arenas));
	p->arenas[p->narenas++] = *a;
}

static int64_t size_of(const struct mw_mapping *mp)
{
	return (int64_t)(mp->end - mp->start);
}

/* ---- per-mapping growth in a phase --------------------------------------- */

static void growth_of(const struct mw_model *m, const struct mw_mapping *mp, int idx,
		      struct mw_growth *g)
{
	char buf[4200];

	memset(g, 0, sizeof(*g));
	g->created = mp->phase == idx;
	g->unmapped = mp->unmapped;
	g->start = mp->start;
	g->bytes = size_of(mp);
	g->requested = mp->requested;
	g->kind = mp->kind;
	g->vm_delta = (mp->unmapped ? 0 : size_of(mp)) - (g->created ? 0 : (int64_t)mp->ph_size0);
	g->rss_delta = (mp->unmapped ? 0 : mapping_rss_total(mp)) - (g->created ? 0 : mp->ph_rss0);
	g->path = mw_xstrdup(mapping_display_path(m, mp, buf, sizeof(buf)));
}

/* Bigger growth first: RSS, then VM. */
static bool grew_more(const struct mw_growth *a, const struct mw_growth *b)
{
	if (a->rss_delta != b->rss_delta)
		return a->rss_delta > b->rss_delta;
	return a->vm_delta > b->vm_delta;
}

static void consider(struct mw_phase *p, const struct mw_model *m,
		     const struct mw_mapping *mp, int idx)
{
	struct mw_growth g;
	size_t pos;

	if (mp->observer)
		return;		/* memwatch's own, not the program's growth */
	growth_of(m, mp, idx, &g);
	if (g.rss_delta <= 0 && g.vm_delta <= 0) {
		free(g.path);
		return;
	}
	for (pos = p->ntop; pos > 0 && grew_more(&g, &p->top[pos - 1]); pos--)
		;
	if (pos >= MW_TOP_GROWTH) {
		free(g.path);
		return;
	}
	if (p->ntop == MW_TOP_GROWTH)
		free(p->top[--p->ntop].path);
	memmove(&p->top[pos + 1], &p->top[pos], (p->ntop - pos) * sizeof(g));
	p->top[pos] = g;
	p->ntop++;
}

/* The mappings that grew most in phase idx, live or unmapped during it. */
static void top_growth(struct mw_phase *p, const struct mw_model *m, int idx)
{
	const struct mw_mapping *mp;

	growth_free(p);
	model_for_each(mp, m)
		consider(p, m, mp, idx);
	for (size_t i = m->ndead; i > 0; i--) {
		mp = m->dead[i - 1];

		if (mp->died_ns < p->start.ts)
			break;		/* buried in order: the rest died earlier */
		consider(p, m, mp, idx);
	}
}

static void snapshot_phase(struct mw_model *m)
{
	struct mw_mapping *mp;

	model_for_each(mp, m) {
		mp->ph_rss0 = mapping_rss_total(mp);
		mp->ph_size0 = size_of(mp);
	}
}

/* ---- iterations ---------------------------------------------------------- */

static void close_iter(struct mw_phases *ph, struct mw_model *m, const struct mw_point *at)
{
	struct mw_mapping *mp;
	struct mw_iter *it;

	if (!ph->nit || !ph->it[ph->nit - 1].open)
		return;
	it = &ph->it[ph->nit - 1];
	it->end = *at;
	it->open = false;
	m->iter = 0;	/* until the next one opens: births here are in none */
	/* Which mappings grew in this iteration, for naming leaks later. */
	model_for_each(mp, m) {
		bool grew = mp->born_iter == ph->nit && mp->born_iter != 0;

		if (mp->born_iter != ph->nit)
			grew = size_of(mp) > (int64_t)mp->it_size0 ||
			       mapping_rss_total(mp) > mp->it_rss0 + RSS_NOISE;
		if (ph->nit == 1)	/* what the first one faulted in (findings.c) */
			mp->it1_rss = mapping_rss_total(mp) -
				      (mp->born_iter == 1 ? 0 : mp->it_rss0);
		if (grew) {
			mp->it_grows++;
			mp->it_last_grow = ph->nit;
		}
	}
}

static void open_iter(struct mw_phases *ph, struct mw_model *m, const struct mw_point *at)
{
	struct mw_mapping *mp;

	if (ph->nit == ph->itcap) {
		ph->itcap = ph->itcap ? ph->itcap * 2 : 64;
		ph->it = mw_xrealloc(ph->it, ph->itcap, sizeof(*ph->it));
	}
	ph->it[ph->nit++] = (struct mw_iter){ .start = *at, .open = true };
	m->iter = ph->nit;
	model_for_each(mp, m) {
		mp->it_rss0 = mapping_rss_total(mp);
		mp->it_size0 = size_of(mp);
	}
}

/* ---- samples ------------------------------------------------------------- */

_Static_assert(MW_MAX_SAMPLES >= 4 && MW_MAX_SAMPLES % 2 == 0,
	       "thinning keeps sample i at i * stride: the cap must be even");

/*
 * Keep every other sample and double the stride.  Called only when every
 * kept sample is on the stride (sample k taken at k * stride), so after it
 * sample k is still the one taken at k * (new stride).
 */
static void thin_samples(struct mw_phases *ph)
{
	size_t k = 0;

	for (size_t i = 0; i < ph->nsamples; i += 2)
		ph->samples[k++] = ph->samples[i];
	ph->nsamples = k;
	ph->sample_stride *= 2;
}

/* Append a sample; the newest stays last even when it is off the stride,
 * until the next one replaces it. */
static void add_sample(struct mw_phases *ph, const struct mw_point *at)
{
	uint64_t seq = ph->nsampled++;

	if (!ph->sample_stride)
		ph->sample_stride = 1;
	if (ph->nsamples)
		ph->sample_prev = ph->samples[ph->nsamples - 1].at;
	if (ph->sample_tail) {
		ph->nsamples--;
		ph->sample_tail = false;
	}
	if (ph->nsamples == MW_MAX_SAMPLES)
		thin_samples(ph);
	if (ph->nsamples == ph->scap) {
		ph->scap = ph->scap ? ph->scap * 2 : 64;
		ph->samples = mw_xrealloc(ph->samples, ph->scap, sizeof(*ph->samples));
	}
	ph->samples[ph->nsamples++].at = *at;
	ph->sample_tail = seq % ph->sample_stride != 0;
}

const struct mw_point *phases_prev_sample(const struct mw_phases *ph)
{
	return ph->nsampled > 1 ? &ph->sample_prev : NULL;
}

/* ---- phases -------------------------------------------------------------- */

static void close_phase(struct mw_phases *ph, struct mw_model *m, const struct mw_point *at,
			uint64_t vm_peak, uint64_t rss_peak)
{
	struct mw_phase *p;

	if (!ph->n || !ph->v[ph->n - 1].open)
		return;
	p = &ph->v[ph->n - 1];
	p->end = *at;
	p->open = false;
	p->vm_peak = MW_MAX(MW_MAX(vm_peak, p->start.vm), at->vm);
	p->rss_peak = MW_MAX(rss_peak, (uint64_t)MW_MAX(MW_MAX(point_rss(&p->start),
							     point_rss(at)), 0));
	p->locked_peak = MW_MAX(MW_MAX(at->locked_peak, p->start.locked), at->locked);
	p->pinned_peak = MW_MAX(MW_MAX(at->pinned_peak, p->start.pinned), at->pinned);
	top_growth(p, m, (int)(ph->n - 1));
	p->device_vm_end = model_kind_vm(m, MW_K_DEVICE);
}

static void open_phase(struct mw_phases *ph, struct mw_model *m, const char *name,
		       const struct mw_point *at)
{
	struct mw_phase *p;

	if (ph->n == ph->cap) {
		ph->cap = ph->cap ? ph->cap * 2 : 8;
		ph->v = mw_xrealloc(ph->v, ph->cap, sizeof(*ph->v));
	}
	p = &ph->v[ph->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name && name[0] ? name : "phase");
	p->start = *at;
	p->device_vm_start = model_kind_vm(m, MW_K_DEVICE);
	p->open = true;
	m->phase = (int)(ph->n - 1);
	snapshot_phase(m);
}

void phases_mark(struct mw_phases *ph, struct mw_model *m, __u32 kind,
		 const char *name, const struct mw_point *at,
		 uint64_t vm_peak, uint64_t rss_peak)
{
	struct mw_point first;

	switch (kind) {
	case MW_MARK_PHASE:
		close_iter(ph, m, at);
		close_phase(ph, m, at, vm_peak, rss_peak);
		if (!ph->n) {
			/* The counters run from zero when tracing begins; with -p
			 * the process runs on between that and the first mark, and
			 * what it counts there belongs to the first phase, so that
			 * the phases add up to the totals. */
			first = *at;
			first.faults = first.mapped = first.unmapped = 0;
			at = &first;
		}
		open_phase(ph, m, name, at);
		break;
	case MW_MARK_ITER:
		close_iter(ph, m, at);
		open_iter(ph, m, at);
		break;
	case MW_MARK_SAMPLE:
		add_sample(ph, at);
		break;
	default:
		return;
	}
	if (ph->on_mark)
		ph->on_mark(ph->on_mark_ctx, ph, kind);
}

/* ---- the end ------------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

void mw_settle(const int64_t *vm, const int64_t *rss, size_t n,
	       size_t *settled_after, bool *growing)
{
	int64_t *tail, rate = 0, limit, scale = 0;
	size_t k, grows = 0, half = n / 2;

	*settled_after = n ? 1 : 0;
	*growing = false;
	if (n < 2)
		return;
	tail = mw_xcalloc(n - half, sizeof(*tail));
	for (size_t i = half; i < n; i++)
		tail[i - half] = MW_MAX(MW_MAX(vm[i], rss[i]), 0);
	qsort(tail, n - half, sizeof(*tail), cmp_i64);
	rate = tail[(n - half) / 2];
	free(tail);
	for (size_t i = 0; i < n; i++)
		scale = MW_MAX(scale, MW_MAX(vm[i], rss[i]));
	/* Noise is judged against the iterations' own scale: a runtime's
	 * heap step of a few hundred KiB late in the run (V8's, beside an
	 * inference that set up 200 MB) must not move where memory settled,
	 * nor make the findings that need steady iterations come and go. */
	limit = MW_MAX(MW_MAX((int64_t)RSS_NOISE, 2 * rate), scale / SCALE_NOISE);
	/* The last iteration that grew more than noise or twice the rate. */
	for (k = n; k > 1; k--)
		if (vm[k - 1] > limit || rss[k - 1] > limit)
			break;
	*settled_after = k;
	for (size_t i = k; i < n; i++)
		grows += vm[i] > 0 || rss[i] > RSS_NOISE;
	*growing = n > k && grows * 2 > n - k;
}

bool phases_mapping_grows(const struct mw_phases *ph, const struct mw_mapping *mp)
{
	size_t k = ph->settled_after;

	if (!ph->growing || mp->unmapped)
		return false;
	return mp->born_iter > k || (mp->it_last_grow > k && mp->it_grows >= 2);
}

static void release_accounting(struct mw_phases *ph, const struct mw_model *m)
{
	const struct mw_mapping *mp;

	model_for_each(mp, m) {
		if (mp->phase < 0 || (size_t)mp->phase >= ph->n)
			continue;
		ph->v[mp->phase].born_bytes += size_of(mp);
		ph->v[mp->phase].remaining_bytes += size_of(mp);
		ph->v[mp->phase].remaining_rss += mapping_rss_total(mp);
	}
	for (size_t i = 0; i < m->ndead; i++) {
		mp = m->dead[i];
		if (mp->phase < 0 || (size_t)mp->phase >= ph->n)
			continue;
		ph->v[mp->phase].born_bytes += size_of(mp);
		ph->v[mp->phase].released_bytes += size_of(mp);
	}
}

void phases_finish(struct mw_phases *ph, struct mw_model *m, const struct mw_point *at,
		   uint64_t vm_peak, uint64_t rss_peak)
{
	int64_t *vm, *rss;

	close_iter(ph, m, at);
	close_phase(ph, m, at, vm_peak, rss_peak);
	release_accounting(ph, m);
	vm = mw_xcalloc(ph->nit + 1, sizeof(*vm));
	rss = mw_xcalloc(ph->nit + 1, sizeof(*rss));
	for (size_t i = 0; i < ph->nit; i++) {
		vm[i] = (int64_t)ph->it[i].end.vm - (int64_t)ph->it[i].start.vm;
		rss[i] = point_rss(&ph->it[i].end) - point_rss(&ph->it[i].start);
	}
	mw_settle(vm, rss, ph->nit, &ph->settled_after, &ph->growing);
	free(vm);
	free(rss);
}
