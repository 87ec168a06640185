// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: a comparison side as JSON (cmp_side__from_json), the body of a saved
 * snapshot once inflated. A side read must be valid, must be written back (cmp_side__to_json)
 * and must read back the same. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmp_side.h"
#include "cmp_side_json.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_copy(data, size), *out = NULL, *again = NULL, why[256];
	struct cmp_side *side = NULL, *back = NULL;
	int rc;

	why[0] = 0;
	rc = cmp_side__from_json(text, size, &side, why, sizeof(why));
	FUZZ_CHECK(rc == 0 || rc == -EPROTONOSUPPORT || rc == -EBADMSG || rc == -ENOMEM);
	if (rc) {
		FUZZ_CHECK(side == NULL);
		if (rc != -ENOMEM)
			FUZZ_CHECK(why[0] && strlen(why) < sizeof(why));
		free(text);
		return 0;
	}
	FUZZ_CHECK(cmp_side__valid(side, why, sizeof(why)));
	/* what was read is written again and reads back the same text */
	rc = cmp_side__to_json(side, &out, why, sizeof(why));
	FUZZ_CHECK(rc == 0 || rc == -ENOMEM);
	if (!rc) {
		rc = cmp_side__from_json(out, strlen(out), &back, why, sizeof(why));
		if (rc)
			fprintf(stderr, "reading back: %s\n", why);
		FUZZ_CHECK(rc == 0 || rc == -ENOMEM);
		if (!rc) {
			FUZZ_CHECK(cmp_side__to_json(back, &again, why, sizeof(why)) == 0);
			FUZZ_CHECK(!strcmp(out, again));
		}
	}
	free(again);
	free(out);
	cmp_side__free(back);
	cmp_side__free(side);
	free(text);
	return 0;
}
