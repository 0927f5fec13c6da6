// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_procfs_stat.c — procfs_parse_stat() on arbitrary text.
 *
 * Contract: on error the output is all zero; brk is never set by the parser
 * (procfs_read_stat takes it from maps).
 */
#include "capture/procfs.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_dup(data, size);
	struct pm_stat st;
	int err;

	memset(&st, 0xa5, sizeof(st));
	err = procfs_parse_stat(text, size, &st);
	if (err) {
		FUZZ_CHECK(err < 0);
		FUZZ_CHECK(fuzz_all_zero(&st, sizeof(st)));
	} else {
		FUZZ_CHECK(st.brk == 0);
	}
	free(text);
	return 0;
}
