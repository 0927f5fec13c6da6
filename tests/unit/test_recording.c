// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_recording.c — unit tests for user/capture/recording.c: a recording written
 * with recorder_open/write/close and read back with replay_file, byte for
 * byte; every truncation point; bad magic, version, kind and length; and
 * replay_into() handing recorded pagemap answers back to the model.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/account.h"
#include "analysis/model.h"
#include "capture/recording.h"
#include "util.h"
#include "records.h"
#include "unit.h"

#define P	4096ull
#define HDR	sizeof(struct mw_file_hdr)

static char tmpdir[] = "/tmp/mw_test_recording_XXXXXX";

static const char *tmp_path(const char *name)
{
	static char buf[4][256];
	static int k;
	char *p = buf[k++ % 4];

	snprintf(p, 256, "%s/%s", tmpdir, name);
	return p;
}

/* ---- reading a file back ---------------------------------------------------- */

struct got {
	struct { uint32_t kind, len; unsigned char *data; } v[64];
	size_t n;
};

static void collect(void *ctx, const struct mw_srec *r)
{
	struct got *g = ctx;

	if (g->n >= 64)
		return;
	g->v[g->n].kind = r->kind;
	g->v[g->n].len = r->len;
	g->v[g->n].data = malloc(r->len ? r->len : 1);
	if (r->len)
		memcpy(g->v[g->n].data, r->data, r->len);
	g->n++;
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].data);
	g->n = 0;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n ? (size_t)n : 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* A FILE reading exactly these bytes. */
static FILE *mem_file(const void *bytes, size_t len)
{
	FILE *f = len ? fmemopen((void *)bytes, len, "rb") : tmpfile();

	if (!f)
		abort();
	return f;
}

static int replay_bytes(const void *bytes, size_t len, struct got *g, uint64_t *n)
{
	FILE *f = mem_file(bytes, len);
	int st;

	*n = 12345;
	st = replay_file(f, collect, g, n);
	fclose(f);
	return st;
}

/* ---- the records of the round trip ------------------------------------------ */

static const struct { uint32_t kind, len; } recs[] = {
	{ MW_S_BPF, 24 },
	{ MW_S_SEED, 0 },
	{ MW_S_STATE, 13 },
	{ MW_S_END, 8 },
	{ MW_S_MARKNAME, 1 },
	{ MW_S_ORACLE, 7 },
	{ MW_S_UNLINKED, 4099 },
	{ MW_S_BPF, 0 },
	{ MW_S_SEED, 15 },
	{ MW_S_STATE, 16 },
};
#define NRECS (sizeof(recs) / sizeof(recs[0]))

static unsigned char rec_byte(size_t i, size_t k)
{
	return (unsigned char)(i * 37 + k * 11 + 1);
}

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* File offset just past record i. */
static size_t rec_end(size_t i)
{
	size_t off = HDR;

	for (size_t k = 0; k <= i; k++)
		off += sizeof(struct mw_file_rec) + pad8(recs[k].len);
	return off;
}

static int write_recording(const char *path, struct mw_recorder *w)
{
	int err = recorder_open(w, path);

	if (err)
		return err;
	for (size_t i = 0; i < NRECS; i++) {
		unsigned char *d = malloc(recs[i].len ? recs[i].len : 1);

		for (size_t k = 0; k < recs[i].len; k++)
			d[k] = rec_byte(i, k);
		recorder_write(w, &(struct mw_srec){ .kind = recs[i].kind, .len = recs[i].len,
						      .data = recs[i].len ? d : NULL });
		free(d);
	}
	return 0;
}

/* The bytes write_recording() writes, through a file @name in tmpdir that
 * is gone again; NULL when a check failed. */
static unsigned char *recorded_bytes(const char *name, size_t *flen)
{
	const char *path = tmp_path(name);
	struct mw_recorder w;
	unsigned char *file;

	if (!CHECK_EQ_INT(write_recording(path, &w), 0))
		return NULL;
	recorder_close(&w);
	file = slurp(path, flen);
	unlink(path);
	if (!CHECK(file != NULL))
		return NULL;
	return file;
}

static bool record_matches(const struct got *g, size_t i)
{
	if (g->v[i].kind != recs[i].kind || g->v[i].len != recs[i].len)
		return false;
	for (size_t k = 0; k < recs[i].len; k++)
		if (g->v[i].data[k] != rec_byte(i, k))
			return false;
	return true;
}

