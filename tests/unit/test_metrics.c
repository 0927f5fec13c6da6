// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_metrics.c — unit tests for user/host/metrics.c and user/host/metrics_http.c:
 * a hand-built host view rendered as OpenMetrics and as text 0.0.4, checked
 * line by line against the format's grammar (families whole and never
 * repeated, sample names that fit their family's type, UNIT a suffix, label
 * values escaped, valid UTF-8, "# EOF" last), hostile comm and cgroup names
 * escaped exactly, top_n + "other" adding up to the view's totals; the
 * --listen address parser; and the HTTP endpoint on loopback (503 before the
 * first view, 200 with the right body and content type after, 404, 405,
 * HEAD, a port in use, a bad address, no capabilities in its thread).
 * `promtool check metrics` and a real Prometheus are tests/e2e/prometheus_cases.py's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "host/metrics.h"
#include "unit.h"
#include "util.h"

#define MiB	(1024ll * 1024)
#define NPROCS	9
#define NCG	60			/* more than MW_METRICS_TOP_CGROUPS */
#define TOP	3
#define FFFD	"\xef\xbf\xbd"

/* Bytes, not a C string: a comm may hold any byte but NUL (15 + NUL). */
static const char hostile_comm[] = "a\\b\"c\nd\xff\x1b[31m\xc2\x85";
static const char hostile_comm_esc[] = "a\\\\b\\\"c\\nd" FFFD FFFD "[31m" FFFD;
static const char hostile_path[] = "/evil\"}\\\n\xc3(\x01/x\xe2\x82\xac";
static const char hostile_path_esc[] = "/evil\\\"}\\\\\\n" FFFD "(" FFFD "/x\xe2\x82\xac";
static const char hostile_phase[] = "step \"2\"\n\\";
static const char hostile_phase_esc[] = "step \\\"2\\\"\\n\\\\";

static struct mw_hproc procs[NPROCS];
static struct mw_hcgroup cgroups[NCG];
static char paths[NCG][32];

static int64_t rss_of(const int64_t *rss)
{
	return rss[MW_ANON] + rss[MW_FILE] + rss[MW_SHMEM];
}

/*
 * Nine processes in no particular order (RSS anon 1..9 MiB, scattered), the
 * largest with the hostile comm, one with a comm that fills all 16 bytes
 * (no NUL), one in a cgroup the view does not list; sixty cgroups, one with
 * the hostile path, one the root.
 */
static void build(struct mw_hostview *v)
{
	memset(v, 0, sizeof(*v));
	memset(procs, 0, sizeof(procs));
	memset(cgroups, 0, sizeof(cgroups));
	for (int i = 0; i < NPROCS; i++) {
		struct mw_hproc *p = &procs[i];

		p->pid = 100 + i;
		snprintf(p->comm, sizeof(p->comm), "proc%d", i);
		p->cgroup_id = 1000 + i % 3;
		p->rss[MW_ANON] = (i * 4 % NPROCS + 1) * MiB;
		p->rss[MW_FILE] = i * 3 * 4096;
		p->rss[MW_SHMEM] = i * 4096;
		p->rss[MW_SWAP] = i * 8192;
		p->vm = 100 * MiB + i * 4096;
		p->vm_peak = p->vm + 5 * 4096;
		p->rss_peak = (uint64_t)rss_of(p->rss) + MiB;
		p->faults = 1000 + i;
		p->mapped = (i + 1) * 2 * MiB;
		p->unmapped = i * MiB;
		p->locked = (uint64_t)(i % 3) * MiB;
		p->pinned = (uint64_t)i * 4096;
		p->device_vm = (uint64_t)(i % 4) * 2 * MiB;
	}
	/* i = 2: 4 * 2 % 9 + 1 = 9 MiB, the largest. */
	memcpy(procs[2].comm, hostile_comm, sizeof(hostile_comm));
	memset(procs[4].comm, 'z', sizeof(procs[4].comm));	/* no NUL */
	procs[7].cgroup_id = 999999;
	for (int i = 0; i < NCG; i++) {
		struct mw_hcgroup *c = &cgroups[i];

		c->id = 1000 + i;
		snprintf(paths[i], sizeof(paths[i]), "/slice/cg%d", i);
		c->path = paths[i];
		c->nprocs = i % 5;
		c->vm = (200 + i) * MiB;
		c->rss[MW_ANON] = (i * 37 % NCG + 1) * MiB;
		c->rss[MW_FILE] = i * 4096;
		c->rss[MW_SHMEM] = 2 * i * 4096;
		c->rss[MW_SWAP] = 3 * i * 4096;
		c->faults = 10 * i;
		c->mapped = i * MiB;
		c->unmapped = i * 4096;
		c->locked = (uint64_t)i * MiB;
		c->pinned = (uint64_t)(i % 2) * 4096;
		c->device_vm = (uint64_t)(i % 3) * 64 * MiB;
	}
	cgroups[1].path = hostile_path;
	cgroups[2].path = "/";
	v->ts_ns = 7 * MW_NS_PER_SEC + 250;
	v->start_ns = 2 * MW_NS_PER_SEC;
	v->interval_ns = MW_NS_PER_SEC;
	v->procs = procs;
	v->nprocs = NPROCS;
	v->cgroups = cgroups;
	v->ncgroups = NCG;
	v->mem_total = 8192 * MiB;
	v->mem_available = 5000 * MiB;
	v->phase = "load_model";
	v->health = (struct mw_health){
		.events = 12345, .lost = 7, .procs_seen = 40, .procs_exited = 31,
		.procs_tracked = 9, .procs_capacity = 65536,
		.loader_cpu_ns = 1500000000, .loader_rss_bytes = 20 * MiB,
	};
}

