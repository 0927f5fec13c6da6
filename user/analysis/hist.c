// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* hist.c — log2 histograms (print_log2_hist in bcc's libbpf-tools). */
#include <string.h>

#include "analysis/hist.h"

void hist_add(struct mw_hist *h, uint64_t v)
{
	int i = v ? 64 - __builtin_clzll(v) : 0;

	h->slot[i]++;
	h->count++;
}

void hist_bounds(int i, uint64_t *low, uint64_t *high)
{
	*low = i ? 1ull << (i - 1) : 0;
	*high = i ? (i == 64 ? UINT64_MAX : (1ull << i) - 1) : 0;
}

int hist_range(const struct mw_hist *h, int *first, int *last)
{
	*first = -1;
	*last = -1;
	for (int i = 0; i < MW_HIST_SLOTS; i++) {
		if (!h->slot[i])
			continue;
		if (*first < 0)
			*first = i;
		*last = i;
	}
	return *first >= 0;
}

/*
 * Slots from 2^33 up have bounds of more than the ten digits a row has room
 * for: then rows are twenty digits wide with half the stars, as bcc does,
 * so that every row stays inside 80 columns.
 */
void hist_print(FILE *f, const struct mw_hist *h, const char *unit)
{
	uint64_t max = 0, low, high;
	int first, last, digits, width;

	if (!hist_range(h, &first, &last))
		return;
	digits = last <= 33 ? 10 : 20;
	width = last <= 33 ? 40 : 20;
	for (int i = first; i <= last; i++)
		if (h->slot[i] > max)
			max = h->slot[i];
	fprintf(f, "%*s%-10s : count    distribution\n", 2 * digits - 6, "", unit);
	for (int i = first; i <= last; i++) {
		char bar[41];
		int stars = (int)(h->slot[i] * width / max);

		hist_bounds(i, &low, &high);
		memset(bar, '*', stars);
		memset(bar + stars, ' ', width - stars);
		bar[width] = 0;
		fprintf(f, "%*llu -> %-*llu : %-8llu |%s|\n", digits, (unsigned long long)low,
			digits, (unsigned long long)high, (unsigned long long)h->slot[i], bar);
	}
}
