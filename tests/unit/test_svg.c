// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_svg.c — unit tests for user/output/report_svg.c: the timeline of an account
 * built by driving its phases directly (as tests/unit/test_phase.c does),
 * written to a memory stream and checked as text: one balanced <svg>, every
 * phase named, the peaks labelled, hostile names escaped into valid UTF-8
 * with no control bytes, the series bounded however long the trace.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/account.h"
#include "analysis/phase.h"
#include "output/report.h"
#include "unit.h"
#include "util.h"

#define P	4096ll
#define MiB	(1024ll * 1024)
#define MS	1000000ull
#define T0	(5000 * MS)	/* the trace's start on the monotonic clock */

/* Bytes, not a C string: a name may hold any byte but NUL. */
static const char hostile[] = "<b>&\"x'\x01\x1b[31m\xff\xc3(\xed\xa0\x80z\xc2\x85";
/* What the SVG must say instead: each bad byte or sequence one U+FFFD. */
#define FFFD "\xef\xbf\xbd"
static const char hostile_esc[] = "&lt;b&gt;&amp;&quot;x&apos;" FFFD FFFD "[31m" FFFD FFFD "("
				  FFFD FFFD FFFD "z" FFFD FFFD;

static struct mw_point pt(uint64_t ms, uint64_t vm, int64_t anon, int64_t file, int64_t shmem)
{
	struct mw_point p;

	memset(&p, 0, sizeof(p));
	p.ts = T0 + ms * MS;
	p.vm = vm;
	p.rss[MW_ANON] = anon;
	p.rss[MW_FILE] = file;
	p.rss[MW_SHMEM] = shmem;
	return p;
}

static void mark(struct mw_account *a, __u32 kind, const char *name, struct mw_point p)
{
	phases_mark(&a->phases, &a->model, kind, name, &p, p.vm, (uint64_t)point_rss(&p));
}

/*
 * A demo-like trace of 400 ms: start, load_model (VM to 60 MiB), the hostile
 * phase, inference (5 iterations, VM peak 200 MiB, RSS peak 90 MiB), release;
 * a sample every 10 ms.
 */
static void build(struct mw_account *a, const char *comm)
{
	static const char *const names[] = {
		"start", "load_model", hostile, "inference", "release",
	};
	uint64_t vm;

	account_init(a, 4242, 0);
	snprintf(a->comm, sizeof(a->comm), "%s", comm);
	a->start_ns = T0;
	a->end_ns = T0 + 400 * MS;
	for (uint64_t ms = 0; ms < 400; ms += 10) {
		size_t ph = ms / 80;

		vm = ph == 0 ? 6 * MiB : ph == 1 ? 60 * MiB : ph == 2 ? 64 * MiB :
		     ph == 3 ? 200 * MiB : 150 * MiB;
		if (ms % 80 == 0)
			mark(a, MW_MARK_PHASE, names[ph], pt(ms, vm, MiB * ph * 10, 48 * MiB, 0));
		if (ph == 3 && ms % 20 == 0 && ms < 340)
			mark(a, MW_MARK_ITER, NULL, pt(ms, vm, 40 * MiB, 48 * MiB, 2 * MiB));
		mark(a, MW_MARK_SAMPLE, NULL, pt(ms + 5, vm, ph == 3 ? 40 * MiB : 10 * MiB,
						 ph == 4 ? MiB : 48 * MiB, ph >= 3 ? 2 * MiB : 0));
	}
	a->kstate.total_vm = 150 * MiB / P;
	a->kstate.vm_peak = 200 * MiB / P;
	a->kstate.rss[MW_ANON] = 10 * MiB;
	a->kstate.rss[MW_FILE] = MiB;
	a->kstate.rss_peak = 90 * MiB;
	{
		struct mw_point end = pt(400, 150 * MiB, 10 * MiB, MiB, 0);

		phases_finish(&a->phases, &a->model, &end, 150 * MiB, 13 * MiB);
	}
}

