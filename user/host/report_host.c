// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report_host.c — host-wide tables and NDJSON lines. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <jansson.h>

#include "output/report.h"
#include "host/containers.h"
#include "host/report_host.h"
#include "output/jsonutil.h"
#include "util.h"

static const char *cg_name(mw_cgroup_name_fn fn, void *ctx, uint64_t id, uint32_t pid)
{
	const char *s = fn ? fn(ctx, id, pid) : NULL;

	return s ? s : "?";
}

/* A cgroup as the tables show it: "ENGINE:NAME" for a container's (conmon's:
 * "ENGINE:NAME+mon"), else its path. */
static const char *cg_label(const char *path, char *buf, size_t len)
{
	struct mw_container c;

	if (!containers_get(path, &c))
		return path;
	snprintf(buf, len, "%s:%s%s", c.engine, c.name, c.monitor ? "+mon" : "");
	return buf;
}

/* RSS the traced processes gave back in a frame that MemAvailable did not
 * show coming back (page cache kept, memory freed to another process's
 * use, or not freed at all): 0 unless RSS fell. */
int64_t host_not_returned(const struct host_frame *fr)
{
	int64_t back = (int64_t)fr->mem_avail1 - (int64_t)fr->mem_avail0;

	if (fr->d_rss >= 0 || !fr->mem_total)
		return 0;
	return MW_MAX(-fr->d_rss - MW_MAX(back, 0), 0);
}

/* "+1.5M" for growth. */
static const char *delta_short(int64_t v, char *buf, size_t len)
{
	if (v <= 0 || len < 2)
		return size_short(v, buf, len);
	buf[0] = '+';
	size_short(v, buf + 1, len - 1);
	return buf;
}

static void frame_header(FILE *f, const struct host_frame *fr)
{
	char name[48], b1[24], b2[24];

	if (fr->name)
		fprintf(f, "== step %s", printable(fr->name, name, sizeof(name), 40));
	else
		fprintf(f, "== %s", fr->kind);
	fprintf(f, " %.1f s .. %.1f s: %llu traced (+%llu, %llu exited)", fr->t0 / 1e9,
		fr->t1 / 1e9, (unsigned long long)fr->nprocs, (unsigned long long)fr->joined,
		(unsigned long long)(fr->nexits + fr->exits_more));
	if (fr->mem_total)
		fprintf(f, "; MemAvailable %s (%s)",
			size_short((int64_t)fr->mem_avail1, b1, sizeof(b1)),
			delta_short((int64_t)fr->mem_avail1 - (int64_t)fr->mem_avail0, b2,
				    sizeof(b2)));
	fputc('\n', f);
}

static void proc_rows(FILE *f, const struct host_frame *fr, size_t top,
		      mw_cgroup_name_fn name, void *ctx)
{
	char comm[24], cg[24], b[4][24], lb[MW_CT_NAME_LEN + 24];
	size_t shown = 0;

	fprintf(f, "%7s %-16s %-19s %8s %8s %8s %8s\n", "PID", "COMM", "CGROUP", "VM", "+VM",
		"RSS", "+RSS");
	for (size_t i = 0; i < fr->nrows && shown < top; i++) {
		const struct mw_hproc *p = &fr->rows[i];

		if (!p->d_rss && !p->d_vm)
			continue;
		shown++;
		fprintf(f, "%7u %-16s %-19s %8s %8s %8s %8s\n", p->pid,
			printable(p->comm, comm, sizeof(comm), 16),
			printable(cg_label(cg_name(name, ctx, p->cgroup_id, p->pid), lb, sizeof(lb)),
				  cg, sizeof(cg), 19),
			size_short((int64_t)p->vm, b[0], 24), delta_short(p->d_vm, b[1], 24),
			size_short(hproc_rss(p), b[2], 24), delta_short(p->d_rss, b[3], 24));
	}
	if (!shown)
		fprintf(f, "%7s (no process grew or shrank)\n", "");
}

static void cgroup_rows(FILE *f, const struct host_frame *fr, size_t top)
{
	char cg[48], b[4][24], lb[MW_CT_NAME_LEN + 24];

	fprintf(f, "%-38s %5s %8s %8s %8s %8s\n", "CGROUP", "PROCS", "VM", "+VM", "RSS", "+RSS");
	for (size_t i = 0; i < fr->ncgroups && i < top; i++) {
		const struct mw_hcgroup *g = &fr->cgroups[i];

		fprintf(f, "%-38s %5u %8s %8s %8s %8s\n",
			printable(cg_label(g->path, lb, sizeof(lb)), cg, sizeof(cg), 38),
			g->nprocs, size_short((int64_t)g->vm, b[0], 24),
			delta_short(g->d_vm, b[1], 24),
			size_short(g->rss[MW_FILE] + g->rss[MW_ANON] + g->rss[MW_SHMEM], b[2], 24),
			delta_short(g->d_rss, b[3], 24));
	}
}