TEST(round_trip)
{
	const char *path = tmp_path("round.mwrec");
	struct mw_recorder w;
	struct got g = { .n = 0 };
	struct mw_file_hdr h;
	struct timespec now;
	struct stat st;
	uint64_t n, bytes = 0;
	unsigned char *file;
	size_t flen;
	FILE *f;

	if (!CHECK_EQ_INT(write_recording(path, &w), 0))
		return;
	for (size_t i = 0; i < NRECS; i++)
		bytes += sizeof(struct mw_file_rec) + pad8(recs[i].len);
	CHECK_EQ_U64(w.records, NRECS);
	CHECK_EQ_U64(w.bytes, bytes);
	CHECK_EQ_INT(w.err, 0);
	CHECK_EQ_INT(recorder_close(&w), 0);
	CHECK(w.f == NULL);

	CHECK_EQ_INT(stat(path, &st), 0);
	CHECK_EQ_U64((uint64_t)st.st_size, HDR + bytes);
	CHECK_EQ_U64((uint64_t)st.st_size, rec_end(NRECS - 1));
	CHECK_EQ_INT(st.st_mode & 0777, 0600);

	/* The header, as documented. */
	file = slurp(path, &flen);
	if (!CHECK(file != NULL))
		return;
	CHECK_EQ_U64(HDR, 32);
	CHECK_EQ_U64(sizeof(struct mw_file_rec), 8);
	memcpy(&h, file, sizeof(h));
	CHECK(memcmp(h.magic, "MWREC\r\n\032", 8) == 0);
	CHECK_EQ_U64(h.stream_version, MW_STREAM_VERSION);
	CHECK_EQ_U64(h.abi_version, MW_ABI_VERSION);
	CHECK_EQ_U64(h.page_size, mw_page_size());
	CHECK_EQ_U64(h.reserved, 0);
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t now_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	CHECK(h.created_ns <= now_ns && h.created_ns + 60ull * 1000000000ull > now_ns);

	/* Every record header in place, every padding byte zero. */
	size_t off = HDR;
	for (size_t i = 0; i < NRECS; i++) {
		struct mw_file_rec fr;

		memcpy(&fr, file + off, sizeof(fr));
		CHECK_EQ_U64(fr.kind, recs[i].kind);
		CHECK_EQ_U64(fr.len, recs[i].len);
		off += sizeof(fr);
		CHECK_EQ_U64(off % 8, 0);
		for (size_t k = recs[i].len; k < pad8(recs[i].len); k++)
			CHECK_EQ_INT(file[off + k], 0);
		off += pad8(recs[i].len);
	}
	CHECK_EQ_U64(off, flen);
	free(file);

	/* Read back: the same kinds, lengths and bytes, in order. */
	f = fopen(path, "rb");
	if (!CHECK(f != NULL))
		return;
	CHECK_EQ_INT(replay_file(f, collect, &g, &n), MW_REPLAY_OK);
	fclose(f);
	CHECK_EQ_U64(n, NRECS);
	if (CHECK_EQ_U64(g.n, NRECS))
		for (size_t i = 0; i < NRECS; i++)
			if (!CHECK(record_matches(&g, i)))
				fprintf(stderr, "  record %zu differs\n", i);
	got_free(&g);
	unlink(path);
}

/* Only a header: a valid recording of nothing. */
TEST(empty_recording)
{
	const char *path = tmp_path("empty.mwrec");
	struct mw_recorder w;
	struct got g = { .n = 0 };
	uint64_t n = 99;
	FILE *f;

	if (!CHECK_EQ_INT(recorder_open(&w, path), 0))
		return;
	CHECK_EQ_U64(w.records, 0);
	CHECK_EQ_U64(w.bytes, 0);
	CHECK_EQ_INT(recorder_close(&w), 0);
	f = fopen(path, "rb");
	if (!CHECK(f != NULL))
		return;
	CHECK_EQ_INT(replay_file(f, collect, &g, &n), MW_REPLAY_OK);
	fclose(f);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_U64(g.n, 0);
	unlink(path);
}

/* Cut the file at every length: short of the header it is no recording;
 * at a record boundary it is whole; anywhere else it is truncated, with
 * exactly the records before the cut delivered. */
