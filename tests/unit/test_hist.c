// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_hist.c — unit tests for user/analysis/hist.c: log2 slots, their bounds, the
 * range in use, and the bcc-style printout compared line by line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hist.h"
#include "unit.h"

/* The one slot a single value lands in. */
static int slot_of(uint64_t v)
{
	struct mw_hist h;
	int first, last;

	memset(&h, 0, sizeof(h));
	hist_add(&h, v);
	if (!hist_range(&h, &first, &last) || first != last || h.count != 1)
		return -2;
	return first;
}

TEST(add_bucket_boundaries)
{
	CHECK_EQ_INT(slot_of(0), 0);
	CHECK_EQ_INT(slot_of(1), 1);
	CHECK_EQ_INT(slot_of(2), 2);
	CHECK_EQ_INT(slot_of(3), 2);
	CHECK_EQ_INT(slot_of(4), 3);
	CHECK_EQ_INT(slot_of(7), 3);
	CHECK_EQ_INT(slot_of(8), 4);
	CHECK_EQ_INT(slot_of(1023), 10);
	CHECK_EQ_INT(slot_of(1024), 11);
	CHECK_EQ_INT(slot_of(1025), 11);
	CHECK_EQ_INT(slot_of(4096), 13);
	CHECK_EQ_INT(slot_of((1ull << 32) - 1), 32);
	CHECK_EQ_INT(slot_of(1ull << 32), 33);
	CHECK_EQ_INT(slot_of((1ull << 63) - 1), 63);
	CHECK_EQ_INT(slot_of(1ull << 63), 64);
	CHECK_EQ_INT(slot_of(UINT64_MAX), 64);
	CHECK_EQ_INT(MW_HIST_SLOTS, 65);
}

/* Every value falls in the slot whose bounds contain it. */
TEST(add_agrees_with_bounds)
{
	for (int b = 0; b < 64; b++) {
		uint64_t vals[3] = { 1ull << b, (1ull << b) - 1, (1ull << b) + 1 };

		for (int k = 0; k < 3; k++) {
			uint64_t v = vals[k], lo, hi;
			int s = slot_of(v);

			hist_bounds(s, &lo, &hi);
			if (!CHECK(v >= lo && v <= hi))
				fprintf(stderr, "  value %llu slot %d [%llu, %llu]\n",
					(unsigned long long)v, s, (unsigned long long)lo,
					(unsigned long long)hi);
		}
	}
}

TEST(add_counts)
{
	struct mw_hist h;

	memset(&h, 0, sizeof(h));
	hist_add(&h, 0);
	hist_add(&h, 0);
	hist_add(&h, 1);
	hist_add(&h, 2);
	hist_add(&h, 3);
	hist_add(&h, 1023);
	hist_add(&h, 1024);
	hist_add(&h, 1ull << 63);
	hist_add(&h, UINT64_MAX);
	CHECK_EQ_U64(h.count, 9);
	CHECK_EQ_U64(h.slot[0], 2);
	CHECK_EQ_U64(h.slot[1], 1);
	CHECK_EQ_U64(h.slot[2], 2);
	CHECK_EQ_U64(h.slot[3], 0);
	CHECK_EQ_U64(h.slot[10], 1);
	CHECK_EQ_U64(h.slot[11], 1);
	CHECK_EQ_U64(h.slot[64], 2);
	uint64_t sum = 0;
	for (int i = 0; i < MW_HIST_SLOTS; i++)
		sum += h.slot[i];
	CHECK_EQ_U64(sum, 9);
}

/* Slot @s holds the values @want_lo to @want_hi. */
static void check_bounds(int s, uint64_t want_lo, uint64_t want_hi)
{
	uint64_t lo, hi;
	bool ok;

	hist_bounds(s, &lo, &hi);
	ok = CHECK_EQ_U64(lo, want_lo);
	ok &= CHECK_EQ_U64(hi, want_hi);
	if (!ok)
		fprintf(stderr, "  slot %d\n", s);
}