static void exit_rows(FILE *f, const struct host_frame *fr, size_t top)
{
	char comm[24], b[2][24];

	for (size_t i = 0; i < fr->nexits && i < top; i++) {
		const struct mw_hexit *e = &fr->exits[i];

		fprintf(f, "  exited %7u %-16s VM peak %8s, RSS peak %8s, %s %d\n", e->p.pid,
			printable(e->p.comm, comm, sizeof(comm), 16),
			size_short((int64_t)e->p.vm_peak, b[0], 24),
			size_short((int64_t)e->p.rss_peak, b[1], 24),
			WIFSIGNALED(e->wait_status) ? "signal" : "status",
			WIFSIGNALED(e->wait_status) ? WTERMSIG(e->wait_status) :
						      WEXITSTATUS(e->wait_status));
	}
	if (fr->nexits + fr->exits_more > top)
		fprintf(f, "  ... and %llu more exited\n",
			(unsigned long long)(fr->nexits + fr->exits_more - MW_MIN(fr->nexits, top)));
}

/* --by container: a row per container, and one for the rest of the host. */
static void container_rows(FILE *f, const struct host_frame *fr, size_t top)
{
	char cg[48], b[4][24];

	fprintf(f, "%-38s %5s %8s %8s %8s %8s\n", "CONTAINER", "PROCS", "VM", "+VM", "RSS", "+RSS");
	for (size_t i = 0; i < fr->ncontainers && i < top; i++) {
		const struct mw_hcgroup *g = &fr->containers[i].g;

		fprintf(f, "%-38s %5u %8s %8s %8s %8s\n", printable(g->path, cg, sizeof(cg), 38),
			g->nprocs, size_short((int64_t)g->vm, b[0], 24),
			delta_short(g->d_vm, b[1], 24),
			size_short(g->rss[MW_FILE] + g->rss[MW_ANON] + g->rss[MW_SHMEM], b[2], 24),
			delta_short(g->d_rss, b[3], 24));
	}
}

void host_text_frame(FILE *f, const struct host_frame *fr, size_t top, enum host_by by,
		     mw_cgroup_name_fn name, void *ctx)
{
	char b[4][24];

	frame_header(f, fr);
	if (by == HOST_BY_CGROUP)
		cgroup_rows(f, fr, top);
	else if (by == HOST_BY_CONTAINER)
		container_rows(f, fr, top);
	else
		proc_rows(f, fr, top, name, ctx);
	exit_rows(f, fr, top);
	fprintf(f, "%-44s %8s %8s %8s %8s\n", "  all traced", size_short((int64_t)fr->vm, b[0], 24),
		delta_short(fr->d_vm, b[1], 24), size_short(fr->rss, b[2], 24),
		delta_short(fr->d_rss, b[3], 24));
	if (fr->d_rss < 0 && fr->mem_total && host_not_returned(fr) > 0)
		fprintf(f, "  released %s of RSS; MemAvailable rose by %s: %s not returned\n",
			size_short(-fr->d_rss, b[0], 24),
			size_short(MW_MAX((int64_t)fr->mem_avail1 - (int64_t)fr->mem_avail0, 0), b[1], 24),
			size_short(host_not_returned(fr), b[2], 24));
	if (fr->lost)
		fprintf(f, "  lost events so far: %llu\n", (unsigned long long)fr->lost);
	fputc('\n', f);
	fflush(f);
}

/* ---- JSON ---------------------------------------------------------------- */

/* The container a cgroup is, by name (containers.h), into o. */
static void container_json(json_t *o, const char *cgroup)
{
	struct mw_container c;

	if (!containers_get(cgroup, &c))
		return;
	json_object_set_new(o, "container", jstr(c.name));
	json_object_set_new(o, "container_engine", json_string(c.engine));
	json_object_set_new(o, "container_id", jstr(c.id));
	if (c.pod[0])
		json_object_set_new(o, "pod_uid", jstr(c.pod));
	if (c.monitor)
		json_object_set_new(o, "container_monitor", json_true());
}

