// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * gen_stream_seeds.c — writes the seed corpus of fuzz_stream: small, valid
 * capture streams in fuzz_stream's input format (u32 kind, u32 len, data),
 * built with the real structs of bpf/memwatch.h and user/stream.h so the
 * layouts cannot drift.  Record sizes are the ones the BPF side emits
 * (op records up to their last path, VM-growth records up to vmas[]).
 *
 *	gen_stream_seeds DIR	(tests/fuzz/gen-corpus runs it)
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memwatch.h"
#include "stream.h"

#define P	4096ull
#define RW	(MW_VM_READ | MW_VM_WRITE)
#define RX	(MW_VM_READ | MW_VM_EXEC)
#define SHR	(MW_VM_SHARED | MW_VM_MAYSHARE)
#define PID	4242
#define SB	0x555555560000ull	/* start_brk */
#define BRK0	0x555555581000ull
#define SSTACK	0x7ffd00020a50ull
#define A1	0x7f0000000000ull
#define A2	0x7f0000800000ull

static const char smaps_text[] =
	"555555554000-555555556000 r--p 00000000 fe:01 1234                       /usr/bin/app\n"
	"Size:                  8 kB\n"
	"Rss:                   8 kB\n"
	"Pss:                   8 kB\n"
	"Anonymous:             0 kB\n"
	"Swap:                  0 kB\n"
	"VmFlags: rd mr mw me dw sd \n"
	"555555560000-555555581000 rw-p 00000000 00:00 0                          [heap]\n"
	"Size:                132 kB\n"
	"Rss:                  12 kB\n"
	"Anonymous:            12 kB\n"
	"AnonHugePages:         0 kB\n"
	"Swap:                  0 kB\n"
	"7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
	"Size:               1024 kB\n"
	"Rss:                  64 kB\n"
	"Anonymous:            64 kB\n"
	"Swap:                  8 kB\n"
	"7f0000200000-7f0000210000 rw-s 00000000 00:01 2058                       /memfd:buf (deleted)\n"
	"Rss:                  16 kB\n"
	"Anonymous:             0 kB\n"
	"7f0000300000-7f0000304000 rw-s 00000000 00:19 77                         /dev/shm/seg\n"
	"Rss:                   8 kB\n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
	"Rss:                  16 kB\n"
	"Anonymous:            16 kB\n"
	"7ffd000fc000-7ffd00100000 r--p 00000000 00:00 0                          [vvar]\n"
	"Rss:                   0 kB\n"
	"7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0                          [vdso]\n"
	"Rss:                   4 kB\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n"
	"Rss:                   0 kB\n";

static const char maps_text[] =
	"555555554000-555555556000 r--p 00000000 fe:01 1234                       /usr/bin/app\n"
	"555555556000-555555558000 r-xp 00002000 fe:01 1234                       /usr/bin/app\n"
	"555555560000-555555581000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
	"7f0000500000-7f0000501000 rw-p 00000000 00:00 0                          [anon:tag]\n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
	"7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0                          [vdso]\n";

static const char mountinfo_text[] =
	"24 27 0:5 / /dev rw,nosuid,relatime shared:8 - devtmpfs udev rw,mode=755\n"
	"26 24 0:25 / /dev/shm rw,nosuid,nodev shared:10 - tmpfs tmpfs rw,inode64\n"
	"27 1 254:1 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw\n";

static FILE *out;
static uint32_t seq;
static uint64_t ts = 1000000;

static void rec(uint32_t kind, const void *data, size_t len)
{
	uint32_t h[2] = { kind, (uint32_t)len };

	fwrite(h, sizeof(h), 1, out);
	fwrite(data, len, 1, out);
}

static void begin(const char *dir, const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	out = fopen(path, "wb");
	if (!out) {
		perror(path);
		exit(1);
	}
	seq = 0;
	ts = 1000000;
}

static void end(void)
{
	fclose(out);
}

