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
#include "analysis/pool.h"
#include "util.h"

/* Live mappings never overlap: by start is also by end. */
static int cmp_start(const struct mw_mapping *a, const struct mw_mapping *b)
{
	return a->start < b->start ? -1 : a->start > b->start;
}

/* RB_GENERATE_STATIC() with the attribute spelled out: libbsd leaves its
 * __unused undefined (a struct member of that name in Linux headers). */
RB_GENERATE_INTERNAL(mw_live, mw_mapping, node, cmp_start, __attribute__((unused)) static)

void model_init(struct mw_model *m, size_t dead_limit)
{
	memset(m, 0, sizeof(*m));
	RB_INIT(&m->live);
	TAILQ_INIT(&m->recheck);
	m->dead_limit = dead_limit;
	m->next_seq = 1;
}

/* Every model's mappings, live and buried (pool.c says why). */
static struct mw_pool mappings = MW_POOL_INIT(struct mw_mapping);

static struct mw_mapping *mapping_new(void)
{
	return pool_zalloc(&mappings);
}

static void mapping_free(struct mw_mapping *mp)
{
	if (!mp)
		return;
	free(mp->path);
	pool_free(&mappings, mp);
}

/* Children first: a walk in order would climb through freed parents. */
static void free_subtree(struct mw_mapping *mp)
{
	while (mp) {
		struct mw_mapping *right = RB_RIGHT(mp, node);

		free_subtree(RB_LEFT(mp, node));
		mapping_free(mp);
		mp = right;
	}
}

void model_free(struct mw_model *m)
{
	free_subtree(RB_ROOT(&m->live));
	for (size_t i = 0; i < m->ndead; i++)
		mapping_free(m->dead[i]);
	free(m->dead);
	free(m->shmem_devs);
	memset(m, 0, sizeof(*m));
}

int64_t mapping_rss_total(const struct mw_mapping *mp)
{
	return mp->rss[MW_FILE] + mp->rss[MW_ANON] + mp->rss[MW_SHMEM];
}

const struct mw_smaps_meas *mapping_measured(const struct mw_mapping *mp)
{
	return mp->sm.end && mp->sm.start == mp->start && mp->sm.end == mp->end ?
	       &mp->sm : NULL;
}

/*
 * A mapping's peak RSS: the highest total it has held, in whole pages and
 * never above its size.  A total above the size (a change spread over a
 * range, a slot's peak from before a split) is an estimate's error, which a
 * re-measure corrects for RSS; the peak must not keep it.
 */
void mapping_note_peak(struct mw_mapping *mp, int64_t total)
{
	int64_t size = (int64_t)(mp->end - mp->start);

	if (total > mp->rss_peak)
		mp->rss_peak = mw_page_ceil(total);
	if (mp->rss_peak > size)
		mp->rss_peak = size;
}

/* Bytes member m of mp can still take (> 0) or give (< 0), whole pages. */
static int64_t rss_room(const struct mw_mapping *mp, int m, bool give)
{
	int64_t size = (int64_t)(mp->end - mp->start);

	if (give)
		return -mw_page_floor(MW_MAX(mp->rss[m], 0));
	return mw_page_floor(MW_MAX(size - (m == MW_SWAP ? mp->rss[MW_SWAP] :
					    mapping_rss_total(mp)), 0));
}

int64_t mapping_take_rss(struct mw_mapping *mp, int member, int64_t delta)
{
	int64_t room;

	if (member < 0 || member >= MW_NR_MEMBERS || !delta)
		return 0;
	room = rss_room(mp, member, delta < 0);
	delta = delta < 0 ? MW_MAX(delta, room) : MW_MIN(delta, room);
	mp->rss[member] += delta;
	mapping_note_peak(mp, mapping_rss_total(mp));
	return delta;
}

bool mapping_clamp_rss(struct mw_mapping *mp)
{
	bool changed = false;

	for (int m = 0; m < MW_NR_MEMBERS; m++) {
		int64_t v = MW_MAX(mw_page_floor(mp->rss[m]), 0);

		changed |= v != mp->rss[m];
		mp->rss[m] = v;
	}
	/* More resident than its size: the largest member gives way, then the
	 * next.  Three steps at most, whatever the (fuzzed) sizes. */
	for (int step = 0; step < 3; step++) {
		int64_t size = mp->end > mp->start ?
			       (int64_t)MW_MIN(mp->end - mp->start, (uint64_t)INT64_MAX) : 0;
		int64_t over = 0;
		int big = MW_ANON;

		for (int m = 0; m < MW_NR_MEMBERS; m++)
			if (m != MW_SWAP)
				over = over > INT64_MAX - mp->rss[m] ?
				       INT64_MAX : over + mp->rss[m];
		if (over <= size)
			break;
		over -= size;
		if (mp->rss[MW_FILE] > mp->rss[big])
			big = MW_FILE;
		if (mp->rss[MW_SHMEM] > mp->rss[big])
			big = MW_SHMEM;
		mp->rss[big] -= MW_MIN(mp->rss[big], over);
		changed = true;
	}
	return changed;
}

