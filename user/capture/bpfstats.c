// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bpfstats.c — memwatch's own BPF programs' cost per run (bpfstats.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/bpfstats.h"
#include "memwatch.h"
#include "util.h"

static const char *const part_names[MW_NR_PARTS] = {
	[MW_PART_EXIT] = "exit",	[MW_PART_WALK] = "walk",
	[MW_PART_PATH] = "path",	[MW_PART_HARVEST] = "harvest",
	[MW_PART_EMIT] = "emit",	[MW_PART_STACK] = "stack",
};

bool bpfstats_wanted(void)
{
	const char *e = getenv("MEMWATCH_BPF_STATS");

	return e && *e && strcmp(e, "0");
}

bool bpfstats_parts_wanted(void)
{
	const char *e = getenv("MEMWATCH_BPF_STATS");

	return bpfstats_wanted() && strcmp(e, "programs");
}

int bpfstats_enable(void)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	if (fd < 0)
		mw_err("MEMWATCH_BPF_STATS: the kernel keeps no BPF run times (%s); parts only",
		       strerror(errno));
	return fd;
}

static void line(const char *what, const char *name, unsigned long long runs,
		 unsigned long long ns)
{
	fprintf(stderr, "memwatch: bpf: %-7s %-24s %12llu runs %9.1f ns/run\n", what, name, runs,
		runs ? (double)ns / (double)runs : 0.0);
}

void bpfstats_report(struct bpf_object *const *objs, size_t nobjs, int part_fd, int ncpus)
{
	struct mw_part_time *v = mw_xcalloc((size_t)ncpus, sizeof(*v));

	for (size_t i = 0; i < nobjs; i++) {
		struct bpf_program *p;

		if (!objs[i])
			continue;
		bpf_object__for_each_program(p, objs[i]) {
			struct bpf_prog_info info;
			__u32 len = sizeof(info);
			int fd = bpf_program__fd(p);

			memset(&info, 0, sizeof(info));
			if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) || !info.run_cnt)
				continue;
			line("program", bpf_program__name(p), info.run_cnt, info.run_time_ns);
		}
	}
	for (__u32 k = 0; k < MW_NR_PARTS && part_fd >= 0; k++) {
		unsigned long long ns = 0, runs = 0;

		if (bpf_map_lookup_elem(part_fd, &k, v))
			continue;
		for (int c = 0; c < ncpus; c++) {
			ns += v[c].ns;
			runs += v[c].runs;
		}
		line("part", part_names[k], runs, ns);
	}
	free(v);
}