static char *render(const struct mw_hostview *v, size_t top_n, bool om)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		abort();
	err = om ? metrics_render(f, v, top_n) : metrics_render_text(f, v, top_n);
	fclose(f);
	CHECK_EQ_INT(err, 0);
	return buf;
}

/* ---- a checker for the format's grammar ------------------------------------ */

static bool valid_utf8(const unsigned char *s)
{
	while (*s) {
		int n = *s < 0x80 ? 0 : (*s & 0xe0) == 0xc0 ? 1 : (*s & 0xf0) == 0xe0 ? 2 :
			(*s & 0xf8) == 0xf0 ? 3 : -1;

		if (n < 0 || (n == 1 && *s < 0xc2))
			return false;
		if (n == 2 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
			return false;	/* overlong, surrogate */
		if (n == 3 && (s[0] > 0xf4 || (s[0] == 0xf0 && s[1] < 0x90) ||
			       (s[0] == 0xf4 && s[1] >= 0x90)))
			return false;
		for (int i = 1; i <= n; i++)
			if ((s[i] & 0xc0) != 0x80)
				return false;
		s += n + 1;
	}
	return true;
}

static bool metric_name_ok(const char *s, size_t n)
{
	if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return false;
	return true;
}

/* Labels {name="value",...}: returns the byte after '}', or NULL. */
static const char *labels_ok(const char *p)
{
	if (*p++ != '{')
		return NULL;
	while (*p != '}') {
		const char *n = p;

		while (isalnum((unsigned char)*p) || *p == '_')
			p++;
		if (p == n || isdigit((unsigned char)*n) || *p++ != '=' || *p++ != '"')
			return NULL;
		for (; *p != '"'; p++) {
			if (!*p || *p == '\n' || (unsigned char)*p < 0x20)
				return NULL;
			if (*p == '\\' && (!*++p || !strchr("\\\"n", *p)))
				return NULL;
		}
		p++;
		if (*p == ',')
			p++;
		else if (*p != '}')
			return NULL;
	}
	return p + 1;
}

#define MAX_FAM 64

/* Checks the whole text; @om: OpenMetrics, else text 0.0.4. */
static void check_grammar(const char *text, bool om)
{
	char fams[MAX_FAM][96], type[32] = "", fam[96] = "";
	size_t nfams = 0, nsamples = 0;
	bool eof = false;
	const char *line = text;

	CHECK(valid_utf8((const unsigned char *)text));
	CHECK(text[0] && text[strlen(text) - 1] == '\n');
	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl - line;
		char buf[1024];

		if (!CHECK(nl && len < sizeof(buf)))
			return;
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = nl + 1;
		if (!CHECK(!eof))		/* nothing after # EOF */
			return;
		if (!strcmp(buf, "# EOF")) {
			CHECK(om);
			eof = true;
			continue;
		}
		if (!strncmp(buf, "# TYPE ", 7)) {
			char name[96], t[32];

			if (!CHECK(sscanf(buf, "# TYPE %95s %31s", name, t) == 2))
				continue;
			for (size_t i = 0; i < nfams; i++)
				CHECK(strcmp(fams[i], name));	/* one block per family */
			if (nfams < MAX_FAM)
				snprintf(fams[nfams++], sizeof(fams[0]), "%s", name);
			snprintf(fam, sizeof(fam), "%s", name);
			snprintf(type, sizeof(type), "%s", t);
			CHECK(!strcmp(t, "gauge") || !strcmp(t, "counter") ||
			      (om && !strcmp(t, "info")));
			CHECK(metric_name_ok(name, strlen(name)));
			if (!om && !strcmp(t, "counter"))
				CHECK(strlen(name) > 6 && !strcmp(name + strlen(name) - 6, "_total"));
			continue;
		}
		if (!strncmp(buf, "# UNIT ", 7)) {
			char name[96], unit[32], suffix[40];

			CHECK(om);
			CHECK(sscanf(buf, "# UNIT %95s %31s", name, unit) == 2);
			CHECK_STR(name, fam);
			snprintf(suffix, sizeof(suffix), "_%s", unit);
			CHECK(strlen(name) > strlen(suffix) &&
			      !strcmp(name + strlen(name) - strlen(suffix), suffix));
			continue;
		}
		if (!strncmp(buf, "# HELP ", 7)) {
			/* HELP may come before TYPE in text 0.0.4. */
			const char *name = buf + 7;
			size_t n = strcspn(name, " ");

			if (!om && strncmp(name, fam, n)) {
				snprintf(fam, sizeof(fam), "%.*s", (int)n, name);
				type[0] = '\0';
			}
			CHECK(!strncmp(name, fam, n) && strlen(fam) == n);
			CHECK(!strpbrk(name + n, "\"\\"));
			continue;
		}
		CHECK(buf[0] != '#');
		/* A sample: name, labels, one space, a number. */
		{
			size_t n = strcspn(buf, "{ ");
			char want[128];
			const char *rest = buf + n;
			char *end;

			nsamples++;
			CHECK(metric_name_ok(buf, n));
			CHECK(type[0]);
			snprintf(want, sizeof(want), "%s%s", fam,
				 om && !strcmp(type, "counter") ? "_total" :
				 om && !strcmp(type, "info") ? "_info" : "");
			if (!CHECK(n == strlen(want) && !strncmp(buf, want, n)))
				fprintf(stderr, "  sample %s of family %s\n", buf, fam);
			if (*rest == '{')
				rest = labels_ok(rest);
			if (!CHECK(rest && *rest == ' ')) {
				fprintf(stderr, "  bad labels: %s\n", buf);
				continue;
			}
			strtod(rest + 1, &end);
			CHECK(end != rest + 1 && !*end);
			if (!strcmp(type, "counter") || !strcmp(type, "info"))
				CHECK(rest[1] != '-');
		}
	}
	CHECK(eof == om);
	CHECK(nsamples > 0);
}

