/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * records.h — synthetic capture records for the unit tests, header-only:
 * seeds, and BPF op, delta and marker records as the kernel side emits
 * them, all for process REC_PID with the mm layout SB/BRK/SSTACK.
 *
 *	struct mw_op_rec *r = op_new(MW_OP_MMAP, seq, ts, start, end, total_vm);
 *
 *	op_vma(r, start, end, MW_VM_READ | MW_VM_WRITE);
 *	feed_op(&a, r);		(fed and freed)
 *
 * The *_new() builders return heap records for the caller to adjust; the
 * feed_*() helpers hand one to account_feed() and free it.  Every record is
 * fed from a heap buffer of exactly the length BPF would emit, so under
 * -fsanitize=address any read past mw_srec.len aborts.  Everything here is
 * static inline: a test uses what it needs.
 */
#ifndef MEMWATCH_TEST_RECORDS_H
#define MEMWATCH_TEST_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/account.h"
#include "analysis/model.h"

#define REC_PID	4242
#define SB	0x555555560000ull	/* start_brk */
#define BRK	0x555555581000ull
#define SSTACK	0x7ffd00020a50ull

/*
 * smaps blocks for seeds (the fields memwatch reads): the app's text, 2
 * pages, all 8 kB resident (file), and its stack, 33 pages, 16 kB resident.
 */
#define SMAPS_APP_TEXT \
	"555555554000-555555556000 r--p 00000000 fe:01 1234                       /usr/bin/app\n" \
	"Size:                  8 kB\n" \
	"Rss:                   8 kB\n" \
	"Anonymous:             0 kB\n" \
	"VmFlags: rd mr mw me dw sd \n"
#define SMAPS_STACK \
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n" \
	"Size:                132 kB\n" \
	"Rss:                  16 kB\n" \
	"Anonymous:            16 kB\n" \
	"VmFlags: rd wr mr mw me gd ac \n"

/* Hand @len bytes of @data to account_feed() from an exact-size heap copy. */
static inline void feed_exact(struct mw_account *a, uint32_t kind, const void *data,
			      size_t len)
{
	void *copy = malloc(len ? len : 1);

	if (!copy)
		abort();
	memcpy(copy, data, len);
	account_feed(a, &(struct mw_srec){ .kind = kind, .len = (uint32_t)len, .data = copy });
	free(copy);
}

/* A record header from REC_PID (@tid 0: a record BPF sends without one). */
static inline struct mw_rec_hdr rec_hdr(uint32_t type, uint32_t tid, uint32_t seq,
					uint64_t ts)
{
	return (struct mw_rec_hdr){ .type = type, .tgid = REC_PID, .tid = tid,
				    .seq = seq, .ts = ts };
}

/* ---- seeds -------------------------------------------------------------------- */

/* A seed with @maps (smaps or maps text) and @mounts (mountinfo, may be
 * NULL) after it; *@len is its length.  @comm NULL: left empty. */
static inline struct mw_seed *seed_new(uint32_t pid, uint32_t mode, uint64_t ts,
				       uint64_t start_brk, uint64_t brk,
				       uint64_t start_stack, const char *maps,
				       const char *mounts, const char *comm, size_t *len)
{
	size_t ml = strlen(maps), mil = mounts ? strlen(mounts) : 0;
	struct mw_seed *s;

	*len = sizeof(struct mw_seed) + ml + mil;
	s = calloc(1, *len);
	if (!s)
		abort();
	*s = (struct mw_seed){ .pid = pid, .mode = mode, .ts = ts,
			       .start_brk = start_brk, .brk = brk, .start_stack = start_stack,
			       .maps_len = ml, .mountinfo_len = mil };
	if (comm)
		strncpy(s->comm, comm, sizeof(s->comm) - 1);
	memcpy(s + 1, maps, ml);
	if (mil)
		memcpy((char *)(s + 1) + ml, mounts, mil);
	return s;
}

/* A seed for the account's own pid. */
static inline void feed_seed(struct mw_account *a, uint32_t mode, uint64_t ts,
			     uint64_t start_brk, uint64_t brk, uint64_t start_stack,
			     const char *maps, const char *mounts, const char *comm)
{
	size_t len;
	struct mw_seed *s = seed_new(a->pid, mode, ts, start_brk, brk, start_stack,
				     maps, mounts, comm, &len);

	feed_exact(a, MW_S_SEED, s, len);
	free(s);
}

/* A fresh account for REC_PID, attached at ts 1000 to "app" with the layout
 * @maps (smaps text) and @mounts (mountinfo, may be NULL). */
static inline void attach_seed(struct mw_account *a, const char *maps, const char *mounts)
{
	account_init(a, REC_PID, 0);
	feed_seed(a, MW_SEED_ATTACH, 1000, SB, BRK, SSTACK, maps, mounts, "app");
}

/* ---- address-space operations --------------------------------------------------- */

/* An op of REC_PID's main thread; the mm fields as BPF reads them after
 * every syscall. */
static inline struct mw_op_rec *op_new(uint32_t op, uint32_t seq, uint64_t ts,
				       uint64_t start, uint64_t end, uint64_t total_vm)
{
	struct mw_op_rec *r = calloc(1, sizeof(*r));

	if (!r)
		abort();
	r->hdr = rec_hdr(MW_REC_OP, REC_PID, seq, ts);
	r->op = op;
	r->start = start;
	r->end = end;
	r->total_vm = total_vm;
	r->start_brk = SB;
	r->brk = BRK;
	r->start_stack = SSTACK;
	return r;
}

