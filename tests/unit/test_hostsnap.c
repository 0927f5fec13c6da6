// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* test_hostsnap.c — host-wide snapshots: identity, growth, steps, cgroups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/procfs.h"
#include "host/cgroups.h"
#include "host/hostsnap.h"
#include "unit.h"

#define MIB	(1ll << 20)

static struct mw_host host(uint64_t first, uint64_t cg, uint64_t vm_pages, int64_t anon,
			   int64_t file)
{
	struct mw_host h = { .first_ns = first, .cgroup_id = cg, .total_vm = vm_pages,
			     .vm_peak = vm_pages };

	h.rss[MW_ANON] = anon;
	h.rss[MW_FILE] = file;
	h.rss[MW_SWAP] = 7 * MIB;	/* never part of RSS */
	h.rss_peak = anon + file;
	snprintf(h.comm, sizeof(h.comm), "p%llu", (unsigned long long)first);
	return h;
}

static const char *names(void *ctx, uint64_t id, uint32_t pid)
{
	return id == 10 ? "/a" : id == 20 ? "/b" : NULL;
}

TEST(growth_by_identity)
{
	uint32_t pids0[] = { 30, 10 }, pids1[] = { 10, 30, 40 };
	struct mw_host h0[] = { host(1, 10, 256, MIB, 0), host(2, 10, 512, 2 * MIB, MIB) };
	struct mw_host h1[] = {
		host(2, 10, 768, 5 * MIB, MIB),		/* pid 10 grew */
		host(9, 20, 256, MIB, 0),		/* pid 30 reused: a new process */
		host(5, 20, 100, 3 * MIB, 0),		/* pid 40 joined */
	};
	struct mw_hsnap a = { 0 }, b = { 0 };
	const struct mw_hproc *p;

	hsnap_build(&a, 100, pids0, h0, 2, NULL);
	CHECK_EQ_U64(a.procs[0].pid, 10);	/* sorted by pid */
	CHECK_EQ_INT(a.procs[0].d_rss, 0);	/* no previous: no growth */
	hsnap_build(&b, 200, pids1, h1, 3, &a);
	p = hsnap_find(&b, 10, 2);
	if (CHECK(p != NULL)) {
		CHECK_EQ_INT(p->d_vm, 256 * 4096);
		CHECK_EQ_INT(p->d_rss, 3 * MIB);
		CHECK_EQ_INT(hproc_rss(p), 6 * MIB);	/* swap is not RSS */
	}
	p = hsnap_find(&b, 30, 9);
	if (CHECK(p != NULL))
		CHECK_EQ_INT(p->d_rss, MIB);	/* from nothing, not from pid 30's old self */
	CHECK(hsnap_find(&b, 30, 1) == NULL);
	CHECK(hsnap_find(&b, 99, 1) == NULL);
	hsnap_free(&a);
	hsnap_free(&b);
}

TEST(step_with_exits)
{
	uint32_t pids0[] = { 10, 30 }, pids1[] = { 10 };
	struct mw_host h0[] = { host(1, 10, 256, MIB, 0), host(3, 20, 256, 2 * MIB, 0) };
	struct mw_host h1[] = { host(1, 10, 256, 1 * MIB, 0) };
	struct mw_hexit ex = { .exit_ns = 150, .wait_status = 0 };
	struct mw_host gone = host(3, 20, 1024, 9 * MIB, 0);
	struct mw_hsnap a = { 0 }, b = { 0 };
	struct mw_hproc *rows;
	size_t n;

	hsnap_build(&a, 100, pids0, h0, 2, NULL);
	hsnap_build(&b, 200, pids1, h1, 1, NULL);
	hproc_from_host(&ex.p, 30, &gone);
	n = hsnap_growth(&a, &b, &ex, 1, &rows);
	if (CHECK_EQ_U64(n, 2)) {
		/* The exited one grew 7 MiB before it went: first. */
		CHECK_EQ_U64(rows[0].pid, 30);
		CHECK_EQ_INT(rows[0].d_rss, 7 * MIB);
		CHECK_EQ_INT(rows[0].d_vm, 768 * 4096);
		CHECK_EQ_U64(rows[1].pid, 10);
		CHECK_EQ_INT(rows[1].d_rss, 0);
	}
	free(rows);
	hsnap_free(&a);
	hsnap_free(&b);
}

TEST(cgroup_sums)
{
	uint32_t pids[] = { 1, 2, 3, 4 };
	struct mw_host h[] = { host(1, 10, 1, MIB, 0), host(2, 20, 1, 4 * MIB, 0),
			       host(3, 10, 1, 2 * MIB, MIB), host(4, 99, 1, 0, 0) };
	struct mw_hsnap s = { 0 };
	struct mw_hcgroup *g;
	size_t n;

	hsnap_build(&s, 1, pids, h, 4, NULL);
	n = hsnap_cgroups(s.procs, s.n, names, NULL, &g);
	if (CHECK_EQ_U64(n, 3)) {
		CHECK_STR(g[0].path, "/a");	/* 4 MiB: largest first */
		CHECK_EQ_U64(g[0].nprocs, 2);
		CHECK_EQ_INT(g[0].rss[MW_ANON] + g[0].rss[MW_FILE], 4 * MIB);
		CHECK_STR(g[1].path, "/b");
		CHECK_STR(g[2].path, "?");	/* a name nobody knows */
	}
	free(g);
	hsnap_free(&s);
}

/* Device VM of a process already there, from smaps as the kernel prints
 * it: the kernel side's rule (bpf/vma.bpf.h: vma_is_device). */
