// SPDX-License-Identifier: GPL-2.0
/*
 * idle - a target that other processes change (tests/e2e/external_cases.py).
 *
 * Maps, then never touches memory again:
 *   file  the file given, 4 MiB, private read-only, every page read
 *   poke  4 MiB of private anon memory, untouched
 *   thp   two huge pages of private anon memory (4 MiB with 4 KiB pages,
 *         64 MiB with 16 KiB ones) at a huge page's boundary, its first 64
 *         pages touched as small pages (MADV_NOHUGEPAGE, whatever the THP
 *         mode); SIGUSR1 makes it MADV_HUGEPAGE, which khugepaged or
 *         another process's MADV_COLLAPSE may then collapse
 * prints "file=ADDR poke=ADDR thp=ADDR" and waits in pause() until killed.
 * Whatever changes its RSS afterwards is another context's doing.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "pmd.h"

#define MIB(x)	((size_t)(x) << 20)

static char *thp;
static size_t pmd;	/* a huge page: 2 MiB with 4 KiB pages, 32 MiB with 16 KiB */

static void hugepage(int sig)
{
	madvise(thp, 2 * pmd, MADV_HUGEPAGE);
}

int main(int argc, char **argv)
{
	volatile unsigned long sum = 0;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *file, *poke, *raw;
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: idle FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	file = mmap(NULL, MIB(4), PROT_READ, MAP_PRIVATE, fd, 0);
	poke = mmap(NULL, MIB(4), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pmd = pmd_size();
	raw = mmap(NULL, 4 * pmd, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (file == MAP_FAILED || poke == MAP_FAILED || raw == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	close(fd);
	for (size_t i = 0; i < MIB(4); i += page)
		sum += file[i];
	/* Two huge pages at a huge page's boundary; the rest goes back. */
	thp = (char *)(((uintptr_t)raw + pmd - 1) & ~(pmd - 1));
	if (thp > raw)
		munmap(raw, thp - raw);
	munmap(thp + 2 * pmd, raw + 4 * pmd - (thp + 2 * pmd));
	madvise(thp, 2 * pmd, MADV_NOHUGEPAGE);	/* small pages, whatever the THP mode */
	for (size_t i = 0; i < 64; i++)
		thp[i * page] = 1;
	signal(SIGUSR1, hugepage);
	printf("file=%p poke=%p thp=%p\n", (void *)file, (void *)poke, (void *)thp);
	fflush(stdout);
	for (;;)
		pause();
}
