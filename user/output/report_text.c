// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * report_text.c — the report a person reads, 80 columns wide.
 * Names from other processes are printed with control bytes escaped, so a
 * hostile path cannot drive the terminal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "analysis/classify.h"
#include "analysis/faultkind.h"
#include "analysis/hist.h"
#include "analysis/hists.h"
#include "output/report.h"
#include "output/report_callsite.h"
#include "output/report_findings.h"
#include "output/report_hist.h"
#include "util.h"

/* "176.0M", "512K", "0": compact sizes for table columns. */
const char *size_short(int64_t v, char *buf, size_t len)
{
	uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v;
	const char *sign = v < 0 ? "-" : "";

	if (mag == 0)
		snprintf(buf, len, "0");
	else if (mag < 1024)
		snprintf(buf, len, "%s%lluB", sign, (unsigned long long)mag);
	else if (mag < (1ull << 20))
		snprintf(buf, len, "%s%.0fK", sign, mag / 1024.0);
	else if (mag < (1ull << 30))
		snprintf(buf, len, "%s%.1fM", sign, mag / 1048576.0);
	else
		snprintf(buf, len, "%s%.2fG", sign, mag / 1073741824.0);
	return buf;
}

/* Copy s escaping bytes a terminal would act on; keep the tail if long. */
const char *printable(const char *s, char *buf, size_t len, size_t width)
{
	char tmp[4200];
	size_t k = 0, n;

	for (const unsigned char *p = (const unsigned char *)s; *p && k + 5 < sizeof(tmp); p++) {
		if (*p < 0x20 || *p == 0x7f)
			k += snprintf(tmp + k, sizeof(tmp) - k, "\\x%02x", *p);
		else
			tmp[k++] = *p;
	}
	tmp[k] = 0;
	n = strlen(tmp);
	if (width && n > width) {
		memmove(tmp + 3, tmp + n - (width - 3), width - 2);
		memcpy(tmp, "...", 3);
	}
	memcpy(buf, tmp, MW_MIN(strlen(tmp) + 1, len));
	buf[len - 1] = 0;
	return buf;
}

static void header(FILE *f, const struct mw_account *a, const struct report_opts *ro)
{
	char comm[64];
	double secs = a->end_ns > a->start_ns ? (a->end_ns - a->start_ns) / 1e9 : 0;

	printable(a->comm, comm, sizeof(comm), 0);
	fprintf(f, "memwatch: PID %d (%s) ", a->pid, comm);
	if (a->execs)	/* the layout above the exec is gone: say so */
		fprintf(f, "after %llu exec%s, ", (unsigned long long)a->execs,
			a->execs > 1 ? "s" : "");
	if (ro->cmd_status >= 0 && WIFEXITED(ro->cmd_status))
		fprintf(f, "exited with status %d", WEXITSTATUS(ro->cmd_status));
	else if (ro->cmd_status >= 0 && WIFSIGNALED(ro->cmd_status))
		fprintf(f, "killed by signal %d", WTERMSIG(ro->cmd_status));
	else if (a->exited)
		fprintf(f, "exited");
	else
		fprintf(f, "still running");
	fprintf(f, ", traced for %.2f s\n\n", secs);
}

/* "<indent><label> first touch 1024, copy-on-write 3": the kinds there are,
 * nothing when there were no faults. */
static void fkinds_label(FILE *f, const char *indent, const char *label, struct mw_fkinds k)
{
	const char *sep = "";
	bool any = false;

	for (int i = 0; i < MW_FK_ALL; i++)
		any |= k.n[i] != 0;
	if (!any)
		return;
	fprintf(f, "%s%s", indent, label);
	for (int i = 0; i < MW_FK_ALL; i++) {
		if (!k.n[i])
			continue;
		fprintf(f, "%s %s %llu", sep, mw_fk_words(i), (unsigned long long)k.n[i]);
		sep = ",";
	}
	fputc('\n', f);
}

