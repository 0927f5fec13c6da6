/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cgroups.h — cgroup v2 for host-wide tracing: find the cgroup2 mount (it
 * is /sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid systems), open the
 * cgroup --cgroup names, list the processes in it and below, and name the
 * cgroup of an id the kernel reports (the inode of its directory).
 */
#ifndef MW_CGROUPS_H
#define MW_CGROUPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/idmap.h"

/* Where cgroup2 is mounted (static buffer), or NULL. */
const char *cgroup2_mount(void);

/* --cgroup PATH: a directory under the cgroup2 mount, given as a full path
 * or relative to the mount ("system.slice/x.service", "/x").  Opens it into
 * *fd and sets *rel to its path below the mount ("/x", caller frees).
 * Returns 0, or an enum mw_exit code after saying what is wrong. */
int cgroup_open(const char *path, int *fd, char **rel);

/* Every process in the cgroup at dirfd and its descendants: *pids (caller
 * frees), count or -errno. */
long cgroup_pids(int dirfd, pid_t **pids);

/* The cgroup v2 path of a process ("/system.slice/x.service"), or NULL. */
char *cgroup_of_pid(pid_t pid);
/* Its id: the inode of its directory, 0 if unknown. */
uint64_t cgroup_id_of_path(const char *rel);
/* The path of a cgroup id, by a search of the hierarchy, or NULL. */
char *cgroup_path_of_id(uint64_t id);

/* Names of cgroup ids, learnt from members, kept while in use. */
struct mw_cgnames {
	struct mw_idmap by_id;	/* id + 1 -> index */
	char **paths;
	size_t n, cap;
};

/* The path of cgroup id, asking process pid (a member) if not known yet;
 * NULL if neither knows.  Valid until cgnames_free. */
const char *cgnames_get(struct mw_cgnames *c, uint64_t id, uint32_t pid);
void cgnames_free(struct mw_cgnames *c);

#endif /* MW_CGROUPS_H */
