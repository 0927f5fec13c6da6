// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* seed.c — starting layout and counters of a process, from /proc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/procfs.h"
#include "capture/seed.h"
#include "util.h"

static int read_proc(pid_t pid, const char *what, char **buf, size_t *len, uint64_t until)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	return procfs_read_file_until(path, buf, len, until);
}

int seed_build(pid_t pid, enum mw_seed_mode mode, uint64_t until, struct mw_seed **out,
	       uint32_t *len)
{
	char *maps = NULL, *mounts = NULL, *comm = NULL, *roll = NULL;
	size_t maps_len = 0, mounts_len = 0, comm_len = 0, roll_len = 0;
	struct pm_stat st = { 0 };
	uint64_t t0 = until ? mw_now_ns() : 0, now;
	struct mw_seed *s;
	int err;

	/*
	 * The measure reads smaps_rollup first.  Its one read() walks every
	 * page table, as smaps's reads do, but prints one entry, not one a
	 * VMA: its time is the walk's, a floor under smaps's (stress-ng
	 * --brk stopped, 37,000 VMAs: 11 ms against 176 ms).  So smaps is
	 * given up before it starts if it cannot end by until.  (Read after
	 * smaps, the rollup was predicted to take as long as smaps: the end
	 * measure of stress-ng --brk's 27,000 VMAs, read in 0.25 s of its
	 * 0.5, was given up in 3 runs of 24.)  Its "[rollup]" entry follows
	 * the VMAs in the seed: its Pss_Anon/File/Shmem are in no VMA's lines.
	 */
	if (mode == MW_SEED_MEASURE) {
		err = read_proc(pid, "smaps_rollup", &roll, &roll_len, until);
		now = until ? mw_now_ns() : 0;
		if (err == -ETIME || (until && now + (now - t0) > until)) {
			free(roll);
			return -ETIME;
		}
	}
	err = read_proc(pid, mode == MW_SEED_ATTACH || mode == MW_SEED_MEASURE ? "smaps" : "maps",
			&maps, &maps_len, until);
	if (err) {
		free(roll);
		return err;
	}
	if (mode == MW_SEED_MEASURE) {
		if (roll_len) {
			maps = mw_xrealloc(maps, maps_len + roll_len + 1, 1);
			memcpy(maps + maps_len, roll, roll_len);
			maps_len += roll_len;
			maps[maps_len] = 0;
		}
		free(roll);
	} else if (read_proc(pid, "mountinfo", &mounts, &mounts_len, 0)) {
		mounts_len = 0;
	}
	procfs_read_stat(pid, &st);
	if (maps_len > UINT32_MAX / 2 || mounts_len > UINT32_MAX / 2) {
		err = -E2BIG;
		goto out;
	}
	s = mw_xcalloc(1, sizeof(*s) + maps_len + mounts_len);
	s->pid = pid;
	s->mode = mode;
	s->ts = mw_now_ns();
	s->start_brk = st.start_brk;
	s->brk = st.brk;
	s->start_stack = st.start_stack;
	s->maps_len = maps_len;
	s->mountinfo_len = mounts_len;
	if (read_proc(pid, "comm", &comm, &comm_len, 0) == 0) {
		comm_len = strcspn(comm, "\n");
		memcpy(s->comm, comm, MW_MIN(comm_len, sizeof(s->comm) - 1));
	}
	memcpy(s + 1, maps, maps_len);
	if (mounts_len)
		memcpy((char *)(s + 1) + maps_len, mounts, mounts_len);
	*out = s;
	*len = sizeof(*s) + maps_len + mounts_len;
out:
	free(maps);
	free(mounts);
	free(comm);
	return err;
}

int seed_proc_init(pid_t pid, bool after_exec, struct mw_proc *init)
{
	struct pm_status st;
	int err = procfs_read_status(pid, &st);

	if (err)
		return err;
	memset(init, 0, sizeof(*init));
	init->rss[MW_FILE] = st.rss_file;
	init->rss[MW_ANON] = st.rss_anon;
	init->rss[MW_SHMEM] = st.rss_shmem;
	init->rss[MW_SWAP] = st.vm_swap;
	for (int m = 0; m < MW_NR_MEMBERS; m++)
		init->rss_word[m] = (__u64)(init->rss[m] >> mw_page_shift) << MW_W_VAL_SHIFT;
	init->rss_peak = st.rss_file + st.rss_anon + st.rss_shmem;
	init->total_vm = st.vm_size >> mw_page_shift;
	init->pin.locked = init->pin.locked_peak = init->locked_peak = st.vm_lck >> mw_page_shift;
	init->pin.pinned = init->pin.pinned_peak = init->pinned_peak = st.vm_pin >> mw_page_shift;
	if (after_exec) {
		init->vm_peak = MW_MAX(st.vm_peak, st.vm_size) >> mw_page_shift;
		init->hiwater_vm_base = 0;
	} else {
		init->vm_peak = init->total_vm;
		init->hiwater_vm_base = st.vm_peak >> mw_page_shift;
	}
	return 0;
}
