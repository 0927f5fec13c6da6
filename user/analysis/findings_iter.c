// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * findings_iter.c — the detectors that read iterations and phases:
 * steady-state churn, first-touch cost, leak, and churn inside a phase.
 * Pure code: tests/unit/test_findings.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/classify.h"
#include "analysis/faultkind.h"
#include "analysis/findings_impl.h"
#include "analysis/phase.h"
#include "util.h"

/* ---- iterations ---------------------------------------------------------- */

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

struct dist {
	int64_t median, min, max, sum;
	size_t n;
};

/* The distribution of v[0..n) (sorts it). */
static struct dist dist_of(int64_t *v, size_t n)
{
	struct dist d = { 0 };

	if (!n)
		return d;
	fi_sort(v, n, sizeof(*v), cmp_i64);
	d.n = n;
	d.min = v[0];
	d.max = v[n - 1];
	d.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	for (size_t i = 0; i < n; i++)
		d.sum += v[i];
	return d;
}

enum it_field { IT_VM, IT_RSS, IT_FAULTS, IT_MAPPED, IT_UNMAPPED, IT_NS, IT_GROWTH,
	IT_NEW_PAGE, IT_COW, IT_KIND0 /* + enum mw_fault_kind */ };

static int64_t it_value(const struct mw_iter *it, enum it_field fld)
{
	int64_t vm = (int64_t)it->end.vm - (int64_t)it->start.vm;
	int64_t rss = point_rss(&it->end) - point_rss(&it->start);
	struct mw_fkinds k;

	if (fld >= IT_NEW_PAGE) {
		k = mw_fk_between(&it->start, &it->end);
		if (fld == IT_NEW_PAGE)
			return (int64_t)mw_fk_new_pages(&k);
		if (fld == IT_COW)
			return (int64_t)k.n[MW_FK_COW];
		return fld - IT_KIND0 < MW_FK_ALL ? (int64_t)k.n[fld - IT_KIND0] : 0;
	}
	switch (fld) {
	case IT_VM: return vm;
	case IT_RSS: return rss;
	case IT_FAULTS: return (int64_t)(it->end.faults - it->start.faults);
	case IT_MAPPED: return (int64_t)(it->end.mapped - it->start.mapped);
	case IT_UNMAPPED: return (int64_t)(it->end.unmapped - it->start.unmapped);
	case IT_NS: return (int64_t)(it->end.ts - it->start.ts);
	case IT_GROWTH: return MW_MAX(vm, rss);
	default: break;
	}
	return 0;
}

/* "refault 1,024, file 64": the kinds of the steady iterations' faults that
 * brought a page in, the largest first, into buf. */
static const char *kinds_words(const struct mw_phases *ph, size_t s0, char *buf, size_t len)
{
	struct mw_fkinds sum = { { 0 } };
	size_t at = 0;
	bool done[MW_FK_ALL] = { false };

	buf[0] = 0;
	for (size_t i = s0; i < ph->nit; i++) {
		struct mw_fkinds k = mw_fk_between(&ph->it[i].start, &ph->it[i].end);

		for (int j = 0; j < MW_FK_ALL; j++)
			sum.n[j] += k.n[j];
	}
	sum.n[MW_FK_COW] = 0;		/* not a page brought in */
	for (;;) {
		int best = -1;
		char n[32];

		for (int j = 0; j < MW_FK_ALL; j++)
			if (!done[j] && sum.n[j] && (best < 0 || sum.n[j] > sum.n[best]))
				best = j;
		if (best < 0 || at + 48 > len)
			break;
		done[best] = true;
		at += (size_t)snprintf(buf + at, len - at, "%s%s %s", at ? ", " : "",
				       mw_fk_words(best), fi_commas(sum.n[best], n));
	}
	return buf;
}

/* Iterations [from, nit) of field fld. */
static struct dist it_dist(const struct mw_phases *ph, size_t from, enum it_field fld)
{
	int64_t *v = mw_xcalloc(ph->nit + 1, sizeof(*v));
	size_t n = 0;
	struct dist d;

	for (size_t i = from; i < ph->nit; i++)
		v[n++] = it_value(&ph->it[i], fld);
	d = dist_of(v, n);
	free(v);
	return d;
}

/* ---- steady-state churn ------------------------------------------------------ */