static void seed(uint32_t mode, const char *maps, const char *mounts)
{
	size_t ml = strlen(maps), nl = mounts ? strlen(mounts) : 0;
	struct mw_seed *s = calloc(1, sizeof(*s) + ml + nl);

	s->pid = PID;
	s->mode = mode;
	s->ts = ts += 1000;
	s->start_brk = SB;
	s->brk = BRK0;
	s->start_stack = SSTACK;
	s->maps_len = ml;
	s->mountinfo_len = nl;
	memcpy(s->comm, "app", 4);
	memcpy(s + 1, maps, ml);
	if (nl)
		memcpy((char *)(s + 1) + ml, mounts, nl);
	rec(MW_S_SEED, s, sizeof(*s) + ml + nl);
	free(s);
}

static void state(uint32_t final, uint64_t total_vm, int64_t anon, int64_t file,
		  uint64_t slot_start, int64_t slot_anon)
{
	struct mw_state st = { .pid = PID, .final = final, .ts = ts += 1000 };

	st.proc.seq = seq;
	st.proc.total_vm = total_vm;
	st.proc.vm_peak = total_vm + 16;
	st.proc.rss[MW_ANON] = anon;
	st.proc.rss[MW_FILE] = file;
	st.proc.rss_peak = anon + file + 8 * P;
	st.proc.faults = 77;
	st.proc.calls[MW_OP_MMAP] = 3;
	if (slot_start) {
		st.proc.slots[5].vm_start = slot_start;
		st.proc.slots[5].rss[MW_ANON] = slot_anon;
		st.proc.slots[5].total = slot_anon;
		st.proc.slots[5].peak = slot_anon;
		st.proc.slots[5].faults = slot_anon / P;
	}
	rec(MW_S_STATE, &st, sizeof(st));
}

static void deltas(int n, const uint64_t *starts, const int64_t *anon)
{
	struct mw_deltas_rec d = { 0 };

	d.hdr = (struct mw_rec_hdr){ MW_REC_DELTAS, PID, PID, seq, ts += 10 };
	d.nr = n;
	for (int i = 0; i < n; i++) {
		d.slots[i].vm_start = starts[i];
		d.slots[i].rss[MW_ANON] = anon[i];
		d.slots[i].total = anon[i];
		d.slots[i].peak = anon[i];
		d.slots[i].faults = anon[i] / P;
	}
	rec(MW_S_BPF, &d, offsetof(struct mw_deltas_rec, slots) + n * sizeof(struct mw_slot));
}

/* An op record; vmas given as (start, end, flags) triples, paths for file ones. */
struct v { uint64_t start, end, flags; const char *path; uint64_t pgoff; };

static void op(uint32_t o, uint32_t opflags, uint64_t start, uint64_t end,
	       uint64_t start2, uint64_t end2, const uint64_t args[6],
	       int64_t anon_delta, uint64_t total_vm, uint64_t brk,
	       int nv, const struct v *vs)
{
	struct mw_op_rec r;
	size_t len;
	uint32_t np = 0;

	memset(&r, 0, sizeof(r));
	r.hdr = (struct mw_rec_hdr){ MW_REC_OP, PID, PID, ++seq, ts += 10 };
	r.op = o;
	r.opflags = opflags;
	if (args)
		memcpy(r.args, args, sizeof(r.args));
	r.start = start;
	r.end = end;
	r.start2 = start2;
	r.end2 = end2;
	r.rss_delta[MW_ANON] = anon_delta;
	r.total_vm = total_vm;
	r.start_brk = SB;
	r.brk = brk;
	r.start_stack = SSTACK;
	r.nr_vmas = nv;
	for (int i = 0; i < nv; i++) {
		r.vmas[i].start = vs[i].start;
		r.vmas[i].end = vs[i].end;
		r.vmas[i].flags = vs[i].flags;
		r.vmas[i].pgoff = vs[i].pgoff;
		if (vs[i].path) {
			r.vmas[i].vflags = MW_VMA_FILE;
			r.vmas[i].ino = 99 + i;
			r.vmas[i].dev = (254u << 20) | 1;
			snprintf(r.paths[i], MW_PATH_LEN, "%s", vs[i].path);
			np = i + 1;
		}
	}
	r.nr_paths = np;
	if (o == MW_OP_VMGROW)
		len = offsetof(struct mw_op_rec, vmas);
	else
		len = offsetof(struct mw_op_rec, paths) + (size_t)np * MW_PATH_LEN;
	rec(MW_S_BPF, &r, len);
}

