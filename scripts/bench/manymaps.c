// SPDX-License-Identifier: GPL-2.0
/*
 * manymaps.c - benchmark workload: churn next to many live mappings.
 *
 * usage: manymaps [mappings=30000] [rounds=100000]
 *
 * Maps 'mappings' one-page regions one by one, alternately read-only and
 * read-write, so that the kernel, which places each just below the one
 * before, cannot merge them (vm.max_map_count, 65530 by default, bounds
 * the count); each writable page is touched once.  Then rounds x (mmap one
 * page, touch it, munmap), each landing just below the crowd, and one
 * mprotect that makes a read-only page in the middle writable, merging it
 * with its two neighbours: the work a tracer's per-record cost shows on,
 * with as many live mappings as asked.  Prints "elapsed_ns N rounds N
 * mappings N" on stdout (the rounds and the mprotect, not the setup).
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "bench.h"

static char *map_page(int prot)
{
	char *p = mmap(NULL, PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("manymaps: mmap (vm.max_map_count?)");
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	unsigned long n = arg(argc, argv, 1, 30000);
	unsigned long rounds = arg(argc, argv, 2, 100000);
	unsigned long long t0;
	char *mid = NULL;
	unsigned long i;

	/* The last, lowest, read-only: a page mapped below it stays apart. */
	for (i = 0; i < n; i++) {
		int rw = (n - 1 - i) & 1;
		char *p = map_page(rw ? PROT_READ | PROT_WRITE : PROT_READ);

		if (rw)
			*p = 1;
		else if (!mid && i >= n / 2)
			mid = p;
	}
	t0 = now_ns();
	for (i = 0; i < rounds; i++) {
		volatile char *p = map_page(PROT_READ | PROT_WRITE);

		*p = 1;
		if (munmap((void *)p, PAGE)) {
			perror("manymaps: munmap");
			return 1;
		}
	}
	if (mid && mprotect(mid, PAGE, PROT_READ | PROT_WRITE)) {
		perror("manymaps: mprotect");
		return 1;
	}
	printf("elapsed_ns %llu rounds %lu mappings %lu\n", now_ns() - t0, rounds, n);
	return 0;
}
