// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * callsite.c — call stacks of the calls that add mappings (--stacks), and
 * what each accounts for.  Fed by account.c; the stacks come from the
 * kernel's frame-pointer walk, named by capture's MW_S_SYM records.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/callsite.h"
#include "util.h"

void callsites_init(struct mw_callsites *cs)
{
	memset(cs, 0, sizeof(*cs));
}

void callsites_free(struct mw_callsites *cs)
{
	for (size_t i = 0; i < cs->nframes; i++) {
		free(cs->frames[i].func);
		free(cs->frames[i].module);
		free(cs->frames[i].file);
	}
	for (size_t i = 0; i < cs->nstacks; i++)
		free(cs->stacks[i].frames);
	free(cs->frames);
	free(cs->stacks);
	free(cs->pend);
	free(cs->sums);
	idmap_free(&cs->by_addr);
	idmap_free(&cs->by_content);
	idmap_free(&cs->by_phase);
	pystacks_free(&cs->py);
	idmap_free(&cs->py_frames);
	memset(cs, 0, sizeof(*cs));
}

bool callsites_any(const struct mw_callsites *cs)
{
	return cs->stack_recs > 0;
}

const struct mw_stack *callsites_get(const struct mw_callsites *cs, uint32_t id)
{
	return id && id <= cs->nstacks ? &cs->stacks[id - 1] : NULL;
}

/* ---- frames -------------------------------------------------------------- */

static uint32_t frame_new(struct mw_callsites *cs, uint64_t addr)
{
	if (cs->nframes == cs->framecap) {
		cs->framecap = cs->framecap ? cs->framecap * 2 : 256;
		cs->frames = mw_xrealloc(cs->frames, cs->framecap, sizeof(*cs->frames));
	}
	memset(&cs->frames[cs->nframes], 0, sizeof(cs->frames[0]));
	cs->frames[cs->nframes].addr = addr;
	return (uint32_t)cs->nframes++;
}

/* A string of the record: n bytes ending in NUL, else NULL. */
static char *take_text(const char **p, const char *end, uint16_t n)
{
	const char *s = *p;

	if (!n || n > end - s || s[n - 1])
		return NULL;
	*p += n;
	return mw_xstrdup_text(s);
}

void callsites_sym(struct mw_callsites *cs, const void *data, uint32_t len)
{
	const struct mw_sym *sym = data;
	const char *p = (const char *)(sym + 1), *end = (const char *)data + len;
	struct mw_frame *f;
	uint32_t idx;

	if (len < sizeof(*sym) || !sym->addr ||
	    (size_t)sym->func_len + sym->module_len + sym->file_len > len - sizeof(*sym))
		return;
	if (!idmap_get(&cs->by_addr, sym->addr, &idx)) {
		idx = frame_new(cs, sym->addr);
		idmap_put(&cs->by_addr, sym->addr, idx);
	}
	f = &cs->frames[idx];
	if (f->func || f->module)
		return;		/* named once already */
	f->sym_addr = sym->sym_addr;
	f->elf_addr = sym->elf_addr;
	f->line = sym->line;
	f->flags = sym->flags;
	f->func = take_text(&p, end, sym->func_len);
	f->module = take_text(&p, end, sym->module_len);
	f->file = take_text(&p, end, sym->file_len);
}

void callsites_frames(struct mw_callsites *cs, const void *data, uint32_t len)
{
	const struct mw_frames *fr = data;

	cs->pend_valid = false;
	if (len < sizeof(*fr) || fr->nr > MW_FRAMES_MAX ||
	    fr->nr > (len - sizeof(*fr)) / sizeof(fr->ips[0]) ||
	    fr->source != MW_FRAMES_NATIVE)
		return;
	if (!cs->pend)
		cs->pend = mw_xcalloc(1, sizeof(*cs->pend) + MW_FRAMES_MAX * sizeof(cs->pend->ips[0]));
	memcpy(cs->pend, fr, sizeof(*fr) + fr->nr * sizeof(fr->ips[0]));
	cs->pend_valid = true;
}

void callsites_exec(struct mw_callsites *cs)
{
	/* Addresses mean other code now; frames already in stacks stay. */
	idmap_free(&cs->by_addr);
	cs->op_valid = false;
	pystacks_exec(&cs->py);
}

