// SPDX-License-Identifier: GPL-2.0-only
#include "json_util.h"

#include <stdio.h>

#include "timeparse.h"

void tp_json_set_time(json_t *o, const char *key, int64_t unix_ns)
{
	char buf[40], k[48];

	json_object_set_new(o, key, json_string(tp_format_rfc3339(unix_ns, buf, sizeof(buf))));
	snprintf(k, sizeof(k), "%s_unix_ns", key);
	json_object_set_new(o, k, json_integer(unix_ns));
}

char *tp_json_dump(json_t *root)
{
	char *s = root ? json_dumps(root, JSON_COMPACT) : NULL;

	json_decref(root);
	return s;
}
