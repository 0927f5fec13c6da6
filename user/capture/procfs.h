/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * procfs.h — parsers for the /proc files memwatch reads to seed and
 * cross-check what the BPF side reports: maps, smaps, status, stat and
 * pagemap.
 *
 * The parsers take a text buffer and a length and never read past it (the
 * buffer need not be NUL-terminated), so they can be fed truncated or
 * hostile input: anything that does not look like what the kernel prints
 * is rejected with -EINVAL.  The readers slurp the whole file first, because
 * /proc files report size 0 and smaps of a large process runs to megabytes.
 *
 * All sizes are in bytes, even where the file prints kB.
 */
#ifndef MEMWATCH_PROCFS_H
#define MEMWATCH_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

struct pm_vma {			/* one line of /proc/PID/maps */
	uint64_t start, end;		/* bytes */
	uint64_t pgoff;			/* BYTES, as printed in maps (hex offset) */
	uint64_t ino;
	uint32_t dev_major, dev_minor;
	char perms[5];			/* "rw-p" NUL-terminated */
	bool deleted;			/* path ended in " (deleted)" (suffix stripped from path) */
	char *path;			/* malloc'd, "" if none; "\012" unescaped back to '\n' */
	/* filled by procfs_read_smaps only, else 0: */
	uint64_t rss, anon, anon_huge, swap, pss; /* bytes */
	uint64_t pss_dirty, swap_pss, locked;	/* bytes */
	uint64_t pss_anon, pss_file, pss_shmem;	/* bytes; smaps_rollup only */
	uint64_t vm_flags;		/* smaps "VmFlags": the MW_VM_* bits that
					 * maps does not show (pf io mm lo) */
	bool has_vm_flags;		/* a VmFlags line was read */
};

struct pm_maps {
	struct pm_vma *v;
	size_t n;
};

struct pm_status {		/* selected /proc/PID/status fields, all BYTES */
	char name[64];			/* "Name:", kept as printed (escaped) */
	pid_t tgid, ppid;
	char state;			/* first char after "State:" */
	uint64_t vm_peak, vm_size, vm_hwm, vm_rss, rss_anon, rss_file, rss_shmem, vm_swap;
	uint64_t vm_lck, vm_pin;		/* mlock'd; pinned (io_uring, RDMA) */
	int threads;
	bool kernel_thread;		/* no VmSize line: kernel threads have no mm */
};

/*
 * /proc/PID/stat: the fields memwatch uses, numbered as in proc(5).  The
 * current break is not in stat (field 48 is arg_start): procfs_parse_stat
 * leaves brk 0 and procfs_read_stat takes it from the end of the [heap]
 * VMA in maps, i.e. page-aligned, or start_brk when there is no heap yet.
 */
struct pm_stat {
	char state;			/* field 3 */
	uint64_t minflt;		/* field 10 */
	uint64_t majflt;		/* field 12 */
	uint64_t start_brk;		/* field 47 */
	uint64_t brk;			/* see above: from maps, not stat */
	uint64_t start_stack;		/* field 28 */
};

/*
 * Parsers.  @out is overwritten (not freed first).  On error the maps
 * parsers leave @out empty ({NULL, 0}) with nothing to free, and
 * procfs_parse_maps_line leaves out->path NULL.
 */
int procfs_parse_maps_line(const char *line, struct pm_vma *out);
int procfs_parse_maps(const char *text, size_t len, struct pm_maps *out);
int procfs_parse_smaps(const char *text, size_t len, struct pm_maps *out);
int procfs_parse_status(const char *text, size_t len, struct pm_status *out);
int procfs_parse_stat(const char *text, size_t len, struct pm_stat *out);
void procfs_maps_free(struct pm_maps *m);

/*
 * Readers: 0 or -errno; -ENOENT when the process is gone (including the
 * -ESRCH the kernel returns when it dies while we read).
 */
int procfs_read_maps(pid_t pid, struct pm_maps *out);
int procfs_read_smaps(pid_t pid, struct pm_maps *out);
int procfs_read_status(pid_t pid, struct pm_status *out);
int procfs_read_stat(pid_t pid, struct pm_stat *out);

/* Read a whole file into a malloc'd, NUL-terminated buffer. */
int procfs_read_file(const char *path, char **buf, size_t *len);
/* The same, given up (-ETIME) once CLOCK_MONOTONIC passes until (ns; 0:
 * never): a smaps of a large process under a deadline. */
int procfs_read_file_until(const char *path, char **buf, size_t *len, uint64_t until);

/*
 * Resident pages of [start, end) of @pid from /proc/PID/pagemap, split into
 * anonymous (present, bit 61 clear) and file or shared (present, bit 61
 * set).  @start is rounded down and @end up to page boundaries.
 */
int procfs_pagemap_rss(pid_t pid, uint64_t start, uint64_t end,
		       uint64_t *anon_bytes, uint64_t *file_bytes);
/* The same from an open /proc/PID/pagemap (procfs_pagemap_open: fd or
 * -errno).  The kernel shows page frames only to a file opened with
 * CAP_SYS_ADMIN, and the zero page is told apart by its frame: a session
 * opens its process's pagemap before it drops its capabilities. */
int procfs_pagemap_open(pid_t pid);
int procfs_pagemap_rss_fd(int fd, uint64_t start, uint64_t end,
			  uint64_t *anon_bytes, uint64_t *file_bytes);
/* Which pages of [start, end) those counts take as resident: bit i of
 * bits (zeroed by the caller) for page start / page size + i. */
int procfs_pagemap_resident_fd(int fd, uint64_t start, uint64_t end, uint64_t *bits);
/*
 * Find the zero page's frame (and the huge zero page's) by reading one in
 * this process; call while CAP_SYS_ADMIN is there.  Afterwards the counts
 * above leave them out: a page table maps them where memory was read and
 * never written, and neither the RSS counters nor smaps count them (a Go
 * binary's .bss: 72 KiB).  Where frames are hidden, they stay counted.
 */
void procfs_pagemap_probe_zero(void);
void procfs_pagemap_zero_pfns(uint64_t *zero, uint64_t *huge_zero);

#endif /* MEMWATCH_PROCFS_H */
