// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* launch.c — run CMD stopped right after exec. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/launch.h"
#include "util.h"

static void child_exec(char *const argv[], int errfd)
{
	sigset_t none;
	int err;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0)
		execvp(argv[0], argv);
	err = errno;
	if (write(errfd, &err, sizeof(err)) != sizeof(err))
		_exit(MW_EXIT_RUNTIME);
	_exit(err == ENOENT ? MW_EXIT_NOTFOUND : MW_EXIT_NOEXEC);
}

int launch_start(char *const argv[], pid_t *pidp)
{
	int fds[2], err = 0, status;
	ssize_t n;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC)) {
		mw_err("pipe: %s", strerror(errno));
		return MW_EXIT_RUNTIME;
	}
	pid = fork();
	if (pid < 0) {
		mw_err("fork: %s", strerror(errno));
		return MW_EXIT_RUNTIME;
	}
	if (pid == 0)
		child_exec(argv, fds[1]);
	close(fds[1]);
	/* EOF means exec succeeded: the write end closed on exec. */
	do
		n = read(fds[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	if (n == sizeof(err)) {
		waitpid(pid, &status, 0);
		mw_err("%s: %s", argv[0], strerror(err));
		return err == ENOENT ? MW_EXIT_NOTFOUND : MW_EXIT_NOEXEC;
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			mw_err("waitpid: %s", strerror(errno));
			return MW_EXIT_RUNTIME;
		}
	}
	if (!WIFSTOPPED(status)) {
		mw_err("%s: exited before it could be traced", argv[0]);
		return MW_EXIT_RUNTIME;
	}
	*pidp = pid;
	return 0;
}

int launch_resume(pid_t pid)
{
	/* No PTRACE_O_EXITKILL: if memwatch dies, the kernel detaches and
	 * the command runs on. */
	if (ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)PTRACE_O_TRACEEXIT) ||
	    ptrace(PTRACE_CONT, pid, NULL, NULL)) {
		mw_err("cannot resume PID %d: %s", pid, strerror(errno));
		return -errno;
	}
	return 0;
}

bool launch_seize(pid_t pid)
{
	return ptrace(PTRACE_SEIZE, pid, NULL, (void *)(long)PTRACE_O_TRACEEXIT) == 0;
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

enum launch_event launch_poll(pid_t pid, int *status, bool block)
{
	pid_t r;
	int sig;

	for (;;) {
		do
			r = waitpid(pid, status, block ? 0 : WNOHANG);
		while (r < 0 && errno == EINTR);
		if (r != pid)
			return LAUNCH_NOTHING;
		if (WIFEXITED(*status) || WIFSIGNALED(*status))
			return LAUNCH_GONE;
		if (!WIFSTOPPED(*status))
			continue;
		sig = WSTOPSIG(*status);
		if (sig == SIGTRAP && (*status >> 16) == PTRACE_EVENT_EXIT)
			return LAUNCH_AT_EXIT;
		if (sig == SIGTRAP)
			sig = 0;	/* after a later execve: ours, not its */
		if (is_stop_signal(sig))
			ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)sig);
		else
			ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
	}
}

void launch_continue(pid_t pid)
{
	ptrace(PTRACE_CONT, pid, NULL, NULL);
}

int launch_exit_code(int wait_status)
{
	if (WIFEXITED(wait_status))
		return WEXITSTATUS(wait_status);
	if (WIFSIGNALED(wait_status))
		return 128 + WTERMSIG(wait_status);
	return MW_EXIT_RUNTIME;
}
