// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_procfs.c — unit tests for user/capture/procfs.c.
 *
 * Two halves: the parsers on literal texts copied from a 6.x kernel (plus
 * every malformed shape we could think of, and a small mutation fuzzer),
 * then the readers on this very process, cross-checked against each other
 * and against memory the test maps and touches itself.
 *
 * Parser inputs are copied to heap buffers of exactly their length with no
 * NUL after them, so under -fsanitize=address any read past len aborts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* memfd_create, program_invocation_short_name */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/procfs.h"
#include "memwatch.h"
#include "unit.h"

/* ---- helpers ------------------------------------------------------------ */

static char *dup_exact(const char *s, size_t len)
{
	char *d = malloc(len ? len : 1);

	if (!d)
		abort();
	memcpy(d, s, len);
	return d;
}

static int maps_n(const char *s, size_t len, struct pm_maps *m)
{
	char *d = dup_exact(s, len);
	int err = procfs_parse_maps(d, len, m);

	free(d);
	return err;
}

static int smaps_n(const char *s, size_t len, struct pm_maps *m)
{
	char *d = dup_exact(s, len);
	int err = procfs_parse_smaps(d, len, m);

	free(d);
	return err;
}

static int status_n(const char *s, size_t len, struct pm_status *st)
{
	char *d = dup_exact(s, len);
	int err = procfs_parse_status(d, len, st);

	free(d);
	return err;
}

static int stat_n(const char *s, size_t len, struct pm_stat *st)
{
	char *d = dup_exact(s, len);
	int err = procfs_parse_stat(d, len, st);

	free(d);
	return err;
}

static int maps_of(const char *s, struct pm_maps *m)
{
	return maps_n(s, strlen(s), m);
}

static int smaps_of(const char *s, struct pm_maps *m)
{
	return smaps_n(s, strlen(s), m);
}

static int status_of(const char *s, struct pm_status *st)
{
	return status_n(s, strlen(s), st);
}

static int stat_of(const char *s, struct pm_stat *st)
{
	return stat_n(s, strlen(s), st);
}

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

/* ---- sample texts (6.x kernel, x86_64) ---------------------------------- */

static const char maps_sample[] =
	"555fb01a3000-555fb01a5000 r--p 00000000 fe:00 247498                     /usr/bin/head\n"
	"555fb01a5000-555fb01ab000 r-xp 00002000 fe:00 247498                     /usr/bin/head\n"
	"555fb01af000-555fb01b0000 rw-p 0000b000 fe:00 247498                     /usr/bin/head\n"
	"55f23db12000-55f23db33000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f2c1c000000-7f2c1c021000 rw-p 00000000 00:00 0 \n"
	"7f2c1c021000-7f2c20000000 ---p 00000000 00:00 0 \n"
	"7f2c2a600000-7f2c2a628000 r--p 00000000 fe:00 262283                     /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f2c2a628000-7f2c2a7bd000 r-xp 00028000 fe:00 262283                     /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"7f2c2a800000-7f2c2a900000 rw-s 00000000 00:01 2058                       /memfd:wayland-shm (deleted)\n"
	"7f2c2a900000-7f2c2a901000 rw-s 00000000 00:06 5                          /dev/zero (deleted)\n"
	"7f2c2a901000-7f2c2a902000 rw-s 00000000 00:01 32769                      /SYSV00000000 (deleted)\n"
	"7f2c2a902000-7f2c2a903000 rw-p 00000000 00:00 0                          [anon:glibc malloc]\n"
	"7f2c2a903000-7f2c2a904000 rw-s 00000000 00:01 1031                       [anon_shmem:jit cache]\n"
	"7f2c2a904000-7f2c2a906000 r--p 00000000 fe:00 1234                       /home/user/My Documents/lib with  spaces.so\n"
	"7fd73494b000-7fd73494f000 r--p 00000000 00:00 0                          [vvar]\n"
	"7fd73494f000-7fd734951000 r--p 00000000 00:00 0                          [vvar_vclock]\n"
	"7fd734951000-7fd734953000 r-xp 00000000 00:00 0                          [vdso]\n"
	"7ffcb3930000-7ffcb3951000 rw-p 00000000 00:00 0                          [stack]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static const char smaps_sample[] =
	"55f23db12000-55f23db33000 rw-p 00000000 00:00 0                          [heap]\n"
	"Size:                132 kB\n"
	"KernelPageSize:        4 kB\n"
	"MMUPageSize:           4 kB\n"
	"Rss:                  12 kB\n"
	"Pss:                  10 kB\n"
	"Pss_Dirty:            99 kB\n"
	"Shared_Clean:          0 kB\n"
	"Shared_Dirty:          0 kB\n"
	"Private_Clean:         0 kB\n"
	"Private_Dirty:        12 kB\n"
	"Referenced:           12 kB\n"
	"Anonymous:             8 kB\n"
	"KSM:                   0 kB\n"
	"LazyFree:              0 kB\n"
	"AnonHugePages:         0 kB\n"
	"ShmemPmdMapped:        0 kB\n"
	"FilePmdMapped:         0 kB\n"
	"Shared_Hugetlb:        0 kB\n"
	"Private_Hugetlb:       0 kB\n"
	"Swap:                  4 kB\n"
	"SwapPss:              77 kB\n"
	"Locked:               12 kB\n"
	"THPeligible:           0\n"
	"ProtectionKey:         0\n"
	"VmFlags: rd wr mr mw me ac lo \n"
	"7f2c1c000000-7f2c1c400000 rw-p 00000000 00:00 0 \n"
	"Size:               4096 kB\n"
	"KernelPageSize:        4 kB\n"
	"MMUPageSize:           4 kB\n"
	"Rss:                4096 kB\n"
	"Pss:                4096 kB\n"
	"Anonymous:          4096 kB\n"
	"AnonHugePages:      4096 kB\n"
	"Swap:                  0 kB\n"
	"THPeligible:           1\n"
	"VmFlags: rd wr mr mw me ac hg \n"
	"7f2c2a600000-7f2c2a628000 r--p 00000000 fe:00 262283                     /usr/lib/x86_64-linux-gnu/libc.so.6\n"
	"Size:                160 kB\n"
	"Rss:                 160 kB\n"
	"Pss:                  32 kB\n"
	"Pss_Anon:              0 kB\n"
	"Pss_File:              7 kB\n"
	"Anonymous:             0 kB\n"
	"Swap:                  0 kB\n"
	"VmFlags: rd mr mw me sd \n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"
	"Size:                  4 kB\n"
	"KernelPageSize:        4 kB\n"
	"MMUPageSize:           4 kB\n"
	"Rss:                   0 kB\n"
	"Pss:                   0 kB\n"
	"THPeligible:           0\n"
	"VmFlags: ex \n";

static const char smaps_rollup_sample[] =
	"557896909000-7ffeefd47000 ---p 00000000 00:00 0                          [rollup]\n"
	"Rss:                1744 kB\n"
	"Pss:                 526 kB\n"
	"Pss_Dirty:           112 kB\n"
	"Pss_Anon:            112 kB\n"
	"Pss_File:            414 kB\n"
	"Pss_Shmem:             0 kB\n"
	"Anonymous:           112 kB\n"
	"AnonHugePages:         0 kB\n"
	"Swap:                  0 kB\n"
	"SwapPss:               0 kB\n"
	"Locked:                0 kB\n";

static const char status_sample[] =
	"Name:\tcat\n"
	"Umask:\t0022\n"
	"State:\tR (running)\n"
	"Tgid:\t3014\n"
	"Ngid:\t0\n"
	"Pid:\t3014\n"
	"PPid:\t3006\n"
	"TracerPid:\t0\n"
	"Uid:\t0\t0\t0\t0\n"
	"Gid:\t0\t0\t0\t0\n"
	"FDSize:\t256\n"
	"Groups:\t \n"
	"NStgid:\t3014\n"
	"NSpid:\t3014\n"
	"NSpgid:\t3006\n"
	"NSsid:\t2344\n"
	"Kthread:\t0\n"
	"VmPeak:\t    3100 kB\n"
	"VmSize:\t    3060 kB\n"
	"VmLck:\t       0 kB\n"
	"VmPin:\t       0 kB\n"
	"VmHWM:\t    1700 kB\n"
	"VmRSS:\t    1612 kB\n"
	"RssAnon:\t     116 kB\n"
	"RssFile:\t    1492 kB\n"
	"RssShmem:\t       4 kB\n"
	"VmData:\t     360 kB\n"
	"VmStk:\t     132 kB\n"
	"VmExe:\t      20 kB\n"
	"VmLib:\t    1528 kB\n"
	"VmPTE:\t      44 kB\n"
	"VmSwap:\t      8 kB\n"
	"HugetlbPages:\t       0 kB\n"
	"CoreDumping:\t0\n"
	"THP_enabled:\t1\n"
	"untag_mask:\t0xffffffffffffffff\n"
	"Threads:\t3\n"
	"SigQ:\t0/96364\n"
	"SigPnd:\t0000000000000000\n"
	"ShdPnd:\t0000000000000000\n"
	"SigBlk:\t0000000000000000\n"
	"SigIgn:\t0000000000000000\n"
	"SigCgt:\t0000000000000000\n"
	"CapInh:\t0000000000000000\n"
	"CapPrm:\t000001fffeffffff\n"
	"CapEff:\t000001fffeffffff\n"
	"CapBnd:\t000001fffeffffff\n"
	"CapAmb:\t0000000000000000\n"
	"NoNewPrivs:\t0\n"
	"Seccomp:\t0\n"
	"Seccomp_filters:\t0\n"
	"Speculation_Store_Bypass:\tvulnerable\n"
	"SpeculationIndirectBranch:\talways enabled\n"
	"Cpus_allowed:\t3\n"
	"Cpus_allowed_list:\t0-1\n"
	"Mems_allowed:\t00000000,00000001\n"
	"Mems_allowed_list:\t0\n"
	"voluntary_ctxt_switches:\t0\n"
	"nonvoluntary_ctxt_switches:\t0\n";