TEST(truncated_everywhere)
{
	unsigned char *file;
	size_t flen;
	int bad = 0;

	file = recorded_bytes("trunc.mwrec", &flen);
	if (!file)
		return;
	for (size_t len = 0; len <= flen; len++) {
		struct got g = { .n = 0 };
		uint64_t n;
		int st = replay_bytes(file, len, &g, &n), want_st;
		size_t whole = 0;
		bool boundary = len == HDR;

		for (size_t i = 0; i < NRECS; i++) {
			if (rec_end(i) <= len)
				whole = i + 1;
			boundary |= rec_end(i) == len;
		}
		if (len < HDR) {
			want_st = MW_REPLAY_NOTREC;
			whole = 0;
		} else {
			want_st = boundary ? MW_REPLAY_OK : MW_REPLAY_TRUNCATED;
		}
		if (st != want_st || n != whole || g.n != whole) {
			if (bad++ < 5)
				fprintf(stderr, "  cut at %zu: status %d (want %d), %llu records, "
					"%zu delivered (want %zu)\n", len, st, want_st,
					(unsigned long long)n, g.n, whole);
		} else {
			for (size_t i = 0; i < whole; i++)
				if (!record_matches(&g, i))
					bad++;
		}
		got_free(&g);
	}
	CHECK_EQ_INT(bad, 0);

	/* The named cases, once more as single checks. */
	struct got g = { .n = 0 };
	uint64_t n;

	CHECK_EQ_INT(replay_bytes(file, rec_end(2) + 3, &g, &n), MW_REPLAY_TRUNCATED);
	CHECK_EQ_U64(n, 3);
	got_free(&g);
	/* Inside the padding of record 2 (13 bytes, 3 of padding). */
	CHECK_EQ_INT(replay_bytes(file, rec_end(2) - 1, &g, &n), MW_REPLAY_TRUNCATED);
	CHECK_EQ_U64(n, 2);
	got_free(&g);
	/* Half a record header. */
	CHECK_EQ_INT(replay_bytes(file, rec_end(5) + 4, &g, &n), MW_REPLAY_TRUNCATED);
	CHECK_EQ_U64(n, 6);
	got_free(&g);
	/* The big record cut in its middle. */
	CHECK_EQ_INT(replay_bytes(file, rec_end(5) + 8 + 2000, &g, &n), MW_REPLAY_TRUNCATED);
	CHECK_EQ_U64(n, 6);
	got_free(&g);
	CHECK_EQ_INT(replay_bytes(file, flen - 1, &g, &n), MW_REPLAY_TRUNCATED);
	CHECK_EQ_U64(n, NRECS - 1);
	got_free(&g);
	CHECK_EQ_INT(replay_bytes(file, HDR - 1, &g, &n), MW_REPLAY_NOTREC);
	CHECK_EQ_U64(n, 0);
	free(file);
}

TEST(bad_magic)
{
	struct got g = { .n = 0 };
	unsigned char *file;
	size_t flen;
	uint64_t n;

	file = recorded_bytes("magic.mwrec", &flen);
	if (!file)
		return;
	for (size_t i = 0; i < 8; i++) {
		file[i] ^= 0x20;
		CHECK_EQ_INT(replay_bytes(file, flen, &g, &n), MW_REPLAY_NOTREC);
		CHECK_EQ_U64(n, 0);
		CHECK_EQ_U64(g.n, 0);
		file[i] ^= 0x20;
	}
	CHECK_EQ_INT(replay_bytes(file, flen, &g, &n), MW_REPLAY_OK);
	got_free(&g);

	static const char text[] = "This is a text file, not a recording at all.\n";
	CHECK_EQ_INT(replay_bytes(text, sizeof(text) - 1, &g, &n), MW_REPLAY_NOTREC);
	CHECK_EQ_INT(replay_bytes(text, 0, &g, &n), MW_REPLAY_NOTREC);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_U64(g.n, 0);
	free(file);
}

TEST(bad_version)
{
	struct got g = { .n = 0 };
	struct mw_file_hdr *h;
	unsigned char *file;
	size_t flen;
	uint64_t n;

	file = recorded_bytes("version.mwrec", &flen);
	if (!file)
		return;
	h = (struct mw_file_hdr *)file;
	h->stream_version = MW_STREAM_VERSION + 1;
	CHECK_EQ_INT(replay_bytes(file, flen, &g, &n), MW_REPLAY_VERSION);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_U64(g.n, 0);
	h->stream_version = 0;
	CHECK_EQ_INT(replay_bytes(file, flen, &g, &n), MW_REPLAY_VERSION);
	h->stream_version = MW_STREAM_VERSION;
	h->abi_version = MW_ABI_VERSION + 1;
	CHECK_EQ_INT(replay_bytes(file, flen, &g, &n), MW_REPLAY_VERSION);
	CHECK_EQ_U64(n, 0);
	CHECK_EQ_U64(g.n, 0);
	/* A version mismatch wins over anything wrong later in the file. */
	h->abi_version = MW_ABI_VERSION - 1;
	CHECK_EQ_INT(replay_bytes(file, HDR + 3, &g, &n), MW_REPLAY_VERSION);
	h->abi_version = MW_ABI_VERSION;
	/* The creation time is not checked. */
	h->created_ns = 0;
	CHECK_EQ_INT(replay_bytes(file, flen, &g, &n), MW_REPLAY_OK);
	CHECK_EQ_U64(n, NRECS);
	got_free(&g);
	free(file);
}

/* A recording says its page size, and replay counts with it: one made on
 * arm64 with 16 KiB pages reads the same on x86-64, and back. */
