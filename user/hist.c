// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* hist.c — log2 histograms (print_log2_hist in bcc's libbpf-tools). */
#include <string.h>

#include "hist.h"

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

void hist_print(FILE *f, const struct mw_hist *h, const char *unit)
{
	const int width = 40;
	uint64_t max = 0, low, high;
	int first, last;

	if (!hist_range(h, &first, &last))
		return;
	for (int i = first; i <= last; i++)
		if (h->slot[i] > max)
			max = h->slot[i];
	fprintf(f, "%*s%-10s : count    distribution\n", 14, "", unit);
	for (int i = first; i <= last; i++) {
		char bar[41];
		int stars = (int)(h->slot[i] * width / max);

		hist_bounds(i, &low, &high);
		memset(bar, '*', stars);
		memset(bar + stars, ' ', width - stars);
		bar[width] = 0;
		fprintf(f, "%10llu -> %-10llu : %-8llu |%s|\n", (unsigned long long)low,
			(unsigned long long)high, (unsigned long long)h->slot[i], bar);
	}
}
