// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_json.c — newline-delimited JSON: one object per line, each with a
 * "type"; the summary is the last line.  Field names in the summary are a
 * contract other tools read: add fields, never rename them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <jansson.h>

#include "analysis/classify.h"
#include "analysis/faultkind.h"
#include "analysis/hist.h"
#include "capture/kernel.h"
#include "output/jsonutil.h"
#include "output/report.h"
#include "output/report_callsite.h"
#include "output/report_findings.h"
#include "output/report_hist.h"
#include "util.h"


int report_json_start(FILE *f, const struct mw_account *a)
{
	return jline(f, json_pack("{s:s, s:i, s:o, s:I, s:i}",
				 "type", "start", "pid", a->pid, "comm", jstr(a->comm),
				 "ts_ns", (json_int_t)a->start_ns, "abi", MW_ABI_VERSION));
}

static json_t *rel_ns(const struct mw_account *a, uint64_t ts);

/* The kernel's smaps counters of the end measure (mw_smaps_meas). */
static json_t *smaps_json(const struct mw_smaps_meas *sm)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}",
			 "pss_bytes", (json_int_t)sm->pss,
			 "pss_dirty_bytes", (json_int_t)sm->pss_dirty,
			 "swap_bytes", (json_int_t)sm->swap,
			 "swap_pss_bytes", (json_int_t)sm->swap_pss,
			 "anon_huge_bytes", (json_int_t)sm->anon_huge,
			 "locked_bytes", (json_int_t)sm->locked);
}

/* {"first_touch": N, ..., "copy_on_write": N}: faults by kind. */
static json_t *fkinds_json(struct mw_fkinds k)
{
	json_t *o = json_object();

	for (int i = 0; i < MW_FK_ALL; i++)
		json_object_set_new(o, mw_fk_key(i), json_integer((json_int_t)k.n[i]));
	return o;
}

static json_t *mapping_json(const struct mw_account *a, const struct mw_mapping *mp)
{
	const struct mw_smaps_meas *sm;
	char perms[5], pathbuf[4200];
	json_t *o;

	mapping_perms(mp, perms);
	o = json_pack("{s:o, s:o, s:I, s:s, s:s, s:o, s:I, s:I, s:I, s:b}",
		      "start", jhex(mp->start), "end", jhex(mp->end),
		      "bytes", (json_int_t)(mp->end - mp->start),
		      "perms", perms, "kind", mw_kind_name(mp->kind),
		      "path", jstr(mapping_display_path(&a->model, mp, pathbuf, sizeof(pathbuf))),
		      "rss_bytes", (json_int_t)mapping_rss_total(mp),
		      "rss_peak_bytes", (json_int_t)mp->rss_peak,
		      "faults", (json_int_t)mp->faults,
		      "unmapped", mp->unmapped);
	json_object_set_new(o, "fault_kinds", fkinds_json(mw_fk_of(mp->faults, mp->fk)));
	json_object_set_new(o, "device", mw_device_kind(mp) ? json_string(mw_device_kind(mp)) :
					  json_null());
	json_object_set_new(o, "rss_anon_bytes", json_integer(mp->rss[MW_ANON]));
	json_object_set_new(o, "rss_file_bytes", json_integer(mp->rss[MW_FILE]));
	json_object_set_new(o, "rss_shmem_bytes", json_integer(mp->rss[MW_SHMEM]));
	json_object_set_new(o, "swap_bytes", json_integer(mp->rss[MW_SWAP]));
	json_object_set_new(o, "requested_bytes", json_integer(mp->requested));
	json_object_set_new(o, "offset", json_integer(mp->pgoff));
	json_object_set_new(o, "born_ns", json_integer(mp->born_ns > a->start_ns ?
						       mp->born_ns - a->start_ns : 0));
	if (mp->unmapped)
		json_object_set_new(o, "died_ns", json_integer(mp->died_ns > a->start_ns ?
							       mp->died_ns - a->start_ns : 0));
	if (mp->rss_estimated)
		json_object_set_new(o, "rss_estimated", json_true());
	json_object_set_new(o, "phase", jstr(report_phase_name(a, mp)));
	if (!mp->unmapped && (sm = mapping_measured(mp)))
		json_object_set_new(o, "smaps", smaps_json(sm));
	report_json_mapping_stacks(o, a, mp);
	return o;
}

