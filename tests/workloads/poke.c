// SPDX-License-Identifier: GPL-2.0
/*
 * poke - change another process's memory from outside it
 * (tests/e2e/external_cases.py):
 *
 *   poke madvise PID ADDR LEN ADVICE   process_madvise() on [ADDR, ADDR+LEN)
 *   poke writev PID ADDR LEN           process_vm_writev() of LEN bytes there
 *   poke readv PID ADDR LEN            process_vm_readv() of LEN bytes there
 *   poke mem PID ADDR LEN              a write of LEN bytes to /proc/PID/mem
 *
 * ADDR in hex, LEN in bytes, ADVICE a number (MADV_PAGEOUT 21, ...).
 * Exit 0 when the call did all of it, 3 when the kernel does not know the
 * advice (EINVAL: process_madvise took only COLD and PAGEOUT before 5.12,
 * COLLAPSE came in 6.1), else 1 with the error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif

int main(int argc, char **argv)
{
	pid_t pid;
	unsigned long addr;
	size_t len;
	long n;
	char *buf;

	if (argc < 5) {
		fprintf(stderr, "usage: poke madvise|writev|readv|mem PID ADDR LEN [ADVICE]\n");
		return 2;
	}
	pid = atoi(argv[2]);
	addr = strtoul(argv[3], NULL, 16);
	len = strtoul(argv[4], NULL, 0);
	buf = malloc(len);
	if (!buf)
		return 1;
	memset(buf, 0x5a, len);
	if (!strcmp(argv[1], "madvise") && argc > 5) {
		struct iovec iov = { (void *)addr, len };
		int fd = syscall(SYS_pidfd_open, pid, 0);

		if (fd < 0) {
			perror("pidfd_open");
			return 1;
		}
		n = syscall(SYS_process_madvise, fd, &iov, 1, atoi(argv[5]), 0);
	} else if (!strcmp(argv[1], "writev") || !strcmp(argv[1], "readv")) {
		struct iovec local = { buf, len }, remote = { (void *)addr, len };

		n = argv[1][0] == 'w' ? process_vm_writev(pid, &local, 1, &remote, 1, 0) :
					process_vm_readv(pid, &local, 1, &remote, 1, 0);
	} else if (!strcmp(argv[1], "mem")) {
		char path[64];
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/mem", pid);
		fd = open(path, O_RDWR);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		n = pwrite(fd, buf, len, (off_t)addr);
	} else {
		fprintf(stderr, "poke: unknown action %s\n", argv[1]);
		return 2;
	}
	if (n < 0 || (size_t)n != len) {
		int einval = n < 0 && errno == EINVAL && !strcmp(argv[1], "madvise");

		fprintf(stderr, "poke %s: %ld of %zu bytes: %s\n", argv[1], n, len, strerror(errno));
		return einval ? 3 : 1;
	}
	return 0;
}
