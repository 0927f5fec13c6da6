/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * recording.h — the capture stream (stream.h) saved to a file and read
 * back: 'memwatch record' writes one, 'memwatch report' replays it through
 * the same analysis.
 *
 * File: struct mw_file_hdr, then records, each a struct mw_file_rec followed
 * by len bytes and padding to 8.  Host byte order and layout: x86-64 and
 * arm64 (little-endian, LP64) read each other's.  The header says the page
 * size of the kernel it was recorded on; replay counts pages with it.
 */
#ifndef MW_RECORDING_H
#define MW_RECORDING_H

#include <stdint.h>
#include <stdio.h>

#include "stream.h"

#define MW_FILE_MAGIC "MWREC\r\n\032"	/* 8 bytes: binary, not text */
/* Larger records mean a corrupt file.  A seed carries a whole smaps: 800
 * bytes a VMA, 210 MiB at a vm.max_map_count of 262,144 (30,000 VMAs made
 * 24 MiB, past the 16 MiB this was). */
#define MW_FILE_MAX_REC (256u << 20)

struct mw_file_hdr {
	char magic[8];
	uint32_t stream_version;	/* MW_STREAM_VERSION */
	uint32_t abi_version;		/* MW_ABI_VERSION */
	uint64_t created_ns;		/* CLOCK_REALTIME */
	uint32_t page_size;		/* bytes: 4 KiB, 16 KiB, 64 KiB */
	uint32_t reserved;		/* 0 */
};

struct mw_file_rec {
	uint32_t kind;
	uint32_t len;
};

struct mw_recorder {
	FILE *f;
	uint64_t records, bytes;
	int err;			/* first write error (errno) */
};

/* 0, or an errno after printing why. */
int recorder_open(struct mw_recorder *w, const char *path);
void recorder_write(struct mw_recorder *w, const struct mw_srec *r);
int recorder_close(struct mw_recorder *w);

enum mw_replay_status {
	MW_REPLAY_OK = 0,
	MW_REPLAY_TRUNCATED,	/* ended inside a record: what came before is good */
	MW_REPLAY_CORRUPT,	/* a record that cannot be: stopped there */
	MW_REPLAY_VERSION,	/* another memwatch's format: nothing read */
	MW_REPLAY_NOTREC,	/* not a recording at all */
};

/* Call fn for every record in order, with mw_page_shift the recording's;
 * returns an enum mw_replay_status and the count of records read. */
int replay_file(FILE *f, void (*fn)(void *ctx, const struct mw_srec *r), void *ctx,
		uint64_t *nrecords);
const char *replay_status_str(int status);

struct mw_account;
/* Replay a recording into an account (first record's pid is the account's);
 * recorded /proc/PID/pagemap answers are handed back to the model. */
int replay_into(FILE *f, struct mw_account *a, uint64_t *nrecords);

#endif /* MW_RECORDING_H */
