// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * symbolize.c — code addresses to "function, module, file:line" with
 * libdwfl, while the traced process is alive (the exit hold in trace.c keeps
 * it so until capture has caught up).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>

#include "analysis/idmap.h"
#include "stream.h"
#include "unwind/demangle.h"
#include "unwind/symbolize.h"
#include "util.h"

#define MIN_CODE_ADDR	4096	/* below: a broken frame chain, not code */

struct mw_symbolizer {
	pid_t pid;
	Dwfl *dwfl;
	bool fresh;		/* modules reported for the current stack */
	unsigned gen;		/* bumped with each new Dwfl (unwind.c attaches) */
	struct mw_idmap sent;	/* addresses already sent */
};

static char *no_debuginfo_path;	/* the default search path */

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &no_debuginfo_path,
};

struct mw_symbolizer *symbolizer_new(pid_t pid)
{
	struct mw_symbolizer *s = mw_xcalloc(1, sizeof(*s));

	/* libdw would ask a debuginfod server for missing debug info: never
	 * from a tracer, never over the network. */
	unsetenv("DEBUGINFOD_URLS");
	s->pid = pid;
	return s;
}

void symbolizer_reset(struct mw_symbolizer *s)
{
	if (s->dwfl)
		dwfl_end(s->dwfl);
	s->dwfl = NULL;
	idmap_free(&s->sent);
}

void symbolizer_free(struct mw_symbolizer *s)
{
	if (!s)
		return;
	symbolizer_reset(s);
	free(s);
}

/* ---- resolving ----------------------------------------------------------- */

/* (Re)read the process's module list: libraries come and go with dlopen. */
static void report_modules(struct mw_symbolizer *s)
{
	s->fresh = true;
	if (!s->dwfl) {
		if (!(s->dwfl = dwfl_begin(&proc_callbacks)))
			return;
		s->gen++;
	}
	dwfl_report_begin(s->dwfl);
	if (dwfl_linux_proc_report(s->dwfl, s->pid))
		mw_dbg("symbols: cannot read the modules of %d", s->pid);
	dwfl_report_end(s->dwfl, NULL, NULL);
}

static Dwfl_Module *module_at(struct mw_symbolizer *s, uint64_t addr)
{
	Dwfl_Module *mod = s->dwfl ? dwfl_addrmodule(s->dwfl, addr) : NULL;

	if (!mod && !s->fresh) {
		report_modules(s);
		mod = s->dwfl ? dwfl_addrmodule(s->dwfl, addr) : NULL;
	}
	return mod;
}

Dwfl *symbolizer_dwfl(struct mw_symbolizer *s, unsigned *gen)
{
	if (!s->dwfl)
		report_modules(s);
	*gen = s->gen;
	return s->dwfl;
}

bool symbolizer_knows(struct mw_symbolizer *s, uint64_t addr)
{
	return module_at(s, addr) != NULL;
}

void symbolizer_begin(struct mw_symbolizer *s)
{
	s->fresh = false;
}

struct sym_text {
	const char *func, *module, *file;
};

/*
 * Has the function at addr set up its own frame?  The CFA rule says: with
 * nothing pushed yet (x86-64: CFA = rsp + 8) the return address is the word
 * at the stack pointer; on arm64 a function that left the link register
 * alone ("same value") returns through it.  Either way the stack record's
 * sp_word is the caller the frame-pointer walk skipped.
 */
static uint16_t frame_kind(Dwfl_Module *mod, uint64_t addr)
{
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &bias);
	Dwarf_Frame *fr = NULL;
	uint16_t kind = 0;

	if (!cfi)
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &fr) || !fr)
		return 0;
#if defined(__x86_64__)
	{
		Dwarf_Op *ops;
		size_t nops;

		if (dwarf_frame_cfa(fr, &ops, &nops) == 0 && nops == 1 &&
		    ops[0].atom == DW_OP_bregx)
			kind = ops[0].number == 7 && ops[0].number2 == 8 ? MW_SYM_LEAF :
									   MW_SYM_FRAMED;
		else if (nops)
			kind = MW_SYM_FRAMED;
	}
