// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * heapwarm.c — start-up's parses of the kernel BTF into warm pages.
 *
 * libbpf parses the kernel's BTF for preflight's questions (kernel.c) and
 * again for each object it loads: the one that creates the maps, then the
 * two loaded in parallel (capture.c's load_split()).  Each parse reads the
 * file into a buffer of its size and copies it into another, 12 MB in all
 * on 6.18.  With glibc's defaults every parse faults in fresh pages: the
 * buffers are mmap()ed and unmapped (the initial mmap threshold is
 * 128 KiB), and the parallel load's thread gets a new arena.  On a VM
 * with shadow page tables a fault costs 11-16 us: 2,840 faults, 60 ms a
 * parse, and three such parses lay on the path to attached.
 *
 * So, within glibc's documented behaviour (mallopt(3)):
 *  - A block larger than two copies of the BTF, allocated and freed,
 *    raises the dynamic mmap threshold above it (a freed mmap()ed block
 *    sets it, up to 32 MiB; the trim threshold becomes twice that).  The
 *    parses' buffers then come from the heap and reuse the pages of the
 *    parse before (the maps object's parse still faults 1,200 pages in:
 *    small blocks split what preflight's freed).  The threshold stays
 *    dynamic: a fixed one (mallopt(M_MMAP_THRESHOLD)) holds for the whole
 *    run, and slowed the re-reads of stress-ng --brk's 27,000 VMAs when
 *    tried.
 *  - A thread faults in that much of its own arena while preflight parses,
 *    on another CPU, and exits.  glibc hands a finished thread's arena to
 *    the next thread created, the parallel load's: its parse takes 20 ms
 *    instead of 60, its whole load 45 ms instead of 150.
 * Once attached, malloc_trim() gives back what the run does not use.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "capture/heapwarm.h"
#include "util.h"

static pthread_t warm_thread;
static bool warm_running;
static size_t warm_bytes;

static void *warm_arena(void *arg)
{
	char *p = malloc(warm_bytes);

	(void)arg;
	if (!p)
		return NULL;
	/* One write a page, volatile: writes to a block about to be freed
	 * are dead stores the compiler drops (a memset() was). */
	for (size_t i = 0; i < warm_bytes; i += mw_page_size())
		((volatile char *)p)[i] = 1;
	free(p);
	return NULL;
}

void heapwarm_start(bool thread)
{
	struct stat st;
	void *volatile block;	/* volatile: kept although never used */

	if (stat("/sys/kernel/btf/vmlinux", &st) || st.st_size <= 0)
		return;
	/* Two copies of the BTF and its index; below the threshold set. */
	warm_bytes = 2 * (size_t)st.st_size + (2 << 20);
	block = malloc(warm_bytes + (1 << 20));
	free(block);
	if (thread)
		warm_running = pthread_create(&warm_thread, NULL, warm_arena, NULL) == 0;
}

void heapwarm_join(void)
{
	if (warm_running)
		pthread_join(warm_thread, NULL);
	warm_running = false;
}

void heapwarm_release(void)
{
	heapwarm_join();
	malloc_trim(0);
}
