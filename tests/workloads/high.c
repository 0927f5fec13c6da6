// SPDX-License-Identifier: GPL-2.0
/*
 * high.c - memory above 2^47, where the kernel gives it: arm64 user space
 * reaches 2^48, or 2^52 on a 52-bit-VA kernel (Debian's 6.12); x86-64
 * with four-level page tables ends at 2^47 and ignores a higher hint.
 *
 * usage: high
 *
 *   high   4 MiB asked for at 2^47 + 1 GiB, every page written (user faults)
 *   read   1 MiB at 2^47 + 2 GiB, filled by read() from /dev/zero: the
 *          kernel's copy_to_user faults on a high user address
 * (below arm64's PIE binaries at 0xaaaa..., its mmap base and stack near
 * 2^48: nothing there to collide with).
 *
 * Checkpoints: mapped, touched, final (its maps say where the kernel put them).
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"

#define BASE	((uintptr_t)1 << 47)

static char *map_at(uintptr_t hint, size_t len)
{
	char *p = mmap((void *)hint, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

int main(int argc, char **argv)
{
	char *high, *rd;
	size_t done = 0;
	ssize_t n;
	int fd;

	ckpt_init(argc, argv);
	high = map_at(BASE + MIB(1024), MIB(4));
	rd = map_at(BASE + MIB(2048), MIB(1));
	ckpt("mapped");
	touch(high, MIB(4));
	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("/dev/zero");
	while (done < MIB(1) && (n = read(fd, rd + done, MIB(1) - done)) > 0)
		done += (size_t)n;
	if (done != MIB(1))
		die("read");
	close(fd);
	ckpt("touched");
	ckpt_exit(0);
}
