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
 * not a Python. Its code object (by id()) is named; a list's address and a pointer into the
 * first page, as a frame read mid-update may give, are no code objects: dropped and counted. */
static void test_discovers_debian_python(void **state)
{
	struct python *p = python__new(NULL);
	struct python_stats st;
	int fds[2], r = -1;
	unsigned long long code = 0, list = 0;
	struct python_frame out[3];
	struct python_line pl;
	char buf[128] = "";
	FILE *in;
	pid_t pid;

	if (access("/usr/bin/python3.11", X_OK))
		skip();
	assert_non_null(p);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	if (!pid) {
		dup2(fds[1], 1);
		execl("/usr/bin/python3.11", "python3.11", "-c",
		      "import time\n"
		      "def work():\n"
		      "    return 1\n"
		      "keep = [1, 2]\n"
		      "print(id(work.__code__), id(keep), flush=True)\n"
		      "time.sleep(30)\n",
		      NULL);
		_exit(127);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	assert_non_null(in);
	/* running Python code: libraries mapped */
	assert_non_null(fgets(buf, sizeof(buf), in));
	assert_int_equal(sscanf(buf, "%llu %llu", &code, &list), 2);
	for (int i = 0; i < 50 && r != 1; i++)
		r = python__note_process(p, (uint32_t)pid, 1);
	assert_int_equal(r, 1);
	assert_int_equal(python__note_process(p, (uint32_t)getpid(), 1), 0);
	python__stats(p, &st);
	assert_int_equal(st.processes, 1);
	/* noted again (a recheck, or another process of the same interpreter): the symbols are
	 * remembered by file, not read again */
	assert_int_equal(python__note_process(p, (uint32_t)pid, 1), 1);
	python__stats(p, &st);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.symbol_reads, 1);
	{
		/* offset 100 code units: past the prologue, no line there */
		const struct tp_py_frame frames[3] = {{list, 100}, {code, 100}, {0x68, 100}};

		assert_int_equal(python__resolve(p, (uint32_t)pid, 1, frames, 3, out), 1);
		assert_true(python__is_object(out[0].f.obj));
		assert_true(python__line(out[0].f.addr, &pl));
		assert_string_equal(pl.function, "work");
		assert_string_equal(pl.file, "<string>");
		assert_int_equal(pl.start_line, 2);
		python__stats(p, &st);
		assert_int_equal(st.not_code, 2);
		assert_int_equal(st.code_read_failed, 0);
	}
	python__forget_process(p, (uint32_t)pid);
	python__stats(p, &st);
	assert_int_equal(st.processes, 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fclose(in);
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
