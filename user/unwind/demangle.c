// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* demangle.c — C++ names through libstdc++'s demangler (demangle.h). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/demangle.h"

/* <cxxabi.h>'s abi::__cxa_demangle, which has C linkage (libstdc++). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *mw_demangle(const char *name)
{
	int status = -1;
	char *out;

	/* Itanium mangling: "_Z" (also "__Z" on some targets); a symbol
	 * version suffix ("@GLIBCXX_3.4") is not in symbol table names. */
	if (!name || strncmp(name, "_Z", 2) != 0)
		return NULL;
	out = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}
