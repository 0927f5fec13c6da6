// SPDX-License-Identifier: GPL-2.0
/*
 * devmaps.c - memory a driver maps into the process, of kinds every kernel
 * here has without a device: the kernel inserts the pages itself
 * (VM_MIXEDMAP), and counts them in RSS when it does, before any touch.
 *
 * usage: devmaps [iters]
 *
 * Phases (USDT, each right after the checkpoint of the same name; "drm"
 * through memwatch's socket: the program waits for the answer):
 *   "bpfmap"  a BPF array of 4 MiB created BPF_F_MMAPABLE and mapped
 *             shared (remap_vmalloc_range: vm_insert_page), half written;
 *   "ring"    an io_uring of 64 entries, its SQ ring, CQ ring and SQE array
 *             mapped (6.x: vm_insert_pages; before 6.5 remap_pfn_range:
 *             VM_PFNMAP), and 1 MiB of anonymous memory mlock()ed;
 *   "pin"     2 MiB of anonymous memory, never touched, registered with
 *             the io_uring as a fixed buffer (VmPin: pinned long-term, by
 *             a call memwatch does not trace, which faults the pages in
 *             outside any page fault; its address in the file "pinbuf"),
 *             then 4 MiB mlock()ed and
 *             3 MiB of it munlock()ed again: checkpoint "pin_peak" at the
 *             highest VmLck;
 *   "drm"     where a vgem node exists (modprobe vgem): an 8 MiB dumb
 *             buffer mapped through the node and half written (GEM shmem:
 *             vmf_insert_pfn, VM_PFNMAP, no RSS), exported as a dma-buf and
 *             mapped through that too; where the system DMA heap is
 *             (6.12: /dev/dma_heap/system), 4 MiB from it, mapped and half
 *             written; where udmabuf is (modprobe udmabuf), a dma-buf made
 *             of 2 MiB of a sealed memfd, mapped and half written (each
 *             skipped where absent: "heap", "udmabuf" in "skipped"); on
 *             x86-64 where /dev/mem is, 64 KiB of the BIOS area read-only
 *             (remap_pfn_range of I/O memory: VM_IO, no RSS; "devmem");
 *             on every other DRM card (virtio-gpu, bochs), a 3 MiB dumb
 *             buffer through the node, half written, and through its
 *             dma-buf where it exports one (file "cards");
 *   "unmap"   the io_uring's buffer unregistered, the 1 MiB left of the
 *             4 MiB munlock()ed, the BPF array unmapped.
 * Then "final".  iters: 6 iterations (USDT, checkpoint "it<k>" before
 * each), the first of which maps a 16 MiB BPF array and, where vgem is,
 * an 8 MiB dumb buffer (its "window"); each iteration writes a page of
 * each.  Needs CAP_BPF (root) for the array; without it (or
 * without io_uring) that part is skipped and its checkpoint says so in the
 * file "skipped".
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/dma-heap.h>
#include <linux/io_uring.h>
#include <linux/udmabuf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ckpt.h"
#include "../../include/memwatch.h"
#include "../../include/memwatch_mark.h"

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

/* The few DRM ioctls used, as include/uapi/drm/drm.h and drm_mode.h define
 * them (a stable ABI; no libdrm headers needed). */
struct mw_drm_version {
	int major, minor, patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};

struct mw_drm_create_dumb {
	uint32_t height, width, bpp, flags, handle, pitch;
	uint64_t size;
};

struct mw_drm_map_dumb {
	uint32_t handle, pad;
	uint64_t offset;
};

struct mw_drm_prime {
	uint32_t handle, flags;
	int32_t fd;
};

#define MW_DRM_IOCTL_VERSION		_IOWR('d', 0x00, struct mw_drm_version)
#define MW_DRM_IOCTL_PRIME_HANDLE_TO_FD	_IOWR('d', 0x2d, struct mw_drm_prime)
#define MW_DRM_IOCTL_MODE_CREATE_DUMB	_IOWR('d', 0xb2, struct mw_drm_create_dumb)
#define MW_DRM_IOCTL_MODE_MAP_DUMB	_IOWR('d', 0xb3, struct mw_drm_map_dumb)
#define DUMB_SZ				MIB(8)

