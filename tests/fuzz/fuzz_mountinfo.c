// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_mountinfo.c — mw_shmem_devs_from_mountinfo() (user/analysis/classify.c) on
 * arbitrary text.  It never fails; it may find no tmpfs device, and then
 * the list may be NULL.  Every device it reports comes from a line that
 * says "tmpfs", so there can be no more of them than lines.
 */
#include "analysis/classify.h"
#include "fuzz.h"

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_dup(data, size);
	struct mw_dev *devs = (void *)1;
	size_t n = 12345, lines = 0;
	int err;

	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	if (size && data[size - 1] != '\n')
		lines++;
	err = mw_shmem_devs_from_mountinfo(text, size, &devs, &n);
	FUZZ_CHECK(err == 0);
	FUZZ_CHECK(n <= lines);
	FUZZ_CHECK(n == 0 || devs != NULL);
	for (size_t i = 0; i < n; i++)	/* read them all: ASan checks bounds */
		sink += devs[i].major + devs[i].minor;
	free(devs);
	free(text);
	return 0;
}
