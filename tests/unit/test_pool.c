// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_pool.c — analysis/pool.c: zeroed, distinct, aligned objects; freed
 * ones reused; chunks that the kernel marks for huge pages.
 */
#include <stdlib.h>

#include "analysis/pool.h"
#include "unit.h"

struct obj { char bytes[384]; };

static bool all_zero(const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)p)[i])
			return false;
	return true;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* Three chunks' worth: every object zeroed, 16-byte aligned, and no two
 * overlapping (sorted, each starts at or past the end of the one before). */
TEST(objects_are_zeroed_aligned_and_apart)
{
	struct mw_pool p = MW_POOL_INIT(struct obj);
	size_t n = 3 * (2u << 20) / sizeof(struct obj) + 7, bad = 0, overlap = 0;
	struct obj **v = calloc(n, sizeof(*v));

	if (!CHECK(v != NULL))
		return;
	for (size_t i = 0; i < n; i++) {
		v[i] = pool_zalloc(&p);
		if (!all_zero(v[i], sizeof(*v[i])) || ((uintptr_t)v[i] & 15))
			bad++;
		memset(v[i], 0xa5, sizeof(*v[i]));	/* writable, all of it */
	}
	CHECK_EQ_U64(bad, 0);
	qsort(v, n, sizeof(*v), cmp_ptr);
	for (size_t i = 1; i < n; i++)
		if ((uintptr_t)v[i] < (uintptr_t)v[i - 1] + sizeof(struct obj))
			overlap++;
	CHECK_EQ_U64(overlap, 0);
#ifndef MW_POOL_ASAN
	CHECK_EQ_U64(p.chunks, 4);	/* 5,461 to a chunk: 16,391 need four */
#endif
	for (size_t i = 0; i < n; i++)
		pool_free(&p, v[i]);
	free(v);
}

/* A freed object comes back zeroed, before the chunk is cut further. */
TEST(freed_objects_come_back_zeroed)
{
	struct mw_pool p = MW_POOL_INIT(struct obj);
	struct obj *a = pool_zalloc(&p), *b = pool_zalloc(&p), *c;

	memset(a, 0xff, sizeof(*a));
	memset(b, 0xff, sizeof(*b));
	pool_free(&p, a);
	pool_free(&p, NULL);	/* nothing */
	c = pool_zalloc(&p);
	CHECK(all_zero(c, sizeof(*c)));
#ifndef MW_POOL_ASAN
	CHECK(c == a);
	CHECK(p.next == (char *)b + sizeof(struct obj));
#endif
	pool_free(&p, b);
	pool_free(&p, c);
}

/* The kernel's own word for the chunk (/proc/self/smaps): one VMA that
 * starts on a 2 MiB boundary and carries VM_HUGEPAGE ("hg"). */
TEST(chunks_are_advised_huge_pages)
{
#ifndef MW_POOL_ASAN
	struct mw_pool p = MW_POOL_INIT(struct obj);
	uintptr_t at = (uintptr_t)pool_zalloc(&p), lo = 0, hi = 0;
	FILE *f = fopen("/proc/self/smaps", "r");
	bool in = false, hg = false;
	char line[512];

	if (!CHECK(f != NULL))
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx ", &a, &b) == 2) {
			in = at >= a && at < b;
			if (in)
				lo = a, hi = b;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			hg = strstr(line, " hg") != NULL;
		}
	}
	fclose(f);
	CHECK_EQ_U64(lo & ((2u << 20) - 1), 0);
	CHECK(hi - lo >= (2u << 20));
	CHECK(hg);
	pool_free(&p, (void *)at);
#endif
}

int main(void)
{
	RUN(objects_are_zeroed_aligned_and_apart);
	RUN(freed_objects_come_back_zeroed);
	RUN(chunks_are_advised_huge_pages);
	return unit_done();
}
