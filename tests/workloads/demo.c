// SPDX-License-Identifier: GPL-2.0
/*
 * demo.c - the bundled demo: the memory story of a small inference runtime.
 *
 * usage: demo [model_path=/tmp/mw-model-XXXXXX.bin] [model_mib=48] [steady_runs]
 *
 * With steady_runs given, that many steady inferences instead of 20, and one
 * line on stdout, "elapsed_ns N iterations N", the time of the steady loop:
 * what scripts/bench compares with and without a tracer.
 *
 * Stages, ~20 ms apart so a timeline separates them:
 *   start     before anything: the phase "start" ends here
 *   loaded    model file written, mapped read-only and read in full
 *             (RssFile += model), 6 MiB of "static memory" touched (anon)
 *   io        input (3 MiB) and output (5 KiB) tensors mapped, each rounded
 *             up to 64 KiB: the 5 KiB output costs 64 KiB.  They are shared
 *             anonymous memory (as if shared with an accelerator), so they
 *             count as RssShmem once used.  VM only at this point, no RSS
 *   first     first inference: a 256 KiB scratch buffer, a 192 MiB
 *             MAP_NORESERVE "window" of which only 1/8 is touched, a 4 MiB
 *             task serialisation buffer, and the tensors, all touched
 *   steady    20 more inferences (steady_runs) reuse the same buffers:
 *             memory stays flat
 *   released  tensors and the model mapping released, the model file
 *             deleted, but the window stays mapped: "released the model but
 *             the memory stayed"
 *   final     same as released
 *
 * Every region is its own VMA: mappings of different kinds (file, private,
 * shared, NORESERVE) never merge, and they are created in an order where no
 * two mergeable ones end up adjacent, so a per-mapping table tells them
 * apart.  Prints nothing (but the timing line asked for): memwatch's report
 * is the output.
 *
 * Phases and iterations are marked with memwatch.h's USDT probes, which
 * memwatch finds by itself: MEMWATCH_PHASE "load_model", "alloc_io",
 * "inference" and "release", and MEMWATCH_ITER() before each of the 21
 * inferences (the first one included).  Every marker comes right after a
 * checkpoint (and the 20 ms pause, which changes no memory), so the
 * checkpoints hold the boundary values: load_model starts at "start",
 * alloc_io at "loaded", inference and its first iteration at "io", the
 * second iteration at "first", release (ending the last iteration) at
 * "steady".
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"
#include "../../include/memwatch.h"

#define STAGE_GAP_MS	20
#define INFER_MS	2
#define STEADY_RUNS	20
#define TENSOR_ALIGN	KIB(64)
#define STATIC_SZ	MIB(6)
#define INPUT_SZ	MIB(3)
#define OUTPUT_SZ	KIB(5)
#define WINDOW_SZ	MIB(192)
#define WINDOW_STRIDE	8	/* touch 1 page in 8: 12.5% of the window */
#define TASK_SZ		MIB(4)
#define SCRATCH_SZ	KIB(256)
#define FILL_CHUNK	KIB(64)

struct runtime {
	const char *model_path;
	size_t model_sz;
	char *model, *statics;
	char *input, *output;
	size_t input_sz, output_sz;	/* as mapped: rounded to 64 KiB */
	char *window, *task, *scratch;
};

static char fill_buf[FILL_CHUNK];

static size_t round_up(size_t n, size_t align)
{
	return (n + align - 1) / align * align;
}

/* Write a model file of @size bytes and return it open for reading. */
static int write_model(struct runtime *rt, char *tmpl, size_t size)
{
	int fd;

	memset(fill_buf, 0x3c, sizeof(fill_buf));
	fd = create_file(rt->model_path, tmpl, 4, size, fill_buf, FILL_CHUNK);
	if (!rt->model_path)
		rt->model_path = tmpl;
	return fd;
}

static void load_model(struct runtime *rt, char *tmpl)
{
	int fd = write_model(rt, tmpl, rt->model_sz);

	rt->model = map_fd(fd, rt->model_sz, PROT_READ, MAP_PRIVATE);
	close(fd);
	/* Read every page: the whole model becomes resident (RssFile). */
	read_pages(rt->model, rt->model_sz);

	rt->statics = map_anon(STATIC_SZ);
	touch(rt->statics, STATIC_SZ);
}

/* Tensors are 64 KiB-granular: a 5 KiB output still takes 64 KiB. */
static void alloc_io(struct runtime *rt)
{
	rt->input_sz = round_up(INPUT_SZ, TENSOR_ALIGN);
	rt->output_sz = round_up(OUTPUT_SZ, TENSOR_ALIGN);
	rt->input = map_anon_flags(rt->input_sz, MAP_SHARED);
	rt->output = map_anon_flags(rt->output_sz, MAP_SHARED);
}

/* One inference: fill the input, use scratch, write the output. */
static void infer(struct runtime *rt)
{
	touch(rt->input, INPUT_SZ);
	touch(rt->scratch, SCRATCH_SZ);
	touch(rt->output, OUTPUT_SZ);
	sleep_ms(INFER_MS);
}

/* The first inference sets up everything later ones reuse. */
static void first_inference(struct runtime *rt)
{
	size_t off;

	/* Scratch first: the NORESERVE window then keeps it apart from task. */
	rt->scratch = map_anon(SCRATCH_SZ);
	/* A sparse window: reserve no swap for what will never be touched. */
	rt->window = map_anon_flags(WINDOW_SZ, MAP_PRIVATE | MAP_NORESERVE);
	for (off = 0; off < WINDOW_SZ; off += WINDOW_STRIDE * PAGE_SZ)
		touch(rt->window + off, PAGE_SZ);
	rt->task = map_anon(TASK_SZ);
	touch(rt->task, TASK_SZ);
	infer(rt);
}

/* Gives back the tensors and the model, and forgets the window. */
static void release(struct runtime *rt)
{
	if (munmap(rt->input, rt->input_sz) ||
	    munmap(rt->output, rt->output_sz))
		die("munmap tensors");
	if (munmap(rt->model, rt->model_sz))
		die("munmap model");
	if (unlink(rt->model_path))
		die("unlink model");
}

static void stage(const char *name)
{
	ckpt(name);
	sleep_ms(STAGE_GAP_MS);
}

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/mw-model-XXXXXX.bin";
	struct runtime rt = { 0 };
	unsigned long i, steady_runs;
	uint64_t t0;

	ckpt_init(argc, argv);
	rt.model_path = argc > 1 && *argv[1] ? argv[1] : NULL;
	rt.model_sz = arg_mib(argc, argv, 2, 48);
	if (!rt.model_sz)
		die("model size must be positive");
	steady_runs = arg_ulong(argc, argv, 3, STEADY_RUNS);

	ckpt("start");
	MEMWATCH_PHASE("load_model");
	load_model(&rt, tmpl);
	stage("loaded");
	MEMWATCH_PHASE("alloc_io");
	alloc_io(&rt);
	stage("io");
	MEMWATCH_PHASE("inference");
	MEMWATCH_ITER();
	first_inference(&rt);
	stage("first");
	t0 = now_ns();
	for (i = 0; i < steady_runs; i++) {
		MEMWATCH_ITER();
		infer(&rt);
	}
	if (argc > 3)
		print_elapsed(now_ns() - t0, steady_runs);
	stage("steady");
	MEMWATCH_PHASE("release");
	release(&rt);
	stage("released");
	ckpt_exit(0);
}