/* Unmapped mappings of one kind, size and path: "10 x 24.5 MiB anon". */
struct churn_group {
	const struct mw_mapping *mp;	/* the first one */
	uint64_t count, bytes, faults;
};

static void churn_remedy(struct mw_finding *f, size_t glibc, bool stacks, uint64_t max_size,
			 bool mapping, bool heap)
{
	char b[32];
	uint64_t mib = (max_size + MIB - 1) / MIB * MIB;

	if (heap) {	/* setting one of them ends glibc's dynamic thresholds: all three */
		uint64_t thr = MW_MIN(mib, (uint64_t)(32 * MIB));

		f->remedy = fi_printf("glibc malloc trims the heap's free top back to the kernel "
				    "(brk) and grows it again every iteration: keep it with "
				    "MALLOC_MMAP_THRESHOLD_=%llu MALLOC_TRIM_THRESHOLD_=%llu "
				    "MALLOC_TOP_PAD_=%llu (%s), or reuse the buffers (a pool)",
				    (unsigned long long)thr, (unsigned long long)(2 * mib),
				    (unsigned long long)mib, fi_hum((int64_t)mib, b));
		return;
	}
	if (!mapping) {
		f->remedy = fi_printf("memory is given back and faulted in again each iteration: "
				    "keep it (a pool; glibc: MALLOC_TRIM_THRESHOLD_ and "
				    "MALLOC_TOP_PAD_ larger than an iteration's peak)");
		return;
	}
	if (glibc || !stacks) {
		const char *who = glibc ? "glibc malloc gives each chunk above its mmap threshold "
					  "back to the kernel on free" :
					  "if these are malloc'd buffers (--stacks tells), glibc gives "
					  "chunks above its mmap threshold back on free";

		if (mib <= 32 * MIB)
			f->remedy = fi_printf("%s: keep them in the heap with MALLOC_MMAP_THRESHOLD_=%llu "
					    "MALLOC_TRIM_THRESHOLD_=%llu MALLOC_TOP_PAD_=%llu (%s), "
					    "or reuse the buffers (a pool)", who,
					    (unsigned long long)mib, (unsigned long long)(2 * mib),
					    (unsigned long long)mib, fi_hum((int64_t)mib, b));
		else	/* the threshold cannot go above 32 MiB */
			f->remedy = fi_printf("%s; chunks of %s are above the largest "
					    "MALLOC_MMAP_THRESHOLD_ (32 MiB): MALLOC_MMAP_MAX_=0 "
					    "MALLOC_TRIM_THRESHOLD_=%llu MALLOC_TOP_PAD_=%llu keep them "
					    "in the heap, or reuse the buffers (a pool)", who,
					    fi_hum((int64_t)max_size, b), (unsigned long long)(4 * mib),
					    (unsigned long long)mib);
		return;
	}
	f->remedy = fi_printf("map the buffers once and reuse them across iterations (a pool), "
			    "or raise the allocator's retention (its decay/trim settings)");
}

void find_churn(const struct mw_account *a, const struct mw_find_opts *o,
		struct mw_findings *out)
{
	const struct mw_phases *ph = &a->phases;
	const struct mw_model *m = &a->model;
	size_t s0 = MW_MAX(ph->settled_after, (size_t)1), ngroups = 0;
	struct dist vm, mapped, unmapped, faults, fresh, refaults, cow;
	struct churn_group *g;
	struct sites acc = { 0 };
	struct mw_finding *f;
	uint64_t t0, t1, max_size = 0, glibc_max = 0, churn_faults = 0, churn_maps = 0;
	uint64_t heap_bytes = 0, all_bytes = 0;
	size_t steady, glibc;
	char b[4][32], kinds[256];
	bool mapping;

