// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * findings.c — the findings (findings.h): thresholds, building a finding,
 * call sites and allocators, the detectors' order, and the host-wide ones.
 * The detectors that read mappings (released but kept, reserved never
 * touched, rounding waste) are in findings_maps.c, those that read
 * iterations and phases in findings_iter.c.  Each
 * reads the analysis as it stands at the end of a trace, through the
 * account's fields and accessors; none changes it.  Pure code:
 * tests/unit/test_findings.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/account.h"
#include "analysis/classify.h"
#include "analysis/findings.h"
#include "analysis/findings_impl.h"
#include "analysis/idmap.h"
#include "host/hostview.h"
#include "util.h"


static const struct {
	const char *name;
	int64_t def;
	bool size;
	const char *doc;
} thresholds[MW_NR_THRESHOLDS] = {
	[MW_T_CHURN_BYTES] = { "churn-bytes", 1 * MIB, true,
		"steady-state churn: a steady iteration maps and unmaps at least this much (median)" },
	[MW_T_CHURN_FAULTS] = { "churn-faults", 256, false,
		"steady-state churn: ... or takes at least this many page faults that bring a page in "
		"(median; copy-on-write: this many of those)" },
	[MW_T_FIRST_FAULTS] = { "first-faults", 256, false,
		"first-touch cost: the first iteration takes this many faults more than a steady one" },
	[MW_T_FIRST_RATIO] = { "first-ratio", 4, false,
		"first-touch cost: ... and at least this many times as many" },
	[MW_T_FIRST_BYTES] = { "first-bytes", 4 * MIB, true,
		"first-touch cost: or its RSS grows this much more than a steady one's (and first-ratio times)" },
	[MW_T_KEPT_BYTES] = { "kept-bytes", 4 * MIB, true,
		"released but kept: RSS a mapping still holds after a release phase" },
	[MW_T_SPARSE_BYTES] = { "sparse-bytes", 16 * MIB, true,
		"reserved, never touched: mappings of at least this size ..." },
	[MW_T_SPARSE_PCT] = { "sparse-pct", 25, false,
		"... whose peak RSS stays below this percent of their size" },
	[MW_T_WASTE_BYTES] = { "waste-bytes", 1 * MIB, true,
		"rounding waste: a call site maps this much beyond what it asked for or used ..." },
	[MW_T_WASTE_PCT] = { "waste-pct", 50, false,
		"... and that is at least this percent of what it mapped" },
	[MW_T_WASTE_SIZE] = { "waste-size", 1 * MIB, true,
		"rounding waste: counts mappings up to this size (larger ones: sparse)" },
	[MW_T_LEAK_BYTES] = { "leak-bytes", 0, true,
		"leak: the growth verdict, when a steady iteration grows by at least this (median)" },
	[MW_T_PHASE_CHURN_BYTES] = { "phase-churn-bytes", 16 * MIB, true,
		"churn in a phase: one that ends flat maps and unmaps, or faults in, at least this much ..." },
	[MW_T_PHASE_CHURN_RATIO] = { "phase-churn-ratio", 2, false,
		"... and at least this many times its peak RSS" },
	[MW_T_HOST_INTERVALS] = { "host-intervals", 5, false,
		"host-wide (-a -i): RSS grew in each of this many intervals in a row ..." },
	[MW_T_HOST_GROWTH] = { "host-growth", 1 * MIB, true,
		"... by at least this much in all" },
	[MW_T_EXIT_BYTES] = { "exit-bytes", 32 * MIB, true,
		"host-wide: an exit whose RSS peak was at least this much above its RSS at exit ..." },
	[MW_T_EXIT_RATIO] = { "exit-ratio", 2, false,
		"... and at least this many times it" },
	[MW_T_PINNED_BYTES] = { "pinned-bytes", 16 * MIB, true,
		"locked or pinned: a phase raises VmLck and VmPin (their peaks) by at least this much" },
};

