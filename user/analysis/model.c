// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * model.c — the mapping table: split, carve, place, merge.
 *
 * Pure code (no BPF, no /proc except through the oracle), covered by
 * tests/unit/test_model.c.
 */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "analysis/model.h"
#include "analysis/classify.h"
#include "util.h"

void model_init(struct mw_model *m, size_t dead_limit)
{
	memset(m, 0, sizeof(*m));
	m->dead_limit = dead_limit;
	m->next_seq = 1;
}

static void mapping_free(struct mw_mapping *mp)
{
	if (!mp)
		return;
	free(mp->path);
	free(mp);
}

void model_free(struct mw_model *m)
{
	for (size_t i = 0; i < m->nlive; i++)
		mapping_free(m->live[i]);
	for (size_t i = 0; i < m->ndead; i++)
		mapping_free(m->dead[i]);
	free(m->live);
	free(m->dead);
	free(m->shmem_devs);
	memset(m, 0, sizeof(*m));
}

int64_t mapping_rss_total(const struct mw_mapping *mp)
{
	return mp->rss[MW_FILE] + mp->rss[MW_ANON] + mp->rss[MW_SHMEM];
}

void mapping_add_rss(struct mw_mapping *mp, int member, int64_t delta)
{
	int64_t total;

	if (member < 0 || member >= MW_NR_MEMBERS)
		return;
	mp->rss[member] += delta;
	total = mapping_rss_total(mp);
	if (total > mp->rss_peak)
		mp->rss_peak = total;
}

size_t model_lower_bound(const struct mw_model *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nlive;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->live[mid]->end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

long model_find(const struct mw_model *m, uint64_t addr)
{
	size_t i = model_lower_bound(m, addr);

	if (i < m->nlive && m->live[i]->start <= addr)
		return (long)i;
	return -1;
}

static void live_insert_at(struct mw_model *m, size_t i, struct mw_mapping *mp)
{
	if (m->nlive == m->live_cap) {
		m->live_cap = m->live_cap ? m->live_cap * 2 : 64;
		m->live = mw_xrealloc(m->live, m->live_cap, sizeof(*m->live));
	}
	memmove(&m->live[i + 1], &m->live[i], (m->nlive - i) * sizeof(*m->live));
	m->live[i] = mp;
	m->nlive++;
}

static void live_remove_range(struct mw_model *m, size_t i, size_t j)
{
	if (i == j)	/* m->live may be NULL: memmove(NULL, NULL, 0) is UB */
		return;
	memmove(&m->live[i], &m->live[j], (m->nlive - j) * sizeof(*m->live));
	m->nlive -= j - i;
}

static struct mw_mapping *mapping_clone(const struct mw_mapping *mp)
{
	struct mw_mapping *c = mw_xcalloc(1, sizeof(*c));

	*c = *mp;
	c->path = mp->path ? mw_xstrdup(mp->path) : NULL;
	return c;
}

/* Split a's statistics so that 'part' (bytes of its size) gets its share:
 * measured by the oracle when possible, else proportionally. */
static void divide_stats(struct mw_model *m, struct mw_mapping *a,
			 struct mw_mapping *b, bool measure_a)
{
	struct mw_mapping *meas = measure_a ? a : b, *rest = measure_a ? b : a;
	uint64_t len_a = a->end - a->start, len_b = b->end - b->start;
	uint64_t num = meas->end - meas->start, den = len_a + len_b;
	int64_t total[MW_NR_MEMBERS], peak = a->rss_peak;
	uint64_t faults = a->faults, req = a->requested, anon, file;
	bool measured = false, has_rss;
	int file_member;

	memcpy(total, a->rss, sizeof(total));
	file_member = total[MW_SHMEM] > 0 || a->kind == MW_K_SHMEM ? MW_SHMEM : MW_FILE;
	has_rss = total[MW_FILE] || total[MW_ANON] || total[MW_SHMEM];
	/* A removal that knows the RSS it freed (the syscall's own counter
	 * changes) needs no measuring: settle_removed() gives the removed side
	 * exactly that and the kept side the rest.  pagemap would take the
	 * mmap lock the process is using. */
	if (!m->split_settles && mapping_rss_total(a) != 0 && m->oracle.range_rss &&
	    m->oracle.range_rss(m->oracle.ctx, meas->start, meas->end, &anon, &file) == 0) {
		memset(meas->rss, 0, sizeof(meas->rss));
		meas->rss[MW_ANON] = MW_MIN((int64_t)anon, MW_MAX(total[MW_ANON], 0));
		meas->rss[file_member] = MW_MIN((int64_t)file, MW_MAX(total[file_member], 0));
		meas->rss[MW_SWAP] = mw_scale(total[MW_SWAP], num, den);
		measured = true;
	} else {
		for (int i = 0; i < MW_NR_MEMBERS; i++)
			meas->rss[i] = mw_scale(total[i], num, den) & ~4095LL;
	}
	for (int i = 0; i < MW_NR_MEMBERS; i++)
		rest->rss[i] = total[i] - meas->rss[i];
	if (m->split_settles) {
		/* A guess until settled (account.c: settled()). */
		if (!a->rss_estimated && (has_rss || total[MW_SWAP])) {
			a->settling = b->settling = true;
			a->rss_estimated = b->rss_estimated = true;
		}
	} else {
		/* Measured or not, the process may have moved on before we
		 * split: the capture side re-measures both when it catches up. */
		if (has_rss) {
			a->recheck = true;
			b->recheck = true;
		}
		/* Any RSS divided by size is a guess, also when page rounding
		 * put all of it on one side (a->rss is already a's share). */
		if (!measured && (has_rss || total[MW_SWAP])) {
			a->rss_estimated = true;
			b->rss_estimated = true;
		}
	}
	meas->faults = (uint64_t)mw_scale((int64_t)faults, num, den);
	rest->faults = faults - meas->faults;
	meas->requested = (uint64_t)mw_scale((int64_t)req, num, den);
	rest->requested = req - meas->requested;
	/* The peak divided by size, too: whole pages, never more than a
	 * piece has (an 8 KiB piece of a mapping that peaked at 64 KiB). */
	meas->rss_peak = MW_MAX(mapping_rss_total(meas),
				MW_MIN(mw_scale(peak, num, den) & ~4095LL, (int64_t)num));
	rest->rss_peak = MW_MAX(mapping_rss_total(rest),
				MW_MIN((peak - meas->rss_peak) & ~4095LL, (int64_t)(den - num)));
}

/* Split live[i] at x; the new right half is live[i + 1]. */
static void split_at(struct mw_model *m, size_t i, uint64_t x, bool measure_left)
{
	struct mw_mapping *a = m->live[i], *b = mapping_clone(a);

	b->start = x;
	if (a->has_file)
		b->pgoff = a->pgoff + (x - a->start);
	a->end = x;
	divide_stats(m, a, b, measure_left);
	live_insert_at(m, i + 1, b);
}

static void pieces_push(struct mw_pieces *p, struct mw_mapping *mp)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 8;
		p->v = mw_xrealloc(p->v, p->cap, sizeof(*p->v));
	}
	p->v[p->n++] = mp;
}

