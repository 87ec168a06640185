// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the mmap records' tables (records built here, as the kernel lays them out) and,
 * as root, of the kernel's own records of a child process against its /proc/PID/maps. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mmap_records.h"
#include "proc_maps.h"
#include "sysinfo.h"
#include "test_files.h"

static union {
	struct perf_event_header h;
	char bytes[512];
} rec;

/* Ends the record being built with its sample_id (pid, tid, time) and sets its size. */
static const struct perf_event_header *finish(size_t body, uint32_t pid, uint64_t ns)
{
	size_t off = sizeof(rec.h) + ((body + 7) & ~(size_t)7);

	memcpy(rec.bytes + off, &pid, 4);
	memcpy(rec.bytes + off + 4, &pid, 4);
	memcpy(rec.bytes + off + 8, &ns, 8);
	rec.h.size = (uint16_t)(off + 16);
	return &rec.h;
}

static void exec_rec(struct mmap_records *r, uint32_t pid, uint64_t ns)
{
	memset(&rec, 0, sizeof(rec));
	rec.h.type = PERF_RECORD_COMM;
	rec.h.misc = PERF_RECORD_MISC_COMM_EXEC;
	memcpy(rec.bytes + sizeof(rec.h), &pid, 4);
	memcpy(rec.bytes + sizeof(rec.h) + 4, &pid, 4);
	strcpy(rec.bytes + sizeof(rec.h) + 8, "prog");
	mmap_records__apply(r, finish(8 + 5, pid, ns));
}

static void mmap_rec(struct mmap_records *r, uint32_t pid, uint64_t ns, uint64_t addr, uint64_t len,
		     uint64_t pgoff, uint64_t ino, int prot, const char *name)
{
	uint32_t ids[2] = {pid, pid}, maj = 8, min = 1, flags = MAP_PRIVATE, p = (uint32_t)prot;
	uint64_t v[3] = {addr, len, pgoff}, inogen[2] = {ino, 0};
	char *b = rec.bytes + sizeof(rec.h);

	memset(&rec, 0, sizeof(rec));
	rec.h.type = PERF_RECORD_MMAP2;
	memcpy(b, ids, 8);
	memcpy(b + 8, v, 24);
	memcpy(b + 32, &maj, 4);
	memcpy(b + 36, &min, 4);
	memcpy(b + 40, inogen, 16);
	memcpy(b + 56, &p, 4);
	memcpy(b + 60, &flags, 4);
	strcpy(b + 64, name);
	mmap_records__apply(r, finish(64 + strlen(name) + 1, pid, ns));
}

static void task_rec(struct mmap_records *r, int type, uint32_t pid, uint32_t ppid, uint32_t tid,
		     uint64_t ns)
{
	uint32_t ids[4] = {pid, ppid, tid, ppid};

	memset(&rec, 0, sizeof(rec));
	rec.h.type = (uint32_t)type;
	memcpy(rec.bytes + sizeof(rec.h), ids, 16);
	memcpy(rec.bytes + sizeof(rec.h) + 16, &ns, 8);
	mmap_records__apply(r, finish(24, pid, ns));
}

static struct proc_maps maps_of(struct mmap_records *r, uint32_t pid, int want)
{
	struct proc_maps m;

	assert_int_equal(mmap_records__maps(r, pid, 0, 100, &m), want);
	return m;
}

/* The maps of the process of pid that started at start_ns, live or exited. */
static struct proc_maps maps_at(struct mmap_records *r, uint32_t pid, uint64_t start_ns, int want)
{
	struct proc_maps m;

	assert_int_equal(mmap_records__maps(r, pid, start_ns, 100, &m), want);
	return m;
}

#define RX (PROT_READ | PROT_EXEC)

/* An exec empties the table; executable mappings go in sorted; a data mapping, one of another
 * process or one from before the exec does not; names as /proc gives them. */
