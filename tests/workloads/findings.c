// SPDX-License-Identifier: GPL-2.0
/*
 * findings.c - one workload per finding (user/analysis/findings.c), each with
 * a twin that must not show it.
 *
 * usage: findings MODE [N=12]
 *
 * Iterations are marked with MEMWATCH_ITER() (USDT, found by memwatch by
 * itself), phases with MEMWATCH_PHASE(); each marker comes right after the
 * checkpoint of the same name, so the checkpoint holds the boundary.
 *
 *   churn      N iterations "it<k>": malloc(40 MiB), write every page, free.
 *              glibc serves a request above its mmap threshold (32 MiB at
 *              most) with a mapping of its own and unmaps it on free: VM is
 *              flat, but every iteration maps, faults in and unmaps 40 MiB.
 *              Checkpoint "it<k>.in" after the writes (VM then has the chunk).
 *   flat       the same 40 MiB malloc'd and written once before the first
 *              iteration; each iteration writes it again: no faults.
 *   firsttouch the 40 MiB is malloc'd and written in the first iteration
 *              only, and written again by the others.
 *   kept       phase "alloc": 512 malloc(64 KiB) blocks written (below the
 *              mmap threshold: in the [heap]) and then a small block above
 *              them; phase "release": the 512 blocks are freed, the small
 *              one is not, so the heap's top stays in use and glibc cannot
 *              trim: RSS stays.
 *   trimmed    the same without the small block: once the blocks are free
 *              the top is free, glibc trims the heap and RSS goes.
 *   arenas     phase "alloc": 256 malloc(96 KiB) blocks written in the
 *              [heap] and 128 in a thread's arena, each followed by a small
 *              block that keeps it from merging with the next; phase
 *              "release": the large blocks freed (holes malloc keeps);
 *              phase "trim" (marked through memwatch's socket, so that the
 *              program waits while memwatch walks the arenas): malloc_trim(0).
 *              Checkpoints "trim" before its marker and "trimmed" after
 *              malloc_trim: the RSS it gave back.  THP is turned off for
 *              the process (PR_SET_THP_DISABLE) just before the trim:
 *              under THP "always" khugepaged (max_ptes_none 511) would
 *              otherwise fill the trimmed holes with zeroed huge pages
 *              again, sooner or later, and the RSS malloc_trim gave back
 *              would depend on when it ran.  The arenas are walked
 *              while still in huge pages.
 *   arenaskept the same to "release", then exits without trimming: memwatch
 *              walks the arenas while it holds the process at its exit.
 *   sparse     "mapped": a 128 MiB MAP_NORESERVE mapping (8 huge pages if
 *              larger: 256 MiB with 16 KiB pages) with its first 4 MiB
 *              written, kept to the end.
 *   dense      "mapped": a 32 MiB mapping, all written.
 *   waste      "mapped": 64 tensors of 5000 bytes, each rounded up by the
 *              program to 64 KiB and mapped MAP_SHARED (no merging) by
 *              alloc_tensor(), 5000 bytes written (2 pages).
 *   exact      "mapped": 64 buffers of 2 pages (8 KiB with 4 KiB pages) mapped
 *              the same way, all written.
 *   phasechurn phases only, no iterations: "load" writes 16 MiB it keeps;
 *              "steady" does N x (malloc(40 MiB), write every page, free):
 *              flat in VM and RSS, 40 MiB mapped, faulted and unmapped N
 *              times; "done" does nothing.  Checkpoints before each marker.
 *   phaseflat  the same, but the 40 MiB is malloc'd in "load" and only
 *              written again in "steady": no faults there.
 *   grow       host-wide: every 100 ms for N steps, map and write 2 MiB more
 *              (checkpoint "s<k>" after each), then hold for 1 s.
 *   steady     host-wide: 8 MiB written at start, then 3 s doing nothing.
 *   spike      host-wide: 96 MiB mapped, written, unmapped; exits at 4 MiB
 *              ("peak" after the writes).
 *   nospike    host-wide: 8 MiB written, held until exit.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ckpt.h"
#include "pmd.h"
#include "../../include/memwatch.h"
#include "../../include/memwatch_mark.h"

#define CHUNK_SZ	MIB(40)
#define BLOCKS		512
#define BLOCK_SZ	KIB(64)
#define TENSORS		64
#define TENSOR_REQ	5000
#define TENSOR_ALIGN	KIB(64)

/* "<prefix><k><suffix>" into @buf, without stdio. */
static const char *name_k(char *buf, const char *prefix, unsigned long k, const char *suffix)
{
	char digits[24];
	size_t n = 0, len = strlen(prefix);

	memcpy(buf, prefix, len);
	do {
		digits[n++] = '0' + k % 10;
		k /= 10;
	} while (k);
	while (n)
		buf[len++] = digits[--n];
	strcpy(buf + len, suffix);
	return buf;
}

