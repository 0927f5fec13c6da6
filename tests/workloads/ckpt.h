/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ckpt.h - checkpoint library for memwatch's end-to-end test workloads.
 *
 * A workload maps, touches and unmaps known amounts of memory and, at named
 * checkpoints, copies its own /proc/self/{status,stat,maps,smaps} into
 * $MW_CKPT_DIR.  The test then compares memwatch's report with that truth.
 *
 * Taking a checkpoint must not itself change the address space or RSS, so
 * nothing here allocates: all buffers are static and pre-touched by
 * ckpt_init(), and stdio is never used.  Workloads should avoid stdio and
 * malloc after ckpt_init() for the same reason (unless the allocation is
 * part of what they want to measure).
 *
 * Environment:
 *   MW_CKPT_DIR  directory for checkpoint files; unset = checkpoints are no-ops
 *   MW_WAIT_GO   if set, ckpt_init() writes our pid to $MW_CKPT_DIR/ready and
 *                waits until $MW_CKPT_DIR/go exists (lets a tracer attach)
 *   MW_STEPS     if set, ckpt_wait_step(NAME) waits until $MW_CKPT_DIR/NAME.go
 *                exists (lets a test act, e.g. run `memwatch mark`, between
 *                two steps of a workload); unset = ckpt_wait_step() returns
 *
 * Files written per checkpoint NAME: NAME.status, NAME.maps, NAME.smaps, and
 * a line "NAME <CLOCK_MONOTONIC ns>" appended to "index" once all three are
 * complete.
 */
#ifndef MW_CKPT_H
#define MW_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * A function a uprobe (memwatch --phase-at/--iter BINARY:SYMBOL) can find by
 * its name and will see entered on every call: global, and never inlined,
 * cloned or dropped.
 */
#if defined(__clang__)
#define MW_PROBE_FN	__attribute__((noinline, used))
#else
#define MW_PROBE_FN	__attribute__((noipa, used))
#endif

#define KIB(x)		((size_t)(x) << 10)
#define MIB(x)		((size_t)(x) << 20)
#define PAGE_SZ		4096UL

/* Call first thing in main(); may block waiting for "go" (see above). */
void ckpt_init(int argc, char **argv);

/* Snapshot /proc/self/{status,stat,maps,smaps} under @name.  Not thread-safe. */
void ckpt(const char *name);

/*
 * Step protocol (MW_STEPS, needs MW_CKPT_DIR): wait until $MW_CKPT_DIR/@name.go
 * exists, polling every 5 ms, giving up (exit 1) after 60 s.  Call it right
 * after ckpt(@name): the test waits for "@name" in the index, does its part,
 * then creates @name.go.  Waiting changes neither mappings nor RSS.
 */
void ckpt_wait_step(const char *name);

/* Whether MW_STEPS is on: a workload may take a checkpoint only a stepping
 * test needs (churn's "half"). */
bool ckpt_stepping(void);

/* From now on, checkpoints go to $MW_CKPT_DIR/.../@name (created): a forked
 * child's own, apart from its parent's.  Allocates nothing. */
void ckpt_subdir(const char *name);

/* Take checkpoint "final", then exit_group(@code) with no atexit/stdio. */
void ckpt_exit(int code) __attribute__((noreturn));

/* Write one byte per 4 KiB page of page-aligned [p, p+len). */
void touch(void *p, size_t len);

/* A child that only waits (its pages stay shared copy-on-write with ours
 * until reap_child() kills and reaps it); exit_group(1) on failure. */
pid_t fork_waiting_child(void);
void reap_child(pid_t child);

/* CLOCK_MONOTONIC in ns, and the line scripts/bench reads a workload's own
 * time from: "elapsed_ns N iterations N" on stdout, written at once (no
 * stdio buffer for ckpt_exit() to lose). */
uint64_t now_ns(void);
void print_elapsed(uint64_t ns, unsigned long iters);

/* Report "<prog>: <what>: errno N" on stderr and exit_group(1). */
void die(const char *what) __attribute__((noreturn));

/* argv[idx] as an unsigned number (MiB for arg_mib), or @def if absent. */
unsigned long arg_ulong(int argc, char **argv, int idx, unsigned long def);
size_t arg_mib(int argc, char **argv, int idx, size_t def_mib);

/* Private anonymous read/write mapping of @len bytes, or die. */
void *map_anon(size_t len);

/* Anonymous read/write mapping of @len bytes with @flags (MAP_PRIVATE or
 * MAP_SHARED, and any other MAP_* such as MAP_NORESERVE), or die. */
void *map_anon_flags(size_t len, int flags);

/* mmap() of @len bytes of the file @fd from offset 0, or die. */
void *map_fd(int fd, size_t len, int prot, int flags);

/*
 * A new file of @size bytes, open read/write, or die: @path (created or
 * truncated), or when @path is NULL a fresh mkstemps() name in @tmpl, which
 * has @suffixlen characters after its XXXXXX.  Written with write()s of
 * @chunk bytes (the last one shorter) from @fill: the write size decides
 * how large the page-cache folios are (see file.c).
 */
int create_file(const char *path, char *tmpl, int suffixlen, size_t size,
		const char *fill, size_t chunk);

/* Read one byte per 4 KiB page of page-aligned [p, p+len), so every page is
 * mapped; returns the sum of the bytes read. */
unsigned int read_pages(const void *p, size_t len);

/* Sleep without touching new memory (used to space out timeline stages). */
void sleep_ms(unsigned int ms);

#endif /* MW_CKPT_H */
