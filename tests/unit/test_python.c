// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of daemon/python.c: the location table decoding (CPython 3.11 to 3.13) against what
 * CPython itself says (co_lines()), interpreter discovery in live processes (Debian's 3.11,
 * pyenv's 3.12 and 3.13), 3.12's entry frames, and the interpreters refused. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "python.h"
#include "python_versions.h"
#include "test_files.h"

/* co_linetable of this function as compiled by CPython 3.11.7, 3.12.1 and 3.13.0 (first line 2):
 *   def f(a, b):
 *       x = a + 1
 *       if x > 3:
 *           y = [i * b
 *                for i in range(x)]
 *           return y
 *   (three blank lines)
 *       return (x,
 *               b)
 * and, per code unit, the line co_lines() gives (0: None). 3.12 inlines the comprehension. */
struct linetable_case {
	const char *version;
	const char *hex;
	uint32_t want[64];
	int32_t units;
};

static const struct linetable_case linetables[] = {
    {"3.11.7",
     "f88000d80809884189058041d80708883182758075f002010d20f000010d20f000010d20f000010d20dd161b98"
     "4191689468f003010d20f100010d20f400010d208801e00f108808f008000d0ed80c0df003010c0ff00001050f",
     {0, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6,  6,  6,  6,
      6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 5, 5, 7, 7, 11, 12, 11, 11},
     46},
    {"3.12.1",
     "8000d80809884189058041d8070888318275e4161b98419368f603010d20d81112f003000e0f90118b55f00001"
     "0d208801f000010d20e00f108808f008000d0ed80c0df003010c0ff00001050ff9f20d010d20",
     {2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6,  6,  6,  6,  6, 6, 5, 5, 5, 5,
      5, 5, 5, 6, 5, 5, 5, 5, 5, 5, 5, 5, 5, 7, 7, 11, 12, 11, 11, 0, 0, 5, 5, 5},
     49},
    {"3.13.0",
     "8000d80809884189058041d8070888318375e4161b98419468f303010d20d9161e9011f003000e0f8c55d9161e"
     "f00300090af000010d20e00f108808f008000d0ed80c0df003010c0ff00001050ff9f20d010d20",
     {2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6,  6,  6,  6,  6, 6, 6, 5, 5, 5,
      5, 6, 6, 6, 5, 5, 5, 5, 5, 5, 6, 6, 5, 5, 7, 7, 11, 12, 11, 11, 0, 0, 5, 5, 5},
     51},
};

static size_t from_hex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;

	for (; hex[2 * n] && hex[2 * n + 1] && n < cap; n++)
		sscanf(&hex[2 * n], "%2hhx", &out[n]);
	return n;
}

static void test_linetable_matches_cpython(void **state)
{
	for (size_t c = 0; c < sizeof(linetables) / sizeof(linetables[0]); c++) {
		const struct linetable_case *lc = &linetables[c];
		uint8_t table[256];
		size_t n = from_hex(lc->hex, table, sizeof(table));

		for (int32_t u = 0; u < lc->units; u++)
			if (python__linetable_line(table, n, 2, u) != lc->want[u])
				fail_msg("%s: unit %d: line %u, want %u", lc->version, u,
					 python__linetable_line(table, n, 2, u), lc->want[u]);
		/* before the first instruction: the first line; past the end: unknown */
		assert_int_equal(python__linetable_line(table, n, 2, -1), 2);
		assert_int_equal(python__linetable_line(table, n, 2, lc->units), 0);
		/* a table cut in the middle of an entry ends without reading past it */
		assert_int_equal(python__linetable_line(table, 3, 2, 40), 0);
	}
	assert_int_equal(python__linetable_line(NULL, 0, 2, 3), 0);
}

/* Python: unit_lines(co), the line of each code unit of co as co_lines() gives it (0 for
 * None); the truth the location table decoder is held to. */
#define UNIT_LINES_PY                                                                              \
	"def unit_lines(co):\n"                                                                    \
	"    lines = [0] * (len(co.co_code) // 2)\n"                                               \
	"    for a, b, l in co.co_lines():\n"                                                      \
	"        for u in range(a // 2, b // 2): lines[u] = l or 0\n"                              \
	"    return lines\n"

