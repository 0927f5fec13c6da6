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
};

/* -p: hold a running process at its exit too (PTRACE_SEIZE, nothing else
 * traced).  False if it cannot be (already traced, not permitted). */
bool launch_seize(pid_t pid);

/* Handle what the child did (ptrace stops are answered here). */
enum launch_event launch_poll(pid_t pid, int *status, bool block);
/* Let a child stopped at its exit go on exiting.  (If the trace ends
 * first, memwatch's own exit detaches the child: the kernel does that.) */
void launch_continue(pid_t pid);
/* Exit code for memwatch from the child's wait status, as shells do. */
int launch_exit_code(int wait_status);

#endif /* MW_LAUNCH_H */