/* ---- reading values back ---------------------------------------------------- */

/* The value of the sample line that begins with @prefix exactly, or -1. */
static int64_t value_of(const char *text, const char *prefix)
{
	size_t n = strlen(prefix);

	for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
		if (!strncmp(l, prefix, n) && l[n] == ' ')
			return strtoll(l + n + 1, NULL, 10);
		if (!strchr(l, '\n'))
			break;
	}
	return -1;
}

/* Sum and count of the samples of @name (with type=@type, if given). */
static int64_t sum_of(const char *text, const char *name, const char *type, size_t *count)
{
	char tl[48];
	size_t n = strlen(name);
	int64_t sum = 0;

	snprintf(tl, sizeof(tl), ",type=\"%s\"}", type ? type : "");
	*count = 0;
	for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
		const char *nl = strchr(l, '\n'), *sp;

		if (!strncmp(l, name, n) && l[n] == '{') {
			sp = memrchr(l, ' ', nl - l);
			if (!type || (memmem(l, nl - l, tl, strlen(tl)))) {
				sum += strtoll(sp + 1, NULL, 10);
				(*count)++;
			}
		}
	}
	return sum;
}

static size_t count_lines(const char *text, const char *prefix)
{
	size_t n = 0, len = strlen(prefix);

	for (const char *l = text; *l; l = strchr(l, '\n') + 1)
		n += !strncmp(l, prefix, len);
	return n;
}

/* ---- tests ------------------------------------------------------------------ */

TEST(openmetrics_grammar)
{
	struct mw_hostview v;
	char *om, *text;

	build(&v);
	om = render(&v, TOP, true);
	text = render(&v, TOP, false);
	check_grammar(om, true);
	check_grammar(text, false);
	/* "# EOF" is the very last line. */
	CHECK(strlen(om) >= 6 && !strcmp(om + strlen(om) - 6, "# EOF\n"));
	free(om);
	free(text);
}