/* ---- phases and iterations ------------------------------------------------ */

static json_t *rel_ns(const struct mw_account *a, uint64_t ts)
{
	return json_integer(ts > a->start_ns ? ts - a->start_ns : 0);
}

static json_t *growth_json(const struct mw_growth *g)
{
	return json_pack("{s:o, s:I, s:I, s:s, s:o, s:I, s:I, s:b, s:b}",
			 "start", jhex(g->start), "bytes", (json_int_t)g->bytes,
			 "requested_bytes", (json_int_t)g->requested,
			 "kind", mw_kind_name(g->kind), "path", jstr(g->path),
			 "rss_delta_bytes", (json_int_t)g->rss_delta,
			 "vm_delta_bytes", (json_int_t)g->vm_delta,
			 "created", g->created, "unmapped", g->unmapped);
}

/* glibc's arenas walked at a phase's end (a release's): what malloc held
 * free, per arena and in all; null where none was walked. */
static const char *arena_error(int err)
{
	switch (err) {
	case -ENOENT: return "not glibc's malloc";
	case -EAGAIN: return "changed while read";
	case -EFAULT: return "a chunk header not resident or not readable";
	case -ETIME: return "out of time";
	case -E2BIG: return "too many arenas";
	default: return strerror(-err);
	}
}

static json_t *arenas_json(const struct mw_phase *p)
{
	uint64_t free_b = 0, res = 0, trim = 0;
	json_t *v;

	if (!p->narenas && !p->arenas_failed)
		return json_null();
	v = json_array();
	for (size_t i = 0; i < p->narenas; i++) {
		const struct mw_arena_free *af = &p->arenas[i];

		free_b += af->free_bytes;
		res += af->free_resident;
		trim += af->trim_resident;
		json_array_append_new(v, json_pack("{s:o, s:b, s:I, s:I, s:I}",
			"mapping", jhex(af->mapping), "main", af->main,
			"free_bytes", (json_int_t)af->free_bytes,
			"free_resident_bytes", (json_int_t)af->free_resident,
			"trim_bytes", (json_int_t)af->trim_resident));
	}
	return json_pack("{s:I, s:I, s:I, s:I, s:o, s:o}",
			 "free_bytes", (json_int_t)free_b, "free_resident_bytes", (json_int_t)res,
			 "trim_bytes", (json_int_t)trim, "failed", (json_int_t)p->arenas_failed,
			 "error", p->arenas_failed ? jstr(arena_error(p->arenas_err)) : json_null(),
			 "arenas", v);
}

static const char *const drm_stat_keys[MW_DRM_NSTAT] = {
	[MW_DRM_TOTAL] = "total_bytes", [MW_DRM_SHARED] = "shared_bytes",
	[MW_DRM_RESIDENT] = "resident_bytes", [MW_DRM_PURGEABLE] = "purgeable_bytes",
	[MW_DRM_ACTIVE] = "active_bytes",
};

/* GPU memory the process's DRM clients report (fdinfo, at the end measure),
 * each key as the driver printed it; null where it has none open. */
static json_t *gpu_json(const struct mw_account *a)
{
	uint64_t sum[MW_DRM_NSTAT] = { 0 };
	json_t *v, *o;

	if (!a->ndrm)
		return json_null();
	v = json_array();
	for (size_t i = 0; i < a->ndrm; i++) {
		const struct mw_drm_client *c = &a->drm[i];
		json_t *regions = json_object();

		for (uint32_t k = 0; k < c->nregions; k++) {
			json_t *r = json_object();

			for (int st = 0; st < MW_DRM_NSTAT; st++) {
				if (!(c->r[k].have & (1u << st)))
					continue;
				json_object_set_new(r, drm_stat_keys[st],
						    json_integer((json_int_t)c->r[k].v[st]));
				sum[st] += c->r[k].v[st];
			}
			/* A key must be UTF-8: a damaged name is dropped. */
			json_object_set_new(regions, c->r[k].name, r);
		}
		json_array_append_new(v, json_pack("{s:o, s:o, s:I, s:o, s:I}",
			"driver", jstr(c->driver), "pdev", c->pdev[0] ? jstr(c->pdev) : json_null(),
			"client_id", (json_int_t)c->client_id, "regions", regions,
			"regions_more", (json_int_t)c->regions_more));
	}
	o = json_pack("{s:s, s:o}", "source", "drm fdinfo", "clients", v);
	for (int st = 0; st < MW_DRM_NSTAT; st++)
		json_object_set_new(o, drm_stat_keys[st], json_integer((json_int_t)sum[st]));
	return o;
}