static const char status_kthread_sample[] =
	"Name:\tkthreadd\n"
	"Umask:\t0022\n"
	"State:\tS (sleeping)\n"
	"Tgid:\t2\n"
	"Ngid:\t0\n"
	"Pid:\t2\n"
	"PPid:\t0\n"
	"TracerPid:\t0\n"
	"Uid:\t0\t0\t0\t0\n"
	"Gid:\t0\t0\t0\t0\n"
	"FDSize:\t64\n"
	"Groups:\t \n"
	"NStgid:\t2\n"
	"NSpid:\t2\n"
	"NSpgid:\t0\n"
	"NSsid:\t0\n"
	"Kthread:\t1\n"
	"Threads:\t1\n"
	"SigQ:\t0/96364\n"
	"SigPnd:\t0000000000000000\n"
	"SigIgn:\tffffffffffffffff\n"
	"Cpus_allowed_list:\t0-1\n"
	"voluntary_ctxt_switches:\t58\n"
	"nonvoluntary_ctxt_switches:\t0\n";

static const char stat_sample[] =
	"3015 (cat) R 3006 3006 2344 0 -1 4194304 101 0 7 0 0 0 0 0 20 0 1 0 "
	"48747 3133440 394 18446744073709551615 93848717041664 93848717061545 "
	"140734968567936 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 93848717077552 "
	"93848717079168 93848744230912 140734968576641 140734968576661 "
	"140734968576661 140734968578027 0\n";

static const char stat_kthread_sample[] =
	"2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 26 0 0 "
	"18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 1 0 0 0 0 0 "
	"0 0 0 0 0 0 0 0\n";

/* ---- maps: single lines ------------------------------------------------- */

TEST(maps_line_file)
{
	struct pm_vma v;

	if (!CHECK_EQ_INT(procfs_parse_maps_line(
		"555fb01a5000-555fb01ab000 r-xp 00002000 fe:00 247498                     /usr/bin/head",
		&v), 0))
		return;
	CHECK_EQ_U64(v.start, 0x555fb01a5000);
	CHECK_EQ_U64(v.end, 0x555fb01ab000);
	CHECK_STR(v.perms, "r-xp");
	CHECK_EQ_U64(v.pgoff, 0x2000);
	CHECK_EQ_U64(v.dev_major, 0xfe);
	CHECK_EQ_U64(v.dev_minor, 0);
	CHECK_EQ_U64(v.ino, 247498);
	CHECK_STR(v.path, "/usr/bin/head");
	CHECK(!v.deleted);
	CHECK_EQ_U64(v.rss + v.anon + v.anon_huge + v.swap + v.pss, 0);
	free(v.path);
}

/* Anonymous lines end "0 " on a real kernel; accept them without too. */
TEST(maps_line_anon)
{
	static const char *const lines[] = {
		"7f2c1c000000-7f2c1c021000 rw-p 00000000 00:00 0 ",
		"7f2c1c000000-7f2c1c021000 rw-p 00000000 00:00 0",
		"7f2c1c000000-7f2c1c021000 rw-p 00000000 00:00 0                          ",
	};
	struct pm_vma v;
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		if (!CHECK_EQ_INT(procfs_parse_maps_line(lines[i], &v), 0))
			continue;
		CHECK_EQ_U64(v.start, 0x7f2c1c000000);
		CHECK_EQ_U64(v.end, 0x7f2c1c021000);
		CHECK_EQ_U64(v.ino, 0);
		CHECK_STR(v.path, "");
		CHECK(!v.deleted);
		free(v.path);
	}
}

TEST(maps_line_pseudo_paths)
{
	static const struct {
		const char *line, *path;
	} t[] = {
		{ "55f23db12000-55f23db33000 rw-p 00000000 00:00 0                          [heap]", "[heap]" },
		{ "7ffcb3930000-7ffcb3951000 rw-p 00000000 00:00 0                          [stack]", "[stack]" },
		{ "7fd734951000-7fd734953000 r-xp 00000000 00:00 0                          [vdso]", "[vdso]" },
		{ "7fd73494b000-7fd73494f000 r--p 00000000 00:00 0                          [vvar]", "[vvar]" },
		{ "7fd73494f000-7fd734951000 r--p 00000000 00:00 0                          [vvar_vclock]", "[vvar_vclock]" },
		{ "7f2c2a902000-7f2c2a903000 rw-p 00000000 00:00 0                          [anon:glibc malloc]", "[anon:glibc malloc]" },
		{ "7f2c2a903000-7f2c2a904000 rw-s 00000000 00:01 1031                       [anon_shmem:jit]", "[anon_shmem:jit]" },
	};
	struct pm_vma v;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (!CHECK_EQ_INT(procfs_parse_maps_line(t[i].line, &v), 0))
			continue;
		CHECK_STR(v.path, t[i].path);
		CHECK(!v.deleted);
		free(v.path);
	}
}

TEST(maps_line_vsyscall)
{
	struct pm_vma v;

	if (!CHECK_EQ_INT(procfs_parse_maps_line(
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]",
		&v), 0))
		return;
	CHECK_EQ_U64(v.start, 0xffffffffff600000ULL);
	CHECK_EQ_U64(v.end, 0xffffffffff601000ULL);
	CHECK_STR(v.perms, "--xp");
	CHECK_STR(v.path, "[vsyscall]");
	free(v.path);
}

/* Only the run of padding is a separator: inner and double spaces stay. */
TEST(maps_line_spaces_in_path)
{
	struct pm_vma v;

	if (!CHECK_EQ_INT(procfs_parse_maps_line(
		"7f2c2a904000-7f2c2a906000 r--p 00000000 fe:00 1234    /home/user/My Documents/a  b .so",
		&v), 0))
		return;
	CHECK_STR(v.path, "/home/user/My Documents/a  b .so");
	CHECK_EQ_U64(v.ino, 1234);
	free(v.path);
}

TEST(maps_line_deleted)
{
	static const struct {
		const char *line, *path;
		const char *perms;
		uint64_t ino;
	} t[] = {
		{ "7f2c2a800000-7f2c2a900000 rw-s 00000000 00:01 2058                       /memfd:wayland-shm (deleted)",
		  "/memfd:wayland-shm", "rw-s", 2058 },
		{ "7f2c2a900000-7f2c2a901000 rw-s 00000000 00:06 5                          /dev/zero (deleted)",
		  "/dev/zero", "rw-s", 5 },
		{ "7f2c2a901000-7f2c2a902000 rw-s 00000000 00:01 32769                      /SYSV00000000 (deleted)",
		  "/SYSV00000000", "rw-s", 32769 },
		{ "7f2c2a901000-7f2c2a902000 r-xp 00001000 fe:00 99      /tmp/my lib.so (deleted)",
		  "/tmp/my lib.so", "r-xp", 99 },
	};
	struct pm_vma v;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (!CHECK_EQ_INT(procfs_parse_maps_line(t[i].line, &v), 0))
			continue;
		CHECK_STR(v.path, t[i].path);
		CHECK_STR(v.perms, t[i].perms);
		CHECK_EQ_U64(v.ino, t[i].ino);
		CHECK(v.deleted);
		free(v.path);
	}
	/* "(deleted)" without the space, or mid-path, is part of the name. */
	if (CHECK_EQ_INT(procfs_parse_maps_line(
		"7f00-7f01 r--p 00000000 fe:00 7      /tmp/x(deleted)", &v), 0)) {
		CHECK_STR(v.path, "/tmp/x(deleted)");
		CHECK(!v.deleted);
		free(v.path);
	}
	if (CHECK_EQ_INT(procfs_parse_maps_line(
		"7f00-7f01 r--p 00000000 fe:00 7      /tmp/a (deleted)/b", &v), 0)) {
		CHECK_STR(v.path, "/tmp/a (deleted)/b");
		CHECK(!v.deleted);
		free(v.path);
	}
}

TEST(maps_line_escaped_newline)
{
	struct pm_vma v;

	if (CHECK_EQ_INT(procfs_parse_maps_line(
		"7f00-7f01 r--p 00000000 fe:00 7      /tmp/a\\012b\\012", &v), 0)) {
		CHECK_STR(v.path, "/tmp/a\nb\n");
		free(v.path);
	}
	if (CHECK_EQ_INT(procfs_parse_maps_line(
		"7f00-7f01 r--p 00000000 fe:00 7      /tmp/x\\012 (deleted)", &v), 0)) {
		CHECK_STR(v.path, "/tmp/x\n");
		CHECK(v.deleted);
		free(v.path);
	}
	/* Other backslashes are not escapes the kernel makes: left alone. */
	if (CHECK_EQ_INT(procfs_parse_maps_line(
		"7f00-7f01 r--p 00000000 fe:00 7      /tmp/a\\01b\\\\c\\", &v), 0)) {
		CHECK_STR(v.path, "/tmp/a\\01b\\\\c\\");
		free(v.path);
	}
}

TEST(maps_line_huge_fields)
{
	struct pm_vma v;

	if (CHECK_EQ_INT(procfs_parse_maps_line(
		"0000000000000000-ffffffffffffffff r--p ffffffffffffffff ffffffff:ffffffff 18446744073709551615 /x",
		&v), 0)) {
		CHECK_EQ_U64(v.start, 0);
		CHECK_EQ_U64(v.end, UINT64_MAX);
		CHECK_EQ_U64(v.pgoff, UINT64_MAX);
		CHECK_EQ_U64(v.dev_major, UINT32_MAX);
		CHECK_EQ_U64(v.dev_minor, UINT32_MAX);
		CHECK_EQ_U64(v.ino, UINT64_MAX);
		CHECK_STR(v.path, "/x");
		free(v.path);
	}
	/* Offsets past 4 GiB and majors wider than two digits. */
	if (CHECK_EQ_INT(procfs_parse_maps_line(
		"7f0000000000-7f0000200000 r--s 1a2b3c4d000 103:2a 42          /dev/dri/card0",
		&v), 0)) {
		CHECK_EQ_U64(v.pgoff, 0x1a2b3c4d000ULL);
		CHECK_EQ_U64(v.dev_major, 0x103);
		CHECK_EQ_U64(v.dev_minor, 0x2a);
		CHECK_STR(v.perms, "r--s");
		free(v.path);
	}
}

