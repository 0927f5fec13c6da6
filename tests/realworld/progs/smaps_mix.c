// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * smaps_mix — mappings whose smaps counters other than Rss are not zero,
 * for tests/realworld (issue 14: Pss, Locked, AnonHugePages per mapping):
 *
 *   locked   4 MiB anonymous, mlock()ed (populated): Locked = Rss = 4 MiB;
 *   onfault  2 MiB anonymous, mlock2(MLOCK_ONFAULT), half touched:
 *            Locked = Rss = 1 MiB;
 *   thp      8 MiB anonymous, 2 MiB aligned, MADV_HUGEPAGE, touched: as
 *            many AnonHugePages as the THP mode and free memory allow (the
 *            mode is never changed here); then one page in the middle is
 *            mprotect()ed, which splits the VMA and that huge page's PMD;
 *   shared   8 MiB MAP_SHARED anonymous, touched here and by a child that
 *            keeps it mapped (and dies with this process): Pss = Rss / 2.
 *
 * The child shares none of the others (MADV_DONTFORK).  Then it works
 * until SECONDS pass (0: until killed): malloc/free of up to 128 KiB, so
 * that the trace is not idle.  Prints "ready" once set up.  With
 * MW_RW_CKPT=DIR it writes DIR/final.status and DIR/final.smaps, its own
 * /proc/self files, as its last act before exit_group.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MIB (1UL << 20)
#define PAGE 4096UL

static char *map(size_t len, int flags)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_ANONYMOUS |
		       (flags & MAP_SHARED ? 0 : MAP_PRIVATE) | flags, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static void touch(char *p, size_t len)
{
	for (size_t i = 0; i < len; i += PAGE)
		p[i] = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The checkpoint reads into this buffer, made and touched up front. */
static char ckbuf[16 << 20];

static size_t slurp(const char *path, size_t off)
{
	int fd = open(path, O_RDONLY);
	ssize_t k;

	if (fd < 0)
		exit(2);
	while ((k = read(fd, ckbuf + off, sizeof(ckbuf) - off)) > 0)
		off += k;
	close(fd);
	return off;
}

static void spill(const char *dir, const char *name, size_t lo, size_t hi)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, ckbuf + lo, hi - lo) != (ssize_t)(hi - lo))
		exit(2);
	close(fd);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0, end;
	const char *dir = getenv("MW_RW_CKPT");
	char *locked, *onfault, *raw, *thp, *shared, *keep[64] = { 0 };
	unsigned int seed = 1;
	pid_t child;

	if (dir)
		touch(ckbuf, sizeof(ckbuf));

	locked = map(4 * MIB, 0);
	if (mlock(locked, 4 * MIB))
		perror("mlock");
	onfault = map(2 * MIB, 0);
	/* Under THP "always" the first touch would fault in a whole huge
	 * page: locked on fault would be all 2 MiB. */
	madvise(onfault, 2 * MIB, MADV_NOHUGEPAGE);
	/* mlock2(MLOCK_ONFAULT): locks what is touched, populates nothing. */
	if (syscall(SYS_mlock2, onfault, 2 * MIB, 1))
		perror("mlock2");
	touch(onfault, MIB);

	raw = map(10 * MIB, MAP_NORESERVE);
	thp = (char *)(((unsigned long)raw + 2 * MIB - 1) & ~(2 * MIB - 1));
	munmap(raw, thp - raw);
	munmap(thp + 8 * MIB, raw + 10 * MIB - (thp + 8 * MIB));
	madvise(thp, 8 * MIB, MADV_HUGEPAGE);
	touch(thp, 8 * MIB);
	/* A 4 KiB piece of a huge page: the PMD splits, RSS does not move. */
	mprotect(thp + 3 * MIB, PAGE, PROT_READ);

	/* Not in the child: its copy-on-write sharing would halve their Pss
	 * (and Locked, which is the Pss of a VM_LOCKED VMA). */
	madvise(locked, 4 * MIB, MADV_DONTFORK);
	madvise(onfault, 2 * MIB, MADV_DONTFORK);
	madvise(thp, 8 * MIB, MADV_DONTFORK);
	shared = map(8 * MIB, MAP_SHARED);
	touch(shared, 8 * MIB);
	child = fork();
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(0);
		touch(shared, 8 * MIB);	/* reads would do: every page mapped */
		for (;;)
			pause();
	}
	/* The child has mapped every page before we go on. */
	for (int i = 0; i < 200; i++) {
		char path[64], line[256];
		FILE *f;
		long rss = 0;

		snprintf(path, sizeof(path), "/proc/%d/status", child);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "RssShmem:", 9))
				rss = atol(line + 9);
		if (f)
			fclose(f);
		if (rss >= 8 * 1024)
			break;
		usleep(10000);
	}

	printf("ready\n");
	fflush(stdout);
	end = now() + secs;
	for (unsigned long i = 0; !secs || now() < end; i++) {
		size_t n = 1 + rand_r(&seed) % (1 << (rand_r(&seed) % 16 + 1));
		char *p = malloc(n);

		if (p)
			memset(p, 1, n);
		free(keep[i % 64]);
		keep[i % 64] = p;
	}
	if (dir) {
		size_t a = slurp("/proc/self/status", 0);
		size_t b = slurp("/proc/self/smaps", a);

		spill(dir, "final.status", 0, a);
		spill(dir, "final.smaps", a, b);
	}
	syscall(SYS_exit_group, 0);
	return 0;
}
