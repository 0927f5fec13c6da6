// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* test_containers.c — containers from cgroup paths, names from engines' state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/containers.h"
#include "unit.h"

#define ID "3f9c0e1d2b4a59687786a5b4c3d2e1f00112233445566778899aabbccddeeff0"
#define ID2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void expect(const char *path, const char *engine, const char *id, const char *name,
		   const char *pod, bool monitor)
{
	struct mw_container c;
	bool is = container_parse(path, &c);

	if (!engine) {
		CHECK(!is);
		return;
	}
	if (!CHECK(is) || !CHECK(c.engine != NULL))
		return;
	CHECK_STR(c.engine, engine);
	CHECK_STR(c.id, id);
	CHECK_STR(c.name, name);
	CHECK_STR(c.pod, pod);
	CHECK(c.monitor == monitor);
}

/* Every layout the engines make, systemd's and cgroupfs's. */
TEST(paths)
{
	expect("/machine.slice/libpod-" ID ".scope", "podman", ID, "3f9c0e1d2b4a", "", false);
	expect("/machine.slice/libpod-" ID ".scope/container", "podman", ID, "3f9c0e1d2b4a", "",
	       false);
	expect("/machine.slice/libpod-conmon-" ID ".scope", "podman", ID, "3f9c0e1d2b4a", "",
	       true);
	expect("/libpod_parent/libpod-" ID, "podman", ID, "3f9c0e1d2b4a", "", false);
	expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope",
	       "podman", ID, "3f9c0e1d2b4a", "", false);
	expect("/system.slice/docker-" ID ".scope", "docker", ID, "3f9c0e1d2b4a", "", false);
	expect("/docker/" ID, "docker", ID, "3f9c0e1d2b4a", "", false);
	expect("/kubepods.slice/kubepods-besteffort.slice/"
	       "kubepods-besteffort-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice/"
	       "cri-containerd-" ID ".scope", "containerd", ID, "3f9c0e1d2b4a",
	       "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", false);
	expect("/kubepods.slice/kubepods-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice/crio-" ID
	       ".scope", "cri-o", ID, "3f9c0e1d2b4a", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
	       false);
	expect("/kubepods.slice/kubepods-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice/"
	       "crio-conmon-" ID ".scope", "cri-o", ID, "3f9c0e1d2b4a",
	       "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", true);
	expect("/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/" ID, "containerd", ID,
	       "3f9c0e1d2b4a", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", false);
	expect("/machine.slice/machine-web\\x2d1.scope", "nspawn", "web-1", "web-1", "", false);
	expect("/machine.slice/machine-web\\x2d1.scope/payload", "nspawn", "web-1", "web-1", "",
	       false);
	/* Not containers. */
	expect("/", NULL, NULL, NULL, NULL, false);
	expect("/system.slice/ssh.service", NULL, NULL, NULL, NULL, false);
	expect("/system.slice/docker.service", NULL, NULL, NULL, NULL, false);
	expect("/docker/not-an-id", NULL, NULL, NULL, NULL, false);
	expect("/machine.slice/libpod-" ID "0.scope", NULL, NULL, NULL, NULL, false);
	expect("/machine.slice/libpod-3F9C0E1D2B4A59687786A5B4C3D2E1F00112233445566778899AABBCCDDEEFF0.scope",
	       NULL, NULL, NULL, NULL, false);
	expect("", NULL, NULL, NULL, NULL, false);
}

TEST(containers_json)
{
	static const char text[] =
		"[{\"id\":\"" ID2 "\",\"names\":[\"other\"],\"image\":\"x\"},"
		"{\"id\":\"" ID "\",\"names\":[\"web\",\"alias\"],\"layer\":\"y\"},"
		"{\"id\":\"ffff\",\"names\":[\"k8s_app_mypod-5d9_prod_0f1e2d3c-4b5a_0\"]}]";
	char name[64];

	CHECK(containers_json_name(text, ID, name, sizeof(name)) && !strcmp(name, "web"));
	CHECK(containers_json_name(text, ID2, name, sizeof(name)) && !strcmp(name, "other"));
	CHECK(containers_json_name(text, "ffff", name, sizeof(name)) &&
	      !strcmp(name, "prod/mypod-5d9/app"));
	CHECK(!containers_json_name(text, "abcd", name, sizeof(name)));
	CHECK(!containers_json_name("{\"id\":1}", ID, name, sizeof(name)));
	CHECK(!containers_json_name("[{\"id\":\"" ID "\",\"names\":[]}]", ID, name,
				    sizeof(name)));
	CHECK(!containers_json_name("not json", ID, name, sizeof(name)));
}