/* Every code object of a few standard library modules, as the interpreter at python compiles
 * them: each line "FIRSTLINENO HEX LINE,LINE,..." (the line of each code unit per co_lines(), 0
 * for None), decoded here and compared. */
static const char sweep_script[] =
    "import argparse, json.decoder, email.message, asyncio.base_events, dataclasses, inspect, "
    "typing\n" UNIT_LINES_PY "seen = {}\n"
    "def walk(co):\n"
    "    if id(co) in seen: return\n"
    "    seen[id(co)] = co\n"
    "    lines = unit_lines(co)\n"
    "    print(co.co_firstlineno, co.co_linetable.hex() or '-', ','.join(map(str, lines)))\n"
    "    for c in co.co_consts:\n"
    "        if hasattr(c, 'co_lines'): walk(c)\n"
    "import sys\n"
    "for m in ('argparse', 'json.decoder', 'email.message', 'asyncio.base_events',\n"
    "          'dataclasses', 'inspect', 'typing'):\n"
    "    mod = sys.modules[m]\n"
    "    walk(compile(open(mod.__file__).read(), mod.__file__, 'exec'))\n";

/* Runs python -c script with its stdout on the returned stream; *pid is the child; its stdin is
 * a pipe written at *to_child when that is not NULL. */
static FILE *spawn_python_io(const char *python, const char *script, pid_t *pid, int *to_child)
{
	int fds[2], ins[2] = {-1, -1};
	FILE *in;

	assert_int_equal(pipe(fds), 0);
	if (to_child)
		assert_int_equal(pipe(ins), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (!*pid) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		if (to_child) {
			dup2(ins[0], 0);
			close(ins[0]);
			close(ins[1]);
		}
		execl(python, python, "-c", script, NULL);
		_exit(127);
	}
	close(fds[1]);
	if (to_child) {
		close(ins[0]);
		*to_child = ins[1];
	}
	in = fdopen(fds[0], "r");
	assert_non_null(in);
	return in;
}

static FILE *spawn_python(const char *python, const char *script, pid_t *pid)
{
	return spawn_python_io(python, script, pid, NULL);
}

/* Notes pid to p until python__note_process() knows it for an interpreter (up to 50 tries: a
 * process just started may not have mapped its interpreter yet), or fails the test. */
static void note_until_known(struct python *p, pid_t pid)
{
	int r = -1;

	for (int i = 0; i < 50 && r != 1; i++)
		r = python__note_process(p, (uint32_t)pid, 1);
	assert_int_equal(r, 1);
}

static void linetable_sweep(const char *python)
{
	size_t cap = 0, objects = 0, units = 0, table_cap = 1 << 20;
	uint8_t *table = malloc(table_cap);
	char *line = NULL;
	int status = -1;
	FILE *in;
	pid_t pid;

	if (access(python, X_OK))
		skip();
	assert_non_null(table);
	in = spawn_python(python, sweep_script, &pid);
	while (getline(&line, &cap, in) > 0) {
		char *hex = strchr(line, ' '), *lines, *save = NULL;
		int32_t first = atoi(line), u = 0;
		size_t n;

		assert_non_null(hex);
		lines = strchr(++hex, ' ');
		assert_non_null(lines);
		*lines++ = 0;
		n = *hex == '-' ? 0 : from_hex(hex, table, table_cap);
		for (char *tok = strtok_r(lines, ",\n", &save); tok;
		     tok = strtok_r(NULL, ",\n", &save), u++) {
			uint32_t want = (uint32_t)strtoul(tok, NULL, 10),
				 got = python__linetable_line(table, n, first, u);

			if (got != want)
				fail_msg("%s: code object %zu (first line %d): unit %d: line %u, "
					 "want %u",
					 python, objects, first, u, got, want);
			units++;
		}
		objects++;
	}
	fclose(in);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	printf("  %s: %zu code objects, %zu code units\n", python, objects, units);
	assert_true(objects > 500 && units > 50000);
	free(line);
	free(table);
}

static void test_linetable_sweep_311(void **state)
{
	linetable_sweep("/usr/bin/python3.11");
}

static void test_linetable_sweep_312(void **state)
{
	linetable_sweep("/root/.pyenv/versions/3.12.1/bin/python3.12");
}

