// SPDX-License-Identifier: GPL-2.0
/*
 * shm.c - the four ways to get shared memory, all counted as RssShmem:
 * shared anonymous mmap, memfd, a file in /dev/shm, and SysV shm.
 *
 * usage: shm [anon_mib=16] [memfd_mib=8] [devshm_mib=8] [sysv_mib=4]
 *
 * Every region is fully touched.  Names in /proc/self/maps:
 *   shared anon  "/dev/zero (deleted)"
 *   memfd        "/memfd:mwtest (deleted)"
 *   /dev/shm     "/dev/shm/mw-shm-XXXXXX" (unlinked just before exit)
 *   SysV         "/SYSV00000000 (deleted)" (IPC_RMID right after shmat)
 *
 * Checkpoints:
 *   all    RssShmem += anon + memfd + devshm + sysv
 *   final  SysV detached, memfd unmapped: RssShmem -= memfd + sysv
 */
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include "ckpt.h"

static void *map_shared_fd(int fd, size_t size)
{
	void *p;

	if (ftruncate(fd, size))
		die("ftruncate");
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap shared");
	/* The mapping holds its own reference; the fd is not needed. */
	close(fd);
	return p;
}

static void *map_shared_anon(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap shared anon");
	return p;
}

/* Attach a private SysV segment that vanishes once detached. */
static void *attach_sysv(size_t size)
{
	void *p;
	int id;

	id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
	if (id < 0)
		die("shmget");
	p = shmat(id, NULL, 0);
	if (p == (void *)-1)
		die("shmat");
	/* Mark for removal now, so a crash cannot leak the segment. */
	if (shmctl(id, IPC_RMID, NULL))
		die("shmctl IPC_RMID");
	return p;
}

int main(int argc, char **argv)
{
	char devshm_path[] = "/dev/shm/mw-shm-XXXXXX";
	size_t anon_sz, memfd_sz, devshm_sz, sysv_sz;
	char *anon, *memfd, *devshm, *sysv;
	int fd;

	ckpt_init(argc, argv);
	anon_sz = arg_mib(argc, argv, 1, 16);
	memfd_sz = arg_mib(argc, argv, 2, 8);
	devshm_sz = arg_mib(argc, argv, 3, 8);
	sysv_sz = arg_mib(argc, argv, 4, 4);
	if (!anon_sz || !memfd_sz || !devshm_sz || !sysv_sz)
		die("sizes must be positive");

	anon = map_shared_anon(anon_sz);
	touch(anon, anon_sz);

	fd = memfd_create("mwtest", MFD_CLOEXEC);
	if (fd < 0)
		die("memfd_create");
	memfd = map_shared_fd(fd, memfd_sz);
	touch(memfd, memfd_sz);

	fd = mkstemp(devshm_path);
	if (fd < 0)
		die("mkstemp /dev/shm");
	devshm = map_shared_fd(fd, devshm_sz);
	touch(devshm, devshm_sz);

	sysv = attach_sysv(sysv_sz);
	touch(sysv, sysv_sz);
	ckpt("all");

	if (shmdt(sysv))
		die("shmdt");
	if (munmap(memfd, memfd_sz))
		die("munmap memfd");
	/* Keep the /dev/shm mapping; only its name goes away. */
	if (unlink(devshm_path))
		die("unlink /dev/shm file");
	ckpt_exit(0);
}
