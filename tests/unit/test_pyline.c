// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_pyline.c — user/unwind/pyline.c against the lines CPython 3.11
 * reports itself: pyline_cases.h holds code objects compiled by
 * /usr/bin/python3.11 (tests/unit/gen-pyline-cases) with co_positions()'s
 * line of every code unit.  And the generated table of layouts
 * (user/unwind/pylayouts.c): a row per version --python knows, each one BPF
 * can walk.
 */
#include "unit.h"
#include "unwind/pylayouts.h"
#include "unwind/pyline.h"
#include "unwind/python.h"
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

/* Each of 3.11, 3.12 and 3.13 has one row, which python_layout() takes
 * (its frame fields where bpf/python.bpf.h reads them), with what differs
 * between them as their headers say; others have none. */
TEST(layout_rows)
{
	const struct mw_py_layout *l11 = python_layout(11), *l12 = python_layout(12),
				  *l13 = python_layout(13);

	CHECK_EQ_INT(mw_py_nlayouts, 3);
	if (!CHECKF(l11 && l12 && l13, "a walkable row for 3.11, 3.12, 3.13"))
		return;
	CHECKF(!python_layout(10) && !python_layout(14), "no row for 3.10 or 3.14");
	/* 3.11's entry frames have is_entry; 3.12+'s a shim frame. */
	CHECKF(l11->if_is_entry != MW_PY_NONE && l11->owned_by_cstack == MW_PY_NONE, "3.11 entry");
	CHECKF(l12->if_is_entry == MW_PY_NONE && l13->owned_by_cstack != MW_PY_NONE, "3.12+ shim");
	/* 3.13 lost _PyCFrame: the frame hangs off the thread state itself. */
	CHECKF(l11->cf_current_frame != MW_PY_NONE && l12->cf_current_frame != MW_PY_NONE &&
	       l13->cf_current_frame == MW_PY_NONE, "cframe up to 3.12");
	for (size_t i = 0; i < mw_py_nlayouts; i++) {
		const struct mw_py_layout *l = &mw_py_layouts[i];

		CHECKF(l->co_code > l->co_filename + 8 * MW_PY_CO_PTRS &&
		       l->str_compact_data > l->str_state && l->state_compact && l->state_ascii,
		       "3.%u: code object and str fields in order", l->minor);
	}
}

int main(void)
{
	RUN(every_code_unit_matches_python);
	RUN(far_lines_and_ends);
	RUN(layout_rows);
	return unit_done();
}