TEST(page_size)
{
	struct got g = { .n = 0 };
	struct mw_file_hdr *h;
	unsigned char *file;
	size_t flen;
	uint64_t n;

	file = recorded_bytes("pagesize.mwrec", &flen);
	if (!file)
		return;
	h = (struct mw_file_hdr *)file;
	CHECK_EQ_U64(h->page_size, 4096);
	h->page_size = 16384;
	CHECK_EQ_INT(replay_bytes(file, flen, &g, &n), MW_REPLAY_OK);
	CHECK_EQ_U64(n, NRECS);
	CHECK_EQ_U64(mw_page_shift, 14);
	CHECK_EQ_U64(mw_page_size(), 16384);
	got_free(&g);
	h->page_size = 65536;
	CHECK_EQ_INT(replay_bytes(file, flen, &g, &n), MW_REPLAY_OK);
	CHECK_EQ_U64(mw_page_shift, 16);
	got_free(&g);
	/* Not a page size: corrupt, nothing read, the shift unchanged. */
	for (uint32_t bad = 0; bad < 3; bad++) {
		h->page_size = (uint32_t[]){ 0, 5000, 2048 }[bad];
		CHECK_EQ_INT(replay_bytes(file, flen, &g, &n), MW_REPLAY_CORRUPT);
		CHECK_EQ_U64(n, 0);
		CHECK_EQ_U64(mw_page_shift, 16);
	}
	mw_page_size_set(4096);
	free(file);
}

/* A file: header, one good record (kind BPF, 5 bytes), then a record header
 * with the given kind and length and `extra` bytes after it. */
static size_t build_bad(unsigned char *buf, uint32_t kind, uint32_t len, size_t extra)
{
	struct mw_file_hdr h = { .stream_version = MW_STREAM_VERSION,
				 .abi_version = MW_ABI_VERSION, .page_size = 4096 };
	struct mw_file_rec fr = { .kind = MW_S_BPF, .len = 5 };
	size_t off = 0;

	memcpy(h.magic, MW_FILE_MAGIC, 8);
	memcpy(buf, &h, sizeof(h));
	off += sizeof(h);
	memcpy(buf + off, &fr, sizeof(fr));
	off += sizeof(fr);
	memcpy(buf + off, "hello\0\0\0", 8);
	off += 8;
	fr.kind = kind;
	fr.len = len;
	memcpy(buf + off, &fr, sizeof(fr));
	off += sizeof(fr);
	memset(buf + off, 0x5a, extra);
	return off + extra;
}

/* build_bad() replayed: @want, after the good record. */
static void check_bad(uint32_t kind, uint32_t len, size_t extra, int want)
{
	unsigned char buf[256];
	struct got g = { .n = 0 };
	uint64_t n;
	bool ok;

	ok = CHECK_EQ_INT(replay_bytes(buf, build_bad(buf, kind, len, extra), &g, &n), want);
	ok &= CHECK_EQ_U64(n, 1);
	if (!ok)
		fprintf(stderr, "  kind %u, length %u\n", kind, len);
	got_free(&g);
}

TEST(corrupt_records)
{
	unsigned char buf[256];
	struct got g = { .n = 0 };
	uint64_t n;
	size_t len;

	/* Lengths no record can have. */
	len = build_bad(buf, MW_S_BPF, MW_FILE_MAX_REC + 1, 64);
	CHECK_EQ_INT(replay_bytes(buf, len, &g, &n), MW_REPLAY_CORRUPT);
	CHECK_EQ_U64(n, 1);
	if (CHECK_EQ_U64(g.n, 1)) {
		CHECK_EQ_U64(g.v[0].kind, MW_S_BPF);
		CHECK_EQ_U64(g.v[0].len, 5);
		CHECK(memcmp(g.v[0].data, "hello", 5) == 0);
	}
	got_free(&g);
	check_bad(MW_S_SEED, UINT32_MAX, 64, MW_REPLAY_CORRUPT);
	check_bad(MW_S_STATE, 0x80000000u, 0, MW_REPLAY_CORRUPT);

	/* The largest allowed length is not corrupt: the data is missing. */
	check_bad(MW_S_STATE, MW_FILE_MAX_REC, 64, MW_REPLAY_TRUNCATED);

	/* Kinds no record has. */
	check_bad(0, 8, 8, MW_REPLAY_CORRUPT);
	check_bad(MW_S_LAST + 1, 8, 8, MW_REPLAY_CORRUPT);
	check_bad(UINT32_MAX, 0, 0, MW_REPLAY_CORRUPT);

	/* Every kind there is, with a sane length, reads fine. */
	for (uint32_t k = MW_S_BPF; k <= MW_S_MARKNAME; k++) {
		len = build_bad(buf, k, 3, 8);
		CHECK_EQ_INT(replay_bytes(buf, len, &g, &n), MW_REPLAY_OK);
		CHECK_EQ_U64(n, 2);
		if (CHECK_EQ_U64(g.n, 2)) {
			CHECK_EQ_U64(g.v[1].kind, k);
			CHECK_EQ_U64(g.v[1].len, 3);
			CHECK(memcmp(g.v[1].data, "\x5a\x5a\x5a", 3) == 0);
		}
		got_free(&g);
	}
}

