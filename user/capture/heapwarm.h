/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * heapwarm.h — start-up's parses of the kernel BTF reuse warm pages
 * instead of faulting in fresh ones each (see heapwarm.c).
 */
#ifndef MW_HEAPWARM_H
#define MW_HEAPWARM_H

#include <stdbool.h>

/* Before the first parse (preflight).  thread: warm an arena for a load
 * thread (capture.c's load_split()) as well. */
void heapwarm_start(bool thread);
/* Before the loads: the warm arena is free for the next thread. */
void heapwarm_join(void);
/* Attached: the memory the parses left, back to the kernel. */
void heapwarm_release(void);

#endif /* MW_HEAPWARM_H */
