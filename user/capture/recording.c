// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* recording.c — the capture stream to and from a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/account.h"
#include "capture/recording.h"
#include "util.h"

int recorder_open(struct mw_recorder *w, const char *path)
{
	struct mw_file_hdr h = {
		.stream_version = MW_STREAM_VERSION,
		.abi_version = MW_ABI_VERSION,
		.page_size = (uint32_t)mw_page_size(),
	};
	struct timespec ts;
	int fd;

	memset(w, 0, sizeof(*w));
	memcpy(h.magic, MW_FILE_MAGIC, sizeof(h.magic));
	clock_gettime(CLOCK_REALTIME, &ts);
	h.created_ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || !(w->f = fdopen(fd, "wb"))) {
		int err = errno;

		mw_err("cannot write %s: %s", path, mw_open_strerror(err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	if (fwrite(&h, sizeof(h), 1, w->f) != 1)
		w->err = errno ? errno : EIO;
	return 0;
}

void recorder_write(struct mw_recorder *w, const struct mw_srec *r)
{
	static const char pad[8];
	struct mw_file_rec fr = { .kind = r->kind, .len = r->len };
	size_t padding = (8 - r->len % 8) % 8;

	if (!w->f || w->err)
		return;
	/* Never a file the reader would call corrupt. */
	if (r->len > MW_FILE_MAX_REC) {
		w->err = EFBIG;
		return;
	}
	if (fwrite(&fr, sizeof(fr), 1, w->f) != 1 ||
	    (r->len && fwrite(r->data, r->len, 1, w->f) != 1) ||
	    (padding && fwrite(pad, padding, 1, w->f) != 1)) {
		w->err = errno ? errno : EIO;
		return;
	}
	w->records++;
	w->bytes += sizeof(fr) + r->len + padding;
}

int recorder_close(struct mw_recorder *w)
{
	int err = w->err;

	if (w->f && fclose(w->f) && !err)
		err = errno ? errno : EIO;
	w->f = NULL;
	return err;
}

const char *replay_status_str(int status)
{
	switch (status) {
	case MW_REPLAY_OK:
		return "ok";
	case MW_REPLAY_TRUNCATED:
		return "truncated";
	case MW_REPLAY_CORRUPT:
		return "corrupt";
	case MW_REPLAY_VERSION:
		return "written by another version of memwatch";
	default:
		return "not a memwatch recording";
	}
}

int replay_file(FILE *f, void (*fn)(void *ctx, const struct mw_srec *r), void *ctx,
		uint64_t *nrecords)
{
	struct mw_file_hdr h;
	struct mw_file_rec fr;
	size_t cap = 0;
	void *buf = NULL;
	int status = MW_REPLAY_OK;

	*nrecords = 0;
	if (fread(&h, sizeof(h), 1, f) != 1 || memcmp(h.magic, MW_FILE_MAGIC, sizeof(h.magic)))
		return MW_REPLAY_NOTREC;
	if (h.stream_version != MW_STREAM_VERSION || h.abi_version != MW_ABI_VERSION)
		return MW_REPLAY_VERSION;
	if (mw_page_size_set(h.page_size))
		return MW_REPLAY_CORRUPT;
	for (;;) {
		size_t got = fread(&fr, 1, sizeof(fr), f), padded;

		if (got == 0)
			break;
		if (got != sizeof(fr)) {
			status = MW_REPLAY_TRUNCATED;
			break;
		}
		if (fr.kind < MW_S_BPF || fr.kind > MW_S_LAST || fr.len > MW_FILE_MAX_REC) {
			status = MW_REPLAY_CORRUPT;
			break;
		}
		padded = fr.len + (8 - fr.len % 8) % 8;
		if (padded > cap) {
			cap = padded;
			buf = mw_xrealloc(buf, cap, 1);
		}
		if (padded && fread(buf, padded, 1, f) != 1) {
			status = MW_REPLAY_TRUNCATED;
			break;
		}
		fn(ctx, &(struct mw_srec){ .kind = fr.kind, .len = fr.len, .data = buf });
		(*nrecords)++;
	}
	free(buf);
	return status;
}

/* ---- replay into the analysis -------------------------------------------- */

/* Pagemap answers recorded live, handed back in the order they were asked. */
struct replay_ctx {
	struct mw_account *acct;
	struct mw_oracle_ans *q;
	size_t n, head, cap;
};

static int replay_oracle(void *ctx, uint64_t start, uint64_t end,
			 uint64_t *anon, uint64_t *file)
{
	struct replay_ctx *c = ctx;
	const struct mw_oracle_ans *a;

	if (c->head >= c->n)
		return -ENOENT;
	a = &c->q[c->head];
	if (a->start != start || a->end != end)
		return -ENOENT;
	c->head++;
	*anon = a->anon;
	*file = a->file;
	return a->err;
}

static void replay_one(void *ctx, const struct mw_srec *r)
{
	struct replay_ctx *c = ctx;

	if (r->kind == MW_S_ORACLE) {
		if (r->len < sizeof(struct mw_oracle_ans))
			return;
		if (c->head == c->n)
			c->head = c->n = 0;
		if (c->n == c->cap) {
			c->cap = c->cap ? c->cap * 2 : 16;
			c->q = mw_xrealloc(c->q, c->cap, sizeof(*c->q));
		}
		memcpy(&c->q[c->n++], r->data, sizeof(*c->q));
		return;
	}
	account_feed(c->acct, r);
	c->head = c->n = 0;	/* answers belong to the record they precede */
}

int replay_into(FILE *f, struct mw_account *a, uint64_t *nrecords)
{
	struct replay_ctx c = { .acct = a };
	int status;

	a->model.oracle = (struct mw_oracle){ .range_rss = replay_oracle, .ctx = &c };
	status = replay_file(f, replay_one, &c, nrecords);
	a->model.oracle.range_rss = NULL;
	free(c.q);
	return status;
}
