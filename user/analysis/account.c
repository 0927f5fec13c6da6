// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * account.c — analysis of one traced process.
 *
 * Ring-buffer records arrive in the order the kernel emitted them; each
 * structural record (mw_op_rec) is preceded by the RSS attributed to mappings
 * since the previous one (mw_deltas_rec), so deltas always apply to the table
 * as it stood before the change.  The table follows the kernel's VMAs; the
 * process totals come from the kernel's exact counters (struct mw_proc).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/account.h"
#include "analysis/classify.h"
#include "capture/procfs.h"
#include "util.h"

/* uapi values, stable across architectures that memwatch supports */
#define MAP_FIXED_FLAG		0x10
#define MREMAP_FIXED_FLAG	2


/* A mapping left the table: its lifetime counts in the phase now running. */
static void on_bury(void *ctx, const struct mw_mapping *mp)
{
	struct mw_account *a = ctx;

	hists_buried(&a->hists, a->model.phase, mp);
}

void account_init(struct mw_account *a, pid_t pid, size_t dead_limit)
{
	memset(a, 0, sizeof(*a));
	a->pid = pid;
	a->wait_status = -1;
	a->obs_phase = -1;
	model_init(&a->model, dead_limit);
	a->model.on_bury = on_bury;
	a->model.on_bury_ctx = a;
	phases_init(&a->phases);
	hists_init(&a->hists);
	callsites_init(&a->sites);
}

void account_free(struct mw_account *a)
{
	hists_free(&a->hists);
	callsites_free(&a->sites);
	phases_free(&a->phases);
	free(a->drm);
	free(a->marknames);
	free(a->spread.v);
	free(a->spread.w);
	model_free(&a->model);
}

/* ---- totals ------------------------------------------------------------ */

/* Records the kernel dropped (ring buffer full), and those the analysis
 * never applied because the end came while it was behind. */
uint64_t account_lost(const struct mw_account *a)
{
	return a->kstate.lost + a->unapplied;
}

uint64_t account_vm(const struct mw_account *a)
{
	return a->kstate.total_vm << mw_page_shift;
}

uint64_t account_vm_peak(const struct mw_account *a)
{
	return MW_MAX(a->kstate.vm_peak, a->kstate.total_vm) << mw_page_shift;
}

int64_t account_rss(const struct mw_account *a, int member)
{
	return member >= 0 && member < MW_NR_MEMBERS ? a->kstate.rss[member] : 0;
}

int64_t account_rss_total(const struct mw_account *a)
{
	return a->kstate.rss[MW_FILE] + a->kstate.rss[MW_ANON] + a->kstate.rss[MW_SHMEM];
}

uint64_t account_rss_peak(const struct mw_account *a)
{
	return MW_MAX(a->kstate.rss_peak, (uint64_t)MW_MAX(account_rss_total(a), 0));
}

int64_t account_unattributed(const struct mw_account *a)
{
	int64_t placed = 0;

	for (int m = 0; m < MW_NR_MEMBERS; m++)
		if (m != MW_SWAP)
			placed += model_rss(&a->model, m);
	return account_rss_total(a) - placed;
}

/* ---- attribution ------------------------------------------------------- */

static struct mw_mapping *mapping_at(struct mw_account *a, uint64_t addr)
{
	return model_find(&a->model, addr);
}

static void apply_slot(struct mw_account *a, const struct mw_slot *s)
{
	struct mw_mapping *mp = mapping_at(a, s->vm_start);
	int64_t before;

	if (mw_verbose >= 3)
		mw_dbg("  slot %llx anon %lld file %lld faults %llu -> %llx", (unsigned long long)s->vm_start,
		       (long long)s->rss[MW_ANON], (long long)s->rss[MW_FILE],
		       (unsigned long long)s->faults, mp ? (unsigned long long)mp->start : 0ull);

	if (!mp) {
		for (int m = 0; m < MW_NR_MEMBERS; m++)
			a->lost_attr[m] += s->rss[m];
		a->lost_attr_faults += s->faults;
		return;
	}
	for (int k = 0; k < MW_FK_NR; k++)
		mp->fk[k] += s->fk[k];
	before = mapping_rss_total(mp);
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		mp->rss[m] += s->rss[m];
	mp->faults += s->faults;
	/* Threads changing the counters at once can misplace a few pages
	 * between mappings (fault.bpf.h): check this one when quiet.  One
	 * that lost pages it never had is an estimate until then. */
	if (mapping_clamp_rss(mp))
		mp->rss_estimated = true;
	if (a->kstate.reorders || a->concurrent || mp->rss_estimated)
		model_set_recheck(&a->model, mp, true);
	/* The most the slot held since its last harvest: faulted in. */
	mapping_note_peak(mp, before + s->peak);
	mapping_note_peak(mp, mapping_rss_total(mp));
	if (s->peak > 0)
		callsites_rss(&a->sites, &a->model, mp, (uint64_t)s->peak);
}

static void apply_deltas(struct mw_account *a, const struct mw_deltas_rec *d,
			 uint32_t len)
{
	uint32_t max = (len - offsetof(struct mw_deltas_rec, slots)) / sizeof(struct mw_slot);

	max = MW_MIN(max, (uint32_t)MW_SLOTS);	/* a damaged record may be longer */
	a->last_hseq = d->hseq;		/* for re-measures (user/trace.c) */
	for (uint32_t i = 0; i < d->nr && i < max; i++)
		apply_slot(a, &d->slots[i]);
}

/* Spread RSS that a syscall changed over the mappings now in [lo, hi),
 * in proportion to how much of each the range covers, in whole pages. */
static void spread_rss(struct mw_account *a, uint64_t lo, uint64_t hi,
		       const __s64 delta[MW_NR_MEMBERS])
{
	struct mw_mapping *mp;
	size_t n = 0;

	if (!delta[0] && !delta[1] && !delta[2] && !delta[3])
		return;
	for (mp = model_lower_bound(&a->model, lo); mp && mp->start < hi; mp = model_next(mp)) {
		if (n == a->spread.cap) {
			a->spread.cap = a->spread.cap ? a->spread.cap * 2 : 16;
			a->spread.v = mw_xrealloc(a->spread.v, a->spread.cap, sizeof(*a->spread.v));
			a->spread.w = mw_xrealloc(a->spread.w, a->spread.cap, sizeof(*a->spread.w));
		}
		a->spread.v[n] = mp;
		a->spread.w[n++] = MW_MIN(mp->end, hi) - MW_MAX(mp->start, lo);
	}
	for (int k = 0; k < MW_NR_MEMBERS; k++) {
		int64_t left = mappings_apportion(a->spread.v, a->spread.w, n, k, delta[k]);

		a->lost_attr[k] += left;
		if (left && n)
			a->spread.v[0]->rss_estimated = true;
	}
	/* Divided by size over several mappings (MADV_DONTNEED across a
	 * split), or more than one held: a guess; measure when quiet. */
	for (size_t i = 0; i < n; i++)
		if (n > 1 || a->spread.v[i]->rss_estimated)
			model_set_recheck(&a->model, a->spread.v[i], true);
}

