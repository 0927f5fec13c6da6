// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* report_findings.c — findings in words (text) and as objects (JSON). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/classify.h"
#include "output/jsonutil.h"
#include "output/report.h"
#include "output/report_findings.h"
#include "util.h"

#define WIDTH 80

/* s word-wrapped to WIDTH, the first line after lead, the rest indented. */
static void wrapped(FILE *f, const char *lead, const char *indent, const char *s)
{
	char buf[4200];
	size_t col = strlen(lead), ind = strlen(indent);
	bool first = true;
	const char *p;

	printable(s, buf, sizeof(buf), 0);
	fputs(lead, f);
	for (p = buf; *p == ' '; p++)
		;
	while (*p) {
		const char *sp = strchr(p, ' ');
		size_t w = sp ? (size_t)(sp - p) : strlen(p);

		if (!first && col + 1 + w > WIDTH) {
			fprintf(f, "\n%s", indent);
			col = ind;
		} else if (!first) {
			fputc(' ', f);
			col++;
		}
		first = false;
		fwrite(p, 1, w, f);
		col += w;
		p += w;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

/* "rss_kept_bytes" as words: "RSS kept". */
static const char *what_words(const char *what, char *buf, size_t len)
{
	size_t n = strlen(what);

	if (n > 6 && strcmp(what + n - 6, "_bytes") == 0)
		n -= 6;
	snprintf(buf, len, "%.*s", (int)n, what);
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = ' ';
	if (strncmp(buf, "rss", 3) == 0)
		memcpy(buf, "RSS", 3);
	return buf;
}

static void map_line(FILE *f, const struct mw_fmap *m)
{
	char path[64], b1[16], b2[16], what[64], line[512];
	const char *sep = m->path && *m->path ? " " : "";

	printable(m->path ? m->path : "", path, sizeof(path), 28);
	what_words(m->what, what, sizeof(what));
	if (m->count > 1)
		snprintf(line, sizeof(line), "%llu x %s %s%s%s: %s %s", (unsigned long long)m->count,
			 size_short((int64_t)m->bytes, b1, sizeof(b1)), mw_kind_name(m->kind), sep,
			 path, what, size_short(m->value, b2, sizeof(b2)));
	else
		snprintf(line, sizeof(line), "%llx %s %s%s%s%s: %s %s", (unsigned long long)m->start,
			 size_short((int64_t)m->bytes, b1, sizeof(b1)), mw_kind_name(m->kind), sep,
			 path, m->unmapped ? " (gone)" : "", what,
			 size_short(m->value, b2, sizeof(b2)));
	wrapped(f, "      mapping ", "        ", line);
	if (m->site)
		wrapped(f, "        from ", "          ", m->site);
}

void report_text_findings(FILE *f, const struct mw_findings *fs, bool say_none)
{
	char lead[128], b[16], line[1024];

	if (!fs->n) {
		if (say_none)
			fprintf(f, "Findings: none (thresholds: --threshold, see --help)\n\n");
		return;
	}
	fprintf(f, "Findings (%zu)\n", fs->n);
	for (size_t i = 0; i < fs->n; i++) {
		const struct mw_finding *x = &fs->v[i];
		char kind[48];

		snprintf(kind, sizeof(kind), "%s", finding_kind_name(x->kind));
		for (char *p = kind; *p; p++)
			if (*p == '_')
				*p = ' ';
		snprintf(lead, sizeof(lead), "  %zu. [%s] %s: ", i + 1,
			 finding_severity_name(x->severity), kind);
		wrapped(f, lead, "     ", x->summary);
		for (size_t k = 0; k < x->nmaps; k++)
			map_line(f, &x->maps[k]);
		if (x->maps_more)
			fprintf(f, "      ... %llu more mappings\n", (unsigned long long)x->maps_more);
		for (size_t k = 0; k < x->nsites; k++) {
			const struct mw_fsite *s = &x->sites[k];

			snprintf(line, sizeof(line), "%s (%s in %llu mapping%s%s%s)", s->site,
				 size_short(s->value, b, sizeof(b)), (unsigned long long)s->count,
				 s->count == 1 ? "" : "s", s->allocator ? "; allocator: " : "",
				 s->allocator ? s->allocator : "");
			wrapped(f, "      call site ", "        ", line);
		}
		if (x->remedy)
			wrapped(f, "      remedy: ", "        ", x->remedy);
	}
	fputc('\n', f);
}

json_t *report_json_findings(const struct mw_findings *fs)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < fs->n; i++) {
		const struct mw_finding *x = &fs->v[i];
		json_t *o = json_object(), *nums = json_object(), *maps = json_array(),
		       *sites = json_array();

		json_object_set_new(o, "kind", json_string(finding_kind_name(x->kind)));
		json_object_set_new(o, "severity", json_string(finding_severity_name(x->severity)));
		json_object_set_new(o, "summary", jstr(x->summary));
		json_object_set_new(o, "remedy", x->remedy ? jstr(x->remedy) : json_null());
		for (size_t k = 0; k < x->nnums; k++)
			json_object_set_new(nums, x->nums[k].key, json_integer(x->nums[k].v));
		json_object_set_new(o, "numbers", nums);
		for (size_t k = 0; k < x->nmaps; k++) {
			const struct mw_fmap *m = &x->maps[k];
			json_t *mo = json_pack("{s:o, s:I, s:s, s:o, s:I, s:s, s:I, s:b}",
					       "start", jhex(m->start),
					       "bytes", (json_int_t)m->bytes,
					       "kind", mw_kind_name(m->kind), "path", jstr(m->path),
					       "value", (json_int_t)m->value, "what", m->what,
					       "count", (json_int_t)m->count, "unmapped", m->unmapped);

			if (m->site)
				json_object_set_new(mo, "call_site", jstr(m->site));
			json_array_append_new(maps, mo);
		}
		json_object_set_new(o, "mappings", maps);
		if (x->maps_more)
			json_object_set_new(o, "more_mappings", json_integer(x->maps_more));
		for (size_t k = 0; k < x->nsites; k++) {
			const struct mw_fsite *s = &x->sites[k];

			json_array_append_new(sites, json_pack("{s:o, s:o, s:I, s:I}",
				"site", jstr(s->site),
				"allocator", s->allocator ? jstr(s->allocator) : json_null(),
				"value", (json_int_t)s->value, "mappings", (json_int_t)s->count));
		}
		json_object_set_new(o, "call_sites", sites);
		if (x->pid) {
			char comm[MW_COMM_LEN + 1];

			memcpy(comm, x->comm, MW_COMM_LEN);
			comm[MW_COMM_LEN] = 0;
			json_object_set_new(o, "pid", json_integer(x->pid));
			json_object_set_new(o, "comm", jstr(comm));
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

void report_host_findings(FILE *text, FILE *json, const struct mw_hfind *h,
			  const struct mw_find_opts *o, uint64_t start_ns)
{
	struct mw_findings fs;

	if (o->off)
		return;
	hfind_findings(h, o, start_ns, &fs);
	if (text) {
		report_text_findings(text, &fs, true);
		fflush(text);
	}
	if (json) {
		json_t *line = json_object();
		char *s;

		json_object_set_new(line, "type", json_string("findings"));
		json_object_set_new(line, "findings", report_json_findings(&fs));
		json_object_set_new(line, "intervals", json_integer(h->intervals));
		json_object_set_new(line, "exits_not_listed", json_integer(h->exits_more));
		s = json_dumps(line, JSON_COMPACT);
		if (s)
			fprintf(json, "%s\n", s);
		free(s);
		json_decref(line);
		fflush(json);
	}
	findings_free(&fs);
}
