// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* control.c — 'memwatch mark' over a UNIX socket. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "util.h"

bool control_parse(const char *line, struct mw_control_req *req)
{
	size_t n;

	memset(req, 0, sizeof(*req));
	if (strncmp(line, "iter", 4) == 0 && (line[4] == '\n' || line[4] == 0)) {
		req->iter = true;
		return true;
	}
	if (strncmp(line, "phase ", 6) != 0)
		return false;
	line += 6;
	n = strcspn(line, "\n");
	if (n == 0 || n >= sizeof(req->name))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			return false;	/* names reach reports and terminals */
	memcpy(req->name, line, n);
	return true;
}

void control_open(struct mw_control *ctl)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;

	ctl->fd = -1;
	if (mkdir(MW_CONTROL_DIR, 0700) && errno != EEXIST)
		goto fail;
	/* A directory someone else planted is not ours to use. */
	if (lstat(MW_CONTROL_DIR, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		errno = EPERM;
		goto fail;
	}
	snprintf(ctl->path, sizeof(ctl->path), "%s/%d.sock", MW_CONTROL_DIR, getpid());
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ctl->path);
	unlink(ctl->path);
	ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ctl->fd < 0)
		goto fail;
	old = umask(077);
	if (bind(ctl->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(ctl->fd, 8)) {
		umask(old);
		close(ctl->fd);
		ctl->fd = -1;
		goto fail;
	}
	umask(old);
	return;
fail:
	mw_dbg("no control socket for 'memwatch mark': %s", strerror(errno));
}

void control_close(struct mw_control *ctl)
{
	if (ctl->fd < 0)
		return;
	close(ctl->fd);
	unlink(ctl->path);
	ctl->fd = -1;
}

void control_reply(int client, const char *answer)
{
	if (write(client, answer, strlen(answer)) < 0)
		mw_dbg("control reply: %s", strerror(errno));
	close(client);
}

int control_accept(struct mw_control *ctl, struct mw_control_req *req)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	char line[128];
	struct pollfd pfd;
	ssize_t n;
	int c;

	if (ctl->fd < 0)
		return -1;
	c = accept4(ctl->fd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return -1;
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &clen) ||
	    (cred.uid != 0 && cred.uid != geteuid())) {
		control_reply(c, "error not permitted\n");
		return -1;
	}
	/* One short line, promptly: a stuck client must not stall tracing. */
	pfd = (struct pollfd){ .fd = c, .events = POLLIN };
	n = poll(&pfd, 1, 200) == 1 ? read(c, line, sizeof(line) - 1) : -1;
	if (n <= 0) {
		close(c);
		return -1;
	}
	line[n] = 0;
	if (!control_parse(line, req)) {
		control_reply(c, "error bad request\n");
		return -1;
	}
	return c;
}

/* ---- the client -------------------------------------------------------- */

static int send_one(const char *path, const char *msg, char *answer, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	ssize_t n;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(fd, msg, strlen(msg)) != (ssize_t)strlen(msg)) {
		int err = -errno;

		close(fd);
		return err;
	}
	n = read(fd, answer, len - 1);
	close(fd);
	answer[n > 0 ? n : 0] = 0;
	return n > 0 ? 0 : -EIO;
}

int control_mark(pid_t session, bool iter, const char *name)
{
	char msg[128], path[300], answer[128];
	struct dirent *de;
	int sent = 0, refused = 0, err;
	DIR *d;

	if (iter)
		snprintf(msg, sizeof(msg), "iter\n");
	else if (snprintf(msg, sizeof(msg), "phase %s\n", name) >= (int)sizeof(msg) ||
		 !control_parse(msg, &(struct mw_control_req){ 0 })) {
		mw_err("mark: a phase name is 1 to 63 printable characters");
		return MW_EXIT_USAGE;
	}
	d = opendir(MW_CONTROL_DIR);
	if (!d) {
		if (errno == EACCES) {
			mw_err("mark: %s is not readable: run memwatch mark as the user running "
			       "memwatch (root)", MW_CONTROL_DIR);
			return MW_EXIT_PERM;
		}
		mw_err("mark: no memwatch session is running (nothing in %s)", MW_CONTROL_DIR);
		return MW_EXIT_NOSESSION;
	}
	while ((de = readdir(d))) {
		int pid = atoi(de->d_name);

		if (pid <= 0 || !strstr(de->d_name, ".sock") || (session && pid != session))
			continue;
		snprintf(path, sizeof(path), "%s/%s", MW_CONTROL_DIR, de->d_name);
		err = send_one(path, msg, answer, sizeof(answer));
		if (err == -ECONNREFUSED || err == -ENOENT) {
			unlink(path);	/* a session that died without cleaning up */
			continue;
		}
		if (err == -EACCES || strncmp(answer, "error not permitted", 19) == 0)
			refused++;
		else if (!err && strncmp(answer, "ok", 2) == 0)
			sent++;
	}
	closedir(d);
	if (sent)
		return MW_EXIT_OK;
	if (refused) {
		mw_err("mark: not permitted: run it as the user running memwatch (root)");
		return MW_EXIT_PERM;
	}
	if (session)
		mw_err("mark: no memwatch session with PID %d", session);
	else
		mw_err("mark: no memwatch session is running");
	return MW_EXIT_NOSESSION;
}
