/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * signals.h — how a session learns it should stop: SIGINT, SIGTERM and
 * SIGHUP are noted (not acted on in the handler), SIGCHLD only interrupts
 * poll(), SIGPIPE is ignored so a closed stdout becomes a write error.
 */
#ifndef MW_SIGNALS_H
#define MW_SIGNALS_H

#include <signal.h>

void mw_signals_install(void);
/* The last stop signal received, 0 if none; how many so far. */
int mw_stop_signal(void);
int mw_stop_count(void);

#endif /* MW_SIGNALS_H */
