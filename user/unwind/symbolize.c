// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * symbolize.c — code addresses to "function, module, file:line" with
 * libdwfl, while the traced process is alive (the exit hold in trace.c keeps
 * it so until capture has caught up).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>

#include "analysis/idmap.h"
#include "capture/procfs.h"
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
	char root[40];		/* "/proc/PID/root" if its root is not ours, else "" */
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

/*
 * A process in another mount namespace (a container) names its files as
 * its mounts have them, which ours may not: they are read through
 * /proc/PID/root.  In ours (a chroot too: /proc/PID/maps names its files
 * from our root), as they are.  Asked again with each new address space:
 * `unshare -m` and a container's runtime switch before they exec.
 */
static void find_root(struct mw_symbolizer *s)
{
	char ns[64];
	struct stat a, b;

	snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)s->pid);
	snprintf(s->root, sizeof(s->root), "/proc/%d/root", (int)s->pid);
	if (stat(ns, &a) || stat("/proc/self/ns/mnt", &b) ||
	    (a.st_dev == b.st_dev && a.st_ino == b.st_ino))
		s->root[0] = 0;
}

static int free_table(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr start,
		      void *arg);
static int removed_module(Dwfl_Module *mod, void *ud, const char *name, Dwarf_Addr start,
			  void *arg);

void symbolizer_reset(struct mw_symbolizer *s)
{
	if (s->dwfl) {
		dwfl_getmodules(s->dwfl, free_table, NULL, 0);
		dwfl_end(s->dwfl);
	}
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

/* ---- symbol tables -------------------------------------------------------- */

/*
 * A module's functions sorted by address, built on its first lookup and
 * kept in the module's user data: dwfl_module_addrinfo() scans the whole
 * symbol table on every call, which for libtorch_cpu.so's 200 000 symbols
 * and the hundreds of addresses of an unwound stack is most of the
 * capture's time.  The names are libdwfl's (the module owns them).
 */
struct sym_ent {
	uint64_t lo, size;
	const char *name;
	int rank;		/* binding: global 2, weak 1, local 0 */
};

struct sym_table {
	size_t n;
	struct sym_ent v[];
};

static int sym_cmp(const void *a, const void *b)
{
	const struct sym_ent *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* At one address the preferred name first: global, then sized. */
	if (x->rank != y->rank)
		return y->rank - x->rank;
	return (y->size > 0) - (x->size > 0);
}

static struct sym_table *sym_table_build(Dwfl_Module *mod)
{
	int n = dwfl_module_getsymtab(mod);
	struct sym_table *t = mw_xcalloc(1, sizeof(*t) + (n > 0 ? (size_t)n : 0) * sizeof(t->v[0]));

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);

		if (!name || !*name || !addr || shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		t->v[t->n++] = (struct sym_ent){ .lo = addr, .size = sym.st_size, .name = name,
						 .rank = bind == STB_GLOBAL ? 2 : bind == STB_WEAK };
	}
	qsort(t->v, t->n, sizeof(t->v[0]), sym_cmp);
	return t;
}

static struct sym_table *sym_table(Dwfl_Module *mod)
{
	void **ud = NULL;

	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	if (!ud)
		return NULL;
	if (!*ud)
		*ud = sym_table_build(mod);
	return *ud;
}

/* The function at addr: the last one starting at or below it that covers
 * it, or a sizeless one right below (hand-written assembly). */
