// SPDX-License-Identifier: GPL-2.0-only
/* push.h's options: what [push] and --push-url accept and refuse, and how they go together. The
 * sending itself is tests/integration/test_push.py's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "push.h"

static int set(struct push_opts *o, const char *key, const char *value, char *msg)
{
	msg[0] = '\0';
	return push_opts__set(o, key, value, msg, 256);
}

static void test_accepts(void **state)
{
	struct push_opts o = {0};
	char msg[256];

	(void)state;
	assert_int_equal(set(&o, "url", "https://pyroscope.example:4040/", msg), 0);
	assert_int_equal(set(&o, "app", "shop.backend", msg), 0);
	assert_int_equal(set(&o, "token_file", "/etc/tailprof/token", msg), 0);
	assert_int_equal(set(&o, "queue_windows", "120", msg), 0);
	assert_int_equal(o.queue_windows, 120);
	assert_int_equal(set(&o, "labels", "env=prod,dc=fra1,zone=eu-west-1a", msg), 0);
	assert_int_equal(set(&o, "drop_labels", "pid,tid", msg), 0);
	assert_string_equal(o.drop_labels, "pid,tid");
	assert_int_equal(push_opts__check(&o, msg, sizeof(msg)), 0);
	/* a second value replaces the first (a flag after the config's key) */
	assert_int_equal(set(&o, "url", "http://10.0.0.1:4040", msg), 0);
	assert_string_equal(o.url, "http://10.0.0.1:4040");
	push_opts__free(&o);
	assert_null(o.url);
}

static void test_refuses(void **state)
{
	static const char *const bad[][2] = {
	    {"url", "ftp://x"},
	    {"url", "pyroscope:4040"},
	    {"app", "my app"},
	    {"app", ""},
	    {"token_file", "token"},
	    {"queue_windows", "0"},
	    {"queue_windows", "100001"},
	    {"queue_windows", "-1"},
	    {"labels", "env"},
	    {"labels", "env=prod,"},
	    {"labels", "host=x"},
	    {"labels", "spike=1"},
	    {"labels", "1x=y"},
	    {"labels", "env=a b"},
	    {"labels", "env={x}"},
	    {"keep_labels", "pid,,tid"},
	    {"drop_labels", "pid tid"},
	    {"keep_labels", ""},
	    {"nope", "1"},
	};
	struct push_opts o = {0};
	char msg[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(set(&o, bad[i][0], bad[i][1], msg), -EINVAL);
		assert_true(msg[0]);
	}
	push_opts__free(&o);
}

static void test_check(void **state)
{
	struct push_opts o = {0};
	char msg[256];

	(void)state;
	assert_int_equal(push_opts__check(&o, msg, sizeof(msg)), 0); /* no push at all */
	assert_int_equal(set(&o, "app", "x", msg), 0);
	assert_int_equal(push_opts__check(&o, msg, sizeof(msg)), -EINVAL); /* keys, no url */
	assert_non_null(strstr(msg, "url"));
	assert_int_equal(set(&o, "url", "http://127.0.0.1:4040", msg), 0);
	assert_int_equal(set(&o, "keep_labels", "comm", msg), 0);
	assert_int_equal(push_opts__check(&o, msg, sizeof(msg)), 0);
	assert_int_equal(set(&o, "drop_labels", "pid", msg), 0);
	assert_int_equal(push_opts__check(&o, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "exclude"));
	push_opts__free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_accepts),
	    cmocka_unit_test(test_refuses),
	    cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