	if (ph->growing || ph->nit < s0 + 2)
		return;
	steady = ph->nit - s0;
	vm = it_dist(ph, s0, IT_VM);
	mapped = it_dist(ph, s0, IT_MAPPED);
	unmapped = it_dist(ph, s0, IT_UNMAPPED);
	faults = it_dist(ph, s0, IT_FAULTS);
	/* Churn is pages brought in again: a copy-on-write fault is not
	 * (steady_state_copy_on_write says those). */
	fresh = it_dist(ph, s0, IT_NEW_PAGE);
	refaults = it_dist(ph, s0, IT_KIND0 + MW_FK_REFAULT);
	cow = it_dist(ph, s0, IT_COW);
	mapping = MW_MIN(mapped.median, unmapped.median) >= o->t[MW_T_CHURN_BYTES];
	if (!mapping && fresh.median < o->t[MW_T_CHURN_FAULTS])
		return;
	/* What went in the steady state: unmapped while a steady iteration ran. */
	t0 = ph->it[s0].start.ts;
	t1 = ph->it[ph->nit - 1].end.ts;
	g = mw_xcalloc(MW_FMAX_MAPS * 4 + 1, sizeof(*g));
	for (size_t i = 0; i < m->ndead; i++) {
		const struct mw_mapping *mp = m->dead[i];
		uint64_t size = mp->end - mp->start;
		size_t k;

		if (mp->died_ns <= t0 || mp->died_ns > t1)
			continue;
		churn_maps++;
		churn_faults += mp->faults;
		all_bytes += size;
		if (mp->kind == MW_K_HEAP)
			heap_bytes += size;
		max_size = MW_MAX(max_size, size);
		fi_sites_add(&acc, mp->stack, (int64_t)size, size);
		for (k = 0; k < ngroups; k++)
			if (g[k].mp->kind == mp->kind && g[k].mp->end - g[k].mp->start == size &&
			    !strcmp(g[k].mp->path ? g[k].mp->path : "", mp->path ? mp->path : ""))
				break;
		if (k == ngroups && ngroups < MW_FMAX_MAPS * 4)
			g[ngroups++].mp = mp;
		if (k < ngroups) {
			g[k].count++;
			g[k].bytes += size;
			g[k].faults += mp->faults;
		}
	}
	f = fi_new(out, MW_F_CHURN, fresh.median >= 10 * MW_MAX(o->t[MW_T_CHURN_FAULTS], 1) ||
		 mapped.median >= 10 * MW_MAX(o->t[MW_T_CHURN_BYTES], 1) ? MW_SEV_HIGH :
		 MW_SEV_WARNING);
	f->summary = fi_printf("the steady state is flat in VM (%s over %zu iterations) but each "
			     "iteration maps %s, unmaps %s and takes %s page faults that bring "
			     "a page in (median; %s in all: %s)",
			     fi_hum(vm.sum, b[0]), steady, fi_hum(mapped.median, b[1]),
			     fi_hum(unmapped.median, b[2]), fi_commas((uint64_t)fresh.median, b[3]),
			     fi_commas((uint64_t)fresh.sum, (char[32]){ 0 }),
			     fresh.sum ? kinds_words(ph, s0, kinds, sizeof(kinds)) : "none");
	fi_num(f, "steady_iterations", (int64_t)steady);
	fi_num(f, "vm_delta_bytes", vm.sum);
	fi_num(f, "mapped_bytes_per_iteration", mapped.median);
	fi_num(f, "unmapped_bytes_per_iteration", unmapped.median);
	fi_num(f, "faults_per_iteration", faults.median);
	fi_num(f, "faults_per_iteration_min", faults.min);
	fi_num(f, "faults_per_iteration_max", faults.max);
	fi_num(f, "faults", faults.sum);
	fi_num(f, "new_page_faults_per_iteration", fresh.median);
	fi_num(f, "refaults_per_iteration", refaults.median);
	fi_num(f, "copy_on_write_per_iteration", cow.median);
	fi_num(f, "mapped_bytes", mapped.sum);
	fi_num(f, "unmapped_bytes", unmapped.sum);
	fi_num(f, "churned_mappings", (int64_t)churn_maps);
	fi_num(f, "churned_mapping_faults", (int64_t)churn_faults);
	/* biggest groups first */
	for (size_t i = 0; i < ngroups; i++)
		for (size_t k = i + 1; k < ngroups; k++)
			if (g[k].bytes > g[i].bytes) {
				struct churn_group t = g[i];

				g[i] = g[k];
				g[k] = t;
			}
	for (size_t i = 0; i < ngroups; i++) {
		struct mw_fmap *mm = fi_map(f, a, g[i].mp, (int64_t)g[i].bytes, "unmapped_bytes",
					  g[i].mp->stack);

		if (mm)
			mm->count = g[i].count;
	}
	free(g);
	glibc = fi_sites(f, a, &acc, &glibc_max);
	churn_remedy(f, glibc, callsites_any(&a->sites), glibc ? glibc_max : max_size, mapping,
		     all_bytes && heap_bytes * 2 > all_bytes);
}

