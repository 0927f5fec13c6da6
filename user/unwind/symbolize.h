/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * symbolize.h — naming the code addresses of --stacks, on the capture side:
 * elfutils' libdwfl reads the live process's modules (executable, shared
 * libraries, vDSO), their symbol tables and, where present, DWARF line
 * information.  Each address is resolved once and leaves as an MW_S_SYM
 * stream record ahead of the stack that needs it.
 */
#ifndef MW_SYMBOLIZE_H
#define MW_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/capture.h"
#include "memwatch.h"

struct mw_symbolizer;

struct mw_symbolizer *symbolizer_new(pid_t pid);
void symbolizer_free(struct mw_symbolizer *s);
/* exec replaced the address space: forget every module and address. */
void symbolizer_reset(struct mw_symbolizer *s);
/* Send an MW_S_SYM record for each address of the stack record (len bytes)
 * not sent before. */
void symbolizer_stack(struct mw_symbolizer *s, const struct mw_stack_rec *rec,
		      size_t len, mw_sink_fn sink, void *ctx);
/* Likewise for the frames of an MW_S_FRAMES record (unwind.c). */
void symbolizer_frames(struct mw_symbolizer *s, const uint64_t *ips, size_t nr,
		       mw_sink_fn sink, void *ctx);

/* For the unwinder: the process's Dwfl, its modules reported (NULL if it has
 * none), and a generation that changes when it is a new one. */
typedef struct Dwfl Dwfl;
Dwfl *symbolizer_dwfl(struct mw_symbolizer *s, unsigned *gen);
/* A stack starts: a module not known yet may be looked for once. */
void symbolizer_begin(struct mw_symbolizer *s);
/* addr is in a known module (the list is read again, once per stack, when
 * it is not: a library loaded since). */
bool symbolizer_knows(struct mw_symbolizer *s, uint64_t addr);

#endif /* MW_SYMBOLIZE_H */
