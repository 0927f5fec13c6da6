// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_drmfdinfo.c — DRM clients' fdinfo (user/capture/drmfdinfo.c) on the
 * key sets drivers print (Documentation/gpu/drm-usage-stats.rst and the
 * drivers' own show_fdinfo): i915, xe, amdgpu old and new, panfrost, vgem.
 * No device here prints them, so these texts are the test.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/account.h"
#include "capture/drmfdinfo.h"
#include "unit.h"

#define KiB	1024ull
#define MiB	(1024ull * 1024)

static int parse(const char *text, struct mw_drm_client *c)
{
	return drm_fdinfo_parse(text, strlen(text), c);
}

static const struct mw_drm_region *reg(const struct mw_drm_client *c, const char *name)
{
	for (uint32_t i = 0; i < c->nregions; i++)
		if (!strcmp(c->r[i].name, name))
			return &c->r[i];
	return NULL;
}

TEST(i915)
{
	static const char text[] =
		"pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t284\n"
		"drm-driver:\ti915\n"
		"drm-client-id:\t39\n"
		"drm-pdev:\t0000:00:02.0\n"
		"drm-total-system0:\t6044 KiB\n"
		"drm-shared-system0:\t0\n"
		"drm-active-system0:\t0\n"
		"drm-resident-system0:\t6044 KiB\n"
		"drm-purgeable-system0:\t1688 KiB\n"
		"drm-total-stolen-system0:\t0\n"
		"drm-resident-stolen-system0:\t0\n"
		"drm-engine-render:\t346249 ns\n"
		"drm-engine-capacity-video:\t2\n";
	struct mw_drm_client c;
	const struct mw_drm_region *r;

	if (!CHECK_EQ_INT(parse(text, &c), 0))
		return;
	CHECK_STR(c.driver, "i915");
	CHECK_STR(c.pdev, "0000:00:02.0");
	CHECK_EQ_U64(c.client_id, 39);
	CHECK_EQ_U64(c.nregions, 2);
	r = reg(&c, "system0");
	if (CHECK(r != NULL)) {
		CHECK_EQ_U64(r->v[MW_DRM_TOTAL], 6044 * KiB);
		CHECK_EQ_U64(r->v[MW_DRM_RESIDENT], 6044 * KiB);
		CHECK_EQ_U64(r->v[MW_DRM_PURGEABLE], 1688 * KiB);
		CHECK_EQ_U64(r->have, 0x1f);
	}
	r = reg(&c, "stolen-system0");
	if (CHECK(r != NULL))
		CHECK_EQ_U64(r->have, (1u << MW_DRM_TOTAL) | (1u << MW_DRM_RESIDENT));
}

/* xe: drm-total-cycles-ENGINE is a counter, not a region. */
TEST(xe_cycles_are_no_region)
{
	static const char text[] =
		"drm-driver:\txe\ndrm-client-id:\t4\ndrm-pdev:\t0000:03:00.0\n"
		"drm-total-system:\t0\ndrm-resident-system:\t0\n"
		"drm-total-gtt:\t192 KiB\ndrm-resident-gtt:\t192 KiB\n"
		"drm-total-vram0:\t23992 KiB\ndrm-shared-vram0:\t16 MiB\n"
		"drm-cycles-rcs:\t28257900\ndrm-total-cycles-rcs:\t7655183225\n";
	struct mw_drm_client c;

	if (!CHECK_EQ_INT(parse(text, &c), 0))
		return;
	CHECK_EQ_U64(c.nregions, 3);
	CHECK(reg(&c, "cycles-rcs") == NULL);
	CHECK(reg(&c, "vram0") && reg(&c, "vram0")->v[MW_DRM_SHARED] == 16 * MiB);
	CHECK(reg(&c, "gtt") && reg(&c, "gtt")->v[MW_DRM_TOTAL] == 192 * KiB);
}

/* amdgpu: the older drm-memory-REGION is resident; drm-resident- wins in
 * whichever order the two come. */
TEST(amdgpu)
{
	static const char old[] =
		"drm-driver:\tamdgpu\ndrm-pdev:\t0000:0b:00.0\ndrm-client-id:\t40\n"
		"pasid:\t32771\ndrm-memory-vram:\t1468 KiB\ndrm-memory-gtt:\t4 KiB\n"
		"drm-memory-cpu:\t0 KiB\namd-memory-visible-vram:\t1468 KiB\n"
		"drm-engine-gfx:\t12345 ns\n";
	static const char both[] =
		"drm-driver:\tamdgpu\ndrm-client-id:\t41\n"
		"drm-memory-vram:\t1 MiB\ndrm-resident-vram:\t2 MiB\n"
		"drm-resident-gtt:\t3 MiB\ndrm-memory-gtt:\t4 MiB\n";
	struct mw_drm_client c;

	if (CHECK_EQ_INT(parse(old, &c), 0)) {
		CHECK_EQ_U64(c.nregions, 3);
		CHECK(reg(&c, "vram") && reg(&c, "vram")->v[MW_DRM_RESIDENT] == 1468 * KiB);
		CHECK(reg(&c, "vram") && reg(&c, "vram")->have == 1u << MW_DRM_RESIDENT);
	}
	if (CHECK_EQ_INT(parse(both, &c), 0)) {
		CHECK_STR(c.pdev, "");
		CHECK(reg(&c, "vram") && reg(&c, "vram")->v[MW_DRM_RESIDENT] == 2 * MiB);
		CHECK(reg(&c, "gtt") && reg(&c, "gtt")->v[MW_DRM_RESIDENT] == 3 * MiB);
	}
}

TEST(panfrost_and_vgem)
{
	struct mw_drm_client c;

	if (CHECK_EQ_INT(parse("drm-driver: panfrost\ndrm-client-id: 7\n"
			       "drm-total-memory: 10 MiB\ndrm-purgeable-memory: 512\n", &c), 0)) {
		CHECK(reg(&c, "memory") && reg(&c, "memory")->v[MW_DRM_TOTAL] == 10 * MiB);
		CHECK(reg(&c, "memory") && reg(&c, "memory")->v[MW_DRM_PURGEABLE] == 512);
	}
	/* vgem and virtio-gpu: a client, no memory keys. */
	if (CHECK_EQ_INT(parse("pos: 0\ndrm-driver: vgem\ndrm-client-id: 3\n", &c), 0)) {
		CHECK_STR(c.driver, "vgem");
		CHECK_EQ_U64(c.nregions, 0);
	}
}

TEST(not_drm_and_malformed)
{
	static const char *const bad[] = {
		"drm-driver: x\ndrm-total-vram0: 12 furlongs\n",
		"drm-driver: x\ndrm-total-vram0:\n",
		"drm-driver: x\ndrm-total-vram0: KiB\n",
		"drm-driver: x\ndrm-total-vram0: 99999999999999999999\n",
		"drm-driver: x\ndrm-total-vram0: 18014398509481984 GiB\n",
		"drm-driver: x\ndrm-total-vram0: 1 KiB extra\n",
		"drm-driver: x\ndrm-client-id: -1\n",
	};
	static const char nul[] = "drm-driver: x\ndrm-memory-\0\0gtt: 4 KiB\n";
	struct mw_drm_client c;

	CHECK_EQ_INT(parse("pos: 0\nflags: 02\nmnt_id: 15\nino: 1\neventfd-count: 0\n", &c),
		     -ENOENT);
	CHECK_EQ_INT(parse("", &c), -ENOENT);
	CHECK_EQ_INT(parse("drm-driver:\n", &c), -ENOENT);
	CHECK_EQ_INT(drm_fdinfo_parse(NULL, 0, &c), -ENOENT);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!CHECK_EQ_INT(parse(bad[i], &c), -EINVAL))
			fprintf(stderr, "  %s", bad[i]);
		CHECK_STR(c.driver, "");
	}
	/* A region name with a NUL in it (found by fuzz_drm_fdinfo). */
	if (CHECK_EQ_INT(drm_fdinfo_parse(nul, sizeof(nul) - 1, &c), 0)) {
		CHECK_EQ_U64(c.nregions, 1);
		CHECK_STR(c.r[0].name, "??gtt");
	}
	/* No newline at the end; a name with a control character. */
	if (CHECK_EQ_INT(parse("drm-driver: a\x01z\ndrm-total-r: 1 GiB", &c), 0)) {
		CHECK_STR(c.driver, "a?z");
		CHECK(reg(&c, "r") && reg(&c, "r")->v[MW_DRM_TOTAL] == 1024 * MiB);
	}
}

