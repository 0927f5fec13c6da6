/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* hist.h — log2 histograms, printed the way bcc's tools print them. */
#ifndef MW_HIST_H
#define MW_HIST_H

#include <stdint.h>
#include <stdio.h>

#define MW_HIST_SLOTS 65	/* slot 0: the value 0; slot i: [2^(i-1), 2^i) */

struct mw_hist {
	uint64_t slot[MW_HIST_SLOTS];
	uint64_t count;
};

void hist_add(struct mw_hist *h, uint64_t v);
/* Bounds of slot i: [low, high]. */
void hist_bounds(int i, uint64_t *low, uint64_t *high);
/* Slots in use: [first, last]; false when empty. */
int hist_range(const struct mw_hist *h, int *first, int *last);
/* "     low -> high       : count    |*****   |" rows, 80 columns. */
void hist_print(FILE *f, const struct mw_hist *h, const char *unit);

#endif /* MW_HIST_H */
