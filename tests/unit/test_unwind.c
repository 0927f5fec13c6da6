// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_unwind.c — user/unwind/: C++ names demangled, the register file in
 * DWARF order, what counts as a stack copy, and a real unwind: this very
 * process's registers and stack, copied as the kernel would copy them,
 * unwound with libdwfl into the functions that called (with a copy too
 * short for them, marked truncated).
 */
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "unwind/demangle.h"
#include "unwind/symbolize.h"
#include "unwind/unwind.h"
#include "unit.h"

TEST(demangles_cxx_names)
{
	char *s;

	s = mw_demangle("_ZN3c109alloc_cpuEm");
	CHECK_STR(s ? s : "(null)", "c10::alloc_cpu(unsigned long)");
	free(s);
	s = mw_demangle("_ZN2at6detail9empty_cpuEN3c108ArrayRefIlEENS1_10ScalarTypeEb");
	CHECK_STR(s ? s : "(null)", "at::detail::empty_cpu(c10::ArrayRef<long>, c10::ScalarType, bool)");
	free(s);
	s = mw_demangle("_Znam");
	CHECK_STR(s ? s : "(null)", "operator new[](unsigned long)");
	free(s);
	/* C names, garbage and nothing stay as they are. */
	CHECK(mw_demangle("malloc") == NULL);
	CHECK(mw_demangle("_Zgarbage!") == NULL);
	CHECK(mw_demangle("") == NULL);
	CHECK(mw_demangle(NULL) == NULL);
}

TEST(dwarf_register_order)
{
	uint64_t raw[MW_STACK_REGS], out[MW_STACK_REGS];

	for (unsigned i = 0; i < MW_STACK_REGS; i++)
		raw[i] = 1000 + i;
#if defined(__x86_64__)
	/* user_regs_struct: r15 0, r14 1, r13 2, r12 3, rbp 4, rbx 5, r11 6,
	 * r10 7, r9 8, r8 9, rax 10, rcx 11, rdx 12, rsi 13, rdi 14,
	 * orig_rax 15, rip 16, cs 17, eflags 18, rsp 19. */
	if (!CHECK_EQ_U64(unwind_dwarf_regs((const uint64_t *)raw, out), 17))
		return;
	CHECK_EQ_U64(out[0], 1010);	/* rax */
	CHECK_EQ_U64(out[1], 1012);	/* rdx */
	CHECK_EQ_U64(out[2], 1011);	/* rcx */
	CHECK_EQ_U64(out[3], 1005);	/* rbx */
	CHECK_EQ_U64(out[6], 1004);	/* rbp */
	CHECK_EQ_U64(out[7], 1019);	/* rsp */
	CHECK_EQ_U64(out[8], 1009);	/* r8 */
	CHECK_EQ_U64(out[15], 1000);	/* r15 */
	CHECK_EQ_U64(out[16], 1016);	/* rip */
#else
	CHECK(unwind_dwarf_regs(raw, out) > 0);
#endif
}

TEST(what_has_a_copy)
{
	static struct mw_stack_rec r;
	size_t head = offsetof(struct mw_stack_rec, copy);

	memset(&r, 0, sizeof(r));
	r.copy_flags = MW_COPY_REGS;
	r.copy_len = 100;
	CHECK(unwind_has_copy(&r, head + 100));
	CHECK(!unwind_has_copy(&r, head + 99));		/* cut short */
	CHECK(!unwind_has_copy(&r, offsetof(struct mw_stack_rec, ips) + 8));	/* fp only */
	r.copy_flags = 0;
	CHECK(!unwind_has_copy(&r, head + 100));	/* no registers */
}

#if defined(__x86_64__)
/* ---- a real unwind of this process ---------------------------------------- */

static struct mw_stack_rec rec;

/* The stack's end, from /proc/self/maps. */
static uint64_t stack_end(uint64_t sp)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char line[512];
	uint64_t end = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