/* What the DRM drivers report for the process's clients at the end. */
static void gpu(FILE *f, const struct mw_account *a)
{
	static const char *const words[MW_DRM_NSTAT] = {
		[MW_DRM_TOTAL] = "total", [MW_DRM_SHARED] = "shared",
		[MW_DRM_RESIDENT] = "resident", [MW_DRM_PURGEABLE] = "purgeable",
		[MW_DRM_ACTIVE] = "active",
	};
	char b[32];

	for (size_t i = 0; i < a->ndrm; i++) {
		const struct mw_drm_client *c = &a->drm[i];

		fprintf(f, "  %-16s %s%s%s client %llu%s\n", i ? "" : "GPU (DRM)", c->driver,
			c->pdev[0] ? " " : "", c->pdev, (unsigned long long)c->client_id,
			c->nregions ? "" : ": no memory keys");
		for (uint32_t k = 0; k < c->nregions; k++) {
			fprintf(f, "    %-14s", c->r[k].name);
			for (int st = 0; st < MW_DRM_NSTAT; st++)
				if (c->r[k].have & (1u << st))
					fprintf(f, " %s %s", words[st],
						mw_human((int64_t)c->r[k].v[st], b, sizeof(b)));
			fputc('\n', f);
		}
	}
}

static void totals(FILE *f, const struct mw_account *a)
{
	const struct mw_proc *k = &a->kstate;
	char b1[32], b2[32];
	int first = 1;

	fprintf(f, "%-18s %12s %12s\n", "", "at end", "peak");
	fprintf(f, "  %-16s %12s %12s\n", "VM size", mw_human(account_vm(a), b1, sizeof(b1)),
		mw_human(account_vm_peak(a), b2, sizeof(b2)));
	if (a->model.device_vm_peak)	/* kind "device": a driver's mappings */
		fprintf(f, "    %-14s %12s %12s\n", "device",
			mw_human(model_kind_vm(&a->model, MW_K_DEVICE), b1, sizeof(b1)),
			mw_human(a->model.device_vm_peak, b2, sizeof(b2)));
	fprintf(f, "  %-16s %12s %12s\n", "RSS", mw_human(account_rss_total(a), b1, sizeof(b1)),
		mw_human(account_rss_peak(a), b2, sizeof(b2)));
	fprintf(f, "    %-14s %12s\n", "anon", mw_human(account_rss(a, MW_ANON), b1, sizeof(b1)));
	fprintf(f, "    %-14s %12s\n", "file", mw_human(account_rss(a, MW_FILE), b1, sizeof(b1)));
	fprintf(f, "    %-14s %12s\n", "shmem", mw_human(account_rss(a, MW_SHMEM), b1, sizeof(b1)));
	if (account_rss(a, MW_SWAP))
		fprintf(f, "    %-14s %12s\n", "swap", mw_human(account_rss(a, MW_SWAP), b1, sizeof(b1)));
	/* Memory that cannot be reclaimed or swapped (VmLck, VmPin). */
	if (k->locked_peak)
		fprintf(f, "  %-16s %12s %12s\n", "locked (mlock)",
			mw_human((int64_t)(k->pin.locked << mw_page_shift), b1, sizeof(b1)),
			mw_human((int64_t)(k->locked_peak << mw_page_shift), b2, sizeof(b2)));
	if (k->pinned_peak)
		fprintf(f, "  %-16s %12s %12s\n", "pinned",
			mw_human((int64_t)(k->pin.pinned << mw_page_shift), b1, sizeof(b1)),
			mw_human((int64_t)(k->pinned_peak << mw_page_shift), b2, sizeof(b2)));
	fprintf(f, "  %-16s %12llu   (user %llu, in kernel %llu)\n", "page faults",
		(unsigned long long)(k->faults + k->kfaults), (unsigned long long)k->faults,
		(unsigned long long)k->kfaults);
	fkinds_label(f, "    ", "by kind:", mw_fk_of(k->faults + k->kfaults, (const int64_t *)k->fk));
	gpu(f, a);
	fprintf(f, "  %-16s %12llu calls, VM mapped %s\n", "mmap",
		(unsigned long long)k->calls[MW_OP_MMAP], mw_human(k->mapped_bytes, b1, sizeof(b1)));
	fprintf(f, "  %-16s %12llu calls, VM unmapped %s\n", "munmap",
		(unsigned long long)k->calls[MW_OP_MUNMAP], mw_human(k->unmapped_bytes, b1, sizeof(b1)));
	fprintf(f, "  %-16s %12llu calls\n", "brk", (unsigned long long)k->calls[MW_OP_BRK]);
	fprintf(f, "  %-16s %12llu calls\n", "mremap", (unsigned long long)k->calls[MW_OP_MREMAP]);
	for (int op = MW_OP_MPROTECT; op < MW_NR_OPS; op++) {
		if (!k->calls[op])
			continue;
		fprintf(f, "%s%s %llu", first ? "  also             " : ", ",
			report_op_name(op), (unsigned long long)k->calls[op]);
		first = 0;
	}
	if (!first)
		fputc('\n', f);
	fprintf(f, "  %-16s %12llu", "lost events", (unsigned long long)account_lost(a));
	if (a->unapplied)
		fprintf(f, " (%llu not applied: the end came %.1f s behind the kernel)",
			(unsigned long long)a->unapplied, a->behind_ns / 1e9);
	fputc('\n', f);
	if (k->coalesced + k->coalescing)
		fprintf(f, "  %-16s %12llu calls in %llu windows: the ring buffer was 3/4 full, so\n"
			"  %-16s %12s they were counted, not sent; totals and layout exact, per-call\n"
			"  %-16s %12s detail inside them (histograms, per-mapping growth) missing\n",
			"coalesced", (unsigned long long)(k->coalesced + k->coalescing),
			(unsigned long long)(a->coalesced_windows + !!k->coalescing), "", "", "", "");
	fputc('\n', f);
}

