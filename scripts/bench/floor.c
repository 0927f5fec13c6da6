// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * floor.c - benchmark peer: attach floor.bpf.o's empty programs, then
 *
 *   floor [--raw] OBJ -- CMD ARGS   run CMD and exit with its status, or
 *   floor [--raw] OBJ               print "attached" and wait for SIGINT/SIGTERM.
 *
 * The programs do nothing, so the time CMD loses is the cost of the
 * tracepoints being live: the floor under memwatch's own programs.  The
 * syscall programs go where memwatch puts its own: on the per-call
 * tracepoints syscalls:sys_{enter,exit}_<call> of the calls it follows, or
 * with --raw on the raw sys_enter/sys_exit (every syscall on the host).
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;

/* memwatch's calls, as user/capture/capture.c's traced_calls. */
static const char *const calls[] = {
	"mmap", "munmap", "mremap", "brk", "shmat", "shmdt", "mprotect",
	"pkey_mprotect", "madvise", "mlock", "mlock2", "munlock", "mseal", "prctl",
};

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

/* One program on syscalls:sys_<dir>_<call> for each call this kernel has;
 * returns how many, or -1 if not even mmap's. */
static int attach_calls(struct bpf_program *prog, const char *dir)
{
	char tp[64];
	int n = 0;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		snprintf(tp, sizeof(tp), "sys_%s_%s", dir, calls[i]);
		if (bpf_program__attach_tracepoint(prog, "syscalls", tp))
			n++;
		else if (i == 0)
			return -1;
	}
	return n;
}

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
	bool raw = argc > 1 && !strcmp(argv[1], "--raw");
	int rc = 1, ncalls = 0;

	argc -= raw;
	argv += raw;
	if (argc < 2 || (argc > 2 && (strcmp(argv[2], "--") || argc < 4))) {
		fprintf(stderr, "usage: floor [--raw] OBJ [-- CMD ARGS]\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "floor: cannot open %s\n", argv[1]);
		return 1;
	}
	/* One of the two syscall forms, as memwatch loads one. */
	bpf_object__for_each_program(prog, obj) {
		const char *name = bpf_program__name(prog);

		if (ends_with(name, raw ? "_tp" : "_raw"))
			bpf_program__set_autoload(prog, false);
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "floor: cannot load %s\n", argv[1]);
		goto cleanup;
	}
	bpf_object__for_each_program(prog, obj) {
		const char *name = bpf_program__name(prog);
		int n = 1;

		if (!bpf_program__autoload(prog))
			continue;
		if (ends_with(name, "_tp"))
			n = attach_calls(prog, strstr(name, "_enter_") ? "enter" : "exit");
		else if (!bpf_program__attach(prog))
			n = -1;
		if (n < 0) {
			fprintf(stderr, "floor: cannot attach %s: %s\n", name, strerror(errno));
			goto cleanup;
		}
		ncalls += ends_with(name, "_tp") ? n : 0;
	}
	if (argc > 2) {
		rc = run(argv + 3);
		goto cleanup;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (raw)
		printf("attached (raw sys_enter/sys_exit)\n");
	else
		printf("attached (%d per-call syscall tracepoints)\n", ncalls);
	fflush(stdout);
	while (!stopping)
		pause();
	rc = 0;
cleanup:
	/* Links are not pinned: closing the object detaches everything. */
	bpf_object__close(obj);
	return rc;
}