static const char *sym_lookup(Dwfl_Module *mod, uint64_t addr, uint64_t *start)
{
	struct sym_table *t = sym_table(mod);
	size_t lo = 0, hi;

	if (!t || !t->n)
		return NULL;
	hi = t->n;
	while (lo < hi) {		/* first entry with lo > addr */
		size_t mid = (lo + hi) / 2;

		if (t->v[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	/* A few back: a function may cover another's start (a cold part). */
	for (size_t i = lo; i > 0 && lo - i < 16; i--) {
		if (addr < t->v[i - 1].lo + t->v[i - 1].size) {
			hi = i - 1;
			goto found;
		}
	}
	hi = lo - 1;
	if (t->v[hi].size)
		return NULL;
found:
	/* Entries at one address: the first is the preferred name. */
	while (hi > 0 && t->v[hi - 1].lo == t->v[hi].lo)
		hi--;
	*start = t->v[hi].lo;
	return t->v[hi].name;
}

static int free_table(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr start,
		      void *arg)
{
	free(*ud);
	*ud = NULL;
	return DWARF_CB_OK;
}

/* libdwfl passes the module's &userdata, as to dwfl_getmodules() callbacks
 * (MODCB_ARGS), though the prototype says void *. */
static int removed_module(Dwfl_Module *mod, void *ud, const char *name, Dwarf_Addr start,
			  void *arg)
{
	void **slot = ud;

	free(*slot);
	*slot = NULL;
	return DWARF_CB_OK;
}

/* ---- resolving ----------------------------------------------------------- */

/*
 * The module list of a process in another mount namespace: its maps with every
 * file's path under /proc/PID/root, so that libdwfl opens the process's own
 * binaries, not the host's at the same path (or none).  The vDSO is not
 * reported (dwfl_linux_proc_maps_report has no PID to read it by).
 */
static int report_rooted(struct mw_symbolizer *s)
{
	char path[64], *text, *out, *p, *line;
	size_t len, cap, n = 0;
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->pid);
	if (procfs_read_file(path, &text, &len))
		return -1;
	cap = len + 4096;
	out = mw_xcalloc(cap, 1);
	for (line = text; line && *line; line = p) {
		int at = -1;
		size_t ll;

		p = strchr(line, '\n');
		ll = p ? (size_t)(++p - line) : strlen(line);
		sscanf(line, "%*x-%*x %*s %*x %*x:%*x %*u %n", &at);
		while (n + ll + sizeof(s->root) + 1 > cap)
			out = mw_xrealloc(out, cap *= 2, 1);
		if (at > 0 && (size_t)at < ll && line[at] == '/') {
			memcpy(out + n, line, (size_t)at);
			n += (size_t)at;
			n += (size_t)sprintf(out + n, "%s", s->root);
			memcpy(out + n, line + at, ll - (size_t)at);
			n += ll - (size_t)at;
		} else {
			memcpy(out + n, line, ll);
			n += ll;
		}
	}
	free(text);
	f = fmemopen(out, n ? n : 1, "r");
	err = f ? dwfl_linux_proc_maps_report(s->dwfl, f) : -1;
	if (f)
		fclose(f);
	free(out);
	return err;
}

/* (Re)read the process's module list: libraries come and go with dlopen. */
static void report_modules(struct mw_symbolizer *s)
{
	s->fresh = true;
	if (!s->dwfl) {
		if (!(s->dwfl = dwfl_begin(&proc_callbacks)))
			return;
		s->gen++;
		find_root(s);
	}
	dwfl_report_begin(s->dwfl);
	if (s->root[0] ? report_rooted(s) : dwfl_linux_proc_report(s->dwfl, s->pid))
		mw_dbg("symbols: cannot read the modules of %d", s->pid);
	dwfl_report_end(s->dwfl, removed_module, NULL);
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
	uint64_t start = 0;
	Dwfl_Line *line;
	int lineno = 0;

	memset(t, 0, sizeof(*t));
	if (!mod)
		return;
	t->module = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	/* Named as the process names it, not by our way in. */
	if (t->module && s->root[0] && !strncmp(t->module, s->root, strlen(s->root)))
		t->module += strlen(s->root);
	if (dwfl_module_getelf(mod, &bias))
		out->elf_addr = addr - bias;
	t->func = sym_lookup(mod, addr, &start);
	if (t->func)
		out->sym_addr = start;
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
