// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_drm_fdinfo.c — drm_fdinfo_parse() on arbitrary text.
 *
 * Contract: on error the client is all zero; on success its names end
 * inside their arrays and it keeps at most MW_DRM_REGIONS regions, each
 * with a name and only the stats it says it has.
 */
#include <errno.h>

#include "capture/drmfdinfo.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_dup(data, size);
	struct mw_drm_client c;
	int err;

	memset(&c, 0xa5, sizeof(c));
	err = drm_fdinfo_parse(text, size, &c);
	if (err) {
		FUZZ_CHECK(err == -ENOENT || err == -EINVAL);
		FUZZ_CHECK(fuzz_all_zero(&c, sizeof(c)));
	} else {
		FUZZ_CHECK(memchr(c.driver, 0, sizeof(c.driver)) && c.driver[0]);
		FUZZ_CHECK(memchr(c.pdev, 0, sizeof(c.pdev)) != NULL);
		FUZZ_CHECK(c.nregions <= MW_DRM_REGIONS);
		for (uint32_t i = 0; i < c.nregions; i++) {
			FUZZ_CHECK(memchr(c.r[i].name, 0, sizeof(c.r[i].name)) && c.r[i].name[0]);
			FUZZ_CHECK(c.r[i].have && c.r[i].have < (1u << MW_DRM_NSTAT));
			for (int st = 0; st < MW_DRM_NSTAT; st++)
				FUZZ_CHECK((c.r[i].have >> st & 1) || c.r[i].v[st] == 0);
		}
	}
	free(text);
	return 0;
}
