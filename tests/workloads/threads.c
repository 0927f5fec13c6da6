// SPDX-License-Identifier: GPL-2.0
/*
 * threads.c - concurrent mmap and page faults from several threads.
 *
 * usage: threads [nthreads=4] [region_mib=16]
 *
 * Each thread maps its own region, waits on a barrier so that all threads
 * fault at the same time, touches the region, and mallocs/frees a little
 * (glibc gives threads their own arenas: 64 MiB heaps, mostly PROT_NONE,
 * plus one large malloc served by mmap).  Regions outlive their threads.
 *
 * Checkpoints:
 *   joined  all threads joined: RssAnon += nthreads * region, plus thread
 *           stacks, arenas and malloc debris (all visible in /proc)
 *   final   regions 0 and 1 unmapped: VM and RssAnon -= 2 * region
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ckpt.h"

#define MAX_THREADS	64

struct worker {
	pthread_t tid;
	size_t size;
	char *region;
};

static pthread_barrier_t start_line;

/* A few allocations of the sizes a real thread makes, small to mmap-sized. */
static void malloc_churn(void)
{
	static const size_t sizes[] = { 64, KIB(4), KIB(64), KIB(256) };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *p = malloc(sizes[i]);

		if (!p)
			die("malloc");
		memset(p, 1, sizes[i]);
		free(p);
	}
}

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
	struct worker *w = arg;

	w->region = map_anon(w->size);
	/* Everybody maps first, then everybody faults at once. */
	pthread_barrier_wait(&start_line);
	touch(w->region, w->size);
	malloc_churn();
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	unsigned long i, n;
	size_t size;

	ckpt_init(argc, argv);
	n = arg_ulong(argc, argv, 1, 4);
	size = arg_mib(argc, argv, 2, 16);
	if (n < 2 || n > MAX_THREADS || !size)
		die("need 2..64 threads and a positive size");

	check(pthread_barrier_init(&start_line, NULL, n), "barrier init");
	for (i = 0; i < n; i++) {
		workers[i].size = size;
		check(pthread_create(&workers[i].tid, NULL, worker_main,
				     &workers[i]), "pthread_create");
	}
	for (i = 0; i < n; i++)
		check(pthread_join(workers[i].tid, NULL), "pthread_join");
	ckpt("joined");

	for (i = 0; i < 2; i++)
		if (munmap(workers[i].region, size))
			die("munmap region");
	ckpt_exit(0);
}
