// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * floor.c - benchmark peer: attach floor.bpf.o's empty programs, then
 *
 *   floor OBJ -- CMD ARGS   run CMD and exit with its status, or
 *   floor OBJ               print "attached" and wait for SIGINT/SIGTERM.
 *
 * The programs do nothing, so the time CMD loses is the cost of the
 * tracepoints being live: the floor under memwatch's own programs.
 */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	stopping = 1;
}

static int run(char **argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		perror("floor: fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[0], argv);
		perror("floor: exec");
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	int rc = 1;

	if (argc < 2 || (argc > 2 && (strcmp(argv[2], "--") || argc < 4))) {
		fprintf(stderr, "usage: floor OBJ [-- CMD ARGS]\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "floor: cannot load %s\n", argv[1]);
		goto cleanup;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__attach(prog)) {
			fprintf(stderr, "floor: cannot attach %s\n", bpf_program__name(prog));
			goto cleanup;
		}
	}
	if (argc > 2) {
		rc = run(argv + 3);
		goto cleanup;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("attached\n");
	fflush(stdout);
	while (!stopping)
		pause();
	rc = 0;
cleanup:
	/* Links are not pinned: closing the object detaches everything. */
	bpf_object__close(obj);
	return rc;
}