/* report_svg() into a string; NULL if it failed. */
static char *svg_of(const struct mw_account *a, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	int err;

	if (!f)
		return NULL;
	err = report_svg(f, a);
	fclose(f);
	if (!CHECK_EQ_INT(err, 0)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* Valid UTF-8 with no control byte but newline: what any viewer reads. */
static bool clean_utf8(const unsigned char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			   (c & 0xf8) == 0xf0 ? 4 : 0;

		if (!n || i + n > len || (c < 0x20 && c != '\n') || c == 0x7f || c == 0xc0 ||
		    c == 0xc1 || c > 0xf4)
			return false;
		for (size_t k = 1; k < n; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		if (c == 0xed && s[i + 1] >= 0xa0)
			return false;		/* a surrogate */
		if (c == 0xc2 && s[i + 1] < 0xa0)
			return false;		/* a C1 control */
		i += n;
	}
	return true;
}

/* Each opening tag of @tag has its closing one (or closes itself). */
static bool balanced(const char *s, const char *tag)
{
	char open[32], close[32];
	size_t opens = 0, selfs = 0;

	snprintf(open, sizeof(open), "<%s", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	for (const char *p = s; (p = strstr(p, open)); p++) {
		const char *end = strchr(p, '>');
		char next = p[strlen(open)];

		if (next != ' ' && next != '>')
			continue;	/* <text> is not a <t...> */
		opens++;
		selfs += end && end[-1] == '/';
	}
	return opens > 0 && opens - selfs == count(s, close);
}

TEST(draws_demo_like_trace)
{
	struct mw_account a;
	char *svg, want[128], b[32];
	size_t len;

	build(&a, "demo");
	svg = svg_of(&a, &len);
	if (!CHECK(svg))
		goto out;
	CHECK_EQ_U64(strlen(svg), len);		/* no NUL inside */
	CHECK(!strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 44));
	CHECK(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\""));
	CHECK(strstr(svg, "viewBox=\"0 0 1000 500\""));
	CHECK_EQ_U64(count(svg, "<svg"), 1);
	CHECK_EQ_U64(count(svg, "</svg>"), 1);
	CHECK(len > 7 && !strcmp(svg + len - 7, "</svg>\n"));
	CHECK(balanced(svg, "g"));
	CHECK(balanced(svg, "text"));
	CHECK(balanced(svg, "clipPath"));
	CHECK(balanced(svg, "path"));
	CHECK(!strstr(svg, "<script") && !strstr(svg, "href") && !strstr(svg, "@import"));
	CHECK(clean_utf8((const unsigned char *)svg, len));

	/* Every phase is named, each once. */
	CHECK_EQ_U64(count(svg, ">start</text>"), 1);
	CHECK_EQ_U64(count(svg, ">load_model</text>"), 1);
	CHECK_EQ_U64(count(svg, ">inference</text>"), 1);
	CHECK_EQ_U64(count(svg, ">release</text>"), 1);
	CHECK_EQ_U64(count(svg, "clip-path=\"url(#ph"), 5);
	/* The hostile one escaped, none of it raw. */
	snprintf(want, sizeof(want), ">%s</text>", hostile_esc);
	CHECK_EQ_U64(count(svg, want), 1);
	CHECK(!strstr(svg, "<b>"));
	CHECK(!strstr(svg, "x'"));

	/* The peaks, from the account's totals, each with its dot. */
	snprintf(want, sizeof(want), ">VM peak %s</text>", mw_human(200 * MiB, b, sizeof(b)));
	CHECK_EQ_U64(count(svg, want), 2);	/* the label and its halo */
	snprintf(want, sizeof(want), ">RSS peak %s</text>", mw_human(90 * MiB, b, sizeof(b)));
	CHECK_EQ_U64(count(svg, want), 2);
	CHECK_EQ_U64(count(svg, "<circle"), 2);

	/* Title, legend, axes in human units; the iterations as ticks. */
	CHECK(strstr(svg, ">demo (PID 4242): VM and RSS over 0.40 s</text>"));
	CHECK(strstr(svg, "<title>memwatch: demo (PID 4242)</title>"));
	CHECK(strstr(svg, ">VM size</text>") && strstr(svg, ">RSS anon</text>") &&
	      strstr(svg, ">RSS file</text>") && strstr(svg, ">RSS shmem</text>") &&
	      strstr(svg, ">iteration starts</text>"));
	CHECK(strstr(svg, "time since the trace began (ms)"));
	CHECK(strstr(svg, ">100</text>") && strstr(svg, ">400</text>"));
	CHECK(strstr(svg, ">0</text>"));
	CHECK(strstr(svg, ">128 MiB</text>"));
	CHECK(!strstr(svg, ">1024 "));		/* never 1024 of a unit */
	CHECK_EQ_U64(count(svg, "v-9"), a.phases.nit);
	CHECK_EQ_U64(a.phases.nit, 4);
	/* Three RSS layers and the VM line. */
	CHECK_EQ_U64(count(svg, "fill-opacity=\"0.85\""), 3);
	CHECK_EQ_U64(count(svg, "stroke=\"#c0392b\" stroke-width=\"2\" stroke-linejoin"), 1);
	free(svg);
out:
	account_free(&a);
}

/* A hostile command name is escaped too. */
TEST(escapes_comm)
{
	struct mw_account a;
	char *svg;
	size_t len;

	build(&a, "a<b>&\x07");
	svg = svg_of(&a, &len);
	if (CHECK(svg)) {
		CHECK(strstr(svg, ">a&lt;b&gt;&amp;" FFFD " (PID 4242): "));
		CHECK(strstr(svg, "<title>memwatch: a&lt;b&gt;&amp;" FFFD " (PID 4242)</title>"));
		CHECK(clean_utf8((const unsigned char *)svg, len));
	}
	free(svg);
	account_free(&a);
}

/* No samples at all: the start and the end still make a series. */
TEST(draws_without_samples)
{
	struct mw_account a;
	struct mw_point p;
	char *svg;
	size_t len;

	account_init(&a, 7, 0);
	snprintf(a.comm, sizeof(a.comm), "true");
	a.start_ns = T0;
	a.end_ns = T0 + 3 * MS;
	p = pt(0, 2 * MiB, 0, MiB, 0);
	mark(&a, MW_MARK_PHASE, "start", p);
	a.kstate.total_vm = 3 * MiB / P;
	a.kstate.rss[MW_FILE] = MiB;
	p = pt(3, 3 * MiB, 0, MiB, 0);
	phases_finish(&a.phases, &a.model, &p, 3 * MiB, MiB);
	svg = svg_of(&a, &len);
	if (CHECK(svg)) {
		const char *vm = strstr(svg, "stroke-linejoin=\"round\" d=\"M");

		CHECK(vm && strstr(vm, "L"));		/* a line from start to end */
		CHECK_EQ_U64(count(svg, ">start</text>"), 1);
		CHECK(strstr(svg, ">VM peak 3.0 MiB</text>"));
		CHECK(!strstr(svg, "iteration starts"));
		CHECK_EQ_U64(count(svg, "</svg>"), 1);
		CHECK(balanced(svg, "g"));
	}
	free(svg);
	account_free(&a);

	/* Not even a phase (an empty recording): still a picture. */
	account_init(&a, 0, 0);
	svg = svg_of(&a, &len);
	if (CHECK(svg)) {
		CHECK_EQ_U64(count(svg, "</svg>"), 1);
		CHECK(strstr(svg, ">? (PID 0): "));
		CHECK(clean_utf8((const unsigned char *)svg, len));
		CHECK(!strstr(svg, "nan") && !strstr(svg, "inf"));
	}
	free(svg);
	account_free(&a);
}

/* Days of samples and 200000 iterations: the picture stays small. */
TEST(bounded_for_long_traces)
{
	struct mw_account a;
	char *svg;
	size_t len;
	uint64_t s = 1000 * MS;

	account_init(&a, 9, 0);
	snprintf(a.comm, sizeof(a.comm), "server");
	a.start_ns = T0;
	mark(&a, MW_MARK_PHASE, "start", pt(0, 8 * MiB, MiB, MiB, 0));
	mark(&a, MW_MARK_PHASE, "serve", pt(1000, 64 * MiB, 8 * MiB, MiB, 0));
	for (uint64_t i = 0; i < 200000; i++) {
		struct mw_point p = pt(0, 64 * MiB + (i / 200) * P, 8 * MiB + i * 40, MiB, 0);

		p.ts = T0 + s + i * 1296 * MS;	/* 3 days */
		phases_mark(&a.phases, &a.model, MW_MARK_ITER, NULL, &p, 0, 0);
		if (i % 4 == 0)
			phases_mark(&a.phases, &a.model, MW_MARK_SAMPLE, NULL, &p, 0, 0);
	}
	CHECK(a.phases.nsamples <= MW_MAX_SAMPLES);
	a.end_ns = T0 + s + 200000 * 1296 * MS;
	a.kstate.total_vm = (64 * MiB + 1000 * P) / P;
	{
		struct mw_point end = pt(0, 64 * MiB + 1000 * P, 16 * MiB, MiB, 0);

		end.ts = a.end_ns;
		phases_finish(&a.phases, &a.model, &end, 0, 0);
	}
	svg = svg_of(&a, &len);
	if (CHECK(svg)) {
		CHECK(len < 400 * 1024);
		CHECK(count(svg, "v-9") <= 2 * 900);
		CHECK(strstr(svg, "time since the trace began (h)"));
		CHECK(strstr(svg, ">serve</text>"));
		CHECK_EQ_U64(count(svg, "</svg>"), 1);
	}
	free(svg);
	account_free(&a);
}

/* 100000 phases (one per request, say): bands and points stay bounded. */
TEST(many_phases)
{
	struct mw_account a;
	char *svg, name[32];
	size_t len;

	account_init(&a, 11, 0);
	snprintf(a.comm, sizeof(a.comm), "busy");
	a.start_ns = T0;
	for (uint64_t i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "req%llu", (unsigned long long)i);
		mark(&a, MW_MARK_PHASE, name, pt(i, 64 * MiB + (i % 7) * P, 8 * MiB, MiB, 0));
	}
	a.end_ns = T0 + 100000 * MS;
	{
		struct mw_point end = pt(100000, 64 * MiB, 8 * MiB, MiB, 0);

		phases_finish(&a.phases, &a.model, &end, 0, 0);
	}
	svg = svg_of(&a, &len);
	if (CHECK(svg)) {
		CHECK(len < 400 * 1024);
		CHECK(count(svg, "<rect") < 2 * 900);
		CHECK_EQ_U64(count(svg, "</svg>"), 1);
		CHECK(balanced(svg, "g"));
		CHECK(strstr(svg, "time since the trace began (s)"));
	}
	free(svg);
	account_free(&a);
}

/* A stream that cannot be written: -errno, not 0. */
TEST(write_error)
{
	struct mw_account a;
	FILE *f = fopen("/dev/full", "w");

	if (!CHECK(f))
		return;
	build(&a, "demo");
	CHECK_EQ_INT(report_svg(f, &a), -ENOSPC);
	fclose(f);
	account_free(&a);
}

int main(void)
{
	RUN(draws_demo_like_trace);
	RUN(escapes_comm);
	RUN(draws_without_samples);
	RUN(bounded_for_long_traces);
	RUN(many_phases);
	RUN(write_error);
	return unit_done();
}
