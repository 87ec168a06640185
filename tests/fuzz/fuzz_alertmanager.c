// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: an Alertmanager webhook delivery (POST /api/v1/alertmanager,
 * marks__parse_alerts). Checks each alert parsed (strings terminated, a fingerprint of the
 * allowed characters, a resolved alert with an end) and that a refusal says why. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "marks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *body = fuzz_copy(data, size);
	struct spike_alert *alerts = NULL;
	char err[256];
	size_t n = 0;
	int rc;

	err[0] = 0;
	rc = marks__parse_alerts(body, size, &alerts, &n, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (!rc) {
		FUZZ_CHECK(n <= MARKS_MAX_ALERTS);
		FUZZ_CHECK(!n == !alerts);
		for (size_t i = 0; i < n; i++) {
			const struct spike_alert *a = &alerts[i];
			size_t fl = strnlen(a->fingerprint, sizeof(a->fingerprint));

			FUZZ_CHECK(fl > 0 && fl < sizeof(a->fingerprint));
			FUZZ_CHECK(strspn(a->fingerprint,
					  "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					  "abcdefghijklmnopqrstuvwxyz0123456789._-") == fl);
			FUZZ_CHECK(memchr(a->group_key, 0, sizeof(a->group_key)) != NULL);
			FUZZ_CHECK(memchr(a->stage, 0, sizeof(a->stage)) != NULL);
			FUZZ_CHECK(memchr(a->reason, 0, sizeof(a->reason)) != NULL);
			FUZZ_CHECK(a->firing || a->ends_unix_ns != 0);
		}
	} else {
		FUZZ_CHECK(alerts == NULL || n == 0);
		if (rc == -EINVAL)
			FUZZ_CHECK(err[0] && strlen(err) < sizeof(err));
	}
	free(alerts);
	free(body);
	return 0;
}