/* The stack as raw words: ASan would see its redzones read. */
__attribute__((no_sanitize_address, noinline)) static void copy_words(void *dst, uint64_t src,
									size_t n)
{
	volatile const uint64_t *from = (const uint64_t *)src;
	uint64_t *to = dst;

	for (size_t i = 0; i < n / 8; i++)
		to[i] = from[i];
}

/* What the kernel records at a syscall: the registers (user_regs_struct
 * order), then the stack from rsp up, at most limit bytes. */
__attribute__((noinline)) static void capture(uint32_t limit)
{
	uint64_t *r = (uint64_t *)rec.regs, end;

	__asm__ volatile(
		"movq %%r15, 0(%0)\n\tmovq %%r14, 8(%0)\n\tmovq %%r13, 16(%0)\n\t"
		"movq %%r12, 24(%0)\n\tmovq %%rbp, 32(%0)\n\tmovq %%rbx, 40(%0)\n\t"
		"leaq 0(%%rip), %%rax\n\tmovq %%rax, 128(%0)\n\t"
		"movq %%rsp, 152(%0)\n\t"
		: : "r"(r) : "rax", "memory");
	end = stack_end(r[19]);
	rec.hdr.type = MW_REC_STACK;
	rec.hdr.tid = (uint32_t)getpid();
	rec.copy_sp = r[19];
	rec.copy_len = (uint32_t)(end - r[19] < limit ? end - r[19] : limit);
	rec.copy_flags = MW_COPY_REGS | (end - r[19] < limit ? MW_COPY_TOP : 0);
	rec.copy_len &= ~7u;
	copy_words(rec.copy, r[19], rec.copy_len);
}

__attribute__((noinline)) void unwind_test_inner(uint32_t limit)
{
	volatile char pad[2048];

	pad[0] = 1;
	capture(limit);
	pad[1] = pad[0];
}

__attribute__((noinline)) void unwind_test_outer(uint32_t limit)
{
	volatile char pad[2048];

	pad[0] = 1;
	unwind_test_inner(limit);
	pad[1] = pad[0];
}

struct names {
	char func[16][128];
	size_t n;
};

static void collect(void *ctx, const struct mw_srec *r)
{
	struct names *nm = ctx;
	const struct mw_sym *s = r->data;

	if (r->kind != MW_S_SYM || nm->n >= 16)
		return;
	snprintf(nm->func[nm->n++], sizeof(nm->func[0]), "%s",
		 s->func_len ? (const char *)(s + 1) : "?");
}

static int has(const struct names *nm, const char *f)
{
	for (size_t i = 0; i < nm->n; i++)
		if (strcmp(nm->func[i], f) == 0)
			return (int)i;
	return -1;
}

static void unwind_self(uint32_t limit, struct mw_frames *fr, struct names *nm)
{
	struct mw_symbolizer *s = symbolizer_new(getpid());
	struct mw_unwinder *u = unwinder_new(s, getpid());

	memset(&rec, 0, sizeof(rec));
	unwind_test_outer(limit);
	memset(nm, 0, sizeof(*nm));
	if (unwinder_run(u, &rec, offsetof(struct mw_stack_rec, copy) + rec.copy_len, fr))
		symbolizer_frames(s, fr->ips, fr->nr > 16 ? 16 : fr->nr, collect, nm);
	unwinder_free(u);
	symbolizer_free(s);
}

TEST(unwinds_a_copy_of_this_stack)
{
	struct mw_frames *fr = calloc(1, sizeof(*fr) + MW_FRAMES_MAX * sizeof(fr->ips[0]));
	struct names nm;
	int c, i, o, m;

	unwind_self(32768, fr, &nm);
	c = has(&nm, "capture");
	i = has(&nm, "unwind_test_inner");
	o = has(&nm, "unwind_test_outer");
	m = has(&nm, "main");
	CHECK(c == 0);
	CHECK(i == c + 1 && o == i + 1);
	CHECK(m > o);
	CHECK(!(fr->flags & MW_FRAMES_TRUNCATED));
	/* 2 KiB frames: 1 KiB of copy ends in the inner one. */
	unwind_self(1024, fr, &nm);
	CHECK(has(&nm, "capture") == 0);
	CHECK(has(&nm, "main") < 0);
	CHECK(fr->flags & MW_FRAMES_TRUNCATED);
	free(fr);
}

