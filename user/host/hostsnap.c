// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* hostsnap.c — host-wide snapshots, growth between them, cgroup sums. */
#include <stdlib.h>
#include <string.h>

#include "host/hostsnap.h"
#include "analysis/classify.h"
#include "analysis/idmap.h"
#include "analysis/mapping.h"
#include "capture/procfs.h"
#include "util.h"

int64_t hproc_rss(const struct mw_hproc *p)
{
	return p->rss[MW_FILE] + p->rss[MW_ANON] + p->rss[MW_SHMEM];
}

void hsnap_free(struct mw_hsnap *s)
{
	free(s->procs);
	memset(s, 0, sizeof(*s));
}

void hproc_from_host(struct mw_hproc *out, uint32_t pid, const struct mw_host *h)
{
	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->first_ns = h->first_ns;
	memcpy(out->comm, h->comm, sizeof(out->comm));
	out->comm[sizeof(out->comm) - 1] = 0;
	out->cgroup_id = h->cgroup_id;
	out->vm = h->total_vm << mw_page_shift;
	out->vm_peak = h->vm_peak << mw_page_shift;
	memcpy(out->rss, h->rss, sizeof(out->rss));
	out->rss_peak = h->rss_peak;
	out->faults = h->faults;
	out->mapped = h->mapped_bytes;
	out->unmapped = h->unmapped_bytes;
	out->locked = h->locked << mw_page_shift;
	out->pinned = h->pinned << mw_page_shift;
	out->device_vm = h->device_bytes;
	out->device_vm_peak = h->device_peak;
	out->device_vm_exact = !(h->flags & MW_HOST_DEV_SHORT);
}

static int by_pid(const void *a, const void *b)
{
	const struct mw_hproc *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->first_ns < y->first_ns ? -1 : x->first_ns > y->first_ns;
}

const struct mw_hproc *hsnap_find(const struct mw_hsnap *s, uint32_t pid, uint64_t first_ns)
{
	struct mw_hproc key = { .pid = pid, .first_ns = first_ns };

	if (!s || !s->n)
		return NULL;
	return bsearch(&key, s->procs, s->n, sizeof(key), by_pid);
}

/* to - from (from NULL: from nothing). */
static void set_growth(struct mw_hproc *to, const struct mw_hproc *from)
{
	to->d_vm = (int64_t)to->vm - (int64_t)(from ? from->vm : 0);
	to->d_rss = hproc_rss(to) - (from ? hproc_rss(from) : 0);
	to->d_faults = to->faults - (from ? MW_MIN(from->faults, to->faults) : 0);
}

void hsnap_build(struct mw_hsnap *s, uint64_t ts, const uint32_t *pids,
		 const struct mw_host *h, size_t n, const struct mw_hsnap *prev)
{
	s->ts = ts;
	s->n = n;
	s->procs = mw_xcalloc(n ? n : 1, sizeof(*s->procs));
	for (size_t i = 0; i < n; i++)
		hproc_from_host(&s->procs[i], pids[i], &h[i]);
	qsort(s->procs, n, sizeof(*s->procs), by_pid);
	for (size_t i = 0; prev && i < n; i++)
		set_growth(&s->procs[i], hsnap_find(prev, s->procs[i].pid, s->procs[i].first_ns));
}

size_t hsnap_growth(const struct mw_hsnap *from, const struct mw_hsnap *to,
		    const struct mw_hexit *exits, size_t nexits, struct mw_hproc **out)
{
	size_t n = 0;
	struct mw_hproc *v = mw_xcalloc(to->n + nexits + 1, sizeof(*v));

	for (size_t i = 0; i < to->n; i++) {
		v[n] = to->procs[i];
		set_growth(&v[n++], hsnap_find(from, to->procs[i].pid, to->procs[i].first_ns));
	}
	for (size_t i = 0; i < nexits; i++) {
		v[n] = exits[i].p;
		set_growth(&v[n++], hsnap_find(from, exits[i].p.pid, exits[i].p.first_ns));
	}
	hproc_sort_growth(v, n);
	*out = v;
	return n;
}

static int growth_desc(const void *a, const void *b)
{
	const struct mw_hproc *x = a, *y = b;

	if (x->d_rss != y->d_rss)
		return x->d_rss > y->d_rss ? -1 : 1;
	if (x->d_vm != y->d_vm)
		return x->d_vm > y->d_vm ? -1 : 1;
	return by_pid(a, b);
}

