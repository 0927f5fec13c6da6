// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_account.c — unit tests for user/analysis/account.c: synthetic capture streams
 * (seeds, BPF records, kernel state) fed to account_feed(), with the mapping
 * table and the totals checked to the byte.
 *
 * Every record is copied to a heap buffer of exactly the length it is fed
 * with, so under -fsanitize=address any read past mw_srec.len aborts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/account.h"
#include "analysis/classify.h"
#include "analysis/model.h"
#include "records.h"
#include "unit.h"

#define P	4096ull
#define KB	1024ull
#define RW	(MW_VM_READ | MW_VM_WRITE)
#define RX	(MW_VM_READ | MW_VM_EXEC)
#define SHR	(MW_VM_SHARED | MW_VM_MAYSHARE)

#define ANON1M	0x7f0000000000ull	/* a 1 MiB anonymous mapping */
#define MEMFD	0x7f0000200000ull
#define TAG	0x7f0000500000ull	/* [anon:tag], one page */
#define STACK	0x7ffd00000000ull
#define VVAR	0x7ffd000fc000ull

/* ---- the process every test starts from ---------------------------------- */

/*
 * smaps of a small process, as a 6.x kernel prints it (fields memwatch does
 * not use included).  VM: 2+2+33+256+16+4+2+1+33+4+2 = 355 pages without
 * the gate page.  Resident: anon 25 pages, file 4, shmem 7.
 */
static const char smaps_seed[] =
	"555555554000-555555556000 r--p 00000000 fe:01 1234                       /usr/bin/app\n"
	"Size:                  8 kB\n"
	"KernelPageSize:        4 kB\n"
	"MMUPageSize:           4 kB\n"
	"Rss:                   8 kB\n"
	"Pss:                   8 kB\n"
	"Anonymous:             0 kB\n"
	"Swap:                  0 kB\n"
	"VmFlags: rd mr mw me dw sd \n"
	"555555556000-555555558000 rw-p 00002000 fe:01 1234                       /usr/bin/app\n"
	"Size:                  8 kB\n"
	"Rss:                   8 kB\n"
	"Pss:                   8 kB\n"
	"Anonymous:             4 kB\n"
	"Swap:                  0 kB\n"
	"VmFlags: rd wr mr mw me dw ac sd \n"
	"555555560000-555555581000 rw-p 00000000 00:00 0                          [heap]\n"
	"Size:                132 kB\n"
	"Rss:                  12 kB\n"
	"Pss:                  12 kB\n"
	"Anonymous:            12 kB\n"
	"AnonHugePages:         0 kB\n"
	"Swap:                  0 kB\n"
	"VmFlags: rd wr mr mw me ac sd \n"
	"7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
	"Size:               1024 kB\n"
	"Rss:                  64 kB\n"
	"Pss:                  64 kB\n"
	"Anonymous:            64 kB\n"
	"Swap:                  8 kB\n"
	"SwapPss:               8 kB\n"
	"VmFlags: rd wr mr mw me ac sd \n"
	"7f0000200000-7f0000210000 rw-s 00000000 00:01 2058                       /memfd:buf (deleted)\n"
	"Size:                 64 kB\n"
	"Rss:                  16 kB\n"
	"Pss:                  16 kB\n"
	"Anonymous:             0 kB\n"
	"Swap:                  0 kB\n"
	"VmFlags: rd wr sh mr mw me ms sd \n"
	"7f0000300000-7f0000304000 rw-s 00000000 00:19 77                         /dev/shm/seg\n"
	"Size:                 16 kB\n"
	"Rss:                   8 kB\n"
	"Anonymous:             0 kB\n"
	"VmFlags: rd wr sh mr mw me ms sd \n"
	"7f0000400000-7f0000402000 rw-s 00000000 00:2d 88                         /run/user/1000/pulse-shm\n"
	"Size:                  8 kB\n"
	"Rss:                   4 kB\n"
	"Anonymous:             0 kB\n"
	"VmFlags: rd wr sh mr mw me ms sd \n"
	"7f0000500000-7f0000501000 rw-p 00000000 00:00 0                          [anon:tag]\n"
	"Size:                  4 kB\n"
	"Rss:                   4 kB\n"
	"Anonymous:             4 kB\n"
	"VmFlags: rd wr mr mw me ac sd \n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
	"Size:                132 kB\n"
	"Rss:                  16 kB\n"
	"Anonymous:            16 kB\n"
	"VmFlags: rd wr mr mw me gd ac \n"
	"7ffd000fc000-7ffd00100000 r--p 00000000 00:00 0                          [vvar]\n"
	"Size:                 16 kB\n"
	"Rss:                   0 kB\n"
	"VmFlags: rd mr pf io de dd sd \n"
	"7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0                          [vdso]\n"
	"Size:                  8 kB\n"
	"Rss:                   4 kB\n"
	"Anonymous:             0 kB\n"
	"VmFlags: rd ex mr mw me de sd \n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"
	"Size:                  4 kB\n"
	"Rss:                   0 kB\n"
	"VmFlags: ex \n";

#define SEED_VM_PAGES	355
#define SEED_NLIVE	12

static const char mountinfo_seed[] =
	"22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
	"24 27 0:5 / /dev rw,nosuid,relatime shared:8 - devtmpfs udev rw,size=8126876k,mode=755\n"
	"26 24 0:25 / /dev/shm rw,nosuid,nodev shared:10 - tmpfs tmpfs rw,inode64\n"
	"27 1 254:1 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw,errors=remount-ro\n"
	"41 28 0:45 / /run/user/1000 rw,nosuid,nodev,relatime shared:500 - tmpfs tmpfs rw,mode=700,uid=1000,gid=1000\n";

/* ---- record builders ------------------------------------------------------- */

/* The seed's layout as /proc/PID/maps shows it (header lines only). */
static const char *seed_maps(void)
{
	static char buf[sizeof(smaps_seed)];
	const char *p = smaps_seed;
	size_t n = 0;

	if (buf[0])
		return buf;
	while (*p) {
		const char *nl = strchr(p, '\n'), *sp = strchr(p, ' ');
		const char *dash = strchr(p, '-');
		size_t l = (size_t)(nl - p) + 1;

		if (dash && sp && dash < sp) {
			memcpy(buf + n, p, l);
			n += l;
		}
		p += l;
	}
	buf[n] = 0;
	return buf;
}

/* A freshly attached account: the seed above, 12 mappings, 355 pages. */
static void attach(struct mw_account *a)
{
	attach_seed(a, smaps_seed, mountinfo_seed);
}

static void feed_task(struct mw_account *a, uint32_t type, uint32_t seq, uint64_t ts,
		      const char *comm, int exit_code)
{
	struct mw_task_rec t;

	memset(&t, 0, sizeof(t));
	t.hdr = rec_hdr(type, 0, seq, ts);
	if (comm)
		memcpy(t.comm, comm, strlen(comm) < sizeof(t.comm) ? strlen(comm) : sizeof(t.comm));
	t.exit_code = exit_code;
	feed_exact(a, MW_S_BPF, &t, sizeof(t));
}

static struct mw_mapping *last_dead(struct mw_account *a)
{
	return a->model.ndead ? a->model.dead[a->model.ndead - 1] : NULL;
}

static int64_t live_resident(struct mw_account *a)
{
	return model_rss(&a->model, MW_FILE) + model_rss(&a->model, MW_ANON) +
	       model_rss(&a->model, MW_SHMEM);
}

/* ---- seeds ------------------------------------------------------------------ */

TEST(seed_attach)
{
	struct mw_account a;
	struct mw_mapping *mp;
	char buf[128];

	attach(&a);
	CHECK_EQ_INT(a.pid, 4242);
	CHECK_STR(a.comm, "app");
	CHECK_EQ_U64(a.records, 1);
	CHECK(!a.need_resync);
	CHECK_EQ_U64(a.resyncs, 0);
	CHECK_EQ_INT(a.wait_status, -1);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE);
	CHECK_EQ_U64(a.model.ndead, 0);
	CHECK_EQ_U64(model_vm_bytes(&a.model), SEED_VM_PAGES * P);
	CHECK_EQ_U64(a.model.start_brk, SB);
	CHECK_EQ_U64(a.model.brk, BRK);
	CHECK_EQ_U64(a.model.start_stack, SSTACK);
	CHECK_EQ_U64(a.model.now_ns, 1000);
	if (CHECK_EQ_U64(a.model.nshmem_devs, 2)) {
		CHECK_EQ_U64(a.model.shmem_devs[0].minor, 25);
		CHECK_EQ_U64(a.model.shmem_devs[1].minor, 45);
	}

	mp = at(&a, 0x555555554000);
	CHECK_EQ_INT(mp->kind, MW_K_FILE);
	CHECK_STR(mp->path, "/usr/bin/app");
	CHECK_EQ_U64(mp->dev_major, 0xfe);
	CHECK_EQ_U64(mp->dev_minor, 1);
	CHECK_EQ_U64(mp->ino, 1234);
	CHECK_EQ_INT(mp->rss[MW_FILE], 8 * KB);
	CHECK_EQ_INT(mp->rss[MW_ANON], 0);
	CHECK_EQ_INT(mp->rss_peak, 8 * KB);
	CHECK_EQ_U64(mp->born_ns, 1000);
	CHECK_EQ_U64(mp->born_seq, 1);
	mp = at(&a, 0x555555556000);
	CHECK_EQ_U64(mp->pgoff, 0x2000);
	CHECK_EQ_INT(mp->rss[MW_FILE], 4 * KB);	/* Rss - Anonymous */
	CHECK_EQ_INT(mp->rss[MW_ANON], 4 * KB);	/* COW pages */
	mp = at(&a, SB);
	CHECK_EQ_INT(mp->kind, MW_K_HEAP);
	CHECK(mp->path == NULL);	/* [heap] is derived, not stored */
	CHECK_STR(mapping_display_path(&a.model, mp, buf, sizeof(buf)), "[heap]");
	CHECK_EQ_INT(mp->rss[MW_ANON], 12 * KB);
	mp = at(&a, ANON1M);
	CHECK_EQ_INT(mp->kind, MW_K_ANON);
	CHECK_EQ_U64(mp->end, ANON1M + 0x100000);
	CHECK_EQ_INT(mp->rss[MW_ANON], 64 * KB);
	CHECK_EQ_INT(mp->rss[MW_SWAP], 8 * KB);
	CHECK_EQ_INT(mp->rss[MW_FILE], 0);
	CHECK_EQ_INT(mp->rss_peak, 64 * KB);	/* swap is not resident */
	CHECK_EQ_U64(mp->born_seq, 4);
	mp = at(&a, MEMFD);
	CHECK_EQ_INT(mp->kind, MW_K_SHMEM);
	CHECK(mp->deleted);
	CHECK_EQ_U64(mp->flags, RW | SHR);
	CHECK_STR(mapping_display_path(&a.model, mp, buf, sizeof(buf)), "/memfd:buf (deleted)");
	CHECK_EQ_INT(mp->rss[MW_SHMEM], 16 * KB);
	CHECK_EQ_INT(mp->rss[MW_FILE], 0);
	mp = at(&a, 0x7f0000300000);
	CHECK_EQ_INT(mp->kind, MW_K_SHMEM);
	CHECK_EQ_INT(mp->rss[MW_SHMEM], 8 * KB);
	mp = at(&a, 0x7f0000400000);
	CHECK_EQ_INT(mp->kind, MW_K_SHMEM);	/* tmpfs device from mountinfo */
	CHECK_EQ_U64(mp->dev_minor, 45);
	CHECK_EQ_INT(mp->rss[MW_SHMEM], 4 * KB);
	mp = at(&a, TAG);
	CHECK_EQ_INT(mp->kind, MW_K_ANON);
	CHECK_STR(mp->path, "[anon:tag]");
	CHECK_EQ_INT(mp->rss[MW_ANON], 4 * KB);
	mp = at(&a, STACK);
	CHECK_EQ_INT(mp->kind, MW_K_STACK);
	CHECK(mp->flags & MW_VM_GROWSDOWN);
	CHECK_STR(mapping_display_path(&a.model, mp, buf, sizeof(buf)), "[stack]");
	CHECK_EQ_INT(mp->rss[MW_ANON], 16 * KB);
	CHECK_EQ_INT(at(&a, VVAR)->kind, MW_K_VVAR);
	mp = at(&a, 0x7ffd00100000);
	CHECK_EQ_INT(mp->kind, MW_K_VDSO);
	CHECK_EQ_INT(mp->rss[MW_FILE], 4 * KB);
	mp = at(&a, 0xffffffffff600000);
	CHECK_EQ_INT(mp->kind, MW_K_VSYSCALL);
	CHECK_EQ_U64(mp->flags, MW_VM_EXEC);

	CHECK_EQ_INT(model_rss(&a.model, MW_ANON), 25 * P);
	CHECK_EQ_INT(model_rss(&a.model, MW_FILE), 4 * P);
	CHECK_EQ_INT(model_rss(&a.model, MW_SHMEM), 7 * P);
	CHECK_EQ_INT(model_rss(&a.model, MW_SWAP), 2 * P);

	/* A second attach seed replaces the first: everything buried. */
	feed_seed(&a, MW_SEED_ATTACH, 2000, SB, BRK, SSTACK, smaps_seed, NULL, "");
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE);
	CHECK_EQ_U64(a.model.ndead, SEED_NLIVE);
	CHECK_EQ_U64(a.model.dead[0]->died_ns, 2000);
	CHECK_EQ_U64(model_first(&a.model)->born_seq, 13);
	CHECK_STR(a.comm, "app");		/* empty comm: kept */
	CHECK_EQ_U64(a.model.nshmem_devs, 2);	/* no mountinfo: kept */
	account_free(&a);
}

