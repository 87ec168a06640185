// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of configuration parsing: sections, keys, values, and file:line errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

static char path[64];

/* Writes text to a temporary file and loads it; err receives the error. */
static struct config *load(const char *text, char *err, size_t len)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/tp_test_config.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	err[0] = 0;
	struct config *c = config__load(path, err, len);
	unlink(path);
	return c;
}

static void test_full_config(void **state)
{
	char err[600];
	struct config *c = load("; tailprofd configuration\n"
				"[daemon]\n"
				"frequency = 199\n"
				"window = 5s\n"
				"\n"
				"[stage compute]\n"
				"binary = /srv/app/bin/server     ; executable\n"
				"function = compute_features\n"
				"threshold = 25ms\n"
				"pid = 1234\n"
				"[stage fetch]\n"
				"binary = /srv/app/bin/server\n"
				"usdt_begin = myapp:fetch__begin\n"
				"usdt_end = myapp:fetch__end\n"
				"[usdt-app pipeline]\n"
				"binary = /srv/app/bin/pipeline\n",
				err, sizeof(err));

	assert_non_null(c);
	assert_string_equal(c->frequency.value, "199");
	assert_int_equal(c->frequency.line, 3);
	assert_int_equal(c->stages[0].line, 6);
	assert_string_equal(c->window.value, "5s");
	assert_null(c->listen.value);
	assert_int_equal(c->nr_stages, 2);
	assert_string_equal(c->stages[0].name, "compute");
	assert_string_equal(c->stages[0].binary, "/srv/app/bin/server");
	assert_string_equal(c->stages[0].function, "compute_features");
	assert_int_equal(c->stages[0].threshold_ns, 25000000);
	assert_int_equal(c->stages[0].pid, 1234);
	assert_string_equal(c->stages[1].name, "fetch");
	assert_null(c->stages[1].function);
	assert_string_equal(c->stages[1].usdt_begin, "myapp:fetch__begin");
	assert_string_equal(c->stages[1].usdt_end, "myapp:fetch__end");
	assert_int_equal(c->stages[1].pid, -1);
	assert_int_equal(c->stages[1].threshold_ns, 0);
	assert_int_equal(c->nr_apps, 1);
	assert_string_equal(c->apps[0].name, "pipeline");
	assert_string_equal(c->apps[0].binary, "/srv/app/bin/pipeline");
	config__free(c);
}

/* Each bad file fails with "PATH:LINE: ..." naming the line and the problem. */
static void test_errors_name_the_line(void **state)
{
	static const struct {
		const char *text;
		int line;
		const char *says;
	} cases[] = {
	    {"[stage a]\nbinary = /x\nfunction = f\nthreshold = fast\n", 4, "threshold: 'fast'"},
	    {"[stage a]\nbinary = /x\nfunktion = f\n", 3, "unknown key 'funktion'"},
	    {"[stage a]\nbinary = /x\nfunction = f\npid = -3\n", 4, "pid: '-3'"},
	    {"[stages a]\nbinary = /x\n", 1, "unknown section [stages a]"},
	    {"[stage]\nbinary = /x\n", 1, "give a name"},
	    {"[stage a b]\nbinary = /x\n", 1, "give a name"},
	    {"binary = /x\n", 1, "outside any section"},
	    {"[stage a]\nbinary = /x\nthis is not ini\n", 3, "not a [section] or key = value"},
	    {"[limits\nstacks = 5\n", 1, "opens a section header without closing it"},
	    {"[stage a]\nbinary = /x\nusdt_begin = nocolon\n", 3, "not PROVIDER:NAME"},
	    {"[stage a]\nfunction = f\n", 1, "has no binary"},
	    {"[stage a]\nbinary = /x\n", 1, "needs function = NAME"},
	    {"[stage a]\nbinary = /x\nfunction = f\nusdt_begin = p:b\nusdt_end = p:e\n", 1,
	     "both function and usdt_begin"},
	    {"[stage a]\nbinary = /x\nbinary = /y\nfunction = f\n", 3, "given twice"},
	    {"[daemon]\ncolor = blue\n", 2, "unknown key 'color' in [daemon]"},
	    {"[usdt-app app]\npid = 5\n", 1, "[usdt-app app] has no binary"},
	    {"[gc]\nenabled = yes\n", 2, "enabled: 'yes' is not auto or off"},
	    {"[gc]\njvm = maybe\n", 2, "jvm: 'maybe' is not on or off"},
	    {"[gc]\nruby = on\n", 2, "unknown key 'ruby' in [gc]"},
	    {"[gc]\ngo = on\ngo = off\n", 3, "go: given twice in [gc]"},
	    {"[snapshots]\nmax_files = 3\n", 2,
	     "unknown key 'max_files' in [snapshots]; allowed: max_count, max_bytes"},
	    {"[snapshots]\nmax_count = 3\nmax_count = 4\n", 3,
	     "max_count: given twice in [snapshots] (first at line 2)"},
	    {"[spikes]\nk = 3\nflavor = 4\n", 3,
	     "unknown key 'flavor' in [spikes]; allowed: k, baseline_windows, min_requests, "
	     "min_rise, pin_budget, state_dir, write_rate"},
	    {"[daemon]\nwindow = 1s\nwindow = 2s\n", 3, "window: given twice in [daemon]"},
	    {"[limits]\nstacks = 5\nthreads = 4\n", 3,
	     "unknown key 'threads' in [limits]; allowed: stacks, tasks, known_processes, "
	     "processes, objects, http_connections"},
	    {"[limits]\ntasks = 5\ntasks = 6\n", 3, "tasks: given twice in [limits]"},
	};
	char err[600], want[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config *c = load(cases[i].text, err, sizeof(err));

		if (c)
			fail_msg("case %zu loaded: %s", i, cases[i].text);
		assert_int_equal(errno, EINVAL);
		snprintf(want, sizeof(want), "%s:%d: ", path, cases[i].line);
		if (strncmp(err, want, strlen(want)) || !strstr(err, cases[i].says))
			fail_msg("case %zu: got '%s', want '%s...%s'", i, err, want, cases[i].says);
	}
}