TEST(bounds)
{
	uint64_t lo, hi;

	check_bounds(0, 0, 0);
	check_bounds(1, 1, 1);
	check_bounds(2, 2, 3);
	check_bounds(3, 4, 7);
	check_bounds(10, 512, 1023);
	check_bounds(11, 1024, 2047);
	check_bounds(63, 1ull << 62, (1ull << 63) - 1);
	check_bounds(64, 1ull << 63, UINT64_MAX);

	/* Adjacent slots tile the whole range with no gap or overlap. */
	for (int i = 1; i < MW_HIST_SLOTS; i++) {
		uint64_t plo, phi;

		hist_bounds(i - 1, &plo, &phi);
		hist_bounds(i, &lo, &hi);
		CHECK_EQ_U64(lo, phi + 1);
		CHECK(hi >= lo);
	}
}

/* hist_range() of @h: slots @want_first to @want_last in use, or with
 * -1, -1 none (and it says so). */
static void check_range(const struct mw_hist *h, int want_first, int want_last)
{
	int first = 7, last = 7;
	bool ok;

	ok = CHECK(!!hist_range(h, &first, &last) == (want_first >= 0));
	ok &= CHECK_EQ_INT(first, want_first);
	ok &= CHECK_EQ_INT(last, want_last);
	if (!ok)
		fprintf(stderr, "  want slots %d to %d\n", want_first, want_last);
}

TEST(range)
{
	struct mw_hist h;

	memset(&h, 0, sizeof(h));
	check_range(&h, -1, -1);

	hist_add(&h, 100);		/* slot 7 */
	check_range(&h, 7, 7);

	hist_add(&h, 5);		/* slot 3 */
	hist_add(&h, 70000);		/* slot 17 */
	check_range(&h, 3, 17);

	hist_add(&h, 0);
	hist_add(&h, UINT64_MAX);
	check_range(&h, 0, 64);
}

/* ---- printing ------------------------------------------------------------- */

static char *print_to_string(const struct mw_hist *h, const char *unit)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	hist_print(f, h, unit);
	fclose(f);
	return buf;
}

/* Compare the output with the expected lines, one by one. */
static void check_lines(const char *got, const char *const *want, size_t n)
{
	const char *p = got;
	size_t i;

	for (i = 0; i < n && *p; i++) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		char *line = strndup(p, l);

		CHECK_STR(line, want[i]);
		free(line);
		if (!CHECK(nl != NULL))
			return;
		p = nl + 1;
	}
	CHECK_EQ_U64(i, n);
	CHECK_STR(p, "");	/* nothing after the last expected line */
}

/* Print @h in @unit and compare with the lines of the array @want. */
#define CHECK_PRINT(h, unit, want) \
	check_print((h), (unit), (want), sizeof(want) / sizeof((want)[0]))

static void check_print(const struct mw_hist *h, const char *unit,
			const char *const *want, size_t n)
{
	char *out = print_to_string(h, unit);

	check_lines(out, want, n);
	free(out);
}

#define STARS40 "****************************************"
#define STARS20 "********************"

TEST(print_small)
{
	struct mw_hist h;
	char *out;
	static const char *const want[] = {
		"              bytes      : count    distribution",
		"         0 -> 0          : 1        |**********                              |",
		"         1 -> 1          : 1        |**********                              |",
		"         2 -> 3          : 2        |********************                    |",
		"         4 -> 7          : 4        |" STARS40 "|",
	};

	memset(&h, 0, sizeof(h));
	hist_add(&h, 0);
	hist_add(&h, 1);
	hist_add(&h, 2);
	hist_add(&h, 3);
	for (int i = 0; i < 4; i++)
		hist_add(&h, 5);
	out = print_to_string(&h, "bytes");
	check_lines(out, want, sizeof(want) / sizeof(want[0]));

	/* bcc's layout: the header's colon sits over the rows' colons, and
	 * rows are the same width (inside 80 columns). */
	const char *row = strchr(out, '\n') + 1;
	CHECK_EQ_INT(strchr(out, ':') - out, strchr(row, ':') - row);
	CHECK_EQ_U64(strchr(row, '\n') - row, 78);
	free(out);
}