/*
 * Pieces leaving the table took exactly -removed[] of RSS with them (the
 * kernel's counters moved by that much inside the syscall).  Where the table
 * had it divided differently, the pieces get the exact figure and the parts
 * a guessed split left behind absorb the difference.
 */
static void settle_removed(struct mw_pieces *p, const __s64 delta[MW_NR_MEMBERS])
{
	uint64_t bytes = 0, w[p->n ? p->n : 1];

	for (size_t i = 0; i < p->n; i++)
		bytes += w[i] = p->v[i]->end - p->v[i]->start;
	if (!bytes)
		return;
	for (int m = 0; m < MW_NR_MEMBERS; m++) {
		int64_t had = 0, diff, taken;
		struct mw_mapping *kept = NULL;

		if (m == MW_SWAP)
			continue;
		for (size_t i = 0; i < p->n; i++)
			had += p->v[i]->rss[m];
		diff = -delta[m] - had;
		if (!diff)
			continue;
		/* By size, in whole pages, none below 0 or above its size. */
		taken = diff - mappings_apportion(p->v, w, p->n, m, diff);
		if (p->kept_left && p->kept_left->rss_estimated)
			kept = p->kept_left;
		else if (p->kept_right && p->kept_right->rss_estimated)
			kept = p->kept_right;
		if (kept)
			mapping_take_rss(kept, m, -taken);
	}
}

/*
 * After settle_removed(): a piece kept on one side of a settling split
 * (model.c) is exact.  Kept on both sides, only their sum is: how it divides
 * between them is a guess, measured again when quiet, as any split.
 */
static void settled(struct mw_model *m, struct mw_pieces *p)
{
	struct mw_mapping *kept[] = { p->kept_left, p->kept_right };
	bool guessed = p->kept_left && p->kept_right &&
		       (p->kept_left->settling || p->kept_right->settling);

	for (size_t i = 0; i < 2; i++) {
		if (!kept[i] || !kept[i]->settling)
			continue;
		kept[i]->settling = false;
		kept[i]->rss_estimated = guessed;
		if (guessed && mapping_rss_total(kept[i]) != 0)
			model_set_recheck(m, kept[i], true);
	}
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i]->settling) {
			/* A lone removed piece carries exactly what was freed. */
			p->v[i]->rss_estimated = p->n > 1;
			p->v[i]->settling = false;
		}
}

/* Late RSS (account.h) of [lo, hi) no late read will place: gone with
 * its range (unmapped, or the layout read again from /proc). */
static void late_drop(struct mw_account *a, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < a->nlate;) {
		struct mw_late_rss *e = &a->late[i];

		if (e->end <= lo || e->start >= hi) {
			i++;
			continue;
		}
		for (int m = 0; m < MW_NR_MEMBERS; m++)
			a->lost_attr[m] += e->rss[m];
		*e = a->late[--a->nlate];
	}
}

/* RSS a call changed in its range: spread over the mappings there; if the
 * call could not read its VMAs and none is there yet, kept until the late
 * read puts them there. */
static void spread_call_rss(struct mw_account *a, const struct mw_op_rec *r, uint64_t lo,
			    uint64_t hi, const __s64 delta[MW_NR_MEMBERS])
{
	struct mw_mapping *mp = model_lower_bound(&a->model, lo);

	if ((r->opflags & MW_OPF_FIND_BUSY) && hi > lo && (!mp || mp->start >= hi) &&
	    a->nlate < MW_ARRAY_SIZE(a->late) &&
	    (delta[0] || delta[1] || delta[2] || delta[3])) {
		struct mw_late_rss *e = &a->late[a->nlate++];

		e->start = lo;
		e->end = hi;
		for (int m = 0; m < MW_NR_MEMBERS; m++)
			e->rss[m] = delta[m];
		return;
	}
	spread_rss(a, lo, hi, delta);
}

/* The late read of [lo, hi): what the calls there could not place. */
static void late_place(struct mw_account *a, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < a->nlate;) {
		struct mw_late_rss e = a->late[i];

		if (e.end <= lo || e.start >= hi) {
			i++;
			continue;
		}
		a->late[i] = a->late[--a->nlate];
		spread_rss(a, e.start, e.end, e.rss);
	}
}

/* Carve [lo, hi) out of the table for a removal; delta: the RSS it freed,
 * as the kernel counted it during the call, if known. */
static void carve_removed(struct mw_account *a, uint64_t lo, uint64_t hi,
			  const __s64 *delta, struct mw_pieces *p)
{
	late_drop(a, lo, hi);
	a->model.split_settles = delta != NULL;
	model_carve(&a->model, lo, hi, p);
	a->model.split_settles = false;
}

static void remove_range(struct mw_account *a, uint64_t lo, uint64_t hi,
			 const __s64 delta[MW_NR_MEMBERS])
{
	struct mw_pieces p = { 0 };

	carve_removed(a, lo, hi, delta, &p);
	if (delta) {
		settle_removed(&p, delta);
		settled(&a->model, &p);
	}
	model_bury_all(&a->model, &p);
}

/*
 * mmap over mapped memory (MAP_FIXED) zaps what it replaces and may then
 * populate the new mapping (MAP_POPULATE, MAP_LOCKED); rss_delta is the sum.
 * A net loss is what the replaced pieces held (settled on them, not charged
 * to the new mapping); a net gain leaves them what the table gave them, and
 * the new mapping gets the gain plus that.
 */
static void replace_range(struct mw_account *a, uint64_t lo, uint64_t hi,
			  const __s64 delta[MW_NR_MEMBERS], __s64 gained[MW_NR_MEMBERS])
{
	struct mw_pieces p = { 0 };
	__s64 lost[MW_NR_MEMBERS];

	model_carve(&a->model, lo, hi, &p);
	for (int k = 0; k < MW_NR_MEMBERS; k++) {
		int64_t had = 0;

		for (size_t i = 0; i < p.n; i++)
			had += p.v[i]->rss[k];
		lost[k] = delta[k] <= 0 ? delta[k] : -had;
		gained[k] = delta[k] > 0 ? delta[k] + had : 0;
	}
	settle_removed(&p, lost);
	model_bury_all(&a->model, &p);
}

