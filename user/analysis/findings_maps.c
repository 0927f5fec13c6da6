// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * findings_maps.c — the detectors that read mappings as they stand at the
 * end: released but kept (sized, where malloc's arenas were walked, by what
 * they hold free), reserved never touched, rounding waste, locked or
 * pinned memory (with the mappings locked at the end).  Pure code:
 * tests/unit/test_findings.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/account.h"
#include "analysis/classify.h"
#include "analysis/findings.h"
#include "analysis/findings_impl.h"
#include "util.h"

/* ---- released but kept -------------------------------------------------------- */

bool findings_release_name(const char *name)
{
	static const char *const words[] = { "release", "free", "unload", "teardown", "cleanup",
					     "clean_up", "destroy", "shutdown", "dealloc", "close",
					     "drop", "reset" };

	for (size_t i = 0; i < MW_ARRAY_SIZE(words); i++)
		if (fi_has_word(name, words[i]))
			return true;
	return false;
}

/* Code and shared libraries keep their pages by design: not "kept". */
static bool kept_counts(const struct mw_mapping *mp)
{
	const char *base;

	if (mp->flags & MW_VM_EXEC)
		return false;
	switch (mp->kind) {
	case MW_K_ANON: case MW_K_HEAP: case MW_K_SHMEM:
		return true;
	case MW_K_FILE:
		base = mp->path ? strrchr(mp->path, '/') : NULL;
		return !(base && strstr(base, ".so"));
	default:
		return false;
	}
}

static const char *kept_why(const struct mw_mapping *mp)
{
	switch (mp->kind) {
	case MW_K_HEAP: return "heap top pinned or free chunks never trimmed";
	case MW_K_FILE: return "file pages still mapped";
	case MW_K_SHMEM: return "shared memory still mapped";
	default: return "never unmapped (an arena, a pool, a cache or a window)";
	}
}

static const char *kept_remedy(enum mw_kind k)
{
	switch (k) {
	case MW_K_HEAP:
		return "glibc cannot shrink a heap whose top chunk is in use: malloc_trim(0) after "
		       "the release gives the free pages inside back; allocate long-lived blocks "
		       "first, or let large buffers be mmapped (MALLOC_MMAP_THRESHOLD_)";
	case MW_K_FILE:
		return "munmap the file mapping (or madvise(MADV_DONTNEED) it) once it is no "
		       "longer read";
	case MW_K_SHMEM:
		return "unmap the shared memory and close or unlink what backs it";
	default:
		return "munmap what is no longer needed, or madvise(MADV_DONTNEED) its pages; "
		       "glibc arenas: malloc_trim(0), MALLOC_ARENA_MAX";
	}
}

struct kept {
	const struct mw_mapping *mp;
	int64_t grew;		/* or what malloc holds free in it */
	int64_t trim;		/* arena: of that, what malloc_trim(0) gives back */
	int64_t rss_walk;	/* arena: its RSS when walked */
	bool arena;		/* walked at the release's end: malloc's figure */
};

/* An arena holding less than this free is not named. */
#define MW_KEPT_ARENA_MIN	(64 << 10)

static struct kept *kept_at(struct kept **k, size_t *nk, const struct mw_mapping *mp)
{
	size_t q;

	for (q = 0; q < *nk && (*k)[q].mp != mp; q++)
		;
	if (q == *nk) {
		*k = mw_xrealloc(*k, *nk + 1, sizeof(**k));
		(*k)[(*nk)++] = (struct kept){ .mp = mp };
	}
	return &(*k)[q];
}

/*
 * Where malloc's arenas were walked at the release's end (capture's
 * heapwalk), what they hold free and resident replaces the estimate from
 * RSS: what is still in use there is not kept.
 */
static void kept_arenas(const struct mw_phase *rp, const struct mw_model *m,
			struct kept **k, size_t *nk)
{
	for (size_t i = 0; i < rp->narenas; i++) {
		const struct mw_arena_free *af = &rp->arenas[i];
		const struct mw_mapping *at = model_find(m, af->mapping);
		struct kept *e;

		if (!at || at->start != af->mapping)
			continue;
		e = kept_at(k, nk, at);
		if (!e->arena)
			e->grew = 0;
		e->arena = true;
		e->grew += (int64_t)af->free_resident;
		e->trim += (int64_t)af->trim_resident;
		e->rss_walk = af->rss_walk;
	}
}