void pieces_free(struct mw_pieces *p)
{
	for (size_t i = 0; i < p->n; i++)
		mapping_free(p->v[i]);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

void model_carve(struct mw_model *m, uint64_t lo, uint64_t hi,
		 struct mw_pieces *out)
{
	size_t i, j;

	if (lo >= hi)
		return;
	i = model_lower_bound(m, lo);
	if (i < m->nlive && m->live[i]->start < lo && m->live[i]->end > lo) {
		/* The part left of lo stays: measure it. */
		split_at(m, i, lo, true);
		out->kept_left = m->live[i];
		i++;
	}
	for (j = i; j < m->nlive && m->live[j]->start < hi; j++) {
		if (m->live[j]->end > hi) {
			split_at(m, j, hi, false);	/* right part stays */
			out->kept_right = m->live[j + 1];
		}
	}
	for (size_t k = i; k < j; k++)
		pieces_push(out, m->live[k]);
	live_remove_range(m, i, j);
}

void model_place(struct mw_model *m, struct mw_mapping *mp)
{
	struct mw_pieces over = { 0 };
	size_t i;

	/* Never let the table overlap: whatever was there is gone. */
	model_carve(m, mp->start, mp->end, &over);
	model_bury_all(m, &over);
	i = model_lower_bound(m, mp->start);
	live_insert_at(m, i, mp);
}

static void fold_dead(struct mw_model *m, struct mw_mapping *mp)
{
	struct mw_mapping *f = &m->folded;

	for (int i = 0; i < MW_NR_MEMBERS; i++)
		f->rss[i] += mp->rss[i];
	f->rss_peak += mp->rss_peak;
	f->faults += mp->faults;
	f->requested += mp->requested;
	f->end += mp->end - mp->start;	/* folded: end holds total bytes */
	m->nfolded++;
	mapping_free(mp);
}

void model_bury(struct mw_model *m, struct mw_mapping *mp)
{
	mp->unmapped = true;
	mp->died_ns = m->now_ns;
	if (m->on_bury)
		m->on_bury(m->on_bury_ctx, mp);
	if (m->dead_limit && m->ndead >= m->dead_limit) {
		fold_dead(m, mp);
		return;
	}
	if (m->ndead == m->dead_cap) {
		m->dead_cap = m->dead_cap ? m->dead_cap * 2 : 64;
		m->dead = mw_xrealloc(m->dead, m->dead_cap, sizeof(*m->dead));
	}
	m->dead[m->ndead++] = mp;
}

void model_bury_all(struct mw_model *m, struct mw_pieces *pieces)
{
	for (size_t i = 0; i < pieces->n; i++)
		model_bury(m, pieces->v[i]);
	free(pieces->v);
	memset(pieces, 0, sizeof(*pieces));
}

static void mapping_absorb(struct mw_mapping *into, const struct mw_mapping *from)
{
	for (int i = 0; i < MW_NR_MEMBERS; i++)
		into->rss[i] += from->rss[i];
	into->faults += from->faults;
	into->requested += from->requested;
	into->rss_peak = MW_MAX(into->rss_peak, from->rss_peak);
	into->rss_estimated |= from->rss_estimated;
}

static void mapping_take_state(struct mw_mapping *mp, const struct mw_vma_state *v)
{
	mp->start = v->start;
	mp->end = v->end;
	mp->flags = v->flags;
	mp->pgoff = v->pgoff;
	mp->ino = v->ino;
	mp->dev_major = v->dev_major;
	mp->dev_minor = v->dev_minor;
	mp->deleted = v->deleted;
	if (v->path) {
		free(mp->path);
		mp->path = mw_xstrdup(v->path);
	} else if (v->has_file != mp->has_file ||
		   (mp->path && mp->path[0] != '[')) {
		/* Kernel names ([vdso], [anon:x]) survive an mprotect; a
		 * file name does not survive becoming anonymous. */
		free(mp->path);
		mp->path = NULL;
	}
	mp->has_file = v->has_file;
}

struct mw_mapping *model_set_vma(struct mw_model *m,
				 const struct mw_vma_state *v)
{
	struct mw_pieces pieces = { 0 };
	struct mw_mapping *mp = NULL;
	size_t i;

	if (v->start >= v->end)
		return NULL;
	model_carve(m, v->start, v->end, &pieces);
	/* The oldest piece keeps its identity (birth, phase). */
	for (i = 0; i < pieces.n; i++)
		if (!mp || pieces.v[i]->born_seq < mp->born_seq)
			mp = pieces.v[i];
	if (!mp) {
		mp = mw_xcalloc(1, sizeof(*mp));
		mp->born_ns = m->now_ns;
		mp->born_seq = m->next_seq++;
		mp->phase = m->phase;
		mp->born_iter = m->iter;
		mp->has_file = v->has_file;
	}
	for (i = 0; i < pieces.n; i++) {
		if (pieces.v[i] == mp)
			continue;
		mapping_absorb(mp, pieces.v[i]);
		mapping_free(pieces.v[i]);
	}
	free(pieces.v);
	mapping_take_state(mp, v);
	mp->rss_peak = MW_MAX(mp->rss_peak, mapping_rss_total(mp));
	model_classify(m, mp);
	live_insert_at(m, model_lower_bound(m, mp->start), mp);
	return mp;
}

uint64_t model_vm_bytes(const struct mw_model *m)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < m->nlive; i++)
		if (m->live[i]->kind != MW_K_VSYSCALL)
			sum += m->live[i]->end - m->live[i]->start;
	return sum;
}