static json_t *phase_json(const struct mw_account *a, const struct mw_phase *p)
{
	json_t *top = json_array();
	json_t *o;

	for (size_t i = 0; i < p->ntop; i++)
		json_array_append_new(top, growth_json(&p->top[i]));
	o = json_pack("{s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I}",
		      "name", jstr(p->name), "start_ns", rel_ns(a, p->start.ts),
		      "end_ns", rel_ns(a, p->end.ts),
		      "vm_start_bytes", (json_int_t)p->start.vm,
		      "vm_end_bytes", (json_int_t)p->end.vm,
		      "vm_peak_bytes", (json_int_t)p->vm_peak,
		      "rss_start_bytes", (json_int_t)point_rss(&p->start),
		      "rss_end_bytes", (json_int_t)point_rss(&p->end),
		      "rss_peak_bytes", (json_int_t)p->rss_peak);
	json_object_set_new(o, "rss_anon_end_bytes", json_integer(p->end.rss[MW_ANON]));
	json_object_set_new(o, "rss_file_end_bytes", json_integer(p->end.rss[MW_FILE]));
	json_object_set_new(o, "rss_shmem_end_bytes", json_integer(p->end.rss[MW_SHMEM]));
	json_object_set_new(o, "mapped_bytes", json_integer(p->end.mapped - p->start.mapped));
	json_object_set_new(o, "unmapped_bytes", json_integer(p->end.unmapped - p->start.unmapped));
	json_object_set_new(o, "faults", json_integer(p->end.faults - p->start.faults));
	json_object_set_new(o, "fault_kinds", fkinds_json(mw_fk_between(&p->start, &p->end)));
	json_object_set_new(o, "top_mappings", top);
	json_object_set_new(o, "released_bytes", json_integer(p->released_bytes));
	json_object_set_new(o, "remaining_bytes", json_integer(p->remaining_bytes));
	json_object_set_new(o, "remaining_rss_bytes", json_integer(p->remaining_rss));
	/* Of vm_start_bytes: memwatch's [uprobes] page, mapped by the hit
	 * that began this phase (not the program's growth). */
	json_object_set_new(o, "observer_vm_bytes", json_integer(p->observer_vm));
	/* Of vm_*_bytes: a driver's mappings (kind "device"). */
	json_object_set_new(o, "device_vm_start_bytes", json_integer(p->device_vm_start));
	json_object_set_new(o, "device_vm_end_bytes", json_integer(p->device_vm_end));
	/* VmLck and VmPin: memory that cannot be reclaimed or swapped */
	json_object_set_new(o, "locked_start_bytes", json_integer(p->start.locked));
	json_object_set_new(o, "locked_end_bytes", json_integer(p->end.locked));
	json_object_set_new(o, "locked_peak_bytes", json_integer(p->locked_peak));
	json_object_set_new(o, "pinned_start_bytes", json_integer(p->start.pinned));
	json_object_set_new(o, "pinned_end_bytes", json_integer(p->end.pinned));
	json_object_set_new(o, "pinned_peak_bytes", json_integer(p->pinned_peak));
	json_object_set_new(o, "malloc", arenas_json(p));
	return o;
}

/* memwatch's own footprint in the process: the [uprobes] page its markers
 * made the kernel map (null: none). */
