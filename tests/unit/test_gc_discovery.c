// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of GC discovery: which objects are looked at, and what each fixture is (runtime,
 * supported or why not, which probes and how, Go or CPython version), on ELF fixtures the build
 * makes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "gc_discovery.h"

static const char *fixture(const char *env)
{
	const char *p = getenv(env);

	if (!p)
		fail_msg("%s is not set: run through meson test", env);
	return p;
}

static void classify(const char *env, const char *name, struct gc_object_info *info)
{
	assert_int_equal(gc_discovery__classify(fixture(env), name, info), 0);
}

static void test_candidates(void **state)
{
	assert_true(gc_discovery__candidate("/usr/bin/anything", true));
	assert_true(gc_discovery__candidate("/usr/lib/jvm/x/lib/server/libjvm.so", false));
	assert_true(gc_discovery__candidate("/usr/lib/libpython3.11.so.1.0", false));
	assert_true(gc_discovery__candidate("/opt/libpython3.12.so", false));
	assert_false(gc_discovery__candidate("/usr/lib/x86_64-linux-gnu/libc.so.6", false));
	assert_false(gc_discovery__candidate("/usr/lib/libjvm.so.bak", false));
	assert_false(gc_discovery__candidate("/usr/lib/libpython2.7.so.1.0", false));
}

static void test_python(void **state)
{
	struct gc_object_info info;

	classify("TAILPROF_FIXTURE_GC_PYTHON", NULL, &info);
	assert_int_equal(info.runtime, TP_GC_PYTHON);
	assert_true(info.supported);
	assert_string_equal(info.reason, "");
}

static void test_python_without_probes(void **state)
{
	struct gc_object_info info;

	/* an interpreter named python3.X without the notes: unsupported, with the reason */
	classify("TAILPROF_FIXTURE_GC_PLAIN", "python3.12", &info);
	assert_int_equal(info.runtime, TP_GC_PYTHON);
	assert_false(info.supported);
	assert_non_null(strstr(info.reason, "python:gc__start"));
	assert_non_null(strstr(info.reason, "no function gc_collect_main"));
	assert_int_equal(info.method, GC_METHOD_NONE);
	/* any other name without notes is no runtime */
	classify("TAILPROF_FIXTURE_GC_PLAIN", NULL, &info);
	assert_int_equal(info.runtime, 0);
}

static void test_python_by_uprobe(void **state)
{
	const char *path = fixture("TAILPROF_FIXTURE_GC_PY_COLLECT");
	struct gc_object_info info;
	uint64_t off = 0;

	/* no USDT notes, a local gc_collect_main in .symtab, 3.11 by its name: uprobes */
	classify("TAILPROF_FIXTURE_GC_PY_COLLECT", "python3.11", &info);
	assert_int_equal(info.runtime, TP_GC_PYTHON);
	assert_true(info.supported);
	assert_int_equal(info.method, GC_METHOD_UPROBE);
	assert_string_equal(info.version, "3.11");
	assert_string_equal(info.reason, "");
	/* at the function itself (not its .cold part) */
	assert_int_equal(gc_discovery__func_offset(path, GC_PY_COLLECT, &off), 0);
	assert_true(off > 0);
	assert_int_equal(info.collect_offset, off);
	/* a shared libpython of the same version, by its name */
	classify("TAILPROF_FIXTURE_GC_PY_COLLECT", "libpython3.11.so.1.0", &info);
	assert_true(info.supported);
	assert_int_equal(info.method, GC_METHOD_UPROBE);
	assert_string_equal(info.version, "3.11");
	classify("TAILPROF_FIXTURE_GC_PY_COLLECT", "python3.11d", &info);
	assert_true(info.supported);
}

