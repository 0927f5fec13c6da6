// SPDX-License-Identifier: GPL-2.0
/*
 * iters.c - a request loop with known memory, for memwatch's iterations.
 *
 * usage: iters [N=20] [--leak] [--steps] [--usdt | --mark | --socket]
 *
 * N iterations of mw_infer(i), an "inference":
 *   first      maps a 64 MiB MAP_NORESERVE window and touches its first
 *              16 MiB: VM += 64 MiB, RSS += 16 MiB
 *   2..N       touch the same 16 MiB again: no new VM, RSS or faults (flat)
 *   --leak     every iteration, the first included, also maps a fresh
 *              256 KiB of private anonymous memory, touches it and never
 *              unmaps it: VM and RSS += 256 KiB per iteration (growing)
 *   --steps    a runtime's noise: every iteration also maps, touches and
 *              unmaps 2 MiB (steady-state churn), and two iterations drawn
 *              at random from 2..N (a new draw each run) keep 192 KiB
 *              more, as a heap grows by a step now and then
 * Each iteration sleeps 2 ms, so iterations have measurable durations.
 * Checkpoint "iter<k>" (k = 1..N) is taken immediately before iteration k's
 * marker, and "end" after the last iteration, so iteration k's deltas are
 * iter<k+1> - iter<k> (the last one's: end - iter<N>).
 *
 * Markers:
 *   (default)  the function mw_infer(): memwatch --iter ITERS:mw_infer
 *   --usdt     MEMWATCH_ITER() at the top of mw_infer()
 *   --mark     no marker: after each checkpoint iter<k>, wait for the step
 *              (ckpt_wait_step(), MW_STEPS) so a test can run
 *              `memwatch mark --iter` in between
 *   --socket   memwatch_mark_iter() (include/memwatch_mark.h) at the top of
 *              mw_infer(): the session's control socket, from inside
 * There are no phase markers: the whole run is the phase "start".
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "ckpt.h"
#include "../../include/memwatch.h"
#include "../../include/memwatch_mark.h"

#define WINDOW_SZ	MIB(64)
#define TOUCHED_SZ	MIB(16)
#define LEAK_SZ		KIB(256)
#define CHURN_SZ	MIB(2)
#define STEP_SZ		KIB(192)
#define ITER_MS		2

static int use_usdt, use_socket, leak, steps;
static unsigned long step_at[2];
static char *window;

/* One request: entering it starts an iteration. */
MW_PROBE_FN void mw_infer(int i)
{
	if (use_usdt)
		MEMWATCH_ITER();
	if (use_socket && memwatch_mark_iter()) {
		errno = ENOTCONN;
		die("--socket: no answer on $MEMWATCH_CONTROL");
	}
	if (!window) {
		window = map_anon_flags(WINDOW_SZ, MAP_PRIVATE | MAP_NORESERVE);
	}
	touch(window, TOUCHED_SZ);
	if (leak)
		touch(map_anon(LEAK_SZ), LEAK_SZ);
	if (steps) {
		char *c = map_anon(CHURN_SZ);

		touch(c, CHURN_SZ);
		if (munmap(c, CHURN_SZ))
			die("munmap");
		if ((unsigned long)i == step_at[0] || (unsigned long)i == step_at[1])
			touch(map_anon(STEP_SZ), STEP_SZ);
	}
	sleep_ms(ITER_MS);
}

/* "iter<k>" into @buf, without stdio. */
static const char *iter_name(char *buf, unsigned long k)
{
	char digits[24];
	size_t n = 0, len = 4;

	memcpy(buf, "iter", 4);
	do {
		digits[n++] = '0' + k % 10;
		k /= 10;
	} while (k);
	while (n)
		buf[len++] = digits[--n];
	buf[len] = 0;
	return buf;
}

int main(int argc, char **argv)
{
	unsigned long n = 20, k;
	int mark = 0, have_n = 0, i;
	char name[32];

	ckpt_init(argc, argv);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--leak"))
			leak = 1;
		else if (!strcmp(argv[i], "--usdt"))
			use_usdt = 1;
		else if (!strcmp(argv[i], "--mark"))
			mark = 1;
		else if (!strcmp(argv[i], "--socket"))
			use_socket = 1;
		else if (!strcmp(argv[i], "--steps"))
			steps = 1;
		else if (argv[i][0] != '-' && !have_n) {
			n = arg_ulong(argc, argv, i, 20);
			have_n = 1;
		} else {
			errno = EINVAL;
			die(argv[i]);
		}
	}
	if (use_usdt && !MEMWATCH_MARKERS) {
		errno = ENOSYS;
		die("--usdt: built without <sys/sdt.h>");
	}

	if (steps && n > 1) {
		/* Iterations 2..N (mw_infer's 1..N-1), from the clock. */
		uint64_t r = now_ns();

		step_at[0] = 1 + r % (n - 1);
		step_at[1] = 1 + (r >> 20) % (n - 1);
	}
	for (k = 1; k <= n; k++) {
		ckpt(iter_name(name, k));
		if (mark)
			ckpt_wait_step(name);
		mw_infer((int)k - 1);
	}
	ckpt("end");
	ckpt_exit(0);
}