/* Rows start at the first slot in use, end at the last; empty slots in
 * between show 0 and no stars; counts are scaled to the largest. */
TEST(print_gap_and_scale)
{
	struct mw_hist h;
	static const char *const want[] = {
		"              usecs      : count    distribution",
		"      1024 -> 2047       : 3        |*************                           |",
		"      2048 -> 4095       : 0        |                                        |",
		"      4096 -> 8191       : 0        |                                        |",
		"      8192 -> 16383      : 9        |" STARS40 "|",
		"     16384 -> 32767      : 1        |****                                    |",
	};

	memset(&h, 0, sizeof(h));
	for (int i = 0; i < 3; i++)
		hist_add(&h, 1024 + i * 500);
	for (int i = 0; i < 9; i++)
		hist_add(&h, 8192 + i * 900);
	hist_add(&h, 20000);
	CHECK_PRINT(&h, "usecs", want);
}

TEST(print_one_slot_and_long_unit)
{
	struct mw_hist h;
	static const char *const want[] = {
		"              kilobytes-x : count    distribution",
		"     65536 -> 131071     : 123456789 |" STARS40 "|",
	};

	memset(&h, 0, sizeof(h));
	h.slot[17] = 123456789;
	h.count = 123456789;
	CHECK_PRINT(&h, "kilobytes-x", want);
}

TEST(print_top_slot)
{
	struct mw_hist h;
	static const char *const want[] = {
		"                                  bytes      : count    distribution",
		" 9223372036854775808 -> 18446744073709551615 : 2        |" STARS20 "|",
	};

	memset(&h, 0, sizeof(h));
	hist_add(&h, 1ull << 63);
	hist_add(&h, UINT64_MAX);
	CHECK_PRINT(&h, "bytes", want);
}

/* The widest narrow slot still fits ten digits; the next one switches the
 * whole histogram to twenty, keeping rows inside 80 columns. */
TEST(print_wide_from_slot_34)
{
	struct mw_hist h;
	static const char *const narrow[] = {
		"              bytes      : count    distribution",
		"4294967296 -> 8589934591 : 1        |" STARS40 "|",
	};
	static const char *const wide[] = {
		"                                  bytes      : count    distribution",
		"          4294967296 -> 8589934591           : 1        |" STARS20 "|",
		"          8589934592 -> 17179869183          : 1        |" STARS20 "|",
	};
	char *out, *p;

	memset(&h, 0, sizeof(h));
	hist_add(&h, (1ull << 33) - 1);
	CHECK_PRINT(&h, "bytes", narrow);
	hist_add(&h, 1ull << 33);
	CHECK_PRINT(&h, "bytes", wide);
	out = print_to_string(&h, "bytes");
	for (p = out; *p; p = strchr(p, '\n') + 1)
		CHECK(strchr(p, '\n') - p <= 80);
	free(out);
}

TEST(print_empty)
{
	struct mw_hist h;
	char *out;

	memset(&h, 0, sizeof(h));
	out = print_to_string(&h, "bytes");
	CHECK_STR(out, "");
	free(out);
}

int main(void)
{
	RUN(add_bucket_boundaries);
	RUN(add_agrees_with_bounds);
	RUN(add_counts);
	RUN(bounds);
	RUN(range);
	RUN(print_small);
	RUN(print_gap_and_scale);
	RUN(print_one_slot_and_long_unit);
	RUN(print_top_slot);
	RUN(print_wide_from_slot_34);
	RUN(print_empty);
	return unit_done();
}
