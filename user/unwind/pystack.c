// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pystack.c — code objects and Python frames, for callsite.c (--python).
 */
#include <stdlib.h>
#include <string.h>

#include "stream.h"
#include "unwind/pyline.h"
#include "unwind/pystack.h"
#include "util.h"

void pystacks_init(struct mw_pystacks *ps)
{
	memset(ps, 0, sizeof(*ps));
}

void pystacks_free(struct mw_pystacks *ps)
{
	for (size_t i = 0; i < ps->ncodes; i++) {
		free(ps->codes[i].qualname);
		free(ps->codes[i].file);
		free(ps->codes[i].table);
	}
	free(ps->codes);
	idmap_free(&ps->by_code);
	memset(ps, 0, sizeof(*ps));
}

void pystacks_exec(struct mw_pystacks *ps)
{
	idmap_free(&ps->by_code);
	ps->pending_valid = false;
}

static char *take_str(const uint8_t *p, uint16_t n)
{
	return n && !p[n - 1] ? mw_xstrdup_text((const char *)p) : NULL;
}

/* A new entry even for a known address: stacks interned already keep the
 * frames they had. */
static struct mw_pycode_ent *code_new(struct mw_pystacks *ps, uint64_t code)
{
	if (ps->ncodes == ps->codecap) {
		ps->codecap = ps->codecap ? ps->codecap * 2 : 64;
		ps->codes = mw_xrealloc(ps->codes, ps->codecap, sizeof(*ps->codes));
	}
	memset(&ps->codes[ps->ncodes], 0, sizeof(ps->codes[0]));
	idmap_put(&ps->by_code, code, (uint32_t)ps->ncodes);
	return &ps->codes[ps->ncodes++];
}

/* A string of n bytes, NUL-terminated within them; NULL if empty. */
static char *take_field(const char *p, size_t n)
{
	size_t k = strnlen(p, n);

	return k && k < n ? mw_xstrdup_text(p) : NULL;
}

void pystacks_code_rec(struct mw_pystacks *ps, const void *data, uint32_t len)
{
	const struct mw_pycode_rec *r = data;
	struct mw_pycode_ent *e;
	size_t tlen;

	if (len < offsetof(struct mw_pycode_rec, linetable) || !r->code)
		return;
	tlen = MW_MIN((size_t)r->table_len, (size_t)MW_PY_TABLE_LEN);
	tlen = MW_MIN(tlen, (size_t)len - offsetof(struct mw_pycode_rec, linetable));
	e = code_new(ps, r->code);
	e->firstlineno = r->firstlineno;
	e->firsttraceable = r->firsttraceable;
	e->code_start = r->code_start;
	e->table_len = (uint32_t)tlen;
	e->table = mw_xcalloc(1, tlen ? tlen : 1);
	memcpy(e->table, r->linetable, tlen);
	e->qualname = take_field(r->qualname, sizeof(r->qualname));
	e->file = take_field(r->filename, sizeof(r->filename));
}

void pystacks_code(struct mw_pystacks *ps, const void *data, uint32_t len)
{
	const struct mw_pycode *pc = data;
	const uint8_t *p = (const uint8_t *)(pc + 1);
	struct mw_pycode_ent *e;

	if (len < sizeof(*pc) || !pc->code ||
	    (uint64_t)pc->linetable_len + pc->qualname_len + pc->file_len > len - sizeof(*pc))
		return;
	e = code_new(ps, pc->code);
	e->firstlineno = pc->firstlineno;
	e->firsttraceable = pc->firsttraceable;
	e->code_start = pc->code_start;
	e->table_len = pc->linetable_len;
	e->table = mw_xcalloc(1, pc->linetable_len ? pc->linetable_len : 1);
	memcpy(e->table, p, pc->linetable_len);
	p += pc->linetable_len;
	e->qualname = take_str(p, pc->qualname_len);
	p += pc->qualname_len;
	e->file = take_str(p, pc->file_len);
}

void pystacks_rec(struct mw_pystacks *ps, const void *data, uint32_t len)
{
	const struct mw_py_rec *r = data;
	size_t nr;

	ps->pending_valid = false;
	if (len < offsetof(struct mw_py_rec, frames))
		return;
	nr = (len - offsetof(struct mw_py_rec, frames)) / sizeof(r->frames[0]);
	nr = MW_MIN(nr, MW_MIN((size_t)r->nr, (size_t)MW_PY_DEPTH));
	memset(&ps->pending, 0, sizeof(ps->pending));
	memcpy(&ps->pending, r, offsetof(struct mw_py_rec, frames) + nr * sizeof(r->frames[0]));
	ps->pending.nr = (uint16_t)nr;
	ps->pending_valid = true;
	ps->recs++;
}

size_t pystacks_take(struct mw_pystacks *ps, const struct mw_rec_hdr *h, uint32_t kind,
		     uint64_t addr, struct mw_pyframe *out, size_t max, bool *truncated)
{
	const struct mw_py_rec *r = &ps->pending;
	size_t n = 0, seg_start = 0;

	*truncated = false;
	if (!ps->pending_valid)
		return 0;
	ps->pending_valid = false;
	if (r->hdr.tid != h->tid || r->hdr.seq != h->seq || r->kind != kind || r->addr != addr)
		return 0;
	*truncated = r->flags & MW_PYF_TRUNCATED;
	for (size_t i = 0; i < r->nr && n < max; i++) {
		/* 3.12+: a shim (code 0) ends the segment of the frame before. */
		bool shim = !r->frames[i].code;
		bool entry = shim || (r->entry_mask & (1ULL << i));
		uint32_t idx;

		if (!shim && idmap_get(&ps->by_code, r->frames[i].code, &idx)) {
			const struct mw_pycode_ent *e = &ps->codes[idx];
			long off = (long)(r->frames[i].instr - e->code_start);

			/* prev_instr is the code unit last run: -1 unit
			 * (off -2) before the first instruction. */
			if (off >= 2L * e->firsttraceable) {
				int line = pyline_at(e->table, e->table_len, e->firstlineno, off);

				out[n++] = (struct mw_pyframe){ idx, line > 0 ? line : 0, false };
			}
		}
		if (entry) {
			if (n == seg_start && n < max)	/* nothing shown for that call */
				out[n++] = (struct mw_pyframe){ PYF_NONE, 0, false };
			out[n - 1].seg_end = true;
			seg_start = n;
		}
	}
	return n;
}
