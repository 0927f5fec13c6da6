/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * unit.h — the whole unit-test harness, header-only.
 *
 *	TEST(parses_empty) { CHECK_EQ_INT(parse("", 0), 0); }
 *
 *	int main(void)
 *	{
 *		RUN(parses_empty);
 *		return unit_done();
 *	}
 *
 * Every CHECK* counts as one check and evaluates to true when it passed,
 * so a test can stop before using a result that is not there:
 *
 *	if (!CHECK_EQ_INT(err, 0))
 *		return;
 *
 * Failures go to stderr as "file:line: test: what"; unit_done() prints the
 * one summary line "N passed, N failed" to stdout (tests/run-unit adds
 * those up) and returns the exit status.  Include it from one file per
 * test binary: the counters are static.
 */
#ifndef MEMWATCH_UNIT_H
#define MEMWATCH_UNIT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/*
 * The tests' synthetic records count in 4 KiB pages, as recorded on x86-64,
 * on every machine (an arm64 one with 16 KiB pages too): after util.c's
 * constructor (priority 101) has set this machine's.  A test of another
 * page size sets it itself; a replayed recording sets its own.
 */
int mw_page_size_set(uint64_t bytes);
__attribute__((constructor)) static void unit_page_size(void)
{
	mw_page_size_set(4096);
}

static unsigned long unit_passed, unit_failed;
static const char *unit_test = "main";

__attribute__((format(printf, 4, 5)))
static inline bool unit_check(bool ok, const char *file, int line,
			      const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		unit_passed++;
		return true;
	}
	unit_failed++;
	fprintf(stderr, "%s:%d: %s: ", file, line, unit_test);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return false;
}

static inline bool unit_check_u64(uint64_t a, uint64_t b, const char *as,
				  const char *bs, const char *file, int line)
{
	return unit_check(a == b, file, line,
			  "%s == %s: %" PRIu64 " (0x%" PRIx64 ") != %" PRIu64
			  " (0x%" PRIx64 ")", as, bs, a, a, b, b);
}

static inline bool unit_check_int(long long a, long long b, const char *as,
				  const char *bs, const char *file, int line)
{
	return unit_check(a == b, file, line, "%s == %s: %lld != %lld",
			  as, bs, a, b);
}

static inline bool unit_check_str(const char *a, const char *b,
				  const char *as, const char *bs,
				  const char *file, int line)
{
	bool ok = a && b ? !strcmp(a, b) : a == b;

	return unit_check(ok, file, line, "%s == %s: \"%s\" != \"%s\"",
			  as, bs, a ? a : "(null)", b ? b : "(null)");
}

#define CHECK(cond) \
	unit_check(!!(cond), __FILE__, __LINE__, "CHECK(%s)", #cond)
#define CHECK_EQ_U64(a, b) \
	unit_check_u64((a), (b), #a, #b, __FILE__, __LINE__)
#define CHECK_EQ_INT(a, b) \
	unit_check_int((a), (b), #a, #b, __FILE__, __LINE__)
#define CHECK_STR(a, b) \
	unit_check_str((a), (b), #a, #b, __FILE__, __LINE__)

#define TEST(name) static void name(void)

/* Run one test; its name prefixes any failure it reports. */
#define RUN(name) do {		\
		unit_test = #name;	\
		name();			\
		unit_test = "main";	\
	} while (0)

/* xorshift64: random test input, the same sequence on every run for a
 * given non-zero seed *x. */
static inline uint64_t unit_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static inline int unit_done(void)
{
	printf("%lu passed, %lu failed\n", unit_passed, unit_failed);
	fflush(stdout);
	return unit_failed ? 1 : 0;
}

#endif /* MEMWATCH_UNIT_H */
