/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * drmfdinfo.h — GPU memory as DRM drivers report it per client, in
 * /proc/PID/fdinfo/FD of an open /dev/dri or /dev/accel node
 * (Documentation/gpu/drm-usage-stats.rst): "drm-driver:", "drm-pdev:",
 * "drm-client-id:" and, per memory region, "drm-total-REGION: N [KiB|MiB]"
 * with -shared-, -resident-, -purgeable- and -active-.  Drivers that print
 * no memory keys (vgem, virtio-gpu) give a client with no regions.
 */
#ifndef MW_DRMFDINFO_H
#define MW_DRMFDINFO_H

#include <stddef.h>
#include <sys/types.h>

#include "stream.h"

/*
 * One fdinfo text into *c.  0; -ENOENT when it is not a DRM client's (no
 * drm-driver line); -EINVAL when a memory key's value is not a number with
 * a known unit.  Never reads past len; c is zeroed first.
 */
int drm_fdinfo_parse(const char *text, size_t len, struct mw_drm_client *c);

/*
 * Every DRM client pid has open, each once (by driver, device and client
 * id): a malloc'd record for MW_S_DRM and its length, or NULL when there
 * is none (or /proc cannot be read).  At most max clients.
 */
#define MW_DRM_CLIENTS	64	/* kept per process */
struct mw_drm_mem *drm_read_clients(pid_t pid, size_t max, size_t *len);

#endif /* MW_DRMFDINFO_H */