static void test_linetable_sweep_313(void **state)
{
	linetable_sweep("/root/.pyenv/versions/3.13.0/bin/python3.13");
}

/* A live python (Debian's /usr/bin/python3.11: _PyRuntime in .dynsym; pyenv's 3.12 and 3.13:
 * libpython3.1X.so) is found; this test program is not a Python. Its code object (by id()) is
 * named; a list's address and a pointer into the first page, as a frame read mid-update may
 * give, are no code objects: dropped and counted. From 3.12 (cstack), the eval loop's own entry
 * frames (owner FRAME_OWNED_BY_CSTACK) are dropped without being read, the frame inside one
 * marked entry, or an empty entry written when there is none. */
static void check_discovery(const char *python, bool cstack)
{
	struct python *p = python__new(NULL);
	struct python_stats st;
	unsigned long long code = 0, list = 0, bad = 0;
	struct python_frame out[8];
	struct python_line pl;
	char buf[128] = "";
	FILE *in;
	pid_t pid;

	if (access(python, X_OK))
		skip();
	assert_non_null(p);
	in = spawn_python(
	    python,
	    "import time\n"
	    "def work():\n"
	    "    return 1\n"
	    "keep = [1, 2]\n"
	    "ns = {}\n"
	    "exec(compile('def w():\\n    return 2\\n', '/x/b\\udcff.py', 'exec'), ns)\n"
	    "print(id(work.__code__), id(keep), id(ns['w'].__code__), flush=True)\n"
	    "time.sleep(30)\n",
	    &pid);
	/* running Python code: libraries mapped */
	assert_non_null(fgets(buf, sizeof(buf), in));
	assert_int_equal(sscanf(buf, "%llu %llu %llu", &code, &list, &bad), 3);
	note_until_known(p, pid);
	assert_int_equal(python__note_process(p, (uint32_t)getpid(), 1), 0);
	python__stats(p, &st);
	assert_int_equal(st.processes, 1);
	/* noted again (a recheck, or another process of the same interpreter): the symbols are
	 * remembered by file, not read again */
	{
		uint64_t stats = st.symbol_stats;

		assert_int_equal(python__note_process(p, (uint32_t)pid, 1), 1);
		python__stats(p, &st);
		assert_int_equal(st.processes, 1);
		assert_int_equal(st.symbol_reads, 1);
		/* the maps showed the file found a moment ago: not even a stat */
		assert_true(stats >= 1);
		assert_int_equal(st.symbol_stats, stats);
	}
	{
		/* offset 100 code units: past the prologue, no line there */
		const struct tp_py_frame frames[3] = {{list, 100}, {code, 100}, {0x68, 100}};

		assert_int_equal(python__resolve(p, (uint32_t)pid, 1, frames, 3, false, out), 1);
		assert_true(python__is_object(out[0].f.obj));
		assert_false(out[0].entry);
		assert_true(python__line(out[0].f.addr, &pl));
		assert_string_equal(pl.function, "work");
		assert_string_equal(pl.file, "<string>");
		assert_int_equal(pl.start_line, 2);
		python__stats(p, &st);
		assert_int_equal(st.not_code, 2);
		assert_int_equal(st.code_read_failed, 0);
	}
	{
		/* a file name with an undecodable byte (PEP 383: a lone surrogate) is UTF-8, U+FFFD
		 * in its place */
		const struct tp_py_frame frames[1] = {{bad, 100}};

		assert_int_equal(python__resolve(p, (uint32_t)pid, 1, frames, 1, false, out), 1);
		assert_true(python__line(out[0].f.addr, &pl));
		assert_string_equal(pl.function, "w");
		assert_string_equal(pl.file, "/x/b\xef\xbf\xbd.py");
	}
	if (cstack) {
		const uint64_t cs = 3ull << TP_PY_INFO_OWNER_SHIFT; /* FRAME_OWNED_BY_CSTACK */
		/* innermost first: an entry frame with nothing inside (a native eval frame
		 * between two entries), two frames, an entry, an incomplete frame (3.12's fresh
		 * frame: one unit before the first), an entry, the outermost frame */
		const struct tp_py_frame frames[7] = {
		    {list, cs},		 {code, 100}, {code, 100}, {list, cs},
		    {code, 0xffffffffu}, {list, cs},  {code, 100},
		};
		struct python_stats before;

		python__stats(p, &before);
		assert_int_equal(python__resolve(p, (uint32_t)pid, 1, frames, 7, false, out), 5);
		assert_null(out[0].f.obj);
		assert_true(out[0].entry);
		assert_true(python__is_object(out[1].f.obj) && !out[1].entry);
		assert_true(python__is_object(out[2].f.obj) && out[2].entry);
		assert_null(out[3].f.obj);
		assert_true(out[3].entry);
		assert_true(python__is_object(out[4].f.obj) && !out[4].entry);
		python__stats(p, &st);
		assert_int_equal(st.not_code, before.not_code);
		assert_int_equal(st.incomplete, before.incomplete + 1);
		assert_int_equal(st.frames, before.frames + 3);
	} else {
		/* 3.11: is_entry comes with the frame */
		const struct tp_py_frame frames[2] = {{code, 100 | TP_PY_INFO_ENTRY}, {code, 100}};

		assert_int_equal(python__resolve(p, (uint32_t)pid, 1, frames, 2, false, out), 2);
		assert_true(out[0].entry);
		assert_false(out[1].entry);
	}
	python__forget_process(p, (uint32_t)pid, 0);
	python__stats(p, &st);
	assert_int_equal(st.processes, 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fclose(in);
	python__free(p);
}

/* A code object freed and another made at its address, with the same qualified name (every
 * module's is the interned "<module>"), first line and location table but another file, is
 * read again at the next drain (3.13 reused <frozen site>'s address for the main script's
 * <module>, which kept site's file and lines). */
static void check_reused_code_address(const char *python)
{
	struct python *p = python__new(NULL);
	unsigned long long first = 0, second = 0;
	struct python_frame out[1];
	struct python_line pl;
	char buf[128] = "";
	int to_child;
	FILE *in;
	pid_t pid;

	if (access(python, X_OK))
		skip();
	assert_non_null(p);
	in = spawn_python_io(python,
			     "import sys\n"
			     "c0 = compile('x = 1\\n', 'zero.py', 'exec')\n"
			     "c1 = c0.replace(co_filename='first.py')\n"
			     "print(id(c1), flush=True)\n"
			     "sys.stdin.readline()\n"
			     "del c1\n"
			     "c2 = c0.replace(co_filename='second.py')\n"
			     "print(id(c2), flush=True)\n"
			     "sys.stdin.readline()\n",
			     &pid, &to_child);
	assert_non_null(fgets(buf, sizeof(buf), in));
	assert_int_equal(sscanf(buf, "%llu", &first), 1);
	note_until_known(p, pid);
	{
		const struct tp_py_frame frames[1] = {{first, 0}};

		python__drain_begin(p, true);
		assert_int_equal(python__resolve(p, (uint32_t)pid, 1, frames, 1, false, out), 1);
		assert_true(python__line(out[0].f.addr, &pl));
		assert_string_equal(pl.function, "<module>");
		assert_string_equal(pl.file, "first.py");
	}
	assert_int_equal(write(to_child, "\n", 1), 1);
	assert_non_null(fgets(buf, sizeof(buf), in));
	assert_int_equal(sscanf(buf, "%llu", &second), 1);
	if (second == first) {
		const struct tp_py_frame frames[1] = {{second, 0}};

		/* a drain between ticks keeps the last check */
		python__drain_begin(p, false);
		assert_int_equal(python__resolve(p, (uint32_t)pid, 1, frames, 1, false, out), 1);
		assert_true(python__line(out[0].f.addr, &pl));
		assert_string_equal(pl.file, "first.py");
		/* unless the sample's stack is new to BPF: then at once */
		assert_int_equal(python__resolve(p, (uint32_t)pid, 1, frames, 1, true, out), 1);
		assert_true(python__line(out[0].f.addr, &pl));
		assert_string_equal(pl.file, "second.py");
		python__drain_begin(p, true);
		assert_int_equal(python__resolve(p, (uint32_t)pid, 1, frames, 1, false, out), 1);
		assert_true(python__line(out[0].f.addr, &pl));
		assert_string_equal(pl.file, "second.py");
	}
	close(to_child);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fclose(in);
	python__free(p);
	if (second != first)
		skip(); /* the allocator put it elsewhere: nothing to check */
}

static void test_reused_code_address_311(void **state)
{
	check_reused_code_address("/usr/bin/python3.11");
}

static void test_reused_code_address_313(void **state)
{
	check_reused_code_address("/root/.pyenv/versions/3.13.0/bin/python3.13");
}

/* Two processes of python running script, each past its first line of output (line[i]). */
static void spawn_two(const char *python, const char *script, FILE *in[2], pid_t pid[2],
		      char line[2][128])
{
	for (int i = 0; i < 2; i++) {
		in[i] = spawn_python(python, script, &pid[i]);
		assert_non_null(fgets(line[i], sizeof(line[i]), in[i]));
	}
}

static void kill_two(FILE *in[2], const pid_t pid[2])
{
	for (int i = 0; i < 2; i++) {
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
		fclose(in[i]);
	}
}

/* What an exec record would tell of process pid (its executable's identity from /proc/PID/exe,
 * its start_code from field 26 of /proc/PID/stat), walker_set as given. */
static struct python_exec exec_of(pid_t pid, bool walker_set)
{
	char path[64];
	struct python_exec x = {.walker_set = walker_set};
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	assert_int_equal(stat(path, &st), 0);
	x.exe_dev = st.st_dev;
	x.exe_kdev = (major(st.st_dev) << 20) | minor(st.st_dev);
	x.exe_ino = st.st_ino;
	x.start_code = test_proc_stat_field(pid, 26); /* startcode */
	assert_true(x.start_code != 0);
	return x;
}

/* An interpreter that is its executable's own code (Debian's python3.11), found in a process
 * whose exec record was noted, is given to the exec program; a later process of that executable,
 * elsewhere in memory (ASLR), is known at its exec with the py_procs entry a read of its maps
 * would have given, and a code object built into the file is named there with no read. An
 * interpreter in a libpython (pyenv's 3.12) is not given: its place is not the executable's. */
static void check_exec_template(const char *python, bool in_executable)
{
	static const char script[] = "import _frozen_importlib, time\n"
				     "print(id(_frozen_importlib._find_and_load.__code__), "
				     "flush=True)\n"
				     "time.sleep(30)\n";
	struct python *p = python__new(NULL), *q = python__new(NULL);
	char line[2][128];
	FILE *in[2];
	pid_t pid[2];
	struct tp_py_proc by_exec, by_read;
	struct python_exec x[2];
	unsigned long long frozen[2];
	struct python_stats st;
	struct python_frame out[1];
	struct python_line pl;

	if (access(python, X_OK))
		skip();
	spawn_two(python, script, in, pid, line);
	for (int i = 0; i < 2; i++) {
		frozen[i] = strtoull(line[i], NULL, 10);
		x[i] = exec_of(pid[i], i == 1);
	}
	/* the first: read, and (where it can be) given to the exec program */
	assert_int_equal(python__note_exec(p, (uint32_t)pid[0], 1, &x[0]), 0);
	note_until_known(p, pid[0]);
	python__stats(p, &st);
	assert_int_equal(st.exes, in_executable ? 1 : 0);
	/* the second at its exec: the exec program set its entry where it had the executable */
	assert_int_equal(python__note_exec(p, (uint32_t)pid[1], 1, &x[1]), in_executable ? 1 : 0);
	python__stats(p, &st);
	assert_int_equal(st.from_exec, in_executable ? 1 : 0);
	if (in_executable) {
		uint64_t stats = st.symbol_stats;
		struct tp_py_proc moved;
		struct python_exec y = x[1];

		/* known: no read, not even of the file's symbols */
		assert_int_equal(python__note_process(p, (uint32_t)pid[1], 1), 1);
		python__stats(p, &st);
		assert_int_equal(st.symbol_stats, stats);
		assert_int_equal(python__walker_entry(p, (uint32_t)pid[1], 1, &by_exec), 0);
		note_until_known(q, pid[1]);
		assert_int_equal(python__walker_entry(q, (uint32_t)pid[1], 1, &by_read), 0);
		assert_int_equal(by_exec.runtime, by_read.runtime);
		assert_int_equal(by_exec.version, by_read.version);
		assert_int_equal(by_exec.image_lo, by_read.image_lo);
		assert_int_equal(by_exec.image_hi, by_read.image_hi);
		assert_int_equal(by_exec.image_key, by_read.image_key);
		/* read for its old image in a drain that ended after its exec, its entry
		 * deleted at the exec record with the exec program's: written again */
		python__forget_process(p, (uint32_t)pid[1], 0);
		note_until_known(p, pid[1]);
		python__forget_process(p, (uint32_t)pid[1], 1);
		assert_int_equal(python__note_exec(p, (uint32_t)pid[1], 1, &x[1]), 1);
		python__stats(p, &st);
		assert_int_equal(st.from_exec, 2);
		assert_int_equal(st.from_exec_rewritten, 1);
		/* another process of the file placed 1 MiB higher (a PIE under ASLR; Debian builds
		 * python3.11 as no PIE, so the two above share their place):
		 * every address moves with it */
		y.start_code += 1 << 20;
		assert_int_equal(python__note_exec(p, 4194000, 7, &y), 1);
		assert_int_equal(python__walker_entry(p, 4194000, 7, &moved), 0);
		assert_int_equal(moved.runtime, by_read.runtime + (1 << 20));
		assert_int_equal(moved.image_lo, by_read.image_lo + (1 << 20));
		assert_int_equal(moved.image_hi, by_read.image_hi + (1 << 20));
		assert_int_equal(moved.image_key, by_read.image_key);
		/* its frozen code object by its offset from its own bias */
		{
			const struct tp_py_frame frames[1] = {{frozen[1], 0}};

			assert_int_equal(
			    python__resolve(p, (uint32_t)pid[1], 1, frames, 1, false, out), 1);
			assert_true(python__line(out[0].f.addr, &pl));
			assert_string_equal(pl.function, "_find_and_load");
		}
	}
	kill_two(in, pid);
	python__free(p);
	python__free(q);
}

static void test_exec_template_debian_311(void **state)
{
	check_exec_template("/usr/bin/python3.11", true);
}

static void test_exec_template_pyenv_312(void **state)
{
	check_exec_template("/root/.pyenv/versions/3.12.1/bin/python3.12", false);
}

static void test_discovers_debian_python(void **state)
{
	check_discovery("/usr/bin/python3.11", false);
}

static void test_discovers_pyenv_312(void **state)
{
	check_discovery("/root/.pyenv/versions/3.12.1/bin/python3.12", true);
}

static void test_discovers_pyenv_313(void **state)
{
	check_discovery("/root/.pyenv/versions/3.13.0/bin/python3.13", true);
}

/* A code object built into the interpreter file (3.11 and 3.12 deep-freeze importlib's: it lies
 * in the file's data) is read from the first process and known, by its offset in the file, in
 * the next process of that file, wherever the file was loaded there (pyenv's libpython moves
 * with ASLR), and at later drains without a read. 3.13 unmarshals frozen modules onto the heap:
 * read in each process. A code object of the heap is read in each. */
static void check_image_codes(const char *python, bool frozen_in_image)
{
	static const char script[] = "import _frozen_importlib, time\n"
				     "def work():\n"
				     "    return 1\n"
				     "print(id(_frozen_importlib._find_and_load.__code__),\n"
				     "      id(work.__code__), flush=True)\n"
				     "time.sleep(30)\n";
	struct python *p = python__new(NULL);
	unsigned long long frozen[2], heap[2];
	struct python_stats before, st;
	struct python_frame out[1];
	struct python_line pl;
	char line[2][128];
	FILE *in[2];
	pid_t pid[2];

	if (access(python, X_OK))
		skip();
	assert_non_null(p);
	spawn_two(python, script, in, pid, line);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sscanf(line[i], "%llu %llu", &frozen[i], &heap[i]), 2);
		note_until_known(p, pid[i]);
	}
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 2; i++) {
			const struct tp_py_frame frames[2] = {{frozen[i], 20}, {heap[i], 4}};

			python__drain_begin(p, true);
			python__stats(p, &before);
			assert_int_equal(
			    python__resolve(p, (uint32_t)pid[i], 1, frames, 1, false, out), 1);
			assert_true(python__line(out[0].f.addr, &pl));
			assert_string_equal(pl.function, "_find_and_load");
			assert_string_equal(pl.file, "<frozen importlib._bootstrap>");
			python__stats(p, &st);
			if (frozen_in_image) {
				/* read once, from the first process */
				assert_int_equal(st.code_reads, before.code_reads + !(round || i));
				assert_int_equal(st.code_image_hits,
						 before.code_image_hits + (round || i));
			} else {
				assert_int_equal(st.code_reads, before.code_reads + !round);
				assert_int_equal(st.code_image_hits, 0);
			}
			assert_int_equal(
			    python__resolve(p, (uint32_t)pid[i], 1, frames + 1, 1, false, out), 1);
			assert_true(python__line(out[0].f.addr, &pl));
			assert_string_equal(pl.function, "work");
			python__stats(p, &before);
			/* a heap object: read when new, its fields read again at each drain */
			assert_int_equal(before.code_reads, st.code_reads + !round);
		}
	}
	kill_two(in, pid);
	python__free(p);
}