TEST(maps_line_trailing_newline)
{
	struct pm_vma v;

	if (CHECK_EQ_INT(procfs_parse_maps_line(
		"7f00-7f01 rw-p 00000000 00:00 0          [heap]\nignored", &v), 0)) {
		CHECK_STR(v.path, "[heap]");
		free(v.path);
	}
}

TEST(maps_line_malformed)
{
	static const char *const bad[] = {
		"",
		"\n",
		"garbage",
		"7f00-7f01",
		"7f00 7f01 rw-p 00000000 00:00 0",
		"7f00-7f01 rw-p 00000000 00:00",
		"7f00-7f01 rw-p 00000000 00:00 ",
		"7f00-7f01 rwxq 00000000 00:00 0",
		"7f00-7f01 xw-p 00000000 00:00 0",
		"7f00-7f01 rw- 00000000 00:00 0",
		"7f00-7f01 rw-p00000000 00:00 0",
		"7f00-7f01  rw-p 00000000 00:00 0",
		"7f00-7f01\trw-p 00000000 00:00 0",
		"7f00-7f01 rw-p 00000000 0000 0",
		"7f00-7f01 rw-p 00000000 00: 0",
		"7f00-7f01 rw-p 00000000 :00 0",
		"7f00-7f01 rw-p 00000000 00:00 12ab /x",
		"7f00-7f01 rw-p 00000000 00:00 0x1",
		"7f00-7f01 rw-p 00000000 00:00 -1",
		"7f00-7f01 rw-p zz 00:00 0",
		"7f00-7f01 rw-p  00000000 00:00 0",
		"7f01-7f00 rw-p 00000000 00:00 0",
		"-7f01 rw-p 00000000 00:00 0",
		"7f00- rw-p 00000000 00:00 0",
		" 7f00-7f01 rw-p 00000000 00:00 0",
		"0x7f00-0x7f01 rw-p 00000000 00:00 0",
		"7g00-7f01 rw-p 00000000 00:00 0",
		/* overflow is an error, never a wrap */
		"10000000000000000-10000000000000001 rw-p 00000000 00:00 0",
		"7f00-7f01 rw-p 10000000000000000 00:00 0",
		"7f00-7f01 rw-p 00000000 100000000:00 0",
		"7f00-7f01 rw-p 00000000 00:100000000 0",
		"7f00-7f01 rw-p 00000000 00:00 18446744073709551616",
		"7f00-7f01 rw-p 00000000 00:00 99999999999999999999999 /x",
	};
	struct pm_vma v;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&v, 0xa5, sizeof(v));
		if (!CHECK_EQ_INT(procfs_parse_maps_line(bad[i], &v), -EINVAL))
			fprintf(stderr, "  line: \"%s\"\n", bad[i]);
		CHECK(v.path == NULL);
	}
	CHECK_EQ_INT(procfs_parse_maps_line(NULL, &v), -EINVAL);
	CHECK_EQ_INT(procfs_parse_maps_line("7f00-7f01 rw-p 0 00:00 0", NULL),
		     -EINVAL);
}

/*
 * Every prefix of a line: until the inode has a digit the line is
 * incomplete and must be refused; after that it is a valid (shorter) line.
 */
TEST(maps_line_prefixes)
{
	static const char line[] =
		"7f2c2a904000-7f2c2a906000 r--p 00000000 fe:00 1234    /home/x y.so (deleted)";
	size_t ino = strstr(line, "1234") - line;
	struct pm_maps m;
	size_t k, bad = 0;
	int err, want;

	for (k = 0; k <= sizeof(line) - 1; k++) {
		/* zero bytes is an empty file, not a broken line */
		want = k == 0 || k > ino ? 0 : -EINVAL;
		err = maps_n(line, k, &m);
		if (err != want || m.n != (k > ino)) {
			fprintf(stderr, "  prefix %zu: err %d n %zu\n", k, err, m.n);
			bad++;
		}
		procfs_maps_free(&m);
	}
	CHECK_EQ_U64(bad, 0);
}

/* ---- maps: whole files -------------------------------------------------- */

