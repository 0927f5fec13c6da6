// SPDX-License-Identifier: GPL-2.0
/*
 * faultkinds.c - iterations that each make one kind of page fault.
 *
 * usage: faultkinds [REGION_MIB=4]
 *
 * Before the iterations: a region of private anonymous memory (no THP: a
 * fault per page) and a file of the same size in $MW_CKPT_DIR (written
 * with write(): its pages are in the page cache), mapped twice, shared
 * read-only and private read-write.  Then phase "kinds" and six iterations
 * (MEMWATCH_ITER), one kind each:
 *   1. first touch: a byte written to each page of the region;
 *   2. refault: MADV_DONTNEED on the region, then each page written again;
 *   3. copy-on-write: a child is forked (it only waits), the parent writes
 *      each page of the region (no RSS counter moves: an anonymous page for
 *      an anonymous page), then the child is killed and reaped.  Both run
 *      on the CPU the parent was on.  After its first page the parent
 *      makes a traced call that changes nothing (MADV_WILLNEED), then the
 *      child faults there once while the parent waits: that first fault,
 *      which moved no counter, waits for its mapping through both
 *      (bpf/fault.bpf.h: cpu_fault_end(), cpu_fault_leave());
 *   4. file: a byte read from each page of the shared file mapping (fault
 *      around maps up to 16 pages per fault);
 *   5. file again, on the private mapping;
 *   6. file copy: each page of the private mapping written (a file page
 *      becomes a private anonymous copy).
 * Checkpoint "kinds" is taken right before that phase's marker, "iter<k>"
 * right before iteration k's and "end" after the last, before phase
 * "end": the kernel's count of
 * iteration k's faults is minflt + majflt of the next checkpoint less this
 * one's.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"
#include "../../include/memwatch.h"

static size_t page;

/* Pin the caller to the CPU it is on; returns the mask it had. */
static cpu_set_t pin_here(void)
{
	cpu_set_t old, one;
	int cpu = sched_getcpu();

	if (sched_getaffinity(0, sizeof(old), &old))
		die("sched_getaffinity");
	CPU_ZERO(&one);
	CPU_SET(cpu < 0 ? 0 : cpu, &one);
	if (cpu >= 0 && sched_setaffinity(0, sizeof(one), &one))
		die("sched_setaffinity");
	return old;
}

/*
 * Iteration 3: fork a child on this CPU, write the region's first page,
 * make a traced call, and have the child fault once (a page of its own)
 * before the rest.
 */
static pid_t cow_with_other_fault(char *region, size_t size)
{
	cpu_set_t old = pin_here();
	int go[2], done[2];
	pid_t child;
	char b = 0;

	if (pipe(go) || pipe(done))
		die("pipe");
	child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		char *own = map_anon(page);

		if (read(go[0], &b, 1) != 1)
			_exit(1);
		own[0] = 1;
		if (write(done[1], &b, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	region[0] = 1;
	if (madvise(region, page, MADV_WILLNEED))
		die("madvise WILLNEED");
	if (write(go[1], &b, 1) != 1 || read(done[0], &b, 1) != 1)
		die("child");
	touch(region, size);
	sched_setaffinity(0, sizeof(old), &old);
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
	return child;
}

static unsigned read_each(const char *p, size_t len)
{
	unsigned sum = 0;

	for (size_t off = 0; off < len; off += page)
		sum += *(volatile const char *)(p + off);
	return sum;
}

int main(int argc, char **argv)
{
	static char path[4096], block[65536];
	const char *dir = getenv("MW_CKPT_DIR");
	char *region, *shared, *private;
	size_t size, off;
	pid_t child;
	int fd;

	ckpt_init(argc, argv);
	if (!MEMWATCH_MARKERS) {
		errno = ENOSYS;
		die("built without <sys/sdt.h>");
	}
	page = sysconf(_SC_PAGESIZE);
	size = arg_mib(argc, argv, 1, 4);
	region = map_anon(size);
	if (madvise(region, size, MADV_NOHUGEPAGE))
		die("madvise");
	if (strlen(dir ? dir : "/tmp") + 16 > sizeof(path))
		die("MW_CKPT_DIR too long");
	strcpy(path, dir ? dir : "/tmp");
	strcat(path, "/faultkinds.dat");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("open");
	memset(block, 'k', sizeof(block));
	for (off = 0; off < size; off += sizeof(block))
		if (write(fd, block, sizeof(block)) != (ssize_t)sizeof(block))
			die("write");
	shared = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	private = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (shared == MAP_FAILED || private == MAP_FAILED)
		die("mmap file");
	/* No read-ahead past what a fault maps around it. */
	madvise(shared, size, MADV_RANDOM);
	madvise(private, size, MADV_RANDOM);

	ckpt("kinds");
	MEMWATCH_PHASE("kinds");
	ckpt("iter1");
	MEMWATCH_ITER();
	touch(region, size);

	ckpt("iter2");
	MEMWATCH_ITER();
	if (madvise(region, size, MADV_DONTNEED))
		die("madvise DONTNEED");
	touch(region, size);

	ckpt("iter3");
	MEMWATCH_ITER();
	child = cow_with_other_fault(region, size);
	reap_child(child);

	ckpt("iter4");
	MEMWATCH_ITER();
	read_each(shared, size);

	ckpt("iter5");
	MEMWATCH_ITER();
	read_each(private, size);

	ckpt("iter6");
	MEMWATCH_ITER();
	touch(private, size);

	ckpt("end");
	MEMWATCH_PHASE("end");
	unlink(path);
	ckpt_exit(0);
}
