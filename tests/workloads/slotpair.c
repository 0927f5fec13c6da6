// SPDX-License-Identifier: GPL-2.0
/*
 * slotpair.c - two hot mappings whose starts hash to the same attribution
 * slot (bpf/state.bpf.h: slot_index()), touched in turn with no traced call
 * between them: a direct-mapped table evicts one for the other at every
 * turn, and under ring-buffer pressure those evictions are what is lost.
 *
 * usage: slotpair [iterations=2000] [again=0]
 *
 * Each iteration touches 64 KiB of mapping A, then 64 KiB of mapping B, then
 * drops both with madvise(MADV_DONTNEED): RSS ends where it started.  With
 * again=1 it then drops A once more, a call that changes nothing.
 *
 * Checkpoints:
 *   start  both mappings made, nothing touched
 *   final  the same VM size and RSS as start
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"

#define CHUNK	KIB(64)
#define SPAN	MIB(64)		/* where to look for two starts in one slot */

/* The loader's hash, as bpf/state.bpf.h has it (MW_SLOTS 64). */
static unsigned int slot_of(uintptr_t start)
{
	return ((uint64_t)(start >> 12) * 0x9E3779B1u) >> 26 & 63;
}

int main(int argc, char **argv)
{
	unsigned long i, n, again;
	char *base, *a, *b = NULL;

	ckpt_init(argc, argv);
	n = arg_ulong(argc, argv, 1, 2000);
	again = arg_ulong(argc, argv, 2, 0);

	/* A PROT_NONE reservation, never touched: two chunks of it become
	 * their own VMAs, a hole of at least one chunk apart. */
	base = mmap(NULL, SPAN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		die("mmap reservation");
	a = base + CHUNK;
	for (char *c = a + 2 * CHUNK; c + 2 * CHUNK <= base + SPAN; c += CHUNK) {
		if (slot_of((uintptr_t)c) == slot_of((uintptr_t)a)) {
			b = c;
			break;
		}
	}
	if (!b)
		die("no two chunks in one slot");
	if (mprotect(a, CHUNK, PROT_READ | PROT_WRITE) || mprotect(b, CHUNK, PROT_READ | PROT_WRITE))
		die("mprotect");
	ckpt("start");

	for (i = 0; i < n; i++) {
		touch(a, CHUNK);
		touch(b, CHUNK);
		if (madvise(a, CHUNK, MADV_DONTNEED) || madvise(b, CHUNK, MADV_DONTNEED))
			die("madvise");
		if (again && madvise(a, CHUNK, MADV_DONTNEED))
			die("madvise again");
	}
	ckpt_exit(0);
}
