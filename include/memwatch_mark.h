/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * memwatch_mark.h - mark phases and iterations through memwatch's control
 * socket: for code where the USDT markers of memwatch.h are not found (a
 * shared library, a plugin) or cannot be built, and without forking
 * `memwatch mark`, whose fork makes every page the program writes next a
 * copy-on-write fault.
 *
 *     #include "memwatch_mark.h"
 *
 *     memwatch_mark_phase("load_model");
 *     load_model();
 *     for (i = 0; i < n; i++) {
 *             memwatch_mark_iter();
 *             infer(i);
 *     }
 *
 * `memwatch -- CMD` puts its session's socket in CMD's environment as
 * MEMWATCH_CONTROL (/run/memwatch/PID.sock); without it, or if memwatch has
 * gone, the calls do nothing and return -1.  The protocol, one line each
 * way: connect, write "phase NAME\n" (NAME: 1 to 63 printable characters)
 * or "iter\n" (within 5 s of connecting), read "ok\n" or "error TEXT\n".
 * The answer comes once the marker is taken, so what the program does
 * before the call falls in the phase before, what it does after in the
 * new one.  Cost: a socket, a connect and two small messages (tens of
 * microseconds), no allocation.
 * Python and Node: memwatch_mark.py and memwatch_mark.js beside this file.
 */
#ifndef MEMWATCH_MARK_H
#define MEMWATCH_MARK_H

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Send one request line; 0 once memwatch answers "ok", else -1. */
static inline int memwatch_mark_send(const char *line)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = getenv("MEMWATCH_CONTROL");
	size_t len = strlen(line);
	char answer[64];
	ssize_t n = -1;
	int fd;

	if (!path || strlen(path) >= sizeof(sa.sun_path))
		return -1;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    write(fd, line, len) == (ssize_t)len)
		n = read(fd, answer, sizeof(answer));
	close(fd);
	return n >= 3 && memcmp(answer, "ok\n", 3) == 0 ? 0 : -1;
}

/* Start the phase @name. */
static inline int memwatch_mark_phase(const char *name)
{
	char line[72] = "phase ";
	size_t len = strlen(name);

	if (!len || len > 63)
		return -1;
	memcpy(line + 6, name, len);
	memcpy(line + 6 + len, "\n", 2);
	return memwatch_mark_send(line);
}

/* Start one iteration (a request, a batch, a step). */
static inline int memwatch_mark_iter(void)
{
	return memwatch_mark_send("iter\n");
}

#endif /* MEMWATCH_MARK_H */