/* ---- copy-on-write in the steady state ---------------------------------------- */

/*
 * Steady iterations that each take churn-faults or more faults that moved
 * no RSS counter, most of their faults: a page shared with a child after
 * fork() copied when written, or a write-protect fault.  Node's
 * execFileSync forks the whole process for every `memwatch mark`: ~1,270
 * such faults per inference in ONNX Runtime (issue 26), which the churn
 * finding used to call memory given back and faulted in again.
 */
void find_cow(const struct mw_account *a, const struct mw_find_opts *o,
	      struct mw_findings *out)
{
	const struct mw_phases *ph = &a->phases;
	size_t s0 = MW_MAX(ph->settled_after, (size_t)1);
	struct dist cow, faults;
	struct mw_finding *f;
	char b[3][32];

	if (ph->nit < s0 + 2)
		return;
	cow = it_dist(ph, s0, IT_COW);
	faults = it_dist(ph, s0, IT_FAULTS);
	if (cow.median < o->t[MW_T_CHURN_FAULTS] || 2 * cow.median < faults.median)
		return;
	f = fi_new(out, MW_F_COW, cow.median >= 10 * MW_MAX(o->t[MW_T_CHURN_FAULTS], 1) ?
		   MW_SEV_WARNING : MW_SEV_INFO);
	f->summary = fi_printf("each steady iteration takes %s copy-on-write faults (median, of %s "
			       "faults; %s in %zu iterations): pages shared with a child process "
			       "since a fork() are copied when written, with no new memory",
			       fi_commas((uint64_t)cow.median, b[0]),
			       fi_commas((uint64_t)faults.median, b[1]),
			       fi_commas((uint64_t)cow.sum, b[2]), ph->nit - s0);
	f->remedy = fi_printf("start helper processes with posix_spawn() or vfork() rather than "
			      "fork() (Node's child_process forks the whole process: mark through "
			      "the control socket, include/memwatch_mark.js), or fork before the "
			      "working set is written; write-protect faults (userfaultfd, "
			      "soft-dirty) count here too");
	fi_num(f, "steady_iterations", (int64_t)(ph->nit - s0));
	fi_num(f, "copy_on_write_per_iteration", cow.median);
	fi_num(f, "copy_on_write", cow.sum);
	fi_num(f, "faults_per_iteration", faults.median);
}

/* ---- churn inside a phase ------------------------------------------------------ */

/*
 * A phase with no iterations marked in it that ends where it began, VM
 * within 1% (or churn-bytes) and RSS within 5% of its peak (or 4 MiB), yet
 * mapped and unmapped, or faulted in, phase-churn-bytes and
 * phase-churn-ratio times its peak RSS: a PyTorch "steady" phase of 10
 * inferences mapped and unmapped 1.44 GiB and took 376,350 faults for
 * nothing it kept (issue 26).  Iterations, where marked, say it per
 * iteration (steady_state_churn) instead.
 */
void find_phase_churn(const struct mw_account *a, const struct mw_find_opts *o,
		      struct mw_findings *out)
{
	const struct mw_phases *ph = &a->phases;