static json_t *observer_json(const struct mw_account *a)
{
	const struct mw_mapping *mp = a->obs_vm ? model_find(&a->model, a->obs_start) : NULL;

	if (!a->obs_vm)
		return json_null();
	return json_pack("{s:s, s:o, s:I, s:I, s:o}", "what", "[uprobes]",
			 "start", jhex(a->obs_start), "vm_bytes", (json_int_t)a->obs_vm,
			 "rss_bytes", (json_int_t)(mp && mp->observer ? mapping_rss_total(mp) : 0),
			 "phase", a->obs_phase >= 0 && (size_t)a->obs_phase < a->phases.n ?
				  jstr(a->phases.v[a->obs_phase].name) : json_null());
}

static json_t *phases_json(const struct mw_account *a)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < a->phases.n; i++) {
		json_t *o = phase_json(a, &a->phases.v[i]);

		/* Only in the summary: touched is complete at the end. */
		json_object_set_new(o, "histograms", report_json_phase_hists(a, i));
		if (callsites_any(&a->sites))
			json_object_set_new(o, "call_sites", report_json_callsites(a, (int)i));
		json_array_append_new(arr, o);
	}
	return arr;
}

static json_t *iter_json(const struct mw_iter *it)
{
	return json_pack("{s:I, s:I, s:I, s:o, s:I, s:I}",
			 "vm_delta_bytes", (json_int_t)((int64_t)it->end.vm - (int64_t)it->start.vm),
			 "rss_delta_bytes", (json_int_t)(point_rss(&it->end) - point_rss(&it->start)),
			 "faults", (json_int_t)(it->end.faults - it->start.faults),
			 "fault_kinds", fkinds_json(mw_fk_between(&it->start, &it->end)),
			 "duration_ns", (json_int_t)(it->end.ts - it->start.ts),
			 "observer_vm_bytes", (json_int_t)it->observer_vm);
}

static json_t *iterations_json(const struct mw_account *a)
{
	const struct mw_phases *ph = &a->phases;
	struct mw_hist hv, hr;
	json_t *o, *steady, *growing = json_array();
	size_t count;
	int64_t vm, rss;
	uint64_t faults;
	int64_t fk[MW_FK_NR];
	const struct mw_mapping *mp;
	char buf[4200];

	report_steady_totals(a, &count, &vm, &rss, &faults, fk);
	report_steady_hist(a, &hv, &hr);
	model_for_each(mp, &a->model) {

		if (phases_mapping_grows(ph, mp))
			json_array_append_new(growing, json_pack("{s:o, s:I, s:s, s:o}",
				"start", jhex(mp->start), "bytes", (json_int_t)(mp->end - mp->start),
				"kind", mw_kind_name(mp->kind),
				"path", jstr(mapping_display_path(&a->model, mp, buf, sizeof(buf)))));
	}
	steady = json_pack("{s:I, s:I, s:I, s:I, s:s, s:o, s:o, s:o}",
			   "count", (json_int_t)count, "vm_delta_bytes", (json_int_t)vm,
			   "rss_delta_bytes", (json_int_t)rss, "faults", (json_int_t)faults,
			   "verdict", ph->growing ? "growing" : "flat",
			   "growing_mappings", growing,
			   "rss_growth_hist", report_json_hist(&hr), "vm_growth_hist", report_json_hist(&hv));
	json_object_set_new(steady, "fault_kinds", fkinds_json(mw_fk_of(faults, fk)));
	o = json_pack("{s:I, s:I, s:o}", "count", (json_int_t)ph->nit,
		      "settled_after", (json_int_t)ph->settled_after, "steady", steady);
	json_object_set_new(o, "first", ph->nit ? iter_json(&ph->it[0]) : json_null());
	return o;
}

/* ---- lines as they happen ------------------------------------------------- */