void hproc_sort_growth(struct mw_hproc *rows, size_t n)
{
	qsort(rows, n, sizeof(*rows), growth_desc);
}

static int cg_rss_desc(const void *a, const void *b)
{
	const struct mw_hcgroup *x = a, *y = b;
	int64_t rx = x->rss[MW_FILE] + x->rss[MW_ANON] + x->rss[MW_SHMEM];
	int64_t ry = y->rss[MW_FILE] + y->rss[MW_ANON] + y->rss[MW_SHMEM];

	if (rx != ry)
		return rx > ry ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void cg_add(struct mw_hcgroup *g, const struct mw_hproc *p)
{
	g->nprocs++;
	g->vm += p->vm;
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		g->rss[m] += p->rss[m];
	g->faults += p->faults;
	g->mapped += p->mapped;
	g->unmapped += p->unmapped;
	g->locked += p->locked;
	g->pinned += p->pinned;
	g->device_vm += p->device_vm;
	g->d_vm += p->d_vm;
	g->d_rss += p->d_rss;
	g->rss_peak_max = MW_MAX(g->rss_peak_max, p->rss_peak);
}

size_t hsnap_cgroups(const struct mw_hproc *rows, size_t n, mw_cgroup_name_fn fn, void *ctx,
		     struct mw_hcgroup **out)
{
	struct mw_hcgroup *v = mw_xcalloc(n ? n : 1, sizeof(*v));
	struct mw_idmap by_id = { 0 };
	size_t k = 0;
	uint32_t idx;

	for (size_t i = 0; i < n; i++) {
		/* id 0 (unknown) is a group too: key it apart from "absent". */
		uint64_t key = rows[i].cgroup_id + 1;

		if (!idmap_get(&by_id, key, &idx)) {
			idx = (uint32_t)k++;
			idmap_put(&by_id, key, idx);
			v[idx].id = rows[i].cgroup_id;
			v[idx].path = fn ? fn(ctx, rows[i].cgroup_id, rows[i].pid) : NULL;
			if (!v[idx].path)
				v[idx].path = "?";
		}
		cg_add(&v[idx], &rows[i]);
	}
	idmap_free(&by_id);
	qsort(v, k, sizeof(*v), cg_rss_desc);
	*out = v;
	return k;
}

/* ---- device VM of a process already there ------------------------------- */

static bool has_prefix(const char *s, const char *p)
{
	return s && strncmp(s, p, strlen(p)) == 0;
}

/* A path through which a device's memory can be mapped: a device node (but
 * /dev/zero and /dev/shm's files), a dma-buf, a GEM buffer's shmem file, an
 * anon_inode (a BPF map, io_uring's rings): smaps, with the flags, is read
 * only then. */
bool hsnap_maps_may_device(const struct pm_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++) {
		const char *p = maps->v[i].path;

		if ((has_prefix(p, "/dev/") && !has_prefix(p, "/dev/zero") &&
		     !has_prefix(p, "/dev/shm/")) || has_prefix(p, "/dmabuf:") ||
		    has_prefix(p, "anon_inode:") || has_prefix(p, "/drm mm object"))
			return true;
	}
	return false;
}

/* The bytes of the VMAs the classifier calls "device", as the kernel side
 * counts them (bpf/vma.bpf.h: vma_is_device keeps the same rule). */
uint64_t hsnap_device_vm(const struct pm_maps *smaps)
{
	static const struct mw_layout none;
	uint64_t sum = 0;

	for (size_t i = 0; i < smaps->n; i++) {
		const struct pm_vma *v = &smaps->v[i];
		struct mw_mapping mp;

		memset(&mp, 0, sizeof(mp));
		mp.start = v->start;
		mp.end = v->end;
		mp.flags = mw_perms_to_flags(v->perms) | v->vm_flags;
		mp.dev_major = v->dev_major;
		mp.dev_minor = v->dev_minor;
		mp.deleted = v->deleted;
		mp.has_file = v->path && v->path[0] == '/';
		mp.path = v->path;
		if (mw_classify(&none, &mp) == MW_K_DEVICE)
			sum += v->end - v->start;
	}
	return sum;
}