TEST(status_strings)
{
	CHECK_STR(replay_status_str(MW_REPLAY_OK), "ok");
	CHECK_STR(replay_status_str(MW_REPLAY_TRUNCATED), "truncated");
	CHECK_STR(replay_status_str(MW_REPLAY_CORRUPT), "corrupt");
	CHECK_STR(replay_status_str(MW_REPLAY_VERSION), "written by another version of memwatch");
	CHECK_STR(replay_status_str(MW_REPLAY_NOTREC), "not a memwatch recording");
	CHECK_STR(replay_status_str(77), "not a memwatch recording");
}

/* Silence stderr around a call that reports an error there on purpose. */
static int quiet_open(struct mw_recorder *w, const char *path)
{
	int saved = dup(2), null = open("/dev/null", O_WRONLY), err;

	fflush(stderr);
	dup2(null, 2);
	err = recorder_open(w, path);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(null);
	return err;
}

TEST(recorder_open_errors)
{
	struct mw_recorder w;
	const char *target = tmp_path("target"), *link = tmp_path("link.mwrec");
	unsigned char *file;
	size_t flen;
	FILE *f;

	/* A directory that is not there. */
	CHECK_EQ_INT(quiet_open(&w, tmp_path("nodir/x.mwrec")), ENOENT);
	CHECK(w.f == NULL);
	recorder_write(&w, &(struct mw_srec){ .kind = MW_S_BPF, .len = 4, .data = "abcd" });
	CHECK_EQ_U64(w.records, 0);
	CHECK_EQ_INT(recorder_close(&w), 0);

	/* A symbolic link is not followed: the file it names is untouched. */
	f = fopen(target, "w");
	if (!CHECK(f != NULL))
		return;
	fputs("precious", f);
	fclose(f);
	CHECK_EQ_INT(symlink(target, link), 0);
	CHECK_EQ_INT(quiet_open(&w, link), ELOOP);
	file = slurp(target, &flen);
	if (CHECK(file != NULL)) {
		CHECK_EQ_U64(flen, 8);
		CHECK(memcmp(file, "precious", 8) == 0);
	}
	free(file);
	unlink(link);
	unlink(target);

	/* An existing file is replaced, not appended to. */
	const char *path = tmp_path("again.mwrec");
	if (!CHECK_EQ_INT(write_recording(path, &w), 0))
		return;
	recorder_close(&w);
	if (!CHECK_EQ_INT(recorder_open(&w, path), 0))
		return;
	recorder_write(&w, &(struct mw_srec){ .kind = MW_S_END, .len = 3, .data = "xyz" });
	CHECK_EQ_U64(w.records, 1);
	CHECK_EQ_U64(w.bytes, 16);
	CHECK_EQ_INT(recorder_close(&w), 0);
	file = slurp(path, &flen);
	CHECK_EQ_U64(flen, HDR + 16);
	free(file);
	unlink(path);
}

/* A write error is remembered: later records are dropped, close reports it. */
/* A record the reader would reject is not written: the file stays
 * readable up to it, and the recording fails with EFBIG. */
TEST(recorder_write_too_big)
{
	const char *path = tmp_path("big.mwrec");
	char *big = calloc(1, (size_t)MW_FILE_MAX_REC + 1);	/* never touched */
	struct mw_recorder w;
	struct got g = { .n = 0 };
	uint64_t n = 0;
	FILE *f;

	if (!CHECK(big != NULL) || !CHECK_EQ_INT(recorder_open(&w, path), 0)) {
		free(big);
		return;
	}
	recorder_write(&w, &(struct mw_srec){ .kind = MW_S_BPF, .len = 4, .data = "abcd" });
	recorder_write(&w, &(struct mw_srec){ .kind = MW_S_SEED, .len = MW_FILE_MAX_REC + 1,
					      .data = big });
	CHECK_EQ_U64(w.records, 1);
	CHECK_EQ_INT(recorder_close(&w), EFBIG);
	free(big);
	f = fopen(path, "rb");
	if (!CHECK(f != NULL))
		return;
	CHECK_EQ_INT(replay_file(f, collect, &g, &n), MW_REPLAY_OK);
	fclose(f);
	CHECK_EQ_U64(n, 1);
	got_free(&g);
	unlink(path);
}