void report_json_event(FILE *f, const struct mw_account *a, unsigned int kind)
{
	const struct mw_phases *ph = &a->phases;
	const struct mw_point *p;
	json_t *o;

	if (!a->json_started) {
		((struct mw_account *)a)->json_started = true;
		report_json_start(f, a);
	}
	switch (kind) {
	case MW_MARK_SAMPLE:
		p = &ph->samples[ph->nsamples - 1].at;
		o = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "type", "sample",
			      "ts_ns", rel_ns(a, p->ts), "vm_bytes", (json_int_t)p->vm,
			      "rss_bytes", (json_int_t)point_rss(p),
			      "rss_anon_bytes", (json_int_t)p->rss[MW_ANON],
			      "rss_file_bytes", (json_int_t)p->rss[MW_FILE],
			      "rss_shmem_bytes", (json_int_t)p->rss[MW_SHMEM],
			      "faults", (json_int_t)p->faults);
		break;
	case MW_MARK_PHASE:
		if (ph->n < 2)
			return;		/* the first phase just began */
		o = phase_json(a, &ph->v[ph->n - 2]);
		json_object_set_new(o, "type", json_string("phase"));
		break;
	case MW_MARK_ITER:
		if (ph->nit < 2)
			return;
		o = iter_json(&ph->it[ph->nit - 2]);
		json_object_set_new(o, "type", json_string("iteration"));
		json_object_set_new(o, "index", json_integer(ph->nit - 1));
		break;
	default:
		return;
	}
	json_object_set_new(o, "pid", json_integer(a->pid));
	jline(f, o);
}

/* Rows past the cap, summed into one that says how many it holds. */
static json_t *folded_json(struct mw_mapping **v, size_t from, size_t n,
			   const struct mw_model *m)
{
	int64_t bytes = m->folded.end, rss = mapping_rss_total(&m->folded);
	uint64_t faults = m->folded.faults, count = n - from + m->nfolded;
	int64_t fk[MW_FK_NR];

	memcpy(fk, m->folded.fk, sizeof(fk));
	for (size_t i = from; i < n; i++) {
		bytes += v[i]->end - v[i]->start;
		rss += mapping_rss_total(v[i]);
		faults += v[i]->faults;
		for (int k = 0; k < MW_FK_NR; k++)
			fk[k] += v[i]->fk[k];
	}
	return json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:b, s:I}",
			 "start", "0x0", "end", "0x0", "bytes", (json_int_t)bytes,
			 "perms", "----", "kind", "folded", "path", "",
			 "rss_bytes", (json_int_t)rss, "rss_peak_bytes", (json_int_t)0,
			 "faults", (json_int_t)faults, "fault_kinds", fkinds_json(mw_fk_of(faults, fk)),
			 "unmapped", 0,
			 "folded", (json_int_t)count);
}

static json_t *totals_json(const struct mw_account *a)
{
	const struct mw_proc *k = &a->kstate;
	json_t *t = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			      "vm_bytes", (json_int_t)account_vm(a),
			      "vm_peak_bytes", (json_int_t)account_vm_peak(a),
			      "rss_bytes", (json_int_t)account_rss_total(a),
			      "rss_peak_bytes", (json_int_t)account_rss_peak(a),
			      "rss_anon_bytes", (json_int_t)account_rss(a, MW_ANON),
			      "rss_file_bytes", (json_int_t)account_rss(a, MW_FILE),
			      "rss_shmem_bytes", (json_int_t)account_rss(a, MW_SHMEM),
			      "swap_bytes", (json_int_t)account_rss(a, MW_SWAP));

	json_object_set_new(t, "device_vm_bytes",
			    json_integer(model_kind_vm(&a->model, MW_K_DEVICE)));
	json_object_set_new(t, "device_vm_peak_bytes", json_integer(a->model.device_vm_peak));
	json_object_set_new(t, "locked_bytes", json_integer(k->pin.locked << mw_page_shift));
	json_object_set_new(t, "locked_peak_bytes", json_integer(k->locked_peak << mw_page_shift));
	json_object_set_new(t, "pinned_bytes", json_integer(k->pin.pinned << mw_page_shift));
	json_object_set_new(t, "pinned_peak_bytes", json_integer(k->pinned_peak << mw_page_shift));
	json_object_set_new(t, "faults", json_integer(k->faults + k->kfaults));
	json_object_set_new(t, "user_faults", json_integer(k->faults));
	json_object_set_new(t, "kernel_faults", json_integer(k->kfaults));
	json_object_set_new(t, "fault_kinds", fkinds_json(mw_fk_of(k->faults + k->kfaults,
								 (const int64_t *)k->fk)));
	for (int op = MW_OP_MMAP; op < MW_NR_OPS; op++) {
		char key[48];

		snprintf(key, sizeof(key), "%s_calls", report_op_name(op));
		json_object_set_new(t, key, json_integer(k->calls[op]));
	}
	json_object_set_new(t, "mapped_bytes", json_integer(k->mapped_bytes));
	json_object_set_new(t, "unmapped_bytes", json_integer(k->unmapped_bytes));
	json_object_set_new(t, "unattributed_rss_bytes", json_integer(account_unattributed(a)));
	if (a->smaps.ts) {
		/* Summed over the measure's VMAs; the Pss split from the rollup. */
		json_t *sm = smaps_json(&a->smaps.sum);

		json_object_set_new(sm, "at_ns", rel_ns(a, a->smaps.ts));
		json_object_set_new(sm, "vmas", json_integer(a->smaps.nvmas));
		json_object_set_new(sm, "vmas_matched", json_integer(a->smaps.matched));
		if (a->smaps.rollup) {
			json_object_set_new(sm, "pss_anon_bytes", json_integer(a->smaps.pss_anon));
			json_object_set_new(sm, "pss_file_bytes", json_integer(a->smaps.pss_file));
			json_object_set_new(sm, "pss_shmem_bytes", json_integer(a->smaps.pss_shmem));
		}
		json_object_set_new(t, "smaps", sm);
	}
	return t;
}

