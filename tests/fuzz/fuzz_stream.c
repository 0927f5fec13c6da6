// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_stream.c — the analysis (account.c, model.c, classify.c, procfs.c)
 * fed an arbitrary capture stream, as a damaged recording would feed it.
 *
 * Input: records back to back, each
 *
 *	u32 kind;  u32 len;  u8 data[len];	(host order, no padding)
 *
 * A last record whose len runs past the input gets what is left.  Each
 * record's data is copied to a heap buffer of exactly its length, so any
 * read past mw_srec.len is an ASan report.  MW_S_ORACLE records are queued
 * as pagemap answers for the next record, the way 'memwatch report' replays
 * them (user/capture/recording.c), so the model's measured splits run too.
 *
 * After the stream: every total, every mapping's display strings, and the
 * text and JSON reports (to /dev/null).  With MW_FUZZ_STRICT=1 in the
 * environment it also aborts when the mapping table breaks its own
 * invariants (sorted, non-empty, non-overlapping live mappings).
 */
#include <stdbool.h>

#include "analysis/account.h"
#include "analysis/classify.h"
#include "analysis/model.h"
#include "output/report.h"
#include "fuzz.h"

#define DEAD_LIMIT	8	/* small, so folding runs too */
#define MAX_ANSWERS	16

struct oracle_q {
	struct mw_oracle_ans a[MAX_ANSWERS];
	size_t n, head;
};

static FILE *devnull;
static bool strict;
volatile uint64_t fuzz_sink;	/* keeps the look-ups from being optimised out */

static int oracle(void *ctx, uint64_t start, uint64_t end,
		  uint64_t *anon, uint64_t *file)
{
	struct oracle_q *q = ctx;
	const struct mw_oracle_ans *a;

	if (q->head >= q->n)
		return -2;	/* -ENOENT */
	a = &q->a[q->head];
	if (a->start != start || a->end != end)
		return -2;
	q->head++;
	*anon = a->anon;
	*file = a->file;
	return a->err;
}

static void check_model(const struct mw_model *m)
{
	/* Sorted, non-overlapping, non-empty, and the running totals
	 * what a walk of the table gives. */
	FUZZ_CHECK(model_check(m) == NULL);
	for (size_t i = 0; i < m->ndead; i++)
		FUZZ_CHECK(m->dead[i]->unmapped);
	FUZZ_CHECK(!m->dead_limit || m->ndead <= m->dead_limit);
}

static void look_at_mapping(const struct mw_account *a, const struct mw_mapping *mp)
{
	char buf[512], perms[5];

	mapping_perms(mp, perms);
	fuzz_sink += strlen(mapping_display_path(&a->model, mp, buf, sizeof(buf)));
	fuzz_sink += strlen(mw_kind_name(mp->kind)) + (uint64_t)mapping_rss_total(mp);
}

static void look_at(const struct mw_account *a)
{
	struct report_opts ro = { .max_mappings = 4, .cmd_status = -1 };
	const struct mw_mapping *mp;

	fuzz_sink += account_vm(a) + account_vm_peak(a) + account_rss_peak(a);
	fuzz_sink += (uint64_t)account_rss_total(a) + (uint64_t)account_unattributed(a);
	for (int k = -1; k <= MW_NR_MEMBERS; k++)
		fuzz_sink += (uint64_t)account_rss(a, k);
	model_for_each(mp, &a->model)
		look_at_mapping(a, mp);
	for (size_t i = 0; i < a->model.ndead; i++)
		look_at_mapping(a, a->model.dead[i]);
	ro.max_mappings = 4;
	report_text(devnull, a, &ro);
	ro.max_mappings = 1000;
	report_json_start(devnull, a);
	report_json_summary(devnull, a, &ro);
	fflush(devnull);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *s = getenv("MW_FUZZ_STRICT");

	strict = s && *s && strcmp(s, "0");
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mw_account a;
	struct oracle_q q = { .n = 0 };
	size_t off = 0;

	account_init(&a, 0, DEAD_LIMIT);
	a.model.oracle = (struct mw_oracle){ .range_rss = oracle, .ctx = &q };
	while (size - off >= 8) {
		uint32_t kind, len;
		struct mw_srec r;
		void *buf;

		memcpy(&kind, data + off, 4);
		memcpy(&len, data + off + 4, 4);
		off += 8;
		if (len > size - off)
			len = (uint32_t)(size - off);
		buf = fuzz_dup(data + off, len);
		off += len;

		if (kind == MW_S_ORACLE) {
			if (len >= sizeof(struct mw_oracle_ans)) {
				if (q.head == q.n)
					q.head = q.n = 0;
				if (q.n < MAX_ANSWERS)
					memcpy(&q.a[q.n++], buf, sizeof(q.a[0]));
			}
			free(buf);
			continue;
		}
		r = (struct mw_srec){ .kind = kind, .len = len, .data = buf };
		account_feed(&a, &r);
		q.head = q.n = 0;	/* answers belong to the record they precede */
		free(buf);
		if (strict)
			check_model(&a.model);
	}
	a.model.oracle.range_rss = NULL;
	look_at(&a);
	account_free(&a);
	return 0;
}