static void test_image_codes_debian_311(void **state)
{
	check_image_codes("/usr/bin/python3.11", true);
}

static void test_image_codes_pyenv_312(void **state)
{
	check_image_codes("/root/.pyenv/versions/3.12.1/bin/python3.12", true);
}

static void test_image_codes_pyenv_313(void **state)
{
	check_image_codes("/root/.pyenv/versions/3.13.0/bin/python3.13", false);
}

/* The lines of one code object asked for at more call sites than its memo holds, in an order
 * that replaces memo entries, each against the line CPython's co_lines() gives for that
 * instruction: a remembered line is never another site's. */
static void test_line_memo(void **state)
{
	static const char script[] =
	    "import sys\n"
	    "def work(x):\n"
	    "    a = x + 1\n"
	    "    b = a * 2\n"
	    "    c = b - 3\n"
	    "    d = c * c\n"
	    "    e = d + a\n"
	    "    f = e * b\n"
	    "    return f\n"
	    "co = work.__code__\n" UNIT_LINES_PY
	    "print(id(co), co.co_firstlineno, ' '.join(map(str, unit_lines(co))), flush=True)\n"
	    "sys.stdin.readline()\n";
	static const int order[] = {4, 8, 12, 16, 20, 24, 4, 24, 8, 20, 12, 16, 4, 4, 24};
	struct python *p = python__new(NULL);
	unsigned long long code;
	unsigned int first, expect[256] = {0}, nr = 0;
	struct python_frame out[1];
	struct python_line pl;
	char buf[2048], *cur;
	int to_child, n;
	FILE *in;
	pid_t pid;

	if (access("/usr/bin/python3.11", X_OK))
		skip();
	in = spawn_python_io("/usr/bin/python3.11", script, &pid, &to_child);
	assert_non_null(fgets(buf, sizeof(buf), in));
	assert_int_equal(sscanf(buf, "%llu %u %n", &code, &first, &n), 2);
	for (cur = buf + n; nr < 256 && *cur && *cur != '\n'; nr++)
		expect[nr] = (unsigned int)strtoul(cur, &cur, 10);
	assert_true(nr > 24);
	note_until_known(p, pid);
	python__drain_begin(p, true);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const struct tp_py_frame f = {code, (uint64_t)order[i]};

		assert_int_equal(python__resolve(p, (uint32_t)pid, 1, &f, 1, false, out), 1);
		assert_true(python__line(out[0].f.addr, &pl));
		assert_string_equal(pl.function, "work");
		assert_int_equal(pl.start_line, first);
		assert_int_equal(pl.line, expect[order[i]]);
	}
	assert_int_equal(write(to_child, "\n", 1), 1);
	waitpid(pid, NULL, 0);
	fclose(in);
	close(to_child);
	python__free(p);
}

