/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * report_hist.h — the histograms of hists.h in the reports: text sections
 * chosen with --hist, and JSON arrays of {"low":N,"high":N,"count":N}.
 */
#ifndef MW_REPORT_HIST_H
#define MW_REPORT_HIST_H

#include <stdio.h>
#include <jansson.h>

#include "analysis/account.h"
#include "analysis/hist.h"
#include "output/report.h"

/* The sections for sizes, lifetimes and touched fractions that ro->hists
 * selects (the iteration one is part of the iterations section), each for
 * the whole trace and per phase, and the largest mappings touched under
 * MW_TOUCH_SPARSE_PCT percent.  80 columns. */
void report_text_hists(FILE *f, const struct mw_account *a, const struct report_opts *ro);

/* Every slot from the first in use to the last: [{"low","high","count"}]. */
json_t *report_json_hist(const struct mw_hist *h);
/* The summary's "histograms": every histogram of the whole trace. */
json_t *report_json_hists(const struct mw_account *a);
/* "histograms" of phase @i, for its object in the summary's "phases". */
json_t *report_json_phase_hists(const struct mw_account *a, size_t i);

#endif /* MW_REPORT_HIST_H */
