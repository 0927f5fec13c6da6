// SPDX-License-Identifier: GPL-2.0
/*
 * ckpt.c - checkpoint library for memwatch's end-to-end test workloads.
 *
 * See ckpt.h.  The rule everything here follows: once ckpt_init() returns,
 * taking a checkpoint changes neither the address space nor RSS.  So there
 * is no malloc and no stdio, every buffer is static and pre-touched, the
 * stack we will need is pre-faulted, and every libc/vDSO entry point we use
 * is called once up front so lazy PLT binding cannot fault later.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>		/* rename() only: no FILE streams here */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"

/* Big enough for any smaps we produce; larger files are copied in pieces. */
#define CKPT_BUF_SIZE	MIB(4)
/* Deeper than any ckpt() call chain plus ld.so's lazy-binding xsave area. */
#define STACK_PRETOUCH	KIB(64)
/* A tracer that has not said "go" within this long is not coming. */
#define GO_TIMEOUT_MS	60000
#define GO_POLL_MS	5

static char ckpt_buf[CKPT_BUF_SIZE] __attribute__((aligned(4096)));
static char ckpt_dir[PATH_MAX] __attribute__((aligned(4096)));
static char ckpt_path[PATH_MAX] __attribute__((aligned(4096)));
static char ckpt_tmp[PATH_MAX] __attribute__((aligned(4096)));
static size_t buf_high;		/* the most of ckpt_buf one file has filled */
static bool ckpt_on;
static bool steps_on;		/* MW_STEPS: ckpt_wait_step() waits */
static const char *prog = "workload";

static const char *const proc_files[] = { "status", "stat", "maps", "smaps" };

static __attribute__((noreturn)) void exit_now(int code)
{
	syscall(SYS_exit_group, code);
	__builtin_unreachable();
}

/* Decimal digits of @v into @dst (no NUL); returns the length. */
static size_t fmt_u64(char *dst, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i;

	do {
		tmp[n++] = '0' + v % 10;
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		dst[i] = tmp[n - 1 - i];
	return n;
}

/* Write all of @len bytes; a short write to a regular file means trouble. */
static void write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("ckpt write");
		p += n;
		len -= n;
	}
}

void die(const char *what)
{
	char line[256];
	size_t n = 0, len;
	int err = errno;

	/* Assembled by hand: stdio would allocate and strerror may too. */
	len = strnlen(prog, 64);
	memcpy(line + n, prog, len);
	n += len;
	memcpy(line + n, ": ", 2);
	n += 2;
	len = strnlen(what, 128);
	memcpy(line + n, what, len);
	n += len;
	memcpy(line + n, ": errno ", 8);
	n += 8;
	n += fmt_u64(line + n, err);
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0) {
		/* nothing left to report it with */
	}
	exit_now(1);
}

/* @dst = ckpt_dir "/" @name @suffix, or die if it does not fit. */
static void build_path(char *dst, const char *name, const char *suffix)
{
	size_t d = strlen(ckpt_dir), n = strlen(name), s = strlen(suffix);

	if (d + 1 + n + s + 1 > PATH_MAX) {
		errno = ENAMETOOLONG;
		die("ckpt path");
	}
	memcpy(dst, ckpt_dir, d);
	dst[d] = '/';
	memcpy(dst + d + 1, name, n);
	memcpy(dst + d + 1 + n, suffix, s + 1);
}

/*
 * Copy /proc/self/@what to @out_fd.  The whole file is read before anything
 * is written whenever it fits, so the snapshot is taken in one pass.
 */