static void test_python_by_uprobe_unsupported(void **state)
{
	struct gc_object_info info;

	/* another version: the function's arguments are not known */
	classify("TAILPROF_FIXTURE_GC_PY_COLLECT", "python3.12", &info);
	assert_int_equal(info.runtime, TP_GC_PYTHON);
	assert_false(info.supported);
	assert_int_equal(info.method, GC_METHOD_NONE);
	assert_string_equal(info.version, "3.12");
	assert_non_null(strstr(info.reason, "3.11 only (this is 3.12)"));
	/* a name without the version */
	classify("TAILPROF_FIXTURE_GC_PY_COLLECT", "python3", &info);
	assert_false(info.supported);
	assert_string_equal(info.version, "");
	assert_non_null(strstr(info.reason, "does not say its version"));
	/* a clone that may take other arguments */
	classify("TAILPROF_FIXTURE_GC_PY_CLONE", "python3.11", &info);
	assert_int_equal(info.runtime, TP_GC_PYTHON);
	assert_false(info.supported);
	assert_non_null(strstr(info.reason, "gc_collect_main.isra.0"));
	assert_non_null(strstr(info.reason, "python:gc__start"));
	/* stripped: the local symbol is gone */
	classify("TAILPROF_FIXTURE_GC_PY_COLLECT_STRIPPED", "python3.11", &info);
	assert_false(info.supported);
	assert_non_null(strstr(info.reason, "stripped"));
	/* USDT notes win: the Debian way */
	classify("TAILPROF_FIXTURE_GC_PYTHON", "python3.11", &info);
	assert_true(info.supported);
	assert_int_equal(info.method, GC_METHOD_USDT);
	assert_string_equal(info.version, "3.11");
	/* the collector's name means nothing outside a CPython */
	classify("TAILPROF_FIXTURE_GC_PY_COLLECT", NULL, &info);
	assert_int_equal(info.runtime, 0);
}

static void test_jvm(void **state)
{
	struct gc_object_info info;

	classify("TAILPROF_FIXTURE_GC_JVM", NULL, &info);
	assert_int_equal(info.runtime, TP_GC_JVM);
	assert_true(info.supported);
	assert_true(info.safepoints);
	assert_int_equal(info.method, GC_METHOD_USDT);
}

static void test_jvm_without_usdt(void **state)
{
	struct gc_object_info info;

	classify("TAILPROF_FIXTURE_GC_NOUSDT", "libjvm.so", &info);
	assert_int_equal(info.runtime, TP_GC_JVM);
	assert_false(info.supported);
	assert_non_null(strstr(info.reason, "hotspot:gc__begin"));
	/* the same file under another name is nothing */
	classify("TAILPROF_FIXTURE_GC_NOUSDT", NULL, &info);
	assert_int_equal(info.runtime, 0);
}

static void test_go(void **state)
{
	struct gc_object_info info;

	classify("TAILPROF_FIXTURE_GC_GO", NULL, &info);
	assert_int_equal(info.runtime, TP_GC_GO);
	assert_true(info.supported);
	assert_int_equal(info.method, GC_METHOD_UPROBE);
	assert_string_equal(info.version, "go1.19.8");
}

static void test_go_missing_function(void **state)
{
	struct gc_object_info info;

	classify("TAILPROF_FIXTURE_GC_GO_MISSING", NULL, &info);
	assert_int_equal(info.runtime, TP_GC_GO);
	assert_false(info.supported);
	assert_non_null(strstr(info.reason, GC_GO_MARK_TERM));
	assert_non_null(strstr(info.reason, "go1.19.8"));
}

static void test_go_stripped(void **state)
{
	struct gc_object_info info;

	classify("TAILPROF_FIXTURE_GC_GO_STRIPPED", NULL, &info);
	assert_int_equal(info.runtime, TP_GC_GO);
	assert_false(info.supported);
	assert_non_null(strstr(info.reason, "stripped"));
	assert_string_equal(info.version, "go1.19.8");
}

static void test_bad_files(void **state)
{
	struct gc_object_info info;
	char path[] = "/tmp/tailprof_gc_notelf_XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not an ELF file\n", 16), 16);
	close(fd);
	assert_int_equal(gc_discovery__classify(path, NULL, &info), -ENOEXEC);
	unlink(path);
	assert_int_equal(gc_discovery__classify("/nonexistent/libjvm.so", NULL, &info), -ENOENT);
}