static const char *const kind_names[MW_NR_FINDING_KINDS] = {
	[MW_F_CHURN] = "steady_state_churn",
	[MW_F_FIRST_TOUCH] = "first_touch_cost",
	[MW_F_KEPT] = "released_but_kept",
	[MW_F_SPARSE] = "reserved_never_touched",
	[MW_F_WASTE] = "rounding_waste",
	[MW_F_LEAK] = "leak",
	[MW_F_HOST_GROWTH] = "host_rss_growth",
	[MW_F_HOST_EXIT_PEAK] = "host_exit_peak",
	[MW_F_PHASE_CHURN] = "phase_churn",
	[MW_F_COW] = "steady_state_copy_on_write",
	[MW_F_DEVICE_WINDOW] = "first_iteration_device_window",
	[MW_F_PINNED] = "locked_or_pinned",
};

const char *finding_kind_name(enum mw_finding_kind k)
{
	return k < MW_NR_FINDING_KINDS ? kind_names[k] : "?";
}

const char *finding_severity_name(enum mw_severity s)
{
	return s == MW_SEV_HIGH ? "high" : s == MW_SEV_WARNING ? "warning" : "info";
}

const char *findings_threshold_name(int i)
{
	return i >= 0 && i < MW_NR_THRESHOLDS ? thresholds[i].name : NULL;
}

int64_t findings_threshold_default(int i)
{
	return i >= 0 && i < MW_NR_THRESHOLDS ? thresholds[i].def : 0;
}

bool findings_threshold_is_size(int i)
{
	return i >= 0 && i < MW_NR_THRESHOLDS && thresholds[i].size;
}

const char *findings_threshold_doc(int i)
{
	return i >= 0 && i < MW_NR_THRESHOLDS ? thresholds[i].doc : NULL;
}

void findings_defaults(struct mw_find_opts *o)
{
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < MW_NR_THRESHOLDS; i++)
		o->t[i] = thresholds[i].def;
}

/* "4096", "64K", "1.5M", "2G" (sizes), or a plain count. */
static int parse_value(const char *s, size_t len, bool size, int64_t *out)
{
	char buf[32], *end;
	double v;

	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	errno = 0;
	v = strtod(buf, &end);
	if (errno || end == buf || v < 0)
		return -1;
	if (size && *end) {
		static const char units[] = "KMGT";
		const char *u = strchr(units, *end >= 'a' ? *end - 32 : *end);

		if (!u || !*u)
			return -1;
		for (long k = u - units; k >= 0; k--)
			v *= 1024;
		end++;
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B')
			end++;
	}
	if (*end || v > 9.2e18)
		return -1;
	*out = (int64_t)v;
	return 0;
}

int findings_set(struct mw_find_opts *o, const char *spec, const char **bad)
{
	const char *p = spec;

	if (strcmp(spec, "none") == 0) {
		o->off = true;
		return 0;
	}
	while (*p) {
		const char *comma = strchr(p, ','), *eq;
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		int i;

		eq = memchr(p, '=', len);
		*bad = p;
		if (!eq)
			return -1;
		for (i = 0; i < MW_NR_THRESHOLDS; i++)
			if (strlen(thresholds[i].name) == (size_t)(eq - p) &&
			    strncmp(thresholds[i].name, p, eq - p) == 0)
				break;
		if (i == MW_NR_THRESHOLDS ||
		    parse_value(eq + 1, len - (eq + 1 - p), thresholds[i].size, &o->t[i]))
			return -1;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* qsort(), which must not be handed NULL, not even for nothing. */
void fi_sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(v, n, size, cmp);
}

/* ---- building findings ------------------------------------------------------ */

struct mw_finding *fi_new(struct mw_findings *out, enum mw_finding_kind kind,
			       enum mw_severity sev)
{
	struct mw_finding *f;

	if (out->n == out->cap) {
		out->cap = out->cap ? out->cap * 2 : 8;
		out->v = mw_xrealloc(out->v, out->cap, sizeof(*out->v));
	}
	f = &out->v[out->n++];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->severity = sev;
	return f;
}

char *fi_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = mw_xstrdup("");
	va_end(ap);
	return s;
}

void fi_num(struct mw_finding *f, const char *key, int64_t v)
{
	if (f->nnums < MW_FMAX_NUMS)
		f->nums[f->nnums++] = (struct mw_fnum){ key, v };
}

const struct mw_fnum *finding_num(const struct mw_finding *f, const char *key)
{
	for (size_t i = 0; i < f->nnums; i++)
		if (strcmp(f->nums[i].key, key) == 0)
			return &f->nums[i];
	return NULL;
}