int64_t mappings_apportion(struct mw_mapping *const *v, const uint64_t *w, size_t n,
			   int member, int64_t delta)
{
	int64_t ps = (int64_t)mw_page_size(), pages = delta / ps, rest;
	uint64_t wsum = 0;
	size_t heavy = 0;

	for (size_t i = 0; i < n; i++)
		wsum += w[i];
	if (!wsum || member < 0 || member >= MW_NR_MEMBERS)
		return delta;
	rest = delta - pages * ps;	/* less than a page: nobody's */
	delta = pages * ps;
	for (size_t i = 0; i < n; i++) {
		int64_t share = mw_scale(pages, w[i], wsum) * ps;

		delta -= mapping_take_rss(v[i], member, share);
	}
	/* The remainder, and what a bound refused, wherever it fits: the
	 * heaviest first. */
	for (size_t i = 0; i < n; i++)
		if (w[i] > w[heavy])
			heavy = i;
	delta -= mapping_take_rss(v[heavy], member, delta);
	for (size_t i = 0; i < n && delta; i++)
		delta -= mapping_take_rss(v[i], member, delta);
	return delta + rest;
}

/* ---- the table: a red-black tree and its running totals ---------------- */

struct mw_mapping *model_first(const struct mw_model *m)
{
	return RB_MIN(mw_live, (struct mw_live *)&m->live);
}

struct mw_mapping *model_next(const struct mw_mapping *mp)
{
	return RB_NEXT(mw_live, NULL, (struct mw_mapping *)mp);
}

struct mw_mapping *model_prev(const struct mw_mapping *mp)
{
	return RB_PREV(mw_live, NULL, (struct mw_mapping *)mp);
}

struct mw_mapping *model_lower_bound(const struct mw_model *m, uint64_t addr)
{
	struct mw_mapping *mp = RB_ROOT(&m->live), *found = NULL;

	while (mp) {
		if (mp->end > addr) {
			found = mp;
			mp = RB_LEFT(mp, node);
		} else {
			mp = RB_RIGHT(mp, node);
		}
	}
	return found;
}

struct mw_mapping *model_find(const struct mw_model *m, uint64_t addr)
{
	struct mw_mapping *mp = model_lower_bound(m, addr);

	return mp && mp->start <= addr ? mp : NULL;
}

/* What a live mapping adds to VmSize. */
static uint64_t vm_of(const struct mw_mapping *mp)
{
	return mp->kind == MW_K_VSYSCALL ? 0 : mp->end - mp->start;
}

/* The running sums of VM, in all and by kind, with mp in (+) or out (-). */
static void vm_count(struct mw_model *m, const struct mw_mapping *mp, int sign)
{
	uint64_t vm = vm_of(mp);

	m->vm_bytes += sign > 0 ? vm : -vm;
	if ((unsigned)mp->kind < MW_NR_KINDS)
		m->kind_vm[mp->kind] += sign > 0 ? vm : -vm;
	m->device_vm_peak = MW_MAX(m->device_vm_peak, m->kind_vm[MW_K_DEVICE]);
}

/* Callers carve mp's range out first: no live mapping starts inside it. */
static void live_insert(struct mw_model *m, struct mw_mapping *mp)
{
	RB_INSERT(mw_live, &m->live, mp);
	mp->in_table = true;
	m->nlive++;
	vm_count(m, mp, 1);
	if (mp->recheck) {
		TAILQ_INSERT_TAIL(&m->recheck, mp, recheck_node);
		m->nrecheck++;
	}
}

static void live_remove(struct mw_model *m, struct mw_mapping *mp)
{
	RB_REMOVE(mw_live, &m->live, mp);
	mp->in_table = false;
	m->nlive--;
	vm_count(m, mp, -1);
	if (mp->recheck) {
		TAILQ_REMOVE(&m->recheck, mp, recheck_node);
		m->nrecheck--;
	}
}

