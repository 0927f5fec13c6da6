// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* cgroups.c — the cgroup v2 hierarchy, for -a --cgroup and --by cgroup. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "host/cgroups.h"
#include "capture/procfs.h"
#include "util.h"

#define CGROUP2_MAGIC	0x63677270

/* Field 5 of a mountinfo line whose filesystem type (after " - ") is
 * cgroup2.  Mount points with odd bytes come octal-escaped; cgroup2's do
 * not in practice, and such a line is skipped. */
const char *cgroup2_mount(void)
{
	static char mnt[PATH_MAX];
	char *text = NULL, *line, *save = NULL;
	size_t len;

	if (mnt[0])
		return mnt;
	if (procfs_read_file("/proc/self/mountinfo", &text, &len))
		return NULL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char point[PATH_MAX], type[32];
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(dash + 3, "%31s", type) != 1 || strcmp(type, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 && !strchr(point, '\\')) {
			snprintf(mnt, sizeof(mnt), "%s", point);
			break;
		}
	}
	free(text);
	return mnt[0] ? mnt : NULL;
}

int cgroup_open(const char *path, int *fd, char **rel)
{
	const char *mnt = cgroup2_mount();
	size_t ml = mnt ? strlen(mnt) : 0;
	char full[PATH_MAX];
	struct statfs sfs;

	if (!mnt) {
		mw_err("--cgroup: no cgroup v2 hierarchy is mounted");
		return MW_EXIT_NOPID;
	}
	if (strncmp(path, mnt, ml) == 0 && (path[ml] == '/' || !path[ml]))
		path += ml;
	while (*path == '/')
		path++;
	snprintf(full, sizeof(full), "%s/%s", mnt, path);
	*fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0 || fstatfs(*fd, &sfs) || sfs.f_type != CGROUP2_MAGIC) {
		mw_err("--cgroup %s: %s is not a cgroup v2 directory%s%s", path, full,
		       *fd < 0 ? ": " : "", *fd < 0 ? strerror(errno) : "");
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return MW_EXIT_NOPID;
	}
	if (asprintf(rel, "/%s", path) < 0)
		*rel = NULL;
	return 0;
}

static void add_pid(pid_t **v, size_t *n, size_t *cap, pid_t pid)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*v = mw_xrealloc(*v, *cap, sizeof(**v));
	}
	(*v)[(*n)++] = pid;
}

/* cgroup.procs of dirfd, then of each directory below it. */
static int walk(int dirfd, pid_t **v, size_t *n, size_t *cap, int depth)
{
	int pfd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	FILE *f = pfd >= 0 ? fdopen(pfd, "r") : NULL;
	struct dirent *de;
	DIR *d;
	long pid;

	if (!f)
		return -errno;
	while (fscanf(f, "%ld", &pid) == 1)
		add_pid(v, n, cap, (pid_t)pid);
	fclose(f);
	if (depth > 64 || !(d = fdopendir(dup(dirfd))))
		return 0;
	while ((de = readdir(d))) {
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub >= 0) {
			walk(sub, v, n, cap, depth + 1);
			close(sub);
		}
	}
	closedir(d);
	return 0;
}

long cgroup_pids(int dirfd, pid_t **pids)
{
	size_t n = 0, cap = 0;
	int err;

	*pids = NULL;
	err = walk(dirfd, pids, &n, &cap, 0);
	if (err) {
		free(*pids);
		*pids = NULL;
		return err;
	}
	return (long)n;
}

char *cgroup_of_pid(pid_t pid)
{
	char path[64], *text = NULL, *line, *save = NULL, *out = NULL;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (procfs_read_file(path, &text, &len))
		return NULL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "0::", 3) == 0) {
			out = mw_xstrdup(line + 3);
			break;
		}
	free(text);
	return out;
}

uint64_t cgroup_id_of_path(const char *rel)
{
	const char *mnt = cgroup2_mount();
	char full[PATH_MAX];
	struct stat st;

	if (!mnt || !rel)
		return 0;
	snprintf(full, sizeof(full), "%s%s", mnt, rel);
	return stat(full, &st) ? 0 : (uint64_t)st.st_ino;
}

/* Depth-first under the directory dfd (whose path, relative to the mount,
 * is the len bytes of buf) for the one whose inode is id: readdir's d_ino
 * is the cgroup's id too.  Takes dfd. */
static bool find_id(int dfd, uint64_t id, char *buf, size_t len, size_t cap, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	bool found = false;

	if (!d) {
		close(dfd);
		return false;
	}
	while (!found && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		int fd;

		if (de->d_type != DT_DIR || de->d_name[0] == '.' || len + 1 + n >= cap)
			continue;
		buf[len] = '/';
		memcpy(buf + len + 1, de->d_name, n + 1);
		if (de->d_ino == id) {
			found = true;
			break;
		}
		/* The kernel nests cgroups at most a few dozen deep in practice. */
		if (depth < 64 &&
		    (fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
			found = find_id(fd, id, buf, len + 1 + n, cap, depth + 1);
	}
	if (!found)
		buf[len] = 0;
	closedir(d);
	return found;
}

char *cgroup_path_of_id(uint64_t id)
{
	const char *mnt = cgroup2_mount();
	char buf[PATH_MAX] = "";
	struct stat st;
	int fd;

	if (!mnt || !id || stat(mnt, &st))
		return NULL;
	if ((uint64_t)st.st_ino == id)
		return mw_xstrdup("/");
	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !find_id(fd, id, buf, 0, sizeof(buf), 0))
		return NULL;
	return mw_xstrdup(buf);
}

const char *cgnames_get(struct mw_cgnames *c, uint64_t id, uint32_t pid)
{
	uint32_t idx;
	char *path;

	if (idmap_get(&c->by_id, id + 1, &idx))
		return c->paths[idx];
	path = cgroup_of_pid((pid_t)pid);
	/* The member may have moved since the kernel saw it, or be gone (a
	 * process that lived between two samples): then the hierarchy is
	 * searched, once per id; an id not found there is remembered as
	 * unknown (ids are not reused). */
	if (!path || cgroup_id_of_path(path) != id) {
		free(path);
		path = cgroup_path_of_id(id);
	}
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 32;
		c->paths = mw_xrealloc(c->paths, c->cap, sizeof(*c->paths));
	}
	c->paths[c->n] = path;
	idmap_put(&c->by_id, id + 1, (uint32_t)c->n);
	return c->paths[c->n++];
}

void cgnames_free(struct mw_cgnames *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->paths[i]);
	free(c->paths);
	idmap_free(&c->by_id);
	memset(c, 0, sizeof(*c));
}
