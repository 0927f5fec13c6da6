/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_findings.h — the findings (analysis/findings.h) in the reports: a
 * "Findings" section at the top of the text report, a "findings" array in
 * the JSON summary, and the same for host-wide sessions.
 */
#ifndef MW_REPORT_FINDINGS_H
#define MW_REPORT_FINDINGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "analysis/findings.h"

/* The section, 80 columns; nothing when there are no findings and
 * say_none is false. */
void report_text_findings(FILE *f, const struct mw_findings *fs, bool say_none);
/* The array. */
json_t *report_json_findings(const struct mw_findings *fs);

/* Host-wide, at the end: the section in text, a {"type":"findings"} line
 * in the JSON; either file may be NULL. */
void report_host_findings(FILE *text, FILE *json, const struct mw_hfind *h,
			  const struct mw_find_opts *o, uint64_t start_ns);

#endif /* MW_REPORT_FINDINGS_H */
