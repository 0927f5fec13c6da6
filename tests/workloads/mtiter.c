// SPDX-License-Identifier: GPL-2.0
/*
 * mtiter.c - iterations whose faults come from worker threads on every CPU,
 * as an inference runtime's thread pool makes them.
 *
 * usage: mtiter [N=8] [REGION_MIB=8]
 *
 * Two worker threads per CPU (each pinned to one, at most 16) and a region
 * of private anonymous memory (no THP: one fault per page), touched once
 * before the first iteration.  Iteration k (k = 1..N), all of it between
 * two markers:
 *   - the main thread forks a child that only waits, so every page of the
 *     region is shared copy-on-write;
 *   - each worker maps 256 KiB, touches it and unmaps it: first-touch
 *     faults, which move RSS;
 *   - then each worker writes one byte per page of its share of the
 *     region: a copy-on-write fault per page, which moves no RSS counter
 *     (an anon page for an anon page);
 *   - the child is killed and reaped.
 * The workers wait on a barrier before the first iteration and between
 * iterations: nothing runs across a marker, and the faults a worker took stay in whatever its CPU holds.
 *
 * Phase "iters" starts before the first iteration (on arm64 the first
 * marker hit maps memwatch's [uprobes] page, a fault and a page of VM that
 * are not the iterations').  Checkpoint "iter<k>" is taken immediately before iteration k's
 * MEMWATCH_ITER(), and "end" after the last iteration, before the phase
 * marker "end" that closes it; so the kernel's count of iteration k's
 * faults is minflt + majflt of iter<k+1> (or end) less that of iter<k>,
 * from /proc/self/stat, which sums every thread's.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"
#include "../../include/memwatch.h"

#define MAX_WORKERS	16
#define FRESH_SZ	KIB(256)

static pthread_barrier_t ready, go, done;
static char *region;
static size_t region_sz, share;
static unsigned long iterations;
static long page;

static void *worker(void *arg)
{
	long w = (long)arg;
	unsigned long k;

	pthread_barrier_wait(&ready);	/* started: its own faults are over */
	for (k = 0; k < iterations; k++) {
		char *mine = region + w * share, *fresh;
		size_t off;

		pthread_barrier_wait(&go);
		fresh = map_anon(FRESH_SZ);
		for (off = 0; off < FRESH_SZ; off += page)
			fresh[off] = 1;
		if (munmap(fresh, FRESH_SZ))
			die("munmap");
		/* Last, the faults that change no RSS counter: nothing after
		 * them on this CPU settles what it holds of them. */
		for (off = 0; off < share; off += page)
			mine[off]++;
		pthread_barrier_wait(&done);
	}
	return NULL;
}

/* "iter<k>" into @buf, without stdio. */
static const char *iter_name(char *buf, unsigned long k)
{
	char digits[24];
	size_t n = 0, len = 4;

	memcpy(buf, "iter", 4);
	do {
		digits[n++] = '0' + k % 10;
		k /= 10;
	} while (k);
	while (n)
		buf[len++] = digits[--n];
	buf[len] = 0;
	return buf;
}

int main(int argc, char **argv)
{
	pthread_t tid[MAX_WORKERS];
	long ncpu, nworkers, w;
	unsigned long k;
	char name[32];
	size_t off;

	ckpt_init(argc, argv);
	if (!MEMWATCH_MARKERS) {
		errno = ENOSYS;
		die("built without <sys/sdt.h>");
	}
	iterations = arg_ulong(argc, argv, 1, 8);
	region_sz = arg_mib(argc, argv, 2, 8);
	page = sysconf(_SC_PAGESIZE);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	nworkers = ncpu < 1 ? 2 : ncpu * 2 > MAX_WORKERS ? MAX_WORKERS : ncpu * 2;
	share = region_sz / nworkers / page * page;

	region = map_anon(region_sz);
	if (madvise(region, region_sz, MADV_NOHUGEPAGE))
		die("madvise");
	for (off = 0; off < region_sz; off += page)
		region[off] = 1;

	if (pthread_barrier_init(&ready, NULL, nworkers + 1) ||
	    pthread_barrier_init(&go, NULL, nworkers + 1) ||
	    pthread_barrier_init(&done, NULL, nworkers + 1))
		die("pthread_barrier_init");
	for (w = 0; w < nworkers; w++) {
		cpu_set_t set;

		if (pthread_create(&tid[w], NULL, worker, (void *)w))
			die("pthread_create");
		CPU_ZERO(&set);
		CPU_SET(w % ncpu, &set);
		pthread_setaffinity_np(tid[w], sizeof(set), &set);	/* best effort */
	}
	pthread_barrier_wait(&ready);
	/* The first marker hit on arm64 maps memwatch's [uprobes] page and
	 * steps out of line there: a phase before the iterations takes that. */
	MEMWATCH_PHASE("iters");

	for (k = 1; k <= iterations; k++) {
		pid_t child;

		ckpt(iter_name(name, k));
		MEMWATCH_ITER();
		child = fork_waiting_child();
		pthread_barrier_wait(&go);
		pthread_barrier_wait(&done);
		reap_child(child);
	}
	ckpt("end");
	MEMWATCH_PHASE("end");
	for (w = 0; w < nworkers; w++)
		pthread_join(tid[w], NULL);
	ckpt_exit(0);
}
