// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of gzip.c: a round trip, the cap on what inflation produces (exactly at it, one byte
 * past it, a bomb whose trailer lies), and every cut of a stream. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gzip.h"

static void test_gzip(void **state)
{
	static const char text[] = "snapshots are sides written to disk";
	size_t zlen, blen, len;
	uint8_t *z, *bomb, *zeros = calloc(1, 8 << 20), *out;
	char why[128];

	(void)state;
	assert_int_equal(gzip__compress((const uint8_t *)text, sizeof(text) - 1, 6, &z, &zlen), 0);
	assert_int_equal(gzip__inflate(z, zlen, 1 << 20, &out, &len, why, sizeof(why)), 0);
	assert_int_equal(len, sizeof(text) - 1);
	assert_string_equal((char *)out, text); /* NUL-terminated */
	free(out);
	/* exactly the cap is allowed, one byte less of it is not */
	assert_int_equal(gzip__inflate(z, zlen, sizeof(text) - 1, &out, &len, why, sizeof(why)), 0);
	free(out);
	assert_int_equal(gzip__inflate(z, zlen, sizeof(text) - 2, &out, &len, why, sizeof(why)),
			 -EFBIG);
	assert_null(out);
	for (size_t cut = 0; cut < zlen; cut++)
		assert_int_equal(gzip__inflate(z, cut, 1 << 20, &out, &len, why, sizeof(why)),
				 -EBADMSG);
	free(z);

	/* 8 MiB of zeros in a few kB, and a trailer that lies about the size: refused at the cap */
	assert_int_equal(gzip__compress(zeros, 8 << 20, 9, &bomb, &blen), 0);
	assert_true(blen < 64 << 10);
	bomb[blen - 4] = 10;
	bomb[blen - 3] = bomb[blen - 2] = bomb[blen - 1] = 0;
	assert_int_equal(gzip__inflate(bomb, blen, 1 << 20, &out, &len, why, sizeof(why)), -EFBIG);
	assert_non_null(strstr(why, "more than 1048576 bytes"));
	free(bomb);
	free(zeros);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gzip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
