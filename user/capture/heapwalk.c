// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * heapwalk.c — glibc's arenas walked chunk by chunk (see heapwalk.h).
 *
 * The walk follows the size fields from the first chunk to the arena's
 * end.  Headers are read in runs of resident pages (up to HW_BLOCK bytes)
 * so a heap of small chunks costs one read per run, and a large chunk is
 * stepped over without being read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capture/heapwalk.h"
#include "capture/procfs.h"
#include "stream.h"
#include "util.h"

#define HW_SIZE_SZ	8ull
#define HW_ALIGN	16ull
#define HW_MINSIZE	32ull
#define HW_HDR		(2 * HW_SIZE_SZ)	/* CHUNK_HDR_SZ: a fencepost */
#define HW_CHUNK_STRUCT	48ull			/* sizeof(struct malloc_chunk) */
#define HW_PREV_INUSE	1ull
#define HW_FLAGS	7ull
#define HW_BLOCK	(64u << 10)
#define HW_TIME_EVERY	4096	/* chunks between looks at the clock */
/* How far into the [heap] the first chunk is looked for, and after a thread
 * arena's malloc_state (2,200 bytes from glibc 2.27 to 2.41). */
#define HW_MAIN_SEARCH	4096ull
#define HW_STATE_MIN	2048ull
#define HW_STATE_MAX	2560ull
#define HW_STATE_GUESS	2200ull

/* Residency is read from pagemap a window at a time, as the walk gets
 * there: a heap of gigabytes is not read whole before the deadline is
 * looked at. */
#define HW_WINDOW	32768	/* pages */

struct walk {
	const struct hw_mem *m;
	uint64_t base, end;	/* page-aligned span of the bitmap */
	uint64_t *bits;
	uint8_t *loaded;	/* per window: 0 not yet, 1 read, 2 failed */
	int err;		/* the first window that could not be read */
	uint64_t deadline;
	uint64_t blk_start, blk_end;	/* what buf holds */
	unsigned char buf[HW_BLOCK];
};

static bool page_resident(struct walk *w, uint64_t addr)
{
	uint64_t ps = w->m->page_size, i = (addr - w->base) / ps, win = i / HW_WINDOW;

	if (addr < w->base || addr >= w->end)
		return false;
	if (!w->loaded[win]) {
		uint64_t from = w->base + win * HW_WINDOW * ps;
		uint64_t to = MW_MIN(from + HW_WINDOW * ps, w->end);
		int err = w->deadline && mw_now_ns() >= w->deadline ? -ETIME :
			  w->m->resident(w->m->ctx, from, to, w->bits + win * (HW_WINDOW / 64));

		w->loaded[win] = err ? 2 : 1;
		if (err && !w->err)
			w->err = err;
	}
	return (w->bits[i / 64] >> (i % 64)) & 1;
}

/* Bytes of resident whole pages in [a, b). */
static uint64_t resident_between(struct walk *w, uint64_t a, uint64_t b)
{
	uint64_t ps = w->m->page_size, n = 0;

	a = (a + ps - 1) / ps * ps;
	b = b / ps * ps;
	for (uint64_t p = a; p < b; p += ps)
		n += page_resident(w, p);
	return n * ps;
}

/* The 8 bytes at addr (8-aligned), from a resident page. */
static int read_word(struct walk *w, uint64_t addr, uint64_t *v)
{
	uint64_t ps = w->m->page_size, from, to;
	int err;

	if (addr < w->blk_start || addr + 8 > w->blk_end) {
		from = addr / ps * ps;
		if (!page_resident(w, from))
			return w->err ? w->err : -EFAULT;
		to = from + ps;
		while (to < w->end && to - from < HW_BLOCK && page_resident(w, to))
			to += ps;
		if (to - from > HW_BLOCK)
			to = from + HW_BLOCK;
		w->blk_start = w->blk_end = 0;
		err = w->m->read(w->m->ctx, from, w->buf, to - from);
		if (err)
			return err;
		w->blk_start = from;
		w->blk_end = to;
	}
	memcpy(v, w->buf + (addr - w->blk_start), sizeof(*v));
	return 0;
}

static void walk_free(struct walk *w)
{
	free(w->bits);
	free(w->loaded);
	free(w);
}

static int walk_init(struct walk *w, const struct hw_mem *m, uint64_t start, uint64_t end,
		     uint64_t deadline)
{
	uint64_t ps = m->page_size, npages;

	memset(w, 0, offsetof(struct walk, buf));
	if (!ps || ps & (ps - 1) || ps < 4096 || ps > HW_BLOCK || start >= end)
		return -EINVAL;
	w->m = m;
	w->base = start / ps * ps;
	w->end = (end + ps - 1) / ps * ps;
	w->deadline = deadline;
	npages = (w->end - w->base) / ps;
	/* Whole windows, so that each is filled in place. */
	w->bits = calloc((npages + HW_WINDOW - 1) / HW_WINDOW * (HW_WINDOW / 64),
			 sizeof(*w->bits));
	w->loaded = calloc((npages + HW_WINDOW - 1) / HW_WINDOW, 1);
	return w->bits && w->loaded ? 0 : -ENOMEM;
}

