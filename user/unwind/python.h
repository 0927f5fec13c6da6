/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * python.h — CPython frames for --stacks (--python), on the capture side:
 * find the traced process's interpreter (_PyRuntime in the python binary or
 * libpython, from its ELF symbols and /proc/PID/maps), pick its version's
 * layout (CPython 3.11 to 3.13: pylayouts.h), and read what BPF could not
 * copy of a code object through /proc/PID/mem while the process is alive
 * (MW_S_PYCODE records).
 */
#ifndef MW_UNWIND_PYTHON_H
#define MW_UNWIND_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/capture.h"
#include "memwatch.h"

struct mw_python;

struct mw_python *python_new(pid_t pid);
void python_free(struct mw_python *py);
/* exec replaced the address space: look for an interpreter anew. */
void python_reset(struct mw_python *py);

/*
 * Look for the interpreter in the process's mappings now.  Returns the
 * address of its _PyRuntime when it is a CPython memwatch knows (once: 0
 * on later calls), else 0; an interpreter of another version or layout is
 * said once on stderr, and not looked for again until python_reset().
 */
uint64_t python_detect(struct mw_python *py);
/* What BPF's walk needs (epoch left 0), once python_detect() found it. */
bool python_target(const struct mw_python *py, struct mw_py_target *t);
/* The layout of CPython 3.minor, NULL if memwatch does not know it or
 * BPF could not walk it. */
const struct mw_py_layout *python_layout(unsigned int minor);
/* Found, or given up on, until the next exec. */
bool python_settled(const struct mw_python *py);
/* Does the process's executable link a libpython (a --enable-shared
 * build: pyenv's, an embedding program's), which ld.so maps before main? */
bool python_links_lib(const struct mw_python *py);
/* Might a mapping of this file hold an interpreter (python3.X, libpython)? */
bool python_path_candidate(const char *path);

/* After an MW_REC_PYCODE record: what BPF could not copy of it (names,
 * the whole line table), read from the live process, as an MW_S_PYCODE
 * record. */
void python_fill(struct mw_python *py, const struct mw_pycode_rec *rec, size_t len,
		 mw_sink_fn sink, void *ctx);

/* Loader cost, for -v: code objects read (gone: freed before the read),
 * the time it took, over how many MW_REC_PYCODE records needing it. */
void python_costs(const struct mw_python *py, uint64_t *codes, uint64_t *gone,
		  uint64_t *ns, uint64_t *stacks);

#endif /* MW_UNWIND_PYTHON_H */