static json_t *diagnostics_json(const struct mw_account *a)
{
	json_t *d = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			 "lost_events_host", (json_int_t)a->stats[MW_STAT_RB_LOST],
			 "seq_gaps", (json_int_t)a->seq_gaps,
			 "behind_ms", (json_int_t)(a->behind_ns / 1000000),
			 "coalesced_calls", (json_int_t)(a->kstate.coalesced + a->kstate.coalescing),
			 "coalesced_windows", (json_int_t)(a->coalesced_windows + !!a->kstate.coalescing),
			 "unapplied_records", (json_int_t)a->unapplied,
			 "resyncs", (json_int_t)a->resyncs,
			 "vm_mismatches", (json_int_t)a->vm_mismatches,
			 "slot_evictions", (json_int_t)a->kstate.slot_evictions,
			 "model_vm_bytes", (json_int_t)model_vm_bytes(&a->model),
			 "records", (json_int_t)a->records);
	int64_t own = 0, ext = 0;

	for (int m = 0; m < MW_NR_MEMBERS; m++) {
		if (m == MW_SWAP)
			continue;
		own += a->kstate.unattributed[m];
		ext += a->kstate.external[m];
	}
	/* The host-wide losses by kind: coalescing (bpf/syscalls.bpf.h) keeps
	 * structural records from being lost; what is lost is said here. */
	json_object_set_new(d, "lost_events_host_by_kind",
			    json_pack("{s:I, s:I, s:I}",
				      "structural", (json_int_t)a->stats[MW_STAT_RB_LOST_OP],
				      "deltas", (json_int_t)a->stats[MW_STAT_RB_LOST_DELTAS],
				      "stacks", (json_int_t)a->stats[MW_STAT_RB_LOST_STACK]));
	json_object_set_new(d, "rss_changes_unattributed_bytes", json_integer(own));
	json_object_set_new(d, "reorders", json_integer(a->kstate.reorders));
	json_object_set_new(d, "reconciled", json_integer(a->reconciled));
	json_object_set_new(d, "slot_faults_unplaced", json_integer(a->lost_attr_faults));
	json_object_set_new(d, "thread_storage_failures",
			    json_integer(a->stats[MW_STAT_THREAD_FAIL]));
	json_object_set_new(d, "find_vma_busy", json_integer(a->stats[MW_STAT_FIND_BUSY]));
	json_object_set_new(d, "late_reads", json_integer(a->late_reads));
	json_object_set_new(d, "late_read_calls_folded", json_integer(a->kstate.late_folded));
	json_object_set_new(d, "records_out_of_order", json_integer(a->seq_late));
	json_object_set_new(d, "splits_by_size", json_integer(a->model.split_guesses));
	/* Over all CPUs: faults whose RSS change came on another CPU (found
	 * there), and RSS changes in no fault and no traced call. */
	json_object_set_new(d, "faults_moved_cpu", json_integer(a->stats[MW_STAT_FAULT_MOVED]));
	json_object_set_new(d, "rss_changes_outside_faults",
			    json_integer(a->stats[MW_STAT_FAULT_NONE]));
	json_object_set_new(d, "slot_bytes_unplaced", json_integer(a->lost_attr[MW_ANON] +
							       a->lost_attr[MW_FILE] +
							       a->lost_attr[MW_SHMEM]));
	json_object_set_new(d, "rss_changes_external_bytes", json_integer(ext));
	/* Of those: made by other processes' calls that named the addresses,
	 * placed at once; and the changes at no known address, after which
	 * every mapping was measured again. */
	json_object_set_new(d, "remote_calls", json_integer(a->remote_calls));
	json_object_set_new(d, "rss_changes_remote_bytes", json_integer(a->remote_rss));
	json_object_set_new(d, "rss_changes_external_unplaced",
			    json_integer(a->kstate.external_changes));
	json_object_set_new(d, "remeasures_external", json_integer(a->remeasures));
	return d;
}