void find_kept(const struct mw_account *a, const struct mw_find_opts *o,
	       struct mw_findings *out)
{
	const struct mw_phases *ph = &a->phases;
	const struct mw_model *m = &a->model;
	struct kept *k = NULL;
	size_t nk = 0, r = 0, nkept = 0, narena = 0;
	int64_t total = 0, freed_vm, rss_drop, best = 0, mall = 0, mfree = 0, mtrim = 0;
	enum mw_kind main_kind = MW_K_ANON;
	struct mw_finding *f;
	struct sites acc = { 0 };
	char b[5][32], name[MW_MARK_NAME_LEN];

	/* The last phase named for a release: the program says where it
	 * frees, and a later phase that unmaps (the exit's) must not take its
	 * place (issue 26: ONNX Runtime's "release" left RSS where it was,
	 * and "end" was named instead).  Else the last that gave back, net of
	 * what it mapped, or whose RSS went down: a phase that maps and
	 * unmaps as much (churn) frees nothing. */
	for (size_t i = ph->n; i > 1 && !r; i--)
		if (findings_release_name(ph->v[i - 1].name))
			r = i - 1;
	for (size_t i = ph->n; i > 1 && !r; i--) {
		const struct mw_phase *p = &ph->v[i - 1];
		int64_t gave = (int64_t)(p->end.unmapped - p->start.unmapped) -
			       (int64_t)(p->end.mapped - p->start.mapped);

		if (gave >= o->t[MW_T_KEPT_BYTES] ||
		    point_rss(&p->start) - point_rss(&p->end) >= o->t[MW_T_KEPT_BYTES])
			r = i - 1;
	}
	if (!r)
		return;
	/* What the phases before it (not the implicit "start") grew, still
	 * resident at the end. */
	for (size_t j = 1; j < r; j++) {
		const struct mw_phase *p = &ph->v[j];

		for (size_t t = 0; t < p->ntop; t++) {
			const struct mw_growth *g = &p->top[t];
			struct mw_mapping *at = g->rss_delta > 0 ? model_find(m, g->start) : NULL;

			if (!at || at->kind != g->kind || !kept_counts(at))
				continue;
			kept_at(&k, &nk, at)->grew += g->rss_delta;
		}
	}
	kept_arenas(&ph->v[r], m, &k, &nk);
	/* Still resident at the end: what a later phase gave back is not
	 * kept.  An arena's free pages are what goes first: the RSS it lost
	 * since the walk (a malloc_trim) comes off them. */
	for (size_t q = 0; q < nk; q++) {
		int64_t rss = mapping_rss_total(k[q].mp);

		if (k[q].arena)
			k[q].grew = MW_MAX(0, k[q].grew - MW_MAX(0, k[q].rss_walk - rss));
		k[q].grew = MW_MIN(k[q].grew, rss);
		k[q].trim = MW_MIN(k[q].trim, k[q].grew);
		if (k[q].arena)
			mall += k[q].grew;
	}
	for (size_t q = 0; q < nk; q++) {
		if (k[q].arena ? k[q].grew < MW_KEPT_ARENA_MIN || mall < o->t[MW_T_KEPT_BYTES] :
		    k[q].grew < o->t[MW_T_KEPT_BYTES])
			k[q].grew = 0;
		if (k[q].arena && k[q].grew) {
			mfree += k[q].grew;
			mtrim += k[q].trim;
		}
		total += k[q].grew;
		nkept += k[q].grew > 0;
		narena += k[q].arena && k[q].grew > 0;
		if (k[q].grew > best) {
			best = k[q].grew;
			main_kind = k[q].mp->kind;
		}
	}
	if (!nkept) {
		free(k);
		return;
	}
	for (size_t i = 0; i < nk; i++)
		for (size_t q = i + 1; q < nk; q++)
			if (k[q].grew > k[i].grew) {
				struct kept t = k[i];

				k[i] = k[q];
				k[q] = t;
			}
	freed_vm = (int64_t)(ph->v[r].end.unmapped - ph->v[r].start.unmapped);
	rss_drop = point_rss(&ph->v[r].start) - point_rss(&ph->v[r].end);
	snprintf(name, sizeof(name), "%s", ph->v[r].name);
	for (char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	f = fi_new(out, MW_F_KEPT, MW_SEV_WARNING);
	if (narena) {
		int64_t rest = total - mfree;
		size_t nrest = nkept - narena;
		char more[192] = "";

		if (nrest)
			snprintf(more, sizeof(more), "; %s more that earlier phases faulted in is "
				 "still resident in %zu other mapping%s", fi_hum(rest, b[4]), nrest,
				 nrest > 1 ? "s" : "");
		f->summary = fi_printf("after phase \"%s\" (it unmapped %s, RSS went %s by %s), "
				     "glibc's malloc holds %s free and still resident in %zu "
				     "arena%s, read from its chunks at the phase's end: "
				     "malloc_trim(0) would give back %s%s",
				     name, fi_hum(freed_vm, b[0]), rss_drop >= 0 ? "down" : "up",
				     fi_hum(rss_drop >= 0 ? rss_drop : -rss_drop, b[1]),
				     fi_hum(mfree, b[2]), narena, narena > 1 ? "s" : "",
				     fi_hum(mtrim, b[3]), more);
	} else {
		f->summary = fi_printf("after phase \"%s\" (it unmapped %s, RSS went %s by %s), %s "
				     "that earlier phases faulted in is still resident in %zu "
				     "mapping%s: %s", name, fi_hum(freed_vm, b[0]),
				     rss_drop >= 0 ? "down" : "up",
				     fi_hum(rss_drop >= 0 ? rss_drop : -rss_drop, b[1]),
				     fi_hum(total, b[2]), nkept, nkept > 1 ? "s" : "",
				     kept_why(k[0].mp));
	}
	fi_num(f, "kept_rss_bytes", total);
	fi_num(f, "release_unmapped_bytes", freed_vm);
	fi_num(f, "release_rss_drop_bytes", rss_drop);
	fi_num(f, "rss_at_end_bytes", point_rss(&ph->v[ph->n - 1].end));
	fi_num(f, "release_phase", (int64_t)r);
	if (narena) {
		fi_num(f, "malloc_free_resident_bytes", mfree);
		fi_num(f, "malloc_trim_bytes", mtrim);
	}
	for (size_t q = 0; q < nk; q++) {
		if (!k[q].grew)
			continue;
		fi_map(f, a, k[q].mp, k[q].grew,
		       k[q].arena ? "malloc_free_resident_bytes" : "rss_kept_bytes",
		       k[q].mp->stack);
		fi_sites_add(&acc, k[q].mp->stack, k[q].grew, k[q].mp->end - k[q].mp->start);
	}
	free(k);
	fi_sites(f, a, &acc, NULL);
	f->remedy = mw_xstrdup(kept_remedy(main_kind));
}

/* ---- reserved, never touched -------------------------------------------------- */

static int by_size_desc(const void *x, const void *y)
{
	const struct mw_mapping *a = *(struct mw_mapping *const *)x;
	const struct mw_mapping *b = *(struct mw_mapping *const *)y;
	uint64_t sa = a->end - a->start, sb = b->end - b->start;

	return sa != sb ? (sa < sb ? 1 : -1) : a->start < b->start ? -1 : a->start > b->start;
}

void find_sparse(const struct mw_account *a, const struct mw_find_opts *o,
		 struct mw_findings *out)
{
	const struct mw_model *m = &a->model;
	struct mw_mapping **v = mw_xcalloc(m->nlive + m->ndead + 1, sizeof(*v));
	struct sites acc = { 0 };
	int64_t bytes = 0, peak = 0;
	struct mw_finding *f;
	size_t n = 0;
	char b[3][32];

