// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* launch.c — run CMD stopped right after exec. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <linux/kcmp.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/idmap.h"
#include "capture/launch.h"
#include "capture/procfs.h"
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
		if (sig == SIGTRAP) {
			/* After a later execve: ours, not its. */
			ptrace(PTRACE_CONT, pid, NULL, NULL);
			return LAUNCH_EXECED;
		}
		if (is_stop_signal(sig))
			ptrace(PTRACE_DETACH, pid, NULL, (void *)(long)sig);
		else
			ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
	}
}

/* ---- -f: the tree ---- */

#define TREE_OPTS (PTRACE_O_TRACEEXIT | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | \
		   PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC)

/* What a tracee (a thread) is, as the value of its ID in the map. */
enum { TID_THREAD = 1, TID_LEADER = 2, TID_VFORKED = 4 };

struct launch_tree {
	struct mw_idmap tids;	/* every tracee seen, and what it is */
	int err;		/* why the last seize of a leader failed */
};

static void tid_set(struct launch_tree *t, pid_t tid, uint32_t what)
{
	idmap_put(&t->tids, (uint64_t)tid, what);
}

/* Seize every thread of a running process (twice over: threads it
 * creates while the first pass reads the list are caught then, and
 * auto-attached after). */
static bool seize_all(struct launch_tree *t, pid_t pid)
{
	char dir[64];
	bool any = false;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	for (int pass = 0; pass < 2; pass++) {
		DIR *d = opendir(dir);
		struct dirent *e;

		if (!d)
			return any;
		while ((e = readdir(d))) {
			pid_t tid = (pid_t)atoi(e->d_name);
			uint32_t v;

			if (tid <= 0 || idmap_get(&t->tids, (uint64_t)tid, &v))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)TREE_OPTS) == 0) {
				tid_set(t, tid, tid == pid ? TID_LEADER : TID_THREAD);
				any |= tid == pid;
			} else if (tid == pid) {
				t->err = errno;
			}
		}
		closedir(d);
	}
	return any;
}

struct launch_tree *launch_tree_new(pid_t root, bool started)
{
	struct launch_tree *t = mw_xcalloc(1, sizeof(*t));

	if (started) {
		tid_set(t, root, TID_LEADER);
		if (!ptrace(PTRACE_SETOPTIONS, root, NULL, (void *)(long)TREE_OPTS))
			return t;
		mw_err("cannot follow PID %d: %s", root, strerror(errno));
	} else if (seize_all(t, root)) {
		return t;
	} else {
		mw_err("cannot follow the processes PID %d starts: it cannot be traced: %s%s", root,
		       strerror(t->err ?: ESRCH),
		       t->err == EPERM ? " (another debugger holds it, or ptrace is not permitted)" : "");
	}
	launch_tree_free(t);
	return NULL;
}

bool launch_tree_adopt(struct launch_tree *t, pid_t pid)
{
	return seize_all(t, pid);
}

void launch_tree_free(struct launch_tree *t)
{
	if (!t)
		return;
	idmap_free(&t->tids);
	free(t);
}

void launch_tree_continue(struct launch_tree *t, pid_t pid)
{
	(void)t;
	ptrace(PTRACE_CONT, pid, NULL, NULL);
}

/* Does pid share its parent's address space (vfork, CLONE_VM)? */
static bool shares_mm(pid_t pid, pid_t ppid)
{
	return ppid > 0 && syscall(SYS_kcmp, pid, ppid, KCMP_VM, 0, 0) == 0;
}

/* A tracee seen for the first time, at its attach stop: a thread goes on,
 * a vfork child goes on until its exec, a process is born. */
static bool first_stop(struct launch_tree *t, pid_t tid, struct launch_ev *ev)
{
	struct pm_status st;

	if (procfs_read_status(tid, &st) || st.tgid != tid) {
		tid_set(t, tid, TID_THREAD);
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		return false;
	}
	if (shares_mm(tid, st.ppid)) {
		tid_set(t, tid, TID_LEADER | TID_VFORKED);
		ptrace(PTRACE_CONT, tid, NULL, NULL);
		return false;
	}
	tid_set(t, tid, TID_LEADER);
	*ev = (struct launch_ev){ .pid = tid, .ppid = st.ppid };
	return true;
}

enum launch_event launch_tree_poll(struct launch_tree *t, struct launch_ev *ev, bool block)
{
	int st, sig, event;
	uint32_t what;
	pid_t r;

	for (;;) {
		do
			r = waitpid(-1, &st, __WALL | (block ? 0 : WNOHANG));
		while (r < 0 && errno == EINTR);
		if (r <= 0)
			return LAUNCH_NOTHING;
		if (!idmap_get(&t->tids, (uint64_t)r, &what))
			what = 0;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			idmap_del(&t->tids, (uint64_t)r);
			if (what & TID_THREAD)
				continue;
			*ev = (struct launch_ev){ .pid = r, .status = st };
			return LAUNCH_GONE;
		}
		if (!WIFSTOPPED(st))
			continue;
		if (!what) {
			if (first_stop(t, r, ev))
				return LAUNCH_BORN;
			continue;
		}
		sig = WSTOPSIG(st);
		event = st >> 16;
		if (sig == SIGTRAP && event == PTRACE_EVENT_EXIT && (what & TID_LEADER) &&
		    !(what & TID_VFORKED)) {
			*ev = (struct launch_ev){ .pid = r };
			return LAUNCH_AT_EXIT;
		}
		if (sig == SIGTRAP && event == PTRACE_EVENT_EXEC && (what & TID_VFORKED)) {
			struct pm_status ps;

			/* Its own address space now: born, stopped. */
			tid_set(t, r, TID_LEADER);
			*ev = (struct launch_ev){ .pid = r, .exec = true,
						  .ppid = procfs_read_status(r, &ps) ? 0 : ps.ppid };
			return LAUNCH_BORN;
		}
		if (sig == SIGTRAP && event == PTRACE_EVENT_EXEC && (what & TID_LEADER)) {
			ptrace(PTRACE_CONT, r, NULL, NULL);
			*ev = (struct launch_ev){ .pid = r };
			return LAUNCH_EXECED;
		}
		if (event == PTRACE_EVENT_STOP || (sig == SIGTRAP && event))
			sig = 0;	/* ours: an event, or a seized tracee's stop */
		if (is_stop_signal(sig) || (event == PTRACE_EVENT_STOP &&
					    is_stop_signal(WSTOPSIG(st)))) {
			idmap_del(&t->tids, (uint64_t)r);
			ptrace(PTRACE_DETACH, r, NULL, (void *)(long)sig);
		} else {
			ptrace(PTRACE_CONT, r, NULL, (void *)(long)sig);
		}
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
