/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * heapwalk.h — what glibc's malloc holds free, read from the process.
 *
 * "Released but kept" (user/analysis/findings.c) asks how much of what a
 * program freed its allocator still holds resident.  RSS cannot tell a
 * free chunk from a live one; the chunks' own headers can.  At the end of
 * a phase named for a release, while the program waits (for a socket
 * mark's answer, or held at its exit), memwatch walks each of glibc's
 * arenas in the process (user/trace.c):
 *
 *   - the main arena: the [heap], from its start to the break;
 *   - a thread arena's heap: a mapping aligned to HEAP_MAX_SIZE (64 MiB)
 *     that starts with a heap_info whose arena pointer and size agree.
 *
 * A chunk is a header (prev_size, then its size with 3 flag bits) and the
 * caller's bytes; it is free when the next chunk's PREV_INUSE bit is clear
 * (and that chunk's prev_size repeats its size); the top chunk ends the
 * arena.  What malloc_trim(0) gives back (glibc's mtrim and systrim) is
 * every whole page inside a free chunk past its first 48 bytes (struct
 * malloc_chunk), and the main arena's top past MINSIZE: those pages, where
 * resident, are trim_resident.  A thread arena's top goes back when free()
 * finds it over the trim threshold, never by malloc_trim: it counts in
 * free_resident only.  Chunks held in tcache and fastbins look in use and
 * are not counted (tcache keeps at most 7 chunks of up to 1 KiB per size).
 *
 * Only resident pages are read, so the walk faults nothing in.  Anything
 * inconsistent (a size out of range, a free chunk whose successor does not
 * repeat its size, a chain that misses the arena's end) gives the arena
 * up: a walk that raced the program's threads is discarded, never half
 * counted.  64-bit glibc: 8-byte sizes, 16-byte alignment.
 */
#ifndef MW_HEAPWALK_H
#define MW_HEAPWALK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MW_HEAP_MAX_SIZE	(64ull << 20)	/* glibc's HEAP_MAX_SIZE, 64-bit */

/* Where the walk reads: a live process (heapwalk_proc_*) or, in tests,
 * a buffer. */
struct hw_mem {
	void *ctx;
	uint64_t page_size;
	/* len bytes at addr: 0 or -errno. */
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	/* Residency of the pages of [start, end) (page-aligned): bit i of
	 * bits for the i-th page.  0 or -errno. */
	int (*resident)(void *ctx, uint64_t start, uint64_t end, uint64_t *bits);
};

struct hw_arena {
	uint64_t start, end;	/* the memory walked: first chunk to the end */
	bool main;		/* the main arena (the [heap]) */
	bool fenced;		/* a thread arena's older heap: no top */
	uint64_t chunks;	/* walked, the top included */
	uint64_t free_chunks;	/* free, the top included */
	uint64_t free_bytes;	/* their sizes */
	uint64_t free_resident;	/* resident whole pages inside them */
	uint64_t trim_resident;	/* ... of which malloc_trim(0) gives back */
};

/*
 * The main arena: the [heap] is [start, end), its end the break.  The first
 * chunk is looked for in its first page.  0, or -ENOENT (no chain of
 * chunks ends at the break: not glibc's, or not contiguous), -EAGAIN
 * (inconsistent: it changed while read), -EFAULT (a header not resident
 * or not readable), -ETIME (deadline, CLOCK_MONOTONIC ns; 0: none).
 */
int heapwalk_main(const struct hw_mem *m, uint64_t start, uint64_t end,
		  uint64_t deadline, struct hw_arena *out);
/*
 * A mapping [start, start + len) that may be one of a thread arena's heaps.
 * The same results; -ENOENT also when it does not start with a heap_info.
 */
int heapwalk_thread_heap(const struct hw_mem *m, uint64_t start, uint64_t len,
			 uint64_t deadline, struct hw_arena *out);
/* A mapping of the process that may hold malloc's memory: the [heap], or
 * a writable anonymous mapping. */
struct hw_region {
	uint64_t start, end;
	bool heap;
};

struct mw_heapfree;

/*
 * Walk the arenas of process pid in regions r[0..n): the [heap] as the main
 * arena, and each HEAP_MAX_SIZE-aligned stretch of the others as a thread
 * arena's heap (the kernel merges heaps that lie next to each other and
 * have grown whole).  emit() gets one stream record (stream.h) for each
 * arena read or given up; a stretch that is no heap gets none.  pagemap_fd:
 * the process's, or -1 (opened here, once).  All by deadline.
 */
void heapwalk_process(pid_t pid, int pagemap_fd, const struct hw_region *r, size_t n,
		      uint64_t deadline, void (*emit)(void *ctx, const struct mw_heapfree *hf),
		      void *ctx);

#endif /* MW_HEAPWALK_H */