static void sym(uint64_t addr, uint64_t sym_addr, const char *func, const char *module,
		const char *file, uint32_t line, uint16_t flags)
{
	char buf[sizeof(struct mw_sym) + 3 * 64] = { 0 };
	struct mw_sym *s = (struct mw_sym *)buf;
	char *p = buf + sizeof(*s);

	*s = (struct mw_sym){ .pid = PID, .line = line, .addr = addr, .sym_addr = sym_addr,
			      .elf_addr = addr & 0xffff, .flags = flags };
	s->func_len = snprintf(p, 64, "%s", func) + 1;
	p += s->func_len;
	s->module_len = snprintf(p, 64, "%s", module) + 1;
	p += s->module_len;
	s->file_len = file ? snprintf(p, 64, "%s", file) + 1 : 0;
	p += s->file_len;
	rec(MW_S_SYM, buf, p - buf);
}

/* Capture's unwind of the next stack record (MW_S_FRAMES). */
static void frames(const uint64_t *ips, uint32_t nr, uint16_t flags)
{
	char buf[sizeof(struct mw_frames) + 16 * sizeof(uint64_t)] = { 0 };
	struct mw_frames *f = (struct mw_frames *)buf;

	*f = (struct mw_frames){ .pid = PID, .tid = PID, .seq = seq, .source = MW_FRAMES_NATIVE,
				 .flags = flags, .nr = nr };
	memcpy(f->ips, ips, nr * sizeof(*ips));
	rec(MW_S_FRAMES, buf, sizeof(*f) + nr * sizeof(*ips));
}

static void stack(uint32_t kind, uint64_t addr, uint64_t vm_bytes, uint64_t sp_word,
		  const uint64_t *ips, uint32_t nr)
{
	struct mw_stack_rec r;

	memset(&r, 0, sizeof(r));
	r.hdr = (struct mw_rec_hdr){ MW_REC_STACK, PID, PID, seq, ts += 10 };
	r.kind = kind;
	r.nr = nr;
	r.addr = addr;
	r.vm_bytes = vm_bytes;
	r.sp_word = sp_word;
	memcpy(r.ips, ips, nr * sizeof(*ips));
	rec(MW_S_BPF, &r, offsetof(struct mw_stack_rec, ips) + nr * sizeof(*ips));
}

static void task(uint32_t type, const char *comm, int32_t code)
{
	struct mw_task_rec t = { 0 };

	t.hdr = (struct mw_rec_hdr){ type, PID, PID, ++seq, ts += 10 };
	snprintf(t.comm, sizeof(t.comm), "%s", comm);
	t.exit_code = code;
	rec(MW_S_BPF, &t, sizeof(t));
}

static void mark(uint32_t kind, uint32_t id, const char *name, uint64_t total_vm,
		 int64_t anon)
{
	struct mw_mark_rec m = { 0 };

	m.hdr = (struct mw_rec_hdr){ MW_REC_MARK, PID, PID, ++seq, ts += 100 };
	m.kind = kind;
	m.id = id;
	snprintf(m.name, sizeof(m.name), "%s", name);
	m.total_vm = total_vm;
	m.phase_vm_peak = total_vm;
	m.rss[MW_ANON] = anon;
	m.phase_rss_peak = anon;
	m.faults = anon / P;
	rec(MW_S_BPF, &m, sizeof(m));
}

static void markname(uint32_t id, uint32_t kind, const char *name)
{
	struct mw_markname n = { id, kind, { 0 } };

	snprintf(n.name, sizeof(n.name), "%s", name);
	rec(MW_S_MARKNAME, &n, sizeof(n));
}

