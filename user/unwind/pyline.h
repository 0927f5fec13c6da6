/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pyline.h — CPython 3.11's location table (co_linetable, described in
 * CPython's Objects/locations.md): the source line of a code offset.  Pure;
 * tests/unit/test_pyline.c checks it against the lines Python reports.
 */
#ifndef MW_PYLINE_H
#define MW_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/* The line of the instruction at byte offset 'addr' of the code (code unit
 * index * 2), as PyCode_Addr2Line() gives it: -1 where the table says the
 * instruction has no line, firstlineno for a negative addr, -2 when the
 * table does not reach addr or is damaged. */
int pyline_at(const uint8_t *table, size_t len, int firstlineno, long addr);

#endif /* MW_PYLINE_H */
