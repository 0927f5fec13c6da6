// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* hostct.c — containers host-wide: per-container rows, their ends (hostct.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/cgroups.h"
#include "host/hostct.h"
#include "util.h"

struct hct_alive {
	uint64_t key;
	struct mw_container c;
	char label[MW_CT_NAME_LEN + 24];
	char *top;			/* its topmost cgroup, for memory.peak */
	uint64_t first_ns, last_ns, seen_at;
	uint32_t procs_peak;
	uint64_t vm_peak, rss_peak;
	int64_t mem_peak;
	uint64_t snapshots;
};

/* Who a container is: engine, id, and whether it is the monitor. */
static uint64_t ct_key(const struct mw_container *c)
{
	uint64_t h = mw_fmix64(c->monitor + 1);

	for (const char *p = c->engine; *p; p++)
		h = mw_mix64(h, (unsigned char)*p);
	for (const char *p = c->id; *p; p++)
		h = mw_mix64(h, (unsigned char)*p);
	return h ? h : 1;
}

static int64_t rss_of(const struct mw_hcgroup *g)
{
	return g->rss[MW_FILE] + g->rss[MW_ANON] + g->rss[MW_SHMEM];
}

static int by_rss(const void *a, const void *b)
{
	int64_t x = rss_of(&((const struct mw_hct *)a)->g);
	int64_t y = rss_of(&((const struct mw_hct *)b)->g);

	return x > y ? -1 : x < y;
}

static void add(struct mw_hcgroup *to, const struct mw_hcgroup *g)
{
	to->nprocs += g->nprocs;
	to->vm += g->vm;
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		to->rss[m] += g->rss[m];
	to->faults += g->faults;
	to->mapped += g->mapped;
	to->unmapped += g->unmapped;
	to->locked += g->locked;
	to->pinned += g->pinned;
	to->device_vm += g->device_vm;
	to->d_vm += g->d_vm;
	to->d_rss += g->d_rss;
	to->rss_peak_max = MW_MAX(to->rss_peak_max, g->rss_peak_max);
}

size_t hct_fold(const struct mw_hcgroup *cgs, size_t n, struct mw_hct **out)
{
	struct mw_hct *v = mw_xcalloc(n + 1, sizeof(*v));
	struct mw_idmap by_key = { 0 };
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct mw_container c;
		uint64_t key = 1;	/* the host's rest */
		uint32_t idx;

		memset(&c, 0, sizeof(c));
		if (cgs[i].path && containers_get(cgs[i].path, &c))
			key = ct_key(&c) | 2;
		if (!idmap_get(&by_key, key, &idx)) {
			idx = (uint32_t)k++;
			idmap_put(&by_key, key, idx);
			v[idx].key = key;
			if (key != 1) {
				v[idx].c = c;
				snprintf(v[idx].label, sizeof(v[idx].label), "%s:%s%s", c.engine,
					 c.name, c.monitor ? "+mon" : "");
			} else {
				snprintf(v[idx].label, sizeof(v[idx].label), "(no container)");
			}
			v[idx].g.path = v[idx].label;
			v[idx].top = cgs[i].path;
		}
		/* The topmost of its cgroups holds the others' charges. */
		if (cgs[i].path && (!v[idx].top || strlen(cgs[i].path) < strlen(v[idx].top)))
			v[idx].top = cgs[i].path;
		add(&v[idx].g, &cgs[i]);
	}
	idmap_free(&by_key);
	qsort(v, k, sizeof(*v), by_rss);
	/* Sorting moved the rows: their labels with them. */
	for (size_t i = 0; i < k; i++)
		v[i].g.path = v[i].label;
	*out = v;
	return k;
}

static int by_change(const void *a, const void *b)
{
	const struct mw_hcgroup *x = &((const struct mw_hct *)a)->g;
	const struct mw_hcgroup *y = &((const struct mw_hct *)b)->g;
	int64_t dx = x->d_rss < 0 ? -x->d_rss : x->d_rss, dy = y->d_rss < 0 ? -y->d_rss : y->d_rss;

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return rss_of(x) > rss_of(y) ? -1 : rss_of(x) < rss_of(y);
}

size_t hct_span(const struct mw_hct *at, size_t nat, const struct mw_hct *now, size_t nnow,
		struct mw_hct **out)
{
	struct mw_hct *v = mw_xcalloc(nat + nnow + 1, sizeof(*v));
	struct mw_idmap by_key = { 0 };
	size_t k = 0;
	uint32_t idx;