/* ---- structural records ------------------------------------------------ */

/*
 * munmap: the range is gone, except what the kernel showed mapped in it when
 * the call returned (vmas[]).  That was mapped by another thread after this
 * unmap, and its record may already have been applied, taking over what the
 * table still held here: keep it, but take back the RSS this unmap freed that
 * no removed piece accounts for.
 */
static void remove_unmapped(struct mw_account *a, const struct mw_op_rec *r)
{
	struct mw_pieces p = { 0 }, gone = { 0 };
	uint32_t n = MW_MIN(r->nr_vmas, (uint32_t)MW_MAX_VMAS);
	struct mw_mapping *remapped = NULL;
	__s64 left[MW_NR_MEMBERS];

	carve_removed(a, r->start, r->end, r->rss_delta, &p);
	gone.kept_left = p.kept_left;
	gone.kept_right = p.kept_right;
	for (size_t i = 0; i < p.n; i++) {
		struct mw_mapping *mp = p.v[i];
		bool inside = false;

		for (uint32_t k = 0; k < n; k++)
			inside |= mp->start >= r->vmas[k].start && mp->end <= r->vmas[k].end;
		if (inside) {
			mp->settling = false;	/* not settled here: an estimate */
			model_place(&a->model, mp);
			remapped = mp;
			continue;
		}
		if (gone.n == gone.cap) {
			gone.cap = gone.cap ? gone.cap * 2 : 8;
			gone.v = mw_xrealloc(gone.v, gone.cap, sizeof(*gone.v));
		}
		gone.v[gone.n++] = mp;
	}
	free(p.v);
	memcpy(left, r->rss_delta, sizeof(left));
	if (remapped) {
		for (int m = 0; m < MW_NR_MEMBERS; m++) {
			int64_t had = 0;

			for (size_t i = 0; i < gone.n; i++)
				had += gone.v[i]->rss[m];
			if (m != MW_SWAP && -left[m] > had) {
				left[m] -= mapping_take_rss(remapped, m, left[m] + had);
			}
		}
	}
	settle_removed(&gone, left);
	settled(&a->model, &gone);
	model_bury_all(&a->model, &gone);
}

static void vma_state_from_bpf(const struct mw_op_rec *r, uint32_t i,
			       struct mw_vma_state *v)
{
	const struct mw_vma *k = &r->vmas[i];

	memset(v, 0, sizeof(*v));
	v->start = k->start;
	v->end = k->end;
	v->flags = k->flags;
	v->pgoff = k->pgoff << mw_page_shift;
	v->ino = k->ino;
	/* Kernel dev_t: 12 bits major, 20 bits minor. */
	v->dev_major = k->dev >> 20;
	v->dev_minor = k->dev & 0xfffff;
	v->has_file = k->vflags & MW_VMA_FILE;
	v->deleted = k->vflags & MW_VMA_DELETED;
	/* A damaged record's path may not end inside its slot. */
	if (v->has_file && i < r->nr_paths && memchr(r->paths[i], '\0', MW_PATH_LEN))
		v->path = r->paths[i];
	/* Files that name themselves on the kernel's internal shm mount
	 * ("/dev/zero" of MAP_SHARED|MAP_ANONYMOUS, "/memfd:x", "/SYSV...")
	 * were never linked anywhere: /proc shows them "(deleted)", and they
	 * are shmem.  Known here, no /proc re-read is needed to say so (one
	 * taken while the process runs ahead can drop a mapping it still
	 * reports RSS for). */
	if ((k->vflags & MW_VMA_PSEUDO) && v->path && v->path[0] == '/')
		v->deleted = true;
}

/* A part of the layout owed since ts (the first time: 0 means none). */
static void owe_since(uint64_t *since, uint64_t ts)
{
	if (!*since)
		*since = ts ? ts : 1;
}

/* ... and not in by now: re-read from /proc. */
static void owed_overdue(struct mw_account *a, uint64_t *since, uint64_t now)
{
	if (*since && now > *since + MW_LATE_READ_NS) {
		*since = 0;
		a->need_resync = true;
	}
}

static void set_reported_vmas(struct mw_account *a, const struct mw_op_rec *r,
			      uint32_t len)
{
	uint32_t n = MW_MIN(r->nr_vmas, (uint32_t)MW_MAX_VMAS);
	uint32_t have_paths = len <= offsetof(struct mw_op_rec, paths) ? 0 :
		(len - offsetof(struct mw_op_rec, paths)) / MW_PATH_LEN;
	struct mw_op_rec tmp;
	const struct mw_op_rec *use = r;

	if (have_paths < r->nr_paths) {	/* defensive: short record */
		memcpy(&tmp, r, MW_MIN((size_t)len, sizeof(tmp)));
		tmp.nr_paths = have_paths;
		use = &tmp;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct mw_vma_state v;
		struct mw_mapping *mp;

		vma_state_from_bpf(use, i, &v);
		mp = model_set_vma(&a->model, &v);
		/* /proc has the full name; pseudo files of shmem ("/dev/zero",
		 * "/memfd:x", "/SYSV...") are named right already. */
		if (mp && v.has_file && ((use->vmas[i].vflags & MW_VMA_PATH_TRUNC) ||
					 ((use->vmas[i].vflags & MW_VMA_PSEUDO) &&
					  mp->kind != MW_K_SHMEM)))
			a->need_resync = true;
	}
	/* A late read cut short: its rest a while later (account.h). */
	if ((r->opflags & MW_OPF_WALK_SHORT) && r->op == MW_OP_REWALK)
		owe_since(&a->short_ts, r->hdr.ts);
	else if (r->opflags & MW_OPF_WALK_SHORT)
		a->need_resync = true;
	/* The kernel reads a range it found locked at the process's next
	 * event (MW_OP_REWALK): until then the table is behind there. */
	if (r->opflags & MW_OPF_FIND_BUSY)
		owe_since(&a->busy_ts, r->hdr.ts);
}


