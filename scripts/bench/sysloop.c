// SPDX-License-Identifier: GPL-2.0
/*
 * sysloop.c - benchmark workload: a syscall-bound process nobody traces.
 *
 * usage: sysloop [iterations=1000000]
 *
 * Each iteration calls getppid() and read()s one byte from /dev/zero: two
 * cheap syscalls, neither of them one memwatch follows.  Run while a tracer
 * watches another process, it shows what that tracer's hooks cost every
 * other process's syscalls: nothing but the syscall tracepoint slow path for
 * per-call tracepoints, a BPF program per syscall for the raw
 * sys_enter/sys_exit.  Prints "elapsed_ns N iterations N" on stdout (the
 * loop only).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

int main(int argc, char **argv)
{
	unsigned long iters = arg(argc, argv, 1, 1000000);
	unsigned long long t0;
	unsigned long i;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	char c;

	if (fd < 0) {
		perror("sysloop: /dev/zero");
		return 1;
	}
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		/* The raw syscall: no libc wrapper may cache it. */
		syscall(SYS_getppid);
		if (read(fd, &c, 1) != 1) {
			perror("sysloop: read");
			return 1;
		}
	}
	printf("elapsed_ns %llu iterations %lu\n", now_ns() - t0, iters);
	return 0;
}