static char *site_text(const struct mw_account *a, uint32_t id)
{
	char buf[512];

	if (!id || !callsites_get(&a->sites, id))
		return NULL;
	return mw_xstrdup(callsites_site_str(&a->sites, id, buf, sizeof(buf)));
}

struct mw_fmap *fi_map(struct mw_finding *f, const struct mw_account *a,
			    const struct mw_mapping *mp, int64_t value, const char *what,
			    uint32_t stack)
{
	struct mw_fmap *m;
	char buf[4200];

	if (f->nmaps == MW_FMAX_MAPS) {
		f->maps_more++;
		return NULL;
	}
	m = &f->maps[f->nmaps++];
	m->start = mp->start;
	m->bytes = mp->end - mp->start;
	m->kind = mp->kind;
	m->path = mw_xstrdup(mapping_display_path(&a->model, mp, buf, sizeof(buf)));
	m->value = value;
	m->what = what;
	m->count = 1;
	m->unmapped = mp->unmapped;
	m->site = site_text(a, stack);
	return m;
}

void findings_free(struct mw_findings *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		struct mw_finding *f = &fs->v[i];

		free(f->summary);
		free(f->remedy);
		for (size_t k = 0; k < f->nmaps; k++) {
			free(f->maps[k].path);
			free(f->maps[k].site);
		}
		for (size_t k = 0; k < f->nsites; k++) {
			free(f->sites[k].site);
			free(f->sites[k].allocator);
		}
	}
	free(fs->v);
	memset(fs, 0, sizeof(*fs));
}

const char *fi_hum(int64_t v, char *buf)
{
	return mw_human(v, buf, 32);
}

/* "12,345" */
const char *fi_commas(uint64_t v, char *buf)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v), k = 0;

	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = tmp[i];
	}
	buf[k] = 0;
	return buf;
}

/* ---- call sites and allocators ---------------------------------------------- */

void fi_sites_add(struct sites *s, uint32_t stack, int64_t value, uint64_t size)
{
	uint32_t i;

	if (!idmap_get(&s->by_stack, (uint64_t)stack + 1, &i)) {
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 16;
			s->v = mw_xrealloc(s->v, s->cap, sizeof(*s->v));
		}
		i = (uint32_t)s->n;
		s->v[s->n++] = (struct site_acc){ .stack = stack };
		idmap_put(&s->by_stack, (uint64_t)stack + 1, i);
	}
	s->v[i].value += value;
	s->v[i].count++;
	s->v[i].max_size = MW_MAX(s->v[i].max_size, size);
}

static int site_cmp(const void *x, const void *y)
{
	const struct site_acc *a = x, *b = y;

	return a->value != b->value ? (a->value < b->value ? 1 : -1) :
	       a->stack < b->stack ? -1 : a->stack > b->stack;
}

bool fi_has_word(const char *s, const char *w)
{
	return s && strcasestr(s, w);
}

static bool glibc_malloc_fn(const char *fn)
{
	static const char *const fns[] = {
		"malloc", "__libc_malloc", "calloc", "__libc_calloc", "realloc",
		"__libc_realloc", "sysmalloc", "_int_malloc", "_int_realloc", "memalign",
		"__libc_memalign", "_mid_memalign", "posix_memalign", "__posix_memalign",
		"aligned_alloc", "valloc", "pvalloc", "_int_memalign", "sysmalloc_mmap",
		"malloc_hook_ini", "tcache_init",
	};

	size_t len = fn ? strcspn(fn, ".") : 0;	/* "sysmalloc_mmap.constprop.0" */

	for (size_t i = 0; fn && i < MW_ARRAY_SIZE(fns); i++)
		if (strlen(fns[i]) == len && strncmp(fn, fns[i], len) == 0)
			return true;
	return false;
}

/* Which allocator made the mapping, as the stack shows it: "glibc malloc",
 * "jemalloc", "tcmalloc", "mimalloc", "pool (FUNC)", or NULL. */