TEST(maps_file_sample)
{
	struct pm_maps m;
	size_t i;

	if (!CHECK_EQ_INT(maps_of(maps_sample, &m), 0))
		return;
	if (!CHECK_EQ_U64(m.n, 19))
		goto out;
	CHECK_STR(m.v[0].path, "/usr/bin/head");
	CHECK_EQ_U64(m.v[2].pgoff, 0xb000);
	CHECK_STR(m.v[3].path, "[heap]");
	CHECK_STR(m.v[4].path, "");
	CHECK_STR(m.v[5].perms, "---p");
	CHECK_STR(m.v[7].path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK_EQ_U64(m.v[7].pgoff, 0x28000);
	CHECK_STR(m.v[8].path, "/memfd:wayland-shm");
	CHECK(m.v[8].deleted);
	CHECK_EQ_U64(m.v[8].dev_minor, 1);
	CHECK_STR(m.v[9].path, "/dev/zero");
	CHECK(m.v[9].deleted);
	CHECK_STR(m.v[10].path, "/SYSV00000000");
	CHECK(m.v[10].deleted);
	CHECK_STR(m.v[11].path, "[anon:glibc malloc]");
	CHECK_STR(m.v[12].path, "[anon_shmem:jit cache]");
	CHECK_STR(m.v[13].path, "/home/user/My Documents/lib with  spaces.so");
	CHECK_STR(m.v[15].path, "[vvar_vclock]");
	CHECK_STR(m.v[18].path, "[vsyscall]");
	CHECK_EQ_U64(m.v[18].start, 0xffffffffff600000ULL);
	for (i = 0; i < m.n; i++) {
		if (!CHECK(m.v[i].path && m.v[i].end > m.v[i].start &&
			   m.v[i].rss == 0))
			break;
	}
out:
	procfs_maps_free(&m);
	CHECK(m.v == NULL && m.n == 0);
}

TEST(maps_file_edges)
{
	static const char cut[] = "7f00-7f01 rw-p 0 00:00 0   /abc\nJUNK";
	static const char nul_path[] = "7f00-7f01 rw-p 0 00:00 0   /a\0b\n";
	static const char nul_addr[] = "7f00-7f\0""01 rw-p 0 00:00 0\n";
	struct pm_maps m;

	/* empty input: no VMAs, nothing allocated */
	CHECK_EQ_INT(maps_of("", &m), 0);
	CHECK(m.v == NULL && m.n == 0);
	CHECK_EQ_INT(procfs_parse_maps(NULL, 0, &m), 0);
	CHECK_EQ_INT(procfs_parse_maps(NULL, 5, &m), -EINVAL);
	CHECK_EQ_INT(procfs_parse_maps("x", 1, NULL), -EINVAL);

	/* no final newline */
	if (CHECK_EQ_INT(maps_of("7f00-7f01 rw-p 0 00:00 0 \n"
				 "7f01-7f02 r--p 0 00:00 0    [heap]", &m), 0)) {
		CHECK_EQ_U64(m.n, 2);
		CHECK_STR(m.n == 2 ? m.v[1].path : NULL, "[heap]");
		procfs_maps_free(&m);
	}

	/* blank lines are skipped */
	if (CHECK_EQ_INT(maps_of("\n7f00-7f01 rw-p 0 00:00 0\n\n", &m), 0)) {
		CHECK_EQ_U64(m.n, 1);
		procfs_maps_free(&m);
	}

	/* a bad line anywhere fails the whole file and frees what was built */
	CHECK_EQ_INT(maps_of("7f00-7f01 rw-p 0 00:00 0   /a\n"
			     "7f01-7f02 rw-p 0 00:00\n"
			     "7f02-7f03 rw-p 0 00:00 0   /b\n", &m), -EINVAL);
	CHECK(m.v == NULL && m.n == 0);
	CHECK_EQ_INT(maps_of("7f00-7f01 rw-p 0 00:00 0   /a\nRss: 4 kB\n", &m),
		     -EINVAL);

	/* len is honoured: the text after it is never looked at */
	if (CHECK_EQ_INT(maps_n(cut, strstr(cut, "/abc") - cut + 2, &m), 0)) {
		CHECK_EQ_U64(m.n, 1);
		CHECK_STR(m.n ? m.v[0].path : NULL, "/a");
		procfs_maps_free(&m);
	}

	/* a NUL inside the given length is not a path byte */
	CHECK_EQ_INT(maps_n(nul_path, sizeof(nul_path) - 1, &m), -EINVAL);
	CHECK_EQ_INT(maps_n(nul_addr, sizeof(nul_addr) - 1, &m), -EINVAL);
}

/* Enough lines to make the VMA array grow several times. */
TEST(maps_file_many)
{
	size_t n = 1000, i, len = 0, bad = 0;
	char *text = malloc(n * 64);
	struct pm_maps m;

	for (i = 0; i < n; i++)
		len += sprintf(text + len, "%zx-%zx rw-p %zx 00:00 %zu   /f%zu\n",
			       i * 0x1000, (i + 1) * 0x1000, i, i, i);
	if (CHECK_EQ_INT(maps_n(text, len, &m), 0) && CHECK_EQ_U64(m.n, n)) {
		for (i = 0; i < n; i++) {
			char want[32];

			snprintf(want, sizeof(want), "/f%zu", i);
			if (m.v[i].start != i * 0x1000 || m.v[i].ino != i ||
			    m.v[i].pgoff != i || strcmp(m.v[i].path, want))
				bad++;
		}
		CHECK_EQ_U64(bad, 0);
	}
	procfs_maps_free(&m);
	free(text);
}

/* ---- smaps -------------------------------------------------------------- */

TEST(smaps_sample_parse)
{
	struct pm_maps m;

	if (!CHECK_EQ_INT(smaps_of(smaps_sample, &m), 0))
		return;
	if (!CHECK_EQ_U64(m.n, 4))
		goto out;
	CHECK_STR(m.v[0].path, "[heap]");
	CHECK_EQ_U64(m.v[0].rss, 12 * 1024);
	CHECK_EQ_U64(m.v[0].pss, 10 * 1024);	/* not Pss_Dirty */
	CHECK_EQ_U64(m.v[0].anon, 8 * 1024);
	CHECK_EQ_U64(m.v[0].anon_huge, 0);
	CHECK_EQ_U64(m.v[0].swap, 4 * 1024);	/* not SwapPss */
	CHECK_EQ_U64(m.v[0].swap_pss, 77 * 1024);
	CHECK_EQ_U64(m.v[0].pss_dirty, 99 * 1024);
	CHECK_EQ_U64(m.v[0].locked, 12 * 1024);

	CHECK_STR(m.v[1].path, "");
	CHECK_EQ_U64(m.v[1].end - m.v[1].start, 4096 * 1024);
	CHECK_EQ_U64(m.v[1].rss, 4096 * 1024);
	CHECK_EQ_U64(m.v[1].anon_huge, 4096 * 1024);
	CHECK_EQ_U64(m.v[1].locked, 0);		/* no line: 0 */
	CHECK_EQ_U64(m.v[1].swap_pss, 0);

	CHECK_STR(m.v[2].path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK_EQ_U64(m.v[2].rss, 160 * 1024);
	CHECK_EQ_U64(m.v[2].pss, 32 * 1024);	/* not Pss_Anon */
	CHECK_EQ_U64(m.v[2].anon, 0);
	CHECK_EQ_U64(m.v[2].pss_anon, 0);
	CHECK_EQ_U64(m.v[2].pss_file, 7 * 1024);

	CHECK_STR(m.v[3].path, "[vsyscall]");
	CHECK_EQ_U64(m.v[3].rss, 0);
out:
	procfs_maps_free(&m);
}

/* VmFlags: the flags maps does not show, by their two letters. */
TEST(smaps_vm_flags)
{
	static const char text[] =
		"7f0000000000-7f0000400000 rw-s 00000000 00:10 1038      anon_inode:bpf-map\n"
		"Rss:                4096 kB\n"
		"VmFlags: rd wr sh mr mw ms de dd mm \n"
		"7f0000400000-7f0000500000 rw-s 000f0000 00:05 7         /dev/mem\n"
		"VmFlags: rd wr sh mr mw ms io pf de dd\n"
		"7f0000500000-7f0000600000 rw-p 00000000 00:00 0 \n"
		"VmFlags: rd wr mr mw me lo ac mmx pfx  \n"
		"7f0000600000-7f0000700000 rw-p 00000000 00:00 0 \n"
		"Rss:                   4 kB\n";
	struct pm_maps m;

	if (!CHECK_EQ_INT(smaps_of(text, &m), 0))
		return;
	if (CHECK_EQ_U64(m.n, 4)) {
		CHECK_EQ_U64(m.v[0].vm_flags, MW_VM_MIXEDMAP);
		CHECK_EQ_U64(m.v[1].vm_flags, MW_VM_PFNMAP | MW_VM_IO);
		/* Three letters are not two: no flag. */
		CHECK_EQ_U64(m.v[2].vm_flags, MW_VM_LOCKED);
		CHECK(m.v[0].has_vm_flags && m.v[2].has_vm_flags && !m.v[3].has_vm_flags);
		CHECK_EQ_U64(m.v[3].vm_flags, 0);
	}
	procfs_maps_free(&m);
}

TEST(smaps_rollup)
{
	struct pm_maps m;

	if (!CHECK_EQ_INT(smaps_of(smaps_rollup_sample, &m), 0))
		return;
	if (CHECK_EQ_U64(m.n, 1)) {
		CHECK_STR(m.v[0].path, "[rollup]");
		CHECK_EQ_U64(m.v[0].rss, 1744 * 1024);
		CHECK_EQ_U64(m.v[0].pss, 526 * 1024);
		CHECK_EQ_U64(m.v[0].anon, 112 * 1024);
		CHECK_EQ_U64(m.v[0].pss_dirty, 112 * 1024);
		CHECK_EQ_U64(m.v[0].pss_anon, 112 * 1024);
		CHECK_EQ_U64(m.v[0].pss_file, 414 * 1024);
		CHECK_EQ_U64(m.v[0].pss_shmem, 0);
		CHECK_EQ_U64(m.v[0].locked, 0);
	}
	procfs_maps_free(&m);
}

/* smaps with counters is still a valid maps file for the smaps parser. */
TEST(smaps_plain_maps)
{
	struct pm_maps m;

	if (CHECK_EQ_INT(smaps_of(maps_sample, &m), 0)) {
		CHECK_EQ_U64(m.n, 19);
		procfs_maps_free(&m);
	}
	CHECK_EQ_INT(smaps_of("", &m), 0);
	CHECK(m.v == NULL && m.n == 0);
}

TEST(smaps_huge_values)
{
	struct pm_maps m;
	/* UINT64_MAX / 1024 kB is the most that fits in bytes */
	static const char ok[] = "7f00-7f01 rw-p 0 00:00 0\n"
				 "Rss:  18014398509481983 kB\n";

	if (CHECK_EQ_INT(smaps_of(ok, &m), 0)) {
		CHECK_EQ_U64(m.v[0].rss, 18014398509481983ULL * 1024);
		procfs_maps_free(&m);
	}
	CHECK_EQ_INT(smaps_of("7f00-7f01 rw-p 0 00:00 0\n"
			      "Rss:  18014398509481984 kB\n", &m), -EINVAL);
	CHECK_EQ_INT(smaps_of("7f00-7f01 rw-p 0 00:00 0\n"
			      "Swap: 99999999999999999999999 kB\n", &m), -EINVAL);
	/* an unused counter may hold anything */
	CHECK_EQ_INT(smaps_of("7f00-7f01 rw-p 0 00:00 0\n"
			      "Size: 99999999999999999999999 kB\n", &m), 0);
	procfs_maps_free(&m);
}

TEST(smaps_malformed)
{
	static const char *const bad[] = {
		"Rss: 4 kB\n7f00-7f01 rw-p 0 00:00 0\n",	/* counter first */
		"7f00-7f01 rw-p 0 00:00 0\nRss 4 kB\n",	/* no colon */
		"7f00-7f01 rw-p 0 00:00 0\n: 4 kB\n",		/* no key */
		"7f00-7f01 rw-p 0 00:00 0\nRss: x kB\n",
		"7f00-7f01 rw-p 0 00:00 0\nRss: 4\n",		/* no unit */
		"7f00-7f01 rw-p 0 00:00 0\nRss: 4 MB\n",
		"7f00-7f01 rw-p 0 00:00 0\nRss: 4 kBx\n",
		"7f00-7f01 rw-p 0 00:00 0\nRss: -4 kB\n",
		"7f00-7f01 rw-p 0 00:00 0\nRss:\n",
		"7f00-7f01 rw-p 0 00:00 0\nPss: 4 kB 5\n",
		"7f00-7f01 rw-p 0 00:00 0\nAnonymous: 1 2 kB\n",
		"7f00-7f01 rw-p 0 00:00 0\nLocked: 4 pages\n",
		"7f00-7f01 rw-p 0 00:00 0\nSwapPss: -1 kB\n",
		"7f00-7f01 rw-p 0 00:00\nRss: 4 kB\n",	/* bad header */
		"7f00-7f01 rw-p 0 00:00 0\n7f01-7f02 rw-q 0 00:00 0\n",
	};
	struct pm_maps m;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!CHECK_EQ_INT(smaps_of(bad[i], &m), -EINVAL))
			fprintf(stderr, "  text: \"%s\"\n", bad[i]);
		CHECK(m.v == NULL && m.n == 0);
	}
	/* trailing blanks after kB are fine */
	if (CHECK_EQ_INT(smaps_of("7f00-7f01 rw-p 0 00:00 0\nRss:\t4 kB \n", &m), 0))
		CHECK_EQ_U64(m.v[0].rss, 4096);
	procfs_maps_free(&m);
}

/* Every prefix of smaps: never a crash, and a clean cut at a line is OK. */
TEST(smaps_prefixes)
{
	size_t len = sizeof(smaps_sample) - 1, k, bad = 0;
	struct pm_maps m;
	int err;

	for (k = 0; k <= len; k++) {
		err = smaps_n(smaps_sample, k, &m);
		if (err != 0 && err != -EINVAL)
			bad++;
		if (k && smaps_sample[k - 1] == '\n' && err)
			bad++;
		procfs_maps_free(&m);
	}
	CHECK_EQ_U64(bad, 0);
}

/* ---- status ------------------------------------------------------------- */

TEST(status_sample_parse)
{
	struct pm_status st;

	if (!CHECK_EQ_INT(status_of(status_sample, &st), 0))
		return;
	CHECK_STR(st.name, "cat");
	CHECK_EQ_INT(st.state, 'R');
	CHECK_EQ_INT(st.tgid, 3014);
	CHECK_EQ_INT(st.ppid, 3006);
	CHECK_EQ_U64(st.vm_peak, 3100 * 1024);
	CHECK_EQ_U64(st.vm_size, 3060 * 1024);
	CHECK_EQ_U64(st.vm_hwm, 1700 * 1024);
	CHECK_EQ_U64(st.vm_rss, 1612 * 1024);
	CHECK_EQ_U64(st.rss_anon, 116 * 1024);
	CHECK_EQ_U64(st.rss_file, 1492 * 1024);
	CHECK_EQ_U64(st.rss_shmem, 4 * 1024);
	CHECK_EQ_U64(st.vm_swap, 8 * 1024);
	CHECK_EQ_INT(st.threads, 3);
	CHECK(!st.kernel_thread);
}

TEST(status_kthread)
{
	struct pm_status st;

	if (!CHECK_EQ_INT(status_of(status_kthread_sample, &st), 0))
		return;
	CHECK_STR(st.name, "kthreadd");
	CHECK_EQ_INT(st.state, 'S');
	CHECK_EQ_INT(st.tgid, 2);
	CHECK_EQ_INT(st.ppid, 0);
	CHECK_EQ_INT(st.threads, 1);
	CHECK(st.kernel_thread);
	CHECK_EQ_U64(st.vm_size + st.vm_rss + st.vm_peak + st.rss_anon, 0);
}

