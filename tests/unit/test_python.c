// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of daemon/python.c: CPython 3.11's location table decoding against what CPython
 * itself says (co_lines()), and interpreter discovery in live processes. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "python.h"

/* co_linetable of this function, compiled by CPython 3.11.7 (first line 2):
 *   def f(a, b):
 *       x = a + 1
 *       if x > 3:
 *           y = [i * b
 *                for i in range(x)]
 *           return y
 *   (three blank lines)
 *       return (x,
 *               b)
 * and, per code unit, the line co_lines() gives (0: None). */
static const char table_hex[] =
    "f88000d80809884189058041d80708883182758075f002010d20f000010d20f000010d20f000010d20dd161b98"
    "4191689468f003010d20f100010d20f400010d208801e00f108808f008000d0ed80c0df003010c0ff00001050f";
static const uint32_t want[] = {0, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4,  4,  4,  5, 5, 5,
				5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,  6,  6,  6, 6, 5,
				5, 5, 5, 5, 5, 5, 5, 5, 7, 7, 11, 12, 11, 11};

static void test_linetable_matches_cpython(void **state)
{
	uint8_t table[sizeof(table_hex) / 2];
	size_t n = 0;

	for (; 2 * n + 1 < sizeof(table_hex) - 1; n++)
		sscanf(&table_hex[2 * n], "%2hhx", &table[n]);
	for (int32_t u = 0; u < (int32_t)(sizeof(want) / sizeof(want[0])); u++)
		assert_int_equal(python__linetable_line(table, n, 2, u), want[u]);
	/* before the first instruction: the first line; past the end, or no table: unknown */
	assert_int_equal(python__linetable_line(table, n, 2, -1), 2);
	assert_int_equal(python__linetable_line(table, n, 2, 46), 0);
	assert_int_equal(python__linetable_line(NULL, 0, 2, 3), 0);
	/* a table cut in the middle of an entry ends without reading past it */
	assert_int_equal(python__linetable_line(table, 3, 2, 40), 0);
}

/* A live /usr/bin/python3.11 (Debian's: _PyRuntime in .dynsym) is found; this test program is
 * not a Python. */
static void test_discovers_debian_python(void **state)
{
	struct python *p = python__new(NULL);
	struct python_stats st;
	int fds[2], r = -1;
	char c;
	pid_t pid;

	if (access("/usr/bin/python3.11", X_OK))
		skip();
	assert_non_null(p);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	if (!pid) {
		dup2(fds[1], 1);
		execl("/usr/bin/python3.11", "python3.11", "-c",
		      "import sys, time; print(1, flush=True); time.sleep(30)", NULL);
		_exit(127);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1); /* running Python code: libraries mapped */
	for (int i = 0; i < 50 && r != 1; i++)
		r = python__note_process(p, (uint32_t)pid, 1);
	assert_int_equal(r, 1);
	assert_int_equal(python__note_process(p, (uint32_t)getpid(), 1), 0);
	python__stats(p, &st);
	assert_int_equal(st.processes, 1);
	python__forget_process(p, (uint32_t)pid);
	python__stats(p, &st);
	assert_int_equal(st.processes, 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(fds[0]);
	python__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_linetable_matches_cpython),
	    cmocka_unit_test(test_discovers_debian_python),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
