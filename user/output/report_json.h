/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* report_json.h — what the JSON writers share (report_json.c). */
#ifndef MW_REPORT_JSON_H
#define MW_REPORT_JSON_H

#include <jansson.h>

/* A JSON string of bytes from another process: never trust them to be
 * UTF-8 (invalid bytes become '?'). */
json_t *jstr(const char *s);

#endif /* MW_REPORT_JSON_H */