TEST(names_and_types)
{
	struct mw_hostview v;
	char *om, *text;

	build(&v);
	om = render(&v, TOP, true);
	text = render(&v, TOP, false);
	CHECK(strstr(om, "# TYPE memwatch_process_rss_bytes gauge\n"
			 "# UNIT memwatch_process_rss_bytes bytes\n# HELP memwatch_process_rss_bytes "));
	CHECK(strstr(om, "# TYPE memwatch_process_page_faults counter\n"));
	CHECK(strstr(om, "# TYPE memwatch_process_mapped_bytes counter\n"
			 "# UNIT memwatch_process_mapped_bytes bytes\n"));
	CHECK(strstr(om, "\nmemwatch_process_mapped_bytes_total{pid=\""));
	CHECK(strstr(om, "# TYPE memwatch_phase info\n"));
	CHECK(strstr(om, "# TYPE memwatch_loader_cpu_seconds counter\n"
			 "# UNIT memwatch_loader_cpu_seconds seconds\n"));
	CHECK(strstr(om, "\nmemwatch_loader_cpu_seconds_total 1.500000000\n"));
	CHECK(strstr(om, "\nmemwatch_tracing_seconds 5.000000250\n"));
	CHECK_EQ_INT(value_of(om, "memwatch_events_total"), 12345);
	CHECK_EQ_INT(value_of(om, "memwatch_lost_events_total"), 7);
	CHECK_EQ_INT(value_of(om, "memwatch_processes_seen_total"), 40);
	CHECK_EQ_INT(value_of(om, "memwatch_processes_exited_total"), 31);
	CHECK_EQ_INT(value_of(om, "memwatch_processes_tracked"), 9);
	CHECK_EQ_INT(value_of(om, "memwatch_processes_capacity"), 65536);
	CHECK_EQ_INT(value_of(om, "memwatch_loader_rss_bytes"), 20 * MiB);
	CHECK_EQ_INT(value_of(om, "memwatch_host_memory_total_bytes"), 8192 * MiB);
	CHECK_EQ_INT(value_of(om, "memwatch_host_memory_available_bytes"), 5000 * MiB);
	CHECK_EQ_INT(value_of(om, "memwatch_phase_info{phase=\"load_model\"}"), 1);

	/* Text 0.0.4: the same samples, counters' families named with _total,
	 * the phase a gauge, no UNIT, no EOF. */
	CHECK(strstr(text, "# HELP memwatch_process_page_faults_total "));
	CHECK(strstr(text, "# TYPE memwatch_process_page_faults_total counter\n"));
	CHECK(strstr(text, "# TYPE memwatch_phase_info gauge\n"));
	CHECK(!strstr(text, "# UNIT") && !strstr(text, "# EOF"));
	CHECK_EQ_INT(value_of(text, "memwatch_events_total"), 12345);
	{
		/* Every sample line is the same in both. */
		size_t a = 0, b = 0;

		for (const char *l = om; *l; l = strchr(l, '\n') + 1)
			a += *l != '#';
		for (const char *l = text; *l; l = strchr(l, '\n') + 1)
			b += *l != '#';
		CHECK_EQ_U64(a, b);
	}
	free(om);
	free(text);
}

TEST(hostile_names_escaped)
{
	struct mw_hostview v;
	char want[256], *om;

	build(&v);
	v.phase = hostile_phase;
	om = render(&v, NPROCS, true);
	/* The hostile comm's process (102) is in cgroup 1002, "/"; 101 in
	 * 1001, the one with the hostile path. */
	snprintf(want, sizeof(want), "memwatch_process_vm_bytes{pid=\"102\",comm=\"%s\",cgroup=\"/\",container=\"\"}",
		 hostile_comm_esc);
	CHECK_EQ_INT(value_of(om, want), 100 * MiB + 2 * 4096);
	snprintf(want, sizeof(want), "memwatch_process_vm_bytes{pid=\"101\",comm=\"proc1\",cgroup=\"%s\",container=\"\"}",
		 hostile_path_esc);
	CHECK_EQ_INT(value_of(om, want), 100 * MiB + 4096);
	snprintf(want, sizeof(want), "memwatch_cgroup_vm_bytes{cgroup=\"%s\",container=\"\"}", hostile_path_esc);
	CHECK_EQ_INT(value_of(om, want), 201 * MiB);	/* its RSS is in the top 50 */
	/* A comm of 16 bytes with no NUL: all 16, nothing after. */
	CHECK(strstr(om, "{pid=\"104\",comm=\"zzzzzzzzzzzzzzzz\",cgroup=\""));
	/* A cgroup the view does not list: by its id. */
	CHECK(strstr(om, "{pid=\"107\",comm=\"proc7\",cgroup=\"id:999999\",container=\"\"}"));
	snprintf(want, sizeof(want), "memwatch_phase_info{phase=\"%s\"}", hostile_phase_esc);
	CHECK_EQ_INT(value_of(om, want), 1);
	check_grammar(om, true);
	free(om);
}

TEST(hostile_cgroup_in_top)
{
	struct mw_hostview v;
	char want[256], *om;

	build(&v);
	cgroups[1].rss[MW_ANON] = 1000 * MiB;	/* the largest now */
	om = render(&v, TOP, true);
	snprintf(want, sizeof(want), "memwatch_cgroup_rss_bytes{cgroup=\"%s\",container=\"\",type=\"anon\"}",
		 hostile_path_esc);
	CHECK_EQ_INT(value_of(om, want), 1000 * MiB);
	/* It leads: the series come largest RSS first. */
	snprintf(want, sizeof(want), "# HELP memwatch_cgroup_vm_bytes %s\nmemwatch_cgroup_vm_bytes{cgroup=\"%s\",container=\"\"}",
		 "Virtual memory size of the traced processes in the cgroup.", hostile_path_esc);
	CHECK(strstr(om, want));
	free(om);
}

