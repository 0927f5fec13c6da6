/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * cudamem.cu - what CUDA's allocations do to a process's memory, as /proc
 * sees it, for checking memwatch against a real GPU (tests/gpu/run).
 *
 *     nvcc -O2 -o cudamem cudamem.cu && ./cudamem > out.jsonl
 *
 * Walks the phases init (the context), malloc (1 GiB of device memory),
 * host (256 MiB of pinned host memory), register (256 MiB of anonymous
 * memory, pinned with cudaHostRegister), managed (256 MiB of managed memory
 * written by the CPU, then a kernel, then read by the CPU) and free, each
 * announced to memwatch through its control socket (a no-op without it).
 *
 * After each phase (and at the start, and between the managed phase's
 * steps: "managed/cpu_write", "managed/gpu_write") one JSON line:
 *
 *     {"phase": NAME, "mark": 0 or -1, "ms": since the line before,
 *      "status": {VmSize, VmRSS, ... in bytes, null when absent},
 *      "maps": [the smaps entries that are not [heap] or [stack] and whose
 *               path starts with /dev/, or that are anonymous and at least
 *               64 MiB, or that are new since the previous line],
 *      "totals": {class: {n, size, rss, locked}} over every smaps entry,
 *                a class being "anon", "heap", "stack", "file", "memfd",
 *                "special" ([vdso] ...) or the /dev path itself}
 *
 * Any CUDA call that fails prints its error and exits 2; managed memory
 * that reads back wrong exits 3.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include <algorithm>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "../../include/memwatch_mark.h"

#define MiB (1024UL * 1024)
#define GiB (1024 * MiB)
#define BIG_ANON (64 * MiB)

#define CK(call)							\
	do {								\
		cudaError_t e_ = (call);				\
		if (e_ != cudaSuccess) {				\
			fprintf(stderr, "cudamem: %s:%d: %s: %s (%s)\n", \
				__FILE__, __LINE__, #call,		\
				cudaGetErrorString(e_),			\
				cudaGetErrorName(e_));			\
			printf("{\"error\":\"%s\",\"call\":\"%s\"}\n",	\
			       cudaGetErrorName(e_), #call);		\
			fflush(stdout);					\
			exit(2);					\
		}							\
	} while (0)

/* One /proc/self/smaps entry, sizes in bytes. */
struct vma {
	unsigned long start, end;
	char perms[8];
	std::string path;
	long rss, pss, locked;
	std::string flags;	/* the VmFlags line's value, verbatim */
};

static const char *const status_keys[] = {
	"VmSize", "VmRSS", "VmPeak", "VmHWM", "VmPin", "VmLck",
	"RssAnon", "RssFile", "RssShmem",
};
#define NKEYS (sizeof(status_keys) / sizeof(status_keys[0]))

static std::vector<unsigned long> prev_starts;	/* sorted */
static double phase_t0;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Print @s as a JSON string. */
static void put_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* The status fields, in bytes; -1 for those this kernel does not give. */
static void read_status(long *val)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	for (size_t i = 0; i < NKEYS; i++)
		val[i] = -1;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!colon)
			continue;
		*colon = '\0';
		for (size_t i = 0; i < NKEYS; i++)
			if (!strcmp(line, status_keys[i]))
				val[i] = strtol(colon + 1, NULL, 10) * 1024;
	}
	fclose(f);
}

static std::vector<vma> read_smaps(void)
{
	std::vector<vma> v;
	char line[4096];
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f) {
		fprintf(stderr, "cudamem: /proc/self/smaps: %s\n", strerror(errno));
		return v;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, ino;
		char perms[8];
		int n = 0;
		long kb;

		line[strcspn(line, "\n")] = '\0';
		/* A header: "start-end perms offset dev inode   path". */
		if (sscanf(line, "%lx-%lx %7s %*x %*x:%*x %lu %n",
			   &start, &end, perms, &ino, &n) >= 4 && n > 0) {
			vma m = { start, end, "", line + n, 0, 0, 0, "" };

			strcpy(m.perms, perms);
			v.push_back(m);
			continue;
		}
		if (v.empty())
			continue;
		if (!strncmp(line, "VmFlags:", 8))
			v.back().flags = line + 8 + strspn(line + 8, " \t");
		else if (sscanf(line, "Rss: %ld kB", &kb) == 1)
			v.back().rss = kb * 1024;
		else if (sscanf(line, "Pss: %ld kB", &kb) == 1)
			v.back().pss = kb * 1024;
		else if (sscanf(line, "Locked: %ld kB", &kb) == 1)
			v.back().locked = kb * 1024;
	}
	fclose(f);
	return v;
}

static std::string path_class(const std::string &p)
{
	if (p.empty())
		return "anon";
	if (p == "[heap]")
		return "heap";
	if (!p.compare(0, 7, "[stack]"))
		return "stack";
	if (p[0] == '[')
		return "special";
	if (!p.compare(0, 5, "/dev/"))
		return p;
	if (!p.compare(0, 7, "/memfd:"))
		return "memfd";
	return "file";
}