	for (size_t i = 0; i < nnow; i++) {
		v[k] = now[i];
		v[k].g.d_vm = (int64_t)now[i].g.vm;
		v[k].g.d_rss = rss_of(&now[i].g);
		idmap_put(&by_key, now[i].key, (uint32_t)k++);
	}
	for (size_t i = 0; i < nat; i++) {
		if (!idmap_get(&by_key, at[i].key, &idx)) {
			idx = (uint32_t)k++;
			idmap_put(&by_key, at[i].key, idx);
			v[idx].key = at[i].key;
			v[idx].c = at[i].c;
			memcpy(v[idx].label, at[i].label, sizeof(v[idx].label));
		}
		v[idx].g.d_vm -= (int64_t)at[i].g.vm;
		v[idx].g.d_rss -= rss_of(&at[i].g);
	}
	idmap_free(&by_key);
	qsort(v, k, sizeof(*v), by_change);
	for (size_t i = 0; i < k; i++) {
		v[i].g.path = v[i].label;
		v[i].top = NULL;	/* the snapshots' names may be gone */
	}
	*out = v;
	return k;
}

/* The cgroup's memory.peak (5.19+), -1 if there is none to read. */
static int64_t mem_peak(const char *top)
{
	const char *mnt = cgroup2_mount();
	char path[4096], buf[32];
	ssize_t n;
	int fd;

	if (!mnt || !top)
		return -1;
	snprintf(path, sizeof(path), "%s%s/memory.peak", mnt, strcmp(top, "/") ? top : "");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtoll(buf, NULL, 10);
}

static void forget(struct mw_hct_life *l, size_t i)
{
	idmap_del(&l->by_key, l->v[i].key);
	free(l->v[i].top);
	l->v[i] = l->v[--l->n];
	if (i < l->n)
		idmap_put(&l->by_key, l->v[i].key, (uint32_t)i);
}

/* The container c's entry, made at ts if it is new. */
static struct hct_alive *alive_get(struct mw_hct_life *l, const struct mw_container *c,
				   uint64_t ts)
{
	uint64_t key = ct_key(c);
	struct hct_alive *a;
	uint32_t idx;

	if (idmap_get(&l->by_key, key, &idx))
		return &l->v[idx];
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = mw_xrealloc(l->v, l->cap, sizeof(*l->v));
	}
	idx = (uint32_t)l->n++;
	idmap_put(&l->by_key, key, idx);
	a = &l->v[idx];
	memset(a, 0, sizeof(*a));
	a->key = key;
	a->c = *c;
	snprintf(a->label, sizeof(a->label), "%s:%s%s", c->engine, c->name, c->monitor ? "+mon" : "");
	a->first_ns = a->last_ns = ts;
	a->mem_peak = -1;
	return a;
}

void hct_exit(struct mw_hct_life *l, const char *cgroup, const struct mw_hproc *p, uint64_t ts)
{
	struct mw_container c;
	struct hct_alive *a;

	if (!cgroup || !containers_get(cgroup, &c))
		return;
	a = alive_get(l, &c, ts);
	a->last_ns = MW_MAX(a->last_ns, ts);
	a->rss_peak = MW_MAX(a->rss_peak, p->rss_peak);
	a->vm_peak = MW_MAX(a->vm_peak, p->vm_peak);
	a->procs_peak = MW_MAX(a->procs_peak, 1);
}

void hct_track(struct mw_hct_life *l, const struct mw_hct *v, size_t n, uint64_t ts,
	       bool last, mw_hct_end_fn end, void *ctx)
{
	for (size_t i = 0; i < n; i++) {
		const struct mw_hct *r = &v[i];
		struct hct_alive *a;
		int64_t mp;

		if (!r->c.engine || !r->g.nprocs)
			continue;
		a = alive_get(l, &r->c, ts);
		if (r->top && (!a->top || strcmp(a->top, r->top))) {
			free(a->top);
			a->top = strdup(r->top);
		}
		a->last_ns = a->seen_at = ts;
		a->snapshots++;
		a->procs_peak = MW_MAX(a->procs_peak, r->g.nprocs);
		a->vm_peak = MW_MAX(a->vm_peak, r->g.vm);
		a->rss_peak = MW_MAX(a->rss_peak, (uint64_t)MW_MAX(rss_of(&r->g), 0));
		a->rss_peak = MW_MAX(a->rss_peak, r->g.rss_peak_max);
		if ((mp = mem_peak(a->top)) >= 0)
			a->mem_peak = MW_MAX(a->mem_peak, mp);
	}
	for (size_t i = 0; i < l->n;) {
		struct hct_alive *a = &l->v[i];

		/* Gone for a second at least: a snapshot during its
		 * teardown, or before a runtime moved its next process in,
		 * is not its end. */
		if (a->seen_at == ts || (!last && ts - a->last_ns < MW_HCT_GONE_NS)) {
			i++;
			continue;
		}
		if (end) {
			struct mw_hct_end e = {
				.c = &a->c, .label = a->label, .first_ns = a->first_ns,
				.last_ns = a->last_ns, .procs_peak = a->procs_peak,
				.vm_peak = a->vm_peak, .rss_peak = a->rss_peak,
				.mem_peak = a->mem_peak, .snapshots = a->snapshots,
			};

			end(ctx, &e);
		}
		forget(l, i);
	}
}

void hct_life_free(struct mw_hct_life *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].top);
	free(l->v);
	idmap_free(&l->by_key);
	memset(l, 0, sizeof(*l));
}