/* The processes with the top_n largest RSS, by the view (not the renderer). */
static bool in_top(const struct mw_hproc *p, size_t top_n)
{
	size_t larger = 0;

	for (int i = 0; i < NPROCS; i++)
		larger += rss_of(procs[i].rss) > rss_of(p->rss);
	return larger < top_n;
}

static void check_top(size_t top_n)
{
	struct mw_hostview v;
	char prefix[64], *om;
	size_t n, expect = MW_MIN(top_n, (size_t)NPROCS);

	build(&v);
	om = render(&v, top_n, true);
	for (int i = 0; i < NPROCS; i++) {
		snprintf(prefix, sizeof(prefix), "memwatch_process_vm_bytes{pid=\"%d\",", procs[i].pid);
		CHECK_EQ_INT(count_lines(om, prefix), in_top(&procs[i], top_n));
	}
	/* Each family: a series per top process (per type), and "other". */
	sum_of(om, "memwatch_process_vm_bytes", NULL, &n);
	CHECK_EQ_U64(n, expect + 1);
	sum_of(om, "memwatch_process_rss_bytes", NULL, &n);
	CHECK_EQ_U64(n, 3 * (expect + 1));
	CHECK_EQ_U64(count_lines(om, "memwatch_process_page_faults_total{pid=\"\",comm=\"other\",cgroup=\"\",container=\"\"} "), 1);
	sum_of(om, "memwatch_cgroup_vm_bytes", NULL, &n);
	CHECK_EQ_U64(n, MW_METRICS_TOP_CGROUPS + 1);
	CHECK_EQ_U64(count_lines(om, "memwatch_cgroup_vm_bytes{cgroup=\"other\",container=\"\"} "), 1);
	free(om);
}

TEST(top_n_and_other)
{
	check_top(TOP);
	check_top(0);
	check_top(1);
	check_top(NPROCS);
	check_top(1000);
}

/* Whatever top_n, each family adds up to the view's total. */
static void check_sums(size_t top_n)
{
	static const char *const types[] = { "anon", "file", "shmem" };
	static const int members[] = { MW_ANON, MW_FILE, MW_SHMEM };
	struct mw_hostview v;
	int64_t vm = 0, peak = 0, swap = 0, faults = 0, mapped = 0, unmapped = 0;
	int64_t locked = 0, pinned = 0, clocked = 0, cpinned = 0, dev = 0, cdev = 0;
	int64_t cvm = 0, cswap = 0, cfaults = 0, cprocs = 0;
	size_t n;
	char *om;

	build(&v);
	om = render(&v, top_n, true);
	for (int i = 0; i < NPROCS; i++) {
		vm += procs[i].vm;
		peak += procs[i].rss_peak;
		swap += procs[i].rss[MW_SWAP];
		faults += procs[i].faults;
		mapped += procs[i].mapped;
		unmapped += procs[i].unmapped;
		locked += procs[i].locked;
		pinned += procs[i].pinned;
		dev += procs[i].device_vm;
	}
	for (int i = 0; i < NCG; i++) {
		clocked += cgroups[i].locked;
		cpinned += cgroups[i].pinned;
		cdev += cgroups[i].device_vm;
		cvm += cgroups[i].vm;
		cswap += cgroups[i].rss[MW_SWAP];
		cfaults += cgroups[i].faults;
		cprocs += cgroups[i].nprocs;
	}
	CHECK_EQ_INT(sum_of(om, "memwatch_process_vm_bytes", NULL, &n), vm);
	CHECK_EQ_INT(sum_of(om, "memwatch_process_rss_peak_bytes", NULL, &n), peak);
	CHECK_EQ_INT(sum_of(om, "memwatch_process_swap_bytes", NULL, &n), swap);
	CHECK_EQ_INT(sum_of(om, "memwatch_process_page_faults_total", NULL, &n), faults);
	CHECK_EQ_INT(sum_of(om, "memwatch_process_mapped_bytes_total", NULL, &n), mapped);
	CHECK_EQ_INT(sum_of(om, "memwatch_process_unmapped_bytes_total", NULL, &n), unmapped);
	CHECK_EQ_INT(sum_of(om, "memwatch_process_locked_bytes", NULL, &n), locked);
	CHECK_EQ_INT(sum_of(om, "memwatch_process_pinned_bytes", NULL, &n), pinned);
	CHECK_EQ_INT(sum_of(om, "memwatch_cgroup_locked_bytes", NULL, &n), clocked);
	CHECK_EQ_INT(sum_of(om, "memwatch_cgroup_pinned_bytes", NULL, &n), cpinned);
	CHECK_EQ_INT(sum_of(om, "memwatch_process_device_vm_bytes", NULL, &n), dev);
	CHECK_EQ_INT(sum_of(om, "memwatch_cgroup_device_vm_bytes", NULL, &n), cdev);
	for (int t = 0; t < 3; t++) {
		int64_t want = 0, cwant = 0;

		for (int i = 0; i < NPROCS; i++)
			want += procs[i].rss[members[t]];
		for (int i = 0; i < NCG; i++)
			cwant += cgroups[i].rss[members[t]];
		CHECK_EQ_INT(sum_of(om, "memwatch_process_rss_bytes", types[t], &n), want);
		CHECK_EQ_U64(n, MW_MIN(top_n, (size_t)NPROCS) + 1);
		CHECK_EQ_INT(sum_of(om, "memwatch_cgroup_rss_bytes", types[t], &n), cwant);
	}
	CHECK_EQ_INT(sum_of(om, "memwatch_cgroup_vm_bytes", NULL, &n), cvm);
	CHECK_EQ_INT(sum_of(om, "memwatch_cgroup_swap_bytes", NULL, &n), cswap);
	CHECK_EQ_INT(sum_of(om, "memwatch_cgroup_page_faults_total", NULL, &n), cfaults);
	CHECK_EQ_INT(sum_of(om, "memwatch_cgroup_processes", NULL, &n), cprocs);
	free(om);
}