/* Move a live mapping's range without changing its place in the order. */
static void live_set_range(struct mw_model *m, struct mw_mapping *mp,
			   uint64_t start, uint64_t end)
{
	vm_count(m, mp, -1);
	mp->start = start;
	mp->end = end;
	vm_count(m, mp, 1);
}

void model_grow_down(struct mw_model *m, struct mw_mapping *mp, uint64_t start)
{
	live_set_range(m, mp, start, mp->end);
	model_classify(m, mp);
}

void model_set_recheck(struct mw_model *m, struct mw_mapping *mp, bool recheck)
{
	if (mp->in_table && recheck && !mp->recheck) {
		TAILQ_INSERT_TAIL(&m->recheck, mp, recheck_node);
		m->nrecheck++;
	} else if (mp->in_table && !recheck && mp->recheck) {
		TAILQ_REMOVE(&m->recheck, mp, recheck_node);
		m->nrecheck--;
	}
	mp->recheck = recheck;
}

uint64_t model_vm_bytes(const struct mw_model *m)
{
	return m->vm_bytes;
}

uint64_t model_kind_vm(const struct mw_model *m, enum mw_kind k)
{
	return (unsigned)k < MW_NR_KINDS ? m->kind_vm[k] : 0;
}

const char *model_check(const struct mw_model *m)
{
	const struct mw_mapping *mp, *prev = NULL;
	uint64_t vm = 0, kind_vm[MW_NR_KINDS] = { 0 };
	size_t n = 0, nrecheck = 0;

	model_for_each(mp, m) {
		if (!mp->in_table || mp->unmapped)
			return "a mapping in the tree is not marked live";
		if (mp->start >= mp->end)
			return "an empty or inverted range";
		if (prev && prev->end > mp->start)
			return "overlapping or unsorted ranges";
		vm += vm_of(mp);
		if ((unsigned)mp->kind < MW_NR_KINDS)
			kind_vm[mp->kind] += vm_of(mp);
		nrecheck += mp->recheck;
		n++;
		prev = mp;
	}
	if (n != m->nlive)
		return "nlive is not the number of mappings in the tree";
	if (vm != m->vm_bytes)
		return "vm_bytes is not the sum of the live sizes";
	if (memcmp(kind_vm, m->kind_vm, sizeof(kind_vm)))
		return "kind_vm is not the sum of the live sizes by kind";
	if (nrecheck != m->nrecheck)
		return "nrecheck is not the number of live mappings to re-check";
	n = 0;
	TAILQ_FOREACH(mp, &m->recheck, recheck_node) {
		if (!mp->in_table || !mp->recheck)
			return "the re-check list holds a mapping not live or not to re-check";
		n++;
	}
	if (n != nrecheck)
		return "the re-check list is not the live mappings to re-check";
	return NULL;
}

static struct mw_mapping *mapping_clone(const struct mw_mapping *mp)
{
	struct mw_mapping *c = mapping_new();

	*c = *mp;
	memset(&c->node, 0, sizeof(c->node));
	memset(&c->recheck_node, 0, sizeof(c->recheck_node));
	c->in_table = false;
	c->path = mp->path ? mw_xstrdup(mp->path) : NULL;
	return c;
}

/* Split a's statistics so that 'part' (bytes of its size) gets its share:
 * measured by the oracle when possible, else proportionally.  The oracle
 * reads the side that stays, or with split_either the smaller side, and
 * the measured side gets the whole less that. */
