/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* classify.h — what kind of memory a mapping is. */
#ifndef MW_CLASSIFY_H
#define MW_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/mapping.h"

/*
 * What, besides the mapping itself, decides its kind: where the heap and
 * the stack are (/proc/PID/stat, brk(2)) and which devices are tmpfs
 * mounts.  model.c fills one from its struct mw_model for each call, so
 * that this header needs only the mapping's types, not the table's.
 */
struct mw_layout {
	uint64_t start_brk, brk, start_stack;
	const struct mw_dev *shmem_devs;
	size_t nshmem_devs;
};

/*
 * anon, heap, stack, file, shmem (MAP_SHARED anon, /dev/shm, memfd, SysV,
 * any file on a tmpfs-like mount), device, vdso, vvar, vsyscall.  Heap and
 * stack follow the kernel's own rule for "[heap]" and "[stack]" in
 * /proc/PID/maps (fs/proc/task_mmu.c), so they move with brk.  Device: a
 * driver's mapping by page frame (VM_PFNMAP) or page by page
 * (VM_MIXEDMAP), a dma-buf, or any other /dev/ file.
 */
enum mw_kind mw_classify(const struct mw_layout *l, const struct mw_mapping *mp);
/*
 * Which device memory a device mapping is (NULL for other kinds):
 *   "pfn_io"  remap_pfn_range of I/O memory (VM_PFNMAP|VM_IO: a BAR, VRAM,
 *             /dev/mem): VM, no RSS;
 *   "pfn"     page frames inserted one by one (VM_PFNMAP: GEM shmem helpers,
 *             udmabuf): VM, no RSS (the pages count in the system's Shmem);
 *   "mixed"   pages inserted by the driver (VM_MIXEDMAP: NVIDIA system
 *             memory, io_uring rings, BPF maps): RSS as the kernel counts
 *             it, from the insertion on;
 *   "dmabuf"  a dma-buf's mmap (/dmabuf:NAME): the exporter's pages;
 *   "char"    another device file's mapping.
 */
const char *mw_device_kind(const struct mw_mapping *mp);
const char *mw_kind_name(enum mw_kind k);
/* tmpfs devices from /proc/PID/mountinfo text; *out is malloc'd. */
int mw_shmem_devs_from_mountinfo(const char *text, size_t len,
				 struct mw_dev **out, size_t *n);
/* Parse "rw-p" into MW_VM_* flags. */
uint64_t mw_perms_to_flags(const char *perms);

#endif /* MW_CLASSIFY_H */
