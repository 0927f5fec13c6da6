// SPDX-License-Identifier: GPL-2.0
/*
 * threadstorm.c - hundreds of threads started and ended, a wave at a time.
 *
 * usage: threadstorm [nthreads=400] [wave=16]
 *
 * Threads come and go in waves of @wave.  Each maps a 256 KiB region of its
 * own, touches it, mallocs and frees a little (glibc gives threads arenas),
 * and exits; thread stacks are mapped and unmapped by glibc as threads come
 * and go (it caches some).  After each wave is joined the main thread
 * unmaps every other region.  A thread's exit is not the process's: the
 * trace must go on, with each thread's faults and mappings in the totals.
 *
 * Checkpoints:
 *   stormed  every wave joined; with MW_STEPS it then waits for
 *            stormed.go, so a test can act (kill it) mid-trace
 *   final    the regions still mapped are unmapped
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ckpt.h"

#define MAX_THREADS	4096
#define REGION		KIB(256)

static char *regions[MAX_THREADS];

/* pthread calls return the error instead of setting errno. */
static void check(int err, const char *what)
{
	if (err) {
		errno = err;
		die(what);
	}
}

static void *worker_main(void *arg)
{
	char **slot = arg;
	char *p = malloc(KIB(8));

	if (!p)
		die("malloc");
	memset(p, 1, KIB(8));
	free(p);
	*slot = map_anon(REGION);
	touch(*slot, REGION);
	return NULL;
}

/* Start threads [first, last), join them, unmap every other region. */
static void wave(unsigned long first, unsigned long last)
{
	static pthread_t tids[MAX_THREADS];
	unsigned long i;

	for (i = first; i < last; i++)
		check(pthread_create(&tids[i], NULL, worker_main, &regions[i]),
		      "pthread_create");
	for (i = first; i < last; i++)
		check(pthread_join(tids[i], NULL), "pthread_join");
	for (i = first; i < last; i += 2) {
		if (munmap(regions[i], REGION))
			die("munmap region");
		regions[i] = NULL;
	}
}

int main(int argc, char **argv)
{
	unsigned long n, w, i;

	ckpt_init(argc, argv);
	n = arg_ulong(argc, argv, 1, 400);
	w = arg_ulong(argc, argv, 2, 16);
	if (n < 1 || n > MAX_THREADS || w < 1)
		die("need 1..4096 threads and a wave of at least 1");

	for (i = 0; i < n; i += w)
		wave(i, i + w < n ? i + w : n);
	ckpt("stormed");
	ckpt_wait_step("stormed");

	for (i = 0; i < n; i++)
		if (regions[i] && munmap(regions[i], REGION))
			die("munmap kept region");
	ckpt_exit(0);
}
