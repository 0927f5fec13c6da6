// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * unwind.c — a copied user stack unwound with libdwfl (unwind.h).
 *
 * The Dwfl is the symbolizer's (one per traced process, its modules read
 * from /proc/PID/maps), attached once with callbacks that serve the one
 * "thread" being unwound: its registers from the record, its stack from the
 * record's copy, other memory from the modules' ELF files.  A read of stack
 * memory the copy does not have marks the stack truncated.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "unwind/unwind.h"
#include "util.h"

/* Stack words one unwinding may read, for the call-site cache. */
#define MAX_READS	128

/* Reads this far above the copy are stack reads it should have had. */
#define STACK_REACH	(8ULL << 20)

struct mw_unwinder {
	struct mw_symbolizer *syms;
	pid_t pid;
	Dwfl *dwfl;		/* attached to, of symbolizer generation gen */
	unsigned gen;
	bool attached;
	/* The stack being unwound. */
	const struct mw_stack_rec *rec;
	uint64_t lo, hi;	/* [copy_sp, copy_sp + copy_len) */
	bool outside;		/* a read beyond the copy was needed */
	/* The copy's words it read (where, as bytes above the stack
	 * pointer, and what), for the call-site cache; -1: too many. */
	struct { uint32_t off; uint64_t val; } reads[MAX_READS];
	int nreads;
	struct mw_frames *out;
	struct mw_unwind_stats st;
	uint32_t *times;	/* ns per unwind, for the median */
	size_t ntimes, timecap;
};

int unwind_has_copy(const struct mw_stack_rec *rec, size_t len)
{
	return len >= offsetof(struct mw_stack_rec, copy) &&
	       rec->copy_flags & MW_COPY_REGS &&
	       rec->copy_len <= len - offsetof(struct mw_stack_rec, copy);
}

unsigned unwind_dwarf_regs(const uint64_t *raw, uint64_t *out)
{
#if defined(__x86_64__)
	/* raw: struct user_regs_struct (the kernel's pt_regs): r15 r14 r13
	 * r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs
	 * eflags rsp ss. */
	static const unsigned char from[17] = {
		10, 12, 11, 5, 13, 14, 4, 19,	/* rax rdx rcx rbx rsi rdi rbp rsp */
		9, 8, 7, 6, 3, 2, 1, 0,		/* r8 .. r15 */
		16,				/* rip */
	};

	for (unsigned i = 0; i < 17; i++)
		out[i] = raw[from[i]];
	return 17;
#elif defined(__aarch64__)
	/* raw: user_pt_regs: x0-x30, sp, pc, pstate. */
	for (unsigned i = 0; i < 33; i++)
		out[i] = raw[i];
	return 33;
#else
	(void)raw;
	(void)out;
	return 0;
#endif
}

/* ---- the thread callbacks ----------------------------------------------- */

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct mw_unwinder *u = arg;

	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->rec ? (pid_t)u->rec->hdr.tid : 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	*thread_argp = arg;
	return true;
}

/* A word of a module's file-backed segment, from its ELF file. */
static bool elf_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	Dwarf_Addr bias;
	Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	size_t n, size;
	char *raw;

	if (!elf || elf_getphdrnum(elf, &n) || !(raw = elf_rawfile(elf, &size)))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		uint64_t va = addr - bias;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (va >= ph.p_vaddr && va + 8 <= ph.p_vaddr + ph.p_filesz &&
		    ph.p_offset + (va - ph.p_vaddr) + 8 <= size) {
			memcpy(result, raw + ph.p_offset + (va - ph.p_vaddr), 8);
			return true;
		}
	}
	return false;
}

