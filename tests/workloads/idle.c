// SPDX-License-Identifier: GPL-2.0
/*
 * idle - a target that other processes change (tests/e2e/external_cases.py).
 *
 * Maps, then never touches memory again:
 *   file  the file given, 4 MiB, private read-only, every page read
 *   poke  4 MiB of private anon memory, untouched
 *   thp   4 MiB of private anon memory at a 2 MiB boundary, its first 64
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

#define MIB(x)	((size_t)(x) << 20)
#define PAGE	4096UL

static char *thp;

static void hugepage(int sig)
{
	madvise(thp, MIB(4), MADV_HUGEPAGE);
}

int main(int argc, char **argv)
{
	volatile unsigned long sum = 0;
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
	raw = mmap(NULL, MIB(8), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (file == MAP_FAILED || poke == MAP_FAILED || raw == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	close(fd);
	for (size_t i = 0; i < MIB(4); i += PAGE)
		sum += file[i];
	/* 4 MiB at a 2 MiB boundary; the rest goes back. */
	thp = (char *)(((uintptr_t)raw + MIB(2) - 1) & ~(MIB(2) - 1));
	if (thp > raw)
		munmap(raw, thp - raw);
	munmap(thp + MIB(4), raw + MIB(8) - (thp + MIB(4)));
	madvise(thp, MIB(4), MADV_NOHUGEPAGE);	/* small pages, whatever the THP mode */
	for (size_t i = 0; i < 64; i++)
		thp[i * PAGE] = 1;
	signal(SIGUSR1, hugepage);
	printf("file=%p poke=%p thp=%p\n", (void *)file, (void *)poke, (void *)thp);
	fflush(stdout);
	for (;;)
		pause();
}
