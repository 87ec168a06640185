// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: the JSON body of POST /api/v1/marks (marks__parse_mark), which any client
 * that reaches the API sends. Checks what a parsed mark holds (strings terminated, spans within
 * their cap) and that a refusal says why. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "marks.h"

#define NOW_NS 1764450245123456789LL

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body = fuzz_copy(data, size);
	struct spike_mark m;
	char err[256];
	int rc;

	err[0] = 0;
	rc = marks__parse_mark(body, size, NOW_NS, &m, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (!rc) {
		FUZZ_CHECK(memchr(m.reason, 0, sizeof(m.reason)) != NULL);
		FUZZ_CHECK(memchr(m.stage, 0, sizeof(m.stage)) != NULL);
		FUZZ_CHECK(!m.has_before || m.before_ns <= MARKS_MAX_SPAN_NS);
		FUZZ_CHECK(!m.has_after || m.after_ns <= MARKS_MAX_SPAN_NS);
		FUZZ_CHECK(m.time_unix_ns >= 0);
	} else if (rc == -EINVAL) {
		FUZZ_CHECK(err[0] && strlen(err) < sizeof(err));
	}
	free(body);
	return 0;
}