#elif defined(__aarch64__)
	{
		Dwarf_Op mem[3], *ops;
		size_t nops;

		if (dwarf_frame_register(fr, 30, mem, &ops, &nops) == 0)
			kind = nops == 0 && !ops ? MW_SYM_LEAF : MW_SYM_FRAMED;
	}
#endif
	free(fr);
	return kind;
}

static void resolve(struct mw_symbolizer *s, uint64_t addr, struct mw_sym *out,
		    struct sym_text *t)
{
	Dwfl_Module *mod = module_at(s, addr);
	Dwarf_Addr bias = 0;
	GElf_Off off = 0;
	GElf_Sym sym;
	Dwfl_Line *line;
	int lineno = 0;

	memset(t, 0, sizeof(*t));
	if (!mod)
		return;
	t->module = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	if (dwfl_module_getelf(mod, &bias))
		out->elf_addr = addr - bias;
	t->func = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	if (t->func)
		out->sym_addr = addr - off;
	out->flags = frame_kind(mod, addr);
	line = dwfl_module_getsrc(mod, addr);
	if (line && (t->file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL)))
		out->line = lineno > 0 ? (uint32_t)lineno : 0;
}

static uint16_t text_len(const char *str)
{
	size_t n = str ? strlen(str) + 1 : 0;

	return n > UINT16_MAX ? 0 : (uint16_t)n;	/* absurdly long: drop it */
}

static char *put_text(char *p, const char *str, uint16_t n)
{
	if (n)
		memcpy(p, str, n);
	return p + n;
}

static void send_sym(struct mw_symbolizer *s, uint64_t addr, mw_sink_fn sink, void *ctx)
{
	struct mw_sym sym = { .pid = (uint32_t)s->pid, .addr = addr };
	struct sym_text t;
	char *buf, *p, *demangled;
	size_t len;

	resolve(s, addr, &sym, &t);
	demangled = mw_demangle(t.func);
	if (demangled)
		t.func = demangled;
	sym.func_len = text_len(t.func);
	sym.module_len = text_len(t.module);
	sym.file_len = text_len(t.file);
	len = sizeof(sym) + sym.func_len + sym.module_len + sym.file_len;
	buf = mw_xcalloc(1, len);
	memcpy(buf, &sym, sizeof(sym));
	p = buf + sizeof(sym);
	p = put_text(p, t.func, sym.func_len);
	p = put_text(p, t.module, sym.module_len);
	put_text(p, t.file, sym.file_len);
	sink(ctx, &(struct mw_srec){ .kind = MW_S_SYM, .len = (uint32_t)len, .data = buf });
	free(buf);
	free(demangled);
}

static void want(struct mw_symbolizer *s, uint64_t addr, mw_sink_fn sink, void *ctx)
{
	uint32_t seen;

	if (addr < MIN_CODE_ADDR || idmap_get(&s->sent, addr, &seen))
		return;
	idmap_put(&s->sent, addr, 1);
	send_sym(s, addr, sink, ctx);
}

void symbolizer_stack(struct mw_symbolizer *s, const struct mw_stack_rec *rec,
		      size_t len, mw_sink_fn sink, void *ctx)
{
	size_t nr;

	if (len < offsetof(struct mw_stack_rec, ips))
		return;
	nr = (len - offsetof(struct mw_stack_rec, ips)) / sizeof(rec->ips[0]);
	nr = MW_MIN(nr, MW_MIN((size_t)rec->nr, (size_t)MW_STACK_DEPTH));
	s->fresh = false;
	for (size_t i = 0; i < nr; i++)
		want(s, mw_frame_lookup(rec->ips[i], i > 0), sink, ctx);
	want(s, mw_frame_lookup(rec->sp_word, 1), sink, ctx);
}

void symbolizer_frames(struct mw_symbolizer *s, const uint64_t *ips, size_t nr,
		       mw_sink_fn sink, void *ctx)
{
	for (size_t i = 0; i < nr; i++)
		want(s, mw_frame_lookup(ips[i], i > 0), sink, ctx);
}