	size_t nall;
	struct mw_mapping **all = fi_all_mappings(m, &nall);
	for (size_t i = 0; i < nall; i++) {
		struct mw_mapping *mp = all[i];
		int pct = hists_touched_pct(mp);

		/* Reservations: anon and shared memory (a file mapping's pages
		 * are the file's, read when needed). */
		if (pct < 0 || (mp->kind != MW_K_ANON && mp->kind != MW_K_SHMEM) ||
		    (int64_t)(mp->end - mp->start) < o->t[MW_T_SPARSE_BYTES] ||
		    pct >= o->t[MW_T_SPARSE_PCT])
			continue;
		/* exactly: peak RSS below the fraction, not the rounded percent */
		if ((__int128)mp->rss_peak * 100 >= (__int128)o->t[MW_T_SPARSE_PCT] *
						     (int64_t)(mp->end - mp->start))
			continue;
		v[n++] = mp;
		bytes += mp->end - mp->start;
		peak += mp->rss_peak;
		fi_sites_add(&acc, mp->stack, (int64_t)(mp->end - mp->start), mp->end - mp->start);
	}
	if (!n) {
		free(v);
		return;
	}
	fi_sort(v, n, sizeof(*v), by_size_desc);
	f = fi_new(out, MW_F_SPARSE, MW_SEV_INFO);
	f->summary = fi_printf("%zu mapping%s of %s in all never had more than %s resident "
			     "(%.1f%%; each below %lld%% of its size)",
			     n, n > 1 ? "s" : "", fi_hum(bytes, b[0]), fi_hum(peak, b[1]),
			     bytes ? 100.0 * peak / bytes : 0.0,
			     (long long)o->t[MW_T_SPARSE_PCT]);
	fi_num(f, "mappings", (int64_t)n);
	fi_num(f, "mapped_bytes", bytes);
	fi_num(f, "rss_peak_bytes", peak);
	for (size_t i = 0; i < n; i++)
		fi_map(f, a, v[i], v[i]->rss_peak, "rss_peak_bytes", v[i]->stack);
	free(v);
	fi_sites(f, a, &acc, NULL);
	f->remedy = fi_printf("untouched pages cost VM, not RSS (they count against RLIMIT_AS, "
			    "overcommit and VmSize-based limits): map what is used, or reserve "
			    "with PROT_NONE/MAP_NORESERVE if the reservation is meant");
}

/* ---- alignment and rounding waste ---------------------------------------------- */

/* What mp maps beyond what its calls asked for (*rounded: the kernel's page
 * rounding), and of what was asked, the tail never resident in a mapping
 * that was touched (*untouched: a 5 KiB tensor padded to 64 KiB by the
 * program shows here, the request being the padded length).  false when it
 * does not count. */
static bool waste_of(const struct mw_mapping *mp, const struct mw_find_opts *o,
		     int64_t *rounded, int64_t *untouched)
{
	int64_t size = (int64_t)(mp->end - mp->start), asked;

	if (hists_touched_pct(mp) < 0 || size > o->t[MW_T_WASTE_SIZE] ||
	    (mp->kind != MW_K_ANON && mp->kind != MW_K_SHMEM))
		return false;
	asked = mp->requested ? MW_MIN((int64_t)mp->requested, size) : size;
	*rounded = size - asked;
	/* Padding is a used head with an untouched tail: a mapping never
	 * touched at all is unused, not padded (and not counted). */
	*untouched = mp->rss_peak > 0 ? asked - MW_MIN(mp->rss_peak, asked) : 0;
	return true;
}

static int64_t waste_total(const struct mw_mapping *mp, const struct mw_find_opts *o)
{
	int64_t r, u;

	return waste_of(mp, o, &r, &u) ? r + u : -1;
}

struct wsite {
	uint32_t stack;
	int64_t rounded, untouched, mapped;
	uint64_t count;
	bool fires;
};

static struct wsite *wsite_of(struct wsite *s, const struct mw_idmap *by, uint32_t stack)
{
	uint32_t k;

