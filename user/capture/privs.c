// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * privs.c — drop the capabilities only loading and attaching needed.
 *
 * What the rest of the run keeps, found by running the end-to-end and
 * robustness suites with everything else dropped (tests/robustness/
 * caps_cases.py checks the sets in /proc/PID/status while tracing):
 *
 *  CAP_SYS_PTRACE  /proc/PID/maps, smaps and pagemap of the traced process
 *                  (the layout after an exec, resyncs, RSS re-measured at
 *                  the exit hold).  The kernel's ptrace access check asks
 *                  for it whenever the process has a capability we no
 *                  longer have (every command run as root does), belongs to
 *                  another user (-p, or a command that switched user), or
 *                  ran a setuid program.
 *  CAP_DAC_READ_SEARCH
 *                  the same process's /proc/PID/pagemap and auxv when it
 *                  belongs to another user: they are mode 0400 and its own,
 *                  so the permission check comes before the ptrace one.
 *                  Also looking up the paths of its mapped files (deleted
 *                  or not) and its binaries for --stacks, which may sit in
 *                  directories only that user may search.
 *  CAP_KILL        SIGTERM and SIGHUP passed on to a command that switched
 *                  to another user (setpriv, runuser).
 *  CAP_BPF         only where bpf() checks it on every command, not just
 *                  when loading: kernels before 6.5 with
 *                  kernel.unprivileged_bpf_disabled set.  Found out by
 *                  trying a map lookup without it.
 *
 * Everything else served the start only: CAP_PERFMON and CAP_BPF (load,
 * attach tracepoints and uprobes), CAP_SYS_ADMIN (mount tracefs), CAP_SETPCAP
 * (this drop).  The programs, maps and links live on as file descriptors,
 * the ring buffer is mapped, the outputs and /run/memwatch/PID.sock are
 * open, and unlinking the socket needs no DAC override: the directory is
 * ours.  A ptrace tracer keeps serving its tracee (PTRACE_CONT at the exit
 * hold) without capabilities.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "capture/privs.h"
#include "util.h"

static const cap_value_t needed[] = { CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_KILL };

static bool has(cap_t c, cap_value_t v, cap_flag_t set)
{
	cap_flag_value_t on = CAP_CLEAR;

	return cap_get_flag(c, v, set, &on) == 0 && on == CAP_SET;
}

/* Try bpf() with CAP_BPF and CAP_SYS_ADMIN lowered; true if it needs one. */
static bool bpf_needs_cap(cap_t cur, privs_bpf_probe_fn probe, void *ctx)
{
	static const cap_value_t bpf_caps[] = { CAP_BPF, CAP_SYS_ADMIN };
	cap_t low = cap_dup(cur);
	bool works;

	if (!low)
		return true;
	cap_set_flag(low, CAP_EFFECTIVE, MW_ARRAY_SIZE(bpf_caps), bpf_caps, CAP_CLEAR);
	works = cap_set_proc(low) == 0 && probe(ctx);
	cap_set_proc(cur);	/* back up: CAP_SETPCAP drops the bounding set */
	cap_free(low);
	return !works;
}

static void keep(cap_t want, cap_t cur, cap_value_t v)
{
	if (!has(cur, v, CAP_PERMITTED))
		return;
	cap_set_flag(want, CAP_EFFECTIVE, 1, &v, CAP_SET);
	cap_set_flag(want, CAP_PERMITTED, 1, &v, CAP_SET);
}

/* The sets to end with: what we need, of what we have; nothing inheritable
 * (which also empties the ambient set: it cannot exceed the other two). */
static cap_t wanted(cap_t cur, bool keep_bpf)
{
	cap_t want = cap_init();

	if (!want)
		return NULL;
	for (size_t i = 0; i < MW_ARRAY_SIZE(needed); i++)
		keep(want, cur, needed[i]);
	if (keep_bpf)
		keep(want, cur, has(cur, CAP_BPF, CAP_PERMITTED) ? CAP_BPF : CAP_SYS_ADMIN);
	return want;
}

static int drop_bounding(cap_t want)
{
	for (cap_value_t v = 0; v < (cap_value_t)cap_max_bits(); v++) {
		if (has(want, v, CAP_PERMITTED) || cap_get_bound(v) != 1)
			continue;
		if (cap_drop_bound(v))
			return errno;
	}
	return 0;
}

static void say_result(int err, cap_t want)
{
	char *text;

	if (err) {
		mw_err("warning: cannot drop capabilities (%s): tracing goes on with them",
		       strerror(err));
		return;
	}
	text = mw_verbose ? cap_to_text(want, NULL) : NULL;
	mw_dbg("capabilities dropped; kept: %s", text ? text : "?");
	cap_free(text);
}

void privs_drop(privs_bpf_probe_fn bpf_probe, void *ctx)
{
	/* The command was forked before this: it does not inherit it.  With
	 * it, no exec of ours could regain what the bounding set still has. */
	bool nnp = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
	cap_t cur = cap_get_proc(), want = NULL;
	int err = 0;

	if (!cur || !(want = wanted(cur, bpf_needs_cap(cur, bpf_probe, ctx)))) {
		err = errno ?: ENOMEM;
		goto out;
	}
	/* Without CAP_SETPCAP (started with fewer capabilities, say only
	 * CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE) the bounding set stays as
	 * given: no_new_privs already keeps it from being used. */
	if (has(cur, CAP_SETPCAP, CAP_EFFECTIVE))
		err = drop_bounding(want);
	else if (!nnp)
		err = EPERM;
	if (!err && cap_set_proc(want))
		err = errno;
out:
	say_result(err, want);
	cap_free(want);
	cap_free(cur);
}