TEST(top_n_plus_other_add_up)
{
	check_sums(TOP);
	check_sums(0);
	check_sums(NPROCS);
}

TEST(exact_series)
{
	struct mw_hostview v;
	char *om;

	build(&v);
	om = render(&v, NPROCS, true);
	/* proc8 (in cgroup 1002, "/"): anon 4 * 8 % 9 + 1 = 6 MiB, file 24 pages, shmem 8 pages. */
	CHECK_EQ_INT(value_of(om, "memwatch_process_rss_bytes{pid=\"108\",comm=\"proc8\","
				  "cgroup=\"/\",container=\"\",type=\"anon\"}"), 6 * MiB);
	CHECK_EQ_INT(value_of(om, "memwatch_process_rss_bytes{pid=\"108\",comm=\"proc8\","
				  "cgroup=\"/\",container=\"\",type=\"file\"}"), 24 * 4096);
	CHECK_EQ_INT(value_of(om, "memwatch_process_rss_bytes{pid=\"108\",comm=\"proc8\","
				  "cgroup=\"/\",container=\"\",type=\"shmem\"}"), 8 * 4096);
	CHECK_EQ_INT(value_of(om, "memwatch_process_swap_bytes{pid=\"108\",comm=\"proc8\","
				  "cgroup=\"/\",container=\"\"}"), 8 * 8192);
	CHECK_EQ_INT(value_of(om, "memwatch_process_page_faults_total{pid=\"108\",comm=\"proc8\","
				  "cgroup=\"/\",container=\"\"}"), 1008);
	/* The series come largest RSS first: pid 102 (9 MiB) leads. */
	CHECK(strstr(om, "\nmemwatch_process_vm_bytes{pid=\"102\","));
	free(om);
}

/* A container's cgroup: its name (here the short id: no engine state) in
 * the container label of its series and of its processes'. */
TEST(container_label)
{
	static const char path[] =
		"/libpod_parent/libpod-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	struct mw_hostview v;
	char want[256], *om;

	build(&v);
	cgroups[0].path = path;		/* proc3's: 1000 + 3 % 3 */
	cgroups[0].rss[MW_ANON] = 999 * MiB;	/* in the top 50 */
	om = render(&v, NPROCS, true);
	snprintf(want, sizeof(want), "{cgroup=\"%s\",container=\"0123456789ab\"}", path);
	CHECK(strstr(om, want));
	snprintf(want, sizeof(want), "comm=\"proc3\",cgroup=\"%s\",container=\"0123456789ab\"}", path);
	CHECK(strstr(om, want));
	check_grammar(om, true);
	free(om);
	cgroups[0].path = paths[0];
	cgroups[0].rss[MW_ANON] = MiB;
}

TEST(empty_view)
{
	struct mw_hostview v;
	char *om, *text;

	memset(&v, 0, sizeof(v));
	om = render(&v, TOP, true);
	text = render(&v, TOP, false);
	check_grammar(om, true);
	check_grammar(text, false);
	CHECK_EQ_INT(value_of(om, "memwatch_process_vm_bytes{pid=\"\",comm=\"other\",cgroup=\"\",container=\"\"}"), 0);
	CHECK_EQ_INT(value_of(om, "memwatch_cgroup_rss_bytes{cgroup=\"other\",container=\"\",type=\"anon\"}"), 0);
	CHECK_EQ_INT(value_of(om, "memwatch_phase_info{phase=\"start\"}"), 1);
	free(om);
	free(text);
}

