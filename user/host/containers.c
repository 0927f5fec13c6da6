// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* containers.c — containers by name from cgroup paths and engines' state. */
#include <ctype.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "host/containers.h"
#include "analysis/idmap.h"
#include "capture/procfs.h"
#include "util.h"

static bool has_prefix(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);

	return n >= k && memcmp(s, p, k) == 0;
}

static bool has_suffix(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);

	return n >= k && memcmp(s + n - k, p, k) == 0;
}

/* s[0, n) is a full container id: 64 lowercase hex digits. */
static bool is_id(const char *s, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* "<prefix><id>" in the component s[0, n) (its ".scope" taken off): the
 * id into c. */
static bool id_after(const char *s, size_t n, const char *prefix, struct mw_container *c)
{
	size_t a = strlen(prefix);

	if (!has_prefix(s, n, prefix) || !is_id(s + a, n - a))
		return false;
	memcpy(c->id, s + a, n - a);
	c->id[n - a] = 0;
	return true;
}

/* systemd's unit-name escaping undone: "\x2d" is '-'. */
static void unescape(const char *s, size_t n, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < len; i++) {
		unsigned int ch;

		if (s[i] == '\\' && i + 3 < n && s[i + 1] == 'x' &&
		    sscanf(s + i + 2, "%2x", &ch) == 1) {
			out[o++] = (char)ch;
			i += 3;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = 0;
}

/* A Kubernetes pod's UID from "kubepods-besteffort-pod<uid>.slice" (systemd:
 * '_' for '-') or "pod<uid>" (cgroupfs). */
static void pod_of(const char *s, size_t n, struct mw_container *c)
{
	const char *p = NULL;
	size_t k;

	for (size_t i = 0; i + 3 <= n; i++)
		if (!memcmp(s + i, "pod", 3) && (i == 0 || s[i - 1] == '-'))
			p = s + i + 3;
	if (!p)
		return;
	k = (size_t)(s + n - p);
	if (has_suffix(p, k, ".slice"))
		k -= 6;
	if (k < 32 || k >= sizeof(c->pod))
		return;
	for (size_t i = 0; i < k; i++)
		c->pod[i] = p[i] == '_' ? '-' : p[i];
	c->pod[k] = 0;
}

/* Unit-name prefixes before a container's id, systemd's (".scope" after)
 * and cgroupfs's alike; the monitors' before their payloads'. */
static const struct {
	const char *prefix, *engine;
	bool monitor;
} id_units[] = {
	{ "libpod-conmon-", "podman", true }, { "libpod-", "podman", false },
	{ "docker-", "docker", false }, { "crio-conmon-", "cri-o", true },
	{ "crio-", "cri-o", false }, { "cri-containerd-", "containerd", false },
};

/* One path component, s[0, n), with its parent's, for its container. */
static bool component(const char *s, size_t n, const char *parent, size_t pn,
		      struct mw_container *c)
{
	bool scope = has_suffix(s, n, ".scope");

	if (scope)
		n -= 6;
	for (size_t i = 0; i < MW_ARRAY_SIZE(id_units); i++)
		if (id_after(s, n, id_units[i].prefix, c)) {
			c->engine = id_units[i].engine;
			c->monitor = id_units[i].monitor;
			break;
		}
	/* cgroupfs: a bare id under "docker", or under a pod's "pod<UID>". */
	if (!c->engine && id_after(s, n, "", c))
		c->engine = pn == 6 && !memcmp(parent, "docker", 6) ? "docker" :
			    has_prefix(parent, pn, "pod") ? "containerd" : NULL;
	if (!c->engine && scope && has_prefix(s, n, "machine-") && n > 8) {
		c->engine = "nspawn";
		unescape(s + 8, n - 8, c->id, sizeof(c->id));
		snprintf(c->name, sizeof(c->name), "%s", c->id);
		return true;
	}
	if (!c->engine)
		return false;
	snprintf(c->name, sizeof(c->name), "%.12s", c->id);
	return true;
}

bool container_parse(const char *path, struct mw_container *c)
{
	const char *end, *s, *ps = "", *pe;

	memset(c, 0, sizeof(*c));
	if (!path)
		return false;
	/* The deepest component that is a container's (Podman's payload may
	 * sit in a "container" subgroup of its scope), its parent beside it. */
	end = path + strlen(path);
	while (end > path) {
		s = end;
		while (s > path && s[-1] != '/')
			s--;
		pe = s > path ? s - 1 : s;
		ps = pe;
		while (ps > path && ps[-1] != '/')
			ps--;
		if (component(s, (size_t)(end - s), ps, (size_t)(pe - ps), c))
			break;
		end = s > path ? s - 1 : path;
	}
	if (!c->engine)
		return false;
	/* The pod: any component above that names one. */
	for (s = path; *s;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		if (has_prefix(s, n, "kubepods") || has_prefix(s, n, "pod"))
			pod_of(s, n, c);
		s += n + (e ? 1 : 0);
	}
	return true;
}

/* ---- names from the engines' state ---------------------------------------- */

static const char *crio_name(const char *n, char *out, size_t len)
{
	char ctr[64], pod[64], ns[64];

	/* k8s_<container>_<pod>_<namespace>_<uid>_<attempt> */
	if (sscanf(n, "k8s_%63[^_]_%63[^_]_%63[^_]_", ctr, pod, ns) == 3)
		snprintf(out, len, "%s/%s/%s", ns, pod, ctr);
	else
		snprintf(out, len, "%s", n);
	return out;
}

bool containers_json_name(const char *text, const char *id, char *name, size_t len)
{
	json_t *root = json_loads(text, 0, NULL), *o;
	size_t i;
	bool found = false;

	if (!json_is_array(root)) {
		json_decref(root);
		return false;
	}
	json_array_foreach(root, i, o) {
		const char *oid = json_string_value(json_object_get(o, "id"));
		json_t *names = json_object_get(o, "names");

		if (!oid || strcmp(oid, id) || !json_is_array(names) ||
		    !json_string_value(json_array_get(names, 0)))
			continue;
		crio_name(json_string_value(json_array_get(names, 0)), name, len);
		found = true;
		break;
	}
	json_decref(root);
	return found;
}

/* Podman's (or CRI-O's) storage: rootful, or a rootless user's under the
 * cgroup's "user-<uid>.slice". */
static void podman_storage(const char *path, char *out, size_t len)
{
	const char *env = getenv("MW_PODMAN_STORAGE"), *u = strstr(path, "/user-");
	unsigned int uid;
	struct passwd *pw;

	if (env) {
		snprintf(out, len, "%s", env);
		return;
	}
	if (u && sscanf(u, "/user-%u.slice", &uid) == 1 && uid && (pw = getpwuid(uid))) {
		snprintf(out, len, "%s/.local/share/containers/storage", pw->pw_dir);
		return;
	}
	snprintf(out, len, "/var/lib/containers/storage");
}

bool containers_oci_name(const char *text, char *name, size_t len)
{
	json_t *root = json_loads(text, 0, NULL);
	json_t *a = json_object_get(root, "annotations");
	const char *ns = json_string_value(json_object_get(a, "io.kubernetes.cri.sandbox-namespace"));
	const char *pod = json_string_value(json_object_get(a, "io.kubernetes.cri.sandbox-name"));
	const char *ctr = json_string_value(json_object_get(a, "io.kubernetes.cri.container-name"));
	const char *type = json_string_value(json_object_get(a, "io.kubernetes.cri.container-type"));
	bool found = ns && pod;

	/* The pod's sandbox (pause) has no container name: "NS/POD/POD". */
	if (found)
		snprintf(name, len, "%s/%s/%s", ns, pod,
			 ctr && (!type || strcmp(type, "sandbox")) ? ctr : "POD");
	json_decref(root);
	return found;
}

static void lookup_name(const char *path, struct mw_container *c)
{
	char file[4200], *text = NULL, name[MW_CT_NAME_LEN];
	size_t len;

	if (!strcmp(c->engine, "podman") || !strcmp(c->engine, "cri-o")) {
		static const char *const drivers[] = { "overlay", "vfs", "btrfs", "zfs" };
		char dir[4096];

		podman_storage(path, dir, sizeof(dir));
		for (size_t i = 0; i < MW_ARRAY_SIZE(drivers); i++) {
			snprintf(file, sizeof(file), "%s/%s-containers/containers.json", dir,
				 drivers[i]);
			if (procfs_read_file(file, &text, &len))
				continue;
			if (containers_json_name(text, c->id, name, sizeof(name)))
				snprintf(c->name, sizeof(c->name), "%s", name);
			free(text);
			text = NULL;
			break;
		}
	} else if (!strcmp(c->engine, "containerd")) {
		/* The task's OCI bundle: the CRI plugin's annotations name the
		 * pod, its namespace and the container. */
		const char *st = getenv("MW_CONTAINERD_STATE");

		snprintf(file, sizeof(file), "%s/io.containerd.runtime.v2.task/k8s.io/%s/config.json",
			 st ? st : "/run/containerd", c->id);
		if (!procfs_read_file(file, &text, &len)) {
			if (containers_oci_name(text, name, sizeof(name)))
				snprintf(c->name, sizeof(c->name), "%s", name);
			free(text);
		}
	} else if (!strcmp(c->engine, "docker")) {
		const char *root = getenv("MW_DOCKER_ROOT");
		json_t *o;

		snprintf(file, sizeof(file), "%s/containers/%s/config.v2.json",
			 root ? root : "/var/lib/docker", c->id);
		o = json_load_file(file, 0, NULL);
		if (json_string_value(json_object_get(o, "Name"))) {
			const char *n = json_string_value(json_object_get(o, "Name"));

			snprintf(c->name, sizeof(c->name), "%s", n + (n[0] == '/'));
		}
		json_decref(o);
	}
}

struct ct_entry {
	char *path;
	struct mw_container c;
	bool is;
};

/* Entries by a hash of their path: the tables ask once per process row. */
static struct {
	pthread_mutex_t lock;
	struct ct_entry *v;
	size_t n, cap;
	struct mw_idmap by_path;
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t path_key(const char *path)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a, then mixed */

	for (const char *p = path; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	return mw_fmix64(h) | 1;		/* never 0: idmap's empty key */
}

bool containers_get(const char *path, struct mw_container *c)
{
	struct ct_entry *e = NULL;
	uint64_t key;
	uint32_t at;
	bool is;

	memset(c, 0, sizeof(*c));
	if (!path)
		return false;
	key = path_key(path);
	pthread_mutex_lock(&cache.lock);
	if (idmap_get(&cache.by_path, key, &at) && !strcmp(cache.v[at].path, path))
		e = &cache.v[at];
	if (!e) {
		if (cache.n == cache.cap) {
			cache.cap = cache.cap ? 2 * cache.cap : 32;
			cache.v = mw_xrealloc(cache.v, cache.cap, sizeof(*cache.v));
		}
		idmap_put(&cache.by_path, key, (uint32_t)cache.n);
		e = &cache.v[cache.n++];
		memset(e, 0, sizeof(*e));
		e->path = mw_xstrdup(path);
		e->is = container_parse(path, &e->c);
		if (e->is)
			lookup_name(path, &e->c);
	}
	is = e->is;
	if (is)
		*c = e->c;
	pthread_mutex_unlock(&cache.lock);
	return is;
}

void containers_free(void)
{
	pthread_mutex_lock(&cache.lock);
	for (size_t i = 0; i < cache.n; i++)
		free(cache.v[i].path);
	free(cache.v);
	idmap_free(&cache.by_path);
	cache.v = NULL;
	cache.n = cache.cap = 0;
	pthread_mutex_unlock(&cache.lock);
}
