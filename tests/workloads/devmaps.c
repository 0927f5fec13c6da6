// SPDX-License-Identifier: GPL-2.0
/*
 * devmaps.c - memory a driver maps into the process, of kinds every kernel
 * here has without a device: the kernel inserts the pages itself
 * (VM_MIXEDMAP), and counts them in RSS when it does, before any touch.
 *
 * usage: devmaps
 *
 * Phases (USDT, each right after the checkpoint of the same name):
 *   "bpfmap"  a BPF array of 4 MiB created BPF_F_MMAPABLE and mapped
 *             shared (remap_vmalloc_range: vm_insert_page), half written;
 *   "ring"    an io_uring of 64 entries, its SQ ring, CQ ring and SQE array
 *             mapped (6.x: vm_insert_pages; before 6.5 remap_pfn_range:
 *             VM_PFNMAP), and 1 MiB of anonymous memory mlock()ed;
 *   "unmap"   the BPF array unmapped.
 * Then "final".  Needs CAP_BPF (root) for the array; without it (or
 * without io_uring) that part is skipped and its checkpoint says so in the
 * file "skipped".
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ckpt.h"
#include "../../include/memwatch.h"

#define ARRAY_SZ	MIB(4)

static int bpf_mmapable_array(size_t bytes)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 8;
	a.max_entries = (unsigned int)(bytes / 8);
	a.map_flags = BPF_F_MMAPABLE;
	return (int)syscall(__NR_bpf, BPF_MAP_CREATE, &a, sizeof(a));
}

static void note_skipped(const char *what)
{
	const char *dir = getenv("MW_CKPT_DIR");
	char path[4096];
	int fd;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/skipped", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) {
		if (write(fd, what, strlen(what)) < 0 || write(fd, "\n", 1) < 0)
			die("write skipped");
		close(fd);
	}
}

int main(int argc, char **argv)
{
	struct io_uring_params p;
	char *array = NULL, *locked;
	int fd, ring;

	ckpt_init(argc, argv);

	ckpt("bpfmap");
	MEMWATCH_PHASE("bpfmap");
	fd = bpf_mmapable_array(ARRAY_SZ);
	if (fd >= 0) {
		array = mmap(NULL, ARRAY_SZ, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (array == MAP_FAILED)
			die("mmap of the BPF array");
		touch(array, ARRAY_SZ / 2);
	} else {
		note_skipped("bpfmap");
	}

	ckpt("ring");
	MEMWATCH_PHASE("ring");
	memset(&p, 0, sizeof(p));
	ring = (int)syscall(__NR_io_uring_setup, 64, &p);
	if (ring >= 0) {
		size_t sq = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
		size_t cq = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);

		/* Without IORING_FEAT_SINGLE_MMAP (before 5.4) the CQ ring is a
		 * mapping of its own. */
		if (map_fd(ring, sq, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE) == NULL ||
		    (!(p.features & IORING_FEAT_SINGLE_MMAP) &&
		     mmap(NULL, cq, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
			  IORING_OFF_CQ_RING) == MAP_FAILED) ||
		    mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES) == MAP_FAILED)
			die("mmap of the io_uring");
	} else {
		note_skipped("ring");
	}
	locked = map_anon(MIB(1));
	if (mlock(locked, MIB(1)))
		die("mlock");

	ckpt("unmap");
	MEMWATCH_PHASE("unmap");
	if (array && munmap(array, ARRAY_SZ))
		die("munmap");
	sleep_ms(5);
	ckpt_exit(0);
}