TEST(status_names)
{
	static const struct {
		const char *line, *name;
	} t[] = {
		{ "Name:\tWeb Content\n", "Web Content" },
		{ "Name:\ta\\nb\\\\c\n", "a\\nb\\\\c" },	/* escapes kept */
		{ "Name:\t \tlead\n", " \tlead" },		/* only tabs skipped */
		{ "Name:\tx: y)\n", "x: y)" },
		{ "Name:\t\n", "" },
		{ "Name:\n", "" },
	};
	static const char rest[] = "State:\tS\nTgid:\t1\nPPid:\t0\nThreads:\t1\n";
	struct pm_status st;
	char text[256];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(text, sizeof(text), "%s%s", t[i].line, rest);
		if (CHECK_EQ_INT(status_of(text, &st), 0))
			CHECK_STR(st.name, t[i].name);
	}
	/* a name longer than the field is cut, NUL-terminated */
	snprintf(text, sizeof(text), "Name:\t%080d\n%s", 7, rest);
	if (CHECK_EQ_INT(status_of(text, &st), 0)) {
		CHECK_EQ_U64(strlen(st.name), 63);
		CHECK(st.name[0] == '0' && st.name[62] == '0');
	}
}

TEST(status_huge_values)
{
	static const char base[] =
		"Name:\tx\nState:\tR\nTgid:\t2147483647\nPPid:\t1\nThreads:\t2147483647\n";
	struct pm_status st;
	char text[512];

	snprintf(text, sizeof(text), "%sVmSize:\t18014398509481983 kB\n", base);
	if (CHECK_EQ_INT(status_of(text, &st), 0)) {
		CHECK_EQ_U64(st.vm_size, 18014398509481983ULL * 1024);
		CHECK_EQ_INT(st.tgid, 2147483647);
		CHECK_EQ_INT(st.threads, 2147483647);
	}
	snprintf(text, sizeof(text), "%sVmSize:\t18014398509481984 kB\n", base);
	CHECK_EQ_INT(status_of(text, &st), -EINVAL);
	CHECK_EQ_INT(status_of("Name:\tx\nState:\tR\nTgid:\t2147483648\n"
			       "PPid:\t1\nThreads:\t1\n", &st), -EINVAL);
	CHECK_EQ_INT(status_of("Name:\tx\nState:\tR\nTgid:\t1\n"
			       "PPid:\t1\nThreads:\t99999999999999999999999\n", &st),
		     -EINVAL);
}

TEST(status_malformed)
{
	static const char *const bad[] = {
		"",
		"\n",
		"garbage\n",
		/* each required key missing in turn */
		"State:\tR\nTgid:\t1\nPPid:\t0\nThreads:\t1\n",
		"Name:\tx\nTgid:\t1\nPPid:\t0\nThreads:\t1\n",
		"Name:\tx\nState:\tR\nPPid:\t0\nThreads:\t1\n",
		"Name:\tx\nState:\tR\nTgid:\t1\nThreads:\t1\n",
		"Name:\tx\nState:\tR\nTgid:\t1\nPPid:\t0\n",
		/* bad values of keys we use */
		"Name:\tx\nState:\t\nTgid:\t1\nPPid:\t0\nThreads:\t1\n",
		"Name:\tx\nState:\tR\nTgid:\t-1\nPPid:\t0\nThreads:\t1\n",
		"Name:\tx\nState:\tR\nTgid:\t1 2\nPPid:\t0\nThreads:\t1\n",
		"Name:\tx\nState:\tR\nTgid:\t\nPPid:\t0\nThreads:\t1\n",
		"Name:\tx\nState:\tR\nTgid:\t1\nPPid:\t0\nThreads:\tmany\n",
		"Name:\tx\nState:\tR\nTgid:\t1\nPPid:\t0\nThreads:\t1\nVmRSS:\t12\n",
		"Name:\tx\nState:\tR\nTgid:\t1\nPPid:\t0\nThreads:\t1\nVmRSS:\tabc kB\n",
		"Name:\tx\nState:\tR\nTgid:\t1\nPPid:\t0\nThreads:\t1\nVmSwap:\t1 MB\n",
		/* a line that is not "Key:" */
		"Name:\tx\nState:\tR\nTgid:\t1\nPPid:\t0\nThreads:\t1\nSigQ 0/1\n",
	};
	struct pm_status st;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&st, 0xa5, sizeof(st));
		if (!CHECK_EQ_INT(status_of(bad[i], &st), -EINVAL))
			fprintf(stderr, "  text: \"%s\"\n", bad[i]);
		CHECK(st.name[0] == '\0' && st.tgid == 0 && st.vm_rss == 0);
	}
	CHECK_EQ_INT(procfs_parse_status(NULL, 0, &st), -EINVAL);
	CHECK_EQ_INT(procfs_parse_status("", 0, NULL), -EINVAL);
	/* CRLF or blank lines: trailing blanks are tolerated, blank lines skipped */
	CHECK_EQ_INT(status_of("Name:\tx\n\nState:\tR\nTgid:\t1 \nPPid:\t0\n"
			       "Threads:\t1\n", &st), 0);
}

/* Any cut before "Threads:\t3" is incomplete; whole lines after it are fine. */
TEST(status_prefixes)
{
	const char *thr = strstr(status_sample, "Threads:\t3\n");
	size_t len = sizeof(status_sample) - 1, k, bad = 0;
	size_t need = thr - status_sample + strlen("Threads:\t3");
	struct pm_status st;
	int err;

	for (k = 0; k <= len; k++) {
		err = status_n(status_sample, k, &st);
		if (k < need && err != -EINVAL)
			bad++;
		if (k >= need && status_sample[k - 1] == '\n' && err)
			bad++;
		if (err != 0 && err != -EINVAL)
			bad++;
		if (!err && (st.tgid != 3014 || st.threads != 3 ||
			     st.vm_rss != 1612 * 1024))
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
}

/* ---- stat --------------------------------------------------------------- */

TEST(stat_sample_parse)
{
	struct pm_stat st;

	if (!CHECK_EQ_INT(stat_of(stat_sample, &st), 0))
		return;
	CHECK_EQ_INT(st.state, 'R');
	CHECK_EQ_U64(st.minflt, 101);
	CHECK_EQ_U64(st.majflt, 7);
	CHECK_EQ_U64(st.start_stack, 140734968567936ULL);
	CHECK_EQ_U64(st.start_brk, 93848744230912ULL);
	CHECK_EQ_U64(st.brk, 0);	/* not in stat: field 48 is arg_start */
}

TEST(stat_kthread)
{
	struct pm_stat st;

	if (!CHECK_EQ_INT(stat_of(stat_kthread_sample, &st), 0))
		return;
	CHECK_EQ_INT(st.state, 'S');
	CHECK_EQ_U64(st.minflt + st.majflt + st.brk + st.start_brk + st.start_stack, 0);
}

/* comm is raw in stat: spaces, parens and newlines included. */
TEST(stat_tricky_comm)
{
	static const char *const comms[] = {
		"a b", "x) R 1 2 3 (y", ")", "((", "a\nb", "", ") 5 5 5 5 5 5 5 5 5",
	};
	const char *tail = strchr(stat_sample, ')') + 1;
	struct pm_stat st;
	char text[1024];
	size_t i;

	for (i = 0; i < sizeof(comms) / sizeof(comms[0]); i++) {
		snprintf(text, sizeof(text), "42 (%s)%s", comms[i], tail);
		if (!CHECK_EQ_INT(stat_of(text, &st), 0))
			continue;
		CHECK_EQ_U64(st.minflt, 101);
		CHECK_EQ_U64(st.start_brk, 93848744230912ULL);
	}
}

/* "1 (x) f3 ... f52\n" with every field "0" unless @f[i] says otherwise. */
static void make_stat(char *buf, size_t size, const char *const f[53])
{
	size_t len = snprintf(buf, size, "1 (x)");
	int i;

	for (i = 3; i <= 52; i++)
		len += snprintf(buf + len, size - len, " %s", f[i] ? f[i] : "0");
	snprintf(buf + len, size - len, "\n");
}

TEST(stat_huge_values)
{
	const char *f[53] = { NULL };
	struct pm_stat st;
	char text[1024];

	f[3] = "S";
	f[8] = "-1";
	f[10] = "18446744073709551615";
	f[12] = "18446744073709551614";
	f[19] = "-20";
	f[28] = "18446744073709551615";
	f[47] = "18446744073709551615";
	f[48] = "12345";
	make_stat(text, sizeof(text), f);
	if (CHECK_EQ_INT(stat_of(text, &st), 0)) {
		CHECK_EQ_INT(st.state, 'S');
		CHECK_EQ_U64(st.minflt, UINT64_MAX);
		CHECK_EQ_U64(st.majflt, UINT64_MAX - 1);
		CHECK_EQ_U64(st.start_stack, UINT64_MAX);
		CHECK_EQ_U64(st.start_brk, UINT64_MAX);
		CHECK_EQ_U64(st.brk, 0);
	}
	f[10] = "18446744073709551616";
	make_stat(text, sizeof(text), f);
	CHECK_EQ_INT(stat_of(text, &st), -EINVAL);
	f[10] = "0";
	f[47] = "-1";		/* a field we keep must be unsigned */
	make_stat(text, sizeof(text), f);
	CHECK_EQ_INT(stat_of(text, &st), -EINVAL);
	f[47] = "0";
	f[30] = "--1";
	make_stat(text, sizeof(text), f);
	CHECK_EQ_INT(stat_of(text, &st), -EINVAL);
}

TEST(stat_malformed)
{
	const char *tail = strchr(stat_sample, ')') + 1;
	static const char *const bad[] = {
		"",
		"\n",
		"garbage",
		"1 (x",
		"1 (x)",
		"1 (x) R",
		"(x) R 1 2 3",
		"x (y) R 1",
		"1(x) R 1",
		"1 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 26\n",
	};
	struct pm_stat st;
	char text[1024];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!CHECK_EQ_INT(stat_of(bad[i], &st), -EINVAL))
			fprintf(stderr, "  text: \"%s\"\n", bad[i]);
	}
	/* 46 fields, one short of start_brk; 47 is enough */
	snprintf(text, sizeof(text), "1 (x) S");
	for (i = 4; i <= 46; i++)
		strcat(text, " 0");
	CHECK_EQ_INT(stat_of(text, &st), -EINVAL);
	strcat(text, " 4096");
	if (CHECK_EQ_INT(stat_of(text, &st), 0))
		CHECK_EQ_U64(st.start_brk, 4096);
	/* state must be one character */
	snprintf(text, sizeof(text), "1 (x) RS%s", tail + 2);
	CHECK_EQ_INT(stat_of(text, &st), -EINVAL);
	/* double space, non-numeric field, trailing space */
	snprintf(text, sizeof(text), "1 (x) R  %s", tail + 3);
	CHECK_EQ_INT(stat_of(text, &st), -EINVAL);
	snprintf(text, sizeof(text), "1 (x) R x%s", tail + 3);
	CHECK_EQ_INT(stat_of(text, &st), -EINVAL);
	snprintf(text, sizeof(text), "1 (x)%.*s \n", (int)strlen(tail) - 1, tail);
	CHECK_EQ_INT(stat_of(text, &st), -EINVAL);
	CHECK_EQ_INT(procfs_parse_stat(NULL, 0, &st), -EINVAL);
	CHECK_EQ_INT(procfs_parse_stat("1 (x) R", 7, NULL), -EINVAL);
	/* on failure nothing half-parsed is left behind */
	CHECK(st.state == 0 && st.minflt == 0);
}