TEST(write_error)
{
	struct mw_hostview v;
	char small[64];
	FILE *f = fmemopen(small, sizeof(small), "w");

	build(&v);
	setvbuf(f, NULL, _IONBF, 0);
	CHECK_EQ_INT(metrics_render(f, &v, TOP), -EIO);
	fclose(f);
}

/* ---- the address ------------------------------------------------------------- */

static bool parses(const char *s, int family, const char *addr, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	char buf[INET6_ADDRSTRLEN] = "";

	if (metrics_parse_addr(s, &ss, &len))
		return false;
	if (ss.ss_family != family)
		return false;
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
		return len == sizeof(*in) && ntohs(in->sin_port) == port && !strcmp(buf, addr);
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
	return len == sizeof(*in6) && ntohs(in6->sin6_port) == port && !strcmp(buf, addr);
}

TEST(addresses)
{
	static const char *const bad[] = {
		"", ":", "9464:", "abc:1", "1.2.3.4:0", ":65536", "::1:9464", "[::1]9464",
		"[::1]:", "1.2.3:9", "1.2.3.4:+5", " 9464", "9464 ", "[zz]:1", "[]:1",
		"1.2.3.4:99999999999999999999", "host.example:80", "1.2.3.4:-1", "[::1]:1:2",
		"256.1.1.1:1", "0x7f.0.0.1:1",
	};
	struct sockaddr_storage ss;
	socklen_t len;

	CHECK(parses("9464", AF_INET, "127.0.0.1", 9464));
	CHECK(parses(":9464", AF_INET, "127.0.0.1", 9464));
	CHECK(parses("localhost:1", AF_INET, "127.0.0.1", 1));
	CHECK(parses("0.0.0.0:80", AF_INET, "0.0.0.0", 80));
	CHECK(parses("10.1.2.3:65535", AF_INET, "10.1.2.3", 65535));
	CHECK(parses("[::1]:9464", AF_INET6, "::1", 9464));
	CHECK(parses("[::]:9464", AF_INET6, "::", 9464));
	CHECK(parses("[fe80::1:2]:8080", AF_INET6, "fe80::1:2", 8080));
	for (size_t i = 0; i < MW_ARRAY_SIZE(bad); i++)
		if (!CHECK_EQ_INT(metrics_parse_addr(bad[i], &ss, &len), -EINVAL))
			fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
	CHECK_EQ_INT(metrics_parse_addr(NULL, &ss, &len), -EINVAL);
}

/* ---- the endpoint -------------------------------------------------------------- */

static int free_port(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(in);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	bind(fd, (struct sockaddr *)&in, sizeof(in));
	getsockname(fd, (struct sockaddr *)&in, &len);
	port = ntohs(in.sin_port);
	close(fd);
	return port;
}

/* One request; the whole response (headers and body) into @buf. */
static size_t http(int port, const char *req, char *buf, size_t size)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;
	ssize_t n;

	buf[0] = '\0';
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&in, sizeof(in)) ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		close(fd);
		return 0;
	}
	while (got + 1 < size && (n = read(fd, buf + got, size - 1 - got)) > 0)
		got += n;
	buf[got] = '\0';
	close(fd);
	return got;
}

static const char *body_of(const char *resp)
{
	const char *b = strstr(resp, "\r\n\r\n");

	return b ? b + 4 : "";
}

/* metrics_listen() with stderr caught: its exit code and what it said. */
static int listen_caught(const char *addr, char *msg, size_t size, struct mw_metrics **m)
{
	FILE *tmp = tmpfile();
	int saved = dup(2), rc;
	size_t n;

	fflush(stderr);
	dup2(fileno(tmp), 2);
	rc = metrics_listen(m, addr, TOP);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(msg, 1, size - 1, tmp);
	msg[n] = '\0';
	fclose(tmp);
	return rc;
}

static bool one_line(const char *msg, const char *prefix)
{
	const char *nl = strchr(msg, '\n');

	return !strncmp(msg, prefix, strlen(prefix)) && nl && !nl[1];
}

/* Every thread but this one (the HTTP thread) has no capabilities and
 * SIGINT and SIGTERM blocked. */
static void check_http_thread(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	size_t others = 0;

	if (!CHECK(d))
		return;
	while ((e = readdir(d))) {
		char path[320], line[256];
		unsigned long long prm = ~0ull, eff = ~0ull, blk = 0;
		FILE *f;

		if (e->d_name[0] == '.' || atoi(e->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "CapPrm: %llx", &prm);
			sscanf(line, "CapEff: %llx", &eff);
			sscanf(line, "SigBlk: %llx", &blk);
		}
		fclose(f);
		others++;
		CHECK_EQ_U64(prm, 0);
		CHECK_EQ_U64(eff, 0);
		CHECK(blk & (1ull << (SIGINT - 1)) && blk & (1ull << (SIGTERM - 1)));
	}
	closedir(d);
	CHECK(others >= 1);
}