static void apply_mremap(struct mw_account *a, const struct mw_op_rec *r,
			 uint32_t len)
{
	uint64_t old = r->start2, old_end = r->end2, new = r->start, new_end = r->end;
	uint64_t keep = MW_MIN(old_end - old, new_end - new);
	struct mw_pieces moved = { 0 };

	/* No kernel range wraps (a damaged record): moving by one would
	 * wrap mappings around the address space. */
	if (old_end < old || new_end < new) {
		a->need_resync = true;
		return;
	}

	/* The pages move with the mapping, also under MREMAP_DONTUNMAP: the
	 * old range stays mapped but empty, and comes back from vmas[]. */
	if (old_end > old) {
		/* The shrunk-off tail is gone, with the RSS the call freed. */
		if (old + keep < old_end)
			remove_range(a, old + keep, old_end, r->rss_delta);
		model_carve(&a->model, old, old + keep, &moved);
	}
	if (new != old && (r->args[3] & MREMAP_FIXED_FLAG))
		remove_range(a, new, new_end, NULL);	/* what the target held */
	for (size_t i = 0; i < moved.n; i++) {
		struct mw_mapping *mp = moved.v[i];

		mp->start += new - old;
		mp->end += new - old;
		model_place(&a->model, mp);
	}
	free(moved.v);
	set_reported_vmas(a, r, len);
}

/*
 * The kernel mapped its [uprobes] page (bpf/fault.bpf.h note_xol): the
 * mapping is memwatch's own.  Right after a marker of the same thread it
 * belongs to that marker's boundary: the hit maps it before the program's
 * next instruction, so the phase (or iteration) the hit began starts with
 * it, VM and the page the step faulted in, as the program sees it.
 */
static void apply_xol(struct mw_account *a, const struct mw_op_rec *r)
{
	struct mw_vma_state v = { .start = r->start, .end = r->end, .path = "[uprobes]" };
	uint64_t size = r->end > r->start ? r->end - r->start : 0;
	struct mw_mapping *mp;

	if (r->nr_vmas)
		v.flags = r->vmas[0].flags;
	/* There before tracing began (another tracer's uprobes): not ours. */
	mp = model_find(&a->model, r->start);
	if (mp && mp->phase < 0 && !mp->observer)
		return;
	mp = model_set_vma(&a->model, &v);
	if (!mp)
		return;
	mp->observer = true;
	model_classify(&a->model, mp);
	a->obs_start = r->start;
	a->obs_vm = size;
	if (a->umark_tid && a->umark_tid == r->hdr.tid) {
		struct mw_point *at = NULL;

		if (a->umark_kind == MW_MARK_PHASE && a->phases.n) {
			a->obs_phase = (int)a->phases.n - 1;
			a->phases.v[a->obs_phase].observer_vm = size;
			at = &a->phases.v[a->obs_phase].start;
		} else if (a->umark_kind == MW_MARK_ITER && a->phases.nit) {
			a->phases.it[a->phases.nit - 1].observer_vm = size;
			at = &a->phases.it[a->phases.nit - 1].start;
		}
		if (at) {
			at->vm += size;
			at->rss[MW_FILE] += mw_page_size();	/* the step's fault */
		}
	}
	a->umark_tid = 0;
}

static void apply_vmgrow(struct mw_account *a, const struct mw_op_rec *r)
{
	struct mw_mapping *mp = model_lower_bound(&a->model, r->start), *below;

	if (r->opflags & MW_OPF_XOL) {
		apply_xol(a, r);
		return;
	}

	/* The stack VMA just above the faulting address grew down to it. */
	below = mp ? model_prev(mp) : NULL;
	if (mp && mp->start > r->start &&
	    (mp->flags & MW_VM_GROWSDOWN || mp->kind == MW_K_STACK) &&
	    (!below || below->end <= r->start)) {
		model_grow_down(&a->model, mp, r->start);
		return;
	}
	a->need_resync = true;
}

static void debug_op(const struct mw_op_rec *r)
{
	if (mw_verbose < 3)
		return;
	mw_dbg("op %u seq %u tid %u [%llx,%llx) [%llx,%llx) ret %llx args %llx %llx %llx %llx opflags %x vmas %u rss %lld/%lld tvm %llu",
	       r->op, r->hdr.seq, r->hdr.tid, (unsigned long long)r->start, (unsigned long long)r->end,
	       (unsigned long long)r->start2, (unsigned long long)r->end2,
	       (unsigned long long)r->ret, (unsigned long long)r->args[0],
	       (unsigned long long)r->args[1], (unsigned long long)r->args[2],
	       (unsigned long long)r->args[3], r->opflags, r->nr_vmas,
	       (long long)r->rss_delta[MW_ANON], (long long)r->rss_delta[MW_FILE],
	       (unsigned long long)r->total_vm);
	for (uint32_t i = 0; i < r->nr_vmas && i < MW_MAX_VMAS; i++)
		mw_dbg("   vma [%llx,%llx) flags %llx", (unsigned long long)r->vmas[i].start,
		       (unsigned long long)r->vmas[i].end, (unsigned long long)r->vmas[i].flags);
}