static void divide_stats(struct mw_model *m, struct mw_mapping *a,
			 struct mw_mapping *b, bool measure_a)
{
	struct mw_mapping *meas = measure_a ? a : b, *rest = measure_a ? b : a;
	uint64_t len_a = a->end - a->start, len_b = b->end - b->start;
	uint64_t num = meas->end - meas->start, den = len_a + len_b;
	const struct mw_mapping *ask = m->split_either && den - num < num ? rest : meas;
	int64_t total[MW_NR_MEMBERS], peak = a->rss_peak, anon_all, file_all;
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
	    m->oracle.range_rss(m->oracle.ctx, ask->start, ask->end, &anon, &file) == 0) {
		anon_all = MW_MAX(total[MW_ANON], 0);
		file_all = MW_MAX(total[file_member], 0);
		memset(meas->rss, 0, sizeof(meas->rss));
		meas->rss[MW_ANON] = MW_MIN((int64_t)anon, anon_all);
		meas->rss[file_member] = MW_MIN((int64_t)file, file_all);
		if (ask != meas) {	/* the other side's answer */
			meas->rss[MW_ANON] = anon_all - meas->rss[MW_ANON];
			meas->rss[file_member] = file_all - meas->rss[file_member];
		}
		meas->rss[MW_SWAP] = mw_page_floor(mw_scale(total[MW_SWAP], num, den));
		measured = true;
	} else {
		for (int i = 0; i < MW_NR_MEMBERS; i++)
			meas->rss[i] = mw_page_floor(mw_scale(total[i], num, den));
	}
	/* Within bounds (an estimate the parent carried out of them stays
	 * an estimate), the part first, so that the rest takes its excess. */
	bool clamped = mapping_clamp_rss(meas);

	for (int i = 0; i < MW_NR_MEMBERS; i++)
		rest->rss[i] = total[i] - meas->rss[i];
	if (mapping_clamp_rss(rest) || clamped) {
		a->rss_estimated = b->rss_estimated = true;
		model_set_recheck(m, a, true);
		model_set_recheck(m, b, true);
	}
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
			model_set_recheck(m, a, true);
			model_set_recheck(m, b, true);
		}
		/* Any RSS divided by size is a guess, also when page rounding
		 * put all of it on one side (a->rss is already a's share). */
		if (!measured && (has_rss || total[MW_SWAP])) {
			a->rss_estimated = true;
			b->rss_estimated = true;
			m->split_guesses++;
		}
	}
	meas->faults = (uint64_t)mw_scale((int64_t)faults, num, den);
	rest->faults = faults - meas->faults;
	for (int k = 0; k < MW_FK_NR; k++) {
		int64_t n = a->fk[k];

		meas->fk[k] = mw_scale(n, num, den);
		rest->fk[k] = n - meas->fk[k];
	}
	meas->requested = (uint64_t)mw_scale((int64_t)req, num, den);
	rest->requested = req - meas->requested;
	/* The peak divided by size, too: whole pages, never more than a
	 * piece has (an 8 KiB piece of a mapping that peaked at 64 KiB). */
	meas->rss_peak = MW_MAX(mapping_rss_total(meas),
				MW_MIN(mw_page_floor(mw_scale(peak, num, den)), (int64_t)num));
	rest->rss_peak = MW_MAX(mapping_rss_total(rest),
				MW_MIN(mw_page_floor(peak - meas->rss_peak), (int64_t)(den - num)));
}

/* Split live mapping a at x; returns the new right half, in the table. */
static struct mw_mapping *split_at(struct mw_model *m, struct mw_mapping *a,
				   uint64_t x, bool measure_left)
{
	struct mw_mapping *b = mapping_clone(a);

	b->start = x;
	if (a->has_file)
		b->pgoff = a->pgoff + (x - a->start);
	live_set_range(m, a, a->start, x);
	divide_stats(m, a, b, measure_left);
	live_insert(m, b);
	/* Either half may have left the heap or the stack. */
	if (!a->has_file) {
		model_classify(m, a);
		model_classify(m, b);
	}
	return b;
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
	struct mw_mapping *mp, *next;

	if (lo >= hi)
		return;
	mp = model_lower_bound(m, lo);
	if (mp && mp->start < lo) {
		/* The part left of lo stays: measure it. */
		out->kept_left = mp;
		mp = split_at(m, mp, lo, true);
	}
	for (; mp && mp->start < hi; mp = next) {
		if (mp->end > hi)	/* right part stays */
			out->kept_right = split_at(m, mp, hi, false);
		next = model_next(mp);
		live_remove(m, mp);
		pieces_push(out, mp);
	}
}

void model_place(struct mw_model *m, struct mw_mapping *mp)
{
	struct mw_pieces over = { 0 };

	if (mp->start >= mp->end) {	/* nothing of it is mapped */
		model_bury(m, mp);
		return;
	}
	/* Never let the table overlap: whatever was there is gone. */
	model_carve(m, mp->start, mp->end, &over);
	model_bury_all(m, &over);
	if (!mp->has_file)	/* moved (mremap): into or out of the heap */
		model_classify(m, mp);
	live_insert(m, mp);
}

static void fold_dead(struct mw_model *m, struct mw_mapping *mp)
{
	struct mw_mapping *f = &m->folded;

	for (int i = 0; i < MW_NR_MEMBERS; i++)
		f->rss[i] += mp->rss[i];
	f->rss_peak += mp->rss_peak;
	f->faults += mp->faults;
	for (int k = 0; k < MW_FK_NR; k++)
		f->fk[k] += mp->fk[k];
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
	for (int k = 0; k < MW_FK_NR; k++)
		into->fk[k] += from->fk[k];
	into->requested += from->requested;
	/* Capped once the merged range is known (set_vma). */
	into->rss_peak = MW_MAX(into->rss_peak, from->rss_peak);
	into->rss_estimated |= from->rss_estimated;
}

