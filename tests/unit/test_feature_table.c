// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the features table: the test switch's parsing, setting capabilities, and the
 * JSON, Prometheus and --check views. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "feature_table.h"

static const char *const keys[FEATURE_NR] = {
    "cpu_sampling",  "eh_frame_unwinding", "offcpu", "runq_latency", "task_work",
    "stages",	     "usdt_semaphores",	   "gc",     "bpf_stats",    "request_accounting",
    "python_frames", "mmap_records",
};

/* A new table: every capability named, off, "not probed", nothing forced. */
static void test_new_table_is_all_off(void **state)
{
	struct features *f = features__new();

	for (int i = 0; i < FEATURE_NR; i++) {
		const struct feature *ft = features__get(f, i);

		assert_string_equal(ft->name, keys[i]);
		assert_false(ft->enabled);
		assert_string_equal(ft->variant, "");
		assert_string_equal(ft->reason, "not probed");
		assert_false(features__forced_off(f, i));
	}
	assert_false(features__any_load_failed(f));
	features__free(f);
	features__free(NULL);
}

static unsigned forced_mask(const struct features *f)
{
	unsigned m = 0;

	for (int i = 0; i < FEATURE_NR; i++)
		m |= features__forced_off(f, i) ? 1u << i : 0;
	return m;
}

#define BIT(id) (1u << (id))

