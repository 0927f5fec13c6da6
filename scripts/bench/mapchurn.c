// SPDX-License-Identifier: GPL-2.0
/*
 * mapchurn.c - benchmark workload: address-space churn.
 *
 * usage: mapchurn [iterations=200000] [map_kib=64] [touch_pages=1]
 *
 * Each iteration maps map_kib KiB of private anonymous memory, writes one
 * byte to each of its first touch_pages 4 KiB pages, unmaps it, then grows
 * the heap by map_kib KiB with brk, touches the same number of pages there
 * and shrinks the heap back: per iteration one mmap, one munmap, two brk
 * calls and 2*touch_pages page faults.  The default touches one page of
 * each, so the run is dominated by address-space calls, not by faults
 * (faultstorm covers those).  Prints "elapsed_ns N iterations N" on stdout
 * (the loop only, not process start-up or exit).
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

/* The raw syscall: glibc's sbrk caches the break and may skip the call. */
static char *raw_brk(char *addr)
{
	return (char *)syscall(SYS_brk, addr);
}

int main(int argc, char **argv)
{
	unsigned long iters = arg(argc, argv, 1, 200000);
	size_t len = arg(argc, argv, 2, 64) * 1024 / PAGE * PAGE;
	size_t touch = arg(argc, argv, 3, 1) * PAGE;
	unsigned long long t0;
	char *base, *top;
	unsigned long i;
	size_t off;

	if (!len) {
		fprintf(stderr, "mapchurn: map_kib below a page\n");
		return 2;
	}
	if (touch > len)
		touch = len;
	t0 = now_ns();
	base = raw_brk(NULL);
	for (i = 0; i < iters; i++) {
		volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			perror("mapchurn: mmap");
			return 1;
		}
		for (off = 0; off < touch; off += PAGE)
			p[off] = 1;
		if (munmap((void *)p, len)) {
			perror("mapchurn: munmap");
			return 1;
		}
		top = raw_brk(base + len);
		if (top != base + len) {
			fprintf(stderr, "mapchurn: brk grow failed\n");
			return 1;
		}
		for (off = 0; off < touch; off += PAGE)
			((volatile char *)base)[off] = 1;
		if (raw_brk(base) != base) {
			fprintf(stderr, "mapchurn: brk shrink failed\n");
			return 1;
		}
	}
	printf("elapsed_ns %llu iterations %lu\n", now_ns() - t0, iters);
	return 0;
}
