// SPDX-License-Identifier: GPL-2.0
/*
 * forktree.c - a parent and the children it forks, each with phases and
 * iterations of its own, one of them exec'ing: memwatch -f's truth.
 *
 * usage: forktree [children=3]
 *
 * The parent maps and touches 8 MiB ("load"), then forks the children.
 * Child i (but the last) takes its checkpoints in $MW_CKPT_DIR/child<i>:
 * it writes (i + 1) MiB of the inherited region (copy-on-write: its own
 * copies), maps and touches (2 + i) MiB in phase "work", then runs three
 * iterations of 1 MiB each.  The last child execs this program again
 * ("forktree --execed": a new address space) with MW_CKPT_DIR set to its
 * own directory, maps and touches 6 MiB and exits.  The parent reaps them
 * all, unmaps half of its region in phase "after" and exits.
 *
 * --phase-at forktree:ft_work=work, --phase-at forktree:ft_after=after and
 * --iter forktree:ft_iter mark them; "final" in each directory is /proc's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt.h"

MW_PROBE_FN void ft_work(void) { __asm__ volatile(""); }
MW_PROBE_FN void ft_after(void) { __asm__ volatile(""); }
MW_PROBE_FN void ft_iter(void) { __asm__ volatile(""); }

static void dirty(char *p, size_t len)
{
	for (size_t off = 0; off < len; off += PAGE_SZ)
		((volatile char *)p)[off]++;
}

static void __attribute__((noreturn)) child(int i, char *region)
{
	char name[16];

	snprintf(name, sizeof(name), "child%d", i);
	ckpt_subdir(name);
	dirty(region, MIB(i + 1));
	ckpt("forked");
	ft_work();
	touch(map_anon(MIB(2 + i)), MIB(2 + i));
	ckpt("worked");
	for (int k = 0; k < 3; k++) {
		ft_iter();
		touch(map_anon(MIB(1)), MIB(1));
	}
	ft_iter();
	ckpt_exit(0);
}

static void __attribute__((noreturn)) execed(void)
{
	ft_work();
	touch(map_anon(MIB(6)), MIB(6));
	ckpt_exit(0);
}

int main(int argc, char **argv)
{
	int n = 3, status, bad = 0;
	pid_t pids[64];
	char *region;

	if (argc > 1 && strcmp(argv[1], "--execed") == 0) {
		ckpt_init(argc, argv);
		execed();
	}
	n = (int)arg_ulong(argc, argv, 1, 3);
	if (n < 1 || n > 64)
		die("children: 1 to 64");
	ckpt_init(argc, argv);
	region = map_anon(MIB(8));
	touch(region, MIB(8));
	ckpt("loaded");
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i])
			continue;
		if (i < n - 1)
			child(i, region);
		/* The last: a new program, its checkpoints in its own place. */
		ckpt_subdir("execed");
		{
			const char *dir = getenv("MW_CKPT_DIR");
			char buf[4096];

			if (dir) {
				snprintf(buf, sizeof(buf), "%s/execed", dir);
				setenv("MW_CKPT_DIR", buf, 1);
			}
		}
		{
			char self[4096];
			ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

			self[len > 0 ? len : 0] = 0;
			execl(self, "forktree", "--execed", (char *)NULL);
		}
		_exit(127);
	}
	for (int i = 0; i < n; i++)
		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			bad++;
	if (bad)
		die("a child failed");
	ft_after();
	munmap(region, MIB(4));
	ckpt_exit(0);
}
