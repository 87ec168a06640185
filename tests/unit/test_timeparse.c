// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of duration and time parsing and formatting. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sysinfo.h"
#include "timeparse.h"

static void test_durations(void **state)
{
	uint64_t ns;

	assert_int_equal(tp_parse_duration("500ms", &ns), 0);
	assert_int_equal(ns, 500 * NSEC_PER_MSEC);
	assert_int_equal(tp_parse_duration("2s", &ns), 0);
	assert_int_equal(ns, 2 * NSEC_PER_SEC);
	assert_int_equal(tp_parse_duration("10m", &ns), 0);
	assert_int_equal(ns, 600 * NSEC_PER_SEC);
	assert_int_equal(tp_parse_duration("1h30m", &ns), 0);
	assert_int_equal(ns, 5400 * NSEC_PER_SEC);
	assert_int_equal(tp_parse_duration("250us", &ns), 0);
	assert_int_equal(ns, 250000);
	assert_int_equal(tp_parse_duration("", &ns), -EINVAL);
	assert_int_equal(tp_parse_duration("10", &ns), -EINVAL);
	assert_int_equal(tp_parse_duration("5 m", &ns), -EINVAL);
	assert_int_equal(tp_parse_duration("-5s", &ns), -EINVAL);
	assert_int_equal(tp_parse_duration("3d", &ns), -EINVAL);
	assert_int_equal(tp_parse_duration("1.5s", &ns), -EINVAL);
	assert_int_equal(tp_parse_duration("99999999999999999999h", &ns), -ERANGE);
}

static void test_times(void **state)
{
	int64_t ns;

	assert_int_equal(tp_parse_time("1970-01-01T00:00:00Z", &ns), 0);
	assert_int_equal(ns, 0);
	assert_int_equal(tp_parse_time("2026-11-29T21:04:05Z", &ns), 0);
	assert_int_equal(ns, 1795986245LL * 1000000000LL);
	assert_int_equal(tp_parse_time("2026-11-29T22:04:05.250+01:00", &ns), 0);
	assert_int_equal(ns, 1795986245LL * 1000000000LL + 250000000);
	assert_int_equal(tp_parse_time("1795986245", &ns), 0);
	assert_int_equal(ns, 1795986245LL * 1000000000LL);
	assert_int_equal(tp_parse_time("1795986245.5", &ns), 0);
	assert_int_equal(ns, 1795986245LL * 1000000000LL + 500000000);
	assert_int_equal(tp_parse_time("2026-13-01T00:00:00Z", &ns), -EINVAL);
	assert_int_equal(tp_parse_time("2026-11-29T21:04:05", &ns), -EINVAL);
	assert_int_equal(tp_parse_time("yesterday", &ns), -EINVAL);
	assert_int_equal(tp_parse_time("", &ns), -EINVAL);
	assert_int_equal(tp_parse_time("12x", &ns), -EINVAL);
	/* int64 ns of Unix time: 1970 to 2262-04-11 */
	assert_int_equal(tp_parse_time("9999-12-31T23:59:59Z", &ns), -ERANGE);
	assert_int_equal(tp_parse_time("2262-04-12T00:00:00Z", &ns), -ERANGE);
	assert_int_equal(tp_parse_time("9223372037", &ns), -ERANGE);
	assert_int_equal(tp_parse_time("99999999999999999999999", &ns), -ERANGE);
	assert_int_equal(tp_parse_time("1969-12-31T23:59:59Z", &ns), -ERANGE);
	assert_int_equal(tp_parse_time("2262-04-11T00:00:00Z", &ns), 0);
}

static void test_format(void **state)
{
	char buf[32];

	assert_string_equal(tp_format_rfc3339(1795986245250000000LL, buf, sizeof(buf)),
			    "2026-11-29T21:04:05.250Z");
	assert_string_equal(tp_format_duration(300 * NSEC_PER_SEC, buf, sizeof(buf)), "5m0s");
	assert_string_equal(tp_format_duration(3723 * NSEC_PER_SEC, buf, sizeof(buf)), "1h2m3s");
	assert_string_equal(tp_format_duration(1500 * NSEC_PER_MSEC, buf, sizeof(buf)), "1.500s");
	assert_string_equal(tp_format_duration(250 * NSEC_PER_MSEC, buf, sizeof(buf)), "250ms");
}

