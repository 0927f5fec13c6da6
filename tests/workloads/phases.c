// SPDX-License-Identifier: GPL-2.0
/*
 * phases.c - a program in phases with known memory, for memwatch's phases.
 *
 * usage: phases [--usdt | --mark] [LIB]
 *
 * Phases, in order.  Each phase's checkpoint carries its name and is taken
 * immediately before the phase's marker, so it holds the boundary values:
 *   (start)      up to the first marker
 *   load_model   write a 32 MiB model file, map it private read-only and
 *                read every page: VM += 32 MiB, RssFile += 32 MiB
 *   alloc_io     map a 16 MiB MAP_NORESERVE staging buffer and touch it
 *                (checkpoint "alloc_io.peak": the phase's VM and RSS peak),
 *                unmap it, then map 4 MiB of shared anonymous I/O memory and
 *                touch it: VM += 4 MiB, RssShmem += 4 MiB.  With LIB, LIB is
 *                dlopen()ed (RTLD_NOW) at the end of this phase
 *   mwlib_phase  only with LIB: LIB's mwlib_phase(), called through dlsym(),
 *                maps and touches 8 MiB (MAP_NORESERVE)
 *   release      unmap the model and delete its file: VM -= 32 MiB, RSS -=
 *                32 MiB; the I/O memory (and LIB's 8 MiB) stay
 *   final        as release
 * Each phase ends with a 10 ms pause, so phases have measurable durations.
 *
 * Markers:
 *   (default)  the phases are the functions mw_load_model(), mw_alloc_io()
 *              and mw_release() (and LIB's mwlib_phase()): trace with
 *              memwatch --phase-at PHASES:mw_load_model ...
 *   --usdt     MEMWATCH_PHASE("load_model"), ("alloc_io"), ("mwlib_phase"),
 *              ("release"): memwatch picks these up by itself
 *   --mark     no markers: after each boundary checkpoint, wait for the
 *              step (ckpt_wait_step(), MW_STEPS) so a test can run
 *              `memwatch mark NAME` in between
 * The four mappings are of different kinds (file, NORESERVE anon, shared
 * anon) so none merges with another or with ld.so's small anon mappings.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"
#include "../../include/memwatch.h"

#define MODEL_SZ	MIB(32)
#define STAGING_SZ	MIB(16)
#define IO_SZ		MIB(4)
#define FILL_CHUNK	KIB(64)
#define PHASE_MS	10

enum mode { MODE_CALL, MODE_USDT, MODE_MARK };

static enum mode mode = MODE_CALL;
static char model_path[] = "/tmp/mw-phases-XXXXXX";
static char fill_buf[FILL_CHUNK];
static char *model, *io;
static void *lib;

static void load_model(void)
{
	int fd;

	memset(fill_buf, 0x5a, sizeof(fill_buf));
	fd = create_file(NULL, model_path, 0, MODEL_SZ, fill_buf, FILL_CHUNK);
	model = map_fd(fd, MODEL_SZ, PROT_READ, MAP_PRIVATE);
	close(fd);
	read_pages(model, MODEL_SZ);
	sleep_ms(PHASE_MS);
}

static void alloc_io(const char *lib_path)
{
	char *staging = map_anon_flags(STAGING_SZ, MAP_PRIVATE | MAP_NORESERVE);

	touch(staging, STAGING_SZ);
	ckpt("alloc_io.peak");
	if (munmap(staging, STAGING_SZ))
		die("munmap staging");
	io = map_anon_flags(IO_SZ, MAP_SHARED);
	touch(io, IO_SZ);
	if (lib_path) {
		lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
		if (!lib) {
			errno = ENOENT;
			die(lib_path);
		}
	}
	sleep_ms(PHASE_MS);
}

static void release(void)
{
	if (munmap(model, MODEL_SZ))
		die("munmap model");
	if (unlink(model_path))
		die("unlink model");
	sleep_ms(PHASE_MS);
}

/* The --phase-at targets: entering one starts the phase. */
MW_PROBE_FN void mw_load_model(void)
{
	load_model();
}

MW_PROBE_FN void mw_alloc_io(const char *lib_path)
{
	alloc_io(lib_path);
}

MW_PROBE_FN void mw_release(void)
{
	release();
}

/* The checkpoint that holds the boundary values, then (--mark) the step. */
static void boundary(const char *name)
{
	ckpt(name);
	if (mode == MODE_MARK)
		ckpt_wait_step(name);
}

int main(int argc, char **argv)
{
	const char *lib_path = NULL;
	void (*lib_phase)(void) = NULL;
	int i;

	ckpt_init(argc, argv);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--usdt"))
			mode = MODE_USDT;
		else if (!strcmp(argv[i], "--mark"))
			mode = MODE_MARK;
		else if (argv[i][0] != '-' && !lib_path)
			lib_path = argv[i];
		else {
			errno = EINVAL;
			die(argv[i]);
		}
	}
	if (mode == MODE_USDT && !MEMWATCH_MARKERS) {
		errno = ENOSYS;
		die("--usdt: built without <sys/sdt.h>");
	}

	boundary("load_model");
	if (mode == MODE_CALL)
		mw_load_model();
	else {
		if (mode == MODE_USDT)
			MEMWATCH_PHASE("load_model");
		load_model();
	}

	boundary("alloc_io");
	if (mode == MODE_CALL)
		mw_alloc_io(lib_path);
	else {
		if (mode == MODE_USDT)
			MEMWATCH_PHASE("alloc_io");
		alloc_io(lib_path);
	}

	if (lib) {
		lib_phase = (void (*)(void))dlsym(lib, "mwlib_phase");
		if (!lib_phase) {
			errno = ENOENT;
			die("dlsym mwlib_phase");
		}
		boundary("mwlib_phase");
		if (mode == MODE_USDT)
			MEMWATCH_PHASE("mwlib_phase");
		lib_phase();
		sleep_ms(PHASE_MS);
	}

	boundary("release");
	if (mode == MODE_CALL)
		mw_release();
	else {
		if (mode == MODE_USDT)
			MEMWATCH_PHASE("release");
		release();
	}
	ckpt_exit(0);
}