static void mapping_row(FILE *f, const struct mw_account *a, const struct mw_mapping *mp)
{
	char perms[5], buf[4200], shown[64], s1[16], s2[16], s3[16];
	const char *path;

	mapping_perms(mp, perms);
	path = mapping_display_path(&a->model, mp, buf, sizeof(buf));
	fprintf(f, "%12llx %s %-6s %7s %7s %7s %7llu %c%s\n",
		(unsigned long long)mp->start, perms, mw_kind_name(mp->kind),
		size_short(mp->end - mp->start, s1, sizeof(s1)),
		size_short(mapping_rss_total(mp), s2, sizeof(s2)),
		size_short(mp->rss_peak, s3, sizeof(s3)),
		(unsigned long long)mp->faults, mp->unmapped ? '*' : ' ',
		printable(path, shown, sizeof(shown), 20));
}

static void mapping_section(FILE *f, const struct mw_account *a,
			    struct mw_mapping **v, size_t n, size_t max,
			    const char *title, size_t folded)
{
	size_t shown = MW_MIN(n, max);

	if (!n && !folded)
		return;
	fprintf(f, "%s, largest first (%zu of %zu)\n", title, shown, n + folded);
	fprintf(f, "%12s %-4s %-6s %7s %7s %7s %7s  %s\n", "START", "PERM", "KIND",
		"SIZE", "RSS", "PEAK", "FAULTS", "PATH");
	for (size_t i = 0; i < shown; i++)
		mapping_row(f, a, v[i]);
	if (shown < n + folded)
		fprintf(f, "%12s (%zu more; -m N shows more)\n", "...", n + folded - shown);
	fputc('\n', f);
}

/* Live mappings, then what was unmapped during the trace (RSS as it went). */
#define MW_KIND_ROWS 5

/* What the faults did in the mappings that took most of them. */
static void mapping_kinds(FILE *f, const struct mw_account *a, struct mw_mapping **v, size_t n)
{
	const struct mw_mapping *top[MW_KIND_ROWS] = { NULL };
	char buf[4200], path[32], size[16], label[96];

	for (size_t i = 0; i < n; i++) {
		const struct mw_mapping *mp = v[i];
		size_t k = MW_KIND_ROWS;

		while (k > 0 && mp->faults && (!top[k - 1] || mp->faults > top[k - 1]->faults))
			k--;
		if (k == MW_KIND_ROWS)
			continue;
		memmove(&top[k + 1], &top[k], (MW_KIND_ROWS - 1 - k) * sizeof(top[0]));
		top[k] = mp;
	}
	if (!top[0])
		return;
	fprintf(f, "Faults by kind, in the mappings that took most\n");
	for (size_t k = 0; k < MW_KIND_ROWS && top[k]; k++) {
		const struct mw_mapping *mp = top[k];

		printable(mapping_display_path(&a->model, mp, buf, sizeof(buf)), path, sizeof(path), 20);
		snprintf(label, sizeof(label), "%12llx %-5s %6s%s%s%s:", (unsigned long long)mp->start,
			 mw_kind_name(mp->kind), size_short(mp->end - mp->start, size, sizeof(size)),
			 mp->unmapped || path[0] ? " " : "", mp->unmapped ? "*" : "", path);
		fkinds_label(f, "  ", label, mw_fk_of(mp->faults, mp->fk));
	}
	fputc('\n', f);
}

