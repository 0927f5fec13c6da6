/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * memwatch.h - phase and iteration markers for programs observed by memwatch.
 *
 * Copy this one header into your program (or add memwatch's include/ to the
 * include path) and mark where the phases of your program begin:
 *
 *     #include "memwatch.h"
 *
 *     MEMWATCH_PHASE("load_model");
 *     load_model();
 *     MEMWATCH_PHASE("warmup");
 *     for (i = 0; i < n; i++) {
 *             MEMWATCH_ITER();        // one request, batch, step, frame...
 *             infer(i);
 *     }
 *     MEMWATCH_PHASE("shutdown");
 *
 * MEMWATCH_PHASE(name)  starts the phase @name (a const char *, normally a
 *                       string literal; keep it short and printable).  The
 *                       phase before it ends at that instant.  Everything
 *                       before the first marker is the phase "start".
 * MEMWATCH_ITER()       starts one iteration of a repeated piece of work.
 *                       An iteration lasts until the next MEMWATCH_ITER(),
 *                       the next MEMWATCH_PHASE() or the end of the trace.
 *
 * What memwatch does with them: `memwatch -- PROG` or `memwatch -p PID`
 * finds these markers in the traced executable by itself (no option needed)
 * and puts a uprobe on each.  For every phase its report gives the VM size
 * and RSS at the phase's start and end (the values /proc/PID/status shows at
 * that instant), their peaks within the phase, the VM mapped and unmapped,
 * the page faults, and the mappings that changed most; each mapping says
 * which phase created it.  For iterations it reports how much the first one
 * set up, after which iteration memory settled, and whether the steady-state
 * iterations are flat or keep growing (a leak per request).  Markers in
 * shared libraries are not picked up automatically: there, use
 * `memwatch --phase-at LIB:FUNCTION[=NAME]` / `--iter LIB:FUNCTION` instead,
 * which need no source change at all.  From a shell script, `memwatch mark
 * NAME` and `memwatch mark --iter` do the same from outside the program.
 *
 * Cost: none worth measuring.  The markers are USDT probes (<sys/sdt.h>,
 * Debian package systemtap-sdt-dev): each compiles to a single `nop` plus,
 * for MEMWATCH_PHASE, loading the name's address into a register.  The
 * probe's location and argument are described in an ELF note
 * (.note.stapsdt, see `readelf -n PROG`), which is not loaded at run time.
 * No semaphores are used, so there is no "is anyone tracing?" check either:
 * when memwatch is not running nothing happens at all.  When it is, each
 * marker costs one uprobe hit (a trap into the kernel, a few microseconds),
 * so mark phases and requests, not inner loops.
 *
 * Without <sys/sdt.h> (or with -DMEMWATCH_DISABLE) the markers compile to
 * nothing and MEMWATCH_MARKERS is 0, so the header can stay in portable
 * code.  The name argument is not evaluated in that case, so give the
 * macros no expressions with side effects.
 *
 * The probes are provider "memwatch", names "phase" (one argument: the
 * address of the NUL-terminated name) and "iter" (no argument), so other
 * USDT tools see them too: `bpftrace -e 'usdt:./prog:memwatch:phase
 * { printf("%s\n", str(arg0)); }'`.
 */
#ifndef MEMWATCH_PUBLIC_H
#define MEMWATCH_PUBLIC_H

#if !defined(MEMWATCH_DISABLE) && defined(__has_include)
#if __has_include(<sys/sdt.h>)
#include <sys/sdt.h>
#define MEMWATCH_MARKERS	1
#endif
#endif

#ifndef MEMWATCH_MARKERS
#define MEMWATCH_MARKERS	0
#endif

#if MEMWATCH_MARKERS

/*
 * A translation unit that defines _SDT_HAS_SEMAPHORES (for its own
 * dtrace -G probes) makes every probe in it reference a semaphore.  Ours
 * are never checked, but they must exist to link: weak, so every such
 * translation unit may define them.
 */
#ifdef _SDT_HAS_SEMAPHORES
__attribute__((weak, section(".probes"), visibility("hidden")))
unsigned short memwatch_phase_semaphore;
__attribute__((weak, section(".probes"), visibility("hidden")))
unsigned short memwatch_iter_semaphore;
#endif

#define MEMWATCH_PHASE(name)	DTRACE_PROBE1(memwatch, phase, (const char *)(name))
#define MEMWATCH_ITER()		DTRACE_PROBE(memwatch, iter)

#else

#define MEMWATCH_PHASE(name)	do { (void)sizeof(name); } while (0)
#define MEMWATCH_ITER()		do { } while (0)

#endif /* MEMWATCH_MARKERS */

#endif /* MEMWATCH_PUBLIC_H */