/* Cuts before field 47 has a digit fail; later cuts fail only on a space. */
TEST(stat_prefixes)
{
	size_t len = sizeof(stat_sample) - 1, k, bad = 0, f47 = 0;
	struct pm_stat st;
	int field = 2, err;
	const char *p;

	for (p = strchr(stat_sample, ')') + 1; *p && !f47; p++) {
		if (*p == ' ' && ++field == 47)
			f47 = p + 1 - stat_sample;
	}
	if (!CHECK(f47 > 0))
		return;
	for (k = 0; k <= len; k++) {
		int want = k > f47 && stat_sample[k - 1] != ' ' ? 0 : -EINVAL;

		err = stat_n(stat_sample, k, &st);
		if (err != want) {
			fprintf(stderr, "  prefix %zu: err %d want %d\n", k, err, want);
			bad++;
		}
	}
	CHECK_EQ_U64(bad, 0);
}

/* ---- mutation fuzz ------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Bytes the parsers care about, so mutations hit interesting paths. */
static const char fuzz_alphabet[] = "0123456789abcdefABCDEF-: ()\n\t\\kBrwxps\0\377";

static size_t mutate(char *buf, size_t len, size_t cap)
{
	int rounds = 1 + rng() % 4;
	size_t pos;

	while (rounds--) {
		pos = len ? rng() % len : 0;
		switch (rng() % 5) {
		case 0:		/* replace */
		case 1:
			if (len)
				buf[pos] = fuzz_alphabet[rng() % (sizeof(fuzz_alphabet) - 1)];
			break;
		case 2:		/* delete */
			if (len) {
				memmove(buf + pos, buf + pos + 1, len - pos - 1);
				len--;
			}
			break;
		case 3:		/* insert */
			if (len < cap) {
				memmove(buf + pos + 1, buf + pos, len - pos);
				buf[pos] = fuzz_alphabet[rng() % (sizeof(fuzz_alphabet) - 1)];
				len++;
			}
			break;
		case 4:		/* truncate */
			len = pos;
			break;
		}
	}
	return len;
}

static bool maps_sane(const struct pm_maps *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (!m->v[i].path || m->v[i].end < m->v[i].start ||
		    strlen(m->v[i].perms) != 4)
			return false;
	}
	return true;
}

/*
 * Feed mutated samples to every parser.  The oracle is modest (0 or
 * -EINVAL, sane output); the real check is ASan/UBSan staying quiet.
 */
TEST(fuzz_parsers)
{
	static const char *const seeds[] = {
		maps_sample, smaps_sample, smaps_rollup_sample, status_sample,
		status_kthread_sample, stat_sample, stat_kthread_sample,
	};
	size_t s, i, len, bad = 0, cap = 8192;
	char *buf = malloc(cap);
	struct pm_status status;
	struct pm_stat stat;
	struct pm_maps m;
	struct pm_vma v;
	char line[512];
	int err;

	for (s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		for (i = 0; i < 1500; i++) {
			len = strlen(seeds[s]);
			memcpy(buf, seeds[s], len);
			len = mutate(buf, len, cap);

			err = maps_n(buf, len, &m);
			if ((err && err != -EINVAL) || !maps_sane(&m))
				bad++;
			procfs_maps_free(&m);
			err = smaps_n(buf, len, &m);
			if ((err && err != -EINVAL) || !maps_sane(&m))
				bad++;
			procfs_maps_free(&m);
			err = status_n(buf, len, &status);
			if (err && err != -EINVAL)
				bad++;
			err = stat_n(buf, len, &stat);
			if (err && err != -EINVAL)
				bad++;

			/* the line parser takes a C string: cut at the first NUL */
			snprintf(line, sizeof(line), "%.*s",
				 (int)(len < sizeof(line) - 1 ? len : sizeof(line) - 1), buf);
			err = procfs_parse_maps_line(line, &v);
			if (err && err != -EINVAL)
				bad++;
			if (!err)
				free(v.path);
		}
	}
	CHECK_EQ_U64(bad, 0);
	free(buf);
}

/* ---- readers, on this process ------------------------------------------- */

static const struct pm_vma *find_vma(const struct pm_maps *m, uint64_t addr)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (addr >= m->v[i].start && addr < m->v[i].end)
			return &m->v[i];
	}
	return NULL;
}

static const struct pm_vma *find_path(const struct pm_maps *m, const char *path)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		if (!strcmp(m->v[i].path, path))
			return &m->v[i];
	}
	return NULL;
}

/*
 * An anonymous region with VMAs of its own: PROT_NONE guard pages on each
 * side stop it merging with a neighbour, and MADV_NOHUGEPAGE keeps (m)THP
 * from faulting in more pages than we touch.  Returns the usable part.
 */
static char *map_region(size_t pages)
{
	uint64_t ps = page_size();
	char *base;

	base = mmap(NULL, (pages + 2) * ps, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	if (mprotect(base + ps, pages * ps, PROT_READ | PROT_WRITE)) {
		munmap(base, (pages + 2) * ps);
		return NULL;
	}
	madvise(base + ps, pages * ps, MADV_NOHUGEPAGE);	/* EINVAL without THP: fine */
	return base + ps;
}

static void unmap_region(char *r, size_t pages)
{
	uint64_t ps = page_size();

	munmap(r - ps, (pages + 2) * ps);
}

TEST(live_pagemap_anon)
{
	uint64_t ps = page_size(), anon, file;
	uintptr_t a;
	char *r = map_region(64);
	int i;

	if (!CHECK(r))
		return;
	a = (uintptr_t)r;
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), a, a + 64 * ps, &anon, &file), 0);
	CHECK_EQ_U64(anon, 0);
	CHECK_EQ_U64(file, 0);

	for (i = 0; i < 10; i++)
		r[i * ps] = 1;
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), a, a + 64 * ps, &anon, &file), 0);
	CHECK_EQ_U64(anon, 10 * ps);
	CHECK_EQ_U64(file, 0);

	/* a window over touched and untouched pages */
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), a + 5 * ps, a + 15 * ps, &anon, &file), 0);
	CHECK_EQ_U64(anon, 5 * ps);
	/* unaligned ends round outwards: pages 1 and 2 */
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), a + ps + 1, a + 3 * ps - 1, &anon, &file), 0);
	CHECK_EQ_U64(anon, 2 * ps);
	/* empty and inverted ranges count nothing */
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), a, a, &anon, &file), 0);
	CHECK_EQ_U64(anon + file, 0);
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), a + ps, a, &anon, &file), 0);
	CHECK_EQ_U64(anon + file, 0);
	unmap_region(r, 64);
}

/* The RSS smaps gives our mapping at r, -1 if it cannot be read. */
static int64_t smaps_rss_at(const char *r)
{
	const struct pm_vma *v;
	struct pm_maps m;
	int64_t rss;

	if (procfs_read_smaps(getpid(), &m))
		return -1;
	v = find_vma(&m, (uintptr_t)r);
	rss = v ? (int64_t)v->rss : -1;
	procfs_maps_free(&m);
	return rss;
}

/* Read and never written: the page table maps the zero page, which pagemap
 * shows present and the RSS counters and smaps do not count (a Go binary's
 * .bss: +72 KiB in every re-measure).  Told apart by its frame, which the
 * kernel shows to root only: elsewhere it stays counted.  Some kernels give
 * every read fault a page of its own (a 6.18 build here): then there is no
 * zero page to find, and each such page counts, as in smaps. */
TEST(live_pagemap_zero_page)
{
	uint64_t ps = page_size(), anon, file, zero, huge_zero;
	const volatile char *ro;
	char *r = map_region(16);
	int64_t want;
	int fd, i;

	if (!CHECK(r))
		return;
	procfs_pagemap_probe_zero();
	procfs_pagemap_zero_pfns(&zero, &huge_zero);
	ro = r;
	for (i = 0; i < 8; i++)
		(void)ro[i * ps];		/* the zero page, if there is one */
	for (i = 8; i < 12; i++)
		r[i * ps] = 1;			/* pages of its own */
	if (geteuid() != 0) {
		printf("  (not root: pagemap hides the zero page's frame)\n");
		unmap_region(r, 16);
		return;
	}
	want = smaps_rss_at(r);
	if (!CHECK(want == 4 * (int64_t)ps || want == 12 * (int64_t)ps)) {
		unmap_region(r, 16);
		return;
	}
	/* Found exactly when the kernel maps one. */
	CHECK_EQ_INT(zero != 0, want == 4 * (int64_t)ps);
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), (uintptr_t)r, (uintptr_t)r + 16 * ps,
					&anon, &file), 0);
	CHECK_EQ_U64(anon, (uint64_t)want);
	CHECK_EQ_U64(file, 0);
	/* The same through a pagemap kept open. */
	fd = procfs_pagemap_open(getpid());
	if (CHECK(fd >= 0)) {
		CHECK_EQ_INT(procfs_pagemap_rss_fd(fd, (uintptr_t)r, (uintptr_t)r + 16 * ps,
						   &anon, &file), 0);
		CHECK_EQ_U64(anon, (uint64_t)want);
		close(fd);
	}
	/* A write replaces the zero page with one of its own. */
	r[0] = 1;
	want = smaps_rss_at(r);
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), (uintptr_t)r, (uintptr_t)r + 16 * ps,
					&anon, &file), 0);
	CHECK_EQ_U64(anon, (uint64_t)want);
	unmap_region(r, 16);
}

