// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of GC tracking without BPF: options, GC windows, and discovery of fixture processes
 * (which object, how many processes use it, unsupported ones) through exec and exit notices. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gc.h"
#include "proc_maps.h"
#include "sysinfo.h"

static const char *fixture(const char *env)
{
	const char *p = getenv(env);

	if (!p)
		fail_msg("%s is not set: run through meson test", env);
	return p;
}

static void test_opts(void **state)
{
	struct gc_opts o = GC_OPTS_DEFAULT;

	assert_true(o.enabled && o.jvm && o.python && o.go);
	assert_int_equal(gc_opts__parse_mode("off", &o), 0);
	assert_false(o.enabled);
	assert_int_equal(gc_opts__parse_mode("auto", &o), 0);
	assert_true(o.enabled);
	assert_int_equal(gc_opts__parse_mode("on", &o), -EINVAL);
	assert_int_equal(gc_opts__parse_mode("", &o), -EINVAL);
}

static void test_window(void **state)
{
	struct gc_window *gw = NULL;
	struct gc_event ev = {.pid = 7, .runtime = TP_GC_PYTHON, .kind = TP_GC_PAUSE};

	for (int i = 0; i < GC_WINDOW_MAX_EVENTS; i++) {
		ev.start_ns = i;
		assert_int_equal(gc_window__add(&gw, &ev), 0);
	}
	assert_int_equal(gc_window__add(&gw, &ev), -ENOSPC);
	assert_int_equal(gw->nr, GC_WINDOW_MAX_EVENTS);
	assert_int_equal(gw->dropped, 1);
	assert_int_equal(gw->v[100].start_ns, 100);
	gc_window__free(gw);
	gc_window__free(NULL);
}

/* Starts a fixture that waits, and returns once it runs the fixture's image. */
static pid_t spawn(const char *path)
{
	char syscall_path[64];
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		execl(path, path, "wait", (char *)NULL);
		_exit(127);
	}
	/* started once it waits in pause(): /proc/PID/exe names the program as soon as its exec
	 * begins, and the kernel maps its segments one by one after that, so a scan before then
	 * found a half-mapped executable and no object (1 run in 6 while other processes come and
	 * go, with only the first segment mapped) */
	snprintf(syscall_path, sizeof(syscall_path), "/proc/%d/syscall", pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(syscall_path, "re");
		long nr = -1;

		if (f) {
			if (fscanf(f, "%ld", &nr) != 1)
				nr = -1;
			fclose(f);
		}
		if (nr == SYS_pause)
			return pid;
		usleep(2000);
	}
	fail_msg("%s did not start", path);
	return -1;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The status entry of the object whose path ends in name, or NULL. */
static const struct gc_object_status *find(struct gc *g, const char *name,
					   struct gc_object_status *v, size_t max)
{
	size_t n = gc__objects(g, v, max);

	for (size_t i = 0; i < n && i < max; i++) {
		const char *base = strrchr(v[i].path, '/');

		if (base && !strcmp(base + 1, name))
			return &v[i];
	}
	return NULL;
}

/* Process pid exits (reaped), and the tracker hears of it at a tick at now. */
static void end_process(struct gc *g, pid_t pid, uint64_t now)
{
	reap(pid);
	gc__process_exit(g, pid);
	gc__tick(g, now);
}

static void test_discovery(void **state)
{
	struct gc_opts opts = GC_OPTS_DEFAULT;
	struct gc_object_status v[64];
	const struct gc_object_status *o;
	struct gc *g;
	pid_t py1, py2, go;
	uint64_t now;

	g = gc__new(&opts, NULL);
	assert_non_null(g);
	assert_null(find(g, "gc_fixture_python", v, 64));
	py1 = spawn(fixture("TAILPROF_FIXTURE_GC_PYTHON"));
	py2 = spawn(fixture("TAILPROF_FIXTURE_GC_PYTHON"));
	go = spawn(fixture("TAILPROF_FIXTURE_GC_GO_STRIPPED"));
	gc__process_exec(g, py1, NULL);
	gc__process_exec(g, py2, NULL);
	gc__process_exec(g, go, NULL);
	now = sysinfo__mono_ns();
	gc__tick(g, now);

	/* one object for both processes (same device and inode) */
	o = find(g, "gc_fixture_python", v, 64);
	assert_non_null(o);
	assert_int_equal(o->info.runtime, TP_GC_PYTHON);
	assert_true(o->info.supported);
	assert_int_equal(o->processes, 2);
	assert_int_equal(o->probes, 0); /* no BPF here */
	o = find(g, "gc_fixture_go_stripped", v, 64);
	assert_non_null(o);
	assert_int_equal(o->state, GC_OBJ_UNSUPPORTED);
	assert_int_equal(o->processes, 1);
	assert_non_null(strstr(o->info.reason, "stripped"));

	/* the re-scan after exec does not count a process twice */
	gc__tick(g, now + 300 * 1000000ULL);
	assert_int_equal(find(g, "gc_fixture_python", v, 64)->processes, 2);

	end_process(g, py1, now + 400 * 1000000ULL);
	assert_int_equal(find(g, "gc_fixture_python", v, 64)->processes, 1);
	reap(py2);
	reap(go);
	gc__process_exit(g, py2);
	gc__process_exit(g, go);
	gc__tick(g, now + 500 * 1000000ULL);
	assert_int_equal(find(g, "gc_fixture_python", v, 64)->processes, 0);
	assert_int_equal(find(g, "gc_fixture_go_stripped", v, 64)->processes, 0);
	gc__free(g);
}

