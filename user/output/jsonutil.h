/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * jsonutil.h — JSON values the report writers share: report_json.c, the
 * JSON halves of report_callsite.c and report_findings.c, and host-wide
 * report_host.c.  Here, not in report_json.c, so that the writers it calls
 * need nothing back from it.
 */
#ifndef MW_JSONUTIL_H
#define MW_JSONUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

/* A JSON string of bytes from another process: never trust them to be
 * UTF-8 (invalid bytes become '?'). */
json_t *jstr(const char *s);
/* An address as the reports write one: a "0x..." string. */
json_t *jhex(uint64_t v);
/* obj as one compact NDJSON line, flushed; obj is freed.  0 or -EIO. */
int jline(FILE *f, json_t *obj);

#endif /* MW_JSONUTIL_H */
