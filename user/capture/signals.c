// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* signals.c — stop signals, noted for the session's loop. */
#include "capture/signals.h"

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t nsignals;

static void on_signal(int sig)
{
	stop_signal = sig;
	nsignals++;
}

/* SIGCHLD only interrupts poll(): a child held at its exit is served now. */
static void on_child(int sig)
{
}

void mw_signals_install(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);	/* a closed stdout is a write error */
}

int mw_stop_signal(void)
{
	return stop_signal;
}

int mw_stop_count(void)
{
	return nsignals;
}