static json_t *proc_json(const struct mw_hproc *p, const char *cgroup)
{
	json_t *o = json_pack("{s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I}",
			      "pid", (json_int_t)p->pid, "comm", jstr(p->comm),
			      "cgroup", jstr(cgroup),
			      "vm_bytes", (json_int_t)p->vm, "vm_peak_bytes", (json_int_t)p->vm_peak,
			      "rss_bytes", (json_int_t)hproc_rss(p),
			      "rss_peak_bytes", (json_int_t)p->rss_peak,
			      "vm_growth_bytes", (json_int_t)p->d_vm,
			      "rss_growth_bytes", (json_int_t)p->d_rss);

	json_object_set_new(o, "rss_anon_bytes", json_integer(p->rss[MW_ANON]));
	json_object_set_new(o, "rss_file_bytes", json_integer(p->rss[MW_FILE]));
	json_object_set_new(o, "rss_shmem_bytes", json_integer(p->rss[MW_SHMEM]));
	json_object_set_new(o, "swap_bytes", json_integer(p->rss[MW_SWAP]));
	json_object_set_new(o, "faults", json_integer(p->faults));
	json_object_set_new(o, "mapped_bytes", json_integer(p->mapped));
	json_object_set_new(o, "unmapped_bytes", json_integer(p->unmapped));
	json_object_set_new(o, "locked_bytes", json_integer(p->locked));
	json_object_set_new(o, "pinned_bytes", json_integer(p->pinned));
	json_object_set_new(o, "device_vm_bytes", json_integer(p->device_vm));
	json_object_set_new(o, "device_vm_peak_bytes", json_integer(p->device_vm_peak));
	json_object_set_new(o, "device_vm_exact", json_boolean(p->device_vm_exact));
	container_json(o, cgroup);
	return o;
}

static json_t *cgroup_json(const struct mw_hcgroup *g)
{
	json_t *o = json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			      "cgroup", jstr(g->path), "processes", (json_int_t)g->nprocs,
			      "vm_bytes", (json_int_t)g->vm,
			      "rss_bytes", (json_int_t)(g->rss[MW_FILE] + g->rss[MW_ANON] +
							g->rss[MW_SHMEM]),
			      "vm_growth_bytes", (json_int_t)g->d_vm,
			      "rss_growth_bytes", (json_int_t)g->d_rss,
			      "faults", (json_int_t)g->faults, "locked_bytes", (json_int_t)g->locked,
			      "pinned_bytes", (json_int_t)g->pinned,
			      "device_vm_bytes", (json_int_t)g->device_vm);

	container_json(o, g->path);
	return o;
}

static json_t *ct_json(const struct mw_hct *r)
{
	const struct mw_hcgroup *g = &r->g;
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I}",
			      "processes", (json_int_t)g->nprocs, "vm_bytes", (json_int_t)g->vm,
			      "rss_bytes", (json_int_t)(g->rss[MW_FILE] + g->rss[MW_ANON] +
							g->rss[MW_SHMEM]),
			      "vm_growth_bytes", (json_int_t)g->d_vm,
			      "rss_growth_bytes", (json_int_t)g->d_rss);

	if (r->c.engine) {
		json_object_set_new(o, "container", jstr(r->c.name));
		json_object_set_new(o, "container_engine", json_string(r->c.engine));
		json_object_set_new(o, "container_id", jstr(r->c.id));
		if (r->c.pod[0])
			json_object_set_new(o, "pod_uid", jstr(r->c.pod));
		if (r->c.monitor)
			json_object_set_new(o, "container_monitor", json_true());
	} else {
		json_object_set_new(o, "container", json_null());
	}
	return o;
}

static void put_line(FILE *f, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	if (s)
		fprintf(f, "%s\n", s);
	free(s);
	json_decref(o);
	fflush(f);
}