TEST(seed_malformed_ignored)
{
	struct mw_account a;
	struct mw_seed s;

	attach(&a);
	/* maps_len beyond the record: ignored. */
	memset(&s, 0, sizeof(s));
	s.mode = MW_SEED_RESYNC;
	s.maps_len = 100;
	feed_exact(&a, MW_S_SEED, &s, sizeof(s));
	CHECK_EQ_U64(a.resyncs, 0);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE);
	/* Shorter than the header. */
	feed_exact(&a, MW_S_SEED, &s, sizeof(s) - 1);
	/* Unparseable text: the table stays as it was. */
	feed_seed(&a, MW_SEED_RESYNC, 3000, SB, BRK, SSTACK, "this is not maps\n", NULL, NULL);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE);
	CHECK_EQ_U64(a.model.ndead, 0);
	CHECK_EQ_U64(a.resyncs, 0);
	CHECK_EQ_U64(a.records, 4);
	account_free(&a);
}

/* The end measure: smaps counters to the mappings of the same range, the
 * rollup's Pss split to the process; layout and RSS untouched. */
TEST(seed_measure)
{
	struct mw_account a;
	struct mw_mapping *mp;
	const struct mw_smaps_meas *sm;
	int64_t anon = 0;
	static const char text[] =
		"555555560000-555555581000 rw-p 00000000 00:00 0                          [heap]\n"
		"Rss:                  12 kB\n"
		"Pss:                   6 kB\n"
		"Pss_Dirty:             6 kB\n"
		"AnonHugePages:         0 kB\n"
		"Swap:                  4 kB\n"
		"SwapPss:               2 kB\n"
		"Locked:                6 kB\n"
		"7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
		"Rss:                1024 kB\n"
		"Pss:                1024 kB\n"
		"AnonHugePages:      1024 kB\n"
		/* not the table's range (7f0000200000-7f0000210000): no match */
		"7f0000200000-7f0000208000 rw-s 00000000 00:01 2058                       /memfd:buf (deleted)\n"
		"Pss:                  16 kB\n"
		"555555554000-7ffd00102000 ---p 00000000 00:00 0                          [rollup]\n"
		"Pss:                1046 kB\n"
		"Pss_Anon:           1030 kB\n"
		"Pss_File:              0 kB\n"
		"Pss_Shmem:            16 kB\n";

	attach(&a);
	anon = model_rss(&a.model, MW_ANON);
	feed_seed(&a, MW_SEED_MEASURE, 5000, SB, BRK, SSTACK, text, NULL, "");
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE);
	CHECK_EQ_U64(a.model.ndead, 0);
	CHECK_EQ_INT(model_rss(&a.model, MW_ANON), anon);
	CHECK_EQ_U64(a.smaps.ts, 5000);
	CHECK_EQ_U64(a.smaps.nvmas, 3);
	CHECK_EQ_U64(a.smaps.matched, 2);
	CHECK_EQ_U64(a.smaps.sum.pss, 1046 * KB);
	CHECK_EQ_U64(a.smaps.sum.locked, 6 * KB);
	CHECK_EQ_U64(a.smaps.sum.anon_huge, 1024 * KB);
	CHECK_EQ_U64(a.smaps.sum.swap_pss, 2 * KB);
	CHECK(a.smaps.rollup);
	CHECK_EQ_U64(a.smaps.pss_anon, 1030 * KB);
	CHECK_EQ_U64(a.smaps.pss_shmem, 16 * KB);
	sm = mapping_measured(at(&a, 0x555555560000));
	if (CHECK(sm)) {
		CHECK_EQ_U64(sm->pss, 6 * KB);
		CHECK_EQ_U64(sm->pss_dirty, 6 * KB);
		CHECK_EQ_U64(sm->swap, 4 * KB);
		CHECK_EQ_U64(sm->swap_pss, 2 * KB);
		CHECK_EQ_U64(sm->locked, 6 * KB);
	}
	sm = mapping_measured(at(&a, ANON1M));
	CHECK(sm && sm->anon_huge == 1024 * KB && sm->locked == 0);
	CHECK(!mapping_measured(at(&a, MEMFD)));
	CHECK(!mapping_measured(at(&a, STACK)));	/* not in the text */
	/* A change of range after the measure: no measure for either piece. */
	mp = at(&a, ANON1M);
	mp->end -= 4096;
	CHECK(!mapping_measured(mp));
	mp->end += 4096;
	/* Unparseable text: the last measure stays. */
	feed_seed(&a, MW_SEED_MEASURE, 6000, SB, BRK, SSTACK, "not smaps\n", NULL, "");
	CHECK_EQ_U64(a.smaps.ts, 5000);
	account_free(&a);
}

/* ---- mmap --------------------------------------------------------------------- */

#define NEWMAP	0x7f0000600000ull

TEST(mmap_new_mapping)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *mp;

	attach(&a);
	r = op_new(MW_OP_MMAP, 1, 5000, NEWMAP, NEWMAP + 0xf000, SEED_VM_PAGES + 15);
	r->args[1] = 60000;
	r->args[2] = 3;
	r->args[3] = 0x22;
	r->ret = NEWMAP;
	op_vma(r, NEWMAP, NEWMAP + 0xf000, RW);
	feed_op(&a, r);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE + 1);
	mp = at(&a, NEWMAP);
	if (!CHECK(mp != NULL))
		return;
	CHECK_EQ_U64(mp->start, NEWMAP);
	CHECK_EQ_U64(mp->end, NEWMAP + 0xf000);
	CHECK_EQ_INT(mp->kind, MW_K_ANON);
	CHECK_EQ_U64(mp->requested, 60000);
	CHECK_EQ_U64(mp->born_ns, 5000);
	CHECK_EQ_U64(mp->born_seq, SEED_NLIVE + 1);
	CHECK_EQ_INT(mapping_rss_total(mp), 0);
	CHECK_EQ_U64(model_vm_bytes(&a.model), (SEED_VM_PAGES + 15) * P);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK(!a.need_resync);
	CHECK(a.seq_known);
	CHECK_EQ_U64(a.last_seq, 1);
	CHECK_EQ_U64(a.seq_gaps, 0);

	/* A file mapping: path, device (kernel dev_t), inode, offset. */
	r = op_new(MW_OP_MMAP, 2, 6000, 0x7f0000700000, 0x7f0000703000, SEED_VM_PAGES + 18);
	r->args[1] = 0x3000;
	op_file_vma(r, 0x7f0000700000, 0x7f0000703000, RX, 2, 254, 1, 5555, 0,
		    "/usr/lib/libz.so.1");
	feed_op(&a, r);
	mp = at(&a, 0x7f0000700000);
	CHECK_STR(mp->path, "/usr/lib/libz.so.1");
	CHECK(mp->has_file && !mp->deleted);
	CHECK_EQ_U64(mp->dev_major, 254);
	CHECK_EQ_U64(mp->dev_minor, 1);
	CHECK_EQ_U64(mp->ino, 5555);
	CHECK_EQ_U64(mp->pgoff, 2 * P);
	CHECK_EQ_INT(mp->kind, MW_K_FILE);
	CHECK_EQ_U64(mp->requested, 0x3000);

	/* On the tmpfs mountinfo named: shmem.  Unlinked: deleted. */
	r = op_new(MW_OP_MMAP, 3, 7000, 0x7f0000710000, 0x7f0000711000, SEED_VM_PAGES + 19);
	op_file_vma(r, 0x7f0000710000, 0x7f0000711000, RW | SHR, 0, 0, 45, 99,
		    MW_VMA_DELETED, "/run/user/1000/gone");
	feed_op(&a, r);
	mp = at(&a, 0x7f0000710000);
	CHECK_EQ_INT(mp->kind, MW_K_SHMEM);
	CHECK(mp->deleted);
	CHECK(!a.need_resync);

	/* A truncated path: /proc has the real name. */
	r = op_new(MW_OP_MMAP, 4, 8000, 0x7f0000720000, 0x7f0000721000, SEED_VM_PAGES + 20);
	op_file_vma(r, 0x7f0000720000, 0x7f0000721000, MW_VM_READ, 0, 254, 1, 7,
		    MW_VMA_PATH_TRUNC, "/very/long");
	feed_op(&a, r);
	CHECK(a.need_resync);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK_EQ_U64(a.last_seq, 4);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE + 4);
	account_free(&a);
}

TEST(mmap_populate)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *mp;

	attach(&a);
	r = op_new(MW_OP_MMAP, 1, 5000, NEWMAP, NEWMAP + 0x8000, SEED_VM_PAGES + 8);
	r->args[1] = 0x8000;
	r->args[3] = 0x8022;	/* MAP_POPULATE */
	r->rss_delta[MW_ANON] = 8 * P;
	op_vma(r, NEWMAP, NEWMAP + 0x8000, RW);
	feed_op(&a, r);
	mp = at(&a, NEWMAP);
	CHECK_EQ_INT(mp->rss[MW_ANON], 8 * P);
	CHECK_EQ_INT(mp->rss_peak, 8 * P);
	CHECK_EQ_U64(a.model.ndead, 0);
	account_free(&a);
}

/*
 * MAP_FIXED over resident memory: the kernel zapped it inside the call, so
 * rss_delta is negative.  The loss belongs to what was replaced, not to the
 * new (empty) mapping.
 */
TEST(mmap_fixed_over_resident)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *mp, *dead, *rest;

	attach(&a);
	/* anon 1 MiB holds 16 pages anon, 2 swap. Replace its first 64
	 * pages by a PROT_READ mapping (no merge); 10 pages were resident. */
	r = op_new(MW_OP_MMAP, 1, 5000, ANON1M, ANON1M + 0x40000, SEED_VM_PAGES);
	r->args[0] = ANON1M;
	r->args[1] = 0x40000;
	r->args[3] = 0x32;	/* MAP_FIXED */
	r->rss_delta[MW_ANON] = -10 * (int64_t)P;
	r->rss_delta[MW_SWAP] = -(int64_t)P;
	op_vma(r, ANON1M, ANON1M + 0x40000, MW_VM_READ);
	feed_op(&a, r);
	mp = at(&a, ANON1M);
	rest = at(&a, ANON1M + 0x40000);
	dead = last_dead(&a);
	if (!CHECK(mp && rest && dead))
		return;
	CHECK_EQ_U64(mp->end, ANON1M + 0x40000);
	CHECK_EQ_U64(mp->flags, MW_VM_READ);
	CHECK(mp != dead && mp->born_seq == SEED_NLIVE + 1);
	CHECK_EQ_INT(mp->rss[MW_ANON], 0);
	CHECK_EQ_INT(mp->rss_peak, 0);
	/* The replaced quarter: by size it held 4 pages; the kernel says 10. */
	CHECK_EQ_U64(dead->start, ANON1M);
	CHECK_EQ_U64(dead->end, ANON1M + 0x40000);
	CHECK(dead->unmapped);
	CHECK_EQ_INT(dead->rss[MW_ANON], 10 * P);
	CHECK_EQ_INT(dead->rss[MW_SWAP], P);	/* swap is not settled */
	/* The guessed rest gives back the difference. */
	CHECK_EQ_U64(rest->end, ANON1M + 0x100000);
	CHECK_EQ_INT(rest->rss[MW_ANON], 6 * P);
	CHECK_EQ_INT(rest->rss[MW_SWAP], P);
	CHECK_EQ_INT(model_rss(&a.model, MW_ANON), (25 - 10) * P);
	CHECK_EQ_U64(a.vm_mismatches, 0);

	/* Over a whole mapping, exactly what it held. */
	r = op_new(MW_OP_MMAP, 2, 6000, TAG, TAG + P, SEED_VM_PAGES);
	r->args[3] = 0x32;	/* MAP_FIXED */
	r->rss_delta[MW_ANON] = -(int64_t)P;
	op_vma(r, TAG, TAG + P, RW);
	feed_op(&a, r);
	mp = at(&a, TAG);
	CHECK_EQ_INT(mp->rss[MW_ANON], 0);
	CHECK_EQ_INT(last_dead(&a)->rss[MW_ANON], P);
	CHECK_STR(last_dead(&a)->path, "[anon:tag]");
	CHECK(mp->path == NULL);		/* the name went with the old VMA */
	CHECK(mp->born_seq != last_dead(&a)->born_seq);

	/* MAP_FIXED|MAP_POPULATE over resident memory: rss_delta is what was
	 * populated minus what was zapped. */

	r = op_new(MW_OP_MMAP, 3, 7000, STACK - 0x10000, STACK - 0xc000, SEED_VM_PAGES + 4);
	r->args[3] = 0x32;	/* MAP_FIXED */
	r->rss_delta[MW_ANON] = 4 * P;
	op_vma(r, STACK - 0x10000, STACK - 0xc000, RW);
	feed_op(&a, r);
	mp = at(&a, STACK - 0x10000);
	r = op_new(MW_OP_MMAP, 4, 8000, STACK - 0x10000, STACK - 0xc000, SEED_VM_PAGES + 4);
	r->args[3] = 0x32;	/* MAP_FIXED */
	r->rss_delta[MW_ANON] = 2 * P;	/* net +2 */
	op_vma(r, STACK - 0x10000, STACK - 0xc000, RW);
	feed_op(&a, r);
	mp = at(&a, STACK - 0x10000);
	/* The old piece keeps what the table gave it (4 pages) and the new
	 * mapping gets the net gain plus that, as far as its 4 pages hold:
	 * the 2 more the counters say (a record out of step) are no
	 * mapping's. */
	CHECK_EQ_INT(last_dead(&a)->rss[MW_ANON], 4 * P);
	CHECK_EQ_INT(mp->rss[MW_ANON], 4 * P);
	CHECK_EQ_INT(model_rss(&a.model, MW_ANON), (25 - 10 - 1 + 4) * P);
	account_free(&a);
}

