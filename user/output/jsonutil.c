// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* jsonutil.c — JSON values the report writers share (jsonutil.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <jansson.h>

#include "output/jsonutil.h"
#include "util.h"

/* Paths and comms come from other processes: never trust them to be UTF-8. */
json_t *jstr(const char *s)
{
	json_t *j = json_string(s ? s : "");
	char *copy;

	if (j)
		return j;
	copy = mw_xstrdup(s);
	for (unsigned char *p = (unsigned char *)copy; *p; p++)
		if (*p >= 0x80)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

json_t *jhex(uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
	return json_string(buf);
}

int jline(FILE *f, json_t *obj)
{
	int err = json_dumpf(obj, f, JSON_COMPACT | JSON_ENSURE_ASCII);

	json_decref(obj);
	if (err || fputc('\n', f) == EOF || fflush(f))
		return -EIO;
	return 0;
}
