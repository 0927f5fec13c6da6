// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_heapwalk.c — the walk of glibc's chunks (user/capture/heapwalk.c)
 * over arenas built by hand in a buffer: what is free, what is resident,
 * what malloc_trim(0) would give back, and every way a walk must give up.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "capture/heapwalk.h"
#include "unit.h"

#define PS	4096ull
#define BASE	(0x7f0000000000ull)	/* 64 MiB-aligned, like a thread heap */
#define SPAN	(1ull << 20)

static unsigned char mem[SPAN];
static bool absent[SPAN / PS];	/* pages not resident */
static int reads;

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	reads++;
	if (addr < BASE || addr + len > BASE + SPAN)
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static int fake_resident(void *ctx, uint64_t start, uint64_t end, uint64_t *bits)
{
	(void)ctx;
	for (uint64_t p = start, i = 0; p < end; p += PS, i++)
		if (p >= BASE && p < BASE + SPAN && !absent[(p - BASE) / PS])
			bits[i / 64] |= 1ull << (i % 64);
	return 0;
}

static const struct hw_mem fake = {
	.page_size = PS, .read = fake_read, .resident = fake_resident,
};

static void reset(void)
{
	memset(mem, 0, sizeof(mem));
	memset(absent, 0, sizeof(absent));
	reads = 0;
}

static void put(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, sizeof(v));
}

/* A chunk at off of size bytes; prev_free: the one before is free (size
 * prev) and this one's PREV_INUSE is clear. */
static uint64_t chunk(uint64_t off, uint64_t size, uint64_t prev_free)
{
	if (prev_free)
		put(BASE + off, prev_free);
	put(BASE + off + 8, size | (prev_free ? 0 : 1));
	return off + size;
}

/* The main arena of the tests: the tcache block, a free 64 KiB + 16, a
 * small live one, a free 12 KiB, a live one, and the top to end. */
static uint64_t build_main(uint64_t first, uint64_t end)
{
	uint64_t o = first;

	o = chunk(o, 0x290, 0);
	o = chunk(o, 0x10010, 0);		/* free: the next says so */
	o = chunk(o, 0x20, 0x10010);
	o = chunk(o, 0x3000, 0);		/* free */
	o = chunk(o, 0x30, 0x3000);
	return chunk(o, end - o, 0);		/* the top */
}

/* Whole pages of [a, b), a rounded up, b down. */
static uint64_t pages_in(uint64_t a, uint64_t b)
{
	a = (a + PS - 1) / PS * PS;
	b = b / PS * PS;
	return b > a ? b - a : 0;
}

TEST(main_arena_free_and_trim)
{
	uint64_t end = 0x40000, top = 0x290 + 0x10010 + 0x20 + 0x3000 + 0x30;
	uint64_t a1 = 0x290, a3 = 0x290 + 0x10010 + 0x20;
	uint64_t free_res = pages_in(a1 + 48, a1 + 0x10010) + pages_in(a3 + 48, a3 + 0x3000);
	struct hw_arena a;

	reset();
	build_main(0, end);
	if (!CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + end, 0, &a), 0))
		return;
	CHECK(a.main && !a.fenced);
	CHECK_EQ_U64(a.start, BASE);
	CHECK_EQ_U64(a.chunks, 6);
	CHECK_EQ_U64(a.free_chunks, 3);
	CHECK_EQ_U64(a.free_bytes, 0x10010 + 0x3000 + (end - top));
	/* The top: its pages past its first 48 bytes; malloc_trim: those past
	 * MINSIZE + 1 from its end, in whole pages. */
	CHECK_EQ_U64(a.free_resident, free_res + pages_in(top + 48, end));
	CHECK_EQ_U64(a.trim_resident, free_res + (end - top - 33) / PS * PS);
}