/* The kernel traced on: which BPF object, how RSS is counted, and each
 * degraded feature with its reason (user/capture/kernel.c). */
static json_t *kernel_json(const struct mw_kernel *k)
{
	json_t *deg = json_array();

	for (size_t i = 0; i < k->ndegraded; i++)
		json_array_append_new(deg, json_pack("{s:s, s:s}", "feature", k->degraded[i].feature,
						     "why", k->degraded[i].why));
	return json_pack("{s:o, s:s, s:s, s:s, s:I, s:o}", "release", jstr(k->release),
			 "bpf_object", k->compat ? "compat" : "main",
			 "rss_counting", k->split_rss ? "mm counters + per-task caches (before 6.2)" :
							"per-CPU mm counters",
			 "page_faults", kernel_fault_hook_name(k->fault_hook),
			 "page_size", (json_int_t)mw_page_size(),
			 "degraded", deg);
}

int report_json_summary(FILE *f, const struct mw_account *a, const struct report_opts *ro)
{
	size_t n, shown;
	struct mw_mapping **v = report_sorted_mappings(a, &n);
	json_t *maps = json_array(), *o;
	struct mw_findings fs;

	shown = MW_MIN(n, ro->max_mappings);
	for (size_t i = 0; i < shown; i++)
		json_array_append_new(maps, mapping_json(a, v[i]));
	if (shown < n || a->model.nfolded)
		json_array_append_new(maps, folded_json(v, shown, n, &a->model));
	free(v);

	o = json_pack("{s:s, s:i, s:o, s:I, s:o, s:o}",
		      "type", "summary", "pid", a->pid, "comm", jstr(a->comm),
		      "lost_events", (json_int_t)account_lost(a),
		      "totals", totals_json(a), "mappings", maps);
	json_object_set_new(o, "duration_ns", json_integer(a->end_ns > a->start_ns ?
							   a->end_ns - a->start_ns : 0));
	json_object_set_new(o, "exited", json_boolean(a->exited));
	if (ro->cmd_status >= 0 && WIFEXITED(ro->cmd_status))
		json_object_set_new(o, "exit_status", json_integer(WEXITSTATUS(ro->cmd_status)));
	if (ro->cmd_status >= 0 && WIFSIGNALED(ro->cmd_status))
		json_object_set_new(o, "exit_signal", json_integer(WTERMSIG(ro->cmd_status)));
	json_object_set_new(o, "execs", json_integer(a->execs));
	findings_compute(a, ro->find, &fs);
	json_object_set_new(o, "findings", report_json_findings(&fs));
	findings_free(&fs);
	json_object_set_new(o, "phases", phases_json(a));
	json_object_set_new(o, "iterations", iterations_json(a));
	json_object_set_new(o, "histograms", report_json_hists(a));
	json_object_set_new(o, "observer", observer_json(a));
	json_object_set_new(o, "gpu", gpu_json(a));
	if (callsites_any(&a->sites))
		json_object_set_new(o, "stacks", report_json_stacks(a));
	json_object_set_new(o, "diagnostics", diagnostics_json(a));
	if (ro->kernel)
		json_object_set_new(o, "kernel", kernel_json(ro->kernel));
	return jline(f, o);
}