/* No page of ours is taken for a zero page, whatever the probe found: two
 * huge pages and a small one, faulted in right after it freed its own. */
TEST(live_pagemap_probe_frees_nothing_we_count)
{
	/* A PMD: a page table is a page of 8-byte entries (2 MiB with 4 KiB
	 * pages, 32 MiB with 16 KiB). */
	uint64_t ps = page_size(), huge = ps * (ps / 8), anon, file;
	char *p, *h;
	int64_t want;

	procfs_pagemap_probe_zero();
	p = mmap(NULL, 3 * huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!CHECK(p != MAP_FAILED))
		return;
	h = (char *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
	madvise(h, 2 * huge, MADV_HUGEPAGE);	/* EINVAL without THP: fine */
	memset(h, 1, 2 * huge);
	want = smaps_rss_at(p);
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), (uintptr_t)p, (uintptr_t)p + 3 * huge,
					&anon, &file), 0);
	CHECK_EQ_U64(anon, (uint64_t)want);
	munmap(p, 3 * huge);
}

/* More than one pread() chunk, with a page count that is no chunk multiple. */
TEST(live_pagemap_chunks)
{
	const size_t pages = 5000;
	uint64_t ps = page_size(), anon, file;
	char *r = map_region(pages);
	size_t i, touched = 0;

	if (!CHECK(r))
		return;
	for (i = 0; i < pages; i += 7, touched++)
		r[i * ps] = 1;
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), (uintptr_t)r,
					(uintptr_t)r + pages * ps, &anon, &file), 0);
	CHECK_EQ_U64(anon, touched * ps);
	CHECK_EQ_U64(file, 0);
	unmap_region(r, pages);
}

/* A pagemap whose address space is gone reads nothing: an error, never
 * "nothing resident" (a re-measure after the exit hold once zeroed a 32 MiB
 * mapping that way). */
TEST(live_pagemap_gone)
{
	uint64_t ps = page_size(), anon = 1, file = 1;
	int go[2], ready[2], fd, st;
	uintptr_t at = 0;
	pid_t pid;

	if (!CHECK(pipe(go) == 0 && pipe(ready) == 0))
		return;
	pid = fork();
	if (pid == 0) {
		char *r = map_region(16), c;

		for (int i = 0; i < 16; i++)
			r[i * ps] = 1;
		at = (uintptr_t)r;
		if (write(ready[1], &at, sizeof(at)) != sizeof(at) || read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	if (!CHECK(pid > 0))
		return;
	CHECK(read(ready[0], &at, sizeof(at)) == sizeof(at));
	fd = procfs_pagemap_open(pid);
	CHECK(fd >= 0);
	CHECK_EQ_INT(procfs_pagemap_rss_fd(fd, at, at + 16 * ps, &anon, &file), 0);
	CHECK_EQ_U64(anon, 16 * ps);
	/* Gone, not yet reaped: a zombie. */
	CHECK(write(go[1], "x", 1) == 1);
	CHECK(waitid(P_PID, pid, &(siginfo_t){ 0 }, WEXITED | WNOWAIT) == 0);
	CHECK_EQ_INT(procfs_pagemap_rss_fd(fd, at, at + 16 * ps, &anon, &file), -ESRCH);
	CHECK_EQ_U64(anon, 0);
	CHECK(procfs_pagemap_rss(pid, at, at + 16 * ps, &anon, &file) < 0);
	close(fd);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int i = 0; i < 2; i++) {
		close(go[i]);
		close(ready[i]);
	}
}

/* Shared memory is "file" in pagemap (bit 61), and memfd shows as deleted. */
TEST(live_pagemap_shared)
{
	uint64_t ps = page_size(), anon, file;
	const struct pm_vma *v;
	struct pm_maps m;
	uintptr_t a;
	char *p;
	int fd;

	fd = memfd_create("memwatch-test", MFD_CLOEXEC);
	if (!CHECK(fd >= 0))
		return;
	if (!CHECK_EQ_INT(ftruncate(fd, 8 * ps), 0))
		goto out_fd;
	p = mmap(NULL, 8 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!CHECK(p != MAP_FAILED))
		goto out_fd;
	madvise(p, 8 * ps, MADV_NOHUGEPAGE);
	a = (uintptr_t)p;
	p[0] = p[ps] = p[2 * ps] = 1;

	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), a, a + 8 * ps, &anon, &file), 0);
	CHECK_EQ_U64(anon, 0);
	CHECK_EQ_U64(file, 3 * ps);

	if (CHECK_EQ_INT(procfs_read_smaps(getpid(), &m), 0)) {
		v = find_vma(&m, a);
		if (CHECK(v)) {
			CHECK_EQ_U64(v->start, a);
			CHECK_EQ_U64(v->end, a + 8 * ps);
			CHECK_STR(v->perms, "rw-s");
			CHECK_STR(v->path, "/memfd:memwatch-test");
			CHECK(v->deleted);
			CHECK(v->ino != 0);
			CHECK_EQ_U64(v->rss, 3 * ps);
			CHECK_EQ_U64(v->anon, 0);
		}
		procfs_maps_free(&m);
	}
	munmap(p, 8 * ps);
out_fd:
	close(fd);
}

TEST(live_pagemap_edges)
{
	uint64_t anon = 1, file = 1;

	/* past the top of user space the kernel reports EOF: nothing there */
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), 0xffffffffff600000ULL,
					0xffffffffff601000ULL, &anon, &file), 0);
	CHECK_EQ_U64(anon + file, 0);
	CHECK_EQ_INT(procfs_pagemap_rss(getpid(), 0, UINT64_MAX, NULL, &file), -EINVAL);
	CHECK_EQ_INT(procfs_pagemap_rss(0, 0, 4096, &anon, &file), -EINVAL);
	CHECK_EQ_INT(procfs_pagemap_rss(-1, 0, 4096, &anon, &file), -EINVAL);
}

TEST(live_smaps_region)
{
	uint64_t ps = page_size();
	const struct pm_vma *v;
	struct pm_maps m;
	char *r = map_region(64);
	int i;

	if (!CHECK(r))
		return;
	for (i = 0; i < 10; i++)
		r[(20 + i) * ps] = 1;
	if (CHECK_EQ_INT(procfs_read_smaps(getpid(), &m), 0)) {
		v = find_vma(&m, (uintptr_t)r);
		if (CHECK(v)) {
			CHECK_EQ_U64(v->start, (uintptr_t)r);
			CHECK_EQ_U64(v->end, (uintptr_t)r + 64 * ps);
			CHECK_STR(v->perms, "rw-p");
			CHECK_STR(v->path, "");
			CHECK_EQ_U64(v->ino, 0);
			CHECK_EQ_U64(v->rss, 10 * ps);
			CHECK_EQ_U64(v->anon, 10 * ps);
			CHECK_EQ_U64(v->pss, 10 * ps);
			CHECK_EQ_U64(v->anon_huge, 0);
			CHECK_EQ_U64(v->swap, 0);
		}
		/* the guard page below is a separate PROT_NONE VMA */
		v = find_vma(&m, (uintptr_t)r - 1);
		if (CHECK(v))
			CHECK_STR(v->perms, "---p");
		CHECK(find_path(&m, "[stack]") != NULL);
		CHECK(find_path(&m, "[vdso]") != NULL);
		procfs_maps_free(&m);
	}
	unmap_region(r, 64);
}

static uint64_t maps_vm_size(const struct pm_maps *m)
{
	uint64_t sum = 0;
	size_t i;

	/* the vsyscall page is a gate area, not a VMA: not in VmSize */
	for (i = 0; i < m->n; i++) {
		if (strcmp(m->v[i].path, "[vsyscall]"))
			sum += m->v[i].end - m->v[i].start;
	}
	return sum;
}

/*
 * The sum of the VMAs in maps is VmSize exactly.  Reading either file
 * allocates, which may grow the heap in between, so retry until two
 * status reads around one maps read agree.
 */