TEST(pages_not_resident_are_not_counted)
{
	uint64_t end = 0x40000, a1 = 0x290;
	struct hw_arena a, b;

	reset();
	build_main(0, end);
	CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + end, 0, &a), 0);
	absent[(a1 + 0x8000) / PS] = true;	/* inside the free 64 KiB */
	absent[end / PS - 1] = true;		/* the top's last page */
	if (!CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + end, 0, &b), 0))
		return;
	CHECK_EQ_U64(b.free_bytes, a.free_bytes);
	CHECK_EQ_U64(b.free_resident, a.free_resident - 2 * PS);
	CHECK_EQ_U64(b.trim_resident, a.trim_resident - 2 * PS);
}

TEST(first_chunk_found_past_the_start)
{
	struct hw_arena a;

	reset();
	build_main(0x40, 0x40000);
	if (!CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0x40000, 0, &a), 0))
		return;
	CHECK_EQ_U64(a.start, BASE + 0x40);
	CHECK_EQ_U64(a.chunks, 6);
}

TEST(gives_up_when_inconsistent)
{
	struct hw_arena a;

	/* Nothing that chains to the end: not an arena. */
	reset();
	CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0x40000, 0, &a), -ENOENT);
	/* A free chunk whose successor does not repeat its size: read while
	 * it changed. */
	reset();
	build_main(0, 0x40000);
	put(BASE + 0x290 + 0x10010, 0x999);
	CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0x40000, 0, &a), -EAGAIN);
	/* A chain that misses the break. */
	reset();
	build_main(0, 0x40000);
	CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0x3f000, 0, &a), -EAGAIN);
	/* A size that points past the end, or is not a multiple of 16. */
	reset();
	build_main(0, 0x40000);
	put(BASE + 0x290 + 8, 0x90001);
	CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0x40000, 0, &a), -EAGAIN);
	reset();
	build_main(0, 0x40000);
	put(BASE + 0x290 + 8, 0x10018 | 1);
	CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0x40000, 0, &a), -EAGAIN);
	/* A size of 0 would loop on itself. */
	reset();
	build_main(0, 0x40000);
	put(BASE + 0x290 + 8, 1);
	CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0x40000, 0, &a), -EAGAIN);
}

TEST(header_not_resident)
{
	struct hw_arena a;

	reset();
	build_main(0, 0x40000);
	/* The live chunk after the free 64 KiB: its header's page. */
	absent[(0x290 + 0x10010) / PS] = true;
	CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0x40000, 0, &a), -EFAULT);
}

TEST(free_chunks_step_over_unread_pages)
{
	struct hw_arena a;

	/* A free chunk of 512 KiB: its inside is not read. */
	reset();
	chunk(0, 0x290, 0);
	chunk(0x290, 0x80000, 0);
	chunk(0x80290, 0x20, 0x80000);
	chunk(0x802b0, 0x40000 - 0x2b0, 0);
	if (!CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0xc0000, 0, &a), 0))
		return;
	CHECK(reads <= 4);
	CHECK_EQ_U64(a.free_bytes, 0x80000 + 0x40000 - 0x2b0);
}

TEST(deadline)
{
	uint64_t o = 0;
	struct hw_arena a;

	reset();
	while (o < 0x30000)
		o = chunk(o, 0x20, 0);
	chunk(o, 0x40000 - o, 0);
	CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0x40000, 1, &a), -ETIME);
	CHECK_EQ_INT(heapwalk_main(&fake, BASE, BASE + 0x40000, 0, &a), 0);
	CHECK_EQ_U64(a.chunks, 0x30000 / 0x20 + 1);
}

/* A thread arena's first heap: heap_info (48 bytes, glibc 2.35+), the
 * arena's malloc_state (2,200 bytes), then chunks from 16-byte alignment. */