static void write_all(char *p, size_t len)
{
	for (size_t i = 0; i < len; i += PAGE_SZ)
		p[i] = (char)i;
}

static int loops(const char *mode, unsigned long n)
{
	char *kept = NULL, name[48];

	if (!strcmp(mode, "flat")) {
		kept = malloc(CHUNK_SZ);
		if (!kept)
			die("malloc");
		write_all(kept, CHUNK_SZ);
	}
	for (unsigned long k = 1; k <= n; k++) {
		char *p;

		ckpt(name_k(name, "it", k, ""));
		MEMWATCH_ITER();
		if (!strcmp(mode, "churn")) {
			p = malloc(CHUNK_SZ);
			if (!p)
				die("malloc");
			write_all(p, CHUNK_SZ);
			ckpt(name_k(name, "it", k, ".in"));
			free(p);
		} else {
			if (!kept && (kept = malloc(CHUNK_SZ)) == NULL)
				die("malloc");
			write_all(kept, CHUNK_SZ);
		}
		sleep_ms(2);
	}
	ckpt("end");
	ckpt_exit(0);
}

static int phases(int churn, unsigned long n)
{
	char *model, *buf = NULL;

	ckpt("load");
	MEMWATCH_PHASE("load");
	model = malloc(MIB(16));
	if (!model)
		die("malloc");
	write_all(model, MIB(16));
	if (!churn && (buf = malloc(CHUNK_SZ)) == NULL)
		die("malloc");
	if (buf)
		write_all(buf, CHUNK_SZ);
	ckpt("steady");
	MEMWATCH_PHASE("steady");
	for (unsigned long k = 0; k < n; k++) {
		char *p = churn ? malloc(CHUNK_SZ) : buf;

		if (!p)
			die("malloc");
		write_all(p, CHUNK_SZ);
		if (churn)
			free(p);
	}
	ckpt("done");
	MEMWATCH_PHASE("done");
	sleep_ms(2);
	ckpt_exit(0);
}

static int heap(int pin)
{
	static char *blocks[BLOCKS];
	char *top = NULL;

	ckpt("alloc");
	MEMWATCH_PHASE("alloc");
	for (int i = 0; i < BLOCKS; i++) {
		blocks[i] = malloc(BLOCK_SZ);
		if (!blocks[i])
			die("malloc");
		write_all(blocks[i], BLOCK_SZ);
	}
	if (pin) {		/* above the blocks: the heap's top stays in use */
		top = malloc(64);
		if (!top)
			die("malloc");
		top[0] = 1;
	}
	ckpt("release");
	MEMWATCH_PHASE("release");
	for (int i = BLOCKS; i > 0; i--)
		free(blocks[i - 1]);
	ckpt("freed");
	(void)top;
	ckpt_exit(0);
}

#define ARENA_BLOCKS	256
#define ARENA_BLOCK_SZ	KIB(96)

struct holes {
	char *big[ARENA_BLOCKS];
	char *pin[ARENA_BLOCKS];
	int n;
};

static void holes_alloc(struct holes *h, int n)
{
	h->n = n;
	for (int i = 0; i < n; i++) {
		h->big[i] = malloc(ARENA_BLOCK_SZ);
		h->pin[i] = malloc(64);
		if (!h->big[i] || !h->pin[i])
			die("malloc");
		write_all(h->big[i], ARENA_BLOCK_SZ);
		h->pin[i][0] = 1;
	}
}

static void holes_free(struct holes *h)
{
	for (int i = 0; i < h->n; i++)
		free(h->big[i]);
}

static struct holes main_holes, thread_holes;
static int thread_step;

/* The thread's blocks, in its own arena: allocated at step 1, freed at 2. */
static void *holes_thread(void *arg)
{
	(void)arg;
	holes_alloc(&thread_holes, ARENA_BLOCKS / 2);
	__atomic_store_n(&thread_step, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&thread_step, __ATOMIC_ACQUIRE) != 2)
		sleep_ms(1);
	holes_free(&thread_holes);
	return NULL;
}