static void mapping_take_state(struct mw_mapping *mp, const struct mw_vma_state *v)
{
	/* What /proc's maps does not show (PFNMAP, MIXEDMAP, LOCKED) stays
	 * as the kernel last told it, for the same file; a new mapping (end
	 * 0) takes all there is. */
	bool same = mp->end && mp->ino == v->ino && mp->dev_major == v->dev_major &&
		    mp->dev_minor == v->dev_minor;

	mp->flags = v->flags_known && same ?
		    (mp->flags & ~v->flags_known) | (v->flags & v->flags_known) : v->flags;
	mp->start = v->start;
	mp->end = v->end;
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
	m->split_either = true;	/* the pages stay, in the VMA v describes */
	model_carve(m, v->start, v->end, &pieces);
	m->split_either = false;
	/* The oldest piece keeps its identity (birth, phase). */
	for (i = 0; i < pieces.n; i++)
		if (!mp || pieces.v[i]->born_seq < mp->born_seq)
			mp = pieces.v[i];
	if (!mp) {
		mp = mapping_new();
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
	mapping_note_peak(mp, mapping_rss_total(mp));
	model_classify(m, mp);
	live_insert(m, mp);
	return mp;
}

int64_t model_rss(const struct mw_model *m, int member)
{
	const struct mw_mapping *mp;
	int64_t sum = 0;

	model_for_each(mp, m)
		sum += mp->rss[member];
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

enum mw_kind model_kind(const struct mw_model *m, const struct mw_mapping *mp)
{
	const struct mw_layout l = {
		.start_brk = m->start_brk, .brk = m->brk, .start_stack = m->start_stack,
		.shmem_devs = m->shmem_devs, .nshmem_devs = m->nshmem_devs,
	};

	return mw_classify(&l, mp);
}

void model_classify(struct mw_model *m, struct mw_mapping *mp)
{
	enum mw_kind kind = model_kind(m, mp);

	if (kind == mp->kind)
		return;
	if (mp->in_table)
		vm_count(m, mp, -1);
	mp->kind = kind;
	if (mp->in_table)
		vm_count(m, mp, 1);
}

/* Re-derive the kinds of the live mappings overlapping [lo, hi): only
 * mappings without a file can be heap or stack. */
static void classify_range(struct mw_model *m, uint64_t lo, uint64_t hi)
{
	struct mw_mapping *mp;

	for (mp = model_lower_bound(m, lo); mp && mp->start < hi; mp = model_next(mp))
		if (!mp->has_file)
			model_classify(m, mp);
}

/*
 * Where a mapping can be heap or stack (classify.c): it is heap if it has
 * start < brk and end > start_brk, so it overlaps [start_brk, brk) or, with
 * brk at or below start_brk, holds start_brk; stack if start <= start_stack
 * <= end, so it overlaps [start_stack - 1, start_stack + 1).
 */
static void classify_near(struct mw_model *m, uint64_t start_brk, uint64_t brk,
			  uint64_t start_stack)
{
	if (start_brk)
		classify_range(m, start_brk, MW_MAX(brk, start_brk + 1));
	if (start_stack)
		classify_range(m, start_stack - 1, start_stack + 1);
}

void model_set_brk(struct mw_model *m, uint64_t start_brk, uint64_t brk,
		   uint64_t start_stack)
{
	uint64_t old_start_brk = m->start_brk, old_brk = m->brk;
	uint64_t old_stack = m->start_stack;

	if (start_brk == old_start_brk && brk == old_brk && start_stack == old_stack)
		return;
	m->start_brk = start_brk;
	m->brk = brk;
	m->start_stack = start_stack;
	if (start_brk && start_brk == old_start_brk && start_stack == old_stack) {
		/* brk alone moved: only mappings that start between the old
		 * and the new break can change (a heap of 30,000 VMAs, as
		 * stress-ng --brk builds, is not walked per call), and the one
		 * holding start_brk when the break is at or below it. */
		uint64_t lo = MW_MIN(old_brk, brk), hi = MW_MAX(old_brk, brk);

		classify_range(m, lo, MW_MAX(hi, lo + 1));
		classify_range(m, start_brk, start_brk + 1);
		return;
	}
	/* What was heap or stack and may be no more, then what may be now. */
	classify_near(m, old_start_brk, old_brk, old_stack);
	classify_near(m, start_brk, brk, start_stack);
}