TEST(recorder_write_error)
{
	struct mw_recorder w;

	if (access("/dev/full", W_OK) != 0)
		return;		/* no /dev/full here */
	memset(&w, 0, sizeof(w));
	w.f = fopen("/dev/full", "wb");
	if (!CHECK(w.f != NULL))
		return;
	setvbuf(w.f, NULL, _IONBF, 0);
	recorder_write(&w, &(struct mw_srec){ .kind = MW_S_BPF, .len = 4, .data = "abcd" });
	CHECK_EQ_INT(w.err, ENOSPC);
	CHECK_EQ_U64(w.records, 0);
	CHECK_EQ_U64(w.bytes, 0);
	recorder_write(&w, &(struct mw_srec){ .kind = MW_S_BPF, .len = 4, .data = "abcd" });
	CHECK_EQ_U64(w.records, 0);
	CHECK_EQ_INT(recorder_close(&w), ENOSPC);
	CHECK(w.f == NULL);
}

/* ---- replay_into: a recorded session through the analysis ------------------- */

#define ANON1M	0x7f0000000000ull
#define VM_PAGES (2 + 256 + 33)

static const char smaps[] =
	SMAPS_APP_TEXT
	"7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
	"Size:               1024 kB\n"
	"Rss:                  64 kB\n"
	"Anonymous:            64 kB\n"
	"VmFlags: rd wr mr mw me ac sd \n"
	SMAPS_STACK;

static void put(struct mw_recorder *w, uint32_t kind, const void *data, size_t len)
{
	recorder_write(w, &(struct mw_srec){ .kind = kind, .len = (uint32_t)len, .data = data });
}

static void put_seed(struct mw_recorder *w)
{
	size_t len;
	struct mw_seed *s = seed_new(REC_PID, MW_SEED_ATTACH, 1000, SB, BRK, SSTACK, smaps,
				     NULL, "app", &len);

	put(w, MW_S_SEED, s, len);
	free(s);
}

static void put_answer(struct mw_recorder *w, uint64_t start, uint64_t end, uint64_t anon,
		       int err)
{
	struct mw_oracle_ans o = { .pid = 4242, .err = err, .start = start, .end = end,
				   .anon = anon, .file = 0 };

	put(w, MW_S_ORACLE, &o, sizeof(o));
}

/* A recording at @path that starts with the seed; false when a check failed. */
static bool start_recording(struct mw_recorder *w, const char *path)
{
	if (!CHECK_EQ_INT(recorder_open(w, path), 0))
		return false;
	put_seed(w);
	return true;
}

/* mprotect(PROT_READ) of [lo, hi): splits the mapping around it. */
static void put_mprotect(struct mw_recorder *w, uint32_t seq, uint64_t lo, uint64_t hi)
{
	struct mw_op_rec *r = op_new(MW_OP_MPROTECT, seq, 5000 + seq, lo, hi, VM_PAGES);

	op_vma(r, lo, hi, MW_VM_READ);
	put(w, MW_S_BPF, r, op_len(r));
	free(r);
}

/* Replay a file into a fresh account (pid unknown: the seed names it). */
static int replay_path(const char *path, struct mw_account *a, uint64_t *n)
{
	FILE *f = fopen(path, "rb");
	int st;

	account_init(a, 0, 0);
	if (!f)
		return -1;
	st = replay_into(f, a, n);
	fclose(f);
	return st;
}

#define LEFT_LO		ANON1M
#define LEFT_HI		(ANON1M + 0x40000)
#define RIGHT_LO	(ANON1M + 0x80000)
#define RIGHT_HI	(ANON1M + 0x100000)

TEST(replay_into_answers_in_order)
{
	const char *path = tmp_path("oracle.mwrec");
	struct mw_recorder w;
	struct mw_account a;
	struct mw_mapping *mp;
	uint64_t n;

	if (!start_recording(&w, path))
		return;
	/* What capture asked pagemap while applying the mprotect, in order:
	 * the part left of the range, then the range itself (smaller than
	 * the part right of it, which gets the rest). */
	put_answer(&w, LEFT_LO, LEFT_HI, P, 0);
	put_answer(&w, LEFT_HI, RIGHT_LO, 5 * P, 0);
	put_mprotect(&w, 1, LEFT_HI, RIGHT_LO);
	/* A second split of the right part, with its own answer. */
	put_answer(&w, RIGHT_LO, ANON1M + 0xc0000, 7 * P, 0);
	put_mprotect(&w, 2, ANON1M + 0xc0000, RIGHT_HI);
	CHECK_EQ_INT(recorder_close(&w), 0);

	CHECK_EQ_INT(replay_path(path, &a, &n), MW_REPLAY_OK);
	CHECK_EQ_U64(n, 6);
	CHECK_EQ_U64(a.records, 3);		/* answers go to the oracle, not the account */
	CHECK_EQ_INT(a.pid, 4242);
	CHECK_STR(a.comm, "app");
	CHECK(a.model.oracle.range_rss == NULL);	/* unhooked afterwards */
	CHECK_EQ_U64(a.model.nlive, 6);
	CHECK_EQ_U64(a.vm_mismatches, 0);
	CHECK_EQ_U64(a.seq_gaps, 0);
	mp = at(&a, LEFT_LO);
	if (CHECK(mp && mp->end == LEFT_HI)) {
		CHECK_EQ_INT(mp->rss[MW_ANON], P);
		CHECK(!mp->rss_estimated);
	}
	mp = at(&a, LEFT_HI);
	if (CHECK(mp && mp->end == RIGHT_LO)) {
		CHECK_EQ_INT(mp->rss[MW_ANON], 5 * P);
		CHECK(!mp->rss_estimated);
		CHECK_EQ_U64(mp->flags, MW_VM_READ);
	}
	mp = at(&a, RIGHT_LO);
	if (CHECK(mp && mp->end == ANON1M + 0xc0000)) {
		CHECK_EQ_INT(mp->rss[MW_ANON], 7 * P);
		CHECK(!mp->rss_estimated);
	}
	mp = at(&a, ANON1M + 0xc0000);
	if (CHECK(mp && mp->end == RIGHT_HI)) {
		CHECK_EQ_INT(mp->rss[MW_ANON], 3 * P);
		CHECK(!mp->rss_estimated);
	}
	CHECK_EQ_INT(model_rss(&a.model, MW_ANON), (16 + 4) * P);
	account_free(&a);
	unlink(path);
}