static void test_parse_off(void **state)
{
	static const struct {
		const char *off, *sched_return;
		int rc;
		unsigned forced;
	} cases[] = {
	    {NULL, NULL, 0, 0},
	    {"", "", 0, 0},
	    {"task_work", NULL, 0, BIT(FEATURE_TASK_WORK)},
	    /* one object serves both: either takes the other along */
	    {"offcpu", NULL, 0, BIT(FEATURE_OFFCPU) | BIT(FEATURE_RUNQ)},
	    {"runq_latency", NULL, 0, BIT(FEATURE_OFFCPU) | BIT(FEATURE_RUNQ)},
	    {"gc,stages,,bpf_stats,", NULL, 0,
	     BIT(FEATURE_GC) | BIT(FEATURE_STAGES) | BIT(FEATURE_BPF_STATS)},
	    {"eh_frame_unwinding", NULL, 0, BIT(FEATURE_EH_FRAME)},
	    {"request_accounting", NULL, 0, BIT(FEATURE_REQUEST_ACCT)},
	    {NULL, "sys_exit", 0, BIT(FEATURE_TASK_WORK)},
	    {"gc", "sys_exit", 0, BIT(FEATURE_GC) | BIT(FEATURE_TASK_WORK)},
	    /* no fallback to test, or not a name */
	    {"cpu_sampling", NULL, -EINVAL, 0},
	    {"usdt_semaphores", NULL, -EINVAL, 0},
	    {"gc,bogus", NULL, -EINVAL, 0},
	    {"task", NULL, -EINVAL, 0},
	    {"task_workx", NULL, -EINVAL, 0},
	    {" gc", NULL, -EINVAL, 0},
	    {NULL, "task_work", -EINVAL, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct features *f = features__new();
		char err[300] = "";
		int rc =
		    features__parse_off(f, cases[i].off, cases[i].sched_return, err, sizeof(err));

		assert_int_equal(rc, cases[i].rc);
		if (!rc) {
			assert_int_equal(forced_mask(f), cases[i].forced);
			assert_string_equal(err, "");
		} else {
			/* names the variable, and the names that are allowed */
			assert_non_null(strstr(err, cases[i].off ? "TAILPROF_FEATURES_OFF: '"
								 : "TAILPROF_SCHED_RETURN: '"));
			assert_non_null(
			    strstr(err, cases[i].off ? "eh_frame_unwinding, offcpu" : "sys_exit"));
		}
		features__free(f);
	}
}

/* A long bad value is quoted cut at 64 bytes, never inside a UTF-8 character. */
static void test_parse_off_quotes_whole_characters(void **state)
{
	/* 63 ASCII bytes then "é" (2 bytes): byte 64 is the middle of the "é" */
	char val[80], err[300];
	const char *q;

	(void)state;
	memset(val, 'a', 63);
	strcpy(val + 63, "\xc3\xa9zzz");
	for (int which = 0; which < 2; which++) {
		struct features *f = features__new();

		assert_int_equal(features__parse_off(f, which ? NULL : val, which ? val : NULL, err,
						     sizeof(err)),
				 -EINVAL);
		q = strchr(err, '\'');
		assert_non_null(q);
		/* the 63 ASCII bytes, then the cut: no half of the "é" */
		assert_int_equal(strspn(q + 1, "a"), 63);
		assert_memory_equal(q + 64, "...'", 4);
		features__free(f);
	}
	/* not UTF-8 at the cut (a run of continuation bytes): cut at 64, nothing dropped before */
	{
		struct features *f = features__new();

		val[0] = 'a';
		memset(val + 1, 0x80, 70);
		val[71] = 0;
		assert_int_equal(features__parse_off(f, NULL, val, err, sizeof(err)), -EINVAL);
		q = strchr(err, '\'');
		assert_int_equal(q[1], 'a');
		assert_memory_equal(q + 65, "...'", 4);
		features__free(f);
	}
}

static void test_forced_reason_names_the_switch(void **state)
{
	struct features *f = features__new();
	char err[300];

	assert_int_equal(features__parse_off(f, NULL, "sys_exit", err, sizeof(err)), 0);
	assert_string_equal(features__forced_reason(f, FEATURE_TASK_WORK),
			    "forced off by TAILPROF_SCHED_RETURN=sys_exit (tests)");
	features__free(f);
	/* given both ways, the newer switch is the one named */
	f = features__new();
	assert_int_equal(features__parse_off(f, "task_work", "sys_exit", err, sizeof(err)), 0);
	assert_string_equal(features__forced_reason(f, FEATURE_TASK_WORK),
			    "forced off by TAILPROF_FEATURES_OFF (tests)");
	assert_string_equal(features__forced_reason(f, FEATURE_GC), FEATURE_FORCED_OFF);
	features__free(f);
	assert_false(features__forced_off(NULL, FEATURE_GC));
}

static void test_set(void **state)
{
	struct features *f = features__new();
	char long_variant[100];
	const struct feature *ft = features__get(f, FEATURE_TASK_WORK);

	features__set(f, FEATURE_TASK_WORK, true, "sys_exit", "the kernel lacks %s (Linux %d.%d)",
		      "the kfunc", 6, 18);
	assert_true(ft->enabled);
	assert_string_equal(ft->variant, "sys_exit");
	assert_string_equal(ft->reason, "the kernel lacks the kfunc (Linux 6.18)");
	assert_false(ft->quiet);
	features__set_quiet(f, FEATURE_TASK_WORK);
	assert_true(ft->quiet);
	/* a new state: the reason and the quiet mark go */
	features__set(f, FEATURE_TASK_WORK, true, "task_work", NULL);
	assert_string_equal(ft->reason, "");
	assert_false(ft->quiet);
	/* bounded copies */
	memset(long_variant, 'v', sizeof(long_variant) - 1);
	long_variant[sizeof(long_variant) - 1] = 0;
	features__set(f, FEATURE_GC, false, long_variant, "%s", "");
	assert_int_equal(strlen(features__get(f, FEATURE_GC)->variant), sizeof(ft->variant) - 1);
	/* NULL table: nothing, no crash */
	features__set(NULL, FEATURE_GC, true, "x", NULL);
	features__set_quiet(NULL, FEATURE_GC);
	features__set_load_failure(NULL, FEATURE_GC, "gc_bpf", "p", true, "log");
	features__free(f);
}

static void test_json(void **state)
{
	struct features *f = features__new();
	json_t *o;
	const char *key;
	json_t *v;
	int i = 0;

	features__set(f, FEATURE_OFFCPU, true, "tp_btf/sched_switch", NULL);
	features__set(f, FEATURE_GC, false, "", "--gc off");
	o = features__json(f);
	assert_non_null(o);
	assert_int_equal(json_object_size(o), FEATURE_NR);
	/* every capability, in the documented order, each with three typed keys */
	json_object_foreach(o, key, v)
	{
		assert_string_equal(key, keys[i++]);
		assert_int_equal(json_object_size(v), 3);
		assert_true(json_is_boolean(json_object_get(v, "enabled")));
		assert_true(json_is_string(json_object_get(v, "variant")));
		assert_true(json_is_string(json_object_get(v, "reason")));
	}
	v = json_object_get(o, "offcpu");
	assert_true(json_is_true(json_object_get(v, "enabled")));
	assert_string_equal(json_string_value(json_object_get(v, "variant")),
			    "tp_btf/sched_switch");
	assert_string_equal(json_string_value(json_object_get(v, "reason")), "");
	v = json_object_get(o, "gc");
	assert_true(json_is_false(json_object_get(v, "enabled")));
	assert_string_equal(json_string_value(json_object_get(v, "reason")), "--gc off");
	json_decref(o);
	features__free(f);
}

static void test_metrics_text(void **state)
{
	struct features *f = features__new();
	char *text;

	features__set(f, FEATURE_CPU_SAMPLING, true, "perf_event/cpu-clock", NULL);
	features__set(f, FEATURE_TASK_WORK, true, "sys_exit", "older kernel");
	text = features__metrics_text(f);
	assert_non_null(text);
	assert_non_null(strstr(text, "# TYPE tailprof_feature_enabled gauge\n"));
	assert_non_null(strstr(text, "\ntailprof_feature_enabled{feature=\"cpu_sampling\"} 1\n"
				     "tailprof_feature_enabled{feature=\"eh_frame_unwinding\"} 0\n"
				     "tailprof_feature_enabled{feature=\"offcpu\"} 0\n"
				     "tailprof_feature_enabled{feature=\"runq_latency\"} 0\n"
				     "tailprof_feature_enabled{feature=\"task_work\"} 1\n"
				     "tailprof_feature_enabled{feature=\"stages\"} 0\n"
				     "tailprof_feature_enabled{feature=\"usdt_semaphores\"} 0\n"
				     "tailprof_feature_enabled{feature=\"gc\"} 0\n"
				     "tailprof_feature_enabled{feature=\"bpf_stats\"} 0\n"
				     "tailprof_feature_enabled{feature=\"request_accounting\"} 0\n"
				     "tailprof_feature_enabled{feature=\"python_frames\"} 0\n"
				     "tailprof_feature_enabled{feature=\"mmap_records\"} 0\n"));
	assert_int_equal(text[strlen(text) - 1], '\n');
	free(text);
	features__free(f);
}

/* The --check report: a line per capability, then each failure once with its log. */
static void test_print(void **state)
{
	struct features *f = features__new();
	char *out = NULL;
	size_t len = 0;
	FILE *m;

	for (int i = 0; i < FEATURE_NR; i++)
		features__set(f, i, true, "v", NULL);
	features__set(f, FEATURE_OFFCPU, false, "",
		      "the verifier rejected sched_switch: R1" FEATURE_CHECK_MORE);
	features__set(f, FEATURE_RUNQ, false, "", "the verifier rejected sched_switch: R1");
	/* one object load, two capabilities: printed once */
	features__set_load_failure(f, FEATURE_OFFCPU, "sched_bpf", "sched_switch", true,
				   "0: (85) call\nR1 pointer ^= pointer prohibited");
	features__set_load_failure(f, FEATURE_RUNQ, "sched_bpf", "sched_switch", true,
				   "0: (85) call\nR1 pointer ^= pointer prohibited");
	features__set(f, FEATURE_GC, false, "",
		      "libbpf could not load gc_bpf: Too many open files" FEATURE_CHECK_MORE);
	features__set_load_failure(f, FEATURE_GC, "gc_bpf", "", false, NULL);
	assert_true(features__any_load_failed(f));
	m = open_memstream(&out, &len);
	features__print(f, m);
	fclose(m);
	assert_non_null(strstr(out, "FEATURE              STATE VARIANT                REASON\n"
				    "cpu_sampling         on    v                      -\n"));
	/* --check's own table does not send the reader to --check: what it would print follows */
	assert_non_null(strstr(out, "\noffcpu               off   -                      the "
				    "verifier rejected sched_switch: R1; more below\n"));
	assert_null(strstr(out, "prints more"));
	assert_non_null(strstr(out, "\nsched_bpf, program sched_switch (offcpu): the verifier "
				    "rejected it; the last lines of its log:\n"
				    "  0: (85) call\n"
				    "  R1 pointer ^= pointer prohibited\n"));
	assert_null(strstr(out, "(runq_latency): the verifier"));
	/* no log kept: the reason says what failed */
	assert_non_null(
	    strstr(out, "\ngc_bpf (gc): libbpf could not load gc_bpf: Too many open files\n"));
	free(out);
	features__free(f);
}

/* A load failure whose fallback runs (task_work on sys_exit) is printed but fails no check. */
static void test_fallback_failure_is_not_fatal(void **state)
{
	struct features *f = features__new();
	char *out = NULL;
	size_t len = 0;
	FILE *m;

	(void)state;
	for (int i = 0; i < FEATURE_NR; i++)
		features__set(f, i, true, "v", NULL);
	features__set_load_failure(f, FEATURE_TASK_WORK, "sched_bpf", "sched_switch_tw", true,
				   "sleepable callback in a program that is not sleepable");
	features__set(f, FEATURE_TASK_WORK, true, "sys_exit", "the verifier rejected it");
	assert_false(features__any_load_failed(f));
	m = open_memstream(&out, &len);
	features__print(f, m);
	fclose(m);
	assert_non_null(strstr(out,
			       "\nsched_bpf, program sched_switch_tw (task_work): the verifier "
			       "rejected it; the last lines of its log:\n"
			       "  sleepable callback in a program that is not sleepable\n"));
	free(out);
	/* the same failure with the capability off counts */
	features__set(f, FEATURE_TASK_WORK, false, "", "off");
	assert_true(features__any_load_failed(f));
	features__free(f);
}

/* Prints f's load failures into a malloc'd string. */
static char *printed(const struct features *f)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);

	assert_non_null(m);
	features__print(f, m);
	fclose(m);
	return out;
}

