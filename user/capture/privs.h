/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * privs.h — give up, once tracing has started, the privileges that only
 * loading and attaching needed.
 *
 * memwatch reads what other, possibly hostile, processes do; whatever it
 * keeps is what a bug in that reading could misuse.  By the time the loop
 * runs, the BPF programs are loaded and attached (their file descriptors
 * keep them so), the outputs and the control socket are open, and the
 * command exists: what is left to do is read /proc, the ring buffer and
 * the BPF maps, and signal the command.
 */
#ifndef MW_PRIVS_H
#define MW_PRIVS_H

#include <stdbool.h>

/* Does bpf() on our maps still work with CAP_BPF and CAP_SYS_ADMIN lowered?
 * (Kernels before 6.5 check them on every call when unprivileged BPF is
 * off.)  Called once, with both out of the effective set. */
typedef bool (*privs_bpf_probe_fn)(void *ctx);

/*
 * Set no_new_privs and drop from the effective, permitted, inheritable,
 * ambient and bounding sets every capability but those the rest of the run
 * needs (privs.c says which and why).  Call it in the parent only, after
 * the command is started: the command keeps the user's privileges.  A
 * failure costs one warning line; tracing goes on.
 */
void privs_drop(privs_bpf_probe_fn bpf_probe, void *ctx);

#endif /* MW_PRIVS_H */