static void mappings(FILE *f, const struct mw_account *a, const struct report_opts *ro)
{
	size_t n, nlive = a->model.nlive;
	struct mw_mapping **v = report_sorted_mappings(a, &n);
	char b1[32];

	mapping_section(f, a, v, nlive, ro->max_mappings, "Mappings at the end", 0);
	mapping_section(f, a, v + nlive, n - nlive, MW_MAX(ro->max_mappings / 2, 1),
			"Unmapped during the trace (RSS when unmapped)", a->model.nfolded);
	mapping_kinds(f, a, v, n);
	if (llabs(account_unattributed(a)) >= 64 << 10)
		fprintf(f, "RSS not placed in any mapping: %s\n",
			mw_human(account_unattributed(a), b1, sizeof(b1)));
	if (a->obs_vm) {
		char name[32] = "";

		if (a->obs_phase >= 0)
			printable(a->phases.v[a->obs_phase].name, name, sizeof(name), 18);
		fprintf(f, "memwatch's own: the [uprobes] page at %llx (%s), which the kernel maps "
			"for a marker's uprobe%s%s%s; not the program's growth\n",
			(unsigned long long)a->obs_start, mw_human((int64_t)a->obs_vm, b1, sizeof(b1)),
			name[0] ? ", in the start of phase \"" : "", name, name[0] ? "\"" : "");
	}
	free(v);
}

/* ---- phases, iterations, release ------------------------------------------ */

static void phases(FILE *f, const struct mw_account *a)
{
	const struct mw_phases *ph = &a->phases;
	char b[6][16], name[32];

	if (ph->n < 2 && !ph->nit)
		return;		/* no markers: the totals above say it all */
	fprintf(f, "Phases%20s %7s %7s %7s %7s %7s %7s\n", "secs", "VM", "+VM", "RSS",
		"+RSS", "PEAK", "FAULTS");
	for (size_t i = 0; i < ph->n; i++) {
		const struct mw_phase *p = &ph->v[i];

		printable(p->name, name, sizeof(name), 18);
		fprintf(f, "  %-18s %6.3f %7s %7s %7s %7s %7s %7llu\n", name,
			(p->end.ts - p->start.ts) / 1e9,
			size_short(p->end.vm, b[0], 16),
			size_short((int64_t)p->end.vm - (int64_t)p->start.vm, b[1], 16),
			size_short(point_rss(&p->end), b[2], 16),
			size_short(point_rss(&p->end) - point_rss(&p->start), b[3], 16),
			size_short(p->rss_peak, b[4], 16),
			(unsigned long long)(p->end.faults - p->start.faults));
		fkinds_label(f, "    ", "faults:", mw_fk_between(&p->start, &p->end));
		for (size_t k = 0; k < p->ntop && k < 3; k++) {
			const struct mw_growth *g = &p->top[k];
			char path[64];

			printable(g->path, path, sizeof(path), 26);
			fprintf(f, "    %s %-6s %7s asked %7s, RSS %7s%s %s\n",
				g->created ? "new" : "grew", mw_kind_name(g->kind),
				size_short(g->bytes, b[0], 16), size_short(g->requested, b[1], 16),
				size_short(g->rss_delta, b[2], 16), g->unmapped ? " (gone)" : "",
				path);
		}
	}
	fputc('\n', f);
}

