// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * trim.c - LD_PRELOAD into node for scripts/bench/onnx/run --trim: a thread
 * that calls malloc_trim(0) when the file $MW_ONNX_TRIM says "trim", then
 * writes "done" there.  The truth for what released_but_kept says malloc
 * would give back, taken in the same process (memwatch holds it as its
 * tracer, so a debugger cannot attach).  It allocates nothing itself.
 */
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *flag;

static void *waiter(void *arg)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	char buf[8];

	(void)arg;
	for (;;) {
		int fd = open(flag, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

		if (fd >= 0)
			close(fd);
		if (n == 4 && !memcmp(buf, "trim", 4)) {
			malloc_trim(0);
			fd = open(flag, O_WRONLY | O_TRUNC | O_CLOEXEC);
			if (fd >= 0) {
				if (write(fd, "done", 4) != 4)
					_exit(71);
				close(fd);
			}
			return NULL;
		}
		nanosleep(&ts, NULL);
	}
}

__attribute__((constructor)) static void start(void)
{
	pthread_attr_t a;
	pthread_t t;

	flag = getenv("MW_ONNX_TRIM");
	if (!flag)
		return;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&t, &a, waiter, NULL);
	pthread_attr_destroy(&a);
}