static uint32_t frame_at(struct mw_callsites *cs, uint64_t addr)
{
	uint32_t idx;

	if (addr && idmap_get(&cs->by_addr, addr, &idx))
		return idx;
	idx = frame_new(cs, addr);
	if (addr)
		idmap_put(&cs->by_addr, addr, idx);
	return idx;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

static bool has_prefix(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (strncmp(s, list[i], strlen(list[i])) == 0)
			return true;
	return false;
}

/*
 * Frames nobody wrote for this program: the C runtime (libc, ld.so, the
 * C++ runtime), the Python interpreter (its executable or libpython, and
 * the frozen importlib), and the allocator layers on the way to the
 * kernel.  The call site is the first frame outside them.  Names are
 * matched demangled ("operator new(unsigned long)") and mangled.
 */
static bool runtime_frame(const struct mw_frame *f)
{
	static const char *const modules[] = {
		"libc.so", "libc-", "ld-linux", "ld64.so", "libpthread", "libdl",
		"libstdc++", "libgcc_s", "python3", "libpython3", "libjemalloc",
		"libtcmalloc", "libmimalloc",
	};
	/* Allocator entry points, by their exact name (the C ones: a user's
	 * "free_list" is not free), and allocator layers by prefix. */
	static const char *const funcs[] = {
		"malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc",
		"memalign", "valloc", "pvalloc",
	};
	static const char *const layers[] = {
		"__libc_", "je_", "tc_", "operator new", "_Znwm", "_Znam",
		"c10::alloc_cpu", "_ZN3c109alloc_cpu", "c10::DefaultCPUAllocator::",
		"_ZN3c1019DefaultCPUAllocator", "c10::DefaultMobileCPUAllocator::",
	};
	static const char *const c10[] = { "libc10.so" };
	size_t n = f->func ? strcspn(f->func, "(@.") : 0;

	if (f->python)
		return f->file && strncmp(f->file, "<frozen ", 8) == 0;
	for (size_t i = 0; n && i < MW_ARRAY_SIZE(funcs); i++)
		if (n == strlen(funcs[i]) && !strncmp(f->func, funcs[i], n))
			return true;
	/* libc10's allocator (c10::DefaultCPUAllocator::allocate) is a local
	 * symbol, not in the shipped library's symbol table. */
	if (!f->func && has_prefix(base_name(f->module), c10, 1))
		return true;
	return has_prefix(base_name(f->module), modules, MW_ARRAY_SIZE(modules)) ||
	       has_prefix(f->func, layers, MW_ARRAY_SIZE(layers));
}

/* A Python file as frames show it: its base name, with its directory for a
 * package's __init__.py or __main__.py ("torch/__init__.py"). */
static const char *py_file_name(const char *path)
{
	const char *b = base_name(path), *d;

	if (b == path || (strcmp(b, "__init__.py") && strcmp(b, "__main__.py")))
		return b;
	for (d = b - 1; d > path && d[-1] != '/'; d--)
		;
	return d;
}

/* A Python frame of the program itself, not of the standard library or
 * an installed package. */
static bool user_python_frame(const struct mw_frame *f)
{
	return f->python && f->file && f->file[0] != '<' && !strstr(f->file, "/lib/python3") &&
	       !strstr(f->file, "-packages/");
}

/* ---- stacks -------------------------------------------------------------- */

static uint32_t stack_intern(struct mw_callsites *cs, const uint32_t *frames, uint32_t nr,
			     bool truncated)
{
	uint64_t key = mw_mix64(truncated ? 0x7eed : 0x5eed, nr);
	struct mw_stack *st;
	uint32_t id;

	for (uint32_t i = 0; i < nr; i++)
		key = mw_mix64(key, frames[i]);
	key = key ?: 1;
	/* 64-bit hashes of frame indexes: a collision is not a concern at
	 * the few thousand stacks a process has. */
	if (idmap_get(&cs->by_content, key, &id))
		return id;
	if (cs->nstacks == cs->stackcap) {
		cs->stackcap = cs->stackcap ? cs->stackcap * 2 : 64;
		cs->stacks = mw_xrealloc(cs->stacks, cs->stackcap, sizeof(*cs->stacks));
	}
	st = &cs->stacks[cs->nstacks];
	memset(st, 0, sizeof(*st));
	st->frames = mw_xcalloc(nr ? nr : 1, sizeof(*st->frames));
	memcpy(st->frames, frames, nr * sizeof(*frames));
	st->nr = nr;
	st->truncated = truncated;
	while (st->site + 1 < nr && runtime_frame(&cs->frames[frames[st->site]]))
		st->site++;
	if (st->site < nr && runtime_frame(&cs->frames[frames[st->site]]))
		st->site = 0;
	/* --python: the script's own line, when the site is not it. */
	if (st->site < nr && !user_python_frame(&cs->frames[frames[st->site]]))
		for (uint32_t k = st->site + 1; k < nr && !st->user_py; k++)
			if (user_python_frame(&cs->frames[frames[k]]))
				st->user_py = k;
	id = (uint32_t)++cs->nstacks;
	idmap_put(&cs->by_content, key, id);
	return id;
}

/* A stack of one made-up frame, for RSS with no call stack. */
static uint32_t pseudo_stack(struct mw_callsites *cs, uint32_t *id, const char *name)
{
	uint32_t f;

	if (*id)
		return *id;
	f = frame_new(cs, 0);
	cs->frames[f].func = mw_xstrdup(name);
	*id = stack_intern(cs, &f, 1, false);
	return *id;
}

/*
 * The frames of a stack record: the frame-pointer chain, cut where it leaves
 * the known modules (a frame without a frame pointer breaks the chain and
 * what follows is not code), with the leaf's caller put back: libc's syscall
 * wrappers, string functions and many leaf functions set up no frame (GCC
 * omits it in leaves even with -fno-omit-frame-pointer), so the chain skips
 * the function that called them; sp_word is its return address.  The
 * module's CFI says whether the interrupted function had a frame there.
 */
static uint32_t stack_frames(struct mw_callsites *cs, const struct mw_stack_rec *r,
			     uint32_t nr, uint32_t *out)
{
	uint32_t n = 0, caller;
	const struct mw_frame *f0, *fc;

	for (uint32_t i = 0; i < nr; i++) {
		uint32_t f = frame_at(cs, mw_frame_lookup(r->ips[i], i > 0));

		if (i > 0 && !cs->frames[f].module)
			break;
		out[n++] = f;
	}
	if (!n || !r->sp_word || (nr > 1 && r->ips[1] == r->sp_word))
		return n;
	caller = frame_at(cs, mw_frame_lookup(r->sp_word, 1));
	f0 = &cs->frames[out[0]];
	fc = &cs->frames[caller];
	if (!fc->module || n >= MW_STACK_DEPTH + 1 || (f0->flags & MW_SYM_FRAMED))
		return n;
	/* Without CFI to tell, trust it only from a library leaf into
	 * another module (the syscall wrapper case). */
	if (!(f0->flags & MW_SYM_LEAF) &&
	    (!f0->module || strcmp(fc->module, f0->module) == 0))
		return n;
	memmove(&out[2], &out[1], (n - 1) * sizeof(*out));
	out[1] = caller;
	return n + 1;
}

/* The frames capture unwound for this record (MW_S_FRAMES): all of them,
 * cut only where one leaves the known modules. */
static uint32_t unwound_frames(struct mw_callsites *cs, const struct mw_frames *fr,
			       uint32_t *out)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < fr->nr; i++) {
		uint32_t f = frame_at(cs, mw_frame_lookup(fr->ips[i], i > 0));

		if (i > 0 && !cs->frames[f].module)
			break;
		out[n++] = f;
	}
	return n;
}

