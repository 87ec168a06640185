// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: durations, times, integers and sizes (timeparse.h), as flags, the
 * configuration and query parameters give them. Checks ranges, and that what is formatted
 * parses back: a duration printed as Go prints one, a time as RFC 3339. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "timeparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size), buf[32];
	uint64_t ns, v, back;
	int64_t t, t2;
	int rc;

	rc = tp_parse_duration(s, &ns);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
	if (!rc) {
		tp_format_duration(ns, buf, sizeof(buf));
		FUZZ_CHECK(strlen(buf) < sizeof(buf));
		/* "1h2m3s", "250ms": formatted durations parse again (rounded to the ms; a
		 * fraction "1.5s" is not a duration this parser takes) */
		if (!strchr(buf, '.'))
			FUZZ_CHECK(tp_parse_duration(buf, &back) == 0);
	}

	rc = tp_parse_time(s, &t);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
	if (!rc) {
		FUZZ_CHECK(t >= 0);
		tp_format_rfc3339(t, buf, sizeof(buf));
		FUZZ_CHECK(strlen(buf) < sizeof(buf));
		FUZZ_CHECK(tp_parse_time(buf, &t2) == 0);
		FUZZ_CHECK(t2 / 1000000 == t / 1000000); /* printed to the millisecond */
	}

	rc = tp_parse_uint(s, 5, 1000, &v);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
	FUZZ_CHECK(rc || (v >= 5 && v <= 1000));
	rc = tp_parse_uint(s, 0, UINT64_MAX, &v);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);

	rc = tp_parse_size(s, 4096, 1ull << 40, &v);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
	FUZZ_CHECK(rc || (v >= 4096 && v <= 1ull << 40));
	rc = tp_parse_size(s, 0, UINT64_MAX, &v);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ERANGE);
	free(s);
	return 0;
}