/* /dev/dri/card<i>, opened, and its driver's name; -1 if none. */
static int open_card(int i, char name[32])
{
	struct mw_drm_version v = { .name = name, .name_len = 31 };
	char path[32];
	int fd;

	memset(name, 0, 32);
	snprintf(path, sizeof(path), "/dev/dri/card%d", i);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0 && ioctl(fd, MW_DRM_IOCTL_VERSION, &v)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* A vgem node, opened, or -1. */
static int open_vgem(void)
{
	char name[32];

	for (int i = 0; i < 8; i++) {
		int fd = open_card(i, name);

		if (fd >= 0 && !strcmp(name, "vgem"))
			return fd;
		if (fd >= 0)
			close(fd);
	}
	return -1;
}

static void note(const char *file, const char *what);

/*
 * Every other DRM driver's card (under qemu: virtio-gpu's GEM shmem
 * buffers, bochs's VRAM through TTM; a real GPU's too): a 3 MiB dumb buffer
 * mapped through the node and half written, then exported as a dma-buf and
 * mapped through that, a quarter read, where the driver can; each listed in
 * the file "cards" as "card<i> <driver> <1 if its dma-buf is mapped>".
 */
static void map_cards(void)
{
	char name[32], line[64];

	for (int i = 0; i < 8; i++) {
		struct mw_drm_create_dumb cd = { .height = 768, .width = 1024, .bpp = 32 };
		struct mw_drm_map_dumb md = { 0 };
		struct mw_drm_prime pr = { .flags = O_CLOEXEC | O_RDWR };
		int fd = open_card(i, name);
		bool exported = false;
		char *p;

		if (fd < 0)
			continue;
		if (!strcmp(name, "vgem") || ioctl(fd, MW_DRM_IOCTL_MODE_CREATE_DUMB, &cd)) {
			close(fd);
			continue;
		}
		md.handle = cd.handle;
		if (ioctl(fd, MW_DRM_IOCTL_MODE_MAP_DUMB, &md))
			die("DRM_IOCTL_MODE_MAP_DUMB");
		p = mmap(NULL, cd.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)md.offset);
		if (p == MAP_FAILED)
			die("mmap of a dumb buffer");
		touch(p, cd.size / 2);
		pr.handle = cd.handle;
		if (!ioctl(fd, MW_DRM_IOCTL_PRIME_HANDLE_TO_FD, &pr)) {
			p = mmap(NULL, cd.size, PROT_READ | PROT_WRITE, MAP_SHARED, pr.fd, 0);
			exported = p != MAP_FAILED;
			if (exported)
				read_pages(p, cd.size / 4);
		}
		snprintf(line, sizeof(line), "card%d %s %d", i, name, exported);
		note("cards", line);
	}
}

/* An 8 MiB dumb buffer mapped through the node and through its dma-buf;
 * false where there is no vgem or it refuses. */
static bool map_vgem(void)
{
	struct mw_drm_create_dumb cd = { .height = DUMB_SZ / 4096, .width = 1024, .bpp = 32 };
	struct mw_drm_map_dumb md = { 0 };
	struct mw_drm_prime pr = { .flags = O_CLOEXEC | O_RDWR };
	int fd = open_vgem();
	char *p;

	if (fd < 0 || ioctl(fd, MW_DRM_IOCTL_MODE_CREATE_DUMB, &cd))
		return false;
	md.handle = pr.handle = cd.handle;
	if (ioctl(fd, MW_DRM_IOCTL_MODE_MAP_DUMB, &md))
		return false;
	p = mmap(NULL, cd.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)md.offset);
	if (p == MAP_FAILED)
		die("mmap of the vgem buffer");
	touch(p, cd.size / 2);
	if (ioctl(fd, MW_DRM_IOCTL_PRIME_HANDLE_TO_FD, &pr))
		return true;
	p = mmap(NULL, cd.size, PROT_READ | PROT_WRITE, MAP_SHARED, pr.fd, 0);
	if (p == MAP_FAILED)
		die("mmap of the vgem dma-buf");
	read_pages(p, cd.size / 4);
	return true;
}

/* A line appended to $MW_CKPT_DIR/@file. */
static void note(const char *file, const char *what)
{
	const char *dir = getenv("MW_CKPT_DIR");
	char path[4096];
	int fd;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) {
		if (write(fd, what, strlen(what)) < 0 || write(fd, "\n", 1) < 0)
			die("write skipped");
		close(fd);
	}
}

static void note_skipped(const char *what)
{
	note("skipped", what);
}

/* 64 KiB of /dev/mem at the BIOS area, which CONFIG_STRICT_DEVMEM allows
 * on x86 (arm64 has no such fixed range). */