TEST(mmap_merges_with_neighbour)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_deltas_rec *d;
	struct mw_mapping *mp, *orig;
	const uint64_t X = 0x7f0000900000;

	attach(&a);
	r = op_new(MW_OP_MMAP, 1, 5000, X, X + P, SEED_VM_PAGES + 1);
	r->args[1] = P;
	op_vma(r, X, X + P, RW);
	feed_op(&a, r);
	r = op_new(MW_OP_MMAP, 2, 5100, X + 2 * P, X + 3 * P, SEED_VM_PAGES + 2);
	r->args[1] = P;
	op_vma(r, X + 2 * P, X + 3 * P, RW);
	feed_op(&a, r);
	orig = at(&a, X);
	d = deltas_new(2, 5200);
	deltas_add(d, X, 0, P, 0, 0, P, 1);
	deltas_add(d, X + 2 * P, 0, P, 0, 0, 2 * P, 2);
	feed_deltas(&a, d);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE + 2);

	/* The page between them: the kernel merges all three. */
	r = op_new(MW_OP_MMAP, 3, 5300, X + P, X + 2 * P, SEED_VM_PAGES + 3);
	r->args[1] = 100;
	op_vma(r, X, X + 3 * P, RW);
	feed_op(&a, r);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE + 1);
	CHECK_EQ_U64(a.model.ndead, 0);
	mp = at(&a, X + P);
	CHECK(mp == orig);
	CHECK(at(&a, X + 2 * P) == orig);
	CHECK_EQ_U64(mp->start, X);
	CHECK_EQ_U64(mp->end, X + 3 * P);
	CHECK_EQ_U64(mp->born_seq, SEED_NLIVE + 1);
	CHECK_EQ_U64(mp->born_ns, 5000);
	CHECK_EQ_INT(mp->rss[MW_ANON], 2 * P);
	CHECK_EQ_U64(mp->faults, 3);
	CHECK_EQ_U64(mp->requested, 2 * P + 100);
	CHECK_EQ_INT(mp->rss_peak, 2 * P);
	CHECK_EQ_U64(a.model.next_seq, SEED_NLIVE + 3);	/* no new identity */
	CHECK_EQ_U64(a.vm_mismatches, 0);
	account_free(&a);
}

/* ---- deltas -------------------------------------------------------------------- */

static void mmap_newmap(struct mw_account *a, uint32_t seq)
{
	struct mw_op_rec *r = op_new(MW_OP_MMAP, seq, 5000, NEWMAP, NEWMAP + 0xf000,
				     SEED_VM_PAGES + 15);

	r->args[1] = 60000;
	op_vma(r, NEWMAP, NEWMAP + 0xf000, RW);
	feed_op(a, r);
}

/* Each harvest's number is kept: a re-measure waits until the kernel's
 * last one is applied (user/trace.c reconcile_splits). */
TEST(deltas_harvest_number)
{
	struct mw_account a;
	struct mw_deltas_rec *d;

	attach(&a);
	d = deltas_new(0, 5000);
	d->hseq = 7;
	deltas_add(d, ANON1M, 0, P, 0, 0, P, 1);
	feed_deltas(&a, d);
	CHECK_EQ_U64(a.last_hseq, 7);
	d = deltas_new(0, 5100);	/* empty: still a harvest */
	d->hseq = 8;
	feed_deltas(&a, d);
	CHECK_EQ_U64(a.last_hseq, 8);
	CHECK_EQ_INT(at(&a, ANON1M)->rss[MW_ANON], 17 * P);
	account_free(&a);
}

TEST(deltas_land_on_mappings)
{
	struct mw_account a;
	struct mw_deltas_rec *d;
	struct mw_mapping *mp;

	attach(&a);
	mmap_newmap(&a, 1);
	d = deltas_new(1, 5500);
	deltas_add(d, NEWMAP, 0, 8 * P, 0, 0, 10 * P, 12);
	deltas_add(d, ANON1M, 0, 4 * P, -2 * (int64_t)P, 0, 6 * P, 4);
	deltas_add(d, 0x7f0000f00000, 0, 2 * P, 0, P, 3 * P, 3);	/* no mapping */
	deltas_add(d, SB + 0x10000, 0, P, 0, 0, P, 1);	/* inside the heap */
	deltas_add(d, NEWMAP, 0, 100 * P, 0, 0, 100 * P, 100);	/* cut off below */
	/* Only four slots are inside the record. */
	feed_exact(&a, MW_S_BPF, d, offsetof(struct mw_deltas_rec, slots) +
		   4 * sizeof(struct mw_slot));
	free(d);

	CHECK_EQ_U64(a.last_hseq, 0);
	mp = at(&a, NEWMAP);
	CHECK_EQ_INT(mp->rss[MW_ANON], 8 * P);
	CHECK_EQ_U64(mp->faults, 12);
	CHECK_EQ_INT(mp->rss_peak, 10 * P);		/* before (0) + slot peak */
	mp = at(&a, ANON1M);
	CHECK_EQ_INT(mp->rss[MW_ANON], 20 * P);
	CHECK_EQ_INT(mp->rss[MW_SWAP], 0);
	CHECK_EQ_U64(mp->faults, 4);
	CHECK_EQ_INT(mp->rss_peak, 22 * P);		/* 16 + 6 */
	mp = at(&a, SB);
	CHECK_EQ_INT(mp->rss[MW_ANON], 4 * P);
	CHECK_EQ_U64(mp->faults, 1);
	CHECK_EQ_INT(mp->rss_peak, 4 * P);		/* max(3+1, now 4) */
	CHECK_EQ_INT(a.lost_attr[MW_ANON], 2 * P);
	CHECK_EQ_INT(a.lost_attr[MW_SHMEM], P);
	CHECK_EQ_INT(a.lost_attr[MW_FILE], 0);
	CHECK_EQ_U64(a.lost_attr_faults, 3);
	/* Deltas are no structural record: the sequence is not touched. */
	CHECK_EQ_U64(a.last_seq, 1);
	CHECK_EQ_U64(a.seq_gaps, 0);
	CHECK_EQ_U64(a.model.now_ns, 5500);

	/* A lower slot peak never lowers a mapping's peak. */
	d = deltas_new(1, 5600);
	deltas_add(d, NEWMAP, 0, -4 * (int64_t)P, 0, 0, 0, 0);
	feed_deltas(&a, d);
	mp = at(&a, NEWMAP);
	CHECK_EQ_INT(mp->rss[MW_ANON], 4 * P);
	CHECK_EQ_INT(mp->rss_peak, 10 * P);

	/* A record too short for its own header part changes nothing. */
	d = deltas_new(1, 5700);
	deltas_add(d, NEWMAP, 0, P, 0, 0, P, 1);
	feed_exact(&a, MW_S_BPF, d, offsetof(struct mw_deltas_rec, slots) - 1);
	free(d);
	CHECK_EQ_INT(at(&a, NEWMAP)->rss[MW_ANON], 4 * P);
	account_free(&a);
}

/* ---- munmap ------------------------------------------------------------------- */

TEST(munmap_part)
{
	struct mw_account a;
	struct mw_deltas_rec *d;
	struct mw_op_rec *r;
	struct mw_mapping *kept, *dead;

	attach(&a);
	mmap_newmap(&a, 1);
	d = deltas_new(1, 5500);
	deltas_add(d, NEWMAP, 0, 8 * P, 0, 0, 10 * P, 12);
	feed_deltas(&a, d);

	/* Unmap the last 5 of its 15 pages; the kernel freed 2 resident. */
	r = munmap_new(2, 6000, NEWMAP + 0xa000, NEWMAP + 0xf000, 2 * P, SEED_VM_PAGES + 10);
	feed_op(&a, r);

	kept = at(&a, NEWMAP);
	dead = last_dead(&a);
	if (!CHECK(kept && dead))
		return;
	CHECK_EQ_U64(a.model.ndead, 1);
	CHECK_EQ_U64(kept->end, NEWMAP + 0xa000);
	CHECK(at(&a, NEWMAP + 0xa000) == NULL);
	CHECK_EQ_U64(dead->start, NEWMAP + 0xa000);
	CHECK_EQ_U64(dead->end, NEWMAP + 0xf000);
	CHECK(dead->unmapped);
	CHECK_EQ_U64(dead->died_ns, 6000);
	/* The removed piece carries exactly what the kernel freed... */
	CHECK_EQ_INT(dead->rss[MW_ANON], 2 * P);
	/* ...and the part that stays has the rest of the 8 pages: exact, no
	 * estimate and nothing to re-measure (no pagemap read per munmap). */
	CHECK_EQ_INT(kept->rss[MW_ANON], 6 * P);
	CHECK(!kept->rss_estimated);
	CHECK(!kept->recheck && !kept->settling);
	CHECK_EQ_U64(kept->faults, 8);
	CHECK_EQ_U64(dead->faults, 4);
	CHECK_EQ_U64(kept->requested, 40000);
	CHECK_EQ_U64(dead->requested, 20000);
	CHECK(kept->rss_peak >= mapping_rss_total(kept));
	/* peak by size: 2/3 kept, in whole pages (6); the rest, 4, here */
	CHECK_EQ_INT(dead->rss_peak, 4 * P);
	CHECK_EQ_U64(model_vm_bytes(&a.model), (SEED_VM_PAGES + 10) * P);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK(!a.need_resync);
	account_free(&a);
}

/* The part that stays may end up with more than its share: its peak must
 * follow. */
TEST(munmap_kept_peak_follows)
{
	struct mw_account a;
	struct mw_deltas_rec *d;
	struct mw_op_rec *r;
	struct mw_mapping *kept;

	attach(&a);
	r = op_new(MW_OP_MMAP, 1, 5000, NEWMAP, NEWMAP + 0x8000, SEED_VM_PAGES + 8);
	op_vma(r, NEWMAP, NEWMAP + 0x8000, RW);
	feed_op(&a, r);
	/* 7 of the 8 pages resident; the munmap of the upper 4 frees 3. */
	d = deltas_new(1, 5100);
	deltas_add(d, NEWMAP, 0, 7 * P, 0, 0, 7 * P, 8);
	feed_deltas(&a, d);
	r = op_new(MW_OP_MUNMAP, 2, 6000, NEWMAP + 0x4000, NEWMAP + 0x8000, SEED_VM_PAGES + 4);
	r->rss_delta[MW_ANON] = -3 * (int64_t)P;
	feed_op(&a, r);
	kept = at(&a, NEWMAP);
	CHECK_EQ_INT(kept->rss[MW_ANON], 4 * P);
	CHECK_EQ_INT(last_dead(&a)->rss[MW_ANON], 3 * P);
	/* Its peak follows it down: never above what its 4 pages hold. */
	CHECK_EQ_INT(kept->rss_peak, 4 * P);
	account_free(&a);
}