	return idmap_get(by, (uint64_t)stack + 1, &k) ? &s[k] : NULL;
}

void find_waste(const struct mw_account *a, const struct mw_find_opts *o,
		struct mw_findings *out)
{
	const struct mw_model *m = &a->model;
	struct wsite *s = NULL, *w;
	struct mw_idmap by = { 0 };
	size_t ns = 0, nfire = 0, n = 0;
	int64_t rounded = 0, untouched = 0, mapped = 0;
	struct took *v;
	struct mw_finding *f;
	struct sites acc = { 0 };
	char b[4][32];

	/* Per call site (one group without --stacks). */
	size_t nall;
	struct mw_mapping **all = fi_all_mappings(m, &nall);
	for (size_t i = 0; i < nall; i++) {
		const struct mw_mapping *mp = all[i];
		int64_t r, u;

		if (!waste_of(mp, o, &r, &u))
			continue;
		if (!(w = wsite_of(s, &by, mp->stack))) {
			s = mw_xrealloc(s, ns + 1, sizeof(*s));
			w = &s[ns];
			memset(w, 0, sizeof(*w));
			w->stack = mp->stack;
			idmap_put(&by, (uint64_t)mp->stack + 1, (uint32_t)ns++);
		}
		w->rounded += r;
		w->untouched += u;
		w->mapped += mp->end - mp->start;
		w->count++;
	}
	for (size_t k = 0; k < ns; k++) {
		int64_t t = s[k].rounded + s[k].untouched;

		if (t < o->t[MW_T_WASTE_BYTES] || t * 100 < o->t[MW_T_WASTE_PCT] * s[k].mapped)
			continue;
		s[k].fires = true;
		nfire++;
		rounded += s[k].rounded;
		untouched += s[k].untouched;
		mapped += s[k].mapped;
	}
	if (!nfire) {
		free(s);
		idmap_free(&by);
		return;
	}
	v = mw_xcalloc(m->nlive + m->ndead + 1, sizeof(*v));
	for (size_t i = 0; i < nall; i++) {
		const struct mw_mapping *mp = all[i];
		int64_t t = waste_total(mp, o);

		if (t <= 0 || !(w = wsite_of(s, &by, mp->stack)) || !w->fires)
			continue;
		v[n++] = (struct took){ mp, t };
		fi_sites_add(&acc, mp->stack, t, mp->end - mp->start);
	}
	fi_sort(v, n, sizeof(*v), fi_took_cmp);
	f = fi_new(out, MW_F_WASTE, rounded + untouched >= 10 * MW_MAX(o->t[MW_T_WASTE_BYTES], 1) ?
		 MW_SEV_WARNING : MW_SEV_INFO);
	f->summary = fi_printf("%zu small mapping%s (up to %s each) map %s, of which %s (%.0f%%) is "
			     "waste: %s beyond the lengths asked for (rounding) and %s asked for "
			     "but never touched past what was used (padding, alignment)",
			     n, n == 1 ? "" : "s", fi_hum(o->t[MW_T_WASTE_SIZE], b[0]), fi_hum(mapped, b[1]),
			     fi_hum(rounded + untouched, b[2]),
			     mapped ? 100.0 * (rounded + untouched) / mapped : 0.0,
			     fi_hum(rounded, b[3]), fi_hum(untouched, (char[32]){ 0 }));
	fi_num(f, "mappings", (int64_t)n);
	fi_num(f, "mapped_bytes", mapped);
	fi_num(f, "waste_bytes", rounded + untouched);
	fi_num(f, "rounded_bytes", rounded);
	fi_num(f, "untouched_bytes", untouched);
	/* Alike mappings (size, kind, path, call site) are one row. */
	for (size_t i = 0; i < n; i++) {
		const struct mw_mapping *mp = v[i].mp;
		size_t k;

		for (k = 0; k < f->nmaps; k++) {
			struct mw_fmap *r = &f->maps[k];
			char buf[4200];

			if (r->bytes == mp->end - mp->start && r->kind == mp->kind &&
			    !strcmp(r->path, mapping_display_path(&a->model, mp, buf, sizeof(buf))) &&
			    !strcmp(r->site ? r->site : "", mp->stack && callsites_get(&a->sites, mp->stack) ?
				    callsites_site_str(&a->sites, mp->stack, buf, sizeof(buf)) : ""))
				break;
		}
		if (k < f->nmaps) {
			f->maps[k].count++;
			f->maps[k].value += v[i].bytes;
			f->maps[k].unmapped = f->maps[k].unmapped && mp->unmapped;
		} else {
			fi_map(f, a, mp, v[i].bytes, "waste_bytes", mp->stack);
		}
	}
	free(v);
	free(s);
	idmap_free(&by);
	fi_sites(f, a, &acc, NULL);
	f->remedy = rounded >= untouched ?
		fi_printf("ask for page multiples, or pack small buffers into one mapping (a slab "
			"or an arena)") :
		fi_printf("pad small buffers to the page (%llu KiB), not to a large alignment, or "
			"pack them into one mapping (a slab or an arena)",
			(unsigned long long)(mw_page_size() >> 10));
}

/* ---- locked or pinned ---------------------------------------------------------- */

static int64_t rise(uint64_t peak, uint64_t start)
{
	return peak > start ? (int64_t)(peak - start) : 0;
}

/*
 * Phases whose VmLck and VmPin rose, peak over start, by the threshold
 * together: memory the kernel can neither reclaim nor swap out, charged
 * to RLIMIT_MEMLOCK.  The mappings named are those locked at the end
 * (VM_LOCKED); which pages are pinned the kernel does not say.
 */
void find_pinned(const struct mw_account *a, const struct mw_find_opts *o,
		 struct mw_findings *out)
{
	const struct mw_phases *ph = &a->phases;
	const struct mw_phase *top = NULL;
	int64_t locked = 0, pinned = 0, best = 0;
	size_t nph = 0, n = 0, nall;
	struct mw_mapping **all;
	struct mw_finding *f;
	struct took *v;
	char b[4][32];