static void oracle(uint64_t start, uint64_t end, uint64_t anon, uint64_t file)
{
	struct mw_oracle_ans a = { PID, 0, start, end, anon, file };

	rec(MW_S_ORACLE, &a, sizeof(a));
}

static void finish(int exited)
{
	struct mw_end e = { PID, exited ? MW_END_EXITED : MW_END_DETACHED,
			    exited ? 0 : -1, 0, ts += 1000 };

	if (exited)
		task(MW_REC_EXIT, "app", 0);
	rec(MW_S_END, &e, sizeof(e));
}

/* VM of the seeds, in pages, without the gate page. */
#define VM_SMAPS	(2 + 33 + 256 + 16 + 4 + 33 + 4 + 2)
#define VM_MAPS		(2 + 2 + 33 + 256 + 1 + 33 + 2)

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	uint64_t a_mmap[6] = { 0, 256 * P, 3, 0x22, (uint64_t)-1, 0 };
	uint64_t a_fixed[6] = { A1 + 16 * P, 16 * P, 1, 0x12, 3, 0 };
	uint64_t a_brk[6] = { BRK0 + 8 * P, 0, 0, 0, 0, 0 };
	uint64_t a_brk_down[6] = { BRK0, BRK0 + 8 * P, 0, 0, 0, 0 };
	uint64_t a_mremap[6] = { A2, 256 * P, 512 * P, 1, 0, 0 };
	uint64_t a_mremap_fixed[6] = { A2, 512 * P, 256 * P, 3, A2 + 0x1000000, 0 };
	uint64_t st[2] = { SB, A1 };
	int64_t an[2] = { 4 * P, 32 * P };

	/* 1: attach to a running process, a few faults, then end. */
	begin(dir, "attach_state_end");
	seed(MW_SEED_ATTACH, smaps_text, mountinfo_text);
	state(0, VM_SMAPS, 100 * P, 12 * P, 0, 0);
	deltas(2, st, an);
	state(1, VM_SMAPS, 136 * P, 12 * P, A1, 8 * P);
	finish(0);
	end();

	/* 2: mmap, populate, split by mprotect with a measured split, munmap. */
	begin(dir, "mmap_mprotect_munmap");
	seed(MW_SEED_ATTACH, smaps_text, mountinfo_text);
	op(MW_OP_MMAP, 0, A2, A2 + 256 * P, 0, 0, a_mmap, 256 * P, VM_SMAPS + 256, BRK0,
	   1, (struct v[]){ { A2, A2 + 256 * P, RW, NULL, 0 } });
	oracle(A2, A2 + 64 * P, 64 * P, 0);
	op(MW_OP_MPROTECT, 0, A2 + 64 * P, A2 + 128 * P, 0, 0, NULL, 0, VM_SMAPS + 256, BRK0,
	   3, (struct v[]){ { A2, A2 + 64 * P, RW, NULL, 0 },
			    { A2 + 64 * P, A2 + 128 * P, MW_VM_READ, NULL, 0 },
			    { A2 + 128 * P, A2 + 256 * P, RW, NULL, 0 } });
	deltas(1, (uint64_t[]){ A2 + 128 * P }, (int64_t[]){ 16 * P });
	op(MW_OP_MUNMAP, 0, A2 + 64 * P, A2 + 256 * P, 0, 0, NULL, -208 * P, VM_SMAPS + 64, BRK0,
	   0, NULL);
	state(1, VM_SMAPS + 64, 200 * P, 12 * P, 0, 0);
	finish(1);
	end();

	/* 3: a file mapped over anon memory with MAP_FIXED, then unlinked. */
	begin(dir, "mmap_fixed_file_unlinked");
	seed(MW_SEED_EXEC, maps_text, mountinfo_text);
	op(MW_OP_MMAP, 0, A1 + 16 * P, A1 + 32 * P, 0, 0, a_fixed, -4 * P, VM_MAPS, BRK0,
	   1, (struct v[]){ { A1 + 16 * P, A1 + 32 * P, MW_VM_READ, "/var/lib/app/model.bin", 0 } });
	rec(MW_S_UNLINKED, &(struct mw_unlinked){ 99, 254, 1 }, sizeof(struct mw_unlinked));
	finish(1);
	end();

	/* 4: brk up and down, stack growth. */
	begin(dir, "brk_vmgrow");
	seed(MW_SEED_EXEC, maps_text, NULL);
	op(MW_OP_BRK, 0, BRK0, BRK0 + 8 * P, 0, 0, a_brk, 8 * P, VM_MAPS + 8, BRK0 + 8 * P,
	   1, (struct v[]){ { SB, BRK0 + 8 * P, RW, NULL, 0 } });
	op(MW_OP_VMGROW, 0, 0x7ffcfffff000ull, 0x7ffd00000000ull, 0, 0, NULL, 0, VM_MAPS + 9,
	   0, 0, NULL);
	op(MW_OP_BRK, 0, BRK0, BRK0 + 8 * P, 0, 0, a_brk_down, -8 * P, VM_MAPS + 1, BRK0,
	   1, (struct v[]){ { SB, BRK0, RW, NULL, 0 } });
	finish(1);
	end();

	/* 5: mremap grow in place, then move to a fixed address. */
	begin(dir, "mremap");
	seed(MW_SEED_EXEC, maps_text, NULL);
	op(MW_OP_MMAP, 0, A2, A2 + 256 * P, 0, 0, a_mmap, 0, VM_MAPS + 256, BRK0,
	   1, (struct v[]){ { A2, A2 + 256 * P, RW, NULL, 0 } });
	deltas(1, (uint64_t[]){ A2 }, (int64_t[]){ 100 * P });
	op(MW_OP_MREMAP, 0, A2, A2 + 512 * P, A2, A2 + 256 * P, a_mremap, 0, VM_MAPS + 512, BRK0,
	   1, (struct v[]){ { A2, A2 + 512 * P, RW, NULL, 0 } });
	op(MW_OP_MREMAP, 0, A2 + 0x1000000, A2 + 0x1000000 + 256 * P, A2, A2 + 512 * P,
	   a_mremap_fixed, -100 * P, VM_MAPS + 256, BRK0,
	   1, (struct v[]){ { A2 + 0x1000000, A2 + 0x1000000 + 256 * P, RW, NULL, 0 } });
	finish(1);
	end();

	/* 6: exec, the new layout, SysV shm in and out, a named VMA. */
	begin(dir, "exec_shm_prctl");
	seed(MW_SEED_ATTACH, smaps_text, mountinfo_text);
	task(MW_REC_EXEC, "newprog", 0);
	seed(MW_SEED_EXEC, maps_text, mountinfo_text);
	op(MW_OP_SHMAT, 0, A2, A2 + 16 * P, 0, 0, NULL, 0, VM_MAPS + 16, BRK0,
	   1, (struct v[]){ { A2, A2 + 16 * P, RW | SHR, "/SYSV00000000", 0 } });
	op(MW_OP_SHMDT, 0, A2, A2 + 16 * P, 0, 0, NULL, 0, VM_MAPS, BRK0, 0, NULL);
	op(MW_OP_PRCTL_VMA, 0, A1, A1 + 16 * P, 0, 0, NULL, 0, VM_MAPS, BRK0,
	   2, (struct v[]){ { A1, A1 + 16 * P, RW, NULL, 0 },
			    { A1 + 16 * P, A1 + 256 * P, RW, NULL, 0 } });
	finish(1);
	end();

	/* 7: a lost record (sequence gap), a short walk, then a resync. */
	begin(dir, "gap_resync");
	seed(MW_SEED_EXEC, maps_text, NULL);
	op(MW_OP_MADVISE, 0, A1, A1 + 16 * P, 0, 0, NULL, -4 * P, VM_MAPS, BRK0,
	   1, (struct v[]){ { A1, A1 + 256 * P, RW, NULL, 0 } });
	seq += 3;
	op(MW_OP_MADVISE, MW_OPF_WALK_SHORT, A1, A1 + 256 * P, 0, 0, NULL, -32 * P, VM_MAPS, BRK0,
	   1, (struct v[]){ { A1, A1 + 256 * P, RW, NULL, 0 } });
	seed(MW_SEED_RESYNC, maps_text, NULL);
	op(MW_OP_MLOCK, MW_OPF_FAILED, A1, A1 + 16 * P, 0, 0, NULL, 0, VM_MAPS, BRK0, 0, NULL);
	finish(0);
	end();

	/* 8: phases and iterations (markers), a named spec and an inline name. */
	begin(dir, "phases_iters");
	seed(MW_SEED_EXEC, maps_text, NULL);
	markname(1, MW_MARK_PHASE, "load");
	mark(MW_MARK_PHASE, 1, "", VM_MAPS, 40 * P);
	op(MW_OP_MMAP, 0, A2, A2 + 64 * P, 0, 0, a_mmap, 0, VM_MAPS + 64, BRK0,
	   1, (struct v[]){ { A2, A2 + 64 * P, RW, NULL, 0 } });
	for (int i = 0; i < 3; i++) {
		deltas(1, (uint64_t[]){ A2 }, (int64_t[]){ 8 * P });
		mark(MW_MARK_ITER, 0, "step", VM_MAPS + 64, (48 + 8 * i) * P);
	}
	mark(MW_MARK_SAMPLE, 0, "", VM_MAPS + 64, 72 * P);
	mark(MW_MARK_PHASE, 0, "steady", VM_MAPS + 64, 72 * P);
	state(1, VM_MAPS + 64, 72 * P, 0, 0, 0);
	finish(1);
	end();

	/* 8b: a phase named for a release, malloc's arenas walked at its end
	 * (one read, one given up), then the exit. */
	begin(dir, "release_arenas");
	seed(MW_SEED_EXEC, maps_text, NULL);
	mark(MW_MARK_PHASE, 0, "alloc", VM_MAPS, 40 * P);
	op(MW_OP_BRK, 0, BRK0, BRK0 + 8 * P, 0, 0, a_brk, 8 * P, VM_MAPS + 8, BRK0 + 8 * P,
	   1, (struct v[]){ { SB, BRK0 + 8 * P, RW, NULL, 0 } });
	deltas(1, (uint64_t[]){ SB }, (int64_t[]){ 8 * P });
	mark(MW_MARK_PHASE, 0, "release", VM_MAPS + 8, 48 * P);
	rec(MW_S_HEAPFREE, &(struct mw_heapfree){ .pid = PID, .mapping = SB, .start = SB,
		.end = BRK0 + 8 * P, .main = 1, .chunks = 9, .free_chunks = 3,
		.free_bytes = 6 * P, .free_resident = 5 * P, .trim_resident = 4 * P },
	    sizeof(struct mw_heapfree));
	rec(MW_S_HEAPFREE, &(struct mw_heapfree){ .pid = PID, .err = -11, .mapping = A1 },
	    sizeof(struct mw_heapfree));
	finish(1);
	end();

	/* 9: --stacks: symbols, an mmap with its stack, a first-fault stack,
	 * RSS faulted in. */
	begin(dir, "stacks");
	seed(MW_SEED_EXEC, maps_text, NULL);
	sym(0x7f0000001010, 0x7f0000001000, "__mmap", "/usr/lib/libc.so.6", NULL, 0, MW_SYM_LEAF);
	sym(0x55555555510f, 0x555555555100, "alloc", "/usr/bin/app", "app.c", 12, MW_SYM_FRAMED);
	sym(0x55555555520f, 0x555555555200, "main", "/usr/bin/app", "app.c", 30, MW_SYM_FRAMED);
	op(MW_OP_MMAP, 0, A2, A2 + 64 * P, 0, 0, a_mmap, 0, VM_MAPS + 64, BRK0,
	   1, (struct v[]){ { A2, A2 + 64 * P, RW, NULL, 0 } });
	stack(MW_STACK_OP, A2, 64 * P, 0x555555555110,
	      (uint64_t[]){ 0x7f0000001010, 0x555555555210, 0x1234 }, 3);
	frames((uint64_t[]){ 0x7f0000001010, 0x555555555110, 0x555555555210 }, 3,
	       MW_FRAMES_TRUNCATED);
	stack(MW_STACK_FAULT, A2, 0, 0, (uint64_t[]){ 0x555555555210 }, 1);
	deltas(1, (uint64_t[]){ A2 }, (int64_t[]){ 8 * P });
	state(1, VM_MAPS + 64, 48 * P, 0, 0, 0);
	finish(1);
	end();

	/* Damaged records: each once made the analysis read past its end. */
	{
		static struct mw_op_rec r;
		static struct mw_mark_rec mk;

		/* a file VMA whose path fills its slot with no NUL */
		begin(dir, "regress_path_no_nul");
		memset(&r, 0, sizeof(r));
		r.hdr = (struct mw_rec_hdr){ MW_REC_OP, PID, PID, 1, 5 };
		r.op = MW_OP_MPROTECT;
		r.nr_vmas = 1;
		r.nr_paths = 1;
		r.vmas[0] = (struct mw_vma){ .start = A1, .end = A1 + P, .vflags = MW_VMA_FILE };
		memset(r.paths[0], 'A', MW_PATH_LEN);
		rec(MW_S_BPF, &r, offsetof(struct mw_op_rec, paths) + MW_PATH_LEN);
		end();

		/* a mapping, then a munmap cut before the vmas[] it claims */
		begin(dir, "regress_short_vmas");
		r.nr_paths = 0;
		r.vmas[0].vflags = 0;
		rec(MW_S_BPF, &r, offsetof(struct mw_op_rec, paths));
		r.hdr.seq = 2;
		r.op = MW_OP_MUNMAP;
		r.start = A1 - 16 * P;
		r.end = A1 + 16 * P;
		rec(MW_S_BPF, &r, offsetof(struct mw_op_rec, vmas));
		r.hdr.seq = 3;
		r.op = MW_OP_MADVISE;
		rec(MW_S_BPF, &r, offsetof(struct mw_op_rec, vmas) + 8);
		end();

		/* a deltas record longer than the struct, claiming 66 slots */
		begin(dir, "regress_deltas_too_long");
		{
			size_t dl = sizeof(struct mw_deltas_rec) + 2 * sizeof(struct mw_slot);
			struct mw_deltas_rec *d = calloc(1, dl);

			d->hdr = (struct mw_rec_hdr){ MW_REC_DELTAS, PID, PID, 0, 5 };
			d->nr = MW_SLOTS + 2;
			rec(MW_S_BPF, d, dl);
			free(d);
		}
		end();

		/* an mremap whose new range wraps around the address space */
		begin(dir, "regress_mremap_wraps");
		seed(MW_SEED_EXEC, maps_text, NULL);
		op(MW_OP_MREMAP, 0, UINT64_MAX, 0, A1, A1 + 256 * P, (uint64_t[6]){ A1, 256 * P, P, 1, 0, 0 },
		   0, VM_MAPS, BRK0, 0, NULL);
		end();

		/* a marker whose name has no NUL, nor the fields after it */
		begin(dir, "regress_mark_name_no_nul");
		memset(&mk, 0x01, sizeof(mk));	/* no NUL anywhere, small numbers */
		memset(mk.name, 'B', sizeof(mk.name));
		mk.hdr = (struct mw_rec_hdr){ MW_REC_MARK, PID, PID, 1, 5 };
		mk.kind = MW_MARK_PHASE;
		rec(MW_S_BPF, &mk, sizeof(mk));
		end();
	}

	/* the smallest stream: one record of each kind, mostly empty. */
	begin(dir, "minimal");
	rec(MW_S_BPF, &(struct mw_rec_hdr){ MW_REC_EXIT, PID, PID, 1, 5 }, sizeof(struct mw_rec_hdr));
	rec(MW_S_END, &(struct mw_end){ PID, MW_END_EXITED, 0, 0, 9 }, sizeof(struct mw_end));
	end();
	return 0;
}