/* ---- Python frames (--python) ------------------------------------------ */

void callsites_pycode(struct mw_callsites *cs, const void *data, uint32_t len)
{
	pystacks_code(&cs->py, data, len);
}

void callsites_pycode_rec(struct mw_callsites *cs, const void *data, uint32_t len)
{
	pystacks_code_rec(&cs->py, data, len);
}

void callsites_pystack(struct mw_callsites *cs, const void *data, uint32_t len)
{
	pystacks_rec(&cs->py, data, len);
}

static uint32_t py_frame(struct mw_callsites *cs, const struct mw_pyframe *pf)
{
	const struct mw_pycode_ent *e = &cs->py.codes[pf->code];
	/* The code entry and the line, exactly: no hash to collide. */
	uint64_t key = ((uint64_t)pf->code + 1) << 32 | (uint32_t)pf->line;
	uint32_t idx;

	if (idmap_get(&cs->py_frames, key, &idx))
		return idx;
	idx = frame_new(cs, 0);
	cs->frames[idx].python = true;
	cs->frames[idx].line = (uint32_t)pf->line;
	if (!e->qualname && !e->file) {
		cs->frames[idx].func = mw_xstrdup("[python code freed before it was read]");
	} else {
		cs->frames[idx].func = mw_xstrdup(e->qualname ? e->qualname : "?");
		cs->frames[idx].file = mw_xstrdup(e->file ? e->file : "?");
	}
	idmap_put(&cs->py_frames, key, idx);
	return idx;
}

