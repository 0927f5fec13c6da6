/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * demangle.h — C++ symbol names as people read them ("c10::alloc_cpu(unsigned
 * long)" for "_ZN3c109alloc_cpuEm"), with libstdc++'s abi::__cxa_demangle,
 * as perf, bcc and bpftrace do.  Tests: tests/unit/test_demangle.c.
 */
#ifndef MW_DEMANGLE_H
#define MW_DEMANGLE_H

/* The demangled form of an Itanium-ABI name (malloc'd), or NULL when name
 * is not one (C names, already demangled ones, garbage). */
char *mw_demangle(const char *name);

#endif /* MW_DEMANGLE_H */