int64_t model_rss(const struct mw_model *m, int member)
{
	int64_t sum = 0;

	for (size_t i = 0; i < m->nlive; i++)
		sum += m->live[i]->rss[member];
	return sum;
}

void mapping_perms(const struct mw_mapping *mp, char out[5])
{
	out[0] = mp->flags & MW_VM_READ ? 'r' : '-';
	out[1] = mp->flags & MW_VM_WRITE ? 'w' : '-';
	out[2] = mp->flags & MW_VM_EXEC ? 'x' : '-';
	out[3] = mp->flags & MW_VM_MAYSHARE ? 's' : 'p';
	out[4] = 0;
}

const char *mapping_display_path(const struct mw_model *m,
				 const struct mw_mapping *mp,
				 char *buf, size_t len)
{
	if (mp->has_file && mp->path) {
		snprintf(buf, len, "%s%s", mp->path, mp->deleted ? " (deleted)" : "");
		return buf;
	}
	if (mp->kind == MW_K_HEAP && !mp->unmapped)
		return "[heap]";
	if (mp->kind == MW_K_STACK && !mp->unmapped)
		return "[stack]";
	return mp->path ? mp->path : "";
}

void model_classify(struct mw_model *m, struct mw_mapping *mp)
{
	mp->kind = mw_classify(m, mp);
}
