// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of what tailprofd keeps of libbpf's messages about failed loads: the verifier log's
 * last lines and the line that says what is wrong, libbpf's own warnings otherwise. Messages are
 * given as libbpf formats them (its print function receives them whole). */
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
#include "libbpf_log.h"

/* libbpf 1.1's messages of a program the verifier rejects, around a log of nr_lines lines. */
static void reject(const char *prog, int nr_lines, const char *last)
{
	char *log = NULL, *msg = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&log, &len);

	for (int i = 0; i < nr_lines; i++)
		fprintf(m, "%d: (bf) r%d = r1\n", i, i % 10);
	fprintf(m,
		"%s\nprocessed 43 insns (limit 1000000) max_states_per_insn 0 total_states 3 "
		"peak_states 3 mark_read 1\n",
		last);
	fclose(m);
	assert_true(asprintf(&msg,
			     "libbpf: prog '%s': BPF program load failed: Permission denied\n",
			     prog) > 0);
	libbpf_log__capture(LIBBPF_WARN, msg);
	free(msg);
	assert_true(asprintf(&msg,
			     "libbpf: prog '%s': -- BEGIN PROG LOAD LOG --\n%s-- END PROG LOAD LOG "
			     "--\n",
			     prog, log) > 0);
	libbpf_log__capture(LIBBPF_WARN, msg);
	free(msg);
	free(log);
	assert_true(asprintf(&msg, "libbpf: prog '%s': failed to load: -13\n", prog) > 0);
	libbpf_log__capture(LIBBPF_WARN, msg);
	free(msg);
	libbpf_log__capture(LIBBPF_WARN, "libbpf: failed to load object 'sched_bpf'\n");
	libbpf_log__capture(LIBBPF_WARN, "libbpf: failed to load BPF skeleton 'sched_bpf': -13\n");
	/* debug and info messages are not kept */
	libbpf_log__capture(LIBBPF_DEBUG, "libbpf: prog 'other': -- BEGIN PROG LOAD LOG --\nx\n"
					  "-- END PROG LOAD LOG --\n");
}