/* Interpreters without an offset table are refused and counted as "version": other versions
 * (3.10) and other ABIs of a supported one (3.13t: free-threaded, its objects another layout;
 * 3.11d: debug). Maps of fake processes under a fake /proc. */
static void test_refuses_other_versions(void **state)
{
	static const char *const paths[] = {
	    "/opt/py/lib/libpython3.10.so.1.0",	 "/opt/py/bin/python3.10",
	    "/opt/py/lib/libpython3.13t.so.1.0", "/opt/py/bin/python3.13t",
	    "/opt/py/bin/python3.11d",
	};
	char root[] = "/tmp/tailprof_python_XXXXXX", path[PATH_MAX];
	struct python_opts opts = {.proc_root = root};
	struct python_stats st;
	struct python *p;

	assert_non_null(mkdtemp(root));
	p = python__new(&opts);
	assert_non_null(p);
	for (uint32_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%u", root, 100 + i);
		assert_int_equal(mkdir(path, 0755), 0);
		snprintf(path, sizeof(path), "%s/%u/maps", root, 100 + i);
		f = fopen(path, "w");
		assert_non_null(f);
		fprintf(f, "55d0c0000000-55d0c0001000 r-xp 00000000 08:01 1234 %s\n", paths[i]);
		fclose(f);
		assert_int_equal(python__note_process(p, 100 + i, 1), 0);
		python__stats(p, &st);
		assert_int_equal(st.unsupported[PY_UNSUP_VERSION], i + 1);
	}
	assert_int_equal(st.processes, 0);
	python__free(p);
	for (uint32_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		snprintf(path, sizeof(path), "%s/%u/maps", root, 100 + i);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%u", root, 100 + i);
		rmdir(path);
	}
	rmdir(root);
}

