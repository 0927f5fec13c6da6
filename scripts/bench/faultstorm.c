// SPDX-License-Identifier: GPL-2.0
/*
 * faultstorm.c - benchmark workload: first-touch page faults.
 *
 * usage: faultstorm [total_mib=2048] [rounds=4]
 *
 * Each round maps total_mib/rounds MiB of private anonymous memory
 * (MADV_NOHUGEPAGE, so every page is a 4 KiB first-touch fault), writes one
 * byte per 4 KiB page, and unmaps it.  total_mib MiB are faulted in all.
 * Prints "elapsed_ns N faults N" on stdout: the time from the first mmap to
 * the last munmap, so a tracer's own start-up and tear-down are not in it.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "bench.h"

int main(int argc, char **argv)
{
	unsigned long total_mib = arg(argc, argv, 1, 2048);
	unsigned long rounds = arg(argc, argv, 2, 4);
	size_t len = (total_mib << 20) / rounds / PAGE * PAGE;
	unsigned long long t0, faults = 0;
	unsigned long r;

	if (!len) {
		fprintf(stderr, "faultstorm: less than a page per round\n");
		return 2;
	}
	t0 = now_ns();
	for (r = 0; r < rounds; r++) {
		volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		size_t off;

		if (p == MAP_FAILED) {
			perror("faultstorm: mmap");
			return 1;
		}
		madvise((void *)p, len, MADV_NOHUGEPAGE);
		for (off = 0; off < len; off += PAGE)
			p[off] = 1;
		faults += len / PAGE;
		if (munmap((void *)p, len)) {
			perror("faultstorm: munmap");
			return 1;
		}
	}
	printf("elapsed_ns %llu faults %llu\n", now_ns() - t0, faults);
	return 0;
}
