// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_pyline.c — user/unwind/pyline.c against the lines CPython 3.11
 * reports itself: pyline_cases.h holds code objects compiled by
 * /usr/bin/python3.11 (tests/unit/gen-pyline-cases) with co_positions()'s
 * line of every code unit.
 */
#include "unit.h"
#include "unwind/pyline.h"
#include "pyline_cases.h"

#define CHECKF(cond, ...) unit_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

TEST(every_code_unit_matches_python)
{
	size_t units = 0, bad = 0, lines = 0;

	for (size_t i = 0; i < sizeof(pl_cases) / sizeof(pl_cases[0]); i++) {
		const struct pl_case *c = &pl_cases[i];

		for (size_t k = 0; k < c->nlines; k++) {
			int got = pyline_at(c->table, c->table_len, c->firstlineno, (long)(2 * k));

			units++;
			lines += c->lines[k] > 0;
			if (got != c->lines[k] && bad++ < 5)
				CHECKF(false, "%s %s unit %zu: line %d, python says %d", c->src,
				      c->name, k, got, c->lines[k]);
		}
	}
	CHECK_EQ_INT(bad, 0);
	/* The cases are not empty nor all line-less. */
	CHECKF(units > 1000, "%zu code units", units);
	CHECKF(lines > units / 2, "%zu of %zu with a line", lines, units);
}

TEST(far_lines_and_ends)
{
	const struct pl_case *far = NULL;

	for (size_t i = 0; i < sizeof(pl_cases) / sizeof(pl_cases[0]); i++)
		if (!strcmp(pl_cases[i].name, "far"))
			far = &pl_cases[i];
	if (!CHECKF(far != NULL, "the synthetic 'far' function"))
		return;
	/* Its last line is 5000 lines below the first: a long-form delta. */
	CHECKF(far->lines[far->nlines - 1] - far->firstlineno > 5000, "line %d",
	      far->lines[far->nlines - 1]);
	CHECK_EQ_INT(pyline_at(far->table, far->table_len, far->firstlineno, -1), far->firstlineno);
	CHECK_EQ_INT(pyline_at(far->table, far->table_len, far->firstlineno,
			       (long)(2 * far->nlines + 64)), -2);
	/* A table cut inside a varint, or not starting at an entry. */
	CHECK_EQ_INT(pyline_at((const uint8_t *)"\xf0", 1, 10, 0), -2);
	CHECK_EQ_INT(pyline_at((const uint8_t *)"\x10", 1, 10, 0), -2);
	CHECK_EQ_INT(pyline_at(NULL, 0, 10, 0), -2);
}

int main(void)
{
	RUN(every_code_unit_matches_python);
	RUN(far_lines_and_ends);
	return unit_done();
}
