// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_procfs_status.c — procfs_parse_status() on arbitrary text.
 *
 * Contract: on error the output is all zero; on success the name is
 * NUL-terminated inside its array, the kB fields are whole KiB in bytes,
 * and pids and the thread count are not negative.
 */
#include "capture/procfs.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_dup(data, size);
	struct pm_status st;
	int err;

	memset(&st, 0xa5, sizeof(st));
	err = procfs_parse_status(text, size, &st);
	if (err) {
		FUZZ_CHECK(err < 0);
		FUZZ_CHECK(fuzz_all_zero(&st, sizeof(st)));
	} else {
		FUZZ_CHECK(memchr(st.name, '\0', sizeof(st.name)));
		FUZZ_CHECK(st.tgid >= 0 && st.ppid >= 0 && st.threads >= 0);
		FUZZ_CHECK(st.vm_peak % 1024 == 0 && st.vm_size % 1024 == 0 &&
			   st.vm_hwm % 1024 == 0 && st.vm_rss % 1024 == 0 &&
			   st.rss_anon % 1024 == 0 && st.rss_file % 1024 == 0 &&
			   st.rss_shmem % 1024 == 0 && st.vm_swap % 1024 == 0);
		if (st.kernel_thread)
			FUZZ_CHECK(st.vm_size == 0);
	}
	free(text);
	return 0;
}