/* Answers belong to the record right after them: another record in
 * between, and the split has to guess (by size). */
TEST(replay_into_answers_expire)
{
	const char *path = tmp_path("expire.mwrec");
	struct mw_recorder w;
	struct mw_account a;
	struct mw_unlinked u = { .ino = 999, .dev_major = 8, .dev_minor = 1 };
	uint64_t n;

	if (!start_recording(&w, path))
		return;
	put_answer(&w, LEFT_LO, LEFT_HI, P, 0);
	put_answer(&w, LEFT_HI, RIGHT_LO, 5 * P, 0);
	put(&w, MW_S_UNLINKED, &u, sizeof(u));
	put_mprotect(&w, 1, LEFT_HI, RIGHT_LO);
	CHECK_EQ_INT(recorder_close(&w), 0);

	CHECK_EQ_INT(replay_path(path, &a, &n), MW_REPLAY_OK);
	CHECK_EQ_U64(n, 5);
	CHECK_EQ_U64(a.records, 3);
	CHECK_EQ_INT(at(&a, LEFT_LO)->rss[MW_ANON], 4 * P);
	CHECK_EQ_INT(at(&a, LEFT_HI)->rss[MW_ANON], 4 * P);
	CHECK_EQ_INT(at(&a, RIGHT_LO)->rss[MW_ANON], 8 * P);
	CHECK(at(&a, LEFT_LO)->rss_estimated);
	CHECK(at(&a, LEFT_HI)->rss_estimated);
	account_free(&a);
	unlink(path);
}

/* Out of order, the first question finds the wrong answer at the head and
 * guesses; the second finds its own.  A recorded error also means guess,
 * and the answer is used up. */
TEST(replay_into_answer_mismatch_and_error)
{
	const char *path = tmp_path("mismatch.mwrec");
	struct mw_recorder w;
	struct mw_account a;
	uint64_t n;

	if (!start_recording(&w, path))
		return;
	put_answer(&w, LEFT_HI, RIGHT_LO, 2 * P, 0);
	put_answer(&w, LEFT_LO, LEFT_HI, P, 0);
	put_mprotect(&w, 1, LEFT_HI, RIGHT_LO);
	CHECK_EQ_INT(recorder_close(&w), 0);

	CHECK_EQ_INT(replay_path(path, &a, &n), MW_REPLAY_OK);
	CHECK_EQ_U64(n, 4);
	/* Left guessed: a quarter of 16 pages; the rest, 12, split by the
	 * answer for the middle. */
	CHECK_EQ_INT(at(&a, LEFT_LO)->rss[MW_ANON], 4 * P);
	CHECK(at(&a, LEFT_LO)->rss_estimated);
	CHECK_EQ_INT(at(&a, LEFT_HI)->rss[MW_ANON], 2 * P);
	CHECK_EQ_INT(at(&a, RIGHT_LO)->rss[MW_ANON], 10 * P);
	account_free(&a);
	unlink(path);

	if (!start_recording(&w, path))
		return;
	put_answer(&w, LEFT_LO, LEFT_HI, P, -EIO);
	put_answer(&w, LEFT_HI, RIGHT_LO, 2 * P, 0);
	put_mprotect(&w, 1, LEFT_HI, RIGHT_LO);
	CHECK_EQ_INT(recorder_close(&w), 0);

	CHECK_EQ_INT(replay_path(path, &a, &n), MW_REPLAY_OK);
	CHECK_EQ_INT(at(&a, LEFT_LO)->rss[MW_ANON], 4 * P);
	CHECK(at(&a, LEFT_LO)->rss_estimated);
	CHECK_EQ_INT(at(&a, LEFT_HI)->rss[MW_ANON], 2 * P);
	CHECK_EQ_INT(at(&a, RIGHT_LO)->rss[MW_ANON], 10 * P);
	account_free(&a);

	/* Short answer records are skipped, not read past. */
	if (!start_recording(&w, path))
		return;
	struct mw_oracle_ans o = { .pid = 4242, .start = LEFT_LO, .end = LEFT_HI, .anon = P };
	put(&w, MW_S_ORACLE, &o, sizeof(o) - 1);
	put_answer(&w, LEFT_HI, RIGHT_LO, 2 * P, 0);
	put_mprotect(&w, 1, LEFT_HI, RIGHT_LO);
	CHECK_EQ_INT(recorder_close(&w), 0);
	CHECK_EQ_INT(replay_path(path, &a, &n), MW_REPLAY_OK);
	CHECK_EQ_U64(n, 4);
	CHECK_EQ_INT(at(&a, LEFT_LO)->rss[MW_ANON], 4 * P);
	CHECK_EQ_INT(at(&a, RIGHT_LO)->rss[MW_ANON], 10 * P);
	account_free(&a);
	unlink(path);
}