/* The BPF walker reads a frame's first TP_PY_FRAME_HEAD bytes: every table's frame fields lie
 * there, and an offset or a field's end past it is refused (tailprofd then keeps that version's
 * processes to native frames, with a warning). */
static void test_frame_fields_in_the_head(void **state)
{
	struct tp_py_offsets o;

	assert_true(py_nr_versions >= 3);
	for (uint32_t i = 0; i < py_nr_versions; i++)
		assert_true(tp_py_frame_fits(&py_versions[i].bpf));
	o = py_versions[0].bpf;
	o.frame_prev_instr = TP_PY_FRAME_HEAD - 8;
	assert_true(tp_py_frame_fits(&o));
	o.frame_prev_instr = TP_PY_FRAME_HEAD - 7; /* the word's last byte past the head */
	assert_false(tp_py_frame_fits(&o));
	o = py_versions[0].bpf;
	o.frame_owner = TP_PY_FRAME_HEAD;
	assert_false(tp_py_frame_fits(&o));
	o.frame_owner = TP_PY_FRAME_HEAD - 1;
	o.frame_is_entry = TP_PY_NO_OFFSET; /* none: fits */
	assert_true(tp_py_frame_fits(&o));
	o.frame_is_entry = TP_PY_FRAME_HEAD;
	assert_false(tp_py_frame_fits(&o));
	o = py_versions[0].bpf;
	o.frame_code = 80;
	assert_false(tp_py_frame_fits(&o));
	o = py_versions[0].bpf;
	o.frame_previous = 72;
	assert_false(tp_py_frame_fits(&o));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_linetable_matches_cpython),
	    cmocka_unit_test(test_linetable_sweep_311),
	    cmocka_unit_test(test_linetable_sweep_312),
	    cmocka_unit_test(test_linetable_sweep_313),
	    cmocka_unit_test(test_discovers_debian_python),
	    cmocka_unit_test(test_discovers_pyenv_312),
	    cmocka_unit_test(test_discovers_pyenv_313),
	    cmocka_unit_test(test_reused_code_address_311),
	    cmocka_unit_test(test_reused_code_address_313),
	    cmocka_unit_test(test_image_codes_debian_311),
	    cmocka_unit_test(test_exec_template_debian_311),
	    cmocka_unit_test(test_exec_template_pyenv_312),
	    cmocka_unit_test(test_image_codes_pyenv_312),
	    cmocka_unit_test(test_image_codes_pyenv_313),
	    cmocka_unit_test(test_line_memo),
	    cmocka_unit_test(test_refuses_other_versions),
	    cmocka_unit_test(test_frame_fields_in_the_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