static void test_exec_and_mappings(void **state)
{
	struct mmap_records *r = mmap_records__new(0, NULL, 0);
	struct proc_maps m;

	(void)state;
	assert_non_null(r);
	m = maps_of(r, 10, -ENOENT); /* never seen: /proc */
	exec_rec(r, 10, 100);
	mmap_rec(r, 10, 90, 0x5000, 0x1000, 0, 7, RX, "/old/image"); /* before the exec */
	mmap_rec(r, 10, 101, 0x7000, 0x2000, 0x1000, 7, RX, "/usr/bin/prog");
	mmap_rec(r, 10, 102, 0x1000, 0x1000, 0, 0, RX, "[vdso]");
	mmap_rec(r, 10, 103, 0x9000, 0x1000, 0, 9, PROT_READ, "/usr/lib/data");
	mmap_rec(r, 10, 104, 0xa000, 0x1000, 0, 0, RX, "//anon");
	mmap_rec(r, 10, 105, 0xb000, 0x1000, 0x3000, 12, RX, "/tmp/lib.so (deleted)");
	mmap_rec(r, 11, 106, 0xc000, 0x1000, 0, 13, RX, "/other");
	m = maps_of(r, 10, 4);
	assert_int_equal(m.v[0].start, 0x1000);
	assert_string_equal(m.v[0].path, "[vdso]");
	assert_int_equal(m.v[1].start, 0x7000);
	assert_int_equal(m.v[1].end, 0x9000);
	assert_int_equal(m.v[1].pgoff, 0x1000);
	assert_int_equal(m.v[1].inode, 7);
	assert_int_equal(m.v[1].dev_major, 8);
	assert_string_equal(m.v[1].path, "/usr/bin/prog");
	assert_string_equal(m.v[2].path, "");
	assert_int_equal(m.v[2].inode, 0);
	assert_string_equal(m.v[3].path, "/tmp/lib.so");
	assert_true(m.v[3].deleted);
	proc_maps__clear(&m);
	/* exec again: a new image */
	exec_rec(r, 10, 200);
	m = maps_of(r, 10, 0);
	mmap_records__free(r);
}

/* A mapping replaces what it overlaps: a head and a tail cut, one inside split in two (the tail's
 * file offset moved on), those covered gone. */
static void test_overlaps(void **state)
{
	struct mmap_records *r = mmap_records__new(0, NULL, 0);
	struct proc_maps m;

	(void)state;
	exec_rec(r, 5, 1);
	mmap_rec(r, 5, 2, 0x10000, 0x10000, 0, 1, RX, "/a");
	mmap_rec(r, 5, 3, 0x14000, 0x2000, 0, 2, RX, "/b"); /* inside /a */
	m = maps_of(r, 5, 3);
	assert_int_equal(m.v[0].end, 0x14000);
	assert_string_equal(m.v[1].path, "/b");
	assert_int_equal(m.v[2].start, 0x16000);
	assert_int_equal(m.v[2].pgoff, 0x6000);
	assert_string_equal(m.v[2].path, "/a");
	proc_maps__clear(&m);
	/* from /a's head through /b into /a's tail */
	mmap_rec(r, 5, 4, 0x12000, 0x6000, 0, 3, RX, "/c");
	m = maps_of(r, 5, 3);
	assert_int_equal(m.v[0].start, 0x10000);
	assert_int_equal(m.v[0].end, 0x12000);
	assert_string_equal(m.v[1].path, "/c");
	assert_int_equal(m.v[2].start, 0x18000);
	assert_int_equal(m.v[2].end, 0x20000);
	assert_int_equal(m.v[2].pgoff, 0x8000);
	proc_maps__clear(&m);
	/* over everything */
	mmap_rec(r, 5, 5, 0x8000, 0x20000, 0, 4, RX, "/d");
	m = maps_of(r, 5, 1);
	assert_string_equal(m.v[0].path, "/d");
	proc_maps__clear(&m);
	mmap_records__free(r);
}

/* A forked child starts with its parent's table (a thread makes none); the child of an unknown
 * process is unknown until its exec; an exit leaves the table to /proc; lost records drop all. */
static void test_fork_exit_lost(void **state)
{
	struct mmap_records *r = mmap_records__new(0, NULL, 0);
	struct mmap_records_stats st;
	struct proc_maps m;
	union {
		struct perf_event_header h;
		char bytes[64];
	} lost = {.h = {.type = PERF_RECORD_LOST, .size = 8 + 16 + 16}};
	uint64_t n = 3;

	(void)state;
	exec_rec(r, 20, 1);
	mmap_rec(r, 20, 2, 0x1000, 0x1000, 0, 1, RX, "/p");
	task_rec(r, PERF_RECORD_FORK, 21, 20, 21, 3);
	task_rec(r, PERF_RECORD_FORK, 20, 20, 22, 3); /* a thread */
	task_rec(r, PERF_RECORD_FORK, 31, 30, 31, 3); /* parent unknown */
	m = maps_of(r, 21, 1);
	assert_string_equal(m.v[0].path, "/p");
	proc_maps__clear(&m);
	m = maps_of(r, 22, -ENOENT);
	m = maps_of(r, 31, -ENOENT);
	mmap_rec(r, 21, 4, 0x2000, 0x1000, 0, 2, RX, "/q"); /* the child's own */
	m = maps_of(r, 20, 1);
	proc_maps__clear(&m);
	/* its fork record is its identity: written just after its start time (the slack), and
	 * the child of an unknown parent has one too; an exec'd process without one has none */
	assert_int_equal(mmap_records__is_process(r, 21, 2), 1);
	assert_int_equal(mmap_records__is_process(r, 21, 3), 1);
	assert_int_equal(mmap_records__is_process(r, 21, 4), 0);
	assert_int_equal(mmap_records__is_process(r, 31, 1), 1);
	assert_int_equal(mmap_records__is_process(r, 20, 1), 0);
	/* by its start time: the maps of that process, live or exited, and no other's */
	m = maps_at(r, 21, 2, 2);
	proc_maps__clear(&m);
	m = maps_at(r, 21, 4, -ENOENT);
	task_rec(r, PERF_RECORD_EXIT, 21, 20, 21, 5);
	m = maps_of(r, 21, -ENOENT);
	assert_int_equal(mmap_records__is_process(r, 21, 2), 0);
	m = maps_at(r, 21, 2, 2);
	assert_int_equal(m.v[0].start, 0x1000);
	assert_string_equal(m.v[1].path, "/q");
	proc_maps__clear(&m);
	mmap_records__stats(r, &st);
	assert_int_equal(st.served_exited, 1);
	/* the pid given to another process: the exited one's maps are gone with its table */
	task_rec(r, PERF_RECORD_FORK, 21, 20, 21, 500000000);
	m = maps_at(r, 21, 2, -ENOENT);
	m = maps_at(r, 21, 499999999, 1);
	proc_maps__clear(&m);
	memcpy(lost.bytes + 16, &n, 8);
	mmap_records__apply(r, &lost.h);
	m = maps_of(r, 20, -ENOENT);
	mmap_records__stats(r, &st);
	assert_int_equal(st.lost, 3);
	assert_int_equal(st.processes, 0);
	mmap_records__free(r);
}