static bool eval_frame(const struct mw_frame *f)
{
	return f->func && strncmp(f->func, "_PyEval_EvalFrameDefault", 24) == 0;
}

/*
 * The Python frames merged into the native ones, as memray does: each
 * native _PyEval_EvalFrameDefault frame stands for the Python frames its
 * call ran (up to the next entry frame, seg_end), innermost first.  Python
 * frames left over (a native stack cut short, or one without any
 * _PyEval frame: the kernel's frame-pointer walk stops inside a python3.11
 * built without frame pointers, as Debian's is) go on at the outer end:
 * they are the callers of everything the native stack shows.
 */
static uint32_t merge_python(struct mw_callsites *cs, const struct mw_stack_rec *r,
			     const uint32_t *native, uint32_t n, uint32_t *out, uint32_t max)
{
	struct mw_pyframe py[MW_PY_DEPTH + MW_PY_DEPTH];
	bool truncated;
	size_t npy = pystacks_take(&cs->py, &r->hdr, r->kind, r->addr, py, MW_ARRAY_SIZE(py),
				   &truncated), k = 0;
	uint32_t m = 0;

	for (uint32_t i = 0; i < n && m < max; i++) {
		if (!eval_frame(&cs->frames[native[i]]) || k >= npy) {
			out[m++] = native[i];
			continue;
		}
		for (; k < npy && m < max; k++) {
			if (py[k].code != PYF_NONE)
				out[m++] = py_frame(cs, &py[k]);
			if (py[k].seg_end) {
				k++;
				break;
			}
		}
	}
	for (; k < npy && m < max; k++)
		if (py[k].code != PYF_NONE)
			out[m++] = py_frame(cs, &py[k]);
	return m;
}

/* ---- end of Python frames ------------------------------------------------ */

static struct mw_site_sum *phase_sum(struct mw_callsites *cs, int phase, uint32_t id)
{
	uint64_t key = ((uint64_t)(uint32_t)(phase + 1) << 32) | id;
	uint32_t idx;

	if (idmap_get(&cs->by_phase, key, &idx))
		return &cs->sums[idx];
	if (cs->nsums == cs->sumcap) {
		cs->sumcap = cs->sumcap ? cs->sumcap * 2 : 64;
		cs->sums = mw_xrealloc(cs->sums, cs->sumcap, sizeof(*cs->sums));
	}
	memset(&cs->sums[cs->nsums], 0, sizeof(cs->sums[0]));
	idmap_put(&cs->by_phase, key, (uint32_t)cs->nsums);
	return &cs->sums[cs->nsums++];
}

void callsites_op(struct mw_callsites *cs, const struct mw_op_rec *r)
{
	cs->op_valid = true;
	cs->op_seq = r->hdr.seq;
	cs->op_tid = r->hdr.tid;
	cs->op_start = r->start;
	cs->op_end = r->end;
}

/* The mappings the op made or grew.  The kernel merges a new mapping into a
 * compatible neighbour (KERNEL-NOTES 3): the VMA's call site is then the
 * call that mapped most of it, not whichever came first. */
static void mark_made(struct mw_callsites *cs, struct mw_model *m, uint32_t id,
		      uint64_t vm_bytes)
{
	struct mw_mapping *mp;

	for (mp = model_lower_bound(m, cs->op_start); mp && mp->start < cs->op_end;
	     mp = model_next(mp)) {
		if (mp->phase >= 0 && (!mp->stack || vm_bytes > mp->stack_vm)) {
			mp->stack = id;
			mp->stack_vm = vm_bytes;
		}
	}
}

