/* SPDX-License-Identifier: GPL-2.0-only */
/* Small jansson helpers the JSON views share. */
#ifndef TAILPROF_JSON_UTIL_H
#define TAILPROF_JSON_UTIL_H

#include <jansson.h>
#include <stdint.h>

/* Sets key to unix_ns (ns since the Unix epoch) as RFC 3339 UTC text with milliseconds, and
 * key_unix_ns to the number itself: every time in the API comes as this pair (docs/api.md). */
void tp_json_set_time(json_t *o, const char *key, int64_t unix_ns);

/* root as compact JSON text (malloc'd), dropping the reference to root. NULL when root is NULL
 * or out of memory. */
char *tp_json_dump(json_t *root);

#endif