/* Several pieces: together exactly what the kernel freed. */
TEST(munmap_several_pieces_exact)
{
	struct mw_account a;
	struct mw_op_rec *r;
	const uint64_t X = 0x7f0000900000;
	int64_t sum = 0;

	attach(&a);
	r = op_new(MW_OP_MMAP, 1, 5000, X, X + P, SEED_VM_PAGES + 1);
	op_vma(r, X, X + P, RW);
	feed_op(&a, r);
	r = op_new(MW_OP_MMAP, 2, 5000, X + 2 * P, X + 4 * P, SEED_VM_PAGES + 3);
	op_vma(r, X + 2 * P, X + 4 * P, MW_VM_READ);
	feed_op(&a, r);
	/* The table thinks both empty; the kernel freed one page, and two
	 * of file.  By size, in whole pages, the larger piece first, none
	 * past its size. */
	r = op_new(MW_OP_MUNMAP, 3, 6000, X, X + 4 * P, SEED_VM_PAGES);
	r->rss_delta[MW_ANON] = -(int64_t)P;
	r->rss_delta[MW_FILE] = -2 * (int64_t)P;
	feed_op(&a, r);
	CHECK_EQ_U64(a.model.ndead, 2);
	for (size_t i = 0; i < a.model.ndead; i++)
		sum += a.model.dead[i]->rss[MW_ANON];
	CHECK_EQ_INT(sum, P);
	sum = 0;
	for (size_t i = 0; i < a.model.ndead; i++)
		sum += a.model.dead[i]->rss[MW_FILE];
	CHECK_EQ_INT(sum, 2 * P);
	CHECK_EQ_INT(a.model.dead[1]->rss[MW_FILE], 2 * P);
	CHECK_EQ_INT(a.model.dead[0]->rss[MW_ANON], P);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	account_free(&a);
}

/* ---- mremap ------------------------------------------------------------------- */

/* mremap(old, old_len, new_len, flags) that returned @to, as record 1 at
 * ts 5000: the mapping is now [to, to + new_len), the process @total_vm
 * pages.  The caller adds the VMAs. */
static struct mw_op_rec *mremap_new(uint64_t old, uint64_t old_len, uint64_t new_len,
				    uint64_t flags, uint64_t to, uint64_t total_vm)
{
	struct mw_op_rec *r = op_new(MW_OP_MREMAP, 1, 5000, to, to + new_len, total_vm);

	r->args[0] = old;
	r->args[1] = old_len;
	r->args[2] = new_len;
	r->args[3] = flags;
	r->ret = (int64_t)to;
	r->start2 = old;
	r->end2 = old + old_len;
	return r;
}

TEST(mremap_move)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *before, *mp;
	const uint64_t NEW = 0x7f0010000000;

	attach(&a);
	before = at(&a, ANON1M);
	before->faults = 7;
	before->requested = 0x100000;
	/* MREMAP_MAYMOVE | MREMAP_FIXED */
	r = mremap_new(ANON1M, 0x100000, 0x100000, 3, NEW, SEED_VM_PAGES);
	r->args[4] = NEW;
	op_vma(r, NEW, NEW + 0x100000, RW);
	feed_op(&a, r);
	CHECK(at(&a, ANON1M) == NULL);
	CHECK(at(&a, ANON1M + 0xfffff) == NULL);
	mp = at(&a, NEW);
	CHECK(mp == before);
	CHECK_EQ_U64(mp->start, NEW);
	CHECK_EQ_U64(mp->end, NEW + 0x100000);
	CHECK_EQ_INT(mp->rss[MW_ANON], 64 * KB);
	CHECK_EQ_INT(mp->rss[MW_SWAP], 8 * KB);
	CHECK_EQ_U64(mp->faults, 7);
	CHECK_EQ_U64(mp->requested, 0x100000);
	CHECK_EQ_U64(mp->born_seq, 4);
	CHECK(!mp->rss_estimated);
	CHECK_EQ_U64(a.model.ndead, 0);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK(!a.need_resync);
	account_free(&a);
}

/* Move onto mapped memory (MREMAP_FIXED): what was there is buried. */
TEST(mremap_move_over_mapping)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *mp, *victim;

	attach(&a);
	victim = at(&a, TAG);
	r = mremap_new(0x7f0000300000, P, P, 3, TAG, SEED_VM_PAGES - 1);
	op_file_vma(r, TAG, TAG + P, RW | SHR, 0, 0, 25, 77, 0, "/dev/shm/seg");
	feed_op(&a, r);
	CHECK_EQ_U64(a.model.ndead, 1);
	CHECK(last_dead(&a) == victim);
	CHECK_EQ_INT(victim->rss[MW_ANON], 4 * KB);
	mp = at(&a, TAG);
	CHECK_STR(mp->path, "/dev/shm/seg");
	CHECK_EQ_INT(mp->kind, MW_K_SHMEM);
	/* 8 kB over 4 pages: the 3 that stay measured by size, 6 kB -> 4 kB
	 * (whole pages), the moved page takes the rest. */
	CHECK_EQ_INT(mp->rss[MW_SHMEM], 4 * KB);
	CHECK_EQ_INT(at(&a, 0x7f0000300000 + P)->rss[MW_SHMEM], 4 * KB);
	CHECK_EQ_U64(at(&a, 0x7f0000300000 + P)->start, 0x7f0000300000 + P);
	CHECK(at(&a, 0x7f0000300000) == NULL);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	account_free(&a);
}

TEST(mremap_shrink)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *before, *mp, *dead;

	attach(&a);
	before = at(&a, ANON1M);
	r = mremap_new(ANON1M, 0x100000, 0x40000, 0, ANON1M, SEED_VM_PAGES - 192);
	r->rss_delta[MW_ANON] = -10 * (int64_t)P;
	op_vma(r, ANON1M, ANON1M + 0x40000, RW);
	feed_op(&a, r);
	mp = at(&a, ANON1M);
	dead = last_dead(&a);
	if (!CHECK(mp && dead))
		return;
	CHECK(mp == before);
	CHECK_EQ_U64(mp->end, ANON1M + 0x40000);
	CHECK(at(&a, ANON1M + 0x40000) == NULL);
	CHECK_EQ_U64(dead->start, ANON1M + 0x40000);
	CHECK_EQ_U64(dead->end, ANON1M + 0x100000);
	/* 16 pages: a quarter (4) by size stays, but the kernel freed 10. */
	CHECK_EQ_INT(dead->rss[MW_ANON], 10 * P);
	CHECK_EQ_INT(mp->rss[MW_ANON], 6 * P);
	CHECK_EQ_INT(mp->rss[MW_SWAP], 0);	/* 1/4 of 2 pages, rounded down */
	CHECK_EQ_INT(dead->rss[MW_SWAP], 2 * P);
	CHECK_EQ_INT(mp->rss_peak, 6 * P);
	CHECK_EQ_U64(a.model.ndead, 1);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	account_free(&a);
}

TEST(mremap_grow_in_place)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *before, *mp;

	attach(&a);
	before = at(&a, TAG);
	r = mremap_new(TAG, P, 3 * P, 0, TAG, SEED_VM_PAGES + 2);
	op_vma(r, TAG, TAG + 3 * P, RW);
	feed_op(&a, r);
	mp = at(&a, TAG + 2 * P);
	CHECK(mp == before);
	CHECK_EQ_U64(mp->start, TAG);
	CHECK_EQ_U64(mp->end, TAG + 3 * P);
	CHECK_STR(mp->path, "[anon:tag]");	/* kernel name survives */
	CHECK_EQ_INT(mp->rss[MW_ANON], 4 * KB);
	CHECK_EQ_U64(a.model.ndead, 0);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	account_free(&a);
}

/* MREMAP_DONTUNMAP moves the page tables: the RSS goes with the new
 * mapping, the old range stays mapped and empty. */
TEST(mremap_dontunmap)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *before, *mp, *old;
	const uint64_t NEW = 0x7f0020000000;

	attach(&a);
	before = at(&a, ANON1M);
	/* MREMAP_MAYMOVE | MREMAP_DONTUNMAP */
	r = mremap_new(ANON1M, 0x100000, 0x100000, 1 | 4, NEW, SEED_VM_PAGES + 256);
	op_vma(r, NEW, NEW + 0x100000, RW);
	op_vma(r, ANON1M, ANON1M + 0x100000, RW);
	feed_op(&a, r);
	mp = at(&a, NEW);
	old = at(&a, ANON1M);
	if (!CHECK(mp && old))
		return;
	CHECK(mp == before);
	CHECK_EQ_INT(mp->rss[MW_ANON], 64 * KB);
	CHECK_EQ_INT(mp->rss[MW_SWAP], 8 * KB);
	CHECK_EQ_INT(old->rss[MW_ANON], 0);
	CHECK_EQ_INT(old->rss[MW_SWAP], 0);
	CHECK_EQ_U64(old->end, ANON1M + 0x100000);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE + 1);
	CHECK_EQ_U64(a.model.ndead, 0);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	account_free(&a);
}

/* ---- brk ------------------------------------------------------------------------ */

static void brk_op(struct mw_account *a, uint32_t seq, uint64_t old_brk, uint64_t new_brk,
		   int64_t anon_delta, uint64_t total_vm, uint64_t heap_start)
{
	struct mw_op_rec *r;
	uint64_t lo = (old_brk + P - 1) & ~(P - 1), hi = (new_brk + P - 1) & ~(P - 1);

	if (new_brk > old_brk) {
		r = op_new(MW_OP_BRK, seq, 5000 + seq, lo, hi, total_vm);
		if (hi > lo)
			op_vma(r, heap_start, hi, RW);
	} else {
		r = op_new(MW_OP_BRK, seq, 5000 + seq, hi, lo, total_vm);
	}
	r->args[0] = new_brk;
	r->args[1] = old_brk;
	r->ret = new_brk;
	r->brk = new_brk;
	r->rss_delta[MW_ANON] = anon_delta;
	feed_op(a, r);
}

TEST(brk_grow_and_shrink)
{
	struct mw_account a;
	struct mw_mapping *heap, *dead;
	char buf[64];
	uint64_t vm = SEED_VM_PAGES;

	attach(&a);
	heap = at(&a, SB);
	brk_op(&a, 1, BRK, 0x555555590000, 0, vm += 15, SB);
	CHECK(at(&a, SB) == heap);
	CHECK_EQ_U64(heap->end, 0x555555590000);
	CHECK_EQ_INT(heap->kind, MW_K_HEAP);
	CHECK_EQ_U64(heap->requested, 0xf000);
	CHECK_EQ_U64(a.model.brk, 0x555555590000);
	CHECK_EQ_INT(heap->rss[MW_ANON], 12 * KB);
	CHECK_EQ_U64(a.vm_mismatches, 0);

	/* Shrink to SB + 64 kB; one resident page freed. */
	brk_op(&a, 2, 0x555555590000, 0x555555570000, -(int64_t)P, vm -= 32, SB);
	dead = last_dead(&a);
	CHECK_EQ_U64(heap->end, 0x555555570000);
	CHECK_EQ_INT(heap->kind, MW_K_HEAP);
	CHECK_EQ_U64(dead->start, 0x555555570000);
	CHECK_EQ_U64(dead->end, 0x555555590000);
	CHECK_EQ_INT(dead->rss[MW_ANON], P);
	CHECK_EQ_INT(heap->rss[MW_ANON], 2 * P);
	CHECK_STR(mapping_display_path(&a.model, dead, buf, sizeof(buf)), "");
	CHECK_STR(mapping_display_path(&a.model, heap, buf, sizeof(buf)), "[heap]");
	CHECK_EQ_U64(a.vm_mismatches, 0);

	/* Back to start_brk: the heap is gone. */
	brk_op(&a, 3, 0x555555570000, SB, -2 * (int64_t)P, vm -= 16, SB);
	CHECK(at(&a, SB) == NULL);
	CHECK(last_dead(&a) == heap);
	CHECK_EQ_INT(heap->rss[MW_ANON], 2 * P);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE - 1);

	/* Grow again (unaligned brk): a new heap. */
	brk_op(&a, 4, SB, SB + 0x1800, 0, vm += 2, SB);
	heap = at(&a, SB);
	if (!CHECK(heap != NULL))
		return;
	CHECK_EQ_U64(heap->end, SB + 0x2000);
	CHECK_EQ_INT(heap->kind, MW_K_HEAP);
	CHECK_EQ_U64(heap->requested, 0x2000);
	CHECK_EQ_U64(heap->born_seq, SEED_NLIVE + 1);
	/* Within the same page: nothing changes shape. */
	brk_op(&a, 5, SB + 0x1800, SB + 0x1900, 0, vm, SB);
	CHECK_EQ_U64(heap->end, SB + 0x2000);
	CHECK_EQ_U64(heap->requested, 0x2000);
	CHECK_EQ_U64(a.model.brk, SB + 0x1900);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK(!a.need_resync);
	account_free(&a);
}

/* The bss right below start_brk becomes "[heap]" when brk grows into it
 * and the kernel merges them, as /proc shows it. */
TEST(brk_heap_follows)
{
	struct mw_account a;
	struct mw_mapping *bss;
	char buf[64];
	const char maps[] =
		"555555554000-555555556000 r-xp 00000000 fe:01 1234 /usr/bin/app\n"
		"555555558000-555555559000 rw-p 00000000 00:00 0 \n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n";
	const uint64_t sb = 0x555555559000;
	struct mw_op_rec *r;

	account_init(&a, 4242, 0);
	feed_seed(&a, MW_SEED_EXEC, 1000, sb, sb, SSTACK, maps, NULL, "app");
	bss = at(&a, 0x555555558000);
	CHECK_EQ_INT(bss->kind, MW_K_ANON);
	CHECK_STR(mapping_display_path(&a.model, bss, buf, sizeof(buf)), "");
	r = op_new(MW_OP_BRK, 1, 2000, sb, sb + 0x2000, 2 + 1 + 33 + 2);
	r->start_brk = sb;
	r->brk = sb + 0x2000;
	r->args[1] = sb;
	op_vma(r, 0x555555558000, sb + 0x2000, RW);
	feed_op(&a, r);
	CHECK(at(&a, sb) == bss);
	CHECK_EQ_INT(bss->kind, MW_K_HEAP);
	CHECK_STR(mapping_display_path(&a.model, bss, buf, sizeof(buf)), "[heap]");
	CHECK_EQ_U64(bss->requested, 0x2000);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	account_free(&a);
}