static void test_func_offset(void **state)
{
	uint64_t off = 0;

	assert_int_equal(gc_discovery__func_offset(fixture("TAILPROF_FIXTURE_GC_JVM"),
						   "gc_fixture_collect", &off),
			 0);
	assert_true(off > 0);
	/* .symtab names (Go) are found too */
	assert_int_equal(
	    gc_discovery__func_offset(fixture("TAILPROF_FIXTURE_GC_GO"), GC_GO_STOP_WORLD, &off),
	    0);
	assert_int_equal(gc_discovery__func_offset(fixture("TAILPROF_FIXTURE_GC_GO_STRIPPED"),
						   GC_GO_STOP_WORLD, &off),
			 -ENOENT);
	assert_int_equal(
	    gc_discovery__func_offset(fixture("TAILPROF_FIXTURE_GC_JVM"), "no_such_function", &off),
	    -ENOENT);
}

/* The machine's own runtimes, where installed (Debian 12's python3.11, the pyenv-built 3.11.7's
 * libpython and OpenJDK 17). */
static void test_installed_runtimes(void **state)
{
	static const char jvm[] = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so";
	static const char pyenv[] = "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0";
	struct gc_object_info info;
	uint64_t off;

	if (!access("/usr/bin/python3.11", R_OK)) {
		assert_int_equal(gc_discovery__classify("/usr/bin/python3.11", NULL, &info), 0);
		assert_int_equal(info.runtime, TP_GC_PYTHON);
		assert_true(info.supported);
		assert_int_equal(info.method, GC_METHOD_USDT);
	}
	if (!access(pyenv, R_OK)) {
		assert_int_equal(gc_discovery__classify(pyenv, NULL, &info), 0);
		assert_int_equal(info.runtime, TP_GC_PYTHON);
		assert_true(info.supported);
		assert_int_equal(info.method, GC_METHOD_UPROBE);
		assert_int_equal(gc_discovery__func_offset(pyenv, GC_PY_COLLECT, &off), 0);
		assert_int_equal(info.collect_offset, off);
	}
	if (!access(jvm, R_OK)) {
		assert_int_equal(gc_discovery__classify(jvm, NULL, &info), 0);
		assert_int_equal(info.runtime, TP_GC_JVM);
		assert_true(info.supported);
		assert_true(info.safepoints);
	}
}

static void test_names(void **state)
{
	assert_string_equal(gc_runtime_name(TP_GC_JVM), "jvm");
	assert_string_equal(gc_runtime_name(TP_GC_PYTHON), "python");
	assert_string_equal(gc_runtime_name(TP_GC_GO), "go");
	assert_string_equal(gc_runtime_name(0), "unknown");
	assert_string_equal(gc_kind_name(TP_GC_PAUSE), "pause");
	assert_string_equal(gc_kind_name(TP_GC_COLLECTION), "collection");
	assert_string_equal(gc_kind_name(TP_GC_SAFEPOINT), "safepoint");
	assert_string_equal(gc_method_name(GC_METHOD_USDT), "usdt");
	assert_string_equal(gc_method_name(GC_METHOD_UPROBE), "uprobe");
	assert_string_equal(gc_method_name(GC_METHOD_NONE), "none");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_candidates),
	    cmocka_unit_test(test_python),
	    cmocka_unit_test(test_python_without_probes),
	    cmocka_unit_test(test_python_by_uprobe),
	    cmocka_unit_test(test_python_by_uprobe_unsupported),
	    cmocka_unit_test(test_jvm),
	    cmocka_unit_test(test_jvm_without_usdt),
	    cmocka_unit_test(test_go),
	    cmocka_unit_test(test_go_missing_function),
	    cmocka_unit_test(test_go_stripped),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_func_offset),
	    cmocka_unit_test(test_installed_runtimes),
	    cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