static bool map_devmem(void)
{
#ifdef __x86_64__
	int fd = open("/dev/mem", O_RDONLY | O_CLOEXEC);
	volatile char *p;

	if (fd < 0)
		return false;
	p = mmap(NULL, KIB(64), PROT_READ, MAP_SHARED, fd, 0xf0000);
	if (p == MAP_FAILED)
		return false;
	(void)p[0];
	return true;
#else
	return false;
#endif
}

/* Map a dma-buf fd and write half of it; false where it cannot be mapped. */
static bool map_dmabuf(int fd, size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return false;
	touch(p, len / 2);
	return true;
}

/* 4 MiB from the system DMA heap (remap_pfn_range of its pages). */
static bool map_heap(void)
{
	struct dma_heap_allocation_data d = { .len = MIB(4), .fd_flags = O_RDWR | O_CLOEXEC };
	int heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);

	if (heap < 0 || ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &d))
		return false;
	return map_dmabuf((int)d.fd, MIB(4));
}

/* A dma-buf of 2 MiB of a memfd (udmabuf wants it sealed against shrinking). */
static bool map_udmabuf(void)
{
	struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC, .size = MIB(2) };
	int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	int mfd, buf;

	if (dev < 0)
		return false;
	mfd = memfd_create("devmaps-udmabuf", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, (off_t)MIB(2)) || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK))
		die("memfd for udmabuf");
	c.memfd = (uint32_t)mfd;
	buf = ioctl(dev, UDMABUF_CREATE, &c);
	return buf >= 0 && map_dmabuf(buf, MIB(2));
}

/* "pin": 2 MiB registered with the ring (VmPin), 4 MiB locked and 3 MiB
 * of it unlocked; returns the 4 MiB. */
static char *pin(int ring)
{
	/* NORESERVE: a VMA of its own, not merged with the next one */
	struct iovec iov = { .iov_base = map_anon_flags(MIB(2), MAP_PRIVATE | MAP_NORESERVE),
			     .iov_len = MIB(2) };
	char *p = map_anon(MIB(4)), addr[32];

	if (ring < 0 || syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1))
		note_skipped("pin");
	snprintf(addr, sizeof(addr), "%lx", (unsigned long)iov.iov_base);
	note("pinbuf", addr);
	if (mlock(p, MIB(4)))
		die("mlock");
	ckpt("pin_peak");
	if (munlock(p + MIB(1), MIB(3)))
		die("munlock");
	return p;
}

static int iters(void)
{
	static const char *const names[] = { "it1", "it2", "it3", "it4", "it5", "it6" };
	char *window = NULL;

	for (int k = 0; k < 6; k++) {
		ckpt(names[k]);
		MEMWATCH_ITER();
		if (!k) {
			int fd = bpf_mmapable_array(4 * ARRAY_SZ);

			if (fd < 0) {
				note_skipped("bpfmap");
			} else {
				window = mmap(NULL, 4 * ARRAY_SZ, PROT_READ | PROT_WRITE, MAP_SHARED,
					      fd, 0);
				if (window == MAP_FAILED)
					die("mmap of the BPF array");
			}
			if (!map_vgem())
				note_skipped("drm");
		}
		if (window)
			window[(size_t)k * 4096] = (char)k;
		sleep_ms(2);
	}
	ckpt_exit(0);
}

int main(int argc, char **argv)
{
	struct io_uring_params p;
	char *array = NULL, *locked, *pinned;
	int fd, ring;

	ckpt_init(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "iters"))
		return iters();

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

	ckpt("pin");
	MEMWATCH_PHASE("pin");
	pinned = pin(ring);

	ckpt("drm");
	/* Through the socket: memwatch measures the buffer io_uring_register
	 * faulted in while the program waits, so "pin" ends with it. */
	memwatch_mark_phase("drm");	/* -1 untraced, or traced host-wide */
	if (!map_vgem())
		note_skipped("drm");
	map_cards();
	if (!map_heap())
		note_skipped("heap");
	if (!map_udmabuf())
		note_skipped("udmabuf");
	if (!map_devmem())
		note_skipped("devmem");

	ckpt("unmap");
	MEMWATCH_PHASE("unmap");
	/* Untraced; the munlock after it is traced: VmPin is read there. */
	if (ring >= 0)
		syscall(__NR_io_uring_register, ring, IORING_UNREGISTER_BUFFERS, NULL, 0);
	if (munlock(pinned, MIB(1)))
		die("munlock");
	if (array && munmap(array, ARRAY_SZ))
		die("munmap");
	sleep_ms(5);
	ckpt_exit(0);
}