/* ---- stack growth ------------------------------------------------------------- */

TEST(vmgrow_stack)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *stack;

	attach(&a);
	stack = at(&a, STACK);
	r = op_new(MW_OP_VMGROW, 1, 5000, STACK - 2 * P, STACK - P, SEED_VM_PAGES + 2);
	r->args[0] = STACK - 2 * P + 0x123;
	r->start_brk = r->brk = 0;	/* as BPF sends it */
	feed_exact(&a, MW_S_BPF, r, offsetof(struct mw_op_rec, vmas));
	free(r);
	CHECK(at(&a, STACK - 2 * P) == stack);
	CHECK_EQ_U64(stack->start, STACK - 2 * P);
	CHECK_EQ_U64(stack->end, STACK + 0x21000);
	CHECK_EQ_INT(stack->kind, MW_K_STACK);
	CHECK_EQ_U64(a.model.start_brk, SB);	/* not taken from the record */
	CHECK_EQ_INT(at(&a, SB)->kind, MW_K_HEAP);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK(!a.need_resync);
	CHECK_EQ_U64(a.last_seq, 1);

	/* Below something that does not grow down: resync. */
	r = op_new(MW_OP_VMGROW, 2, 6000, VVAR - P, VVAR, SEED_VM_PAGES + 2);
	feed_exact(&a, MW_S_BPF, r, offsetof(struct mw_op_rec, vmas));
	free(r);
	CHECK_EQ_U64(at(&a, VVAR)->start, VVAR);
	CHECK(at(&a, VVAR - P) == NULL);
	CHECK(a.need_resync);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	account_free(&a);
}

/* ---- sequence, resync, exec ----------------------------------------------------- */

static void noop_op(struct mw_account *a, uint32_t seq, uint64_t total_vm)
{
	struct mw_op_rec *r = op_new(MW_OP_MADVISE, seq, 5000 + seq, TAG, TAG + P, total_vm);

	op_vma(r, TAG, TAG + P, RW);
	feed_op(a, r);
}

TEST(seq_gap)
{
	struct mw_account a;
	struct mw_deltas_rec *d;

	attach(&a);
	noop_op(&a, 10, SEED_VM_PAGES);	/* the first one sets the start */
	CHECK_EQ_U64(a.seq_gaps, 0);
	CHECK(!a.need_resync);
	noop_op(&a, 11, SEED_VM_PAGES);
	d = deltas_new(40, 5100);	/* deltas do not count */
	feed_deltas(&a, d);
	noop_op(&a, 12, SEED_VM_PAGES);
	CHECK_EQ_U64(a.seq_gaps, 0);
	CHECK(!a.need_resync);
	/* 13 and 14 skipped: waited for, another CPU may send them late. */
	noop_op(&a, 15, SEED_VM_PAGES);
	CHECK_EQ_U64(a.seq_gaps, 0);
	CHECK(!a.need_resync);
	CHECK_EQ_U64(a.nseq_wait, 2);
	CHECK_EQ_U64(a.last_seq, 15);
	noop_op(&a, 14, SEED_VM_PAGES);		/* late, not lost */
	CHECK_EQ_U64(a.seq_late, 1);
	CHECK_EQ_U64(a.nseq_wait, 1);
	CHECK_EQ_U64(a.last_seq, 15);		/* the highest seen */
	/* 13 is lost once MW_SEQ_LATE (64) more have come ... */
	for (uint32_t s = 16; s < 16 + 62; s++)
		noop_op(&a, s, SEED_VM_PAGES);
	CHECK_EQ_U64(a.seq_gaps, 0);
	noop_op(&a, 16 + 62, SEED_VM_PAGES);
	CHECK_EQ_U64(a.seq_gaps, 1);
	CHECK(a.need_resync);
	CHECK_EQ_U64(a.nseq_wait, 0);
	/* A resync seed clears the flag, not the count. */
	feed_seed(&a, MW_SEED_RESYNC, 9000, SB, BRK, SSTACK, seed_maps(), NULL, NULL);
	CHECK(!a.need_resync);
	CHECK_EQ_U64(a.resyncs, 1);
	CHECK_EQ_U64(a.seq_gaps, 1);
	/* ... or MW_LATE_READ_NS after the record that skipped it.  Task
	 * records are structural too. */
	feed_task(&a, MW_REC_EXIT, 16 + 65, 9500, "app", 0);
	CHECK_EQ_U64(a.nseq_wait, 2);
	account_late_overdue(&a, 9500 + MW_LATE_READ_NS);
	CHECK_EQ_U64(a.seq_gaps, 1);
	account_late_overdue(&a, 9501 + MW_LATE_READ_NS);
	CHECK_EQ_U64(a.seq_gaps, 3);
	CHECK(a.need_resync);
	/* Far more skipped than can come late: counted at once. */
	noop_op(&a, 16 + 65 + 1000, SEED_VM_PAGES);
	CHECK_EQ_U64(a.seq_gaps, 3 + 999 - 8);
	CHECK_EQ_U64(a.nseq_wait, 8);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	account_free(&a);
}

TEST(vm_mismatch)
{
	struct mw_account a;

	attach(&a);
	noop_op(&a, 1, SEED_VM_PAGES);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK(!a.need_resync);
	/* In bytes by mistake: a mismatch. */
	noop_op(&a, 2, SEED_VM_PAGES * P);
	CHECK_EQ_U64(a.vm_mismatches, 1);
	CHECK(a.need_resync);
	/* (noop_op()'s call n is at 5000 + n ns) */
	feed_seed(&a, MW_SEED_RESYNC, 5003, SB, BRK, SSTACK, seed_maps(), NULL, NULL);
	CHECK(!a.need_resync);
	noop_op(&a, 3, SEED_VM_PAGES + 1);
	CHECK_EQ_U64(a.vm_mismatches, 2);
	CHECK(a.need_resync);
	/* A call from before the layout was read says nothing of it. */
	feed_seed(&a, MW_SEED_RESYNC, 5005, SB, BRK, SSTACK, seed_maps(), NULL, NULL);
	noop_op(&a, 4, SEED_VM_PAGES + 1);
	CHECK_EQ_U64(a.vm_mismatches, 2);
	CHECK(!a.need_resync);
	noop_op(&a, 5, SEED_VM_PAGES);
	CHECK_EQ_U64(a.vm_mismatches, 2);
	CHECK(!a.need_resync);
	/* Walk cut short: resync whatever the size says. */
	struct mw_op_rec *r = op_new(MW_OP_MPROTECT, 6, 9200, TAG, TAG + P, SEED_VM_PAGES);
	r->opflags = MW_OPF_WALK_SHORT;
	feed_op(&a, r);
	CHECK(a.need_resync);
	CHECK_EQ_U64(a.vm_mismatches, 2);
	account_free(&a);
}

/*
 * A call that found its mm locked at its exit (MW_OPF_FIND_BUSY) brings no
 * VMAs, and the kernel reads them at the process's next event
 * (MW_OP_REWALK): the layout is not re-read from /proc for it, and the VM
 * check waits for that read.  One that is not in within MW_LATE_READ_NS
 * is re-read after all.
 */
TEST(late_read)
{
	const uint64_t NEW = 0x7f0000700000ull, T0 = 10000;
	struct mw_account a;
	struct mw_op_rec *r;

	attach(&a);
	r = op_new(MW_OP_MMAP, 1, T0, NEW, NEW + 4 * P, SEED_VM_PAGES + 4);
	r->args[1] = 4 * P;
	r->opflags = MW_OPF_FIND_BUSY;
	feed_op(&a, r);
	CHECK(at(&a, NEW) == NULL);
	CHECK(!a.need_resync);
	CHECK_EQ_U64(a.busy_ts, T0);
	/* Behind by the 4 pages until the read: no mismatch. */
	noop_op(&a, 2, SEED_VM_PAGES + 4);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK(!a.need_resync);
	/* The read found it locked again: still owed. */
	r = op_new(MW_OP_REWALK, 3, T0 + 300, NEW, NEW + 4 * P, SEED_VM_PAGES + 4);
	r->opflags = MW_OPF_FIND_BUSY;
	feed_op(&a, r);
	CHECK_EQ_U64(a.busy_ts, T0);
	CHECK_EQ_U64(a.late_reads, 0);
	r = op_new(MW_OP_REWALK, 4, T0 + 400, NEW, NEW + 4 * P, SEED_VM_PAGES + 4);
	op_vma(r, NEW, NEW + 4 * P, RW);
	feed_op(&a, r);
	CHECK(at(&a, NEW) != NULL && at(&a, NEW)->end == NEW + 4 * P);
	CHECK_EQ_U64(a.late_reads, 1);
	CHECK_EQ_U64(a.busy_ts, 0);
	CHECK(!a.need_resync);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK_EQ_U64(model_vm_bytes(&a.model), (SEED_VM_PAGES + 4) * P);
	/* The check is back: a wrong total is a mismatch again. */
	noop_op(&a, 5, SEED_VM_PAGES + 5);
	CHECK_EQ_U64(a.vm_mismatches, 1);
	feed_seed(&a, MW_SEED_RESYNC, T0 + 500, SB, BRK, SSTACK, seed_maps(), NULL, NULL);
	CHECK(!a.need_resync);

	/* Never read: the loop's clock (account_late_overdue()) or a later
	 * record's asks for a re-read once MW_LATE_READ_NS has passed. */
	r = op_new(MW_OP_MPROTECT, 6, 2 * T0, TAG, TAG + P, SEED_VM_PAGES);
	r->opflags = MW_OPF_FIND_BUSY;
	feed_op(&a, r);
	account_late_overdue(&a, 2 * T0 + MW_LATE_READ_NS);
	CHECK(!a.need_resync);
	account_late_overdue(&a, 2 * T0 + MW_LATE_READ_NS + 1);
	CHECK(a.need_resync);
	CHECK_EQ_U64(a.busy_ts, 0);
	feed_seed(&a, MW_SEED_RESYNC, 3 * T0, SB, BRK, SSTACK, seed_maps(), NULL, NULL);
	r = op_new(MW_OP_MPROTECT, 7, 4 * T0, TAG, TAG + P, SEED_VM_PAGES);
	r->opflags = MW_OPF_FIND_BUSY;
	feed_op(&a, r);
	noop_op(&a, 8, SEED_VM_PAGES);
	CHECK(!a.need_resync);
	r = op_new(MW_OP_MPROTECT, 9, 4 * T0 + MW_LATE_READ_NS + 1, TAG, TAG + P, SEED_VM_PAGES);
	op_vma(r, TAG, TAG + P, RW);
	feed_op(&a, r);
	CHECK(a.need_resync);
	/* A re-read from /proc is the read owed. */
	feed_seed(&a, MW_SEED_RESYNC, 5 * T0 + MW_LATE_READ_NS, SB, BRK, SSTACK, seed_maps(), NULL,
		  NULL);
	CHECK(!a.need_resync);
	CHECK_EQ_U64(a.busy_ts, 0);
	CHECK_EQ_U64(a.vm_mismatches, 1);

	/* A late read cut short (more VMAs than a record holds): the rest
	 * is re-read MW_LATE_READ_NS later, not at once, and nothing comes
	 * to clear it but that re-read.  A call's own walk cut short is
	 * re-read at once. */
	const uint64_t T1 = 6 * T0 + MW_LATE_READ_NS;

	r = op_new(MW_OP_REWALK, 10, T1, NEW, NEW + 8 * P, SEED_VM_PAGES);
	r->opflags = MW_OPF_WALK_SHORT;
	r->walk_next = NEW + P;
	feed_op(&a, r);
	CHECK(!a.need_resync);
	CHECK_EQ_U64(a.short_ts, T1);
	r = op_new(MW_OP_REWALK, 11, T1 + 1, TAG, TAG + P, SEED_VM_PAGES);
	op_vma(r, TAG, TAG + P, RW);
	feed_op(&a, r);
	CHECK_EQ_U64(a.short_ts, T1);
	account_late_overdue(&a, T1 + MW_LATE_READ_NS + 1);
	CHECK(a.need_resync);
	CHECK_EQ_U64(a.short_ts, 0);
	feed_seed(&a, MW_SEED_RESYNC, T1 + MW_LATE_READ_NS + 2, SB, BRK, SSTACK, seed_maps(), NULL,
		  NULL);
	r = op_new(MW_OP_MPROTECT, 12, T1 + MW_LATE_READ_NS + 3, TAG, TAG + P, SEED_VM_PAGES);
	r->opflags = MW_OPF_WALK_SHORT;
	feed_op(&a, r);
	CHECK(a.need_resync);
	CHECK_EQ_U64(a.short_ts, 0);
	account_free(&a);
}