static char *allocator_of(const struct mw_callsites *cs, uint32_t id)
{
	const struct mw_stack *st = callsites_get(cs, id);

	if (!st)
		return NULL;
	for (uint32_t k = 0; k < st->nr; k++) {
		const struct mw_frame *fr = &cs->frames[st->frames[k]];

		if (fi_has_word(fr->module, "jemalloc") || fi_has_word(fr->func, "je_"))
			return mw_xstrdup("jemalloc");
		if (fi_has_word(fr->module, "tcmalloc") || fi_has_word(fr->func, "tcmalloc"))
			return mw_xstrdup("tcmalloc");
		if (fi_has_word(fr->module, "mimalloc") || fi_has_word(fr->func, "mi_malloc"))
			return mw_xstrdup("mimalloc");
		if (glibc_malloc_fn(fr->func) && (!fr->module || fi_has_word(fr->module, "libc")))
			return mw_xstrdup("glibc malloc");
	}
	/* The frame-pointer walk stops inside libc (built without them): a
	 * stack of libc alone that grows the heap is malloc's MORECORE. */
	for (uint32_t k = 0; k < st->nr; k++) {
		const struct mw_frame *fr = &cs->frames[st->frames[k]];

		if (!fi_has_word(fr->module, "libc.so"))
			break;
		if (fr->func && strstr(fr->func, "sbrk"))
			return mw_xstrdup("glibc malloc");
	}
	for (uint32_t k = 0; k < st->nr; k++) {
		const struct mw_frame *fr = &cs->frames[st->frames[k]];

		if (fi_has_word(fr->func, "pool") || fi_has_word(fr->func, "arena") ||
		    fi_has_word(fr->func, "slab"))
			return fi_printf("pool (%s)", fr->func);
	}
	return NULL;
}

/* The sites of acc, biggest first, into f; returns how many say glibc. */
size_t fi_sites(struct mw_finding *f, const struct mw_account *a, struct sites *acc,
		     uint64_t *glibc_max)
{
	bool want_alloc = glibc_max != NULL;	/* only where it matters */
	char *text;
	size_t k;
	size_t glibc = 0;

	fi_sort(acc->v, acc->n, sizeof(*acc->v), site_cmp);
	for (size_t i = 0; i < acc->n; i++) {
		char *alloc = want_alloc ? allocator_of(&a->sites, acc->v[i].stack) : NULL;
		struct mw_fsite *s;

		if (alloc && strcmp(alloc, "glibc malloc") == 0) {
			glibc++;
			if (glibc_max)
				*glibc_max = MW_MAX(*glibc_max, acc->v[i].max_size);
		}
		if (!acc->v[i].stack || !callsites_get(&a->sites, acc->v[i].stack)) {
			free(alloc);
			continue;
		}
		/* Stacks that differ only in callers show one call site. */
		text = site_text(a, acc->v[i].stack);
		for (k = 0; k < f->nsites && strcmp(f->sites[k].site, text); k++)
			;
		if (k == f->nsites && f->nsites == MW_FMAX_SITES) {
			free(text);
			free(alloc);
			continue;
		}
		s = &f->sites[k];
		if (k == f->nsites++) {
			s->stack = acc->v[i].stack;
			s->site = text;
			s->allocator = alloc;
		} else {
			f->nsites--;
			free(text);
			if (!s->allocator)
				s->allocator = alloc;
			else
				free(alloc);
		}
		s->value += acc->v[i].value;
		s->count += acc->v[i].count;
	}
	free(acc->v);
	idmap_free(&acc->by_stack);
	memset(acc, 0, sizeof(*acc));
	return glibc;
}

/* ---- shared by the detectors (findings_impl.h) ------------------------------- */

int fi_took_cmp(const void *x, const void *y)
{
	const struct took *a = x, *b = y;

	return a->bytes != b->bytes ? (a->bytes < b->bytes ? 1 : -1) :
	       a->mp->start < b->mp->start ? -1 : a->mp->start > b->mp->start;
}

/*
 * Every mapping, live in address order then the unmapped, in an array the
 * next call reuses (the detectors run one at a time, at report time).
 */
struct mw_mapping **fi_all_mappings(const struct mw_model *m, size_t *n)
{
	static struct mw_mapping **v;
	static size_t cap;
	struct mw_mapping *mp;
	size_t i = 0;

	if (m->nlive + m->ndead + 1 > cap) {
		cap = m->nlive + m->ndead + 1;
		v = mw_xrealloc(v, cap, sizeof(*v));
	}
	model_for_each(mp, m)
		v[i++] = mp;
	for (size_t d = 0; d < m->ndead; d++)
		v[i++] = m->dead[d];
	*n = i;
	return v;
}

/* ---- all of them ---------------------------------------------------------------- */