	for (size_t i = 0; i < ph->n; i++) {
		const struct mw_phase *p = &ph->v[i];
		int64_t vm = (int64_t)p->end.vm - (int64_t)p->start.vm;
		int64_t rss = point_rss(&p->end) - point_rss(&p->start);
		int64_t mapped = (int64_t)(p->end.mapped - p->start.mapped);
		int64_t unmapped = (int64_t)(p->end.unmapped - p->start.unmapped);
		int64_t faults = (int64_t)(p->end.faults - p->start.faults);
		struct mw_fkinds kinds = mw_fk_between(&p->start, &p->end);
		/* Pages brought in: copy-on-write faults are not churn. */
		int64_t faulted = (int64_t)mw_fk_new_pages(&kinds) << mw_page_shift;
		int64_t turnover = MW_MIN(mapped, unmapped);
		int64_t peak = MW_MAX((int64_t)p->rss_peak, 1), need;
		size_t nit = 0;
		struct mw_finding *f;
		char name[MW_MARK_NAME_LEN], b[5][32];

		for (size_t k = 0; k < ph->nit; k++)
			nit += ph->it[k].start.ts >= p->start.ts && ph->it[k].start.ts < p->end.ts;
		if (nit > 1 || p->open)
			continue;
		if (llabs(vm) > MW_MAX(o->t[MW_T_CHURN_BYTES], (int64_t)p->end.vm / 100) ||
		    llabs(rss) > MW_MAX(4 * MIB, peak / 20))
			continue;
		need = MW_MAX(o->t[MW_T_PHASE_CHURN_BYTES], o->t[MW_T_PHASE_CHURN_RATIO] * peak);
		if (turnover < need && faulted < need)
			continue;
		snprintf(name, sizeof(name), "%s", p->name);
		for (char *c = name; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		f = fi_new(out, MW_F_PHASE_CHURN,
			   MW_MAX(turnover, faulted) >= 10 * need ? MW_SEV_HIGH : MW_SEV_WARNING);
		f->summary = fi_printf("phase \"%s\" ends where it began (VM %s%s, RSS %s%s) but mapped %s, "
				       "unmapped %s and took %s page faults in it (%s of pages): "
				       "%.1f times its peak RSS of %s",
				       name, vm < 0 ? "-" : "+", fi_hum(llabs(vm), b[0]),
				       rss < 0 ? "-" : "+", fi_hum(llabs(rss), b[1]), fi_hum(mapped, b[2]),
				       fi_hum(unmapped, b[3]), fi_commas((uint64_t)faults, (char[32]){ 0 }),
				       fi_hum(faulted, b[4]), (double)MW_MAX(turnover, faulted) / (double)peak,
				       fi_hum(peak, (char[32]){ 0 }));
		f->remedy = fi_printf("mark its iterations (MEMWATCH_ITER, --iter, memwatch mark --iter) "
				      "to see what each one maps and frees; buffers mapped per call "
				      "and freed after it are the usual cause: keep them (a pool), or "
				      "raise the allocator's retention");
		fi_num(f, "phase", (int64_t)i);
		fi_num(f, "vm_delta_bytes", vm);
		fi_num(f, "rss_delta_bytes", rss);
		fi_num(f, "mapped_bytes", mapped);
		fi_num(f, "unmapped_bytes", unmapped);
		fi_num(f, "faults", faults);
		fi_num(f, "rss_peak_bytes", peak);
	}
}

/* ---- first-touch cost -------------------------------------------------------- */

/* Who touched it first: the first fault's stack if the mapping is the first
 * iteration's own; a mapping it grew (merged into) had its first fault
 * long before, so then who mapped most of it. */
static uint32_t first_site(const struct mw_mapping *mp)
{
	return mp->born_iter == 1 && mp->fault_stack ? mp->fault_stack : mp->stack;
}

void find_first_touch(const struct mw_account *a, const struct mw_find_opts *o,
		      struct mw_findings *out)
{
	const struct mw_phases *ph = &a->phases;
	const struct mw_model *m = &a->model;
	size_t s0 = MW_MAX(ph->settled_after, (size_t)1);
	struct dist faults, ns;
	int64_t f1, rss1, ns1, rss_steady, fault_in = 0, inserted = 0;
	struct took *v;
	struct sites acc = { 0 };
	struct mw_finding *f;
	size_t n = 0;
	char b[5][32];

