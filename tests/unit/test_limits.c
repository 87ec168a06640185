// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the bounded tables' rules (resource_limits.h): the interning table's cap (new
 * values refused and counted, stored ones still found, room again once windows let go), the
 * spare the folded stacks take, the process set's oldest-first eviction, the [limits] keys, and the
 * HTTP connection cap. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "intern.h"
#include "pid_set.h"
#include "resource_limits.h"

static void *get(struct intern_table *t, uint64_t v)
{
	return intern_table__get(t, &v, sizeof(v), NULL);
}

static void test_intern_cap(void **state)
{
	struct intern_table *t = intern_table__new(NULL);
	void *a, *b, *c, *again;
	bool inserted = true;
	uint64_t four = 4;

	(void)state;
	intern_table__set_max(t, 3);
	assert_int_equal(intern_table__max(t), 3);
	a = get(t, 1);
	b = get(t, 2);
	c = get(t, 3);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	/* full: a new value is refused with ENOSPC and counted, twice */
	errno = 0;
	assert_null(get(t, 4));
	assert_int_equal(errno, ENOSPC);
	assert_null(get(t, 5));
	assert_int_equal(intern_table__refused(t), 2);
	assert_int_equal(intern_table__count(t), 3);
	/* a stored value is still found (a new reference, not a new value) */
	again = intern_table__get(t, &(uint64_t){2}, sizeof(uint64_t), &inserted);
	assert_ptr_equal(again, b);
	assert_false(inserted);
	assert_int_equal(intern_table__refused(t), 2);
	/* b's last reference goes (its windows expired): room for one more */
	intern_table__put(t, again);
	intern_table__put(t, b);
	assert_int_equal(intern_table__count(t), 2);
	b = intern_table__get(t, &four, sizeof(four), &inserted);
	assert_non_null(b);
	assert_true(inserted);
	assert_int_equal(*(uint64_t *)b, 4);
	assert_null(get(t, 6));
	assert_int_equal(intern_table__refused(t), 3);
	/* no cap: the table grows */
	intern_table__set_max(t, 0);
	assert_non_null(get(t, 6));
	assert_int_equal(intern_table__count(t), 4);
	intern_table__free(t);
}

/* The last eighth of the cap is the spare: only coarser stand-ins of refused values take it. */
static void test_intern_spare(void **state)
{
	struct intern_table *t = intern_table__new(NULL);

	(void)state;
	intern_table__set_max(t, 16);
	for (uint64_t v = 0; v < 14; v++)
		assert_non_null(get(t, v));
	assert_null(get(t, 14));
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(intern_table__refused(t), 1);
	/* a stored value through either door is found */
	assert_non_null(intern_table__get_spare(t, &(uint64_t){3}, sizeof(uint64_t)));
	assert_int_equal(intern_table__count(t), 14);
	assert_non_null(intern_table__get_spare(t, &(uint64_t){100}, sizeof(uint64_t)));
	assert_non_null(intern_table__get_spare(t, &(uint64_t){101}, sizeof(uint64_t)));
	assert_int_equal(intern_table__count(t), 16);
	errno = 0;
	assert_null(intern_table__get_spare(t, &(uint64_t){102}, sizeof(uint64_t)));
	assert_int_equal(errno, ENOSPC);
	/* the spare's refusals are not counted again (the value was refused first) */
	assert_int_equal(intern_table__refused(t), 1);
	assert_null(get(t, 15));
	assert_int_equal(intern_table__refused(t), 2);
	intern_table__free(t);
}