/* The chain from first to end on an initialised walk. */
static int walk_chain(struct walk *w, uint64_t first, uint64_t end, bool main,
		      struct hw_arena *out)
{
	uint64_t p = first, size, next, nhdr[2], ps = w->m->page_size;
	int err;

	memset(out, 0, sizeof(*out));
	out->start = first;
	out->end = end;
	out->main = main;
	if (first % HW_ALIGN || first >= end || first < w->base || end > w->end)
		return -ENOENT;
	if ((err = read_word(w, p + HW_SIZE_SZ, &size)))
		return err;
	for (;;) {
		if (++out->chunks % HW_TIME_EVERY == 0 && w->deadline &&
		    mw_now_ns() >= w->deadline)
			return -ETIME;
		if (w->err)
			return w->err;
		size &= ~HW_FLAGS;
		if (size == HW_HDR && !main) {
			/* A thread arena's older heap ends in a fencepost: a
			 * chunk of one header, then a header of size 0. */
			if (p + size + HW_HDR > end ||
			    (err = read_word(w, p + size + HW_SIZE_SZ, &nhdr[1])))
				return err ? err : -EAGAIN;
			if (nhdr[1] & ~HW_FLAGS)
				return -EAGAIN;
			out->chunks--;
			out->fenced = true;
			return 0;
		}
		if (size < HW_MINSIZE || size % HW_ALIGN || size > end - p)
			return -EAGAIN;
		next = p + size;
		if (next == end)
			break;
		if ((err = read_word(w, next, &nhdr[0])) ||
		    (err = read_word(w, next + HW_SIZE_SZ, &nhdr[1])))
			return err;
		if (!(nhdr[1] & HW_PREV_INUSE)) {
			/* Free: its size is repeated in the next one's
			 * prev_size, else the two were read at odd times. */
			uint64_t inner;

			if (nhdr[0] != size)
				return -EAGAIN;
			inner = resident_between(w, p + HW_CHUNK_STRUCT, next);
			out->free_chunks++;
			out->free_bytes += size;
			out->free_resident += inner;
			out->trim_resident += inner;
		}
		p = next;
		size = nhdr[1];
	}
	if (w->err)
		return w->err;
	/* p is the top. */
	out->free_chunks++;
	out->free_bytes += size;
	out->free_resident += resident_between(w, p + HW_CHUNK_STRUCT, end);
	if (main && size > HW_MINSIZE + 1) {
		/* systrim(0): the top less MINSIZE + 1, in whole pages. */
		uint64_t extra = (size - HW_MINSIZE - 1) / ps * ps;

		out->trim_resident += resident_between(w, end - extra, end);
	}
	return w->err;
}

/*
 * Try each candidate first chunk in [from, to) (the guess first): the one
 * whose chain ends exactly at end.  A wrong start reads a size that is out
 * of range or misses the end within a few chunks.  If none does, the
 * guess's error where it got past its first chunk (a heap that changed
 * while read), else -ENOENT: not an arena.
 */
static int walk_from(const struct hw_mem *m, uint64_t span, uint64_t guess, uint64_t from,
		     uint64_t to, uint64_t end, bool main, uint64_t deadline,
		     struct hw_arena *out)
{
	struct walk *w = malloc(sizeof(*w));
	int err, first_err;

	if (!w)
		return -ENOMEM;
	err = walk_init(w, m, span, end, deadline);
	if (err)
		goto out;
	err = first_err = walk_chain(w, guess, end, main, out);
	if (err && out->chunks < 2)
		first_err = -ENOENT;
	for (uint64_t c = from; err && err != -ETIME && c < to; c += HW_ALIGN)
		if (c != guess)
			err = walk_chain(w, c, end, main, out);
	if (err && err != -ETIME)
		err = first_err;
out:
	walk_free(w);
	return err;
}

int heapwalk_main(const struct hw_mem *m, uint64_t start, uint64_t end,
		  uint64_t deadline, struct hw_arena *out)
{
	uint64_t to = start + HW_MAIN_SEARCH < end ? start + HW_MAIN_SEARCH : end;

	return walk_from(m, start, start, start, to, end, true, deadline, out);
}

/*
 * glibc's heap_info: ar_ptr, prev, size, mprotect_size (and pagesize from
 * 2.35), padded to 16 bytes: 32 or 48.  The arena's first heap holds its
 * malloc_state right after (ar_ptr points there); an older heap's ar_ptr
 * points into that first heap, at the same offset.
 */