static void test_missing_file(void **state)
{
	char err[600];

	assert_null(config__load("/nonexistent/tailprofd.conf", err, sizeof(err)));
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err, "/nonexistent/tailprofd.conf"));
}

/* Files that are not configuration files: refused with the line or the kind named, never read
 * as an empty configuration or split into settings. */
static void test_not_a_config_file(void **state)
{
	char err[600], text[512], fifo[] = "/tmp/tp_test_config_fifo";
	char *big;
	struct config *c;

	(void)state;
	/* a directory opens and reads as empty with fopen */
	assert_null(config__load("/tmp", err, sizeof(err)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err, "not a regular file"));
	/* a FIFO: refused without waiting for a writer; a device likewise */
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_null(config__load(fifo, err, sizeof(err)));
	assert_non_null(strstr(err, "not a regular file"));
	unlink(fifo);
	assert_null(config__load("/dev/zero", err, sizeof(err)));
	assert_non_null(strstr(err, "not a regular file"));
	/* a comment longer than inih's line: its tail must not become "frequency = 7" */
	snprintf(text, sizeof(text), "[daemon]\n; %0250d frequency = 7\n", 0);
	assert_null(load(text, err, sizeof(err)));
	assert_non_null(strstr(err, ":2: a line of 267 bytes: at most 199 are read"));
	/* exactly the longest line inih takes: read whole */
	snprintf(text, sizeof(text), "[daemon]\n; %0195d\nfrequency = 7\n", 0);
	c = load(text, err, sizeof(err));
	assert_non_null(c);
	assert_string_equal(c->frequency.value, "7");
	assert_int_equal(c->frequency.line, 3);
	config__free(c);
	/* a NUL byte ends the text early for C strings: refused, not taken as "99" */
	memcpy(text, "[daemon]\nfrequency = 99\0garbage\n", 33);
	{
		int fd;

		snprintf(path, sizeof(path), "/tmp/tp_test_config.XXXXXX");
		fd = mkstemp(path);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, text, 33), 33);
		close(fd);
		assert_null(config__load(path, err, sizeof(err)));
		unlink(path);
		assert_non_null(strstr(err, ":2: a NUL byte"));
	}
	/* past 1 MiB of comments */
	big = malloc((1 << 20) + 200);
	assert_non_null(big);
	strcpy(big, "[daemon]\n");
	for (size_t n = strlen(big); n < (1 << 20) + 100; n += 100)
		snprintf(big + n, 101, "; %097d\n", 0);
	assert_null(load(big, err, sizeof(err)));
	assert_non_null(strstr(err, "goes past 1048576 bytes"));
	free(big);
}

static void test_stage_names(void **state)
{
	assert_true(config__valid_stage_name("compute"));
	assert_true(config__valid_stage_name("feature-store.io_2"));
	assert_false(config__valid_stage_name(""));
	assert_false(config__valid_stage_name("a b"));
	assert_false(config__valid_stage_name("a\"b"));
	assert_false(config__valid_stage_name("0123456789012345678901234567890123"));
}

static void test_gc_section(void **state)
{
	char err[600];
	struct config *c = load("[gc]\nenabled = auto\njvm = off\npython = on\n", err, sizeof(err));

	(void)state;
	if (!c)
		fail_msg("%s", err);
	assert_string_equal(c->gc_enabled.value, "auto");
	assert_string_equal(c->gc_jvm.value, "off");
	assert_string_equal(c->gc_python.value, "on");
	assert_null(c->gc_go.value);
	assert_int_equal(c->gc_jvm.line, 3);
	config__free(c);
}

static void test_snapshots_section(void **state)
{
	char err[600];
	struct config *c = load("[snapshots]\nmax_count = 64\nmax_bytes = 1G\n", err, sizeof(err));

	(void)state;
	if (!c)
		fail_msg("%s", err);
	/* as written: snapshots_opts__set checks them when they are applied */
	assert_string_equal(c->snapshots_max_count.value, "64");
	assert_string_equal(c->snapshots_max_bytes.value, "1G");
	assert_int_equal(c->snapshots_max_bytes.line, 3);
	config__free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_full_config),	      cmocka_unit_test(test_errors_name_the_line),
	    cmocka_unit_test(test_missing_file),      cmocka_unit_test(test_not_a_config_file),
	    cmocka_unit_test(test_stage_names),	      cmocka_unit_test(test_gc_section),
	    cmocka_unit_test(test_snapshots_section),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
