// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * metrics.c — one host view (hostview.h) as the text Prometheus scrapes:
 * OpenMetrics 1.0 (what Prometheus asks for), or Prometheus' text format
 * 0.0.4 (what curl and `promtool check metrics` get).  The two differ only in
 * how a counter's family is named (OpenMetrics: without its _total), in the
 * phase's type (info, or a gauge), and in OpenMetrics' UNIT and EOF lines.
 *
 * Label cardinality is bounded whatever runs on the host: the top_n
 * processes by RSS have series of their own (pid, comm, cgroup), the rest are
 * summed into one series with pid="" and comm="other", so a sum over a
 * family still gives the host's traced total; cgroups likewise, the top
 * MW_METRICS_TOP_CGROUPS and cgroup="other".  A counter's "other" series is
 * a sum over a changing set of processes, so unlike the others it can go
 * down (Prometheus takes that for a reset).
 *
 * Pure: no I/O but to the FILE given, no BPF (tests/unit/test_metrics.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "host/containers.h"
#include "host/metrics.h"
#include "util.h"

#define FFFD	"\xef\xbf\xbd"		/* U+FFFD, the replacement character */

/* ---- label values -------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at @s (@n > 0 bytes there), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t cp;

	return mw_utf8_len(s, n, &cp);
}

/* C0, DEL or C1: what a terminal may take for a command. */
static bool is_control(const unsigned char *s, size_t len)
{
	if (len == 1)
		return s[0] < 0x20 || s[0] == 0x7f;
	return len == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

/*
 * @n bytes of @s inside a label value's quotes: valid UTF-8, backslash,
 * double quote and newline escaped as both formats ask.  Other control
 * characters and each byte that is not UTF-8 become U+FFFD: the formats
 * would carry control characters, but a terminal showing `curl
 * .../metrics` must not act on an escape sequence a process put in its name.
 */
static void label_value(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	size_t len;

	while (p < end) {
		len = utf8_len(p, end - p);
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '"')
			fputs("\\\"", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (!len || is_control(p, len))
			fputs(FFFD, f);
		else
			fwrite(p, 1, len, f);
		p += len ? len : 1;
	}
}

/* ---- families ------------------------------------------------------------ */

enum kind { GAUGE, COUNTER };

struct render {
	FILE *f;
	bool om;				/* OpenMetrics, else text 0.0.4 */
	const struct mw_hostview *v;
	const struct mw_hcgroup **by_id;	/* v's cgroups by id */
};

struct family {
	const char *name;	/* a counter's samples add _total */
	enum kind kind;
	const char *unit;	/* the name's last word, or NULL */
	const char *help;	/* no backslash, quote or newline */
	int64_t (*get)(const void *obj, int member);
	bool by_type;		/* a series per RSS type, label type= */
};

/* RSS types as labels.  Swap has its own family: it is not resident, and a
 * sum over memwatch_*_rss_bytes must give VmRSS. */
static const struct {
	int member;
	const char *name;
} rss_types[] = {
	{ MW_ANON, "anon" }, { MW_FILE, "file" }, { MW_SHMEM, "shmem" },
};

/*
 * HELP and TYPE (and UNIT) of a family.  Text format 0.0.4 knows a family
 * only by its samples' name, so there a counter's family is name_total.
 */
static void header(struct render *r, const char *name, enum kind kind,
		   const char *unit, const char *help)
{
	const char *type = kind == COUNTER ? "counter" : "gauge";

	if (r->om) {
		fprintf(r->f, "# TYPE %s %s\n", name, type);
		if (unit)
			fprintf(r->f, "# UNIT %s %s\n", name, unit);
		fprintf(r->f, "# HELP %s %s\n", name, help);
		return;
	}
	fprintf(r->f, "# HELP %s%s %s\n", name, kind == COUNTER ? "_total" : "", help);
	fprintf(r->f, "# TYPE %s%s %s\n", name, kind == COUNTER ? "_total" : "", type);
}

static void value(FILE *f, enum kind kind, int64_t val)
{
	if (kind == COUNTER)
		fprintf(f, " %" PRIu64 "\n", (uint64_t)val);	/* kept as u64 */
	else
		fprintf(f, " %" PRId64 "\n", val);
}

/* A family one value, no labels. */
static void scalar(struct render *r, const char *name, enum kind kind,
		   const char *unit, const char *help, int64_t val)
{
	header(r, name, kind, unit, help);
	fprintf(r->f, "%s%s", name, kind == COUNTER ? "_total" : "");
	value(r->f, kind, val);
}

/* The same for nanoseconds shown as seconds, exactly. */
static void seconds(struct render *r, const char *name, enum kind kind,
		    const char *help, uint64_t ns)
{
	header(r, name, kind, "seconds", help);
	fprintf(r->f, "%s%s %" PRIu64 ".%09" PRIu64 "\n", name,
		kind == COUNTER ? "_total" : "", (uint64_t)(ns / MW_NS_PER_SEC),
		(uint64_t)(ns % MW_NS_PER_SEC));
}

/* ---- processes and cgroups ------------------------------------------------- */

/* Who has series of their own (largest RSS first) and who is "other". */
struct group {
	const void **top;
	size_t ntop;
	const void **rest;
	size_t nrest;
	/* obj's labels, no braces; NULL obj: the "other" series' */
	void (*labels)(struct render *r, const void *obj);
};

static int64_t obj_rss(const int64_t *rss)
{
	return rss[MW_ANON] + rss[MW_FILE] + rss[MW_SHMEM];
}

static int cmp_proc(const void *a, const void *b)
{
	const struct mw_hproc *x = *(const void *const *)a, *y = *(const void *const *)b;
	int64_t rx = obj_rss(x->rss), ry = obj_rss(y->rss);

	if (rx != ry)
		return rx > ry ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static int cmp_cgroup(const void *a, const void *b)
{
	const struct mw_hcgroup *x = *(const void *const *)a, *y = *(const void *const *)b;
	int64_t rx = obj_rss(x->rss), ry = obj_rss(y->rss);

	if (rx != ry)
		return rx > ry ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_cgroup_id(const void *a, const void *b)
{
	const struct mw_hcgroup *x = *(const void *const *)a, *y = *(const void *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Pointers to the @n objects of @size bytes at @base, ordered by @cmp;
 * NULL if out of memory (this may run on the HTTP thread: no exit()). */
static const void **ranked(const void *base, size_t n, size_t size,
			   int (*cmp)(const void *, const void *))
{
	const void **v = calloc(n ? n : 1, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = (const char *)base + i * size;
	qsort(v, n, sizeof(*v), cmp);
	return v;
}

/* Split @all (@n, ranked) into the first @top_n and the rest. */
static void split(struct group *g, const void **all, size_t n, size_t top_n)
{
	g->top = all;
	g->ntop = MW_MIN(n, top_n);
	g->rest = all + g->ntop;
	g->nrest = n - g->ntop;
}

/* A cgroup's path, or "id:N" when the view has none for it (paths begin
 * with '/', so neither this nor "other" can be taken for one). */
static void cgroup_name(struct render *r, uint64_t id, const char *path)
{
	if (path)
		label_value(r->f, path, strlen(path));
	else if (id)
		fprintf(r->f, "id:%" PRIu64, id);
}

/* ,container="NAME" for a container's cgroup (containers.h), "" for
 * others: every series of a family has the same labels. */
static void container_label(struct render *r, const char *path)
{
	struct mw_container c;

	fputs(",container=\"", r->f);
	if (containers_get(path, &c))
		label_value(r->f, c.name, strlen(c.name));
	fputc('"', r->f);
}

static const char *cgroup_path(struct render *r, uint64_t id)
{
	struct mw_hcgroup key = { .id = id };
	const struct mw_hcgroup *k = &key, **c = NULL;

	if (r->by_id)
		c = bsearch(&k, r->by_id, r->v->ncgroups, sizeof(*r->by_id), cmp_cgroup_id);
	return c ? (*c)->path : NULL;
}

static void proc_labels(struct render *r, const void *obj)
{
	const struct mw_hproc *p = obj;
	const char *path;

	if (!p) {
		fputs("pid=\"\",comm=\"other\",cgroup=\"\",container=\"\"", r->f);
		return;
	}
	fprintf(r->f, "pid=\"%" PRIu32 "\",comm=\"", p->pid);
	label_value(r->f, p->comm, strnlen(p->comm, sizeof(p->comm)));
	fputs("\",cgroup=\"", r->f);
	path = cgroup_path(r, p->cgroup_id);
	cgroup_name(r, p->cgroup_id, path);
	fputc('"', r->f);
	container_label(r, path);
}

static void cgroup_labels(struct render *r, const void *obj)
{
	const struct mw_hcgroup *c = obj;

	fputs("cgroup=\"", r->f);
	if (c)
		cgroup_name(r, c->id, c->path);
	else
		fputs("other", r->f);
	fputc('"', r->f);
	container_label(r, c ? c->path : NULL);
}

static void sample(struct render *r, const struct family *fam, const struct group *g,
		   const void *obj, size_t type, int64_t val)
{
	fprintf(r->f, "%s%s{", fam->name, fam->kind == COUNTER ? "_total" : "");
	g->labels(r, obj);
	if (fam->by_type)
		fprintf(r->f, ",type=\"%s\"", rss_types[type].name);
	fputc('}', r->f);
	value(r->f, fam->kind, val);
}

/* One family: a series per top object (per type), then "other". */
static void family(struct render *r, const struct family *fam, const struct group *g)
{
	size_t ntypes = fam->by_type ? MW_ARRAY_SIZE(rss_types) : 1;

	header(r, fam->name, fam->kind, fam->unit, fam->help);
	for (size_t i = 0; i <= g->ntop; i++) {
		for (size_t t = 0; t < ntypes; t++) {
			int member = fam->by_type ? rss_types[t].member : -1;
			uint64_t sum = 0;	/* unsigned: wraps, never undefined */

			if (i < g->ntop) {
				sample(r, fam, g, g->top[i], t, fam->get(g->top[i], member));
				continue;
			}
			for (size_t j = 0; j < g->nrest; j++)
				sum += (uint64_t)fam->get(g->rest[j], member);
			sample(r, fam, g, NULL, t, (int64_t)sum);
		}
	}
}

#define P(obj)	((const struct mw_hproc *)(obj))
static int64_t p_vm(const void *o, int m) { return P(o)->vm; }
static int64_t p_vm_peak(const void *o, int m) { return P(o)->vm_peak; }
static int64_t p_rss(const void *o, int m) { return P(o)->rss[m]; }
static int64_t p_swap(const void *o, int m) { return P(o)->rss[MW_SWAP]; }
static int64_t p_rss_peak(const void *o, int m) { return P(o)->rss_peak; }
static int64_t p_faults(const void *o, int m) { return P(o)->faults; }
static int64_t p_mapped(const void *o, int m) { return P(o)->mapped; }
static int64_t p_unmapped(const void *o, int m) { return P(o)->unmapped; }
static int64_t p_locked(const void *o, int m) { return P(o)->locked; }
static int64_t p_pinned(const void *o, int m) { return P(o)->pinned; }
static int64_t p_device(const void *o, int m) { return P(o)->device_vm; }
#undef P

static const struct family proc_families[] = {
	{ "memwatch_process_vm_bytes", GAUGE, "bytes",
	  "Virtual memory size of the process (VmSize).", p_vm, false },
	{ "memwatch_process_vm_peak_bytes", GAUGE, "bytes",
	  "Highest VmSize of the process while traced.", p_vm_peak, false },
	{ "memwatch_process_rss_bytes", GAUGE, "bytes",
	  "Resident memory of the process by type (RssAnon, RssFile, RssShmem; their sum is VmRSS).",
	  p_rss, true },
	{ "memwatch_process_swap_bytes", GAUGE, "bytes",
	  "Swapped-out memory of the process (VmSwap).", p_swap, false },
	{ "memwatch_process_rss_peak_bytes", GAUGE, "bytes",
	  "Highest RSS of the process while traced.", p_rss_peak, false },
	{ "memwatch_process_page_faults", COUNTER, NULL,
	  "Page faults of the process since tracing began.", p_faults, false },
	{ "memwatch_process_mapped_bytes", COUNTER, "bytes",
	  "VM the process mapped since tracing began.", p_mapped, false },
	{ "memwatch_process_unmapped_bytes", COUNTER, "bytes",
	  "VM the process unmapped since tracing began.", p_unmapped, false },
	{ "memwatch_process_locked_bytes", GAUGE, "bytes",
	  "Locked memory of the process (VmLck), after its last call that moves it.",
	  p_locked, false },
	{ "memwatch_process_pinned_bytes", GAUGE, "bytes",
	  "Pinned memory of the process (VmPin), after its last call that moves it.",
	  p_pinned, false },
	{ "memwatch_process_device_vm_bytes", GAUGE, "bytes",
	  "Virtual memory of the process that a device's driver maps (part of VmSize).",
	  p_device, false },
};

#define C(obj)	((const struct mw_hcgroup *)(obj))
static int64_t c_procs(const void *o, int m) { return C(o)->nprocs; }
static int64_t c_vm(const void *o, int m) { return C(o)->vm; }
static int64_t c_rss(const void *o, int m) { return C(o)->rss[m]; }
static int64_t c_swap(const void *o, int m) { return C(o)->rss[MW_SWAP]; }
static int64_t c_faults(const void *o, int m) { return C(o)->faults; }
static int64_t c_mapped(const void *o, int m) { return C(o)->mapped; }
static int64_t c_unmapped(const void *o, int m) { return C(o)->unmapped; }
static int64_t c_locked(const void *o, int m) { return C(o)->locked; }
static int64_t c_pinned(const void *o, int m) { return C(o)->pinned; }
static int64_t c_device(const void *o, int m) { return C(o)->device_vm; }
#undef C

static const struct family cgroup_families[] = {
	{ "memwatch_cgroup_processes", GAUGE, NULL,
	  "Traced processes in the cgroup.", c_procs, false },
	{ "memwatch_cgroup_vm_bytes", GAUGE, "bytes",
	  "Virtual memory size of the traced processes in the cgroup.", c_vm, false },
	{ "memwatch_cgroup_rss_bytes", GAUGE, "bytes",
	  "Resident memory of the traced processes in the cgroup by type.", c_rss, true },
	{ "memwatch_cgroup_swap_bytes", GAUGE, "bytes",
	  "Swapped-out memory of the traced processes in the cgroup.", c_swap, false },
	{ "memwatch_cgroup_page_faults", COUNTER, NULL,
	  "Page faults of the traced processes in the cgroup.", c_faults, false },
	{ "memwatch_cgroup_mapped_bytes", COUNTER, "bytes",
	  "VM the traced processes in the cgroup mapped.", c_mapped, false },
	{ "memwatch_cgroup_unmapped_bytes", COUNTER, "bytes",
	  "VM the traced processes in the cgroup unmapped.", c_unmapped, false },
	{ "memwatch_cgroup_locked_bytes", GAUGE, "bytes",
	  "Locked memory (VmLck) of the traced processes in the cgroup.", c_locked, false },
	{ "memwatch_cgroup_pinned_bytes", GAUGE, "bytes",
	  "Pinned memory (VmPin) of the traced processes in the cgroup.", c_pinned, false },
	{ "memwatch_cgroup_device_vm_bytes", GAUGE, "bytes",
	  "Virtual memory that devices' drivers map in the traced processes of the cgroup.",
	  c_device, false },
};

static void groups(struct render *r, const struct family *fams, size_t nfams,
		   const struct group *g)
{
	for (size_t i = 0; i < nfams; i++)
		family(r, &fams[i], g);
}

/* ---- host, phase, health --------------------------------------------------- */

static void host(struct render *r)
{
	scalar(r, "memwatch_host_memory_total_bytes", GAUGE, "bytes",
	       "MemTotal of /proc/meminfo.", r->v->mem_total);
	scalar(r, "memwatch_host_memory_available_bytes", GAUGE, "bytes",
	       "MemAvailable of /proc/meminfo.", r->v->mem_available);
}

/* The step now, as `memwatch mark NAME` named it.  OpenMetrics has a type
 * for a value that is a label (info); text 0.0.4 calls that a gauge. */
static void phase(struct render *r)
{
	static const char help[] = "The current phase, as memwatch mark named it (start before the first).";
	const char *ph = r->v->phase ? r->v->phase : "start";

	if (r->om) {
		fprintf(r->f, "# TYPE memwatch_phase info\n# HELP memwatch_phase %s\n", help);
	} else {
		fprintf(r->f, "# HELP memwatch_phase_info %s\n", help);
		fprintf(r->f, "# TYPE memwatch_phase_info gauge\n");
	}
	fputs("memwatch_phase_info{phase=\"", r->f);
	label_value(r->f, ph, strlen(ph));
	fputs("\"} 1\n", r->f);
}

static void health(struct render *r)
{
	const struct mw_health *h = &r->v->health;
	uint64_t up = r->v->ts_ns > r->v->start_ns ? r->v->ts_ns - r->v->start_ns : 0;

	scalar(r, "memwatch_events", COUNTER, NULL,
	       "Ring-buffer records memwatch read.", h->events);
	scalar(r, "memwatch_lost_events", COUNTER, NULL,
	       "Ring-buffer records dropped because the buffer was full.", h->lost);
	scalar(r, "memwatch_processes_seen", COUNTER, NULL,
	       "Processes traced since memwatch started.", h->procs_seen);
	scalar(r, "memwatch_processes_exited", COUNTER, NULL,
	       "Traced processes that exited.", h->procs_exited);
	scalar(r, "memwatch_processes_tracked", GAUGE, NULL,
	       "Processes in the kernel-side table now.", h->procs_tracked);
	scalar(r, "memwatch_processes_capacity", GAUGE, NULL,
	       "Size of the kernel-side table (when full the oldest entries go).",
	       h->procs_capacity);
	seconds(r, "memwatch_loader_cpu_seconds", COUNTER,
		"CPU time memwatch itself used (user and system).", h->loader_cpu_ns);
	scalar(r, "memwatch_loader_rss_bytes", GAUGE, "bytes",
	       "Resident memory of memwatch itself.", h->loader_rss_bytes);
	seconds(r, "memwatch_tracing_seconds", GAUGE,
		"Time since tracing began.", up);
}

/* ---- the whole text ---------------------------------------------------------- */

static int render(FILE *f, const struct mw_hostview *v, size_t top_n, bool om)
{
	struct render r = { .f = f, .om = om, .v = v };
	const void **procs, **cgroups;
	struct group gp = { .labels = proc_labels }, gc = { .labels = cgroup_labels };
	int err = -ENOMEM;

	procs = ranked(v->procs, v->nprocs, sizeof(*v->procs), cmp_proc);
	cgroups = ranked(v->cgroups, v->ncgroups, sizeof(*v->cgroups), cmp_cgroup);
	r.by_id = (const struct mw_hcgroup **)ranked(v->cgroups, v->ncgroups,
						     sizeof(*v->cgroups), cmp_cgroup_id);
	if (!procs || !cgroups || !r.by_id)
		goto out;
	split(&gp, procs, v->nprocs, top_n);
	split(&gc, cgroups, v->ncgroups, MW_METRICS_TOP_CGROUPS);
	groups(&r, proc_families, MW_ARRAY_SIZE(proc_families), &gp);
	groups(&r, cgroup_families, MW_ARRAY_SIZE(cgroup_families), &gc);
	host(&r);
	phase(&r);
	health(&r);
	if (om)
		fputs("# EOF\n", f);
	err = fflush(f) || ferror(f) ? -EIO : 0;
out:
	free(procs);
	free(cgroups);
	free(r.by_id);
	return err;
}

int metrics_render(FILE *f, const struct mw_hostview *v, size_t top_n)
{
	return render(f, v, top_n, true);
}

int metrics_render_text(FILE *f, const struct mw_hostview *v, size_t top_n)
{
	return render(f, v, top_n, false);
}
