// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* control.c — 'memwatch mark' over a UNIX socket. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "capture/control.h"
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

/*
 * /run/memwatch is opened without following a symlink and judged by what
 * the descriptor shows, so nothing planted there can redirect us: a symlink,
 * a file, or a directory of another owner is refused ('memwatch mark' is
 * then off for this session, with one warning line).  A directory of ours
 * that others may enter is tightened to 0700 through the descriptor, never
 * by path.  Everything after is relative to that descriptor.
 */
static int open_dir_checked(void)
{
	struct stat st;
	int fd;

	if (mkdir(MW_CONTROL_DIR, 0700) && errno != EEXIST)
		return -errno;
	fd = open(MW_CONTROL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	if ((st.st_mode & 077) && fchmod(fd, 0700)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static void say_no_dir(int err)
{
	const char *why = err == -ELOOP ? "is a symbolic link" :
			  err == -ENOTDIR ? "is not a directory" :
			  err == -EPERM ? "belongs to another user" : NULL;

	if (why)	/* planted: worth saying without -v */
		mw_err("warning: %s %s: not using it; 'memwatch mark' is off for this "
		       "session", MW_CONTROL_DIR, why);
	else
		mw_dbg("no control socket for 'memwatch mark': %s: %s", MW_CONTROL_DIR,
		       strerror(-err));
}

/* A path that reaches @name inside the directory open as @dirfd, for the
 * calls that take only paths (bind, connect). */
static int at_path(char *buf, size_t len, int dirfd, const char *name)
{
	return snprintf(buf, len, "/proc/self/fd/%d/%s", dirfd, name) < (int)len ? 0 : -ENAMETOOLONG;
}

void control_open(struct mw_control *ctl)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int err;

	ctl->fd = -1;
	ctl->client = -1;
	ctl->dirfd = open_dir_checked();
	if (ctl->dirfd < 0) {
		say_no_dir(ctl->dirfd);
		return;
	}
	snprintf(ctl->name, sizeof(ctl->name), "%d.sock", getpid());
	unlinkat(ctl->dirfd, ctl->name, 0);	/* a dead session's, same PID */
	if (at_path(sa.sun_path, sizeof(sa.sun_path), ctl->dirfd, ctl->name)) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ctl->fd < 0)
		goto fail;
	old = umask(077);
	err = (bind(ctl->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(ctl->fd, 8)) ? errno : 0;
	umask(old);
	if (!err)
		return;
	close(ctl->fd);
	ctl->fd = -1;
	errno = err;
fail:
	mw_dbg("no control socket for 'memwatch mark': %s", strerror(errno));
	close(ctl->dirfd);
	ctl->dirfd = -1;
}

const char *control_path(const struct mw_control *ctl, char *buf, size_t len)
{
	if (ctl->fd < 0 || snprintf(buf, len, "%s/%s", MW_CONTROL_DIR, ctl->name) >= (int)len)
		return NULL;
	return buf;
}

pid_t control_env_session(void)
{
	static const char dir[] = MW_CONTROL_DIR "/";
	const char *env = getenv(MW_CONTROL_ENV);
	char *end;
	long pid;

	if (!env || strncmp(env, dir, sizeof(dir) - 1))
		return 0;
	pid = strtol(env + sizeof(dir) - 1, &end, 10);
	return pid > 0 && pid <= INT_MAX && !strcmp(end, ".sock") ? (pid_t)pid : 0;
}

void control_close(struct mw_control *ctl)
{
	if (ctl->client >= 0)
		close(ctl->client);
	ctl->client = -1;
	if (ctl->fd >= 0) {
		close(ctl->fd);
		unlinkat(ctl->dirfd, ctl->name, 0);
		ctl->fd = -1;
	}
	if (ctl->dirfd >= 0)
		close(ctl->dirfd);
	ctl->dirfd = -1;
}

void control_reply(int client, const char *answer)
{
	if (write(client, answer, strlen(answer)) < 0)
		mw_dbg("control reply: %s", strerror(errno));
	close(client);
}

int control_poll_fd(const struct mw_control *ctl)
{
	return ctl->client >= 0 ? ctl->client : ctl->fd;
}

bool control_due(const struct mw_control *ctl)
{
	return ctl->client >= 0 && mw_now_ns() >= ctl->client_until;
}

int control_accept(struct mw_control *ctl, struct mw_control_req *req)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	char line[128];
	struct pollfd pfd;
	ssize_t n;
	int c = ctl->client;

	if (ctl->fd < 0)
		return -1;
	if (c < 0) {
		c = accept4(ctl->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			return -1;
		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &clen) ||
		    (cred.uid != 0 && cred.uid != geteuid())) {
			control_reply(c, "error not permitted\n");
			return -1;
		}
	}
	/* One short line.  Not there yet (Node writes it from a callback,
	 * which a garbage collection can hold back past 200 ms under qemu):
	 * the client waits in the session's poll, tracing goes on, and others
	 * queue in the backlog behind it. */
	pfd = (struct pollfd){ .fd = c, .events = POLLIN };
	if (poll(&pfd, 1, 0) != 1) {
		if (c != ctl->client) {
			ctl->client = c;
			ctl->client_until = mw_now_ns() + MW_CONTROL_LINE_MS * 1000000ull;
			return -1;
		}
		if (mw_now_ns() < ctl->client_until)
			return -1;
		n = -1;		/* overdue */
	} else {
		n = read(c, line, sizeof(line) - 1);
	}
	ctl->client = -1;
	if (n <= 0) {
		close(c);
		return -1;
	}
	line[n] = 0;
	if (!control_parse(line, req)) {
		control_reply(c, "error bad request\n");
		return -1;
	}
	clen = sizeof(cred);
	req->peer = getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &clen) ? 0 : cred.pid;
	return c;
}