static void copy_proc(const char *what, int out_fd)
{
	char src[32] = "/proc/self/";
	size_t fill = 0;
	int fd;

	strcat(src, what);
	fd = open(src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(src);
	for (;;) {
		ssize_t n;

		if (fill == CKPT_BUF_SIZE) {
			write_all(out_fd, ckpt_buf, fill);
			fill = 0;
		}
		n = read(fd, ckpt_buf + fill, CKPT_BUF_SIZE - fill);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die(src);
		if (n == 0)
			break;
		fill += n;
		if (fill > buf_high)
			buf_high = fill;
	}
	close(fd);
	write_all(out_fd, ckpt_buf, fill);
}

/*
 * Open a checkpoint output file.  A dry run writes to /dev/null instead, so
 * it runs exactly the code a real checkpoint runs.
 */
static int open_out(const char *path, int flags, bool dry)
{
	int fd = open(dry ? "/dev/null" : path, flags | O_WRONLY | O_CLOEXEC,
		      0644);

	if (fd < 0)
		die(path);
	return fd;
}

static void save_proc(const char *name, const char *what, bool dry)
{
	char suffix[16] = ".";
	int fd;

	strcat(suffix, what);
	build_path(ckpt_path, name, suffix);
	fd = open_out(ckpt_path, O_CREAT | O_TRUNC, dry);
	copy_proc(what, fd);
	if (close(fd))
		die(ckpt_path);
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void print_elapsed(uint64_t ns, unsigned long iters)
{
	char line[80] = "elapsed_ns ";
	size_t n = strlen(line);

	n += fmt_u64(line + n, ns);
	memcpy(line + n, " iterations ", 12);
	n += 12;
	n += fmt_u64(line + n, iters);
	line[n++] = '\n';
	write_all(STDOUT_FILENO, line, n);
}

/* The index line goes last: a reader that sees it knows the files are whole. */
static void append_index(const char *name, uint64_t ns, bool dry)
{
	char line[128];
	size_t n = strnlen(name, 96);
	int fd;

	memcpy(line, name, n);
	line[n++] = ' ';
	n += fmt_u64(line + n, ns);
	line[n++] = '\n';

	build_path(ckpt_path, "index", "");
	fd = open_out(ckpt_path, O_CREAT | O_APPEND, dry);
	write_all(fd, line, n);
	close(fd);
}

static __attribute__((noinline)) void pretouch_stack(void);

static void take(const char *name, bool dry)
{
	uint64_t ns;
	size_t i;

	/* Write to what the reads will write to, first: after a fork() its
	 * pages are copy-on-write, and their faults must come before
	 * /proc/self/stat counts them, not after (tests/workloads/mtiter.c).
	 * Without a fork, nothing faults here. */
	touch(ckpt_buf, buf_high);
	touch(ckpt_path, sizeof(ckpt_path));
	touch(ckpt_tmp, sizeof(ckpt_tmp));
	pretouch_stack();
	/* Stamp the moment the state is captured, not when the files land. */
	ns = now_ns();
	for (i = 0; i < sizeof(proc_files) / sizeof(proc_files[0]); i++)
		save_proc(name, proc_files[i], dry);
	append_index(name, ns, dry);
}

void ckpt(const char *name)
{
	if (ckpt_on)
		take(name, false);
}

void ckpt_exit(int code)
{
	ckpt("final");
	exit_now(code);
}

void touch(void *p, size_t len)
{
	volatile char *c = p;
	size_t off;

	for (off = 0; off < len; off += PAGE_SZ)
		c[off] = 1;
}

pid_t fork_waiting_child(void)
{
	pid_t child = fork();

	if (child < 0)
		die("fork");
	if (!child)
		for (;;)
			pause();
	return child;
}

void reap_child(pid_t child)
{
	if (kill(child, SIGKILL) || waitpid(child, NULL, 0) != child)
		die("kill child");
}

/* Fault in the stack ckpt() will use, so checkpoints never grow it. */
static __attribute__((noinline)) void pretouch_stack(void)
{
	volatile char pad[STACK_PRETOUCH];
	size_t off;

	for (off = 0; off < sizeof(pad); off += PAGE_SZ)
		pad[off] = 0;
	pad[sizeof(pad) - 1] = 0;
}

/*
 * Fault in the buffers and the stack, then take a checkpoint into /dev/null:
 * that binds every PLT slot and maps every vDSO page a real ckpt() uses.
 */
static void dry_run(void)
{
	touch(ckpt_buf, sizeof(ckpt_buf));
	take("dry-run", true);
}

static void sleep_ns(long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000L,
			       .tv_nsec = ns % 1000000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void sleep_ms(unsigned int ms)
{
	sleep_ns((long)ms * 1000000L);
}

/* Publish our pid atomically: write "ready.tmp", then rename to "ready". */
static void publish_ready(void)
{
	char pid[24];
	size_t n;
	int fd;

	n = fmt_u64(pid, getpid());
	pid[n++] = '\n';
	build_path(ckpt_tmp, "ready", ".tmp");
	build_path(ckpt_path, "ready", "");
	fd = open(ckpt_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(ckpt_tmp);
	write_all(fd, pid, n);
	if (close(fd) || rename(ckpt_tmp, ckpt_path))
		die("ckpt ready");
}

/* Poll until the file ckpt_tmp names exists, or die after GO_TIMEOUT_MS. */
static void wait_file(const char *what)
{
	long waited = 0;

	while (access(ckpt_tmp, F_OK)) {
		if (waited >= GO_TIMEOUT_MS) {
			errno = ETIMEDOUT;
			die(what);
		}
		sleep_ms(GO_POLL_MS);
		waited += GO_POLL_MS;
	}
}

/* Bind access()/nanosleep() now, so a later wait cannot fault them in. */
static void bind_wait(void)
{
	build_path(ckpt_tmp, "go", "");
	(void)access(ckpt_tmp, F_OK);
	sleep_ns(0);
}

/* Block until the tracer creates "go" (it has attached by then). */
static void wait_go(void)
{
	bind_wait();
	publish_ready();
	/* publish_ready() used ckpt_tmp for "ready.tmp": rebuild the path. */
	build_path(ckpt_tmp, "go", "");
	wait_file("waiting for go");
}

void ckpt_wait_step(const char *name)
{
	if (!steps_on)
		return;
	build_path(ckpt_tmp, name, ".go");
	wait_file("waiting for step");
}

bool ckpt_stepping(void)
{
	return steps_on;
}

void ckpt_init(int argc, char **argv)
{
	const char *dir = getenv("MW_CKPT_DIR");

	if (argc > 0 && argv[0])
		prog = argv[0];
	if (!dir || !*dir)
		return;
	if (strlen(dir) >= sizeof(ckpt_dir) - 64) {
		errno = ENAMETOOLONG;
		die("MW_CKPT_DIR");
	}
	strcpy(ckpt_dir, dir);
	dry_run();
	ckpt_on = true;
	if (getenv("MW_STEPS")) {
		bind_wait();
		steps_on = true;
	}
	if (getenv("MW_WAIT_GO"))
		wait_go();
}

void ckpt_subdir(const char *name)
{
	size_t d = strlen(ckpt_dir), n = strlen(name);

	if (!ckpt_on)
		return;
	if (d + 1 + n >= sizeof(ckpt_dir) - 64) {
		errno = ENAMETOOLONG;
		die("ckpt_subdir");
	}
	ckpt_dir[d] = '/';
	memcpy(ckpt_dir + d + 1, name, n + 1);
	if (mkdir(ckpt_dir, 0755) && errno != EEXIST)
		die("mkdir");
}

unsigned long arg_ulong(int argc, char **argv, int idx, unsigned long def)
{
	unsigned long v;
	char *end;

	if (idx >= argc || !*argv[idx])
		return def;
	errno = 0;
	v = strtoul(argv[idx], &end, 0);
	if (errno || *end) {
		errno = EINVAL;
		die(argv[idx]);
	}
	return v;
}

size_t arg_mib(int argc, char **argv, int idx, size_t def_mib)
{
	return MIB(arg_ulong(argc, argv, idx, def_mib));
}

void *map_anon_flags(size_t len, int flags)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | flags,
		       -1, 0);

	if (p == MAP_FAILED)
		die("mmap anon");
	return p;
}

void *map_anon(size_t len)
{
	return map_anon_flags(len, MAP_PRIVATE);
}

void *map_fd(int fd, size_t len, int prot, int flags)
{
	void *p = mmap(NULL, len, prot, flags, fd, 0);

	if (p == MAP_FAILED)
		die("mmap file");
	return p;
}

int create_file(const char *path, char *tmpl, int suffixlen, size_t size,
		const char *fill, size_t chunk)
{
	size_t done;
	int fd;

	if (path)
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	else
		fd = mkstemps(tmpl, suffixlen);
	if (fd < 0)
		die("create file");
	for (done = 0; done < size; done += chunk) {
		size_t n = size - done < chunk ? size - done : chunk;

		if (write(fd, fill, n) != (ssize_t)n)
			die("fill file");
	}
	return fd;
}

unsigned int read_pages(const void *p, size_t len)
{
	const volatile unsigned char *c = p;
	unsigned int sum = 0;
	size_t off;

	for (off = 0; off < len; off += PAGE_SZ)
		sum += c[off];
	return sum;
}