static int arenas(int trim)
{
	pthread_t t;

	ckpt("alloc");
	memwatch_mark_phase("alloc");
	holes_alloc(&main_holes, ARENA_BLOCKS);
	if (pthread_create(&t, NULL, holes_thread, NULL))
		die("pthread_create");
	while (__atomic_load_n(&thread_step, __ATOMIC_ACQUIRE) != 1)
		sleep_ms(1);
	ckpt("release");
	memwatch_mark_phase("release");
	holes_free(&main_holes);
	__atomic_store_n(&thread_step, 2, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	ckpt("trim");
	if (!trim)
		ckpt_exit(0);
	if (memwatch_mark_phase("trim"))
		die("memwatch_mark_phase: no answer");
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		die("prctl PR_SET_THP_DISABLE");
	malloc_trim(0);
	ckpt("trimmed");
	ckpt_exit(0);
}

/* A tensor as the runtime allocates it: rounded up to 64 KiB. */
MW_PROBE_FN char *alloc_tensor(size_t bytes, size_t align)
{
	size_t len = (bytes + align - 1) / align * align;

	return map_anon_flags(len, MAP_SHARED);
}

static int tensors(int waste)
{
	size_t exact = 2 * (size_t)sysconf(_SC_PAGESIZE);	/* no rounding at all */

	for (int i = 0; i < TENSORS; i++) {
		char *t = waste ? alloc_tensor(TENSOR_REQ, TENSOR_ALIGN) : alloc_tensor(exact, PAGE_SZ);

		memset(t, 1, waste ? TENSOR_REQ : exact);
	}
	ckpt("mapped");
	ckpt_exit(0);
}

static int reserve(size_t size, size_t written)
{
	char *p = map_anon_flags(size, MAP_PRIVATE | MAP_NORESERVE);

	write_all(p, written);
	ckpt("mapped");
	sleep_ms(20);
	ckpt_exit(0);
}

static int host(const char *mode, unsigned long n)
{
	char name[32];

	if (!strcmp(mode, "grow")) {
		ckpt("s0");
		for (unsigned long k = 1; k <= n; k++) {
			write_all(map_anon(MIB(2)), MIB(2));
			ckpt(name_k(name, "s", k, ""));
			sleep_ms(100);
		}
		sleep_ms(1000);
	} else if (!strcmp(mode, "steady")) {
		write_all(map_anon(MIB(8)), MIB(8));
		ckpt("s0");
		sleep_ms(3000);
	} else if (!strcmp(mode, "spike")) {
		char *p = map_anon(MIB(96));

		write_all(map_anon(MIB(4)), MIB(4));
		write_all(p, MIB(96));
		ckpt("peak");
		munmap(p, MIB(96));
		sleep_ms(300);
	} else {
		write_all(map_anon(MIB(8)), MIB(8));
		ckpt("peak");
		sleep_ms(300);
	}
	ckpt_exit(0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	unsigned long n = arg_ulong(argc, argv, 2, 12);

	ckpt_init(argc, argv);
	if (!strcmp(mode, "churn") || !strcmp(mode, "flat") || !strcmp(mode, "firsttouch"))
		return loops(mode, n);
	if (!strcmp(mode, "kept") || !strcmp(mode, "trimmed"))
		return heap(!strcmp(mode, "kept"));
	if (!strcmp(mode, "arenas") || !strcmp(mode, "arenaskept"))
		return arenas(!strcmp(mode, "arenas"));
	if (!strcmp(mode, "phasechurn") || !strcmp(mode, "phaseflat"))
		return phases(!strcmp(mode, "phasechurn"), n);
	if (!strcmp(mode, "waste") || !strcmp(mode, "exact"))
		return tensors(!strcmp(mode, "waste"));
	if (!strcmp(mode, "sparse"))
		/* Sparse whatever a huge page is: at least 8 of them. */
		return reserve(MIB(128) > 8 * pmd_size() ? MIB(128) : 8 * pmd_size(), MIB(4));
	if (!strcmp(mode, "dense"))
		return reserve(MIB(32), MIB(32));
	if (!strcmp(mode, "grow") || !strcmp(mode, "steady") || !strcmp(mode, "spike") ||
	    !strcmp(mode, "nospike"))
		return host(mode, n);
	errno = EINVAL;
	die("mode: churn flat firsttouch kept trimmed arenas arenaskept phasechurn phaseflat sparse dense waste exact "
	    "grow steady spike nospike");
}