/* The fallback refused too (task_work: sched_switch_tw, then sched_return): --check prints both
 * logs, each under its program's name; the same program again replaces its record. */
static void test_two_failures_keep_both_logs(void **state)
{
	struct features *f = features__new();
	char *out;

	(void)state;
	features__set_load_failure(f, FEATURE_TASK_WORK, "sched_bpf", "sched_switch_tw", true,
				   "R1 type=scalar\nsleepable callback in a program that is not "
				   "sleepable");
	features__set_load_failure(f, FEATURE_TASK_WORK, "sched_bpf", "sched_return", true,
				   "attach_btf_id 1234 is not a function");
	features__set(f, FEATURE_TASK_WORK, false, "", "the verifier rejected both");
	assert_true(features__any_load_failed(f));
	out = printed(f);
	assert_non_null(strstr(out, "\nsched_bpf, programs sched_switch_tw, then sched_return "
				    "(task_work): the verifier rejected each; the last lines of "
				    "each log:\n"
				    "  [sched_switch_tw]\n"
				    "  R1 type=scalar\n"
				    "  sleepable callback in a program that is not sleepable\n"
				    "  [sched_return]\n"
				    "  attach_btf_id 1234 is not a function\n"));
	free(out);
	/* a third: added under its name */
	features__set_load_failure(f, FEATURE_TASK_WORK, "sched_bpf", "sys_exit", false,
				   "no memory");
	out = printed(f);
	assert_non_null(strstr(out, "programs sched_switch_tw, then sched_return, then sys_exit "
				    "(task_work): none loaded; the last messages of each:\n"
				    "  [sched_switch_tw]\n"));
	assert_non_null(strstr(out, "  [sched_return]\n  attach_btf_id 1234 is not a function\n"
				    "  [sys_exit]\n  no memory\n"));
	free(out);
	features__free(f);

	/* no program named, or no log: said so; the first one's log is kept */
	f = features__new();
	features__set_load_failure(f, FEATURE_TASK_WORK, "sched_bpf", NULL, false, "map failed");
	features__set_load_failure(f, FEATURE_TASK_WORK, "sched_bpf", "sched_return", true, NULL);
	features__set(f, FEATURE_TASK_WORK, false, "", "off");
	out = printed(f);
	assert_non_null(strstr(out, "sched_bpf, programs no program named, then sched_return "
				    "(task_work): none loaded; the last messages of each:\n"
				    "  [no program named]\n"
				    "  map failed\n"
				    "  [sched_return] (no log)\n"));
	free(out);
	features__free(f);

	/* the same program again (a name longer than the field compared as far as it keeps it):
	 * the record is replaced, not joined */
	f = features__new();
	char long_name[100];

	memset(long_name, 'p', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	features__set_load_failure(f, FEATURE_TASK_WORK, "sched_bpf", long_name, true, "one");
	features__set_load_failure(f, FEATURE_TASK_WORK, "sched_bpf", long_name, true, "two");
	assert_int_equal(features__get(f, FEATURE_TASK_WORK)->failures, 1);
	assert_string_equal(features__get(f, FEATURE_TASK_WORK)->log, "two");
	/* another long one: joined, the names cut to fit the field */
	long_name[0] = 'q';
	features__set_load_failure(f, FEATURE_TASK_WORK, "sched_bpf", long_name, true, "three");
	assert_int_equal(features__get(f, FEATURE_TASK_WORK)->failures, 2);
	assert_int_equal(strlen(features__get(f, FEATURE_TASK_WORK)->program),
			 sizeof(features__get(f, FEATURE_TASK_WORK)->program) - 1);
	features__set(f, FEATURE_TASK_WORK, false, "", "off");
	out = printed(f);
	assert_non_null(strstr(out, "the verifier rejected each"));
	free(out);
	features__free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_new_table_is_all_off),
	    cmocka_unit_test(test_parse_off),
	    cmocka_unit_test(test_parse_off_quotes_whole_characters),
	    cmocka_unit_test(test_forced_reason_names_the_switch),
	    cmocka_unit_test(test_set),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_metrics_text),
	    cmocka_unit_test(test_print),
	    cmocka_unit_test(test_fallback_failure_is_not_fatal),
	    cmocka_unit_test(test_two_failures_keep_both_logs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
