// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_procfs_maps.c — procfs_parse_maps() and procfs_parse_maps_line() on
 * arbitrary text.
 *
 * Besides memory safety, it checks the contract in procfs.h: on error the
 * output is empty ({NULL, 0}, path NULL); on success every VMA has a path
 * (possibly ""), end >= start and perms like "rw-p"; and the two parsers
 * agree: when the whole text parses, each of its non-empty lines parses
 * alone to the same VMA.
 */
#include <stdbool.h>

#include "capture/procfs.h"
#include "fuzz.h"

static void check_vma(const struct pm_vma *v)
{
	FUZZ_CHECK(v->path);
	FUZZ_CHECK(v->end >= v->start);
	FUZZ_CHECK(strlen(v->perms) == 4);
	FUZZ_CHECK(strchr("r-", v->perms[0]) && strchr("w-", v->perms[1]) &&
		   strchr("x-", v->perms[2]) && strchr("ps", v->perms[3]));
	/* maps never fills the smaps counters */
	FUZZ_CHECK(!v->rss && !v->anon && !v->anon_huge && !v->swap && !v->pss);
}

static bool same_vma(const struct pm_vma *a, const struct pm_vma *b)
{
	return a->start == b->start && a->end == b->end && a->pgoff == b->pgoff &&
	       a->ino == b->ino && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && !strcmp(a->perms, b->perms) &&
	       a->deleted == b->deleted && !strcmp(a->path, b->path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_dup(data, size);
	char *str = fuzz_dup_str(data, size);
	struct pm_maps m = { (void *)1, 12345 };
	struct pm_vma one;
	int err;

	err = procfs_parse_maps(text, size, &m);
	if (err) {
		FUZZ_CHECK(err < 0);
		FUZZ_CHECK(m.v == NULL && m.n == 0);
	} else {
		const char *pos = text, *end = text + size;
		size_t k = 0;

		for (size_t i = 0; i < m.n; i++)
			check_vma(&m.v[i]);
		/* Line by line, procfs_parse_maps_line() must agree. */
		while (pos < end) {
			const char *nl = memchr(pos, '\n', end - pos);
			size_t l = (nl ? nl : end) - pos;
			char *line;

			if (l) {
				line = fuzz_dup_str((const uint8_t *)pos, l);
				FUZZ_CHECK(k < m.n);
				FUZZ_CHECK(procfs_parse_maps_line(line, &one) == 0);
				FUZZ_CHECK(same_vma(&one, &m.v[k]));
				free(one.path);
				free(line);
				k++;
			}
			pos = nl ? nl + 1 : end;
		}
		FUZZ_CHECK(k == m.n);
	}
	procfs_maps_free(&m);
	FUZZ_CHECK(m.v == NULL && m.n == 0);

	/* The whole input as one C string: the first line is parsed. */
	memset(&one, 0xa5, sizeof(one));
	err = procfs_parse_maps_line(str, &one);
	if (err) {
		FUZZ_CHECK(err < 0);
		FUZZ_CHECK(one.path == NULL);
	} else {
		check_vma(&one);
		free(one.path);
	}

	free(str);
	free(text);
	return 0;
}