static void apply_op(struct mw_account *a, const struct mw_op_rec *r, uint32_t len)
{
	struct mw_model *m = &a->model;
	struct mw_mapping *mp;
	struct mw_op_rec cut;
	size_t vmas_in;
	__s64 gained[MW_NR_MEMBERS];

	if (len < offsetof(struct mw_op_rec, vmas))
		return;
	/* A record cut short of the VMAs it claims (a damaged recording):
	 * use a copy that claims only those it carries. */
	vmas_in = (len - offsetof(struct mw_op_rec, vmas)) / sizeof(struct mw_vma);
	if (MW_MIN(r->nr_vmas, (uint32_t)MW_MAX_VMAS) > vmas_in) {
		memset(&cut, 0, sizeof(cut));
		memcpy(&cut, r, len);
		cut.nr_vmas = (uint32_t)vmas_in;
		r = &cut;
	}
	debug_op(r);
	/* Heap and stack move with brk: the kinds near them follow. */
	if (r->start_brk)
		model_set_brk(m, r->start_brk, r->brk, r->start_stack);
	switch (r->op) {
	case MW_OP_MMAP:
		/* Only MAP_FIXED replaces what was there.  Anything else the
		 * table holds in the range is this very mapping seen first by
		 * a /proc re-read, or one whose munmap record (another
		 * thread's) comes later: set_vma keeps its statistics, and
		 * remove_unmapped() takes them back off. */
		if (r->args[3] & MAP_FIXED_FLAG)
			replace_range(a, r->start, r->end, r->rss_delta, gained);
		else
			memcpy(gained, r->rss_delta, sizeof(gained));
		set_reported_vmas(a, r, len);
		mp = mapping_at(a, r->start);
		if (mp)
			mp->requested += r->args[1];
		/* Only successful calls come as records: count what was asked. */
		hists_mmap(&a->hists, a->model.phase, r->args[1]);
		spread_call_rss(a, r, r->start, r->end, gained);	/* MAP_POPULATE */
		break;
	case MW_OP_MUNMAP:
		remove_unmapped(a, r);
		break;
	case MW_OP_SHMDT:
		remove_range(a, r->start, r->end, r->rss_delta);
		break;
	case MW_OP_MREMAP:
		apply_mremap(a, r, len);
		break;
	case MW_OP_BRK:
		if (r->brk > r->args[1]) {
			set_reported_vmas(a, r, len);
			mp = mapping_at(a, r->start ? r->start : r->start_brk);
			if (mp && r->end > r->start)
				mp->requested += r->end - r->start;
			spread_call_rss(a, r, r->start, r->end, r->rss_delta);
		} else {
			remove_range(a, r->start, r->end, r->rss_delta);
		}
		break;
	case MW_OP_VMGROW:
		apply_vmgrow(a, r);
		break;
	case MW_OP_REWALK:
		/* What an earlier call mapped or changed in the range, read
		 * late: the VMAs there now.  Every range noted before it is in
		 * it (bpf/syscalls.bpf.h rewalk_note()) unless it found the mm
		 * locked again. */
		if (!(r->opflags & MW_OPF_FIND_BUSY) && a->busy_ts) {
			a->busy_ts = 0;
			a->late_reads++;
		}
		set_reported_vmas(a, r, len);
		late_place(a, r->start, r->end);
		break;
	case MW_OP_PRCTL_VMA:
		a->need_resync = true;	/* anon names come from /proc */
		/* fallthrough */
	default:	/* mprotect, madvise, mlock, mseal, shmat */
		set_reported_vmas(a, r, len);
		spread_call_rss(a, r, r->start, r->end, r->rss_delta);
		break;
	}
	account_late_overdue(a, r->hdr.ts);
	/* Behind where a late read is owed: checked once it is in.  A call
	 * older than the layout read from /proc says nothing of it: the
	 * layout may hold what later calls did (a re-read while the loader
	 * was behind made the next records mismatch, and asked for another). */
	if (!account_layout_owed(a) && r->hdr.ts >= a->seed_ts &&
	    model_vm_bytes(m) != (r->total_vm << mw_page_shift)) {
		mw_dbg("VM mismatch after op %u seq %u: model %llu kernel %llu", r->op, r->hdr.seq,
		       (unsigned long long)model_vm_bytes(m),
		       (unsigned long long)(r->total_vm << mw_page_shift));
		a->vm_mismatches++;
		a->need_resync = true;
	}
}

/* Locked and pinned pages (bpf/memwatch.h struct mw_pin) into a point. */
static void point_pin(struct mw_point *at, const struct mw_pin *pin)
{
	at->locked = pin->locked << mw_page_shift;
	at->pinned = pin->pinned << mw_page_shift;
	at->locked_peak = pin->locked_peak << mw_page_shift;
	at->pinned_peak = pin->pinned_peak << mw_page_shift;
}

static const char *mark_name(const struct mw_account *a, const struct mw_mark_rec *mk)
{
	if (mk->name[0] || !mk->id)
		return mk->name;
	for (size_t i = 0; i < a->nmarknames; i++)
		if (a->marknames[i].id == mk->id)
			return a->marknames[i].name;
	return "";
}

static void apply_mark(struct mw_account *a, const struct mw_mark_rec *mk)
{
	struct mw_point at = {
		.ts = mk->hdr.ts,
		.vm = mk->total_vm << mw_page_shift,
		.device_vm = model_kind_vm(&a->model, MW_K_DEVICE),
		.faults = mk->faults,
		.mapped = mk->mapped_bytes,
		.unmapped = mk->unmapped_bytes,
	};
	char name[MW_MARK_NAME_LEN];

	memcpy(at.rss, mk->rss, sizeof(at.rss));
	for (int k = 0; k < MW_FK_NR; k++)
		at.fk[k] = (int64_t)mk->fk[k];
	point_pin(&at, &mk->pin);
	/* A boundary made in the process (uprobe, USDT): the [uprobes] page,
	 * if this hit maps it, comes next from the same thread (apply_xol);
	 * the loader's own marks come from its thread, never the process's. */
	if (mk->kind == MW_MARK_PHASE || mk->kind == MW_MARK_ITER) {
		a->umark_tid = mk->hdr.tid;
		a->umark_kind = mk->kind;
	}
	snprintf(name, sizeof(name), "%.*s", (int)sizeof(name) - 1, mark_name(a, mk));
	phases_mark(&a->phases, &a->model, mk->kind, name, &at,
		    mk->phase_vm_peak << mw_page_shift, mk->phase_rss_peak);
}

/* The end of the trace as a point, from the final kernel aggregate. */
static void finish_phases(struct mw_account *a)
{
	const struct mw_proc *k = &a->kstate;
	struct mw_point at = {
		.ts = a->end_ns,
		.vm = k->total_vm << mw_page_shift,
		.device_vm = model_kind_vm(&a->model, MW_K_DEVICE),
		.faults = k->faults + k->kfaults,
		.mapped = k->mapped_bytes,
		.unmapped = k->unmapped_bytes,
	};

	memcpy(at.rss, k->rss, sizeof(at.rss));
	for (int i = 0; i < MW_FK_NR; i++)
		at.fk[i] = (int64_t)k->fk[i];
	point_pin(&at, &k->pin);
	phases_finish(&a->phases, &a->model, &at, k->phase_vm_peak << mw_page_shift,
		      k->phase_rss_peak);
}

/* Structural records waited for no longer, lost: due by seq_seen due or
 * waited for since before ts. */
static void seq_expire(struct mw_account *a, uint64_t due, uint64_t ts)
{
	for (size_t i = 0; i < a->nseq_wait;) {
		if (a->seq_wait[i].due > due && a->seq_wait[i].ts >= ts) {
			i++;
			continue;
		}
		a->seq_gaps++;
		a->need_resync = true;
		a->seq_wait[i] = a->seq_wait[--a->nseq_wait];
	}
}

/*
 * The kernel numbers structural records a few instructions before it sends
 * them, so two CPUs can send theirs in the other order (stress-ng
 * --madvise's eight threads: 35-98 times in 5 s).  A number skipped is
 * waited for through MW_SEQ_LATE more records before it counts as lost and
 * the layout is re-read; more than the wait list holds count at once.
 */
#define MW_SEQ_LATE	64

