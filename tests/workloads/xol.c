// SPDX-License-Identifier: GPL-2.0
/*
 * xol - functions for --phase-at whose first act is to read the program's
 * own VmSize (tests/e2e/phase_cases.py: the [uprobes] page).
 *
 *   entry_push   a C function: its first instruction is push %rbp (or
 *                endbr64), which x86 uprobes emulate on newer kernels
 *   entry_mov    its first instruction is mov %rdi,%rax, which no kernel
 *                emulates: the probe single-steps it out of line, and the
 *                kernel maps its [uprobes] page at the first hit
 *
 * Each prints "NAME VmSize_kB VmRSS_kB UPROBES" read at its start to stdout,
 * UPROBES 1 if /proc/self/maps then shows the [uprobes] page, else 0.
 * Usage: xol [push|mov]...  (default: mov push mov)
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"

static char buf[65536];

/* /proc/self/FILE into buf (static: reading changes neither VM nor RSS
 * once the first call has touched it; the first act is the status read). */
static void slurp(const char *path)
{
	ssize_t n, got = 0;
	int fd = open(path, O_RDONLY);

	while (fd >= 0 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	if (fd >= 0)
		close(fd);
	buf[got] = 0;
}

static void report(const char *name)
{
	long vm = -1, rss = -1;
	int uprobes;
	ssize_t n;
	char *p;

	slurp("/proc/self/status");
	p = strstr(buf, "VmSize:");
	if (p)
		sscanf(p, "VmSize: %ld", &vm);
	p = strstr(buf, "VmRSS:");
	if (p)
		sscanf(p, "VmRSS: %ld", &rss);
	slurp("/proc/self/maps");
	uprobes = strstr(buf, "[uprobes]") != NULL;
	n = snprintf(buf, sizeof(buf), "%s %ld %ld %d\n", name, vm, rss, uprobes);
	if (write(1, buf, n) < 0)
		_exit(1);
}

MW_PROBE_FN void entry_push(void)
{
	report("entry_push");
}

MW_PROBE_FN void mov_body(void)
{
	report("entry_mov");
}

/* mov %rdi,%rax first: never emulated, always stepped out of line. */
#if defined(__x86_64__)
__asm__(".text\n.globl entry_mov\n.type entry_mov,@function\nentry_mov:\n"
	"\tmovq %rdi, %rax\n\tjmp mov_body\n.size entry_mov, .-entry_mov\n");
#elif defined(__aarch64__)
__asm__(".text\n.globl entry_mov\n.type entry_mov,%function\nentry_mov:\n"
	"\tmov x9, x0\n\tb mov_body\n.size entry_mov, .-entry_mov\n");
#endif
void entry_mov(void);

int main(int argc, char **argv)
{
	static const char *const dflt[] = { "mov", "push", "mov" };
	int n = argc > 1 ? argc - 1 : 3;

	for (int i = 0; i < n; i++) {
		const char *w = argc > 1 ? argv[i + 1] : dflt[i];

		if (!strcmp(w, "push"))
			entry_push();
		else
			entry_mov();
	}
	return 0;
}