/* A runtime turned off is seen but not probed. */
static void test_disabled_runtime(void **state)
{
	struct gc_opts opts = GC_OPTS_DEFAULT;
	struct gc_object_status v[64];
	const struct gc_object_status *o;
	struct gc *g;
	pid_t py;

	opts.python = false;
	g = gc__new(&opts, NULL);
	py = spawn(fixture("TAILPROF_FIXTURE_GC_PYTHON"));
	gc__process_exec(g, py, NULL);
	gc__tick(g, sysinfo__mono_ns());
	o = find(g, "gc_fixture_python", v, 64);
	assert_non_null(o);
	assert_int_equal(o->state, GC_OBJ_DISABLED);
	reap(py);
	gc__free(g);
}

/* What an exec event would say of process pid running program path: the device and inode its
 * maps show for the program's mappings, and comm. */
static struct gc_exec exec_of(pid_t pid, const char *path, const char *comm)
{
	struct gc_exec x = {0};
	struct proc_maps maps = {0};

	assert_true(proc_maps__load("/proc", pid, 1 << 20, &maps) > 0);
	for (size_t i = 0; i < maps.nr; i++)
		if (!strcmp(maps.v[i].path, path)) {
			x.exe_dev = makedev(maps.v[i].dev_major, maps.v[i].dev_minor);
			x.exe_ino = maps.v[i].inode;
		}
	proc_maps__clear(&maps);
	assert_true(x.exe_ino != 0);
	snprintf(x.comm, sizeof(x.comm), "%s", comm);
	return x;
}

/* With the exec's identity of the executable, the look at exec needs nothing of /proc to skip
 * a program known not to be a runtime (this one is gone before the look), and the process's
 * GC events carry the exec's comm. */
static void test_exec_identity(void **state)
{
	const char *plain_path = fixture("TAILPROF_FIXTURE_GC_PLAIN");
	const char *py_path = fixture("TAILPROF_FIXTURE_GC_PYTHON");
	struct gc_opts opts = GC_OPTS_DEFAULT;
	struct tp_gc_event rec = {.record = TP_GC_REC_EVENT, .runtime = TP_GC_PYTHON};
	struct gc_exec plain_exec, py_exec;
	struct gc_event ev;
	struct gc_stats st;
	pid_t plain, py;
	uint64_t scans;
	struct gc *g;

	(void)state;
	g = gc__new(&opts, NULL);
	assert_non_null(g);
	plain = spawn(plain_path);
	plain_exec = exec_of(plain, plain_path, "");
	gc__process_exec(g, plain, &plain_exec);
	gc__tick(g, sysinfo__mono_ns());
	reap(plain);
	gc__stats(g, &st);
	assert_int_equal(st.exec_scans_skipped, 0);
	/* the same program again, its process gone before the look: skipped all the same */
	plain = spawn(plain_path);
	reap(plain);
	gc__process_exec(g, plain, &plain_exec);
	gc__tick(g, sysinfo__mono_ns());
	gc__stats(g, &st);
	assert_int_equal(st.exec_scans_skipped, 1);

	py = spawn(py_path);
	py_exec = exec_of(py, py_path, "exec-comm");
	gc__process_exec(g, py, &py_exec);
	gc__tick(g, sysinfo__mono_ns());
	rec.pid = py;
	gc__event(g, &rec, &ev);
	assert_string_equal(ev.comm, "exec-comm"); /* /proc/PID/comm says gc_fixture_pyth */
	reap(py);
	gc__process_exit(g, py);
	gc__tick(g, sysinfo__mono_ns());
	/* a runtime executable seen before: recorded by its identity alone, no
	 * maps read at the exec */
	gc__stats(g, &st);
	scans = st.scans;
	py = spawn(py_path);
	py_exec = exec_of(py, py_path, "second-py");
	gc__process_exec(g, py, &py_exec);
	/* its first pauses, before the tick handles the exec: the exec's comm all the same */
	rec.pid = py;
	gc__event(g, &rec, &ev);
	assert_string_equal(ev.comm, "second-py");
	gc__tick(g, sysinfo__mono_ns());
	gc__stats(g, &st);
	assert_int_equal(st.scans, scans);
	assert_int_equal(st.exec_scans_skipped, 2);
	rec.pid = py;
	gc__event(g, &rec, &ev);
	assert_string_equal(ev.comm, "second-py");
	reap(py);
	gc__free(g);
}