static inline void op_vma(struct mw_op_rec *r, uint64_t start, uint64_t end, uint64_t flags)
{
	struct mw_vma *v = &r->vmas[r->nr_vmas++];

	v->start = start;
	v->end = end;
	v->flags = flags;
}

static inline void op_file_vma(struct mw_op_rec *r, uint64_t start, uint64_t end,
			       uint64_t flags, uint64_t pgoff_pages, uint32_t major,
			       uint32_t minor, uint64_t ino, uint32_t vflags, const char *path)
{
	uint32_t i = r->nr_vmas;

	op_vma(r, start, end, flags);
	r->vmas[i].pgoff = pgoff_pages;
	r->vmas[i].dev = major << 20 | minor;
	r->vmas[i].ino = ino;
	r->vmas[i].vflags = MW_VMA_FILE | vflags;
	strncpy(r->paths[i], path, MW_PATH_LEN - 1);
	r->nr_paths = i + 1;
}

/* The length BPF emits (syscalls.bpf.h): with no path, up to the last VMA;
 * else paths only up to the last file VMA. */
static inline size_t op_len(const struct mw_op_rec *r)
{
	if (!r->nr_paths)
		return offsetof(struct mw_op_rec, vmas) +
		       (r->nr_vmas < MW_MAX_VMAS ? r->nr_vmas : MW_MAX_VMAS) * sizeof(struct mw_vma);
	if (r->nr_paths >= MW_MAX_VMAS)
		return sizeof(*r);
	return offsetof(struct mw_op_rec, paths) + (size_t)r->nr_paths * MW_PATH_LEN;
}

static inline void feed_op(struct mw_account *a, struct mw_op_rec *r)
{
	feed_exact(a, MW_S_BPF, r, op_len(r));
	free(r);
}

/* munmap(start, end - start), in which the kernel freed @anon_freed bytes
 * of anonymous RSS. */
static inline struct mw_op_rec *munmap_new(uint32_t seq, uint64_t ts, uint64_t start,
					   uint64_t end, int64_t anon_freed,
					   uint64_t total_vm)
{
	struct mw_op_rec *r = op_new(MW_OP_MUNMAP, seq, ts, start, end, total_vm);

	r->args[0] = start;
	r->args[1] = end - start;
	r->rss_delta[MW_ANON] = -anon_freed;
	return r;
}

/* ---- RSS deltas ------------------------------------------------------------------- */

static inline struct mw_deltas_rec *deltas_new(uint32_t seq, uint64_t ts)
{
	struct mw_deltas_rec *d = calloc(1, sizeof(*d));

	if (!d)
		abort();
	d->hdr = rec_hdr(MW_REC_DELTAS, 0, seq, ts);
	return d;
}

static inline void slot_set(struct mw_slot *s, uint64_t vm_start, int64_t file,
			    int64_t anon, int64_t swap, int64_t shmem, int64_t peak,
			    uint64_t faults)
{
	s->vm_start = vm_start;
	s->rss[MW_FILE] = file;
	s->rss[MW_ANON] = anon;
	s->rss[MW_SWAP] = swap;
	s->rss[MW_SHMEM] = shmem;
	s->total = file + anon + shmem;
	s->peak = peak;
	s->faults = faults;
}

static inline void deltas_add(struct mw_deltas_rec *d, uint64_t vm_start, int64_t file,
			      int64_t anon, int64_t swap, int64_t shmem, int64_t peak,
			      uint64_t faults)
{
	slot_set(&d->slots[d->nr++], vm_start, file, anon, swap, shmem, peak, faults);
}

/* The length BPF emits: only the slots in use. */
static inline size_t deltas_len(const struct mw_deltas_rec *d)
{
	return offsetof(struct mw_deltas_rec, slots) + (size_t)d->nr * sizeof(struct mw_slot);
}

static inline void feed_deltas(struct mw_account *a, struct mw_deltas_rec *d)
{
	feed_exact(a, MW_S_BPF, d, deltas_len(d));
	free(d);
}

/* ---- markers ---------------------------------------------------------------------- */

/* A marker with the process's totals: @total_vm pages, @anon and @file bytes. */
static inline struct mw_mark_rec mark_new(uint32_t kind, uint32_t seq, uint64_t ts,
					  uint64_t total_vm, int64_t anon, int64_t file)
{
	struct mw_mark_rec mk;

	memset(&mk, 0, sizeof(mk));
	mk.hdr = rec_hdr(MW_REC_MARK, REC_PID, seq, ts);
	mk.kind = kind;
	mk.total_vm = total_vm;
	mk.rss[MW_ANON] = anon;
	mk.rss[MW_FILE] = file;
	return mk;
}

/* ---- the mapping table ------------------------------------------------------------ */

/* The live mapping that holds @addr, or NULL. */
static inline struct mw_mapping *at(struct mw_account *a, uint64_t addr)
{
	return model_find(&a->model, addr);
}

#endif /* MEMWATCH_TEST_RECORDS_H */