static void note_seq(struct mw_account *a, uint32_t seq, uint64_t ts)
{
	a->seq_seen++;
	if (!a->seq_known) {
		a->seq_known = true;
		a->last_seq = seq;
		return;
	}
	if (seq > a->last_seq) {
		uint32_t skipped = seq - a->last_seq - 1;
		uint32_t far = skipped > MW_SEQ_LATE ? skipped - MW_SEQ_LATE : 0;

		for (uint32_t s = a->last_seq + 1 + far; s < seq; s++) {
			if (a->nseq_wait == MW_ARRAY_SIZE(a->seq_wait)) {
				far++;
				continue;
			}
			a->seq_wait[a->nseq_wait++] = (struct mw_seq_wait){
				.seq = s, .due = a->seq_seen + MW_SEQ_LATE, .ts = ts };
		}
		if (far) {
			a->seq_gaps += far;
			a->need_resync = true;
		}
		a->last_seq = seq;
	} else {
		for (size_t i = 0; i < a->nseq_wait; i++) {
			if (a->seq_wait[i].seq == seq) {
				a->seq_wait[i] = a->seq_wait[--a->nseq_wait];
				a->seq_late++;
				break;
			}
		}
	}
	seq_expire(a, a->seq_seen, 0);
}

void account_late_overdue(struct mw_account *a, uint64_t now)
{
	owed_overdue(a, &a->busy_ts, now);
	owed_overdue(a, &a->short_ts, now);
	if (a->nseq_wait && now > MW_LATE_READ_NS)
		seq_expire(a, 0, now - MW_LATE_READ_NS);
}

/*
 * Another process's call changed RSS inside the ranges it named
 * (bpf/remote.bpf.h): each range gets its share by size, and the mappings
 * there are measured again when quiet unless one range in one mapping took
 * it all (spread_rss).
 */
static void apply_remote(struct mw_account *a, const struct mw_remote_rec *r)
{
	uint32_t n = MW_MIN(r->nr_ranges, (uint32_t)MW_REMOTE_RANGES);
	uint64_t total = 0, done = 0;
	__s64 given[MW_NR_MEMBERS] = { 0 };
	struct mw_mapping *mp;

	a->remote_calls++;
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		if (m != MW_SWAP)
			a->remote_rss += r->rss_delta[m];
	for (uint32_t i = 0; i < n; i++)
		if (r->ranges[i].end > r->ranges[i].start)
			total += r->ranges[i].end - r->ranges[i].start;
	if (!total || (r->flags & MW_REMOTE_F_MORE)) {
		/* Ranges not all known: where it went, only a measure says. */
		for (int m = 0; m < MW_NR_MEMBERS; m++)
			a->lost_attr[m] += r->rss_delta[m];
		account_remeasure(a);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t lo = r->ranges[i].start, hi = r->ranges[i].end;
		__s64 part[MW_NR_MEMBERS];

		if (hi <= lo)
			continue;
		done += hi - lo;
		for (int m = 0; m < MW_NR_MEMBERS; m++) {
			/* The last range takes what rounding left. */
			part[m] = done == total ? r->rss_delta[m] - given[m] :
				  mw_scale(r->rss_delta[m], hi - lo, total);
			given[m] += part[m];
		}
		spread_rss(a, lo, hi, part);
		if (n > 1)
			for (mp = model_lower_bound(&a->model, lo); mp && mp->start < hi;
			     mp = model_next(mp))
				model_set_recheck(&a->model, mp, true);
	}
}

void account_remeasure(struct mw_account *a)
{
	struct mw_mapping *mp;

	a->remeasures++;
	if (mw_verbose >= 3)
		mw_dbg("  remeasure all");
	model_for_each(mp, &a->model)
		model_set_recheck(&a->model, mp, true);
}

static void apply_bpf(struct mw_account *a, const void *data, uint32_t len)
{
	const struct mw_rec_hdr *h = data;
	const struct mw_task_rec *t = data;

	if (len < sizeof(*h))
		return;
	a->model.now_ns = h->ts;
	/* A call or an exec of the marker's thread comes between: the page
	 * is not that hit's (apply_xol).  Deltas and stacks do not count. */
	if (h->tid == a->umark_tid &&
	    (h->type == MW_REC_EXEC ||
	     (h->type == MW_REC_OP && len >= offsetof(struct mw_op_rec, vmas) &&
	      !(((const struct mw_op_rec *)data)->opflags & MW_OPF_XOL))))
		a->umark_tid = 0;
	switch (h->type) {
	case MW_REC_DELTAS:
		if (len >= offsetof(struct mw_deltas_rec, slots))
			apply_deltas(a, data, len);
		break;
	case MW_REC_OP:
		note_seq(a, h->seq, h->ts);
		apply_op(a, data, len);
		if (len >= offsetof(struct mw_op_rec, vmas))
			callsites_op(&a->sites, data);
		break;
	case MW_REC_STACK:
		callsites_stack(&a->sites, &a->model, data, len);
		break;
	case MW_REC_PYSTACK:
		callsites_pystack(&a->sites, data, len);
		break;
	case MW_REC_PYCODE:
		callsites_pycode_rec(&a->sites, data, len);
		break;
	case MW_REC_REMOTE:
		note_seq(a, h->seq, h->ts);
		if (len >= sizeof(struct mw_remote_rec))
			apply_remote(a, data);
		break;
	case MW_REC_COALESCED:
		/* Calls the kernel counted but did not send: the layout is
		 * re-read, the totals were never in doubt. */
		if (len >= sizeof(struct mw_coalesced_rec)) {
			a->coalesced_windows++;
			a->need_resync = true;
		}
		break;
	case MW_REC_EXEC:
		note_seq(a, h->seq, h->ts);
		if (len < sizeof(*t))
			break;
		/* A new address space: the old one is gone, the capture side
		 * follows with a MW_SEED_EXEC of the new layout. */
		remove_range(a, 0, UINT64_MAX, NULL);
		callsites_exec(&a->sites);
		memcpy(a->comm, t->comm, sizeof(a->comm));
		a->comm[sizeof(a->comm) - 1] = 0;
		a->execs++;
		break;
	case MW_REC_MARK:
		/* BPF gives markers no structural number (0, mark.bpf.h);
		 * streams that numbered them still count. */
		if (h->seq)
			note_seq(a, h->seq, h->ts);
		if (len >= sizeof(struct mw_mark_rec))
			apply_mark(a, data);
		break;
	case MW_REC_EXIT:
		note_seq(a, h->seq, h->ts);
		a->exited = true;
		a->exit_ns = h->ts;
		if (len >= sizeof(*t) && a->wait_status < 0)
			a->wait_status = t->exit_code;
		break;
	}
}

