/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bench.h - what the benchmark workloads share, header-only: scripts/bench/run
 * compiles each workload from its one .c file (gcc -O2 -Wall -Wextra).
 */
#ifndef MW_BENCH_H
#define MW_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>		/* program_invocation_short_name */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PAGE 4096UL

/* CLOCK_MONOTONIC, in ns: the workloads time their loop only. */
static inline unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* argv[i] as a positive number, or @def when absent; anything else is a
 * usage error (exit 2). */
static inline unsigned long arg(int argc, char **argv, int i, unsigned long def)
{
	char *end;
	unsigned long v;

	if (i >= argc)
		return def;
	v = strtoul(argv[i], &end, 0);
	if (*end || !v) {
		fprintf(stderr, "%s: bad argument '%s'\n", program_invocation_short_name,
			argv[i]);
		exit(2);
	}
	return v;
}

#endif /* MW_BENCH_H */
