// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* util.c — exit codes, error reporting, time and size formatting. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int mw_verbose;

void mw_err(const char *fmt, ...)
{
	va_list ap;

	fputs("memwatch: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *mw_open_strerror(int err)
{
	if (err == ELOOP)
		return "it is a symbolic link, and memwatch does not follow one there";
	return strerror(err);
}

void mw_dbg(const char *fmt, ...)
{
	va_list ap;

	if (!mw_verbose)
		return;
	fprintf(stderr, "memwatch: debug: %.3f: ", mw_now_ns() / 1e9);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

unsigned int mw_page_shift = 12;

int mw_page_size_set(uint64_t bytes)
{
	for (unsigned int shift = 12; shift <= 20; shift++) {
		if (bytes == (uint64_t)1 << shift) {
			mw_page_shift = shift;
			return 0;
		}
	}
	return -1;
}

/* Before main() and before other constructors: the unit tests and fuzzers
 * see this machine's too, unless they say otherwise (tests/unit/unit.h). */
__attribute__((constructor(101))) static void page_size_init(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	if (ps > 0)
		mw_page_size_set((uint64_t)ps);
}

uint64_t mw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

const char *mw_human(int64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	uint64_t mag = bytes < 0 ? -(uint64_t)bytes : (uint64_t)bytes;
	const char *sign = bytes < 0 ? "-" : "";
	double v = (double)mag;
	size_t u = 0;

	if (mag < 1024) {
		snprintf(buf, len, "%s%llu B", sign, (unsigned long long)mag);
		return buf;
	}
	while (v >= 1024 && u + 1 < MW_ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%s%.1f %s", sign, v, units[u]);
	return buf;
}

int64_t mw_scale(int64_t v, uint64_t num, uint64_t den)
{
	__int128 r;

	if (!den)
		return 0;
	r = (__int128)v * num / den;
	if (r > INT64_MAX)
		return INT64_MAX;
	if (r < INT64_MIN)
		return INT64_MIN;
	return (int64_t)r;
}

static void *check_alloc(void *p)
{
	if (!p) {
		mw_err("out of memory");
		exit(MW_EXIT_RUNTIME);
	}
	return p;
}

void *mw_xcalloc(size_t n, size_t size)
{
	return check_alloc(calloc(n ? n : 1, size ? size : 1));
}

void *mw_xrealloc(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		mw_err("out of memory");
		exit(MW_EXIT_RUNTIME);
	}
	return check_alloc(realloc(p, n && size ? n * size : 1));
}

char *mw_xstrdup(const char *s)
{
	return check_alloc(strdup(s ? s : ""));
}

char *mw_xstrdup_text(const char *s)
{
	char *out = mw_xstrdup(s);
	size_t n = strlen(out), i = 0, k;
	uint32_t cp;

	while (i < n) {
		k = mw_utf8_len((const unsigned char *)out + i, n - i, &cp);
		if (!k || cp < 0x20 || cp == 0x7f) {
			out[i++] = '?';
			continue;
		}
		i += k;
	}
	return out;
}

size_t mw_utf8_len(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len, i;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;		/* overlong, or beyond Unicode */
	if (c >= 0xd800 && c <= 0xdfff)
		return 0;		/* surrogates are no characters */
	*cp = c;
	return len;
}
