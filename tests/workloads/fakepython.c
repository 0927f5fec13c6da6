// SPDX-License-Identifier: GPL-2.0
/*
 * fakepython.c - looks like a free-threaded CPython 3.13 ("3.13t") to
 * memwatch --python: it has _PyRuntime, Py_Version 3.13.0 and the symbol
 * only a Py_GIL_DISABLED build has (_Py_MergeZeroLocalRefcount), in its
 * symbol table.  Debian 13 ships no free-threaded Python; the test copies
 * this as python3.13t, and memwatch must refuse its frames in one line and
 * keep the native ones.  Maps and touches a 48 MiB window.
 *
 * usage: fakepython [size_mib=48]
 *
 * Checkpoints: touched, final.
 */
#include <sys/mman.h>

#include "ckpt.h"

/* What the interpreter's ELF symbols say (python.c: scan_symtab). */
char _PyRuntime[4096];
const unsigned long Py_Version = 0x030d00f0;	/* 3.13.0 final */
char PyCode_Type[256];

void _Py_MergeZeroLocalRefcount(void *op);
void __attribute__((noinline)) _Py_MergeZeroLocalRefcount(void *op)
{
	(void)op;
	_PyRuntime[0]++;
}

int main(int argc, char **argv)
{
	size_t size;
	char *p;

	ckpt_init(argc, argv);
	size = arg_mib(argc, argv, 1, 48);
	_Py_MergeZeroLocalRefcount(PyCode_Type);
	p = map_anon(size);
	touch(p, size);
	ckpt("touched");
	ckpt_exit(0);
}