static int count_lines(const char *s)
{
	int n = 1;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_verifier_rejection(void **state)
{
	struct features *f = features__new();
	const struct feature *ft = features__get(f, FEATURE_OFFCPU);

	libbpf_log__reset();
	reject("sched_switch", 40, "R1 pointer ^= pointer prohibited");
	libbpf_log__load_failed(f, FEATURE_OFFCPU, "", "sched_bpf", -EACCES);
	assert_false(ft->enabled);
	assert_string_equal(ft->variant, "");
	/* the last line that is not a statistic */
	assert_string_equal(ft->reason, "the verifier rejected sched_switch: R1 pointer ^= pointer "
					"prohibited; tailprofd --check prints more");
	assert_true(ft->load_failed);
	assert_true(ft->verifier);
	assert_string_equal(ft->object, "sched_bpf");
	assert_string_equal(ft->program, "sched_switch");
	/* its last 20 lines, the statistics line included, oldest first */
	assert_int_equal(count_lines(ft->log), LIBBPF_LOG_LINES);
	assert_true(!strncmp(ft->log, "22: (bf) r2 = r1\n", 17));
	assert_non_null(strstr(ft->log, "\n39: (bf) r9 = r1\nR1 pointer ^= pointer prohibited\n"
					"processed 43 insns"));
	assert_null(strstr(ft->log, "PROG LOAD LOG"));
	features__free(f);
}

/* A second rejection replaces the first log; a reset forgets both: a later failure of the
 * object (a fallback's, say) comes with none of them, and the record keeps the first failure's
 * log beside it (features__set_load_failure). */
static void test_latest_log_and_reset(void **state)
{
	struct features *f = features__new();
	const struct feature *ft = features__get(f, FEATURE_GC);

	libbpf_log__reset();
	reject("go_stop_world", 3, "R0 invalid mem access 'map_value_or_null'");
	reject("dlopen_return", 2, "invalid access to map value, value_size=24 off=4112 size=8");
	libbpf_log__load_failed(f, FEATURE_GC, "", "gc_bpf", -EACCES);
	assert_string_equal(ft->program, "dlopen_return");
	assert_int_equal(count_lines(ft->log), 4);
	assert_null(strstr(ft->log, "map_value_or_null"));
	assert_non_null(strstr(ft->reason, "rejected dlopen_return: invalid access to map value"));

	libbpf_log__reset();
	libbpf_log__load_failed(f, FEATURE_GC, "", "gc_bpf", -ENOENT);
	assert_false(ft->verifier);
	assert_int_equal(ft->failures, 2);
	assert_string_equal(ft->program, "dlopen_return, then no program named");
	assert_true(!strncmp(ft->log, "[dlopen_return]\n", 16));
	assert_non_null(strstr(ft->log, "\n[no program named] (no log)"));
	assert_null(strstr(ft->log, "map_value_or_null"));
	assert_string_equal(ft->reason, "libbpf could not load gc_bpf: No such file or directory; "
					"tailprofd --check prints more");
	features__free(f);
}

/* No verifier log (libbpf refused before the kernel saw it): its warnings, and the last one that
 * names a cause, not its closing lines. */
static void test_libbpf_error(void **state)
{
	struct features *f = features__new();
	const struct feature *ft = features__get(f, FEATURE_EH_FRAME);

	libbpf_log__reset();
	libbpf_log__capture(LIBBPF_INFO, "libbpf: loading object 'profile_bpf'\n");
	libbpf_log__capture(LIBBPF_WARN, "libbpf: prog 'perf_sample': relo #4: failed to find "
					 "a match\n");
	libbpf_log__capture(LIBBPF_WARN, "libbpf: extern (func ksym) 'bpf_magic': not found in "
					 "kernel or module BTFs\n");
	libbpf_log__capture(LIBBPF_WARN, "libbpf: failed to load object 'profile_bpf'\n");
	libbpf_log__capture(LIBBPF_WARN,
			    "libbpf: failed to load BPF skeleton 'profile_bpf': -22\n");
	libbpf_log__load_failed(f, FEATURE_EH_FRAME, "frame_pointers", "profile_bpf", -EINVAL);
	assert_false(ft->enabled);
	assert_string_equal(ft->variant, "frame_pointers");
	assert_false(ft->verifier);
	assert_string_equal(ft->program, "perf_sample");
	assert_string_equal(ft->reason,
			    "libbpf could not load profile_bpf: extern (func ksym) "
			    "'bpf_magic': not found in kernel or module BTFs; tailprofd "
			    "--check prints more");
	assert_string_equal(ft->log,
			    "prog 'perf_sample': relo #4: failed to find a match\n"
			    "extern (func ksym) 'bpf_magic': not found in kernel or module "
			    "BTFs\n"
			    "failed to load object 'profile_bpf'\n"
			    "failed to load BPF skeleton 'profile_bpf': -22");
	features__free(f);
}

/* A program that verified, then could not be made (no file descriptor left): libbpf prints the
 * log of the successful verification; the cause is the error, with what to do about it. */
static void test_out_of_descriptors(void **state)
{
	struct features *f = features__new();
	const struct feature *ft = features__get(f, FEATURE_STAGES);

	libbpf_log__reset();
	libbpf_log__capture(LIBBPF_WARN, "libbpf: prog 'uprobe_stage_enter': BPF program load "
					 "failed: Too many open files\n");
	libbpf_log__capture(LIBBPF_WARN, "libbpf: prog 'uprobe_stage_enter': -- BEGIN PROG LOAD "
					 "LOG --\nprocessed 88 insns (limit 1000000) "
					 "max_states_per_insn 0\n-- END PROG LOAD LOG --\n");
	libbpf_log__capture(LIBBPF_WARN, "libbpf: prog 'uprobe_stage_enter': failed to load: "
					 "-24\n");
	libbpf_log__load_failed(f, FEATURE_STAGES, "", "stage_bpf", -EMFILE);
	assert_false(ft->verifier);
	assert_string_equal(ft->reason,
			    "libbpf could not load stage_bpf: prog 'uprobe_stage_enter': BPF "
			    "program load failed: Too many open files; raise the open-file limit "
			    "(ulimit -n, LimitNOFILE= in a unit); tailprofd --check prints more");
	features__free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_verifier_rejection),
	    cmocka_unit_test(test_latest_log_and_reset),
	    cmocka_unit_test(test_libbpf_error),
	    cmocka_unit_test(test_out_of_descriptors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