	if (ph->nit < 2 || s0 >= ph->nit)
		return;
	/* Pages brought in (first touch, file, refault), not copies. */
	faults = it_dist(ph, s0, IT_NEW_PAGE);
	ns = it_dist(ph, s0, IT_NS);
	f1 = it_value(&ph->it[0], IT_NEW_PAGE);
	rss1 = it_value(&ph->it[0], IT_RSS);
	ns1 = it_value(&ph->it[0], IT_NS);
	rss_steady = it_dist(ph, s0, IT_RSS).median;
	if ((f1 < faults.median + o->t[MW_T_FIRST_FAULTS] ||
	     f1 < o->t[MW_T_FIRST_RATIO] * MW_MAX(faults.median, 1)) &&
	    (rss1 < rss_steady + o->t[MW_T_FIRST_BYTES] ||
	     rss1 < o->t[MW_T_FIRST_RATIO] * MW_MAX(rss_steady, 1)))
		return;
	/* The mappings the first iteration faulted into, by how much. */
	v = mw_xcalloc(m->nlive + m->ndead + 1, sizeof(*v));
	size_t nall;
	struct mw_mapping **all = fi_all_mappings(m, &nall);
	for (size_t i = 0; i < nall; i++) {
		const struct mw_mapping *mp = all[i];
		int64_t took = MW_MIN(mp->it1_rss, mp->rss_peak);

		/* A piece split off after the first iteration carries the whole
		 * mapping's figure: of the unmapped, only the first iteration's
		 * own that outlived it. */
		if (took <= 0 || (mp->unmapped && (mp->born_iter != 1 ||
						   mp->died_ns <= ph->it[0].end.ts)))
			continue;
		v[n++] = (struct took){ mp, took };
		fault_in += took;
		/* A driver's pages (a mixed map's) are inserted, not faulted. */
		if (mp->kind == MW_K_DEVICE)
			inserted += took;
		fi_sites_add(&acc, first_site(mp), took, mp->end - mp->start);
	}
	fi_sort(v, n, sizeof(*v), fi_took_cmp);
	f = fi_new(out, MW_F_FIRST_TOUCH, MW_SEV_INFO);
	f->summary = fi_printf("the first iteration takes %s page faults that bring a page in "
			     "(RSS %s, %.3f s) where a steady one takes %s (%.3f s): %s %s "
			     "into %zu mapping%s%s%s%s",
			     fi_commas((uint64_t)f1, b[0]), fi_hum(rss1, b[1]), ns1 / 1e9,
			     fi_commas((uint64_t)faults.median, b[2]), ns.median / 1e9,
			     fi_hum(fault_in, b[3]),
			     inserted ? "faulted or inserted by a driver" : "faulted",
			     n, n == 1 ? "" : "s", inserted ? " (" : "",
			     inserted ? fi_hum(inserted, b[4]) : "",
			     inserted ? " of it in device mappings)" : "");
	fi_num(f, "first_faults", f1);
	fi_num(f, "steady_faults", faults.median);
	fi_num(f, "first_rss_delta_bytes", rss1);
	fi_num(f, "steady_rss_delta_bytes", rss_steady);
	fi_num(f, "first_ns", ns1);
	fi_num(f, "steady_ns", ns.median);
	fi_num(f, "fault_in_bytes", fault_in);
	fi_num(f, "device_rss_bytes", inserted);
	fi_num(f, "first_mappings", (int64_t)n);
	for (size_t i = 0; i < n; i++)
		fi_map(f, a, v[i].mp, v[i].bytes, "first_iteration_rss_bytes", first_site(v[i].mp));
	free(v);
	fi_sites(f, a, &acc, NULL);
	f->remedy = fi_printf("if the first request's latency matters, fault these in at start-up: "
			    "MAP_POPULATE, madvise(MADV_POPULATE_WRITE), or a warm-up iteration");
}

/* ---- a device window the first iteration maps --------------------------------- */

/*
 * The seed question "why does the first inference map 195 MB more than the
 * second?": where the answer is the accelerator's window, say so.  Device
 * memory mapped in the first iteration (born there, alive past it) and
 * at least first-bytes of it; PFN maps hold no RSS, so no fault-based
 * finding would name them.  The steady iterations' own device mappings
 * are counted beside it: reused or mapped again.
 */
void find_device_window(const struct mw_account *a, const struct mw_find_opts *o,
			struct mw_findings *out)
{
	const struct mw_phases *ph = &a->phases;
	int64_t first = 0, later = 0;
	struct sites acc = { 0 };
	struct mw_mapping **all;
	struct mw_finding *f;
	struct took *v;
	size_t n = 0, nall;
	char b[2][32];