TEST(mprotect_split_and_merge_back)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *l, *mid, *rt, *mp;

	attach(&a);
	r = op_new(MW_OP_MPROTECT, 1, 5000, ANON1M + 0x40000, ANON1M + 0x80000, SEED_VM_PAGES);
	r->args[0] = ANON1M + 0x40000;
	r->args[1] = 0x40000;
	r->args[2] = 1;
	op_vma(r, ANON1M + 0x40000, ANON1M + 0x80000, MW_VM_READ);
	feed_op(&a, r);
	l = at(&a, ANON1M);
	mid = at(&a, ANON1M + 0x40000);
	rt = at(&a, ANON1M + 0x80000);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE + 2);
	CHECK_EQ_U64(l->end, ANON1M + 0x40000);
	CHECK_EQ_U64(mid->end, ANON1M + 0x80000);
	CHECK_EQ_U64(mid->flags, MW_VM_READ);
	CHECK_EQ_U64(rt->end, ANON1M + 0x100000);
	CHECK_EQ_INT(l->rss[MW_ANON], 4 * P);
	CHECK_EQ_INT(mid->rss[MW_ANON], 4 * P);
	CHECK_EQ_INT(rt->rss[MW_ANON], 8 * P);
	CHECK_EQ_INT(l->rss[MW_SWAP] + mid->rss[MW_SWAP] + rt->rss[MW_SWAP], 2 * P);
	CHECK(l->rss_estimated && mid->rss_estimated && rt->rss_estimated);
	CHECK_EQ_U64(a.vm_mismatches, 0);

	/* Back to rw-: the kernel merges the three again. */
	r = op_new(MW_OP_MPROTECT, 2, 6000, ANON1M + 0x40000, ANON1M + 0x80000, SEED_VM_PAGES);
	op_vma(r, ANON1M, ANON1M + 0x100000, RW);
	feed_op(&a, r);
	mp = at(&a, ANON1M + 0x80000);
	CHECK(mp == l);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE);
	CHECK_EQ_U64(mp->start, ANON1M);
	CHECK_EQ_U64(mp->end, ANON1M + 0x100000);
	CHECK_EQ_INT(mp->rss[MW_ANON], 16 * P);
	CHECK_EQ_INT(mp->rss[MW_SWAP], 2 * P);
	CHECK_EQ_U64(mp->born_seq, 4);
	CHECK_EQ_U64(a.model.ndead, 0);
	account_free(&a);
}

/* With an oracle the split is measured, not guessed. */
static int oracle_fixed(void *ctx, uint64_t start, uint64_t end, uint64_t *anon, uint64_t *file)
{
	int *calls = ctx;

	(*calls)++;
	*file = 0;
	if (start == ANON1M && end == ANON1M + 0x40000)
		*anon = P;
	else if (start == ANON1M + 0x40000 && end == ANON1M + 0x80000)
		*anon = 5 * P;
	else
		return -ENOENT;
	return 0;
}

TEST(mprotect_split_with_oracle)
{
	struct mw_account a;
	struct mw_op_rec *r;
	int calls = 0;

	attach(&a);
	a.model.oracle.range_rss = oracle_fixed;
	a.model.oracle.ctx = &calls;
	r = op_new(MW_OP_MPROTECT, 1, 5000, ANON1M + 0x40000, ANON1M + 0x80000, SEED_VM_PAGES);
	op_vma(r, ANON1M + 0x40000, ANON1M + 0x80000, MW_VM_READ);
	feed_op(&a, r);
	/* Asked: the left quarter, then the middle (smaller than the half
	 * right of it); the right half gets the rest. */
	CHECK_EQ_INT(calls, 2);
	CHECK_EQ_INT(at(&a, ANON1M)->rss[MW_ANON], P);
	CHECK_EQ_INT(at(&a, ANON1M + 0x40000)->rss[MW_ANON], 5 * P);
	CHECK_EQ_INT(at(&a, ANON1M + 0x80000)->rss[MW_ANON], 10 * P);
	CHECK(!at(&a, ANON1M + 0x40000)->rss_estimated);
	account_free(&a);
}

/* A removal carries the RSS it freed: a split for it needs no measuring.
 * One side kept: exact.  Both sides kept: their sum is exact, the division
 * a guess to re-check when quiet. */
TEST(munmap_split_settles_without_oracle)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_mapping *l, *rt;
	int calls = 0;

	attach(&a);
	a.model.oracle.range_rss = oracle_fixed;
	a.model.oracle.ctx = &calls;
	/* The last quarter of the 1 MiB mapping, 3 resident pages freed. */
	r = munmap_new(1, 5000, ANON1M + 0xc0000, ANON1M + 0x100000, 3 * P, SEED_VM_PAGES - 64);
	feed_op(&a, r);
	CHECK_EQ_INT(calls, 0);
	l = at(&a, ANON1M);
	if (!CHECK(l))
		return;
	CHECK_EQ_U64(l->end, ANON1M + 0xc0000);
	CHECK_EQ_INT(l->rss[MW_ANON], 13 * P);
	CHECK(!l->rss_estimated && !l->recheck);
	CHECK_EQ_INT(last_dead(&a)->rss[MW_ANON], 3 * P);
	CHECK(!last_dead(&a)->rss_estimated);

	/* The middle of what is left: 2 pages freed; 11 stay, on two sides. */
	r = munmap_new(2, 6000, ANON1M + 0x40000, ANON1M + 0x80000, 2 * P, SEED_VM_PAGES - 128);
	feed_op(&a, r);
	CHECK_EQ_INT(calls, 0);
	l = at(&a, ANON1M);
	rt = at(&a, ANON1M + 0x80000);
	if (!CHECK(l && rt))
		return;
	CHECK_EQ_INT(l->rss[MW_ANON] + rt->rss[MW_ANON], 11 * P);
	CHECK_EQ_INT(last_dead(&a)->rss[MW_ANON], 2 * P);
	CHECK(l->rss_estimated && rt->rss_estimated && l->recheck && rt->recheck);
	CHECK(!l->settling && !rt->settling);
	account_free(&a);
}

static const char maps_resync[] =
	"555555554000-555555556000 r--p 00000000 fe:01 1234 /usr/bin/app\n"
	"555555556000-555555558000 rw-p 00002000 fe:01 1234 /usr/bin/app\n"
	"555555560000-555555590000 rw-p 00000000 00:00 0 [heap]\n"
	"7f0000000000-7f0000080000 rw-p 00000000 00:00 0 \n"
	"7f0000080000-7f0000100000 r--p 00000000 00:00 0 \n"
	"7f0000300000-7f0000304000 rw-s 00000000 00:19 77 /dev/shm/seg\n"
	"7f0000400000-7f0000402000 rw-s 00000000 00:2d 88 /run/user/1000/pulse-shm\n"
	"7f0000500000-7f0000501000 rw-p 00000000 00:00 0 [anon:tag]\n"
	"7f0000600000-7f0000614000 rw-p 00000000 00:00 0 \n"
	"7f0000800000-7f0000801000 rw-p 00000000 00:00 0 \n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
	"7ffd000fc000-7ffd00100000 r--p 00000000 00:00 0 [vvar]\n"
	"7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0 [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";

TEST(resync_corrects_layout)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_deltas_rec *d;
	struct mw_mapping *x, *y, *memfd, *mp, *heap;

	attach(&a);
	r = op_new(MW_OP_MMAP, 1, 5000, NEWMAP, NEWMAP + 0x10000, SEED_VM_PAGES + 16);
	r->args[1] = 0x10000;
	op_vma(r, NEWMAP, NEWMAP + 0x10000, RW);
	feed_op(&a, r);
	r = op_new(MW_OP_MMAP, 2, 5100, 0x7f0000700000, 0x7f0000704000, SEED_VM_PAGES + 20);
	op_vma(r, 0x7f0000700000, 0x7f0000704000, RW);
	feed_op(&a, r);
	d = deltas_new(2, 5200);
	deltas_add(d, NEWMAP, 0, 8 * P, 0, 0, 8 * P, 8);
	deltas_add(d, 0x7f0000700000, 0, 2 * P, 0, 0, 2 * P, 2);
	feed_deltas(&a, d);
	x = at(&a, NEWMAP);
	y = at(&a, 0x7f0000700000);
	memfd = at(&a, MEMFD);
	heap = at(&a, SB);

	/* Records were lost: x grew, y and the memfd went, an mprotect
	 * split the 1 MiB mapping, z appeared, brk moved. */
	feed_seed(&a, MW_SEED_RESYNC, 9000, SB, 0x555555590000, SSTACK, maps_resync, NULL, NULL);
	CHECK_EQ_U64(a.resyncs, 1);
	CHECK(!a.need_resync);
	CHECK_EQ_U64(a.model.nlive, 14);
	CHECK_EQ_U64(model_vm_bytes(&a.model),
		     (2 + 2 + 48 + 128 + 128 + 4 + 2 + 1 + 20 + 1 + 33 + 4 + 2) * P);
	CHECK(at(&a, NEWMAP) == x);
	CHECK_EQ_U64(x->end, 0x7f0000614000);
	CHECK_EQ_INT(x->rss[MW_ANON], 8 * P);
	CHECK_EQ_U64(x->faults, 8);
	CHECK_EQ_U64(x->born_seq, SEED_NLIVE + 1);
	CHECK_EQ_U64(x->requested, 0x10000);
	/* Gone ones are buried with their statistics. */
	CHECK_EQ_U64(a.model.ndead, 2);
	CHECK(memfd->unmapped && y->unmapped);
	CHECK_EQ_INT(memfd->rss[MW_SHMEM], 16 * KB);
	CHECK_EQ_INT(y->rss[MW_ANON], 2 * P);
	CHECK_EQ_U64(y->died_ns, 9000);
	/* The new one starts from nothing. */
	mp = at(&a, 0x7f0000800000);
	CHECK_EQ_INT(mapping_rss_total(mp), 0);
	CHECK_EQ_U64(mp->born_seq, SEED_NLIVE + 3);
	CHECK_EQ_U64(mp->born_ns, 9000);
	/* The missed split divides by size; the RSS is not re-read. */
	CHECK_EQ_INT(at(&a, ANON1M)->rss[MW_ANON], 8 * P);
	CHECK_EQ_INT(at(&a, ANON1M + 0x80000)->rss[MW_ANON], 8 * P);
	CHECK_EQ_U64(at(&a, ANON1M + 0x80000)->flags, MW_VM_READ);
	CHECK(at(&a, ANON1M)->rss_estimated);
	/* Heap follows the new brk, keeps its RSS and identity. */
	CHECK(at(&a, SB) == heap);
	CHECK_EQ_U64(heap->end, 0x555555590000);
	CHECK_EQ_INT(heap->kind, MW_K_HEAP);
	CHECK_EQ_INT(heap->rss[MW_ANON], 12 * KB);
	CHECK_EQ_U64(a.model.brk, 0x555555590000);
	/* Everything else untouched. */
	CHECK_EQ_INT(at(&a, STACK)->rss[MW_ANON], 16 * KB);
	CHECK_STR(at(&a, TAG)->path, "[anon:tag]");
	CHECK_EQ_INT(at(&a, 0x7f0000400000)->kind, MW_K_SHMEM);	/* devs kept */
	CHECK_STR(a.comm, "app");
	account_free(&a);
}

TEST(exec_buries_everything)
{
	struct mw_account a;
	const char maps[] =
		"5566aa000000-5566aa002000 r-xp 00000000 fe:01 999 /usr/bin/newprog\n"
		"5566aa010000-5566aa031000 rw-p 00000000 00:00 0 [heap]\n"
		"7ffe00000000-7ffe00021000 rw-p 00000000 00:00 0 [stack]\n";

	attach(&a);
	feed_task(&a, MW_REC_EXEC, 1, 7000, "newprog", 0);
	CHECK_EQ_U64(a.model.nlive, 0);
	CHECK_EQ_U64(a.model.ndead, SEED_NLIVE);
	for (size_t i = 0; i < a.model.ndead; i++) {
		CHECK(a.model.dead[i]->unmapped);
		CHECK_EQ_U64(a.model.dead[i]->died_ns, 7000);
	}
	CHECK_EQ_INT(a.model.dead[3]->rss[MW_ANON], 64 * KB);	/* kept in death */
	CHECK_STR(a.comm, "newprog");
	CHECK_EQ_U64(a.execs, 1);
	CHECK_EQ_U64(a.last_seq, 1);
	CHECK_EQ_U64(model_vm_bytes(&a.model), 0);

	feed_seed(&a, MW_SEED_EXEC, 7100, 0x5566aa010000, 0x5566aa031000, 0x7ffe00020000,
		  maps, NULL, "newprog");
	CHECK_EQ_U64(a.model.nlive, 3);
	CHECK_EQ_U64(a.model.ndead, SEED_NLIVE);
	CHECK_EQ_INT(at(&a, 0x5566aa010000)->kind, MW_K_HEAP);
	CHECK_EQ_INT(at(&a, 0x7ffe00000000)->kind, MW_K_STACK);
	CHECK_EQ_INT(at(&a, 0x5566aa000000)->kind, MW_K_FILE);
	CHECK_EQ_INT(live_resident(&a), 0);
	CHECK_EQ_U64(a.resyncs, 0);

	/* A comm that fills the record is cut to fit. */
	feed_task(&a, MW_REC_EXEC, 2, 8000, "0123456789abcdefXYZ", 0);
	CHECK_STR(a.comm, "0123456789abcde");
	CHECK_EQ_U64(a.execs, 2);
	CHECK_EQ_U64(a.model.nlive, 0);
	account_free(&a);
}