/* Names from a storage directory laid out as Podman's and Docker's. */
TEST(names_from_state)
{
	char dir[] = "/tmp/mw-ct-XXXXXX", p[256];
	struct mw_container c;
	FILE *f;

	if (!CHECK(mkdtemp(dir) != NULL))
		return;
	snprintf(p, sizeof(p), "%s/overlay-containers", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/overlay-containers/containers.json", dir);
	f = fopen(p, "w");
	fprintf(f, "[{\"id\":\"%s\",\"names\":[\"inference-1\"]}]", ID);
	fclose(f);
	snprintf(p, sizeof(p), "%s/containers", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/containers/%s", dir, ID2);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/containers/%s/config.v2.json", dir, ID2);
	f = fopen(p, "w");
	fprintf(f, "{\"ID\":\"%s\",\"Name\":\"/redis-cache\"}", ID2);
	fclose(f);
	/* containerd under Kubernetes: the task's bundle, as the CRI plugin
	 * writes it. */
	snprintf(p, sizeof(p), "%s/io.containerd.runtime.v2.task", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/io.containerd.runtime.v2.task/k8s.io", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/io.containerd.runtime.v2.task/k8s.io/%s", dir, ID);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/io.containerd.runtime.v2.task/k8s.io/%s/config.json", dir, ID);
	f = fopen(p, "w");
	fprintf(f, "{\"ociVersion\":\"1.1.0\",\"annotations\":{"
		"\"io.kubernetes.cri.container-type\":\"container\","
		"\"io.kubernetes.cri.container-name\":\"triton\","
		"\"io.kubernetes.cri.sandbox-name\":\"infer-7f9c\","
		"\"io.kubernetes.cri.sandbox-namespace\":\"ml\"}}");
	fclose(f);
	setenv("MW_PODMAN_STORAGE", dir, 1);
	setenv("MW_DOCKER_ROOT", dir, 1);
	setenv("MW_CONTAINERD_STATE", dir, 1);
	containers_free();
	CHECK(containers_get("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
			     "12345678_1234_1234_1234_123456789abc.slice/cri-containerd-" ID ".scope",
			     &c) && !strcmp(c.name, "ml/infer-7f9c/triton"));
	CHECK(containers_get("/libpod_parent/libpod-" ID, &c) && !strcmp(c.name, "inference-1"));
	CHECK(containers_get("/system.slice/docker-" ID2 ".scope", &c) &&
	      !strcmp(c.name, "redis-cache"));
	/* Unknown to its engine: the short id. */
	CHECK(containers_get("/libpod_parent/libpod-" ID2, &c) && !strcmp(c.name, "0123456789ab"));
	CHECK(!containers_get("/system.slice/cron.service", &c));
	/* Cached: read once per path, even after the file changed. */
	snprintf(p, sizeof(p), "%s/overlay-containers/containers.json", dir);
	unlink(p);
	CHECK(containers_get("/libpod_parent/libpod-" ID, &c) && !strcmp(c.name, "inference-1"));
	containers_free();
	snprintf(p, sizeof(p), "%s/containers/%s/config.v2.json", dir, ID2);
	unlink(p);
	snprintf(p, sizeof(p), "%s/containers/%s", dir, ID2);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/containers", dir);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/overlay-containers", dir);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/io.containerd.runtime.v2.task/k8s.io/%s/config.json", dir, ID);
	unlink(p);
	snprintf(p, sizeof(p), "%s/io.containerd.runtime.v2.task/k8s.io/%s", dir, ID);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/io.containerd.runtime.v2.task/k8s.io", dir);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/io.containerd.runtime.v2.task", dir);
	rmdir(p);
	rmdir(dir);
	unsetenv("MW_PODMAN_STORAGE");
	unsetenv("MW_DOCKER_ROOT");
	unsetenv("MW_CONTAINERD_STATE");
}

/* The CRI plugin's annotations; the sandbox is the pod's own. */
TEST(oci_names)
{
	char n[MW_CT_NAME_LEN];

	CHECK(containers_oci_name("{\"annotations\":{\"io.kubernetes.cri.sandbox-namespace\":\"a\","
				  "\"io.kubernetes.cri.sandbox-name\":\"p\","
				  "\"io.kubernetes.cri.container-type\":\"sandbox\"}}", n, sizeof(n)) &&
	      !strcmp(n, "a/p/POD"));
	CHECK(!containers_oci_name("{\"annotations\":{}}", n, sizeof(n)));
	CHECK(!containers_oci_name("not json", n, sizeof(n)));
}

int main(void)
{
	RUN(paths);
	RUN(containers_json);
	RUN(names_from_state);
	RUN(oci_names);
	return unit_done();
}