/* The kernel's records (root): a child that execs, maps a library's code and makes anonymous
 * memory executable has, by its records, every executable mapping its /proc/PID/maps lists. */
static void test_kernel_records(void **state)
{
	uint8_t online[1024];
	long n = sysconf(_SC_NPROCESSORS_CONF);
	struct mmap_records *r;
	struct proc_maps have, fresh;
	int fds[2], st, anon = 0, ctypes = 0;
	pid_t pid;
	char c;

	(void)state;
	if (geteuid() != 0 || n <= 0 || n > 1024) {
		if (getenv("CI") && !strcmp(getenv("CI"), "true"))
			fail_msg("the kernel's records need root (CI runs as root)");
		skip();
	}
	assert_true(sysinfo__online_cpus(online, (size_t)n) > 0);
	r = mmap_records__new((uint32_t)n, online, 4);
	assert_non_null(r);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(fds[1], 1);
		/* python maps its libraries and modules, then makes a page of its own executable */
		execl("/usr/bin/python3.11", "python3.11", "-c",
		      "import ctypes, mmap, sys\n"
		      "m = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE,\n"
		      "              prot=mmap.PROT_READ | mmap.PROT_WRITE)\n"
		      "a = ctypes.addressof(ctypes.c_char.from_buffer(m))\n"
		      "libc = ctypes.CDLL(None)\n"
		      "libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]\n"
		      "assert libc.mprotect(a, 4096, 5) == 0\n"
		      "sys.stdout.write('x'); sys.stdout.flush()\n"
		      "import time; time.sleep(60)\n",
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	assert_true(proc_maps__load("/proc", (uint32_t)pid, 1 << 20, &fresh) > 3);
	assert_true(mmap_records__maps(r, (uint32_t)pid, 0, 4096, &have) > 3);
	for (size_t i = 0; i < fresh.nr; i++) {
		const struct proc_mapping *f = &fresh.v[i], *h = proc_maps__find(&have, f->start);

		anon += !f->inode && !f->path[0];
		ctypes += strstr(f->path, "/_ctypes.") != NULL;

		if (!h || h->start != f->start || h->end != f->end || h->inode != f->inode ||
		    strcmp(h->path, f->path))
			fail_msg("/proc has %" PRIx64 "-%" PRIx64 " %s, the records %s", f->start,
				 f->end, f->path, h ? h->path : "nothing there");
	}
	/* its fork record names it: /proc/PID/stat's start time (ticks since boot, the records'
	 * clock) is at most a tick before the exact one */
	{
		unsigned long long ticks = test_proc_stat_field(pid, 22); /* starttime */
		uint64_t ns_per_tick = 1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK);

		assert_int_equal(mmap_records__is_process(r, (uint32_t)pid, ticks * ns_per_tick),
				 1);
		assert_int_equal(mmap_records__is_process(r, (uint32_t)pid,
							  (ticks + 1) * ns_per_tick + 200000000),
				 0);
	}
	/* the page made executable by mprotect, and a module's library the interpreter mapped */
	assert_int_equal(anon, 1);
	assert_int_equal(ctypes, 1);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	close(fds[0]);
	proc_maps__clear(&have);
	proc_maps__clear(&fresh);
	mmap_records__free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exec_and_mappings),
	    cmocka_unit_test(test_overlaps),
	    cmocka_unit_test(test_fork_exit_lost),
	    cmocka_unit_test(test_kernel_records),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