TEST(exit_and_end)
{
	struct mw_account a;
	struct mw_end e = { .pid = 4242, .how = MW_END_EXITED, .wait_status = 0, .ts = 99000 };

	attach(&a);
	feed_task(&a, MW_REC_EXIT, 1, 9000, "app", 0x100);
	CHECK(a.exited);
	CHECK_EQ_INT(a.wait_status, 0x100);
	CHECK(!a.ended);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE);	/* the layout stays as it was */
	feed_exact(&a, MW_S_END, &e, sizeof(e));
	CHECK(a.ended);
	CHECK_EQ_U64(a.end_ns, 9000);	/* the trace ended when the process did */
	CHECK_EQ_INT(a.wait_status, 0);
	account_free(&a);

	attach(&a);
	e.how = MW_END_DETACHED;
	e.wait_status = -1;
	feed_exact(&a, MW_S_END, &e, sizeof(e));
	CHECK(a.ended && !a.exited);
	CHECK_EQ_INT(a.wait_status, -1);
	feed_exact(&a, MW_S_END, &e, sizeof(e) - 1);	/* short: ignored */
	CHECK_EQ_U64(a.records, 3);
	account_free(&a);
}

/* ---- kernel state ------------------------------------------------------------- */

TEST(state_final_applies_slots)
{
	struct mw_account a;
	struct mw_state *s = calloc(1, sizeof(*s));
	struct mw_mapping *anon, *memfd;

	attach(&a);
	anon = at(&a, ANON1M);
	memfd = at(&a, MEMFD);
	s->pid = 4242;
	s->stats[MW_STAT_RB_LOST] = 17;
	s->proc.total_vm = SEED_VM_PAGES;
	slot_set(&s->proc.slots[3], ANON1M + 0x5000, 0, 2 * P, 0, 0, 3 * P, 5);
	slot_set(&s->proc.slots[10], MEMFD, 0, 0, 0, P, P, 1);
	slot_set(&s->proc.slots[20], 0, 0, 9 * P, 0, 0, 9 * P, 9);	/* free slot */
	slot_set(&s->proc.slots[63], 0x1000, 0, P, 0, 0, P, 1);	/* no mapping */

	feed_exact(&a, MW_S_STATE, s, sizeof(*s));
	CHECK(a.have_kstate);
	CHECK_EQ_U64(a.stats[MW_STAT_RB_LOST], 17);
	CHECK_EQ_INT(anon->rss[MW_ANON], 64 * KB);	/* not final: not applied */
	CHECK_EQ_U64(a.kstate.slots[3].vm_start, ANON1M + 0x5000);

	s->final = 1;
	s->stats[MW_STAT_RB_LOST] = 18;
	feed_exact(&a, MW_S_STATE, s, sizeof(*s));
	CHECK_EQ_U64(a.stats[MW_STAT_RB_LOST], 18);
	CHECK_EQ_INT(anon->rss[MW_ANON], 18 * P);
	CHECK_EQ_U64(anon->faults, 5);
	CHECK_EQ_INT(anon->rss_peak, 19 * P);
	CHECK_EQ_INT(memfd->rss[MW_SHMEM], 5 * P);
	CHECK_EQ_U64(memfd->faults, 1);
	CHECK_EQ_INT(a.lost_attr[MW_ANON], P);
	CHECK_EQ_U64(a.lost_attr_faults, 1);
	int left = 0;
	for (int i = 0; i < MW_SLOTS; i++)
		left += a.kstate.slots[i].vm_start != 0;
	CHECK_EQ_INT(left, 0);
	CHECK_EQ_U64(a.kstate.total_vm, SEED_VM_PAGES);

	/* Short state records are ignored. */
	feed_exact(&a, MW_S_STATE, s, sizeof(*s) - 1);
	CHECK_EQ_INT(anon->rss[MW_ANON], 18 * P);
	free(s);
	account_free(&a);
}

TEST(totals_from_kstate)
{
	struct mw_account a;
	struct mw_state *s = calloc(1, sizeof(*s));

	attach(&a);
	CHECK_EQ_U64(account_vm(&a), 0);
	CHECK_EQ_INT(account_rss_total(&a), 0);
	/* Nothing known of the kernel yet: all the table holds is "extra". */
	CHECK_EQ_INT(account_unattributed(&a), -36 * (int64_t)P);

	s->proc.rss[MW_FILE] = 10 * P;
	s->proc.rss[MW_ANON] = 20 * P;
	s->proc.rss[MW_SHMEM] = 3 * P;
	s->proc.rss[MW_SWAP] = 5 * P;
	s->proc.rss_peak = 40 * P;
	s->proc.total_vm = 100;
	s->proc.vm_peak = 120;
	feed_exact(&a, MW_S_STATE, s, sizeof(*s));
	CHECK_EQ_U64(account_vm(&a), 100 * P);
	CHECK_EQ_U64(account_vm_peak(&a), 120 * P);
	CHECK_EQ_INT(account_rss(&a, MW_FILE), 10 * P);
	CHECK_EQ_INT(account_rss(&a, MW_ANON), 20 * P);
	CHECK_EQ_INT(account_rss(&a, MW_SHMEM), 3 * P);
	CHECK_EQ_INT(account_rss(&a, MW_SWAP), 5 * P);
	CHECK_EQ_INT(account_rss(&a, -1), 0);
	CHECK_EQ_INT(account_rss(&a, MW_NR_MEMBERS), 0);
	CHECK_EQ_INT(account_rss_total(&a), 33 * P);	/* swap not resident */
	CHECK_EQ_U64(account_rss_peak(&a), 40 * P);
	/* Table: anon 25, file 4, shmem 7 pages = 36; kernel 33. */
	CHECK_EQ_INT(account_unattributed(&a), -3 * (int64_t)P);

	/* Peaks are never below the current values. */
	s->proc.vm_peak = 90;
	s->proc.rss_peak = 10 * P;
	feed_exact(&a, MW_S_STATE, s, sizeof(*s));
	CHECK_EQ_U64(account_vm_peak(&a), 100 * P);
	CHECK_EQ_U64(account_rss_peak(&a), 33 * P);

	/* Exactly what the table holds: nothing unattributed. */
	s->proc.rss[MW_FILE] = 4 * P;
	s->proc.rss[MW_ANON] = 25 * P;
	s->proc.rss[MW_SHMEM] = 7 * P;
	s->proc.rss[MW_SWAP] = 1;	/* swap never counts here */
	feed_exact(&a, MW_S_STATE, s, sizeof(*s));
	CHECK_EQ_INT(account_unattributed(&a), 0);

	/* Negative totals (counters read mid-teardown) give no negative peak. */
	s->proc.rss[MW_FILE] = -(int64_t)P;
	s->proc.rss[MW_ANON] = 0;
	s->proc.rss[MW_SHMEM] = 0;
	s->proc.rss_peak = 0;
	feed_exact(&a, MW_S_STATE, s, sizeof(*s));
	CHECK_EQ_INT(account_rss_total(&a), -(int64_t)P);
	CHECK_EQ_U64(account_rss_peak(&a), 0);
	free(s);
	account_free(&a);
}

/* A whole session: seed, ops, deltas, state; the table and the kernel's
 * totals agree to the byte when every record arrives. */
TEST(session_consistent)
{
	struct mw_account a;
	struct mw_op_rec *r;
	struct mw_deltas_rec *d;
	struct mw_state *s = calloc(1, sizeof(*s));
	int64_t anon = 25 * P;
	uint64_t vm = SEED_VM_PAGES;

	attach(&a);
	r = op_new(MW_OP_MMAP, 1, 5000, NEWMAP, NEWMAP + 0x20000, vm += 32);
	op_vma(r, NEWMAP, NEWMAP + 0x20000, RW);
	feed_op(&a, r);
	d = deltas_new(1, 5100);
	deltas_add(d, NEWMAP, 0, 20 * P, 0, 0, 20 * P, 20);
	deltas_add(d, SB, 0, 3 * P, 0, 0, 3 * P, 3);
	feed_deltas(&a, d);
	anon += 23 * P;
	r = op_new(MW_OP_MUNMAP, 2, 5200, NEWMAP + 0x8000, NEWMAP + 0x18000, vm -= 16);
	r->rss_delta[MW_ANON] = -13 * (int64_t)P;
	feed_op(&a, r);
	anon -= 13 * P;
	r = op_new(MW_OP_MADVISE, 3, 5300, ANON1M, ANON1M + 0x80000, vm);
	r->rss_delta[MW_ANON] = -8 * (int64_t)P;	/* MADV_DONTNEED */
	op_vma(r, ANON1M, ANON1M + 0x100000, RW);
	feed_op(&a, r);
	anon -= 8 * P;
	brk_op(&a, 4, BRK, BRK + 0x4000, 0, vm += 4, SB);
	d = deltas_new(4, 5400);
	deltas_add(d, SB, 0, 2 * P, 0, 0, 2 * P, 2);
	feed_deltas(&a, d);
	anon += 2 * P;

	s->proc.rss[MW_FILE] = 4 * P;
	s->proc.rss[MW_ANON] = anon;
	s->proc.rss[MW_SHMEM] = 7 * P;
	s->proc.total_vm = vm;
	s->final = 1;
	feed_exact(&a, MW_S_STATE, s, sizeof(*s));
	CHECK_EQ_INT(model_rss(&a.model, MW_ANON), anon);
	CHECK_EQ_INT(account_unattributed(&a), 0);
	CHECK_EQ_U64(model_vm_bytes(&a.model), account_vm(&a));
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK_EQ_U64(a.seq_gaps, 0);
	CHECK(!a.need_resync);
	CHECK_EQ_INT(at(&a, NEWMAP)->rss[MW_ANON] + at(&a, NEWMAP + 0x18000)->rss[MW_ANON], 7 * P);
	CHECK_EQ_INT(last_dead(&a)->rss[MW_ANON], 13 * P);
	CHECK_EQ_INT(at(&a, ANON1M)->rss[MW_ANON], 8 * P);
	CHECK_EQ_INT(at(&a, SB)->rss[MW_ANON], 8 * P);
	free(s);
	account_free(&a);
}

/* Records the analysis must survive without reading past them. */
TEST(short_records)
{
	struct mw_account a;
	struct mw_op_rec *r;

	attach(&a);
	/* Op shorter than its fixed part: ignored (the sequence counts). */
	r = op_new(MW_OP_MUNMAP, 1, 5000, ANON1M, ANON1M + 0x100000, 0);
	feed_exact(&a, MW_S_BPF, r, offsetof(struct mw_op_rec, vmas) - 1);
	free(r);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK_EQ_U64(a.last_seq, 1);
	/* A file VMA whose path was cut off: no path, no crash. */
	r = op_new(MW_OP_MMAP, 2, 5100, 0x7f0000700000, 0x7f0000701000, SEED_VM_PAGES + 1);
	op_file_vma(r, 0x7f0000700000, 0x7f0000701000, MW_VM_READ, 0, 254, 1, 5, 0, "/lib/x.so");
	feed_exact(&a, MW_S_BPF, r, offsetof(struct mw_op_rec, paths));
	free(r);
	CHECK(at(&a, 0x7f0000700000) != NULL);
	CHECK(at(&a, 0x7f0000700000)->path == NULL);
	CHECK(at(&a, 0x7f0000700000)->has_file);
	/* Header only, and less than a header. */
	struct mw_rec_hdr h = { .type = MW_REC_OP, .seq = 3 };
	feed_exact(&a, MW_S_BPF, &h, sizeof(h));
	feed_exact(&a, MW_S_BPF, &h, sizeof(h) - 1);
	struct mw_task_rec t = { .hdr = { .type = MW_REC_EXEC, .seq = 4 } };
	feed_exact(&a, MW_S_BPF, &t, sizeof(t) - 1);	/* short exec: seq only */
	CHECK_EQ_U64(a.execs, 0);
	CHECK_EQ_U64(a.model.nlive, SEED_NLIVE + 1);
	CHECK_EQ_U64(a.last_seq, 4);
	CHECK_EQ_U64(a.seq_gaps, 0);
	/* Unknown kinds and types are counted and skipped. */
	feed_exact(&a, 99, &h, sizeof(h));
	h.type = 77;
	feed_exact(&a, MW_S_BPF, &h, sizeof(h));
	CHECK_EQ_U64(a.records, 8);
	account_free(&a);
}

