/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * control.h — 'memwatch mark': markers from outside the traced process.
 *
 * Each tracing session listens on a UNIX socket /run/memwatch/PID.sock (PID:
 * memwatch's own).  The directory is created 0700 and the socket 0600, both
 * owned by the user running memwatch (root) — a symlink or someone else's
 * directory there is refused, never followed — and the server checks the
 * peer's credentials: only root or that same user may mark.  The protocol
 * is one line each way: "phase NAME\n" or "iter\n", answered "ok\n" or
 * "error TEXT\n", once the marker is taken.  `memwatch -- CMD` gives CMD
 * the socket's path as MW_CONTROL_ENV, so that a program marks itself
 * without forking `memwatch mark` (include/memwatch_mark.*), and so that
 * `memwatch mark` run inside it marks that session only.
 */
#ifndef MW_CONTROL_H
#define MW_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MW_CONTROL_DIR "/run/memwatch"
#define MW_CONTROL_ENV "MEMWATCH_CONTROL"
#define MW_CONTROL_LINE_MS 5000	/* a client's line must come by then */

struct mw_control {
	int fd;			/* listening socket, -1 if none */
	int dirfd;		/* MW_CONTROL_DIR, checked; -1 if none */
	char name[32];		/* the socket's name in it */
	int client;		/* accepted, its line not yet come; -1 none */
	uint64_t client_until;	/* ... given up then (CLOCK_MONOTONIC ns) */
};

struct mw_control_req {
	bool iter;
	char name[64];
	pid_t peer;		/* who asked (SO_PEERCRED), 0: unknown */
};

/* Start listening; failure only costs 'memwatch mark' (a debug note). */
void control_open(struct mw_control *ctl);
void control_close(struct mw_control *ctl);
/* The listening socket's path into buf, or NULL if there is none. */
const char *control_path(const struct mw_control *ctl, char *buf, size_t len);
/* The session MW_CONTROL_ENV names (a command memwatch runs), or 0. */
pid_t control_env_session(void);
/* What the session's loop polls for POLLIN: the listening socket, or the
 * client whose line is still to come (-1: none). */
int control_poll_fd(const struct mw_control *ctl);
/* Whether the loop must call control_accept() with no event: a client
 * whose line is overdue is to be dropped. */
bool control_due(const struct mw_control *ctl);
/* Take one request if one is waiting; fills req, returns the client fd
 * (answer with control_reply) or -1.  Never blocks: a client whose line has
 * not come yet waits (control_poll_fd) up to MW_CONTROL_LINE_MS. */
int control_accept(struct mw_control *ctl, struct mw_control_req *req);
void control_reply(int client, const char *answer);

/* Parse one request line; false if it is not one. */
bool control_parse(const char *line, struct mw_control_req *req);

/* The 'memwatch mark' command: send to one session (pid) or all (0).
 * Returns an enum mw_exit code. */
int control_mark(pid_t session, bool iter, const char *name);

#endif /* MW_CONTROL_H */