void host_json_frame(FILE *f, const struct host_frame *fr, size_t top,
		     mw_cgroup_name_fn name, void *ctx)
{
	json_t *o = json_object(), *rows = json_array(), *cgs = json_array(), *ex = json_array();

	json_object_set_new(o, "type", json_string(fr->kind));
	if (fr->name)
		json_object_set_new(o, "name", jstr(fr->name));
	json_object_set_new(o, "start_ns", json_integer(fr->t0));
	json_object_set_new(o, "end_ns", json_integer(fr->t1));
	json_object_set_new(o, "processes", json_integer(fr->nprocs));
	json_object_set_new(o, "joined", json_integer(fr->joined));
	json_object_set_new(o, "exited", json_integer(fr->nexits + fr->exits_more));
	json_object_set_new(o, "vm_bytes", json_integer(fr->vm));
	json_object_set_new(o, "vm_growth_bytes", json_integer(fr->d_vm));
	json_object_set_new(o, "rss_bytes", json_integer(fr->rss));
	json_object_set_new(o, "rss_growth_bytes", json_integer(fr->d_rss));
	json_object_set_new(o, "mem_total_bytes", json_integer(fr->mem_total));
	json_object_set_new(o, "mem_available_bytes", json_integer(fr->mem_avail1));
	json_object_set_new(o, "mem_available_change_bytes",
			    json_integer((int64_t)fr->mem_avail1 - (int64_t)fr->mem_avail0));
	json_object_set_new(o, "rss_released_bytes", json_integer(MW_MAX(-fr->d_rss, 0)));
	json_object_set_new(o, "not_returned_bytes", json_integer(host_not_returned(fr)));
	json_object_set_new(o, "lost_events", json_integer(fr->lost));
	if (fr->ncontainers > 1 || (fr->ncontainers && fr->containers[0].c.engine)) {
		json_t *cts = json_array();

		for (size_t i = 0; i < fr->ncontainers && i < top; i++)
			json_array_append_new(cts, ct_json(&fr->containers[i]));
		json_object_set_new(o, "containers", cts);
	}
	for (size_t i = 0; i < fr->nrows && i < top; i++)
		json_array_append_new(rows, proc_json(&fr->rows[i],
						      cg_name(name, ctx, fr->rows[i].cgroup_id,
							      fr->rows[i].pid)));
	for (size_t i = 0; i < fr->ncgroups && i < top; i++)
		json_array_append_new(cgs, cgroup_json(&fr->cgroups[i]));
	for (size_t i = 0; i < fr->nexits && i < top; i++)
		json_array_append_new(ex, json_pack("{s:I, s:o, s:I, s:I}",
						    "pid", (json_int_t)fr->exits[i].p.pid,
						    "comm", jstr(fr->exits[i].p.comm),
						    "rss_peak_bytes",
						    (json_int_t)fr->exits[i].p.rss_peak,
						    "vm_peak_bytes",
						    (json_int_t)fr->exits[i].p.vm_peak));
	json_object_set_new(o, "top", rows);
	json_object_set_new(o, "cgroups", cgs);
	json_object_set_new(o, "exits", ex);
	put_line(f, o);
}

void host_json_exit(FILE *f, const struct mw_hexit *e, const char *cgroup, uint64_t start_ns)
{
	json_t *o = proc_json(&e->p, cgroup ? cgroup : "?");

	json_object_set_new(o, "type", json_string("exit"));
	json_object_set_new(o, "ts_ns", json_integer(e->exit_ns > start_ns ?
						     e->exit_ns - start_ns : 0));
	json_object_set_new(o, "lifetime_ns", json_integer(e->exit_ns > e->p.first_ns ?
							   e->exit_ns - e->p.first_ns : 0));
	if (WIFSIGNALED(e->wait_status))
		json_object_set_new(o, "exit_signal", json_integer(WTERMSIG(e->wait_status)));
	else
		json_object_set_new(o, "exit_status", json_integer(WEXITSTATUS(e->wait_status)));
	put_line(f, o);
}

void host_container_end(FILE *text, FILE *json, const struct mw_hct_end *e, uint64_t start_ns)
{
	char lb[64], b[3][24];

	if (text) {
		fprintf(text, "  container %s ended: its processes gone after %.1f s; at most %u "
			"processes, VM peak %s, RSS peak %s (at least)", printable(e->label, lb, sizeof(lb), 48),
			(e->last_ns - e->first_ns) / 1e9, e->procs_peak,
			size_short((int64_t)e->vm_peak, b[0], 24),
			size_short((int64_t)e->rss_peak, b[1], 24));
		if (e->mem_peak >= 0)
			fprintf(text, ", memory.peak %s", size_short(e->mem_peak, b[2], 24));
		fputs("\n", text);
		fflush(text);
	}
	if (json) {
		json_t *o = json_pack("{s:s, s:o, s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I}",
				      "type", "container_exit", "container", jstr(e->c->name),
				      "container_engine", e->c->engine, "container_id", jstr(e->c->id),
				      "first_seen_ns", (json_int_t)(e->first_ns > start_ns ? e->first_ns - start_ns : 0),
				      "last_seen_ns", (json_int_t)(e->last_ns > start_ns ? e->last_ns - start_ns : 0),
				      "processes_peak", (json_int_t)e->procs_peak,
				      "vm_peak_bytes", (json_int_t)e->vm_peak,
				      "rss_peak_bytes", (json_int_t)e->rss_peak,
				      "snapshots", (json_int_t)e->snapshots);

		json_object_set_new(o, "memory_peak_bytes",
				    e->mem_peak >= 0 ? json_integer(e->mem_peak) : json_null());
		if (e->c->pod[0])
			json_object_set_new(o, "pod_uid", jstr(e->c->pod));
		if (e->c->monitor)
			json_object_set_new(o, "container_monitor", json_true());
		put_line(json, o);
	}
}