	if (ph->nit < 2)
		return;
	all = fi_all_mappings(&a->model, &nall);
	v = mw_xcalloc(nall + 1, sizeof(*v));
	for (size_t i = 0; i < nall; i++) {
		const struct mw_mapping *mp = all[i];
		int64_t vm = (int64_t)(mp->end - mp->start);

		if (mp->kind != MW_K_DEVICE || !mp->born_iter)
			continue;
		if (mp->born_iter >= 2) {
			later += vm;
			continue;
		}
		if (mp->unmapped && mp->died_ns <= ph->it[0].end.ts)
			continue;
		v[n++] = (struct took){ mp, vm };
		first += vm;
		fi_sites_add(&acc, mp->stack, vm, (uint64_t)vm);
	}
	if (first < o->t[MW_T_FIRST_BYTES]) {
		free(v);
		return;
	}
	fi_sort(v, n, sizeof(*v), fi_took_cmp);
	f = fi_new(out, MW_F_DEVICE_WINDOW, MW_SEV_INFO);
	f->summary = fi_printf("the first iteration mapped %s of device memory in %zu mapping%s "
			     "(the largest %s, %s) that the %zu later iteration%s %s%s%s",
			     fi_hum(first, b[0]), n, n == 1 ? "" : "s",
			     mw_device_kind(v[0].mp), v[0].mp->path ? v[0].mp->path : "no file",
			     ph->nit - 1, ph->nit == 2 ? "" : "s",
			     later ? "map more beside: " : "reuse",
			     later ? fi_hum(later, b[1]) : "", later ? " more" : "");
	fi_num(f, "first_device_vm_bytes", first);
	fi_num(f, "later_device_vm_bytes", later);
	fi_num(f, "device_mappings", (int64_t)n);
	for (size_t i = 0; i < n; i++)
		fi_map(f, a, v[i].mp, v[i].bytes, "device_vm_bytes", v[i].mp->stack);
	free(v);
	fi_sites(f, a, &acc, NULL);
	f->remedy = fi_printf("device memory is the accelerator's to size: a window mapped by "
			    "page frame holds VM, not RSS; if the first request's latency "
			    "matters, create it at start-up (a warm-up inference)");
}

/* ---- leak --------------------------------------------------------------------- */

void find_leak(const struct mw_account *a, const struct mw_find_opts *o,
	       struct mw_findings *out)
{
	const struct mw_phases *ph = &a->phases;
	const struct mw_model *m = &a->model;
	size_t k = ph->settled_after;
	struct dist rss, vm, growth;
	struct sites acc = { 0 };
	struct mw_finding *f;
	struct mw_mapping *mp;
	int64_t grown = 0;
	size_t n = 0;
	char b[6][32];

	if (!ph->growing || k >= ph->nit)
		return;
	growth = it_dist(ph, k, IT_GROWTH);
	if (growth.median < o->t[MW_T_LEAK_BYTES])
		return;
	rss = it_dist(ph, k, IT_RSS);
	vm = it_dist(ph, k, IT_VM);
	f = fi_new(out, MW_F_LEAK, MW_SEV_HIGH);
	model_for_each(mp, m) {
		if (!phases_mapping_grows(ph, mp))
			continue;
		n++;
		grown += mapping_rss_total(mp);
		fi_map(f, a, mp, mapping_rss_total(mp), "rss_bytes", mp->stack);
		fi_sites_add(&acc, mp->stack, mapping_rss_total(mp), mp->end - mp->start);
	}
	f->summary = fi_printf("memory keeps growing after iteration %zu: %zu steady iterations add "
			     "%s of RSS and %s of VM, %s RSS per iteration (median; from %s to "
			     "%s), in %zu growing mapping%s",
			     k, ph->nit - k, fi_hum(rss.sum, b[0]), fi_hum(vm.sum, b[1]),
			     fi_hum(rss.median, b[2]), fi_hum(rss.min, b[3]), fi_hum(rss.max, b[4]), n,
			     n == 1 ? "" : "s");
	fi_num(f, "settled_after", (int64_t)k);
	fi_num(f, "steady_iterations", (int64_t)(ph->nit - k));
	fi_num(f, "rss_growth_bytes", rss.sum);
	fi_num(f, "vm_growth_bytes", vm.sum);
	fi_num(f, "rss_per_iteration", rss.median);
	fi_num(f, "rss_per_iteration_min", rss.min);
	fi_num(f, "rss_per_iteration_max", rss.max);
	fi_num(f, "vm_per_iteration", vm.median);
	fi_num(f, "vm_per_iteration_min", vm.min);
	fi_num(f, "vm_per_iteration_max", vm.max);
	fi_num(f, "growing_mappings", (int64_t)n);
	fi_num(f, "growing_mappings_rss_bytes", grown);
	fi_sites(f, a, &acc, NULL);
}