void callsites_stack(struct mw_callsites *cs, struct mw_model *m,
		     const struct mw_stack_rec *r, uint32_t len)
{
	uint32_t frames[MW_FRAMES_MAX + MW_STACK_DEPTH + 1];
	uint32_t merged[MW_FRAMES_MAX + MW_STACK_DEPTH + 1 + 2 * MW_PY_DEPTH];
	uint32_t nr, id, n;
	bool trunc = false;
	struct mw_mapping *mp;
	bool pend = cs->pend_valid;

	cs->pend_valid = false;
	if (len < offsetof(struct mw_stack_rec, ips))
		return;
	nr = (len - offsetof(struct mw_stack_rec, ips)) / sizeof(r->ips[0]);
	nr = MW_MIN(nr, MW_MIN(r->nr, (uint32_t)MW_STACK_DEPTH));
	cs->stack_recs++;
	if (pend && cs->pend->tid == r->hdr.tid && cs->pend->seq == r->hdr.seq) {
		trunc = cs->pend->flags & MW_FRAMES_TRUNCATED;
		cs->unwound++;
		cs->truncated += trunc;
		cs->cached += r->site_hit != 0;
		n = unwound_frames(cs, cs->pend, frames);
	} else {
		cs->cache_missed += r->site_hit != 0;
		n = stack_frames(cs, r, nr, frames);
	}
	n = merge_python(cs, r, frames, n, merged, MW_ARRAY_SIZE(merged));
	id = stack_intern(cs, merged, n, trunc);
	if (r->kind == MW_STACK_OP) {
		struct mw_stack *st = &cs->stacks[id - 1];

		st->vm_bytes += r->vm_bytes;
		st->calls++;
		cs->vm_bytes += r->vm_bytes;
		phase_sum(cs, m->phase, id)->vm_bytes += r->vm_bytes;
		if (cs->op_valid && r->hdr.seq == cs->op_seq && r->hdr.tid == cs->op_tid)
			mark_made(cs, m, id, r->vm_bytes);
		cs->op_valid = false;
	} else if (r->kind == MW_STACK_FAULT) {
		mp = model_find(m, r->addr);
		if (mp && !mp->fault_stack)
			mp->fault_stack = id;
	}
}

void callsites_rss(struct mw_callsites *cs, const struct mw_model *m,
		   const struct mw_mapping *mp, uint64_t bytes)
{
	uint32_t id = mp->stack;

	if (!bytes || !cs->stack_recs)
		return;
	if (!id)
		id = mp->phase < 0 ? pseudo_stack(cs, &cs->before_id, "[mapped before tracing]") :
				     pseudo_stack(cs, &cs->unknown_id, "[stack unknown]");
	cs->stacks[id - 1].rss_bytes += bytes;
	cs->rss_bytes += bytes;
	phase_sum(cs, m->phase, id)->rss_bytes += bytes;
}

/* ---- reading ------------------------------------------------------------- */

bool callsites_frame_runtime(const struct mw_callsites *cs, uint32_t frame)
{
	return frame < cs->nframes && runtime_frame(&cs->frames[frame]);
}

const char *callsites_frame_str(const struct mw_callsites *cs, uint32_t frame,
				char *buf, size_t len)
{
	const struct mw_frame *f = frame < cs->nframes ? &cs->frames[frame] : NULL;
	int n;

	if (!f)
		n = snprintf(buf, len, "[unknown]");
	else if (f->python && !f->file)
		return snprintf(buf, len, "%s", f->func), buf;
	else if (f->python)
		return snprintf(buf, len, "%s:%u %s", py_file_name(f->file), f->line, f->func), buf;
	else if (f->func && f->module)
		n = snprintf(buf, len, "%s+0x%llx (%s)", f->func,
			     (unsigned long long)(f->addr - f->sym_addr), base_name(f->module));
	else if (f->func)
		n = snprintf(buf, len, "%s", f->func);
	else if (f->module)
		n = snprintf(buf, len, "%s+0x%llx", base_name(f->module),
			     (unsigned long long)f->elf_addr);
	else
		n = snprintf(buf, len, "0x%llx", (unsigned long long)f->addr);
	if (f && f->file && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - n, " %s:%u", base_name(f->file), f->line);
	return buf;
}

