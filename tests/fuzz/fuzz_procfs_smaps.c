// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_procfs_smaps.c — procfs_parse_smaps() on arbitrary text.
 *
 * Checks the contract in procfs.h (error: output {NULL, 0}; success: every
 * VMA has a path, end >= start) and that smaps agrees with maps: when smaps
 * parses, its VMA header lines alone parse as maps to the same VMAs.
 */
#include <stdbool.h>

#include "capture/procfs.h"
#include "fuzz.h"

/* Same rule as procfs.c: a header starts "hexdigits-". */
static bool is_header(const char *p, const char *end)
{
	const char *s = p;

	while (p < end && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
			   (*p >= 'A' && *p <= 'F')))
		p++;
	return p > s && p < end && *p == '-';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_dup(data, size);
	struct pm_maps s = { (void *)1, 12345 }, m;
	char *hdrs;
	size_t hlen = 0;
	int err;

	err = procfs_parse_smaps(text, size, &s);
	if (err) {
		FUZZ_CHECK(err < 0);
		FUZZ_CHECK(s.v == NULL && s.n == 0);
		free(text);
		return 0;
	}
	for (size_t i = 0; i < s.n; i++) {
		FUZZ_CHECK(s.v[i].path);
		FUZZ_CHECK(s.v[i].end >= s.v[i].start);
		/* kB counters are stored in bytes */
		FUZZ_CHECK(s.v[i].rss % 1024 == 0 && s.v[i].anon % 1024 == 0 &&
			   s.v[i].swap % 1024 == 0 && s.v[i].pss % 1024 == 0 &&
			   s.v[i].anon_huge % 1024 == 0 && s.v[i].locked % 1024 == 0 &&
			   s.v[i].swap_pss % 1024 == 0 && s.v[i].pss_dirty % 1024 == 0 &&
			   s.v[i].pss_anon % 1024 == 0 && s.v[i].pss_file % 1024 == 0 &&
			   s.v[i].pss_shmem % 1024 == 0);
	}

	/* The header lines alone, as maps text. */
	hdrs = malloc(size + 1);
	if (!hdrs)
		abort();
	for (const char *pos = text, *end = text + size; pos < end;) {
		const char *nl = memchr(pos, '\n', end - pos);
		size_t l = (nl ? nl : end) - pos;

		if (is_header(pos, pos + l)) {
			memcpy(hdrs + hlen, pos, l);
			hlen += l;
			hdrs[hlen++] = '\n';
		}
		pos = nl ? nl + 1 : end;
	}
	err = procfs_parse_maps(hdrs, hlen, &m);
	FUZZ_CHECK(err == 0);
	FUZZ_CHECK(m.n == s.n);
	for (size_t i = 0; i < m.n; i++) {
		const struct pm_vma *a = &m.v[i], *b = &s.v[i];

		FUZZ_CHECK(a->start == b->start && a->end == b->end &&
			   a->pgoff == b->pgoff && a->ino == b->ino &&
			   a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
			   !strcmp(a->perms, b->perms) && a->deleted == b->deleted &&
			   !strcmp(a->path, b->path));
	}
	procfs_maps_free(&m);
	procfs_maps_free(&s);
	free(hdrs);
	free(text);
	return 0;
}