static void iterations(FILE *f, const struct mw_account *a, const struct report_opts *ro)
{
	const struct mw_phases *ph = &a->phases;
	const struct mw_mapping *mp;
	struct mw_hist hv, hr;
	char b[4][16], buf[4200], path[64];
	int64_t vm, rss, fk[MW_FK_NR];
	uint64_t faults;
	size_t count;

	if (!ph->nit)
		return;
	report_steady_totals(a, &count, &vm, &rss, &faults, fk);
	fprintf(f, "Iterations: %zu; memory settled after iteration %zu\n", ph->nit,
		ph->settled_after);
	fprintf(f, "  first:  VM %s, RSS %s, %llu faults, %.3f s\n",
		size_short((int64_t)ph->it[0].end.vm - (int64_t)ph->it[0].start.vm, b[0], 16),
		size_short(point_rss(&ph->it[0].end) - point_rss(&ph->it[0].start), b[1], 16),
		(unsigned long long)(ph->it[0].end.faults - ph->it[0].start.faults),
		(ph->it[0].end.ts - ph->it[0].start.ts) / 1e9);
	fkinds_label(f, "          ", "faults:", mw_fk_between(&ph->it[0].start, &ph->it[0].end));
	fprintf(f, "  steady: %zu iterations, VM %s, RSS %s, %llu faults: %s\n", count,
		size_short(vm, b[2], 16), size_short(rss, b[3], 16),
		(unsigned long long)faults,
		ph->growing ? "GROWING (leak suspect)" : "flat");
	fkinds_label(f, "          ", "faults:", mw_fk_of(faults, fk));
	model_for_each(mp, &a->model) {

		if (!phases_mapping_grows(ph, mp))
			continue;
		printable(mapping_display_path(&a->model, mp, buf, sizeof(buf)), path,
			  sizeof(path), 30);
		fprintf(f, "    growing: %12llx %-6s %7s RSS %7s %s\n",
			(unsigned long long)mp->start, mw_kind_name(mp->kind),
			size_short(mp->end - mp->start, b[0], 16),
			size_short(mapping_rss_total(mp), b[1], 16), path);
	}
	report_steady_hist(a, &hv, &hr);
	if (count && (hists_selected(ro->hists) & MW_HISTS_ITER)) {
		fprintf(f, "  RSS growth per steady iteration:\n");
		hist_print(f, &hr, "bytes");
	}
	fputc('\n', f);
}

static void release(FILE *f, const struct mw_account *a)
{
	const struct mw_phases *ph = &a->phases;
	char b[4][16], name[32];
	bool any = false;

	for (size_t i = 0; i < ph->n; i++) {
		const struct mw_phase *p = &ph->v[i];

		if (!p->born_bytes || i == 0)
			continue;
		if (!any)
			fprintf(f, "What each phase mapped, and what is left  %8s %8s %8s %8s\n",
				"mapped", "released", "left", "left RSS");
		any = true;
		printable(p->name, name, sizeof(name), 18);
		fprintf(f, "  %-40s %8s %8s %8s %8s\n", name, size_short(p->born_bytes, b[0], 16),
			size_short(p->released_bytes, b[1], 16),
			size_short(p->remaining_bytes, b[2], 16),
			size_short(p->remaining_rss, b[3], 16));
	}
	if (any)
		fputc('\n', f);
}

void report_text_sample(FILE *f, const struct mw_account *a)
{
	const struct mw_phases *ph = &a->phases;
	const struct mw_point *p = &ph->samples[ph->nsamples - 1].at;
	const struct mw_point *prev = phases_prev_sample(ph);
	char b[6][16];

	if (!prev)
		fprintf(f, "%9s %8s %8s %8s %8s %8s %8s %9s\n", "secs", "VM", "+VM", "RSS",
			"+RSS", "anon", "file", "faults");
	fprintf(f, "%9.2f %8s %8s %8s %8s %8s %8s %9llu\n",
		p->ts > a->start_ns ? (p->ts - a->start_ns) / 1e9 : 0.0,
		size_short(p->vm, b[0], 16),
		size_short(prev ? (int64_t)p->vm - (int64_t)prev->vm : 0, b[1], 16),
		size_short(point_rss(p), b[2], 16),
		size_short(prev ? point_rss(p) - point_rss(prev) : 0, b[3], 16),
		size_short(p->rss[MW_ANON], b[4], 16), size_short(p->rss[MW_FILE], b[5], 16),
		(unsigned long long)(prev ? p->faults - prev->faults : p->faults));
	fflush(f);
}

void report_text(FILE *f, const struct mw_account *a, const struct report_opts *ro)
{
	struct mw_findings fs;

	header(f, a, ro);
	findings_compute(a, ro->find, &fs);
	report_text_findings(f, &fs, !(ro->find && ro->find->off));
	findings_free(&fs);
	totals(f, a);
	phases(f, a);
	iterations(f, a, ro);
	release(f, a);
	report_text_hists(f, a, ro);
	report_text_callsites(f, a);
	mappings(f, a, ro);
	fflush(f);
}
