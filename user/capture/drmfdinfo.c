// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * drmfdinfo.c — DRM clients' GPU memory from /proc/PID/fdinfo (see
 * drmfdinfo.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/drmfdinfo.h"
#include "util.h"

static const char *const stat_keys[MW_DRM_NSTAT] = {
	[MW_DRM_TOTAL] = "drm-total-", [MW_DRM_SHARED] = "drm-shared-",
	[MW_DRM_RESIDENT] = "drm-resident-", [MW_DRM_PURGEABLE] = "drm-purgeable-",
	[MW_DRM_ACTIVE] = "drm-active-",
};

/* "N", "N KiB", "N MiB", "N GiB" (spaces or tabs around) into bytes. */
static int parse_size(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0, mult = 1;
	const char *d;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	for (d = p; p < end && *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == d)
		return -EINVAL;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (end - p >= 3 && !memcmp(p, "KiB", 3))
		mult = 1ull << 10;
	else if (end - p >= 3 && !memcmp(p, "MiB", 3))
		mult = 1ull << 20;
	else if (end - p >= 3 && !memcmp(p, "GiB", 3))
		mult = 1ull << 30;
	else if (p < end)
		return -EINVAL;
	p += mult > 1 ? 3 : 0;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p != end || v > UINT64_MAX / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

/* n bytes of p into dst, ended: control bytes (a NUL too) read '?'. */
static void copy_clean(char *dst, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? '?' : p[i];
	dst[n] = 0;
}

/* A value, blanks around it cut, into dst of cap bytes. */
static void copy_str(char *dst, size_t cap, const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	copy_clean(dst, p, MW_MIN((size_t)(end - p), cap - 1));
}

/* The region called name[0..len), its name cleaned as copy_clean() does. */
static struct mw_drm_region *region(struct mw_drm_client *c, const char *name, size_t len)
{
	char clean[MW_DRM_NAME];

	if (len >= MW_DRM_NAME) {
		c->regions_more++;
		return NULL;
	}
	copy_clean(clean, name, len);
	for (uint32_t i = 0; i < c->nregions; i++)
		if (!strcmp(c->r[i].name, clean))
			return &c->r[i];
	if (c->nregions == MW_DRM_REGIONS) {
		c->regions_more++;
		return NULL;
	}
	memcpy(c->r[c->nregions].name, clean, len + 1);
	return &c->r[c->nregions++];
}

/* A memory key: KEY-PREFIX REGION.  drm-total-cycles-ENGINE is not one. */
static int memory_key(struct mw_drm_client *c, const char *k, size_t klen, const char *v,
		      const char *end)
{
	for (int s = -1; s < MW_DRM_NSTAT; s++) {
		/* s = -1: amdgpu's drm-memory-REGION, resident memory. */
		const char *pre = s < 0 ? "drm-memory-" : stat_keys[s];
		size_t plen = strlen(pre);
		int st = s < 0 ? MW_DRM_RESIDENT : s;
		struct mw_drm_region *r;
		uint64_t bytes;

		if (klen <= plen || memcmp(k, pre, plen) ||
		    (s == MW_DRM_TOTAL && klen > 16 && !memcmp(k, "drm-total-cycles-", 17)))
			continue;
		if (parse_size(v, end, &bytes))
			return -EINVAL;
		r = region(c, k + plen, klen - plen);
		if (!r)
			return 0;
		/* drm-resident- wins over the older drm-memory-. */
		if (s < 0 && (r->have & (1u << MW_DRM_RESIDENT)))
			return 0;
		r->v[st] = bytes;
		r->have |= 1u << st;
		return 0;
	}
	return 0;
}

int drm_fdinfo_parse(const char *text, size_t len, struct mw_drm_client *c)
{
	const char *p = text, *end = text + len;
	bool driver = false;

	memset(c, 0, sizeof(*c));
	if (!text)
		return -ENOENT;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		const char *colon = memchr(p, ':', (size_t)(eol - p));
		size_t klen = colon ? (size_t)(colon - p) : 0;

		if (colon && klen == 10 && !memcmp(p, "drm-driver", 10)) {
			copy_str(c->driver, sizeof(c->driver), colon + 1, eol);
			driver = c->driver[0] != 0;
		} else if (colon && klen == 8 && !memcmp(p, "drm-pdev", 8)) {
			copy_str(c->pdev, sizeof(c->pdev), colon + 1, eol);
		} else if (colon && klen == 13 && !memcmp(p, "drm-client-id", 13)) {
			if (parse_size(colon + 1, eol, &c->client_id))
				goto bad;
		} else if (colon && klen > 4 && !memcmp(p, "drm-", 4) &&
			   memory_key(c, p, klen, colon + 1, eol)) {
			goto bad;
		}
		p = nl ? nl + 1 : end;
	}
	if (driver)
		return 0;
	memset(c, 0, sizeof(*c));
	return -ENOENT;
bad:
	memset(c, 0, sizeof(*c));
	return -EINVAL;
}

/* The fd's file is a DRM or accel node. */
static bool drm_node(int dirfd, const char *fd)
{
	char target[64];
	ssize_t n = readlinkat(dirfd, fd, target, sizeof(target) - 1);

	if (n <= 0)
		return false;
	target[n] = 0;
	return !strncmp(target, "/dev/dri/", 9) || !strncmp(target, "/dev/accel/", 11);
}

static bool same_client(const struct mw_drm_client *a, const struct mw_drm_client *b)
{
	return a->client_id == b->client_id && !strcmp(a->driver, b->driver) &&
	       !strcmp(a->pdev, b->pdev);
}

struct mw_drm_mem *drm_read_clients(pid_t pid, size_t max, size_t *len)
{
	char path[64], text[16384];
	struct mw_drm_mem *m = NULL;
	struct dirent *e;
	int fdd, infod;
	DIR *d;

	*len = 0;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	fdd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	infod = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fdd >= 0 ? fdopendir(dup(fdd)) : NULL;
	while (d && infod >= 0 && (e = readdir(d))) {
		struct mw_drm_client c;
		ssize_t n;
		int f;

		if (e->d_name[0] == '.' || !drm_node(fdd, e->d_name))
			continue;
		f = openat(infod, e->d_name, O_RDONLY | O_CLOEXEC);
		n = f >= 0 ? read(f, text, sizeof(text)) : -1;
		if (f >= 0)
			close(f);
		/* Longer than we read: the lines up to the last whole one. */
		if (n == (ssize_t)sizeof(text)) {
			char *nl = memrchr(text, '\n', sizeof(text));

			n = nl ? nl - text : 0;
		}
		if (n <= 0 || drm_fdinfo_parse(text, (size_t)n, &c))
			continue;
		if (!m)
			m = mw_xcalloc(1, sizeof(*m) + max * sizeof(m->c[0]));
		for (uint32_t i = 0; i <= m->nclients; i++) {
			if (i == m->nclients) {
				if (m->nclients < max)
					m->c[m->nclients++] = c;
				break;
			}
			if (same_client(&m->c[i], &c))
				break;
		}
	}
	if (d)
		closedir(d);
	if (fdd >= 0)
		close(fdd);
	if (infod >= 0)
		close(infod);
	if (m) {
		m->pid = (uint32_t)pid;
		*len = sizeof(*m) + m->nclients * sizeof(m->c[0]);
	}
	return m;
}
