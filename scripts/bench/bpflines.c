// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bpflines.c - where each source line of the loaded BPF programs lies in
 * their JIT images, for scripts/bench/hotspots: a perf sample's address in a
 * bpf_prog_* symbol is found in this table (the last entry at or below it).
 *
 *   bpflines [ID...]   print "ADDR<TAB>PROGRAM<TAB>FILE:LINE<TAB>SOURCE" for
 *                      every line-info record of the programs (all loaded
 *                      programs without IDs), ADDR in hex
 *
 * From the kernel's own tables (BPF_OBJ_GET_INFO_BY_FD: line_info and
 * jited_line_info, the file and source text in the program's BTF), so it
 * needs no disassembler: bpftool's "dump jited" wants libbfd, which
 * Debian's bpftool is built without.  Programs loaded without BTF line
 * info are skipped.  Exit 0, or 1 when a program could not be read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

static int print_prog(__u32 id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), nl, nj;
	struct bpf_line_info *li = NULL;
	struct btf *btf = NULL;
	__u64 *jl = NULL;
	int fd, err = 0;

	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;	/* unloaded since */
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		err = -errno;
		goto out;
	}
	nl = info.nr_line_info;
	nj = info.nr_jited_line_info;
	if (!nl || nl != nj || !info.btf_id)
		goto out;	/* no line info, or not JITed */
	li = calloc(nl, sizeof(*li));
	jl = calloc(nj, sizeof(*jl));
	if (!li || !jl) {
		err = -ENOMEM;
		goto out;
	}
	memset(&info, 0, sizeof(info));
	info.nr_line_info = nl;
	info.line_info_rec_size = sizeof(*li);
	info.line_info = (__u64)(unsigned long)li;
	info.nr_jited_line_info = nj;
	info.jited_line_info_rec_size = sizeof(*jl);
	info.jited_line_info = (__u64)(unsigned long)jl;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		err = -errno;
		goto out;
	}
	btf = btf__load_from_kernel_by_id(info.btf_id);
	if (!btf) {
		err = -errno;
		goto out;
	}
	for (__u32 i = 0; i < nl; i++) {
		const char *file = btf__name_by_offset(btf, li[i].file_name_off);
		const char *src = btf__name_by_offset(btf, li[i].line_off);
		const char *base = file ? strrchr(file, '/') : NULL;

		/* One line each: the source text as the compiler kept it,
		 * tabs and all, after the third tab. */
		printf("%llx\t%s\t%s:%u\t%s\n", (unsigned long long)jl[i], info.name,
		       base ? base + 1 : file ? file : "?", BPF_LINE_INFO_LINE_NUM(li[i].line_col),
		       src ? src : "");
	}
out:
	btf__free(btf);
	free(li);
	free(jl);
	close(fd);
	return err;
}

int main(int argc, char **argv)
{
	__u32 id = 0;
	int rc = 0, err;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fprintf(stderr, "usage: bpflines [PROG_ID...]\n");
		return 2;
	}
	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			char *end;
			unsigned long v = strtoul(argv[i], &end, 10);

			if (*end || !v || v > 0xffffffffUL) {
				fprintf(stderr, "bpflines: invalid program ID '%s'\n", argv[i]);
				return 2;
			}
			err = print_prog((__u32)v);
			if (err) {
				fprintf(stderr, "bpflines: program %lu: %s\n", v, strerror(-err));
				rc = 1;
			}
		}
		return rc;
	}
	while (!bpf_prog_get_next_id(id, &id)) {
		err = print_prog(id);
		if (err) {
			fprintf(stderr, "bpflines: program %u: %s\n", id, strerror(-err));
			rc = 1;
		}
	}
	if (errno != ENOENT) {
		fprintf(stderr, "bpflines: listing programs: %s\n", strerror(errno));
		return 1;
	}
	return rc;
}
