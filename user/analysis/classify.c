// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* classify.c — what kind of memory a mapping is. */
#include <stdio.h>
#include <string.h>

#include "analysis/classify.h"
#include "util.h"

static const char *const kind_names[MW_NR_KINDS] = {
	[MW_K_ANON] = "anon",
	[MW_K_HEAP] = "heap",
	[MW_K_STACK] = "stack",
	[MW_K_FILE] = "file",
	[MW_K_SHMEM] = "shmem",
	[MW_K_DEVICE] = "device",
	[MW_K_VDSO] = "vdso",
	[MW_K_VVAR] = "vvar",
	[MW_K_VSYSCALL] = "vsyscall",
	[MW_K_SPECIAL] = "special",
};

const char *mw_kind_name(enum mw_kind k)
{
	return k < MW_NR_KINDS ? kind_names[k] : "?";
}

uint64_t mw_perms_to_flags(const char *perms)
{
	uint64_t f = 0;

	if (!perms || strlen(perms) < 4)
		return 0;
	if (perms[0] == 'r')
		f |= MW_VM_READ;
	if (perms[1] == 'w')
		f |= MW_VM_WRITE;
	if (perms[2] == 'x')
		f |= MW_VM_EXEC;
	if (perms[3] == 's')
		f |= MW_VM_MAYSHARE | MW_VM_SHARED;
	return f;
}

static bool starts_with(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool on_shmem_dev(const struct mw_layout *l, const struct mw_mapping *mp)
{
	for (size_t i = 0; i < l->nshmem_devs; i++)
		if (l->shmem_devs[i].major == mp->dev_major &&
		    l->shmem_devs[i].minor == mp->dev_minor)
			return true;
	return false;
}

static enum mw_kind classify_file(const struct mw_layout *l,
				  const struct mw_mapping *mp)
{
	const char *p = mp->path;

	/* Pseudo files on the kernel's internal shm mount. */
	if (mp->deleted && (starts_with(p, "/memfd:") || starts_with(p, "/SYSV") ||
			    strcmp(p ? p : "", "/dev/zero") == 0))
		return MW_K_SHMEM;
	if (starts_with(p, "/dev/shm/") || on_shmem_dev(l, mp))
		return MW_K_SHMEM;
	/* A private mapping of /dev/zero: anonymous memory by another name. */
	if (strcmp(p ? p : "", "/dev/zero") == 0)
		return MW_K_ANON;
	if (starts_with(p, "/dev/"))
		return MW_K_DEVICE;
	return MW_K_FILE;
}

static enum mw_kind classify_named(const char *p)
{
	if (strcmp(p, "[vdso]") == 0)
		return MW_K_VDSO;
	if (starts_with(p, "[vvar"))
		return MW_K_VVAR;
	if (strcmp(p, "[vsyscall]") == 0)
		return MW_K_VSYSCALL;
	if (starts_with(p, "[anon_shmem:"))
		return MW_K_SHMEM;
	if (starts_with(p, "[anon:"))
		return MW_K_ANON;
	if (strcmp(p, "[heap]") == 0)
		return MW_K_HEAP;
	if (strcmp(p, "[stack]") == 0)
		return MW_K_STACK;
	return MW_K_SPECIAL;
}

/* A DRM GEM buffer's shmem file mapped as it is (drm_gem_object_init names
 * it "drm mm object"): 5.10's vgem dma-buf, i915's CPU mmap.  Its pages
 * count as the kernel's shmem. */
static bool gem_shmem(const struct mw_mapping *mp)
{
	return mp->has_file && mp->path && strcmp(mp->path, "/drm mm object") == 0;
}

/* Memory a driver maps by page frame or page by page: a device's, whatever
 * file it comes through (a DRM node, an anon_inode, a dma-buf). */
static bool device_flags(const struct mw_mapping *mp)
{
	return (mp->flags & (MW_VM_PFNMAP | MW_VM_MIXEDMAP)) ||
	       starts_with(mp->path, "/dmabuf:") || gem_shmem(mp);
}

const char *mw_device_kind(const struct mw_mapping *mp)
{
	if (mp->kind != MW_K_DEVICE)
		return NULL;
	if (starts_with(mp->path, "/dmabuf:"))
		return "dmabuf";
	if (gem_shmem(mp))
		return "gem";
	if (mp->flags & MW_VM_PFNMAP)
		return mp->flags & MW_VM_IO ? "pfn_io" : "pfn";
	if (mp->flags & MW_VM_MIXEDMAP)
		return "mixed";
	return "char";
}

enum mw_kind mw_classify(const struct mw_layout *l, const struct mw_mapping *mp)
{
	enum mw_kind named = mp->path && mp->path[0] == '[' ?
			     classify_named(mp->path) : MW_K_ANON;

	/* get_vma_name(): kernel-installed names first ([vvar] is VM_PFNMAP
	 * too), then a driver's, then [heap] overlaps (start_brk, brk),
	 * [stack] holds start_stack. */
	if (!mp->has_file && (named == MW_K_VDSO || named == MW_K_VVAR ||
			      named == MW_K_VSYSCALL || named == MW_K_SPECIAL))
		return named;
	if (device_flags(mp))
		return MW_K_DEVICE;
	if (mp->has_file)
		return classify_file(l, mp);
	if (l->start_brk && mp->start < l->brk && mp->end > l->start_brk)
		return MW_K_HEAP;
	if (l->start_stack && mp->start <= l->start_stack && mp->end >= l->start_stack)
		return MW_K_STACK;
	if (named == MW_K_SHMEM || (mp->path && mp->path[0] == '[' &&
				    named != MW_K_HEAP && named != MW_K_STACK))
		return named;
	if (mp->flags & MW_VM_MAYSHARE)
		return MW_K_SHMEM;
	return MW_K_ANON;
}

/*
 * Devices of tmpfs mounts, from /proc/PID/mountinfo: files there are
 * shmem-backed, so their pages count as RssShmem, not RssFile.
 * Line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE SRC OPTS".
 */
int mw_shmem_devs_from_mountinfo(const char *text, size_t len,
				 struct mw_dev **out, size_t *n)
{
	const char *p = text, *end = text + len;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *eol = nl ? nl : end;
		char line[1024];
		size_t l = MW_MIN((size_t)(eol - p), sizeof(line) - 1);
		unsigned int maj, min;
		char fstype[64];
		const char *sep;

		memcpy(line, p, l);
		line[l] = 0;
		p = nl ? nl + 1 : end;
		sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*u %*u %u:%u", &maj, &min) != 2 ||
		    sscanf(sep + 3, "%63s", fstype) != 1)
			continue;
		if (strcmp(fstype, "tmpfs") != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = mw_xrealloc(*out, cap, sizeof(**out));
		}
		(*out)[*n].major = maj;
		(*out)[(*n)++].minor = min;
	}
	return 0;
}