/* ---- seeds from /proc -------------------------------------------------- */

static void vma_state_from_proc(const struct pm_vma *p, struct mw_vma_state *v)
{
	memset(v, 0, sizeof(*v));
	v->start = p->start;
	v->end = p->end;
	v->flags = mw_perms_to_flags(p->perms) | p->vm_flags;
	v->flags_known = MW_VM_READ | MW_VM_WRITE | MW_VM_EXEC | MW_VM_SHARED |
			 MW_VM_MAYSHARE;
	if (p->has_vm_flags)
		v->flags_known |= MW_VM_PFNMAP | MW_VM_IO | MW_VM_MIXEDMAP | MW_VM_LOCKED;
	v->pgoff = p->pgoff;
	v->ino = p->ino;
	v->dev_major = p->dev_major;
	v->dev_minor = p->dev_minor;
	v->deleted = p->deleted;
	v->has_file = p->path && p->path[0] == '/';
	/* [heap] and [stack] are derived from brk and start_stack, not
	 * stored: the same VMA can stop being either. */
	if (p->path && p->path[0] && strcmp(p->path, "[heap]") && strcmp(p->path, "[stack]"))
		v->path = p->path;
	if (p->path && strcmp(p->path, "[stack]") == 0)
		v->flags |= MW_VM_GROWSDOWN;
}

static void seed_rss(struct mw_mapping *mp, const struct pm_vma *p)
{
	int other = mp->kind == MW_K_SHMEM ? MW_SHMEM : MW_FILE;

	memset(mp->rss, 0, sizeof(mp->rss));
	mp->rss[MW_ANON] = p->anon;
	mp->rss[other] = p->rss > p->anon ? p->rss - p->anon : 0;
	mp->rss[MW_SWAP] = p->swap;
	mp->rss_peak = mapping_rss_total(mp);
}

/*
 * The end measure: smaps (and smaps_rollup) read at s->ts, once the table
 * had caught up.  Each VMA's counters go to the mapping of the same range;
 * nothing else changes.  A VMA with no such mapping (the table is wrong
 * there: the RSS check says so) is counted, not matched.
 */
static void apply_measure(struct mw_account *a, const struct mw_seed *s, const char *text)
{
	struct pm_maps pm = { 0 };

	if (procfs_parse_smaps(text, s->maps_len, &pm))
		return;
	memset(&a->smaps, 0, sizeof(a->smaps));
	a->smaps.ts = s->ts;
	for (size_t i = 0; i < pm.n; i++) {
		const struct pm_vma *v = &pm.v[i];
		struct mw_smaps_meas sm = {
			.start = v->start, .end = v->end, .pss = v->pss,
			.pss_dirty = v->pss_dirty, .swap = v->swap, .swap_pss = v->swap_pss,
			.anon_huge = v->anon_huge, .locked = v->locked,
		};
		struct mw_mapping *mp;

		/* smaps_rollup comes last: one "[rollup]" entry, no VMA. */
		if (i == pm.n - 1 && i && v->path && !strcmp(v->path, "[rollup]")) {
			a->smaps.rollup = true;
			a->smaps.pss_anon = v->pss_anon;
			a->smaps.pss_file = v->pss_file;
			a->smaps.pss_shmem = v->pss_shmem;
			break;
		}
		a->smaps.nvmas++;
		a->smaps.sum.pss += sm.pss;
		a->smaps.sum.pss_dirty += sm.pss_dirty;
		a->smaps.sum.swap += sm.swap;
		a->smaps.sum.swap_pss += sm.swap_pss;
		a->smaps.sum.anon_huge += sm.anon_huge;
		a->smaps.sum.locked += sm.locked;
		mp = model_find(&a->model, v->start);
		if (mp && mp->start == v->start && mp->end == v->end) {
			mp->sm = sm;
			a->smaps.matched++;
		}
	}
	procfs_maps_free(&pm);
}

/* Not inlined: a seed carries the whole layout, and scripts/bench/regress
 * leaves its cost out of what a record costs (callgrind --toggle-collect). */
static __attribute__((noinline)) void apply_seed(struct mw_account *a, const struct mw_seed *s,
						 uint32_t len)
{
	struct mw_model *m = &a->model;
	const char *maps = (const char *)(s + 1);
	struct pm_maps pm = { 0 };
	struct mw_mapping *mp;
	uint64_t prev_end = 0;
	int err;

	if (len < sizeof(*s) || (uint64_t)s->maps_len + s->mountinfo_len > len - sizeof(*s))
		return;
	if (s->mode == MW_SEED_MEASURE) {
		apply_measure(a, s, maps);
		return;
	}
	if (!a->start_ns)
		a->start_ns = s->ts;	/* the trace begins with its first seed */
	if (!a->pid)
		a->pid = s->pid;
	m->now_ns = s->ts;
	a->seed_ts = s->ts;
	/* Not model_set_brk(): every kind is derived again below. */
	m->start_brk = s->start_brk;
	m->brk = s->brk;
	m->start_stack = s->start_stack;
	if (s->comm[0]) {
		memcpy(a->comm, s->comm, sizeof(a->comm));
		a->comm[sizeof(a->comm) - 1] = 0;
	}
	if (s->mountinfo_len) {
		free(m->shmem_devs);
		m->shmem_devs = NULL;
		m->nshmem_devs = 0;
		mw_shmem_devs_from_mountinfo(maps + s->maps_len, s->mountinfo_len,
					     &m->shmem_devs, &m->nshmem_devs);
	}
	if (s->mode == MW_SEED_ATTACH)
		err = procfs_parse_smaps(maps, s->maps_len, &pm);
	else
		err = procfs_parse_maps(maps, s->maps_len, &pm);
	if (err)
		return;
	if (s->mode != MW_SEED_RESYNC)
		remove_range(a, 0, UINT64_MAX, NULL);
	else
		a->resyncs++;
	for (size_t i = 0; i < pm.n; i++) {
		struct mw_vma_state v;

		/* Whatever the table holds in a gap of /proc's is gone. */
		if (pm.v[i].start > prev_end)
			remove_range(a, prev_end, pm.v[i].start, NULL);
		prev_end = pm.v[i].end;
		vma_state_from_proc(&pm.v[i], &v);
		mp = model_set_vma(m, &v);
		if (mp && s->mode == MW_SEED_ATTACH) {
			seed_rss(mp, &pm.v[i]);
			mp->phase = -1;		/* there before tracing began */
		}
	}
	if (pm.n && prev_end < UINT64_MAX)
		remove_range(a, prev_end, UINT64_MAX, NULL);
	model_for_each(mp, m)
		model_classify(m, mp);
	procfs_maps_free(&pm);
	a->need_resync = false;
	a->busy_ts = a->short_ts = 0;
}