static void test_pid_set_evict_oldest(void **state)
{
	struct pid_set s;

	(void)state;
	pid_set__init(&s);
	assert_int_equal(pid_set__evict_oldest(&s), 0);
	pid_set__add(&s, 300, 30);
	pid_set__add(&s, 100, 50);
	pid_set__add(&s, 200, 10);
	pid_set__add(&s, 400, 40);
	/* a reused pid takes its new start */
	pid_set__add(&s, 300, 60);
	assert_int_equal(s.count, 4);
	assert_int_equal(pid_set__evict_oldest(&s), 200);
	assert_false(pid_set__has(&s, 200, 10));
	assert_int_equal(pid_set__evict_oldest(&s), 400);
	assert_int_equal(pid_set__evict_oldest(&s), 100);
	assert_true(pid_set__has(&s, 300, 60));
	assert_int_equal(pid_set__evict_oldest(&s), 300);
	assert_int_equal(s.count, 0);
	assert_int_equal(pid_set__evict_oldest(&s), 0);

	/* many, past a growth, with probe chains: the order is by start and the rest stay found */
	for (uint32_t i = 1; i <= 5000; i++)
		pid_set__add(&s, i * 7919 % 65521 + 1, 100000 - i);
	for (uint32_t i = 5000; i > 4990; i--)
		assert_int_equal(pid_set__evict_oldest(&s), i * 7919 % 65521 + 1);
	for (uint32_t i = 1; i <= 4990; i++)
		assert_true(pid_set__has(&s, i * 7919 % 65521 + 1, 100000 - i));
	assert_int_equal(s.count, 4990);
	/* starts move with their pids through growth and backward-shift deletion */
	for (uint32_t i = 1; i <= 4990; i += 7)
		assert_true(pid_set__del(&s, i * 7919 % 65521 + 1));
	for (uint32_t i = 1; i <= 4990; i++)
		assert_true(pid_set__has(&s, i * 7919 % 65521 + 1, 100000 - i) ==
			    ((i - 1) % 7 != 0));
	assert_false(pid_set__del(&s, 1 * 7919 % 65521 + 1));
	pid_set__free(&s);
}

static void test_opts(void **state)
{
	struct limits_opts o = {0};
	char msg[256];

	(void)state;
	assert_int_equal(limits_opts__set(&o, "stacks", "1000", msg, sizeof(msg)), 0);
	assert_int_equal(o.v[LIMIT_STACKS], 1000);
	assert_int_equal(limits_opts__set(&o, "known_processes", "32768", msg, sizeof(msg)), 0);
	assert_int_equal(limits_opts__set(&o, "known_processes", "32769", msg, sizeof(msg)),
			 -EINVAL);
	assert_non_null(strstr(msg, "'32769': give an integer from 1 to 32768"));
	assert_int_equal(limits_opts__set(&o, "tasks", "0", msg, sizeof(msg)), -EINVAL);
	assert_int_equal(limits_opts__set(&o, "http_connections", "lots", msg, sizeof(msg)),
			 -EINVAL);
	assert_int_equal(limits_opts__set(&o, "threads", "1", msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "unknown key 'threads'; allowed: stacks, tasks"));
	for (int i = 0; i < LIMITS_NR_KEYS; i++)
		assert_true(limits__is_key(limits_keys[i]));
	assert_false(limits__is_key("threads"));
}

static void test_http_connections(void **state)
{
	struct limits_http l = {.max = 2};
	void *ctx = NULL;

	(void)state;
	assert_int_equal(limits_http_accept(&l, NULL, 0), MHD_YES);
	limits_http_notify(&l, NULL, &ctx, MHD_CONNECTION_NOTIFY_STARTED);
	assert_int_equal(limits_http_accept(&l, NULL, 0), MHD_YES);
	limits_http_notify(&l, NULL, &ctx, MHD_CONNECTION_NOTIFY_STARTED);
	/* two open: the third is closed at accept and counted */
	assert_int_equal(limits_http_accept(&l, NULL, 0), MHD_NO);
	assert_int_equal(limits_http_accept(&l, NULL, 0), MHD_NO);
	assert_int_equal(l.refused, 2);
	limits_http_notify(&l, NULL, &ctx, MHD_CONNECTION_NOTIFY_CLOSED);
	assert_int_equal(l.open, 1);
	assert_int_equal(limits_http_accept(&l, NULL, 0), MHD_YES);
	/* max 0: the default */
	l = (struct limits_http){.open = LIMITS_DEFAULT_HTTP_CONNECTIONS - 1};
	assert_int_equal(limits_http_accept(&l, NULL, 0), MHD_YES);
	l.open++;
	assert_int_equal(limits_http_accept(&l, NULL, 0), MHD_NO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_intern_cap),		 cmocka_unit_test(test_intern_spare),
	    cmocka_unit_test(test_pid_set_evict_oldest), cmocka_unit_test(test_opts),
	    cmocka_unit_test(test_http_connections),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