/* ---- running totals under random streams ---------------------------------------- */

#define RND_BASE	0x7f1000000000ull
#define RND_PAGES	48

/* The table's running totals and kinds against a full walk and against
 * what the kernel would count (@pages of VM): NULL if all agree. */
static const char *table_agrees(const struct mw_account *a, uint64_t pages)
{
	const char *why = model_check(&a->model);
	const struct mw_mapping *mp;

	if (why)
		return why;
	if (model_vm_bytes(&a->model) != pages * P)
		return "model_vm_bytes() is not the VM the kernel counts";
	model_for_each(mp, &a->model)
		if (mp->kind != model_kind(&a->model, mp))
			return "a kind is not what classifying it again gives";
	return NULL;
}

/*
 * Random streams of what a process does in a region of its own (mmap,
 * munmap, mprotect, madvise, RSS deltas, re-measured RSS) and with its
 * heap (brk up and down), as the kernel reports them: after every record
 * the model's VM is the kernel's, its totals and kinds what summing and
 * classifying everything again gives.
 */
TEST(random_streams_keep_totals)
{
	static const uint64_t prot[] = { RW, MW_VM_READ, RX };

	for (uint64_t seed = 1; seed <= 10; seed++) {
		uint64_t x = seed * 0x2545f4914f6cdd1dull, brk = BRK, pages = SEED_VM_PAGES;
		uint64_t stack = STACK;
		bool mapped[RND_PAGES] = { false };
		struct mw_account a;
		const char *why = NULL;
		uint32_t seq = 1;
		int step;

		attach(&a);
		a.concurrent = true;	/* every slot marks its mapping to re-check */
		for (step = 0; step < 1500 && !why; step++, seq++) {
			uint64_t i = unit_rand(&x) % RND_PAGES, n = 1 + unit_rand(&x) % 6;
			uint64_t lo = RND_BASE + i * P, hi = lo + (i + n > RND_PAGES ? RND_PAGES - i : n) * P;
			uint64_t flags = prot[unit_rand(&x) % 3], k, all = 1, some = 0;
			struct mw_op_rec *r;
			struct mw_deltas_rec *d;
			struct mw_mapping *mp;

			for (k = i; k < i + (hi - lo) / P; k++) {
				all &= mapped[k];
				some |= mapped[k];
			}
			switch (unit_rand(&x) % 7) {
			case 0:		/* mmap(MAP_FIXED) */
				for (k = i; k < i + (hi - lo) / P; k++) {
					pages += !mapped[k];
					mapped[k] = true;
				}
				r = op_new(MW_OP_MMAP, seq, 1000 + seq, lo, hi, pages);
				r->args[1] = hi - lo;
				r->args[3] = 0x10;	/* MAP_FIXED */
				op_vma(r, lo, hi, flags);
				feed_op(&a, r);
				break;
			case 1:		/* munmap */
				for (k = i; k < i + (hi - lo) / P; k++) {
					pages -= mapped[k];
					mapped[k] = false;
				}
				r = munmap_new(seq, 1000 + seq, lo, hi, 0, pages);
				if (some && unit_rand(&x) % 2) {
					mp = at(&a, lo);
					r->rss_delta[MW_ANON] = mp && mp->rss[MW_ANON] > 0 ?
								-(int64_t)P : 0;
				}
				feed_op(&a, r);
				break;
			case 2:		/* mprotect or madvise of mapped pages */
				if (!all)
					continue;
				r = op_new(unit_rand(&x) % 2 ? MW_OP_MPROTECT : MW_OP_MADVISE, seq,
					   1000 + seq, lo, hi, pages);
				op_vma(r, lo, hi, flags);
				feed_op(&a, r);
				break;
			case 3:		/* brk up or down */
				n = (1 + unit_rand(&x) % 4) * P;
				if (unit_rand(&x) % 2 || brk - n < SB) {
					brk_op(&a, seq, brk, brk + n, 0, pages += n / P, SB);
					brk += n;
				} else {
					brk_op(&a, seq, brk, brk - n, 0, pages -= n / P, SB);
					brk -= n;
				}
				break;
			case 4:		/* faults in a mapping, or where none is */
				d = deltas_new(seq, 1000 + seq);
				deltas_add(d, lo, 0, (int64_t)P, 0, 0, (int64_t)P, 1);
				feed_deltas(&a, d);
				seq--;		/* deltas carry no structural number */
				break;
			case 5:		/* the loader measured a mapping again */
				mp = at(&a, lo);
				if (mp) {
					struct mw_reconcile rc = { .start = mp->start, .end = mp->end };

					rc.rss[MW_ANON] = mp->rss[MW_ANON];
					feed_exact(&a, MW_S_RECONCILE, &rc, sizeof(rc));
				}
				seq--;
				break;
			case 6:		/* the stack grows down under a fault */
				stack -= n * P;
				pages += n;
				r = op_new(MW_OP_VMGROW, seq, 1000 + seq, stack, stack + P, pages);
				feed_op(&a, r);
				break;
			}
			why = table_agrees(&a, pages);
		}
		if (!CHECK(why == NULL))
			fprintf(stderr, "  seed %llu, step %d: %s\n", (unsigned long long)seed, step, why);
		CHECK_EQ_U64(a.vm_mismatches, 0);
		account_free(&a);
	}
}

/* Another process's call names its ranges (bpf/remote.bpf.h): one range in
 * one mapping is exact there; several are shared by size and measured again;
 * ranges not all known, and changes at no address, have every mapping
 * measured again (MW_S_REMEASURE). */
static void remote_rec(struct mw_account *a, uint32_t seq, uint32_t flags, int n,
		       const uint64_t (*r)[2], int64_t anon, int64_t file)
{
	struct mw_remote_rec rec;

	memset(&rec, 0, sizeof(rec));
	rec.hdr = rec_hdr(MW_REC_REMOTE, 0, seq, 6000 + seq);
	rec.call = MW_REMOTE_VM_WRITEV;
	rec.flags = flags;
	rec.nr_ranges = (uint32_t)n;
	for (int i = 0; i < n; i++) {
		rec.ranges[i].start = r[i][0];
		rec.ranges[i].end = r[i][1];
	}
	rec.rss_delta[MW_ANON] = anon;
	rec.rss_delta[MW_FILE] = file;
	feed_exact(a, MW_S_BPF, &rec, sizeof(rec));
}

TEST(remote_calls_and_remeasure)
{
	static const uint64_t one[][2] = { { ANON1M + 16 * P, ANON1M + 48 * P } };
	static const uint64_t two[][2] = { { ANON1M, ANON1M + 4 * P }, { TAG, TAG + P } };
	struct mw_account a;
	struct mw_mapping *mp, *tag;
	struct mw_remeasure rm = { .pid = 1, .external_changes = 3 };

	attach(&a);
	model_for_each(mp, &a.model)	/* the attach's own re-measure, done */
		model_set_recheck(&a.model, mp, false);
	mp = at(&a, ANON1M);
	tag = at(&a, TAG);
	remote_rec(&a, 10, 0, 1, one, 32 * P, 0);	/* process_vm_writev: 32 pages */
	CHECK_EQ_U64((uint64_t)mp->rss[MW_ANON], (64 * KB) + 32 * P);
	CHECK(!mp->recheck);
	CHECK_EQ_U64(a.remote_calls, 1);
	CHECK_EQ_U64((uint64_t)a.remote_rss, 32 * P);
	CHECK_EQ_U64(a.last_seq, 10);		/* numbered like structural ones */
	remote_rec(&a, 11, 0, 2, two, -5 * P, 0);	/* 4 + 1 pages, by size */
	CHECK_EQ_U64((uint64_t)mp->rss[MW_ANON], (64 * KB) + 28 * P);
	CHECK_EQ_U64((uint64_t)tag->rss[MW_ANON], 0);
	CHECK(mp->recheck && tag->recheck);
	CHECK_EQ_U64(a.remeasures, 0);
	remote_rec(&a, 12, MW_REMOTE_F_MORE, 1, one, P, 0);
	CHECK_EQ_U64(a.remeasures, 1);
	CHECK_EQ_U64(a.model.nrecheck, SEED_NLIVE);
	model_for_each(mp, &a.model)
		model_set_recheck(&a.model, mp, false);
	feed_exact(&a, MW_S_REMEASURE, &rm, sizeof(rm));
	CHECK_EQ_U64(a.remeasures, 2);
	CHECK_EQ_U64(a.model.nrecheck, SEED_NLIVE);
	CHECK_EQ_U64(a.seq_gaps, 0);
	account_free(&a);
}

/* The [uprobes] page a marker's hit maps (bpf/fault.bpf.h note_xol): the
 * mapping is memwatch's own, in the boundary that hit began, and no phase's
 * growth; after another call of that thread it is no boundary's. */
TEST(uprobes_page_is_memwatch_own)
{
	const uint64_t xol = 0x7ffffffff000ull;
	struct mw_account a;
	struct mw_mark_rec mk;
	struct mw_op_rec *r;
	struct mw_mapping *mp;
	struct mw_phase *ph;

	attach(&a);
	mk = mark_new(MW_MARK_PHASE, 0, 7000, SEED_VM_PAGES, 100 * P, 4 * P);
	mk.id = 1;
	feed_exact(&a, MW_S_BPF, &mk, sizeof(mk));
	r = op_new(MW_OP_VMGROW, 10, 7001, xol, xol + P, SEED_VM_PAGES + 1);
	r->opflags = MW_OPF_XOL;
	op_vma(r, xol, xol + P, MW_VM_EXEC | MW_VM_IO);
	feed_op(&a, r);
	mp = at(&a, xol);
	CHECK(mp && mp->observer);
	CHECK_EQ_U64(a.obs_vm, P);
	ph = &a.phases.v[a.phases.n - 1];
	CHECK_EQ_INT(a.obs_phase, (int)a.phases.n - 1);
	CHECK_EQ_U64(ph->start.vm, SEED_VM_PAGES * P + P);
	CHECK_EQ_U64((uint64_t)ph->start.rss[MW_FILE], 4 * P + P);
	CHECK_EQ_U64(ph->observer_vm, P);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	mk = mark_new(MW_MARK_PHASE, 0, 7100, SEED_VM_PAGES + 1, 100 * P, 5 * P);
	feed_exact(&a, MW_S_BPF, &mk, sizeof(mk));
	for (size_t i = 0; i < a.phases.v[a.phases.n - 2].ntop; i++)
		CHECK(a.phases.v[a.phases.n - 2].top[i].start != xol);
	account_free(&a);

	/* A call of the marker's thread between: the page is not that hit's. */
	attach(&a);
	mk = mark_new(MW_MARK_PHASE, 0, 7000, SEED_VM_PAGES, 100 * P, 4 * P);
	feed_exact(&a, MW_S_BPF, &mk, sizeof(mk));
	noop_op(&a, 10, SEED_VM_PAGES);
	r = op_new(MW_OP_VMGROW, 11, 7001, xol, xol + P, SEED_VM_PAGES + 1);
	r->opflags = MW_OPF_XOL;
	op_vma(r, xol, xol + P, MW_VM_EXEC | MW_VM_IO);
	feed_op(&a, r);
	CHECK_EQ_U64(a.obs_vm, P);
	CHECK_EQ_INT(a.obs_phase, -1);
	CHECK_EQ_U64(a.phases.v[a.phases.n - 1].start.vm, SEED_VM_PAGES * P);
	account_free(&a);
}

int main(void)
{
	RUN(seed_attach);
	RUN(seed_malformed_ignored);
	RUN(seed_measure);
	RUN(mmap_new_mapping);
	RUN(mmap_populate);
	RUN(mmap_fixed_over_resident);
	RUN(mmap_merges_with_neighbour);
	RUN(deltas_harvest_number);
	RUN(deltas_land_on_mappings);
	RUN(munmap_part);
	RUN(munmap_kept_peak_follows);
	RUN(munmap_several_pieces_exact);
	RUN(mremap_move);
	RUN(mremap_move_over_mapping);
	RUN(mremap_shrink);
	RUN(mremap_grow_in_place);
	RUN(mremap_dontunmap);
	RUN(brk_grow_and_shrink);
	RUN(brk_heap_follows);
	RUN(vmgrow_stack);
	RUN(seq_gap);
	RUN(vm_mismatch);
	RUN(late_read);
	RUN(mprotect_split_and_merge_back);
	RUN(mprotect_split_with_oracle);
	RUN(munmap_split_settles_without_oracle);
	RUN(resync_corrects_layout);
	RUN(exec_buries_everything);
	RUN(exit_and_end);
	RUN(state_final_applies_slots);
	RUN(totals_from_kstate);
	RUN(session_consistent);
	RUN(short_records);
	RUN(random_streams_keep_totals);
	RUN(remote_calls_and_remeasure);
	RUN(uprobes_page_is_memwatch_own);
	return unit_done();
}