/* ---- entry point ------------------------------------------------------- */

static void apply_state(struct mw_account *a, const struct mw_state *s)
{
	a->kstate = s->proc;
	a->have_kstate = true;
	memcpy(a->stats, s->stats, sizeof(a->stats));
	if (!s->final)
		return;
	seq_expire(a, 0, UINT64_MAX);	/* nothing more will come */
	/* Slots never harvested by a structural record. */
	for (int i = 0; i < MW_SLOTS; i++)
		if (s->proc.slots[i].vm_start)
			apply_slot(a, &s->proc.slots[i]);
	memset(a->kstate.slots, 0, sizeof(a->kstate.slots));
}

void account_feed(struct mw_account *a, const struct mw_srec *r)
{
	a->records++;
	switch (r->kind) {
	case MW_S_BPF:
		apply_bpf(a, r->data, r->len);
		break;
	case MW_S_SEED:
		late_drop(a, 0, UINT64_MAX);	/* smaps has it now */
		apply_seed(a, r->data, r->len);
		break;
	case MW_S_STATE:
		if (r->len >= sizeof(struct mw_state))
			apply_state(a, r->data);
		break;
	case MW_S_RECONCILE:
		if (r->len >= sizeof(struct mw_reconcile)) {
			const struct mw_reconcile *rc = r->data;
			struct mw_mapping *mp = model_find(&a->model, rc->start);

			if (mw_verbose >= 3)
				mw_dbg("  reconcile %llx-%llx anon %lld file %lld (was %lld %lld)%s",
				       (unsigned long long)rc->start, (unsigned long long)rc->end,
				       (long long)rc->rss[MW_ANON], (long long)rc->rss[MW_FILE],
				       mp ? (long long)mp->rss[MW_ANON] : -1LL,
				       mp ? (long long)mp->rss[MW_FILE] : -1LL,
				       mp && mp->start == rc->start && mp->end == rc->end ? "" : " (no mapping)");
			if (!mp || mp->start != rc->start || mp->end != rc->end)
				break;
			mp->rss[MW_ANON] = rc->rss[MW_ANON];
			mp->rss[MW_FILE] = rc->rss[MW_FILE];
			mp->rss[MW_SHMEM] = rc->rss[MW_SHMEM];
			mapping_note_peak(mp, mapping_rss_total(mp));
			model_set_recheck(&a->model, mp, false);
			mp->rss_estimated = false;
			a->reconciled++;
		}
		break;
	case MW_S_MARKNAME:
		if (r->len >= sizeof(struct mw_markname)) {
			a->marknames = mw_xrealloc(a->marknames, a->nmarknames + 1,
						   sizeof(*a->marknames));
			memcpy(&a->marknames[a->nmarknames], r->data, sizeof(*a->marknames));
			a->marknames[a->nmarknames++].name[MW_MARK_NAME_LEN - 1] = 0;
		}
		break;
	case MW_S_UNLINKED:
		if (r->len >= sizeof(struct mw_unlinked)) {
			const struct mw_unlinked *u = r->data;
			struct mw_mapping *mp;

			model_for_each(mp, &a->model) {
				if (mp->has_file && mp->ino == u->ino &&
				    mp->dev_major == u->dev_major && mp->dev_minor == u->dev_minor)
					mp->deleted = true;
			}
		}
		break;
	case MW_S_SYM:
		callsites_sym(&a->sites, r->data, r->len);
		break;
	case MW_S_FRAMES:
		callsites_frames(&a->sites, r->data, r->len);
		break;
	case MW_S_PYCODE:
		callsites_pycode(&a->sites, r->data, r->len);
		break;
	case MW_S_REMEASURE:
		if (r->len >= sizeof(struct mw_remeasure))
			account_remeasure(a);
		break;
	case MW_S_DRM:
		if (r->len >= sizeof(struct mw_drm_mem)) {
			const struct mw_drm_mem *d = r->data;
			size_t n = MW_MIN((size_t)d->nclients,
					  (r->len - sizeof(*d)) / sizeof(d->c[0]));

			free(a->drm);
			a->drm = n ? mw_xcalloc(n, sizeof(*a->drm)) : NULL;
			a->ndrm = n;
			for (size_t i = 0; i < n; i++) {
				a->drm[i] = d->c[i];
				/* A damaged record: names end, counts stay in range. */
				a->drm[i].driver[MW_DRM_NAME - 1] = 0;
				a->drm[i].pdev[MW_DRM_NAME - 1] = 0;
				a->drm[i].nregions = MW_MIN(a->drm[i].nregions, MW_DRM_REGIONS);
				for (size_t k = 0; k < MW_DRM_REGIONS; k++)
					a->drm[i].r[k].name[MW_DRM_NAME - 1] = 0;
			}
		}
		break;
	case MW_S_HEAPFREE:
		if (r->len >= sizeof(struct mw_heapfree)) {
			const struct mw_heapfree *h = r->data;
			const struct mw_mapping *mp = model_find(&a->model, h->mapping);
			struct mw_arena_free af = {
				.mapping = h->mapping, .main = h->main != 0,
				.free_bytes = h->free_bytes, .free_resident = h->free_resident,
				.trim_resident = MW_MIN(h->trim_resident, h->free_resident),
				.rss_walk = mp && mp->start == h->mapping ? mapping_rss_total(mp) : 0,
			};

			phases_arena(&a->phases, h->err < 0 ? h->err : 0, &af);
		}
		break;
	case MW_S_END:
		if (r->len >= sizeof(struct mw_end)) {
			const struct mw_end *e = r->data;

			a->behind_ns = e->behind_ns;
			a->unapplied = e->unapplied;

			a->ended = true;
			/* An exit ends the trace when it happened, not when we
			 * noticed. */
			a->end_ns = a->exit_ns && e->how == MW_END_EXITED ?
				    MW_MIN(a->exit_ns, e->ts) : e->ts;
			finish_phases(a);
			if (e->how == MW_END_EXITED)
				a->exited = true;
			if (e->wait_status >= 0)
				a->wait_status = e->wait_status;
		}
		break;
	}
}
