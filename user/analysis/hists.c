// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hists.c — distributions of mmap sizes, mapping lifetimes and touched
 * fractions, overall and per phase.  Pure code: fed by account.c, covered
 * by tests/unit/test_hists.c.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/hists.h"
#include "util.h"

/* A phase index no real trace reaches: a damaged recording must not make
 * us allocate per-phase sets without end. */
#define MAX_PHASES (1 << 20)

void hists_init(struct mw_hists *hs)
{
	memset(hs, 0, sizeof(*hs));
}

void hists_free(struct mw_hists *hs)
{
	free(hs->phase);
	memset(hs, 0, sizeof(*hs));
}

/* The set of phase @phase, grown to hold it; NULL when out of range. */
static struct mw_hist_set *phase_set(struct mw_hists *hs, int phase)
{
	size_t n;

	if (phase < 0 || phase >= MAX_PHASES)
		return NULL;
	if ((size_t)phase >= hs->nphase) {
		n = MW_MAX((size_t)phase + 1, hs->nphase * 2);
		hs->phase = mw_xrealloc(hs->phase, n, sizeof(*hs->phase));
		memset(hs->phase + hs->nphase, 0, (n - hs->nphase) * sizeof(*hs->phase));
		hs->nphase = n;
	}
	return &hs->phase[phase];
}

/* One value into the whole trace's histogram and phase @phase's. */
static void add(struct mw_hists *hs, int phase, int kind, uint64_t v)
{
	struct mw_hist_set *s = phase_set(hs, phase);

	hist_add(&hs->all.h[kind], v);
	if (s)
		hist_add(&s->h[kind], v);
}

void hists_mmap(struct mw_hists *hs, int phase, uint64_t len)
{
	add(hs, phase, MW_HK_SIZE, len);
}

int hists_touched_pct(const struct mw_mapping *mp)
{
	uint64_t size = mp->end - mp->start;

	if (mp->phase < 0 || mp->end <= mp->start)
		return -1;
	switch (mp->kind) {
	case MW_K_VDSO:
	case MW_K_VVAR:
	case MW_K_VSYSCALL:
	case MW_K_SPECIAL:
		return -1;	/* the kernel's, not the program's */
	default:
		break;
	}
	if (!(mp->flags & (MW_VM_READ | MW_VM_WRITE | MW_VM_EXEC)))
		return -1;
	if (mp->rss_peak <= 0)
		return 0;
	/* A guessed split can leave a piece a peak above its size. */
	if ((uint64_t)mp->rss_peak >= size)
		return 100;
	return (int)((unsigned __int128)mp->rss_peak * 100 / size);
}

int64_t hists_lifetime_us(const struct mw_mapping *mp)
{
	if (mp->phase < 0)
		return -1;	/* born before the trace: its birth is unknown */
	/* A damaged recording can stamp a death before the birth. */
	if (mp->died_ns <= mp->born_ns)
		return 0;
	return (int64_t)((mp->died_ns - mp->born_ns) / 1000);
}

void hists_buried(struct mw_hists *hs, int phase, const struct mw_mapping *mp)
{
	int64_t us = hists_lifetime_us(mp);
	int pct = hists_touched_pct(mp);

	if (us >= 0)
		add(hs, phase, MW_HK_LIFE, (uint64_t)us);
	/* Touch goes to the phase that created it, like its "phase" field. */
	if (pct >= 0)
		add(hs, mp->phase, MW_HK_TOUCH, (uint64_t)pct);
}

void hists_get(const struct mw_hists *hs, const struct mw_model *m, int phase,
	       struct mw_hist_set *out)
{
	memset(out, 0, sizeof(*out));
	if (phase < 0)
		*out = hs->all;
	else if ((size_t)phase < hs->nphase)
		*out = hs->phase[phase];
	/* Live mappings: their peak may still rise, so they are counted
	 * when asked rather than kept. */
	for (const struct mw_mapping *mp = m ? model_first(m) : NULL; mp; mp = model_next(mp)) {
		int pct = hists_touched_pct(mp);

		if (pct >= 0 && (phase < 0 || mp->phase == phase))
			hist_add(&out->h[MW_HK_TOUCH], (uint64_t)pct);
	}
}

/* ---- --hist LIST ---------------------------------------------------------- */

static const struct {
	const char *name;
	unsigned int bits;
} hist_names[] = {
	{ "size", MW_HISTS_SIZE },
	{ "life", MW_HISTS_LIFE },
	{ "touch", MW_HISTS_TOUCH },
	{ "iter", MW_HISTS_ITER },
	{ "all", MW_HISTS_ALL },
	{ "none", 0 },
};

static int name_bits(const char *s, size_t len, unsigned int *bits)
{
	for (size_t i = 0; i < MW_ARRAY_SIZE(hist_names); i++) {
		if (strlen(hist_names[i].name) == len && !strncmp(s, hist_names[i].name, len)) {
			*bits |= hist_names[i].bits;
			return 0;
		}
	}
	return -1;
}

int hists_parse(const char *list, unsigned int *out)
{
	unsigned int bits = MW_HISTS_CHOSEN;
	const char *p = list;

	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (!len || name_bits(p, len, &bits))
			return -1;
		if (!comma)
			break;
		p = comma + 1;
	}
	*out = bits;
	return 0;
}

unsigned int hists_selected(unsigned int chosen)
{
	return chosen & MW_HISTS_CHOSEN ? chosen & MW_HISTS_ALL : MW_HISTS_ITER;
}
