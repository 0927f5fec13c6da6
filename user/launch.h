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

#include <sys/types.h>

/* Start argv stopped after exec.  Returns 0, or MW_EXIT_NOTFOUND /
 * MW_EXIT_NOEXEC / MW_EXIT_RUNTIME after printing why. */
int launch_start(char *const argv[], pid_t *pid);
/* Let the stopped child run (detaches ptrace). */
int launch_resume(pid_t pid);
/* Exit code for memwatch from the child's wait status, as shells do. */
int launch_exit_code(int wait_status);

#endif /* MW_LAUNCH_H */