TEST(live_maps_vs_status)
{
	struct pm_status s1, s2;
	struct pm_maps m = { NULL, 0 };
	uint64_t sum = 0;
	size_t i, bad = 0;
	int tries, err = 0;

	for (tries = 0; tries < 20; tries++) {
		procfs_maps_free(&m);
		err = procfs_read_status(getpid(), &s1);
		err = err ?: procfs_read_maps(getpid(), &m);
		err = err ?: procfs_read_status(getpid(), &s2);
		if (err)
			break;
		sum = maps_vm_size(&m);
		if (s1.vm_size == s2.vm_size && sum == s1.vm_size)
			break;
	}
	if (!CHECK_EQ_INT(err, 0))
		goto out;
	CHECK_EQ_U64(sum, s1.vm_size);
	/* sorted, non-overlapping, every path set */
	for (i = 0; i < m.n; i++) {
		if (!m.v[i].path || m.v[i].start >= m.v[i].end ||
		    (i && m.v[i].start < m.v[i - 1].end))
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
	CHECK(m.n > 5);
	CHECK(find_path(&m, "[stack]") != NULL);
out:
	procfs_maps_free(&m);
}

TEST(live_status_self)
{
	char comm[16];
	struct pm_status st;

	snprintf(comm, sizeof(comm), "%s", program_invocation_short_name);
	if (!CHECK_EQ_INT(procfs_read_status(getpid(), &st), 0))
		return;
	CHECK_STR(st.name, comm);
	CHECK_EQ_INT(st.state, 'R');
	CHECK_EQ_INT(st.tgid, getpid());
	CHECK_EQ_INT(st.ppid, getppid());
	CHECK_EQ_INT(st.threads, 1);
	CHECK(!st.kernel_thread);
	CHECK(st.vm_size > 0 && st.vm_peak >= st.vm_size);
	CHECK(st.vm_rss > 0 && st.vm_hwm >= st.vm_rss);
	/* the kernel prints VmRSS as exactly this sum */
	CHECK_EQ_U64(st.vm_rss, st.rss_anon + st.rss_file + st.rss_shmem);
	CHECK(st.rss_file > 0);		/* our own text, at least */
}

TEST(live_stat_self)
{
	uint64_t ps = page_size();
	struct pm_stat s1, s2;
	const struct pm_vma *stack;
	struct pm_maps m;
	char *r;
	int i;

	if (!CHECK_EQ_INT(procfs_read_stat(getpid(), &s1), 0))
		return;
	CHECK_EQ_INT(s1.state, 'R');
	CHECK(s1.minflt > 0);
	CHECK(s1.start_brk != 0 && s1.start_brk <= s1.brk);
	CHECK_EQ_U64(s1.brk % ps, 0);
	if (CHECK_EQ_INT(procfs_read_maps(getpid(), &m), 0)) {
		stack = find_path(&m, "[stack]");
		CHECK(stack && s1.start_stack >= stack->start &&
		      s1.start_stack < stack->end);
		procfs_maps_free(&m);
	}

	/* each first touch of an anonymous page is a minor fault */
	r = map_region(32);
	if (!CHECK(r))
		return;
	CHECK_EQ_INT(procfs_read_stat(getpid(), &s1), 0);
	for (i = 0; i < 32; i++)
		r[i * ps] = 1;
	CHECK_EQ_INT(procfs_read_stat(getpid(), &s2), 0);
	CHECK(s2.minflt >= s1.minflt + 32);
	CHECK(s2.majflt >= s1.majflt);
	unmap_region(r, 32);
}

/*
 * stat has no brk: read_stat takes the end of [heap], the break rounded up
 * to a page.  Grow the break ourselves so there surely is a heap, and
 * retry if malloc moved it while procfs_read_stat allocated.
 */
TEST(live_brk)
{
	uint64_t ps = page_size();
	struct pm_stat st;
	uintptr_t cur = 0;
	int tries;

	if (!CHECK(sbrk(3 * ps + 5) != (void *)-1))
		return;
	for (tries = 0; tries < 20; tries++) {
		cur = (uintptr_t)sbrk(0);
		if (!CHECK_EQ_INT(procfs_read_stat(getpid(), &st), 0))
			return;
		if ((uintptr_t)sbrk(0) == cur)
			break;
	}
	CHECK_EQ_U64(st.brk, (cur + ps - 1) / ps * ps);
	CHECK(st.start_brk < st.brk);
}

/* A reaped child is gone: every reader says -ENOENT, not -ESRCH. */
TEST(live_gone_process)
{
	struct pm_status status;
	struct pm_stat stat;
	struct pm_maps m;
	uint64_t anon, file;
	pid_t pid;

	pid = fork();
	if (!CHECK(pid >= 0))
		return;
	if (pid == 0)
		_exit(0);
	CHECK_EQ_INT(waitpid(pid, NULL, 0), pid);
	CHECK_EQ_INT(procfs_read_maps(pid, &m), -ENOENT);
	CHECK(m.v == NULL && m.n == 0);
	CHECK_EQ_INT(procfs_read_smaps(pid, &m), -ENOENT);
	CHECK_EQ_INT(procfs_read_status(pid, &status), -ENOENT);
	CHECK_EQ_INT(procfs_read_stat(pid, &stat), -ENOENT);
	CHECK_EQ_INT(procfs_pagemap_rss(pid, 0, 4096, &anon, &file), -ENOENT);
	CHECK_EQ_INT(procfs_read_maps(0, &m), -EINVAL);
	CHECK_EQ_INT(procfs_read_status(-1, &status), -EINVAL);
}

/* A zombie has no mm: empty maps, and status looks like a kernel thread. */
TEST(live_zombie)
{
	struct pm_status status;
	struct pm_stat stat;
	struct pm_maps m;
	siginfo_t si;
	pid_t pid;

	pid = fork();
	if (!CHECK(pid >= 0))
		return;
	if (pid == 0)
		_exit(0);
	/* WNOWAIT: wait for the exit but leave the zombie in place */
	CHECK_EQ_INT(waitid(P_PID, pid, &si, WEXITED | WNOWAIT), 0);
	if (CHECK_EQ_INT(procfs_read_status(pid, &status), 0)) {
		CHECK_EQ_INT(status.state, 'Z');
		CHECK_EQ_INT(status.tgid, pid);
		CHECK(status.kernel_thread);
	}
	if (CHECK_EQ_INT(procfs_read_stat(pid, &stat), 0))
		CHECK_EQ_INT(stat.state, 'Z');
	if (CHECK_EQ_INT(procfs_read_maps(pid, &m), 0))
		CHECK_EQ_U64(m.n, 0);
	procfs_maps_free(&m);
	waitpid(pid, NULL, 0);
}

/* May another process's file be unreadable: gone, or not ours to read? */
static bool may_fail(int err)
{
	return err == -ENOENT || err == -EACCES || err == -EPERM;
}

/*
 * Every process on this machine, kernel threads included: whatever the
 * kernel really prints must parse.  Processes may exit meanwhile, and an
 * unprivileged run may not read others' maps.
 */
TEST(live_all_processes)
{
	size_t seen = 0, bad = 0;
	struct pm_status status;
	struct pm_stat stat;
	struct pm_maps m;
	struct dirent *de;
	DIR *d = opendir("/proc");
	int e1, e2, e3, e4;
	pid_t pid;

	if (!CHECK(d))
		return;
	while ((de = readdir(d))) {
		pid = (pid_t)strtol(de->d_name, NULL, 10);
		if (pid <= 0)
			continue;
		seen++;
		e1 = procfs_read_status(pid, &status);
		e2 = procfs_read_stat(pid, &stat);
		e3 = procfs_read_maps(pid, &m);
		/* no mm, no mappings */
		if (!e1 && !e3 && status.kernel_thread && m.n)
			e3 = -EEXIST;
		procfs_maps_free(&m);
		e4 = procfs_read_smaps(pid, &m);
		procfs_maps_free(&m);
		if ((e1 && !may_fail(e1)) || (e2 && !may_fail(e2)) ||
		    (e3 && !may_fail(e3)) || (e4 && !may_fail(e4))) {
			fprintf(stderr, "  pid %d: status %d stat %d maps %d smaps %d\n",
				pid, e1, e2, e3, e4);
			bad++;
		}
	}
	closedir(d);
	CHECK(seen > 0);
	CHECK_EQ_U64(bad, 0);
}

TEST(live_read_file)
{
	char path[] = "/tmp/test_procfs.XXXXXX";
	size_t n = 200000, len, i;
	char *want = malloc(n), *buf;
	int fd = mkstemp(path);

	if (!CHECK(fd >= 0 && want)) {
		free(want);
		return;
	}
	for (i = 0; i < n; i++)
		want[i] = 'a' + i % 23;
	CHECK_EQ_INT(write(fd, want, n), (long long)n);

	/* several doublings of the read buffer */
	if (CHECK_EQ_INT(procfs_read_file(path, &buf, &len), 0)) {
		CHECK_EQ_U64(len, n);
		CHECK(len == n && !memcmp(buf, want, n) && buf[n] == '\0');
		free(buf);
	}
	/* exactly one initial buffer's worth, then empty */
	CHECK_EQ_INT(ftruncate(fd, 4096), 0);
	if (CHECK_EQ_INT(procfs_read_file(path, &buf, &len), 0)) {
		CHECK_EQ_U64(len, 4096);
		free(buf);
	}
	CHECK_EQ_INT(ftruncate(fd, 0), 0);
	if (CHECK_EQ_INT(procfs_read_file(path, &buf, &len), 0)) {
		CHECK_EQ_U64(len, 0);
		CHECK_STR(buf, "");
		free(buf);
	}
	close(fd);
	unlink(path);

	CHECK_EQ_INT(procfs_read_file(path, &buf, &len), -ENOENT);
	CHECK(buf == NULL && len == 0);
	CHECK_EQ_INT(procfs_read_file("/proc", &buf, &len), -EISDIR);
	CHECK_EQ_INT(procfs_read_file(NULL, &buf, &len), -EINVAL);

	/* a /proc file is bigger than it says (st_size 0) */
	if (CHECK_EQ_INT(procfs_read_file("/proc/self/smaps", &buf, &len), 0)) {
		CHECK(len > 4096 && strlen(buf) == len);
		free(buf);
	}
	free(want);
}

int main(void)
{
	RUN(maps_line_file);
	RUN(maps_line_anon);
	RUN(maps_line_pseudo_paths);
	RUN(maps_line_vsyscall);
	RUN(maps_line_spaces_in_path);
	RUN(maps_line_deleted);
	RUN(maps_line_escaped_newline);
	RUN(maps_line_huge_fields);
	RUN(maps_line_trailing_newline);
	RUN(maps_line_malformed);
	RUN(maps_line_prefixes);
	RUN(maps_file_sample);
	RUN(maps_file_edges);
	RUN(maps_file_many);
	RUN(smaps_sample_parse);
	RUN(smaps_vm_flags);
	RUN(smaps_rollup);
	RUN(smaps_plain_maps);
	RUN(smaps_huge_values);
	RUN(smaps_malformed);
	RUN(smaps_prefixes);
	RUN(status_sample_parse);
	RUN(status_kthread);
	RUN(status_names);
	RUN(status_huge_values);
	RUN(status_malformed);
	RUN(status_prefixes);
	RUN(stat_sample_parse);
	RUN(stat_kthread);
	RUN(stat_tricky_comm);
	RUN(stat_huge_values);
	RUN(stat_malformed);
	RUN(stat_prefixes);
	RUN(fuzz_parsers);
	RUN(live_pagemap_anon);
	RUN(live_pagemap_zero_page);
	RUN(live_pagemap_probe_frees_nothing_we_count);
	RUN(live_pagemap_chunks);
	RUN(live_pagemap_gone);
	RUN(live_pagemap_shared);
	RUN(live_pagemap_edges);
	RUN(live_smaps_region);
	RUN(live_maps_vs_status);
	RUN(live_status_self);
	RUN(live_stat_self);
	RUN(live_brk);
	RUN(live_gone_process);
	RUN(live_zombie);
	RUN(live_all_processes);
	RUN(live_read_file);
	return unit_done();
}