/*
 * The first module with an ELF when the unwinder attached is gone when the
 * modules are read again: the attached state must not have borrowed its
 * backend, which goes with it (user/unwind/unwind.c own_elf(); before, the
 * second unwind read the freed backend and failed state_alloc()'s
 * assertion).  The module: a copy of this test's file mapped below
 * everything else, so that it comes first.
 */
TEST(unwinds_after_the_first_module_goes)
{
	struct mw_frames *fr = calloc(1, sizeof(*fr) + MW_FRAMES_MAX * sizeof(fr->ips[0]));
	struct mw_symbolizer *s = symbolizer_new(getpid());
	struct mw_unwinder *u = unwinder_new(s, getpid());
	char path[] = "/tmp/mw-unwind-XXXXXX", cmd[256];
	uint64_t ips0[16];
	uint32_t nr0 = 0;
	struct names nm;
	size_t pg = (size_t)getpagesize();
	void *low = MAP_FAILED;
	int fd = mkstemp(path);

	/* Freed memory filled, so that a use after free shows (libdw is not
	 * instrumented: ASan does not see its reads). */
	mallopt(M_PERTURB, 0xa5);
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe %s", (int)getpid(), path);
	if (fd >= 0 && !system(cmd))
		low = mmap((void *)0x10000000, pg, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE,
			   fd, 0);
	CHECK(low == (void *)0x10000000);
	/* Round 0 names the frames (each symbol is sent once); round 1 must
	 * find the same return addresses. */
	for (int round = 0; round < 2; round++) {
		memset(&rec, 0, sizeof(rec));
		unwind_test_outer(32768);
		memset(&nm, 0, sizeof(nm));
		if (!unwinder_run(u, &rec, offsetof(struct mw_stack_rec, copy) + rec.copy_len, fr))
			fr->nr = 0;
		if (round) {
			/* The call in this function may be another copy of
			 * the loop's (frame 3): the frames above and below,
			 * through main.  Not libc's start-up frames above it:
			 * in about one layout in twenty (ASLR) the unwind of
			 * this process stops at __libc_start_call_main once
			 * the copy is gone, a fresh unwinder's too; not yet
			 * explained. */
			CHECK(nr0 >= 5 && fr->nr >= nr0 &&
			      !memcmp(fr->ips, ips0, 3 * sizeof(ips0[0])) &&
			      !memcmp(fr->ips + 4, ips0 + 4, (nr0 - 4) * sizeof(ips0[0])));
			break;
		}
		symbolizer_frames(s, fr->ips, fr->nr > 16 ? 16 : fr->nr, collect, &nm);
		CHECK(has(&nm, "unwind_test_inner") == 1 && has(&nm, "main") > 2);
		nr0 = has(&nm, "main") + 1;	/* the frames through main */
		memcpy(ips0, fr->ips, nr0 * sizeof(ips0[0]));
		/* The copy goes, and a look-up past every module reads the
		 * list again: the copy's module is dropped. */
		if (low != MAP_FAILED)
			munmap(low, pg);
		symbolizer_begin(s);
		CHECK(!symbolizer_knows(s, 8));
	}
	unwinder_free(u);
	symbolizer_free(s);
	mallopt(M_PERTURB, 0);
	if (fd >= 0)
		close(fd);
	unlink(path);
	free(fr);
}
#endif

int main(void)
{
	RUN(demangles_cxx_names);
	RUN(dwarf_register_order);
	RUN(what_has_a_copy);
#if defined(__x86_64__)
	RUN(unwinds_a_copy_of_this_stack);
	RUN(unwinds_after_the_first_module_goes);
#endif
	return unit_done();
}