/* ---- the client -------------------------------------------------------- */

static int send_one(int dirfd, const char *name, const char *msg, char *answer, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	ssize_t n;
	int fd;

	if (at_path(sa.sun_path, sizeof(sa.sun_path), dirfd, name))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
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

/*
 * The sessions' directory, if only root or we could have put sockets in it:
 * not a symlink, owned by root or us, writable by nobody else.  Returns a
 * DIR or NULL with the exit code in *code after saying why.
 */
static DIR *open_sessions(int *code)
{
	int fd = open(MW_CONTROL_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	DIR *d;

	if (fd < 0 && errno == EACCES) {
		mw_err("mark: %s is not readable: run memwatch mark as the user running "
		       "memwatch (root)", MW_CONTROL_DIR);
		*code = MW_EXIT_PERM;
		return NULL;
	}
	if (fd < 0 && errno == ENOENT) {
		mw_err("mark: no memwatch session is running (nothing in %s)", MW_CONTROL_DIR);
		*code = MW_EXIT_NOSESSION;
		return NULL;
	}
	if (fd < 0 || fstat(fd, &st) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & 022) || !(d = fdopendir(fd))) {
		mw_err("mark: %s is not a directory only root may write to: not using it",
		       MW_CONTROL_DIR);
		if (fd >= 0)
			close(fd);
		*code = MW_EXIT_NOSESSION;
		return NULL;
	}
	return d;
}

int control_mark(pid_t session, bool iter, const char *name)
{
	char msg[128], answer[128];
	struct dirent *de;
	int sent = 0, refused = 0, err, code;
	DIR *d;

	if (iter)
		snprintf(msg, sizeof(msg), "iter\n");
	else if (snprintf(msg, sizeof(msg), "phase %s\n", name) >= (int)sizeof(msg) ||
		 !control_parse(msg, &(struct mw_control_req){ 0 })) {
		mw_err("mark: a phase name is 1 to 63 printable characters");
		return MW_EXIT_USAGE;
	}
	d = open_sessions(&code);
	if (!d)
		return code;
	while ((de = readdir(d))) {
		int pid = atoi(de->d_name);

		if (pid <= 0 || !strstr(de->d_name, ".sock") || (session && pid != session))
			continue;
		answer[0] = 0;
		err = send_one(dirfd(d), de->d_name, msg, answer, sizeof(answer));
		if (err == -ECONNREFUSED || err == -ENOENT) {
			/* a session that died without cleaning up */
			unlinkat(dirfd(d), de->d_name, 0);
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
