/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fuzz.h — helpers shared by the libFuzzer targets in tests/fuzz/.
 *
 * Every target hands the code under test a heap copy of exactly the bytes it
 * may read, so under ASan a read one byte past the end aborts.  A broken
 * documented contract (e.g. "on error @out is left empty") is a finding too:
 * FUZZ_CHECK aborts with the condition, which libFuzzer reports as a crash.
 */
#ifndef MW_FUZZ_H
#define MW_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: contract broken: %s\n",		\
			__FILE__, __LINE__, #cond);			\
		abort();						\
	}								\
} while (0)

/* Exactly @n bytes on the heap (malloc(0) may return NULL: use 1). */
static inline char *fuzz_dup(const uint8_t *data, size_t n)
{
	char *p = malloc(n ? n : 1);

	if (!p)
		abort();
	if (n)
		memcpy(p, data, n);
	return p;
}

/* @n bytes plus a terminating NUL. */
static inline char *fuzz_dup_str(const uint8_t *data, size_t n)
{
	char *p = malloc(n + 1);

	if (!p)
		abort();
	if (n)
		memcpy(p, data, n);
	p[n] = '\0';
	return p;
}

static inline int fuzz_all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

#endif /* MW_FUZZ_H */