int heapwalk_thread_heap(const struct hw_mem *m, uint64_t start, uint64_t len,
			 uint64_t deadline, struct hw_arena *out)
{
	uint64_t h[4], info, end, first;

	uint64_t first_page = 0;

	memset(out, 0, sizeof(*out));
	if (start % MW_HEAP_MAX_SIZE || !len || len > MW_HEAP_MAX_SIZE)
		return -ENOENT;
	/* Its first page is written first: not resident, not a heap (and
	 * not read: that would bring it in). */
	if (m->resident(m->ctx, start, start + m->page_size, &first_page) || !first_page ||
	    m->read(m->ctx, start, h, sizeof(h)))
		return -ENOENT;
	info = h[0] % MW_HEAP_MAX_SIZE;
	if ((info != 32 && info != 48) || h[2] < m->page_size || h[2] > len ||
	    h[3] < h[2] || h[3] > MW_HEAP_MAX_SIZE)
		return -ENOENT;
	end = start + h[2];
	if (h[0] == start + info) {
		/* The arena's own first heap: chunks after malloc_state. */
		if (h[1])
			return -ENOENT;
		first = h[0] + HW_STATE_GUESS;
		first = (first + HW_ALIGN - 1) / HW_ALIGN * HW_ALIGN;
		return walk_from(m, start, first, h[0] + HW_STATE_MIN, h[0] + HW_STATE_MAX,
				 end, false, deadline, out);
	}
	if (!h[1] || h[1] % MW_HEAP_MAX_SIZE)
		return -ENOENT;
	first = start + info;
	return walk_from(m, start, first, first, first, end, false, deadline, out);
}

/* ---- a live process ------------------------------------------------------- */

struct hw_proc {
	pid_t pid;
	int pagemap_fd;
};

static int proc_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct hw_proc *p = ctx;
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* Resident as the RSS counters have it (procfs: present, not a zero page),
 * from the pagemap heapwalk_process() opened. */
static int proc_resident(void *ctx, uint64_t start, uint64_t end, uint64_t *bits)
{
	const struct hw_proc *p = ctx;

	return p->pagemap_fd < 0 ? p->pagemap_fd :
	       procfs_pagemap_resident_fd(p->pagemap_fd, start, end, bits);
}

static void walk_one(const struct hw_mem *mem, const struct hw_region *r, uint64_t at,
		     uint64_t deadline, struct mw_heapfree *hf)
{
	uint64_t t0 = mw_now_ns();
	struct hw_arena a = { 0 };
	int err;

	if (r->heap)
		err = heapwalk_main(mem, r->start, r->end, deadline, &a);
	else
		err = heapwalk_thread_heap(mem, at, MW_MIN(r->end - at, MW_HEAP_MAX_SIZE),
					   deadline, &a);
	hf->mapping = r->start;
	hf->err = err;
	if (!err) {
		hf->start = a.start;
		hf->end = a.end;
		hf->main = a.main;
		hf->fenced = a.fenced;
		hf->chunks = a.chunks;
		hf->free_chunks = a.free_chunks;
		hf->free_bytes = a.free_bytes;
		hf->free_resident = a.free_resident;
		hf->trim_resident = a.trim_resident;
	}
	hf->walk_ns = mw_now_ns() - t0;
	if (err != -ENOENT || r->heap)
		mw_dbg("malloc arena at %#llx: %s, %llu chunks, %llu free (%llu resident, "
		       "malloc_trim %llu) in %.1f ms", (unsigned long long)at,
		       err ? strerror(-err) : "read", (unsigned long long)a.chunks,
		       (unsigned long long)a.free_bytes, (unsigned long long)a.free_resident,
		       (unsigned long long)a.trim_resident, hf->walk_ns / 1e6);
}

void heapwalk_process(pid_t pid, int pagemap_fd, const struct hw_region *r, size_t n,
		      uint64_t deadline, void (*emit)(void *ctx, const struct mw_heapfree *hf),
		      void *ctx)
{
	struct hw_proc p = { pid, pagemap_fd >= 0 ? pagemap_fd : procfs_pagemap_open(pid) };
	struct hw_mem mem = {
		.ctx = &p,
		.page_size = (uint64_t)sysconf(_SC_PAGESIZE),
		.read = proc_read,
		.resident = proc_resident,
	};

	for (size_t i = 0; i < n; i++) {
		uint64_t at = r[i].heap ? r[i].start :
			      (r[i].start + MW_HEAP_MAX_SIZE - 1) / MW_HEAP_MAX_SIZE * MW_HEAP_MAX_SIZE;

		for (; at < r[i].end; at += MW_HEAP_MAX_SIZE) {
			struct mw_heapfree hf = { .pid = (uint32_t)pid };

			walk_one(&mem, &r[i], at, deadline, &hf);
			if (hf.err != -ENOENT || r[i].heap)
				emit(ctx, &hf);
			if (r[i].heap)
				break;
		}
	}
	if (p.pagemap_fd >= 0 && p.pagemap_fd != pagemap_fd)
		close(p.pagemap_fd);
}
