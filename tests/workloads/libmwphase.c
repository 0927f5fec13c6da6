// SPDX-License-Identifier: GPL-2.0
/*
 * libmwphase.c - a shared library with one phase in it, for
 * `memwatch --phase-at /path/to/libmwphase.so:mwlib_phase`.
 *
 * build: cc -shared -fPIC -O1 -g -DMWLIB_SO tests/workloads/libmwphase.c \
 *           -o build/workloads/libmwphase.so
 * (tests/e2e/phase_cases.py builds it like this when build/workloads has no
 * up-to-date copy.)  `phases LIB` dlopen()s it after its own start and calls
 * mwlib_phase() through dlsym(), so the library is not mapped yet when
 * memwatch starts tracing.
 *
 * mwlib_phase() maps 8 MiB of private anonymous MAP_NORESERVE memory (its
 * own VMA: it merges with no normal anonymous mapping) and touches every
 * page: VM += 8 MiB, RssAnon += 8 MiB.  The memory stays mapped.  Nothing
 * here uses ckpt.c: the caller takes the checkpoints.
 *
 * Without -DMWLIB_SO the file also builds as a program (main() calls
 * mwlib_phase() once), so the workload Makefile rule, which links every .c
 * file in tests/workloads (but ckpt.c) into an executable, still works.
 */
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MWLIB_SZ	(8UL << 20)
#define MWLIB_PAGE	4096UL

static char *mwlib_buf;

__attribute__((visibility("default"), noinline, used))
void mwlib_phase(void)
{
	static const char msg[] = "libmwphase: mmap failed\n";
	volatile char *c;
	size_t off;

	mwlib_buf = mmap(NULL, MWLIB_SZ, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mwlib_buf == MAP_FAILED) {
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
			/* nothing left to report it with */
		}
		syscall(SYS_exit_group, 1);
	}
	for (c = mwlib_buf, off = 0; off < MWLIB_SZ; off += MWLIB_PAGE)
		c[off] = 1;
}

#ifndef MWLIB_SO
int main(void)
{
	mwlib_phase();
	return 0;
}
#endif