TEST(device_vm_from_smaps)
{
	static const char text[] =
		"7f0000000000-7f0000400000 rw-s 00000000 00:0e 1063 anon_inode:bpf-map\n"
		"VmFlags: rd wr sh mr mw me ms mm\n"	/* mixed: 4 MiB */
		"7f0000400000-7f0000600000 rw-s 100000000 00:05 370 /dev/dri/renderD128\n"
		"VmFlags: rd wr sh mr mw me ms pf dc de dd\n"	/* pfn: 2 MiB */
		"7f0000600000-7f0000700000 rw-s 00000000 00:09 2 /dmabuf:\n"
		"VmFlags: rd wr sh mr mw me ms\n"	/* dma-buf, plain pages: 1 MiB */
		"7f0000700000-7f0000701000 rw-s 00000000 00:05 12 /dev/nvidiactl\n"
		"VmFlags: rd wr sh mr mw me ms\n"	/* a device node: 4 KiB */
		"7f0000701000-7f0000781000 rw-s 00000000 00:01 77 /drm mm object (deleted)\n"
		"VmFlags: rd wr sh mr mw me ms\n"	/* a GEM buffer's shmem: 512 KiB */
		"7f0000800000-7f0000900000 rw-p 00000000 00:05 5 /dev/zero\n"
		"VmFlags: rd wr mr mw me ac\n"		/* private /dev/zero: anonymous */
		"7f0000900000-7f0000a00000 rw-s 00000000 00:01 9 /dev/zero (deleted)\n"
		"VmFlags: rd wr sh mr mw me ms\n"	/* shared: shmem */
		"7f0000a00000-7f0000b00000 rw-s 00000000 00:19 7 /dev/shm/seg\n"
		"VmFlags: rd wr sh mr mw me ms\n"
		"7f0000b00000-7f0000b04000 r--p 00000000 00:00 0 [vvar]\n"
		"VmFlags: rd mr pf io de dd\n";	/* the kernel's */
	/* None of these can be a device's: smaps is not read. */
	static const char plain[] =
		"7f0000800000-7f0000900000 rw-p 00000000 00:05 5 /dev/zero\n"
		"7f0000900000-7f0000a00000 rw-s 00000000 00:01 9 /dev/zero (deleted)\n"
		"7f0000a00000-7f0000b00000 rw-s 00000000 00:19 7 /dev/shm/seg\n"
		"7f0000b00000-7f0000b04000 r--p 00000000 00:00 0 [vvar]\n"
		"7f0000c00000-7f0000d00000 r-xp 00000000 fe:01 3 /usr/lib/libc.so.6\n";
	struct pm_maps m = { 0 };

	if (!CHECK_EQ_INT(procfs_parse_smaps(text, strlen(text), &m), 0))
		return;
	CHECK(hsnap_maps_may_device(&m));
	CHECK_EQ_U64(hsnap_device_vm(&m), 7 * MIB + 4096 + 512 * 1024);
	procfs_maps_free(&m);
	if (CHECK_EQ_INT(procfs_parse_maps(plain, strlen(plain), &m), 0))
		CHECK(!hsnap_maps_may_device(&m));
	procfs_maps_free(&m);
}

TEST(sorts)
{
	struct mw_hproc r[3] = {
		{ .pid = 1, .d_rss = 5, .rss = { [MW_ANON] = 1 } },
		{ .pid = 2, .d_rss = 9, .rss = { [MW_ANON] = 3 } },
		{ .pid = 3, .d_rss = 5, .d_vm = 4, .rss = { [MW_ANON] = 2 } },
	};

	hproc_sort_growth(r, 3);
	CHECK(r[0].pid == 2 && r[1].pid == 3 && r[2].pid == 1);
}

/* A cgroup id is named by searching the hierarchy when no live member can
 * say (a process that exited between two host samples). */
TEST(live_cgroup_path_of_id)
{
	const char *mnt = cgroup2_mount();
	char dir[4200], sub[4300], want[64];
	struct mw_cgnames names = { 0 };
	struct stat st;
	uint64_t id;
	pid_t pid;
	char *p;

	if (!mnt || geteuid() != 0) {
		printf("  (no cgroup2 mount or not root: skipped)\n");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/mw-unit-%d", mnt, (int)getpid());
	snprintf(sub, sizeof(sub), "%s/inner", dir);
	if (!CHECK(mkdir(dir, 0755) == 0 && mkdir(sub, 0755) == 0 && stat(sub, &st) == 0))
		goto out;
	id = st.st_ino;
	snprintf(want, sizeof(want), "/mw-unit-%d/inner", (int)getpid());
	p = cgroup_path_of_id(id);
	CHECK_STR(p ? p : "(null)", want);
	free(p);
	CHECK(stat(mnt, &st) == 0);
	p = cgroup_path_of_id(st.st_ino);
	CHECK_STR(p ? p : "(null)", "/");
	free(p);
	CHECK(cgroup_path_of_id(~0ull - 1) == NULL);
	/* A member that is gone: the search names it, and remembers. */
	pid = fork();
	if (pid == 0)
		_exit(0);
	CHECK(pid > 0 && waitpid(pid, NULL, 0) == pid);
	CHECK_STR(cgnames_get(&names, id, (uint32_t)pid) ?: "(null)", want);
	CHECK(cgnames_get(&names, ~0ull - 1, (uint32_t)pid) == NULL);
	CHECK_EQ_U64(names.n, 2);
	cgnames_free(&names);
out:
	rmdir(sub);
	rmdir(dir);
}

int main(void)
{
	RUN(growth_by_identity);
	RUN(step_with_exits);
	RUN(cgroup_sums);
	RUN(device_vm_from_smaps);
	RUN(sorts);
	RUN(live_cgroup_path_of_id);
	return unit_done();
}
