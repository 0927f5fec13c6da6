// SPDX-License-Identifier: GPL-2.0
/*
 * pinger.c - benchmark helper: an almost idle process to attach tracers to.
 *
 * usage: pinger [interval_us=1000] [seconds=3600]
 *
 * Calls brk(0) (a memory syscall that changes nothing) every interval_us
 * microseconds, for at most @seconds.  A tracer attached to it with
 * `-p PID` sees a steady trickle of events, so the time from a tracer's
 * launch to its first probe firing can be measured, while the process
 * itself costs next to nothing: the host-wide benchmark attaches tracers
 * here and measures what they cost *other* processes.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long us = argc > 1 ? atol(argv[1]) : 1000;
	long secs = argc > 2 ? atol(argv[2]) : 3600;
	struct timespec gap = { us / 1000000, us % 1000000 * 1000 };
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		syscall(SYS_brk, 0);
		nanosleep(&gap, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= secs)
			return 0;
	}
}