static void test_uint(void **state)
{
	uint64_t v;

	assert_int_equal(tp_parse_uint("99", 1, 10000, &v), 0);
	assert_int_equal(v, 99);
	assert_int_equal(tp_parse_uint("0", 1, 10000, &v), -ERANGE);
	assert_int_equal(tp_parse_uint("10001", 1, 10000, &v), -ERANGE);
	assert_int_equal(tp_parse_uint("99999999999999999999999", 1, 10000, &v), -ERANGE);
	assert_int_equal(tp_parse_uint(" 5", 1, 10000, &v), -EINVAL);
	assert_int_equal(tp_parse_uint("+5", 1, 10000, &v), -EINVAL);
	assert_int_equal(tp_parse_uint("5x", 1, 10000, &v), -EINVAL);
	assert_int_equal(tp_parse_uint("", 1, 10000, &v), -EINVAL);
}

static void test_decimal(void **state)
{
	double d;

	(void)state;
	assert_int_equal(tp_parse_decimal("2.5", &d), 0);
	assert_true(d == 2.5);
	assert_int_equal(tp_parse_decimal("5e-4", &d), 0);
	assert_true(d == 5e-4);
	assert_int_equal(tp_parse_decimal("-1", &d), 0);
	assert_true(d == -1);
	/* strtod takes these; a flag or a query must not */
	assert_int_equal(tp_parse_decimal("0x1p-3", &d), -EINVAL);
	assert_int_equal(tp_parse_decimal("inf", &d), -EINVAL);
	assert_int_equal(tp_parse_decimal("nan", &d), -EINVAL);
	assert_int_equal(tp_parse_decimal(" 2", &d), -EINVAL);
	assert_int_equal(tp_parse_decimal("", &d), -EINVAL);
	assert_int_equal(tp_parse_decimal("1e999", &d), -EINVAL);
	assert_int_equal(tp_parse_decimal("1.2.3", &d), -EINVAL);
	assert_int_equal(tp_parse_decimal("e", &d), -EINVAL);
}

static void test_size(void **state)
{
	uint64_t v;

	assert_int_equal(tp_parse_size("4096", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(tp_parse_size("64k", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 64 << 10);
	assert_int_equal(tp_parse_size("256M", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 256 << 20);
	assert_int_equal(tp_parse_size("1G", 0, UINT64_MAX, &v), 0);
	assert_int_equal(v, 1ull << 30);
	assert_int_equal(tp_parse_size("1g", 0, 1ull << 30, &v), 0);
	assert_int_equal(tp_parse_size("1025M", 0, 1ull << 30, &v), -ERANGE);
	assert_int_equal(tp_parse_size("1K", 2048, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(tp_parse_size("17179869184G", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(tp_parse_size("99999999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(tp_parse_size("", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(tp_parse_size("M", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(tp_parse_size("1MB", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(tp_parse_size("1T", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(tp_parse_size(" 1", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(tp_parse_size("-1", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(tp_parse_size("1.5G", 0, UINT64_MAX, &v), -EINVAL);
}

static void test_cpu_list(void **state)
{
	uint8_t m[8];

	assert_int_equal(sysinfo__parse_cpu_list("0-3,6\n", m, 8), 5);
	assert_true(m[0] && m[3] && !m[4] && !m[5] && m[6] && !m[7]);
	assert_int_equal(sysinfo__parse_cpu_list("1", m, 8), 1);
	assert_true(!m[0] && m[1]);
	assert_int_equal(sysinfo__parse_cpu_list("3-1", m, 8), -EINVAL);
	assert_int_equal(sysinfo__parse_cpu_list("a", m, 8), -EINVAL);
}

/* The wall-clock offset: CLOCK_REALTIME - CLOCK_MONOTONIC (added to a monotonic time it gives a
 * Unix time of 2020 or later), the same twice within 1 ms, and within 1 ms of a plain difference
 * of the two clocks. */
static void test_wall_offset(void **state)
{
	int64_t a = sysinfo__wall_offset_ns(), plain, b;

	plain = sysinfo__real_ns() - (int64_t)sysinfo__mono_ns();
	b = sysinfo__wall_offset_ns();
	assert_true(a + (int64_t)sysinfo__mono_ns() >= 1577836800LL * 1000000000LL);
	assert_true(llabs(a - b) < 1000000);
	assert_true(llabs(a - plain) < 1000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_durations), cmocka_unit_test(test_times),
	    cmocka_unit_test(test_format),    cmocka_unit_test(test_uint),
	    cmocka_unit_test(test_cpu_list),  cmocka_unit_test(test_size),
	    cmocka_unit_test(test_decimal),   cmocka_unit_test(test_wall_offset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
