/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_callsite.h — call sites (--stacks) in the reports: the stacks that
 * mapped the most VM and had the most RSS faulted in, per phase and in all,
 * and each mapping's call site.
 */
#ifndef MW_REPORT_CALLSITE_H
#define MW_REPORT_CALLSITE_H

#include <stdio.h>
#include <jansson.h>

#include "analysis/account.h"

#define MW_TOP_SITES	5	/* call sites listed per ranking */

/* "Call sites" section: the whole trace, then each phase (with phases). */
void report_text_callsites(FILE *f, const struct mw_account *a);

/* "call_site", "stack", "first_touch", "first_touch_stack" of a mapping,
 * added to its object o when known. */
void report_json_mapping_stacks(json_t *o, const struct mw_account *a,
				const struct mw_mapping *mp);
/* {"by_vm": [...], "by_rss": [...]} for phase (-1: the whole trace). */
json_t *report_json_callsites(const struct mw_account *a, int phase);
/* The summary's "stacks" object, or NULL without --stacks. */
json_t *report_json_stacks(const struct mw_account *a);

#endif /* MW_REPORT_CALLSITE_H */