static void note_read(struct mw_unwinder *u, uint32_t off, uint64_t val)
{
	if (u->nreads < 0)
		return;
	for (int i = 0; i < u->nreads; i++)
		if (u->reads[i].off == off)
			return;
	if (u->nreads == MAX_READS) {
		u->nreads = -1;
		return;
	}
	u->reads[u->nreads].off = off;
	u->reads[u->nreads++].val = val;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct mw_unwinder *u = arg;

	if (addr >= u->lo && addr + 8 <= u->hi && addr + 8 > addr) {
		memcpy(result, u->rec->copy + (addr - u->lo), 8);
		note_read(u, (uint32_t)(addr - u->lo), *result);
		return true;
	}
	/* Above the copy, in reach of the stack: the copy was too short
	 * (unless it had the whole of the stack's VMA). */
	if (addr >= u->hi - (u->hi > u->lo ? 8 : 0) && addr < u->hi + STACK_REACH &&
	    !(u->rec->copy_flags & MW_COPY_TOP)) {
		u->outside = true;
		return false;
	}
	return elf_read(dwfl, addr, result);
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct mw_unwinder *u = arg;
	uint64_t regs[MW_STACK_REGS];
	unsigned n = unwind_dwarf_regs((const uint64_t *)u->rec->regs, regs);

	if (!n || !dwfl_thread_state_registers(thread, 0, n, regs))
		return false;
#if defined(__aarch64__)
	dwfl_thread_state_register_pc(thread, u->rec->regs[32]);
#endif
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ---- unwinding ------------------------------------------------------------ */

struct mw_unwinder *unwinder_new(struct mw_symbolizer *syms, pid_t pid)
{
	struct mw_unwinder *u = mw_xcalloc(1, sizeof(*u));

	u->syms = syms;
	u->pid = pid;
	return u;
}

void unwinder_free(struct mw_unwinder *u)
{
	if (u)
		free(u->times);
	free(u);
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

void unwinder_stats(const struct mw_unwinder *u, struct mw_unwind_stats *st)
{
	*st = u->st;
	if (!u->ntimes)
		return;
	qsort(u->times, u->ntimes, sizeof(u->times[0]), u32_cmp);
	st->median_ns = u->times[u->ntimes / 2];
	st->p90_ns = u->times[u->ntimes * 9 / 10];
}

/*
 * An ELF of this machine's architecture for dwfl_attach_state(): memwatch's
 * own, opened once and kept.  Given none, libdwfl borrows the backend of
 * the process's first module with an ELF and frees it with that module, so
 * a module dropped when the list is read again left the attached state
 * with a freed backend: an assertion in state_alloc() or a call through a
 * stale pointer, on the Debian 13 root's and a mount namespace's processes
 * under load.  Given one, it opens a backend of its own.
 */
static Elf *own_elf(void)
{
	static Elf *elf;
	static bool tried;
	int fd;

	if (tried)
		return elf;
	tried = true;
	elf_version(EV_CURRENT);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		close(fd);
	return elf;
}

static bool attach(struct mw_unwinder *u)
{
	unsigned gen;
	Dwfl *dwfl = symbolizer_dwfl(u->syms, &gen);

	if (!dwfl)
		return false;
	if (u->attached && u->dwfl == dwfl && u->gen == gen)
		return true;
	u->dwfl = dwfl;
	u->gen = gen;
	u->attached = dwfl_attach_state(dwfl, own_elf(), u->pid, &thread_callbacks, u);
	if (!u->attached)
		mw_dbg("unwind: cannot attach to %d: %s", u->pid, dwfl_errmsg(-1));
	return u->attached;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct mw_unwinder *u = arg;
	struct mw_frames *out = u->out;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	/* A return address past the known modules is no code: the chain went
	 * wrong (look again once: a library loaded since). */
	if (out->nr > 0 && !symbolizer_knows(u->syms, pc - 1))
		return DWARF_CB_ABORT;
	/* Frames after the first are return addresses (looked up one
	 * before); a signal frame's pc is the interrupted instruction. */
	out->ips[out->nr] = out->nr > 0 && activation ? pc + 1 : pc;
	out->nr++;
	return out->nr < MW_FRAMES_MAX ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint32_t unwinder_run(struct mw_unwinder *u, const struct mw_stack_rec *rec, size_t len,
		      struct mw_frames *out)
{
	uint64_t t0 = now_ns(), dt;

	memset(out, 0, sizeof(*out));
	out->pid = (uint32_t)u->pid;
	out->tid = rec->hdr.tid;
	out->seq = rec->hdr.seq;
	out->source = MW_FRAMES_NATIVE;
	if (!unwind_has_copy(rec, len))
		return 0;
	symbolizer_begin(u->syms);
	if (!attach(u)) {
		u->st.failed++;
		return 0;
	}
	u->rec = rec;
	u->lo = rec->copy_sp;
	u->hi = rec->copy_sp + rec->copy_len;
	u->outside = false;
	u->nreads = 0;
	u->out = out;
	dwfl_getthread_frames(u->dwfl, (pid_t)rec->hdr.tid, frame_cb, u);
	u->rec = NULL;
	/* A stack cut at the frame limit goes on too. */
	if (u->outside || out->nr >= MW_FRAMES_MAX)
		out->flags |= MW_FRAMES_TRUNCATED;
	dt = now_ns() - t0;
	u->st.stacks++;
	u->st.frames += out->nr;
	u->st.truncated += !!(out->flags & MW_FRAMES_TRUNCATED);
	u->st.pressure += !!(rec->copy_flags & MW_COPY_PRESSURE);
	u->st.failed += !out->nr;
	u->st.ns += dt;
	u->st.max_ns = MW_MAX(u->st.max_ns, dt);
	if (u->ntimes == u->timecap) {
		u->timecap = u->timecap ? u->timecap * 2 : 1024;
		u->times = mw_xrealloc(u->times, u->timecap, sizeof(u->times[0]));
	}
	u->times[u->ntimes++] = (uint32_t)MW_MIN(dt, (uint64_t)UINT32_MAX);
	return out->nr;
}

/*
 * Of the words the last unwinding read, those it went by: the return
 * addresses it found, the stack addresses (saved frame pointers, the bases
 * of realigned frames), and the last word read, which ended the chain.
 * The others are callee-saved registers restored on the way, data the
 * frames above did not need, and which differ from call to call.
 */
int unwinder_reads(const struct mw_unwinder *u, const struct mw_frames *f, uint32_t *off)
{
	int n = 0;

	if (u->nreads < 0)
		return -1;
	for (int i = 0; i < u->nreads; i++) {
		uint64_t v = u->reads[i].val;
		bool used = i == u->nreads - 1 || (v >= u->lo && v < u->hi);

		for (uint32_t k = 1; !used && k < f->nr; k++)
			used = v == f->ips[k] || v + 1 == f->ips[k];
		if (!used)
			continue;
		if (n == MW_STACK_RECIPE_MAX)
			return -1;
		off[n++] = u->reads[i].off;
	}
	return n;
}