TEST(thread_arena_first_heap)
{
	uint64_t first = 48 + 2208, end = 0x21000, f1, f2;
	struct hw_arena a;

	reset();
	put(BASE, BASE + 48);		/* ar_ptr */
	put(BASE + 8, 0);		/* prev */
	put(BASE + 16, end);		/* size */
	put(BASE + 24, end);		/* mprotect_size */
	put(BASE + 48 + 0x60, 0x1234567);	/* a malloc_state field */
	f1 = chunk(first, 0x20, 0);
	f2 = chunk(f1, 0x8010, 0);		/* free */
	f2 = chunk(f2, 0x20, 0x8010);
	chunk(f2, end - f2, 0);			/* the top */
	if (!CHECK_EQ_INT(heapwalk_thread_heap(&fake, BASE, 0x40000, 0, &a), 0))
		return;
	CHECK(!a.main && !a.fenced);
	CHECK_EQ_U64(a.start, BASE + first);
	CHECK_EQ_U64(a.end, BASE + end);
	CHECK_EQ_U64(a.free_chunks, 2);
	CHECK_EQ_U64(a.free_bytes, 0x8010 + end - f2);
	/* A thread arena's top is not malloc_trim's. */
	CHECK_EQ_U64(a.trim_resident, pages_in(f1 + 48, f1 + 0x8010));
	CHECK_EQ_U64(a.free_resident, a.trim_resident + pages_in(f2 + 48, end));
}

/* glibc before 2.35: a heap_info of 32 bytes; an older heap of the arena,
 * ended by a fencepost where its top was. */
TEST(thread_arena_older_heap)
{
	uint64_t o = 32, end = 0x20000;
	struct hw_arena a;

	reset();
	put(BASE, BASE + 0x4000000 + 32);	/* ar_ptr: in the first heap */
	put(BASE + 8, BASE + 0x4000000);	/* prev */
	put(BASE + 16, end);
	put(BASE + 24, end);
	o = chunk(o, 0x1000, 0);
	o = chunk(o, 0x10000, 0);		/* the old top, freed */
	put(BASE + o, 0x10000);
	put(BASE + o + 8, 0x10);		/* fencepost, PREV_INUSE clear */
	put(BASE + o + 16 + 8, 0);		/* and a header of size 0 */
	if (!CHECK_EQ_INT(heapwalk_thread_heap(&fake, BASE, 0x40000, 0, &a), 0))
		return;
	CHECK(a.fenced);
	CHECK_EQ_U64(a.free_chunks, 1);
	CHECK_EQ_U64(a.free_bytes, 0x10000);
	CHECK_EQ_U64(a.trim_resident, pages_in(BASE + 32 + 0x1000 + 48, BASE + 32 + 0x11000));
}

TEST(not_a_thread_heap)
{
	struct hw_arena a;

	reset();
	CHECK_EQ_INT(heapwalk_thread_heap(&fake, BASE, 0x40000, 0, &a), -ENOENT);
	put(BASE, BASE + 40);		/* ar_ptr at no heap_info's size */
	put(BASE + 16, 0x20000);
	put(BASE + 24, 0x20000);
	CHECK_EQ_INT(heapwalk_thread_heap(&fake, BASE, 0x40000, 0, &a), -ENOENT);
	put(BASE, BASE + 48);
	put(BASE + 16, 0x80000);	/* a size past the mapping */
	CHECK_EQ_INT(heapwalk_thread_heap(&fake, BASE, 0x40000, 0, &a), -ENOENT);
	CHECK_EQ_INT(heapwalk_thread_heap(&fake, BASE + PS, 0x40000, 0, &a), -ENOENT);
}

int main(void)
{
	RUN(main_arena_free_and_trim);
	RUN(pages_not_resident_are_not_counted);
	RUN(first_chunk_found_past_the_start);
	RUN(gives_up_when_inconsistent);
	RUN(header_not_resident);
	RUN(free_chunks_step_over_unread_pages);
	RUN(deadline);
	RUN(thread_arena_first_heap);
	RUN(thread_arena_older_heap);
	RUN(not_a_thread_heap);
	return unit_done();
}