/* A whole small session: what was recorded ends up in the account, and a
 * truncated copy still delivers everything before the cut. */
TEST(replay_into_session)
{
	const char *path = tmp_path("session.mwrec");
	struct mw_recorder w;
	struct mw_account a;
	struct mw_state *s = calloc(1, sizeof(*s));
	struct mw_mark_rec mk;
	struct mw_end e = { .pid = 4242, .how = MW_END_EXITED, .wait_status = 0, .ts = 9000 };
	unsigned char *file;
	size_t flen;
	uint64_t n;

	if (!start_recording(&w, path))
		return;
	mk = mark_new(MW_MARK_PHASE, 1, 2000, VM_PAGES, 20 * P, 2 * P);
	strcpy(mk.name, "start");
	put(&w, MW_S_BPF, &mk, sizeof(mk));
	s->pid = 4242;
	s->final = 1;
	s->proc.total_vm = VM_PAGES;
	s->proc.rss[MW_ANON] = 20 * P;
	s->proc.rss[MW_FILE] = 2 * P;
	put(&w, MW_S_STATE, s, sizeof(*s));
	put(&w, MW_S_END, &e, sizeof(e));
	CHECK_EQ_INT(recorder_close(&w), 0);

	CHECK_EQ_INT(replay_path(path, &a, &n), MW_REPLAY_OK);
	CHECK_EQ_U64(n, 4);
	CHECK_EQ_U64(a.records, 4);
	CHECK(a.ended && a.exited);
	CHECK_EQ_INT(a.wait_status, 0);
	CHECK_EQ_U64(a.end_ns, 9000);
	CHECK_EQ_U64(a.start_ns, 1000);
	CHECK_EQ_U64(account_vm(&a), VM_PAGES * P);
	CHECK_EQ_INT(account_unattributed(&a), 0);
	if (CHECK_EQ_U64(a.phases.n, 1)) {
		CHECK_STR(a.phases.v[0].name, "start");
		CHECK(!a.phases.v[0].open);
		CHECK_EQ_U64(a.phases.v[0].end.ts, 9000);
	}
	account_free(&a);

	/* Cut inside the END record: the rest is there, the end is not. */
	file = slurp(path, &flen);
	if (CHECK(file != NULL)) {
		FILE *f = mem_file(file, flen - 4);

		account_init(&a, 0, 0);
		CHECK_EQ_INT(replay_into(f, &a, &n), MW_REPLAY_TRUNCATED);
		fclose(f);
		CHECK_EQ_U64(n, 3);
		CHECK(!a.ended);
		CHECK(a.have_kstate);
		CHECK(a.model.oracle.range_rss == NULL);
		CHECK_EQ_U64(a.phases.n, 1);
		CHECK(a.phases.v[0].open);
		account_free(&a);
	}
	free(file);
	free(s);
	unlink(path);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(round_trip);
	RUN(empty_recording);
	RUN(truncated_everywhere);
	RUN(bad_magic);
	RUN(bad_version);
	RUN(page_size);
	RUN(corrupt_records);
	RUN(status_strings);
	RUN(recorder_open_errors);
	RUN(recorder_write_too_big);
	RUN(recorder_write_error);
	RUN(replay_into_answers_in_order);
	RUN(replay_into_answers_expire);
	RUN(replay_into_answer_mismatch_and_error);
	RUN(replay_into_session);
	rmdir(tmpdir);
	return unit_done();
}