static int finding_cmp(const void *x, const void *y)
{
	const struct mw_finding *a = x, *b = y;

	if (a->severity != b->severity)
		return a->severity > b->severity ? -1 : 1;
	return a->kind < b->kind ? -1 : a->kind > b->kind;
}

void findings_compute(const struct mw_account *a, const struct mw_find_opts *o,
		      struct mw_findings *out)
{
	struct mw_find_opts def;

	memset(out, 0, sizeof(*out));
	if (!o) {
		findings_defaults(&def);
		o = &def;
	}
	if (o->off)
		return;
	find_leak(a, o, out);
	find_churn(a, o, out);
	find_first_touch(a, o, out);
	find_device_window(a, o, out);
	find_phase_churn(a, o, out);
	find_cow(a, o, out);
	find_kept(a, o, out);
	find_sparse(a, o, out);
	find_waste(a, o, out);
	find_pinned(a, o, out);
	fi_sort(out->v, out->n, sizeof(*out->v), finding_cmp);
}

/* ---- host-wide ------------------------------------------------------------------ */

void hfind_init(struct mw_hfind *h)
{
	memset(h, 0, sizeof(*h));
}

void hfind_free(struct mw_hfind *h)
{
	free(h->v);
	idmap_free(&h->by_proc);
	findings_free(&h->exits);
	memset(h, 0, sizeof(*h));
}

static uint64_t hf_key(uint32_t pid, uint64_t first_ns)
{
	return mw_mix64(mw_mix64(0x4f1d, pid), first_ns) ?: 1;
}

static struct mw_hfproc *hf_get(struct mw_hfind *h, const struct mw_hproc *p, bool add)
{
	uint64_t key = hf_key(p->pid, p->first_ns);
	uint32_t i;

	if (idmap_get(&h->by_proc, key, &i) && h->v[i].pid == p->pid &&
	    h->v[i].first_ns == p->first_ns)
		return &h->v[i];
	if (!add)
		return NULL;
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 64;
		h->v = mw_xrealloc(h->v, h->cap, sizeof(*h->v));
	}
	memset(&h->v[h->n], 0, sizeof(h->v[0]));
	h->v[h->n].pid = p->pid;
	h->v[h->n].first_ns = p->first_ns;
	h->v[h->n].last_rss = -1;
	idmap_put(&h->by_proc, key, (uint32_t)h->n);
	return &h->v[h->n++];
}

static int64_t hrss(const struct mw_hproc *p)
{
	return p->rss[MW_FILE] + p->rss[MW_ANON] + p->rss[MW_SHMEM];
}

void hfind_interval(struct mw_hfind *h, const struct mw_find_opts *o, uint64_t ts,
		    const struct mw_hproc *procs, size_t n)
{
	h->intervals++;
	/* Forget processes gone since (they exited or left the table): keep
	 * only those with a streak worth reporting. */
	for (size_t i = 0; i < h->n; i++)
		h->v[i].seen = false;
	for (size_t i = 0; i < n; i++) {
		const struct mw_hproc *p = &procs[i];
		struct mw_hfproc *e = hf_get(h, p, true);
		int64_t rss = hrss(p);

		e->seen = true;
		memcpy(e->comm, p->comm, sizeof(e->comm));
		if (e->last_rss >= 0 && rss > e->last_rss) {
			if (!e->streak)
				e->streak_rss0 = e->last_rss;
			e->streak++;
			if (e->streak >= (uint32_t)MW_MAX(o->t[MW_T_HOST_INTERVALS], 1) &&
			    rss - e->streak_rss0 >= o->t[MW_T_HOST_GROWTH] && e->streak >= e->best) {
				e->best = e->streak;
				e->best_rss0 = e->streak_rss0;
				e->best_rss1 = rss;
				e->best_t0 = e->streak_t0;
				e->best_t1 = ts;
			}
		} else {
			e->streak = 0;
			e->streak_t0 = ts;	/* a new streak would start here */
		}
		if (e->last_rss < 0)
			e->streak_t0 = ts;
		e->last_rss = rss;
	}
	/* Drop the ones not seen with nothing to report: bounded by the live
	 * set (and those found, at most one entry per process). */
	for (size_t i = 0; i < h->n;) {
		if (!h->v[i].seen && !h->v[i].best) {
			h->v[i] = h->v[--h->n];
			continue;
		}
		i++;
	}
	idmap_free(&h->by_proc);
	for (size_t i = 0; i < h->n; i++)
		idmap_put(&h->by_proc, hf_key(h->v[i].pid, h->v[i].first_ns), (uint32_t)i);
}