	for (size_t i = 0; i < ph->n; i++) {
		const struct mw_phase *p = &ph->v[i];
		int64_t l = rise(p->locked_peak, p->start.locked);
		int64_t pn = rise(p->pinned_peak, p->start.pinned);

		if (l + pn < o->t[MW_T_PINNED_BYTES] || l + pn <= 0)
			continue;
		nph++;
		locked += l;
		pinned += pn;
		if (l + pn > best) {
			best = l + pn;
			top = p;
		}
	}
	if (!top)
		return;
	all = fi_all_mappings(&a->model, &nall);
	v = mw_xcalloc(nall + 1, sizeof(*v));
	for (size_t i = 0; i < nall; i++)
		if (!all[i]->unmapped && (all[i]->flags & MW_VM_LOCKED))
			v[n++] = (struct took){ all[i], (int64_t)(all[i]->end - all[i]->start) };
	fi_sort(v, n, sizeof(*v), fi_took_cmp);
	f = fi_new(out, MW_F_PINNED, MW_SEV_INFO);
	f->summary = fi_printf("%zu phase%s locked %s (VmLck) and pinned %s (VmPin), the most in "
			     "\"%s\": memory the kernel can neither reclaim nor swap out; %s "
			     "locked and %s pinned at the end",
			     nph, nph == 1 ? "" : "s", fi_hum(locked, b[0]), fi_hum(pinned, b[1]),
			     top->name, fi_hum((int64_t)ph->v[ph->n - 1].end.locked, b[2]),
			     fi_hum((int64_t)ph->v[ph->n - 1].end.pinned, b[3]));
	fi_num(f, "locked_grown_bytes", locked);
	fi_num(f, "pinned_grown_bytes", pinned);
	fi_num(f, "locked_end_bytes", (int64_t)ph->v[ph->n - 1].end.locked);
	fi_num(f, "pinned_end_bytes", (int64_t)ph->v[ph->n - 1].end.pinned);
	fi_num(f, "phases", (int64_t)nph);
	for (size_t i = 0; i < n; i++)
		fi_map(f, a, v[i].mp, v[i].bytes, "locked_vm_bytes", v[i].mp->stack);
	free(v);
	f->remedy = fi_printf("lock only what must stay resident (mlock2 MLOCK_ONFAULT locks "
			    "pages as they are touched), and unregister or unpin buffers once "
			    "the work that needs them is done");
}