size_t callsites_func_brief(const char *func)
{
	size_t n = func ? strlen(func) : 0, end = n;
	int depth = 0;

	/* A qualifier after the list: "f(int) const", "f() &&". */
	while (end > 0 && func[end - 1] != ')') {
		if (strchr(" abcdefghijklmnopqrstuvwxyz&", func[end - 1]) == NULL)
			return n;
		end--;
	}
	if (end == 0)
		return n;
	for (size_t i = end; i > 0; i--) {
		if (func[i - 1] == ')')
			depth++;
		else if (func[i - 1] == '(' && --depth == 0)
			return i - 1 > 0 ? i - 1 : n;
	}
	return n;
}

const char *callsites_frame_brief(const struct mw_callsites *cs, uint32_t frame,
				  char *buf, size_t len)
{
	const struct mw_frame *f = frame < cs->nframes ? &cs->frames[frame] : NULL;
	int n;

	if (!f || !f->func || !f->module)
		return callsites_frame_str(cs, frame, buf, len);
	n = snprintf(buf, len, "%.*s+0x%llx (%s)", (int)callsites_func_brief(f->func), f->func,
		     (unsigned long long)(f->addr - f->sym_addr), base_name(f->module));
	if (f->file && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - n, " %s:%u", base_name(f->file), f->line);
	return buf;
}

const char *callsites_site_str(const struct mw_callsites *cs, uint32_t id,
			       char *buf, size_t len)
{
	const struct mw_stack *st = callsites_get(cs, id);

	if (!st || !st->nr) {
		snprintf(buf, len, "%s", st ? "[no frames]" : "");
		return buf;
	}
	return callsites_frame_str(cs, st->frames[st->site], buf, len);
}

struct mw_site_sum callsites_sum(const struct mw_callsites *cs, int phase, uint32_t id)
{
	const struct mw_stack *st = callsites_get(cs, id);
	uint64_t key = ((uint64_t)(uint32_t)(phase + 1) << 32) | id;
	struct mw_site_sum none = { 0 };
	uint32_t idx;

	if (!st)
		return none;
	if (phase < 0)
		return (struct mw_site_sum){ st->vm_bytes, st->rss_bytes };
	return idmap_get(&cs->by_phase, key, &idx) ? cs->sums[idx] : none;
}

size_t callsites_top(const struct mw_callsites *cs, int phase, bool by_rss,
		     uint32_t *out, size_t max)
{
	size_t n = 0;

	for (uint32_t id = 1; id <= cs->nstacks; id++) {
		struct mw_site_sum s = callsites_sum(cs, phase, id);
		uint64_t w = by_rss ? s.rss_bytes : s.vm_bytes;
		size_t pos;

		if (!w)
			continue;
		for (pos = n; pos > 0; pos--) {
			struct mw_site_sum o = callsites_sum(cs, phase, out[pos - 1]);

			if ((by_rss ? o.rss_bytes : o.vm_bytes) >= w)
				break;
		}
		if (pos >= max)
			continue;
		if (n < max)
			n++;
		memmove(&out[pos + 1], &out[pos], (n - 1 - pos) * sizeof(*out));
		out[pos] = id;
	}
	return n;
}

/* A frame name for folded output: no ';' (the separator), no line breaks. */
static void folded_frame(FILE *f, const struct mw_callsites *cs, uint32_t frame)
{
	const struct mw_frame *fr = &cs->frames[frame];
	char buf[512];

	if (fr->func && !fr->python)
		snprintf(buf, sizeof(buf), "%s", fr->func);
	else
		callsites_frame_str(cs, frame, buf, sizeof(buf));
	for (char *p = buf; *p; p++)
		if (*p == ';' || (unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '_';
	fputs(buf, f);
}

int callsites_folded(FILE *f, const struct mw_callsites *cs, const char *root, bool by_rss)
{
	for (size_t i = 0; i < cs->nstacks; i++) {
		const struct mw_stack *st = &cs->stacks[i];
		uint64_t w = by_rss ? st->rss_bytes : st->vm_bytes;
		char name[64];

		if (!w)
			continue;
		snprintf(name, sizeof(name), "%s", root && *root ? root : "?");
		for (char *p = name; *p; p++)
			if (*p == ';' || *p == ' ' || (unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '_';
		fputs(name, f);
		if (st->truncated)
			fputs(";[truncated]", f);
		for (uint32_t k = st->nr; k > 0; k--) {
			fputc(';', f);
			folded_frame(f, cs, st->frames[k - 1]);
		}
		fprintf(f, " %llu\n", (unsigned long long)w);
	}
	return ferror(f) ? -EIO : 0;
}