TEST(too_many_regions)
{
	char text[2048] = "drm-driver: many\n";
	struct mw_drm_client c;

	for (int i = 0; i < MW_DRM_REGIONS + 3; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
			 "drm-total-r%d: %d KiB\n", i, i);
	if (!CHECK_EQ_INT(parse(text, &c), 0))
		return;
	CHECK_EQ_U64(c.nregions, MW_DRM_REGIONS);
	CHECK_EQ_U64(c.regions_more, 3);
	CHECK(reg(&c, "r7") && reg(&c, "r7")->v[MW_DRM_TOTAL] == 7 * KiB);
}

/* The analysis keeps the last record, and no more of it than its length
 * holds, with every name ended. */
TEST(account_takes_the_record)
{
	size_t len = sizeof(struct mw_drm_mem) + 2 * sizeof(struct mw_drm_client);
	struct mw_drm_mem *d = calloc(1, len);
	struct mw_account a;

	account_init(&a, 1, 0);
	d->pid = 1;
	d->nclients = 5;		/* more than it holds */
	memset(d->c[0].driver, 'x', MW_DRM_NAME);	/* no NUL */
	d->c[0].nregions = 99;
	d->c[1].client_id = 8;
	account_feed(&a, &(struct mw_srec){ .kind = MW_S_DRM, .len = (uint32_t)len, .data = d });
	if (CHECK_EQ_U64(a.ndrm, 2)) {
		CHECK_EQ_U64(strlen(a.drm[0].driver), MW_DRM_NAME - 1);
		CHECK_EQ_U64(a.drm[0].nregions, MW_DRM_REGIONS);
		CHECK_EQ_U64(a.drm[1].client_id, 8);
	}
	d->nclients = 0;
	account_feed(&a, &(struct mw_srec){ .kind = MW_S_DRM, .len = (uint32_t)len, .data = d });
	CHECK_EQ_U64(a.ndrm, 0);
	account_free(&a);
	free(d);
}

/* This process opens no DRM node: nothing, and nothing to free. */
TEST(live_no_clients)
{
	size_t len = 1;

	CHECK(drm_read_clients(getpid(), 4, &len) == NULL);
	CHECK_EQ_U64(len, 0);
	CHECK(drm_read_clients(-1, 4, &len) == NULL);
}

int main(void)
{
	RUN(i915);
	RUN(xe_cycles_are_no_region);
	RUN(amdgpu);
	RUN(panfrost_and_vgem);
	RUN(not_drm_and_malformed);
	RUN(too_many_regions);
	RUN(account_takes_the_record);
	RUN(live_no_clients);
	return unit_done();
}