void hfind_exit(struct mw_hfind *h, const struct mw_find_opts *o, const struct mw_hproc *p)
{
	int64_t end = hrss(p), peak = (int64_t)p->rss_peak;
	struct mw_hfproc *e = hf_get(h, p, false);
	struct mw_finding *f;
	char b[3][32], comm[MW_COMM_LEN];

	if (e)
		e->exited = true;
	if (o->off || peak - end < o->t[MW_T_EXIT_BYTES] ||
	    peak < o->t[MW_T_EXIT_RATIO] * MW_MAX(end, 1))
		return;
	if (h->exits.n >= 100) {
		h->exits_more++;
		return;
	}
	memcpy(comm, p->comm, sizeof(comm));
	comm[sizeof(comm) - 1] = 0;
	for (char *q = comm; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			*q = '?';
	f = fi_new(&h->exits, MW_F_HOST_EXIT_PEAK, MW_SEV_INFO);
	f->pid = p->pid;
	memcpy(f->comm, p->comm, sizeof(f->comm));
	f->summary = fi_printf("PID %u (%s) peaked at %s of RSS but held %s when it exited "
			     "(%s above): size its memory limit for the peak, not the end",
			     p->pid, comm, fi_hum(peak, b[0]), fi_hum(end, b[1]), fi_hum(peak - end, b[2]));
	fi_num(f, "rss_peak_bytes", peak);
	fi_num(f, "rss_at_exit_bytes", end);
	fi_num(f, "vm_peak_bytes", (int64_t)p->vm_peak);
	fi_num(f, "vm_at_exit_bytes", (int64_t)p->vm);
}

static void copy_finding(struct mw_findings *out, const struct mw_finding *src)
{
	struct mw_finding *f = fi_new(out, src->kind, src->severity);

	*f = *src;
	f->summary = mw_xstrdup(src->summary);
	f->remedy = src->remedy ? mw_xstrdup(src->remedy) : NULL;
	f->nmaps = f->nsites = 0;
}

void hfind_findings(const struct mw_hfind *h, const struct mw_find_opts *o,
		    uint64_t start_ns, struct mw_findings *out)
{
	char b[3][32], comm[MW_COMM_LEN];

	memset(out, 0, sizeof(*out));
	if (o->off)
		return;
	for (size_t i = 0; i < h->n; i++) {
		const struct mw_hfproc *e = &h->v[i];
		struct mw_finding *f;
		int64_t grew = e->best_rss1 - e->best_rss0;

		if (!e->best)
			continue;
		memcpy(comm, e->comm, sizeof(comm));
		comm[sizeof(comm) - 1] = 0;
		for (char *q = comm; *q; q++)
			if ((unsigned char)*q < 0x20 || *q == 0x7f)
				*q = '?';
		f = fi_new(out, MW_F_HOST_GROWTH, MW_SEV_WARNING);
		f->pid = e->pid;
		memcpy(f->comm, e->comm, sizeof(f->comm));
		f->summary = fi_printf("PID %u (%s): RSS grew in each of %u intervals in a row, from "
				     "%s to %s (%s, %s per interval)%s",
				     e->pid, comm, e->best, fi_hum(e->best_rss0, b[0]),
				     fi_hum(e->best_rss1, b[1]), fi_hum(grew, b[2]),
				     fi_hum(grew / (int64_t)e->best, (char[32]){ 0 }),
				     e->exited ? "; it has exited since" : "");
		fi_num(f, "intervals", e->best);
		fi_num(f, "rss_from_bytes", e->best_rss0);
		fi_num(f, "rss_to_bytes", e->best_rss1);
		fi_num(f, "rss_growth_bytes", grew);
		fi_num(f, "rss_growth_per_interval", grew / (int64_t)e->best);
		fi_num(f, "until_ns", (int64_t)(e->best_t1 > start_ns ? e->best_t1 - start_ns : 0));
	}
	for (size_t i = 0; i < h->exits.n; i++)
		copy_finding(out, &h->exits.v[i]);
	fi_sort(out->v, out->n, sizeof(*out->v), finding_cmp);
}