TEST(endpoint)
{
	static char resp[1 << 20];
	struct mw_metrics *m = NULL;
	struct mw_hostview v;
	char addr[32], msg[512], *om, *text;
	int port = free_port();

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	if (!CHECK_EQ_INT(listen_caught(addr, msg, sizeof(msg), &m), 0) || !CHECK(m))
		return;
	CHECK_STR(msg, "");
	check_http_thread();

	http(port, "GET /metrics HTTP/1.0\r\n\r\n", resp, sizeof(resp));
	CHECK(!strncmp(resp, "HTTP/1.0 503", 12) || !strncmp(resp, "HTTP/1.1 503", 12));

	build(&v);
	metrics_publish(m, &v);
	om = render(&v, TOP, true);
	text = render(&v, TOP, false);
	/* The copy is the endpoint's: what the caller does next is not seen. */
	procs[0].vm = 1;
	cgroups[1].path = "/changed";
	v.phase = "changed";

	http(port, "GET /metrics HTTP/1.0\r\n\r\n", resp, sizeof(resp));
	CHECK(strstr(resp, " 200 OK\r\n"));
	CHECK(strcasestr(resp, "\r\nContent-Type: " MW_METRICS_TEXT_TYPE "\r\n"));
	CHECK_STR(body_of(resp), text);

	http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAccept: "
		   "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
		   "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n\r\n",
	     resp, sizeof(resp));
	CHECK(strstr(resp, " 200 OK\r\n"));
	CHECK(strcasestr(resp, "\r\nContent-Type: " MW_METRICS_OPENMETRICS_TYPE "\r\n"));
	CHECK_STR(body_of(resp), om);

	http(port, "HEAD /metrics HTTP/1.0\r\n\r\n", resp, sizeof(resp));
	CHECK(strstr(resp, " 200 OK\r\n"));
	CHECK_STR(body_of(resp), "");

	http(port, "GET / HTTP/1.0\r\n\r\n", resp, sizeof(resp));
	CHECK(strstr(resp, " 404 "));
	http(port, "GET /metrics/x HTTP/1.0\r\n\r\n", resp, sizeof(resp));
	CHECK(strstr(resp, " 404 "));
	http(port, "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc", resp, sizeof(resp));
	CHECK(strstr(resp, " 405 "));
	CHECK(strcasestr(resp, "\r\nAllow: GET, HEAD\r\n"));

	/* A newer view replaces the older. */
	build(&v);
	v.phase = "second";
	metrics_publish(m, &v);
	http(port, "GET /metrics HTTP/1.0\r\n\r\n", resp, sizeof(resp));
	CHECK(strstr(resp, "\nmemwatch_phase_info{phase=\"second\"} 1\n"));

	/* The port is taken now: one line, exit 7. */
	{
		struct mw_metrics *m2 = NULL;

		CHECK_EQ_INT(listen_caught(addr, msg, sizeof(msg), &m2), MW_EXIT_OUTPUT);
		CHECK(!m2);
		if (!CHECK(one_line(msg, "memwatch: --listen 127.0.0.1:")) ||
		    !CHECK(strstr(msg, "in use")))
			fprintf(stderr, "  said: %s", msg);
		metrics_stop(m2);
	}
	metrics_stop(m);
	free(om);
	free(text);

	/* Stopped: the port is free again at once. */
	CHECK_EQ_INT(listen_caught(addr, msg, sizeof(msg), &m), 0);
	metrics_stop(m);
}

TEST(bad_listen_address)
{
	struct mw_metrics *m = (struct mw_metrics *)&m;
	char msg[512];

	CHECK_EQ_INT(listen_caught("127.0.0.1:http", msg, sizeof(msg), &m), MW_EXIT_USAGE);
	CHECK(!m);
	CHECK(one_line(msg, "memwatch: --listen 127.0.0.1:http: "));
	CHECK_EQ_INT(listen_caught("::1:9464", msg, sizeof(msg), &m), MW_EXIT_USAGE);
	CHECK(one_line(msg, "memwatch: --listen ::1:9464: "));
}

int main(void)
{
	RUN(openmetrics_grammar);
	RUN(names_and_types);
	RUN(hostile_names_escaped);
	RUN(hostile_cgroup_in_top);
	RUN(top_n_and_other);
	RUN(top_n_plus_other_add_up);
	RUN(exact_series);
	RUN(container_label);
	RUN(empty_view);
	RUN(write_error);
	RUN(addresses);
	RUN(endpoint);
	RUN(bad_listen_address);
	return unit_done();
}