/* Print the line for the phase that just ended. */
static void snapshot(const char *phase, int mark)
{
	std::vector<std::string> cls;
	std::vector<long> tot;	/* n, size, rss, locked per class */
	std::vector<unsigned long> starts;
	double ms = now_ms() - phase_t0;
	long st[NKEYS];
	bool first = true;

	read_status(st);
	std::vector<vma> v = read_smaps();

	printf("{\"phase\":");
	put_str(phase);
	printf(",\"mark\":%d,\"ms\":%.1f,\"status\":{", mark, ms);
	for (size_t i = 0; i < NKEYS; i++) {
		printf("%s\"%s\":", i ? "," : "", status_keys[i]);
		if (st[i] < 0)
			printf("null");
		else
			printf("%ld", st[i]);
	}
	printf("},\"maps\":[");
	for (const vma &m : v) {
		const std::string c = path_class(m.path);
		bool fresh = !std::binary_search(prev_starts.begin(),
						 prev_starts.end(), m.start);
		size_t k = std::find(cls.begin(), cls.end(), c) - cls.begin();

		if (k == cls.size()) {
			cls.push_back(c);
			tot.insert(tot.end(), 4, 0);
		}
		tot[4 * k] += 1;
		tot[4 * k + 1] += m.end - m.start;
		tot[4 * k + 2] += m.rss;
		tot[4 * k + 3] += m.locked;
		starts.push_back(m.start);

		if (c == "heap" || c == "stack")
			continue;
		if (m.path.compare(0, 5, "/dev/") &&
		    !(m.path.empty() && m.end - m.start >= BIG_ANON) &&
		    !fresh)
			continue;
		printf("%s{\"start\":\"0x%lx\",\"end\":\"0x%lx\",\"size\":%lu,"
		       "\"perms\":\"%s\",\"path\":", first ? "" : ",",
		       m.start, m.end, m.end - m.start, m.perms);
		put_str(m.path.c_str());
		printf(",\"new\":%s,\"Rss\":%ld,\"Pss\":%ld,\"Locked\":%ld,"
		       "\"VmFlags\":", fresh ? "true" : "false",
		       m.rss, m.pss, m.locked);
		put_str(m.flags.c_str());
		putchar('}');
		first = false;
	}
	printf("],\"totals\":{");
	for (size_t k = 0; k < cls.size(); k++) {
		printf("%s", k ? "," : "");
		put_str(cls[k].c_str());
		printf(":{\"n\":%ld,\"size\":%ld,\"rss\":%ld,\"locked\":%ld}",
		       tot[4 * k], tot[4 * k + 1], tot[4 * k + 2], tot[4 * k + 3]);
	}
	printf("}}\n");
	fflush(stdout);

	std::sort(starts.begin(), starts.end());
	prev_starts = starts;
	phase_t0 = now_ms();
}

/* Start phase @name: tell memwatch, which answers once it has taken it. */
static int phase(const char *name)
{
	int mark = memwatch_mark_phase(name);

	phase_t0 = now_ms();
	return mark;
}

__global__ void fill(unsigned int *p, size_t n, unsigned int val)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = val ^ (unsigned int)i;
}

int main(void)
{
	const size_t dev_size = 1 * GiB, host_size = 256 * MiB;
	const size_t reg_size = 256 * MiB, man_size = 256 * MiB;
	const size_t nwords = man_size / sizeof(unsigned int);
	unsigned int *man;
	void *dev, *host, *reg;
	size_t bad = 0;
	int mark;

	setvbuf(stdout, NULL, _IOFBF, 1 << 20);
	phase_t0 = now_ms();
	snapshot("start", -1);

	mark = phase("init");
	CK(cudaFree(0));
	snapshot("init", mark);

	mark = phase("malloc");
	CK(cudaMalloc(&dev, dev_size));
	CK(cudaMemset(dev, 0x5a, dev_size));
	CK(cudaDeviceSynchronize());
	snapshot("malloc", mark);

	mark = phase("host");
	CK(cudaMallocHost(&host, host_size));
	memset(host, 0x5a, host_size);
	snapshot("host", mark);

	mark = phase("register");
	reg = mmap(NULL, reg_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (reg == MAP_FAILED) {
		perror("cudamem: mmap");
		exit(2);
	}
	memset(reg, 0x5a, reg_size);
	CK(cudaHostRegister(reg, reg_size, cudaHostRegisterDefault));
	snapshot("register", mark);

	mark = phase("managed");
	CK(cudaMallocManaged((void **)&man, man_size, cudaMemAttachGlobal));
	memset(man, 0x5a, man_size);
	snapshot("managed/cpu_write", mark);
	fill<<<1024, 256>>>(man, nwords, 0xa5a5a5a5u);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	snapshot("managed/gpu_write", -1);
	for (size_t i = 0; i < nwords; i++)
		bad += man[i] != (0xa5a5a5a5u ^ (unsigned int)i);
	snapshot("managed", -1);
	if (bad) {
		fprintf(stderr, "cudamem: managed memory: %zu words wrong\n", bad);
		printf("{\"error\":\"managed memory read back wrong\",\"words\":%zu}\n",
		       bad);
		fflush(stdout);
		exit(3);
	}

	mark = phase("free");
	CK(cudaFree(man));
	CK(cudaHostUnregister(reg));
	munmap(reg, reg_size);
	CK(cudaFreeHost(host));
	CK(cudaFree(dev));
	snapshot("free", mark);
	return 0;
}
