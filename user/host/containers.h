/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * containers.h — containers by name, host-wide: which container a cgroup
 * is (Docker, Podman, CRI-O, containerd under Kubernetes, systemd-nspawn),
 * told from its path, and the name its user gave it, from the engine's own
 * state on this host (Podman's and CRI-O's containers.json, Docker's
 * config.v2.json), read once per container, never per event.
 */
#ifndef MW_CONTAINERS_H
#define MW_CONTAINERS_H

#include <stdbool.h>

#define MW_CT_ID_LEN	65
#define MW_CT_NAME_LEN	128

struct mw_container {
	const char *engine;		/* "docker", "podman", "cri-o", "containerd", "nspawn" */
	char id[MW_CT_ID_LEN];		/* the engine's id; nspawn: the machine */
	char name[MW_CT_NAME_LEN];	/* the user's name, or the id's first 12 */
	char pod[40];			/* Kubernetes: the pod's UID, else "" */
	bool monitor;			/* the engine's monitor (conmon), not the payload */
};

/*
 * The container a cgroup v2 path belongs to ("/machine.slice/libpod-<id>.scope",
 * "/docker/<id>", ".../kubepods-...-pod<uid>.slice/cri-containerd-<id>.scope",
 * "/machine.slice/machine-<name>.scope", ...): engine, id and pod; name is
 * the short id until containers_get() finds better.  False for no container.
 * Pure: tests/unit/test_containers.c.
 */
bool container_parse(const char *path, struct mw_container *c);

/*
 * The same with the name its engine keeps on this host, looked up once per
 * cgroup path and cached (thread-safe: the metrics server asks too), into
 * *c.  False for a cgroup that is no container's.  The storage directories
 * can be moved for tests: MW_PODMAN_STORAGE (/var/lib/containers/storage),
 * MW_DOCKER_ROOT (/var/lib/docker) and MW_CONTAINERD_STATE (/run/containerd,
 * the tasks' bundles).
 */
bool containers_get(const char *path, struct mw_container *c);
void containers_free(void);

/* Name of id in a containers.json (Podman's, CRI-O's: an array of {"id",
 * "names": [...]}) text; CRI-O's "k8s_CTR_POD_NS_UID_N" becomes
 * "NS/POD/CTR".  False if absent. */
bool containers_json_name(const char *text, const char *id, char *name, size_t len);

/* Name from a containerd task's OCI config.json text (the CRI plugin's
 * annotations): "NAMESPACE/POD/CONTAINER", "NAMESPACE/POD/POD" for the
 * pod's sandbox.  False if it has none. */
bool containers_oci_name(const char *text, char *name, size_t len);

#endif /* MW_CONTAINERS_H */
