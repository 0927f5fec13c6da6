/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* util.h — exit codes, error reporting, time and size formatting. */
#ifndef MW_UTIL_H
#define MW_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Exit codes: each failure a user can cause has its own.  In '-- CMD' mode a
 * successful trace exits with CMD's status instead (128+N if killed by
 * signal N), and 126/127 when CMD cannot be run, as shells do.
 * Keep docs/usage.md's table in step with this list.
 */
enum mw_exit {
	MW_EXIT_OK = 0,
	MW_EXIT_RUNTIME = 1,	/* unexpected failure while tracing */
	MW_EXIT_USAGE = 2,	/* bad option or argument */
	MW_EXIT_PERM = 3,	/* not root / missing CAP_BPF, CAP_PERFMON */
	MW_EXIT_NOBTF = 4,	/* kernel has no BTF (/sys/kernel/btf/vmlinux) */
	MW_EXIT_TRACEFS = 5,	/* tracefs not mounted and cannot be mounted */
	MW_EXIT_NOPID = 6,	/* PID missing, a kernel thread, a zombie, ourselves */
	MW_EXIT_OUTPUT = 7,	/* output file cannot be written */
	MW_EXIT_BPF = 8,	/* BPF programs failed to load or attach */
	MW_EXIT_KERNEL = 9,	/* kernel lacks a required feature */
	MW_EXIT_RECORDING = 10,	/* recording unreadable: truncated, corrupt, other version */
	MW_EXIT_PROBE = 11,	/* --phase-at/--iter: binary or symbol not found */
	MW_EXIT_NOSESSION = 12,	/* memwatch mark: no session to mark */
	MW_EXIT_NOEXEC = 126,	/* CMD found but not executable */
	MW_EXIT_NOTFOUND = 127,	/* CMD not found */
};

/* "memwatch: <message>\n" on stderr. */
void mw_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* strerror() for an output file's open(): outputs are opened O_NOFOLLOW,
 * and its ELOOP means a symbolic link is in the way. */
const char *mw_open_strerror(int err);
/* Verbose diagnostics (-v). */
extern int mw_verbose;
void mw_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

uint64_t mw_now_ns(void);	/* CLOCK_MONOTONIC, the clock BPF stamps with */
#define MW_NS_PER_MS	1000000ull
#define MW_NS_PER_SEC	1000000000ull

/*
 * log2 of the page size of the kernel whose events are analysed: this
 * machine's (sysconf, set before main()) while tracing, the recording's
 * while replaying one.  4 KiB, 16 KiB and 64 KiB pages all exist (arm64):
 * page counts from the kernel (total_vm, RSS counters) become bytes with it.
 */
extern unsigned int mw_page_shift;
static inline uint64_t mw_page_size(void)
{
	return (uint64_t)1 << mw_page_shift;
}
/* A multiple of the page size, rounded down (negative: towards zero). */
static inline int64_t mw_page_floor(int64_t bytes)
{
	int64_t m = (int64_t)mw_page_size() - 1;

	return bytes >= 0 ? bytes & ~m : -(-bytes & ~m);
}
/* Whole pages that hold bytes (>= 0), rounded up. */
static inline int64_t mw_page_ceil(int64_t bytes)
{
	return mw_page_floor(bytes + (int64_t)mw_page_size() - 1);
}
/* Set it from a page size in bytes: 0, or -1 (unchanged) for one that is
 * not a power of two from 4 KiB to 1 MiB. */
int mw_page_size_set(uint64_t bytes);

/* "1.5 MiB", "512 B", "-3.0 MiB": binary units, one decimal. */
const char *mw_human(int64_t bytes, char *buf, size_t len);

/* v * num / den, exactly, saturating instead of overflowing (den > 0). */
int64_t mw_scale(int64_t v, uint64_t num, uint64_t den);

/* Length of the valid UTF-8 sequence at s (n > 0 bytes there), or 0 for a
 * byte that does not start one (overlong forms, surrogates and code points
 * beyond U+10FFFF are not valid); *cp gets the code point. */
size_t mw_utf8_len(const unsigned char *s, size_t n, uint32_t *cp);
/* A copy of a name read from a traced process (a symbol, a Python
 * function or file) that is safe to print and to put in JSON: each byte
 * that starts no valid UTF-8 character, and each control character, is '?'. */
char *mw_xstrdup_text(const char *s);

void *mw_xcalloc(size_t n, size_t size);
void *mw_xrealloc(void *p, size_t n, size_t size);
char *mw_xstrdup(const char *s);

#define MW_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MW_MAX(a, b) ((a) > (b) ? (a) : (b))
#define MW_MIN(a, b) ((a) < (b) ? (a) : (b))

#endif /* MW_UTIL_H */
