// SPDX-License-Identifier: GPL-2.0
/*
 * pausers.c - N idle processes, for memwatch -a's memory at scale.
 *
 * usage: pausers N
 *
 * Forks N children that each touch one page and pause(), prints "ready" when
 * all exist, and on SIGTERM/SIGINT kills them and exits.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile sig_atomic_t done;

static void on_term(int sig)
{
	done = 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;

	setpgid(0, 0);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p != MAP_FAILED)
				p[0] = 1;
			signal(SIGTERM, SIG_DFL);
			for (;;)
				pause();
		}
		if (pid < 0) {
			perror("fork");
			break;
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (!done)
		pause();
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	return 0;
}
