/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pmd.h - the size of a huge page (a PMD) on this kernel: what one write
 * can make resident under THP "always".  2 MiB with 4 KiB pages, 32 MiB
 * with 16 KiB, 512 MiB with 64 KiB; 2 MiB where the kernel does not say.
 */
#ifndef MW_WORKLOAD_PMD_H
#define MW_WORKLOAD_PMD_H

#include <stddef.h>
#include <stdio.h>

static inline size_t pmd_size(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "re");
	unsigned long v = 0;

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : (size_t)2 << 20;
}

#endif
