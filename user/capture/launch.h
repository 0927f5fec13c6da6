/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * launch.h — run CMD so that it can be traced from its first instruction.
 *
 * exec builds the new address space without a single mmap syscall, so the
 * child stops right after exec (ptrace's exec stop, before the dynamic
 * loader runs); we read its layout and start tracing, then let it go.
 */
#ifndef MW_LAUNCH_H
#define MW_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

/* Start argv stopped after exec.  Returns 0, or MW_EXIT_NOTFOUND /
 * MW_EXIT_NOEXEC / MW_EXIT_RUNTIME after printing why. */
int launch_start(char *const argv[], pid_t *pid);
/*
 * Let the stopped child run.  It stays traced for one thing only: to stop
 * once more when it exits, with its address space still there, so the trace
 * can catch up before it goes (launch_at_exit()).  Signals pass straight on;
 * a stop signal detaches, leaving job control alone.
 */
int launch_resume(pid_t pid);

enum launch_event {
	LAUNCH_NOTHING,		/* still running */
	LAUNCH_AT_EXIT,		/* stopped at its exit: call launch_continue() */
	LAUNCH_GONE,		/* exited or killed: *status is set */
	LAUNCH_BORN,		/* -f: a new process, stopped (launch_tree_poll) */
	LAUNCH_EXECED,		/* held at an execve, let go now: ld.so runs */
};

/* -p: hold a running process at its exit too (PTRACE_SEIZE, nothing else
 * traced).  False if it cannot be (already traced, not permitted). */
bool launch_seize(pid_t pid);

/* Handle what the child did (ptrace stops are answered here). */
enum launch_event launch_poll(pid_t pid, int *status, bool block);
/* Let a child stopped at its exit go on exiting.  (If the trace ends
 * first, memwatch's own exit detaches the child: the kernel does that.) */
void launch_continue(pid_t pid);
/*
 * -f: the whole tree stays traced.  Every thread of it is a tracee
 * (PTRACE_O_TRACEFORK, VFORK, CLONE, EXEC and EXIT, as strace -f): a new
 * process stops at its birth, before its first instruction, so its layout
 * is read exactly, and each process stops at its exit with its address
 * space still there.  A vfork child shares its parent's address space until
 * it execs: it is a process of its own only from its exec stop.
 */
struct launch_tree;

struct launch_ev {
	pid_t pid;		/* the process (its leader's ID) */
	pid_t ppid;		/* LAUNCH_BORN: its parent */
	bool exec;		/* LAUNCH_BORN: a vfork child, stopped after exec */
	int status;		/* LAUNCH_GONE: its wait status */
};

/* The tree of root: root stopped after exec (launch_start()), or running
 * (-p: every thread of it seized now; NULL if it cannot be). */
struct launch_tree *launch_tree_new(pid_t root, bool started);
void launch_tree_free(struct launch_tree *t);
/* -p: a running process of the tree found at the start, seized as root is
 * (false if it cannot be). */
bool launch_tree_adopt(struct launch_tree *t, pid_t pid);
/* A process stopped at its birth, its exit or (the root) after exec. */
void launch_tree_continue(struct launch_tree *t, pid_t pid);
/*
 * Handle one stop of any tracee.  LAUNCH_BORN: ev->pid is stopped, new
 * (launch_tree_continue() it once it is tracked); LAUNCH_AT_EXIT: stopped
 * at its exit; LAUNCH_GONE: exited or killed.  Threads' stops are answered
 * here; a stop signal detaches that thread, leaving job control alone.
 */
enum launch_event launch_tree_poll(struct launch_tree *t, struct launch_ev *ev, bool block);

/* Exit code for memwatch from the child's wait status, as shells do. */
int launch_exit_code(int wait_status);

#endif /* MW_LAUNCH_H */