/* The look at a new image's libraries 300 ms after its exec is made in maps another module
 * read after the process's dynamic loader's work (gc__process_loaded), with no read of its own,
 * and then not again; a second exec before it was due leaves one look, of the new image. */
static void test_loaded_look_shared(void **state)
{
	const char *py_path = fixture("TAILPROF_FIXTURE_GC_PYTHON");
	struct gc_opts opts = GC_OPTS_DEFAULT;
	struct gc_object_status v[64];
	struct proc_maps maps;
	struct gc_exec py_exec;
	struct gc_stats st;
	uint64_t now, scans;
	struct gc *g;
	pid_t py;

	(void)state;
	g = gc__new(&opts, NULL);
	assert_non_null(g);
	py = spawn(py_path);
	py_exec = exec_of(py, py_path, "");
	now = sysinfo__mono_ns();
	gc__process_exec(g, py, &py_exec);
	gc__tick(g, now);
	gc__stats(g, &st);
	scans = st.scans;
	assert_int_equal(st.later_looks_shared, 0);
	assert_true(proc_maps__load("/proc", py, 1 << 20, &maps) > 0);
	gc__process_loaded(g, py, &maps);
	assert_null(maps.v); /* taken */
	gc__tick(g, now + 300 * 1000000ULL);
	gc__stats(g, &st);
	assert_int_equal(st.later_looks_shared, 1);
	assert_int_equal(st.scans, scans);
	assert_int_equal(find(g, "gc_fixture_python", v, 64)->processes, 1);
	/* nothing due after, nor for a second notice */
	assert_true(proc_maps__load("/proc", py, 1 << 20, &maps) > 0);
	gc__process_loaded(g, py, &maps);
	gc__tick(g, now + 700 * 1000000ULL);
	gc__stats(g, &st);
	assert_int_equal(st.later_looks_shared, 1);
	assert_int_equal(st.scans, scans);
	/* two execs of the pid in one drain: one look after them */
	gc__process_exec(g, py, &py_exec);
	gc__process_exec(g, py, &py_exec);
	gc__tick(g, now + 800 * 1000000ULL);
	gc__stats(g, &st);
	scans = st.scans;
	gc__tick(g, now + 1200 * 1000000ULL);
	gc__stats(g, &st);
	assert_int_equal(st.scans, scans + 1);
	assert_int_equal(find(g, "gc_fixture_python", v, 64)->processes, 1);
	end_process(g, py, now + 1300 * 1000000ULL);
	assert_int_equal(find(g, "gc_fixture_python", v, 64)->processes, 0);
	gc__free(g);
}

/* Processes that were running before the tracker started are found by its /proc scan; one
 * whose exit notice was lost is dropped by the next full scan. */
static void test_startup_scan(void **state)
{
	struct gc_opts opts = GC_OPTS_DEFAULT;
	struct gc_object_status v[64];
	struct gc *g;
	pid_t go;

	go = spawn(fixture("TAILPROF_FIXTURE_GC_GO"));
	g = gc__new(&opts, NULL);
	assert_int_equal(find(g, "gc_fixture_go", v, 64)->processes, 1);
	assert_string_equal(find(g, "gc_fixture_go", v, 64)->info.version, "go1.19.8");
	reap(go);
	gc__scan_all(g);
	assert_int_equal(find(g, "gc_fixture_go", v, 64)->processes, 0);
	gc__free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_opts),
	    cmocka_unit_test(test_window),
	    cmocka_unit_test(test_discovery),
	    cmocka_unit_test(test_disabled_runtime),
	    cmocka_unit_test(test_loaded_look_shared),
	    cmocka_unit_test(test_exec_identity),
	    cmocka_unit_test(test_startup_scan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
