/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pylayouts.h — the CPython versions --python knows, and where each keeps
 * what the walk reads (struct mw_py_layout): the generated table
 * pylayouts.c (scripts/py-layouts), one row per 3.minor.
 */
#ifndef MW_UNWIND_PYLAYOUTS_H
#define MW_UNWIND_PYLAYOUTS_H

#include <stddef.h>

#include "memwatch.h"

extern const struct mw_py_layout mw_py_layouts[];
extern const size_t mw_py_nlayouts;

#endif /* MW_UNWIND_PYLAYOUTS_H */
