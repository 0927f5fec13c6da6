// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* test_hostct.c — cgroups folded per container, spans, containers' ends. */
#include <stdlib.h>
#include <string.h>

#include "host/hostct.h"
#include "unit.h"

#define ID_A "aaaaaaaaaaaa0000000000000000000000000000000000000000000000000000"
#define ID_B "bbbbbbbbbbbb0000000000000000000000000000000000000000000000000000"

static struct mw_hcgroup cg(const char *path, uint32_t n, uint64_t vm, int64_t anon,
			    uint64_t peak)
{
	return (struct mw_hcgroup){ .path = path, .nprocs = n, .vm = vm,
				    .rss = { [MW_ANON] = anon }, .rss_peak_max = peak };
}

static const struct mw_hct *find(const struct mw_hct *v, size_t n, const char *label)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].label, label))
			return &v[i];
	return NULL;
}

/* A container's cgroups (its scope and the payload's sub-cgroup) make one
 * row, its monitor another, the host's others a third; largest RSS first. */
TEST(fold)
{
	struct mw_hcgroup cgs[] = {
		cg("/machine.slice/libpod-" ID_A ".scope", 1, 100, 10, 10),
		cg("/machine.slice/libpod-" ID_A ".scope/container", 2, 200, 30, 25),
		cg("/machine.slice/libpod-conmon-" ID_A ".scope", 1, 50, 5, 5),
		cg("/system.slice/ssh.service", 3, 300, 7, 4),
		cg("/user.slice", 1, 10, 1, 1),
	};
	struct mw_hct *v;
	size_t n = hct_fold(cgs, 5, &v);
	const struct mw_hct *a, *mon, *host;

	CHECK_EQ_U64(n, 3);
	a = find(v, n, "podman:aaaaaaaaaaaa");
	mon = find(v, n, "podman:aaaaaaaaaaaa+mon");
	host = find(v, n, "(no container)");
	if (!CHECK(a && mon && host))
		goto out;
	CHECK(v == a);				/* 40 bytes: the largest */
	CHECK_EQ_U64(a->g.nprocs, 3);
	CHECK_EQ_U64(a->g.vm, 300);
	CHECK_EQ_U64(a->g.rss[MW_ANON], 40);
	CHECK_EQ_U64(a->g.rss_peak_max, 25);
	CHECK_STR(a->top, "/machine.slice/libpod-" ID_A ".scope");
	CHECK_STR(a->g.path, a->label);
	CHECK_EQ_U64(host->g.nprocs, 4);
	CHECK(host->c.engine == NULL && mon->c.monitor);
out:
	free(v);
}

/* A span: a container created in it grew by all it holds, one destroyed
 * gave back all it held. */
TEST(span)
{
	struct mw_hcgroup before[] = {
		cg("/machine.slice/libpod-" ID_A ".scope", 2, 100, 40, 40),
		cg("/user.slice", 1, 10, 5, 5),
	};
	struct mw_hcgroup after[] = {
		cg("/machine.slice/libpod-" ID_B ".scope", 1, 70, 25, 25),
		cg("/user.slice", 1, 12, 6, 6),
	};
	struct mw_hct *a, *b, *v;
	size_t na = hct_fold(before, 2, &a), nb = hct_fold(after, 2, &b);
	size_t n = hct_span(a, na, b, nb, &v);
	const struct mw_hct *gone = find(v, n, "podman:aaaaaaaaaaaa");
	const struct mw_hct *born = find(v, n, "podman:bbbbbbbbbbbb");
	const struct mw_hct *host = find(v, n, "(no container)");

	CHECK_EQ_U64(n, 3);
	if (CHECK(gone && born && host)) {
		CHECK(gone->g.nprocs == 0 && gone->g.vm == 0 && gone->g.d_vm == -100 &&
		      gone->g.d_rss == -40);
		CHECK(born->g.nprocs == 1 && born->g.d_vm == 70 && born->g.d_rss == 25);
		CHECK(host->g.d_vm == 2 && host->g.d_rss == 1);
		CHECK(v == gone);		/* the largest change first */
		CHECK_STR(gone->g.path, "podman:aaaaaaaaaaaa");
	}
	free(a);
	free(b);
	free(v);
}

#define S(x) ((uint64_t)((x) * 1e9))

static struct mw_hct_end last;
static char last_label[64];
static int ends;

static void on_end(void *ctx, const struct mw_hct_end *e)
{
	(void)ctx;
	last = *e;
	snprintf(last_label, sizeof(last_label), "%s", e->label);
	ends++;
}

/* Peaks move on at each snapshot and with each exit; a container absent
 * from a snapshot has ended, once. */
TEST(life)
{
	struct mw_hct_life l = { 0 };
	struct mw_hcgroup s1[] = { cg("/machine.slice/libpod-" ID_A ".scope", 2, 100, 40, 30) };
	struct mw_hcgroup s2[] = { cg("/machine.slice/libpod-" ID_A ".scope", 3, 150, 35, 30) };
	struct mw_hcgroup s3[] = { cg("/user.slice", 1, 10, 5, 5) };
	struct mw_hproc dead = { .rss_peak = 90, .vm_peak = 120 };
	struct mw_hct *v;
	size_t n;

	n = hct_fold(s1, 1, &v);
	hct_track(&l, v, n, S(1), false, on_end, NULL);
	free(v);
	n = hct_fold(s2, 1, &v);
	hct_track(&l, v, n, S(2), false, on_end, NULL);
	free(v);
	CHECK_EQ_U64(ends, 0);
	/* A process of it exits between snapshots: its exact peak counts. */
	hct_exit(&l, "/machine.slice/libpod-" ID_A ".scope", &dead, S(2.5));
	n = hct_fold(s3, 1, &v);
	/* Gone for less than MW_HCT_GONE_NS: not over yet. */
	hct_track(&l, v, n, S(3), false, on_end, NULL);
	CHECK_EQ_U64(ends, 0);
	hct_track(&l, v, n, S(4), false, on_end, NULL);
	hct_track(&l, v, n, S(5), false, on_end, NULL);
	free(v);
	CHECK_EQ_U64(ends, 1);
	CHECK_STR(last_label, "podman:aaaaaaaaaaaa");
	CHECK(last.first_ns == S(1) && last.last_ns == S(2.5));
	CHECK_EQ_U64(last.procs_peak, 3);
	CHECK_EQ_U64(last.vm_peak, 150);
	CHECK_EQ_U64(last.rss_peak, 90);
	CHECK_EQ_U64(last.snapshots, 2);
	CHECK_EQ_U64(l.n, 0);
	/* One whose processes all came and went between two snapshots. */
	hct_exit(&l, "/machine.slice/libpod-" ID_B ".scope", &dead, S(5.5));
	hct_track(&l, NULL, 0, S(6), false, on_end, NULL);
	CHECK_EQ_U64(ends, 1);
	/* The session's last snapshot: absent from it is over. */
	hct_track(&l, NULL, 0, S(6.1), true, on_end, NULL);
	CHECK_EQ_U64(ends, 2);
	CHECK_STR(last_label, "podman:bbbbbbbbbbbb");
	hct_life_free(&l);
}

int main(void)
{
	/* Names from no engine's state: the short ids. */
	setenv("MW_PODMAN_STORAGE", "/nonexistent", 1);
	setenv("MW_DOCKER_ROOT", "/nonexistent", 1);
	RUN(fold);
	RUN(span);
	RUN(life);
	containers_free();
	return unit_done();
}
