// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the unwinder: this process's own maps (through a fake /proc root that points at
 * the real files), tables shared between processes and kept idle after the last one (evicted
 * for room), load
 * biases checked against the ELF symbol tables, the memory budget, the process limit and the
 * rescan rate limit. BPF is replaced by fake ops that record what they are given and a plain
 * array of rows. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sysinfo.h"
#include "unwind_table.h"
#include "unwinder.h"

/* ---- fake BPF ---- */

struct fake {
	int proc_sets, proc_drops;
	uint32_t last_pid;
	struct tp_proc_mappings last;
	int layout_sets, layout_err; /* set_layout calls, and what they return */
	uint32_t layout_dev;
	uint64_t layout_ino;
	struct tp_layout_table layout;
};

static struct fake fake;
static struct tp_unwind_row *rows;   /* the fake unwind_rows */
static struct tp_unwind_page *pages; /* the fake unwind_pages */

static int fake_set_process(void *ctx, uint32_t pid, const struct tp_proc_mappings *m)
{
	fake.last_pid = pid;
	fake.last = *m;
	fake.proc_sets++;
	return 0;
}

static void fake_drop_process(void *ctx, uint32_t pid)
{
	fake.proc_drops++;
}

static int fake_set_layout(void *ctx, uint32_t dev, uint64_t ino, const struct tp_layout_table *t)
{
	fake.layout_sets++;
	fake.layout_dev = dev;
	fake.layout_ino = ino;
	fake.layout = *t;
	return fake.layout_err;
}

static const struct unwinder_ops fake_ops = {
    .set_process = fake_set_process,
    .drop_process = fake_drop_process,
    .set_layout = fake_set_layout,
};

static uint64_t fake_now_ns;

static uint64_t fake_clock(void)
{
	return fake_now_ns;
}

/* ---- a fake /proc: PID/maps copied from ours, PID/root -> / ---- */

static char proc_root[] = "/tmp/tailprof_unwinder_XXXXXX";

static void fake_process(uint32_t pid)
{
	char path[PATH_MAX], buf[65536];
	int in, out;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u", proc_root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/root", proc_root, pid);
	unlink(path);
	assert_int_equal(symlink("/", path), 0);
	snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid);
	in = open("/proc/self/maps", O_RDONLY);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, n), n);
	close(in);
	close(out);
}

/* A fake process mapping only the lines of our maps that contain `only`. */
static void fake_process_only(uint32_t pid, const char *only)
{
	char path[PATH_MAX], line[4096];
	FILE *in, *out;

	fake_process(pid);
	snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid);
	in = fopen("/proc/self/maps", "r");
	out = fopen(path, "w");
	assert_true(in && out);
	while (fgets(line, sizeof(line), in))
		if (strstr(line, only))
			fputs(line, out);
	fclose(in);
	fclose(out);
}

static int setup(void **state)
{
	memset(&fake, 0, sizeof(fake));
	fake_now_ns = 1000000000;
	return 0;
}

static int teardown(void **state)
{
	free(rows);
	free(pages);
	rows = NULL;
	pages = NULL;
	memset(&fake, 0, sizeof(fake));
	return 0;
}

static struct unwinder *new_unwinder(uint32_t nr_rows, uint32_t max_procs)
{
	struct unwinder *u;

	rows = calloc(nr_rows, sizeof(*rows));
	pages = calloc(nr_rows / 16, sizeof(*pages));
	assert_non_null(rows);
	assert_non_null(pages);
	u = unwinder__new(&(struct unwinder_opts){
	    .ops = &fake_ops,
	    .rows = rows,
	    .nr_rows = nr_rows,
	    .pages = pages,
	    .nr_pages = nr_rows / 16,
	    .proc_root = proc_root,
	    .max_processes = max_procs,
	    .clock_ns = fake_clock,
	});

	assert_non_null(u);
	return u;
}

/* Link-time address of symbol name in the ELF file at path (independent of the code under
 * test), or 0. */
static uint64_t elf_symbol(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	uint64_t value = 0;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !value && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			gelf_getsym(d, i, &sym);
			if (sym.st_value &&
			    !strcmp(elf_strptr(elf, sh.sh_link, sym.st_name), name)) {
				value = sym.st_value;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return value;
}

static const struct tp_exec_mapping *mapping_of(const struct tp_proc_mappings *m, uint64_t addr)
{
	for (uint32_t i = 0; i < m->nr; i++) {
		if (i)
			assert_true(m->m[i - 1].end <= m->m[i].start); /* sorted, disjoint */
		if (addr >= m->m[i].start && addr < m->m[i].end)
			return &m->m[i];
	}
	return NULL;
}

__attribute__((noinline, used)) int unwinder_probe_fn(int x)
{
	return x * 7 + 1;
}

/* The mapping of addr has a table whose bias turns addr into the symbol's link-time address,
 * and whose row there is walkable. */
static void check_bias(const struct tp_proc_mappings *m, uint64_t addr, const char *file,
		       const char *sym)
{
	const struct tp_exec_mapping *e = mapping_of(m, addr);
	struct unwind_table t;
	const struct tp_unwind_row *r;
	uint64_t want = elf_symbol(file, sym);

	assert_non_null(e);
	assert_true(want != 0);
	assert_true(e->nr_rows > 0);
	assert_int_equal(addr - e->bias, want);
	t = (struct unwind_table){.rows = rows + e->row_start, .nr_rows = e->nr_rows};
	r = unwind_table__find(&t, addr - e->bias);
	assert_non_null(r);
	assert_true(r->cfa_type == TP_CFA_RSP || r->cfa_type == TP_CFA_RBP);
	/* the page index: the row in effect at each page's start, as the walker reads it */
	assert_true(e->nr_pages > 0);
	for (uint32_t p = 0; p < e->nr_pages; p++) {
		uint64_t pc = t.rows[0].pc + (uint64_t)p * TP_UNWIND_PAGE_BYTES;
		const struct tp_unwind_page *pg = &pages[e->pages_start + p];

		assert_ptr_equal(&t.rows[pg->first], unwind_table__find(&t, pc));
		assert_true(pg->first < pg->end && pg->end <= e->nr_rows);
		/* every PC of the page finds its row within [first, end) */
		assert_true(pg->end == e->nr_rows ||
			    t.rows[pg->end].pc > pc + TP_UNWIND_PAGE_BYTES - 1);
	}
	assert_int_equal(t.rows[0].pc + (uint64_t)(e->nr_pages - 1) * TP_UNWIND_PAGE_BYTES <=
			     t.rows[e->nr_rows - 1].pc,
			 1);
}

static void test_own_process(void **state)
{
	struct unwinder *u = new_unwinder(8 << 20, 16);
	struct unwinder_stats st;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	assert_true(n > 0);
	exe[n] = 0;
	fake_process(1001);
	assert_int_equal(unwinder__add_process(u, 1001, 42), 0);
	assert_int_equal(fake.last_pid, 1001);
	assert_int_equal(fake.last.start_ns, 42);
	assert_true(fake.last.nr >= 3); /* this test, libc, ld.so (and more) */
	check_bias(&fake.last, (uint64_t)(uintptr_t)unwinder_probe_fn, exe, "unwinder_probe_fn");
	check_bias(&fake.last, (uint64_t)(uintptr_t)qsort, "/usr/lib/x86_64-linux-gnu/libc.so.6",
		   "qsort");
	/* the same process again: nothing to do */
	assert_int_equal(unwinder__add_process(u, 1001, 42), 0);
	assert_int_equal(fake.proc_sets, 1);
	unwinder__stats(u, &st);
	assert_int_equal(st.processes, 1);
	assert_true(st.tables >= 3);
	assert_true(st.table_rows > 1000);
	assert_int_equal(st.capacity_rows, 8 << 20);
	assert_true(st.build_ns > 0);
	unwinder__free(u);
	assert_int_equal(fake.proc_drops, 1);
}

static void test_tables_shared_and_released(void **state)
{
	struct unwinder *u = new_unwinder(8 << 20, 16);
	struct unwinder_stats st, first;
	const struct tp_exec_mapping *libc;
	uint32_t libc_start;
	int drops;

	fake_process(1001);
	fake_process(1002);
	assert_int_equal(unwinder__add_process(u, 1001, 1), 0);
	unwinder__stats(u, &first);
	assert_true(first.tables >= 2);
	libc = mapping_of(&fake.last, (uint64_t)(uintptr_t)qsort);
	libc_start = libc->row_start;
	/* a second process mapping the same objects loads no new table */
	assert_int_equal(unwinder__add_process(u, 1002, 1), 0);
	unwinder__stats(u, &st);
	assert_int_equal(st.tables, first.tables);
	assert_int_equal(st.table_rows, first.table_rows);
	assert_int_equal(mapping_of(&fake.last, (uint64_t)(uintptr_t)qsort)->row_start, libc_start);
	/* an exit event after its mappings went to BPF: BPF dropped them itself, no delete */
	drops = fake.proc_drops;
	unwinder__forget_process(u, 1001, sysinfo__mono_ns());
	assert_int_equal(fake.proc_drops, drops);
	unwinder__stats(u, &st);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.tables, first.tables);
	/* the last one gone (at an event older than its mappings: they are deleted) */
	unwinder__forget_process(u, 1002, 1);
	assert_int_equal(fake.proc_drops, drops + 1);
	unwinder__stats(u, &st);
	assert_int_equal(st.processes, 0);
	assert_int_equal(st.objects, 0);
	assert_int_equal(st.idle_objects, first.objects);
	assert_int_equal(st.tables, first.tables);
	assert_int_equal(st.table_rows, first.table_rows);
	/* the next process of the same objects builds nothing: the same rows serve it */
	assert_int_equal(unwinder__add_process(u, 1001, 1), 0);
	assert_int_equal(mapping_of(&fake.last, (uint64_t)(uintptr_t)qsort)->row_start, libc_start);
	unwinder__stats(u, &st);
	assert_int_equal(st.builds, first.builds);
	assert_int_equal(st.idle_objects, 0);
	assert_int_equal(st.objects, first.objects);
	/* a pid reused by a new process (other start time) is read again */
	assert_int_equal(unwinder__add_process(u, 1001, 2), 0);
	assert_int_equal(fake.proc_sets, 4);
	unwinder__stats(u, &st);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.tables, first.tables);
	assert_int_equal(st.builds, first.builds);
	unwinder__free(u);
}

/* The rows a process mapping only `only` needs. */
static uint64_t rows_of(const char *only)
{
	struct unwinder *u = new_unwinder(8 << 20, 16);
	struct unwinder_stats st;

	fake_process_only(3001, only);
	assert_int_equal(unwinder__add_process(u, 3001, 1), 0);
	unwinder__stats(u, &st);
	unwinder__free(u);
	teardown(NULL);
	return st.table_rows;
}

/* An idle table gives its room to a new one; one still mapped does not. */
static void test_idle_tables_evicted_for_room(void **state)
{
	uint64_t libc = rows_of("/libc.so"), cmocka = rows_of("/libcmocka.so");
	struct unwinder *u;
	struct unwinder_stats st;

	assert_true(libc > 1000 && cmocka > 64);
	/* room for libc's table and 32 rows more */
	u = new_unwinder((uint32_t)libc + 32, 16);
	fake_process_only(2001, "/libc.so");
	fake_process_only(2002, "/libcmocka.so");
	assert_int_equal(unwinder__add_process(u, 2001, 1), 0);
	assert_int_equal(mapping_of(&fake.last, (uint64_t)(uintptr_t)qsort)->nr_rows, libc);
	unwinder__forget_process(u, 2001, 0);
	unwinder__stats(u, &st);
	assert_int_equal(st.idle_objects, 1);
	assert_int_equal(st.table_rows, libc);
	/* cmocka's table needs libc's room: the idle table goes */
	assert_int_equal(unwinder__add_process(u, 2002, 1), 0);
	unwinder__stats(u, &st);
	assert_int_equal(st.idle_evicted, 1);
	assert_int_equal(st.idle_objects, 0);
	assert_int_equal(st.table_rows, cmocka);
	assert_int_equal(st.over_budget, 0);
	/* libc again, with cmocka's process alive: no room, frame pointers there */
	assert_int_equal(unwinder__add_process(u, 2001, 2), 0);
	assert_int_equal(mapping_of(&fake.last, (uint64_t)(uintptr_t)qsort)->nr_rows, 0);
	unwinder__stats(u, &st);
	assert_int_equal(st.over_budget, 1);
	assert_int_equal(st.table_rows, cmocka);
	/* a table that found no room is not kept idle: the next process tries again */
	unwinder__forget_process(u, 2001, 0);
	unwinder__forget_process(u, 2002, 0);
	unwinder__stats(u, &st);
	assert_int_equal(st.idle_objects, 1);
	assert_int_equal(unwinder__add_process(u, 2001, 3), 0);
	assert_int_equal(mapping_of(&fake.last, (uint64_t)(uintptr_t)qsort)->nr_rows, libc);
	unwinder__free(u);
}

static void test_budget_and_limits(void **state)
{
	/* room for small tables only: libc's (tens of thousands of rows) does not fit */
	struct unwinder *u = new_unwinder(8192, 1);
	const struct tp_exec_mapping *libc;
	struct unwinder_stats st;
	char gone[PATH_MAX + 16];

	fake_process(1001);
	fake_process(1002);
	assert_int_equal(unwinder__add_process(u, 1001, 1), 0);
	libc = mapping_of(&fake.last, (uint64_t)(uintptr_t)qsort);
	assert_non_null(libc);
	assert_int_equal(libc->nr_rows, 0);
	unwinder__stats(u, &st);
	assert_true(st.over_budget >= 1);
	assert_true(st.table_rows <= 8192);
	/* one process at most */
	assert_int_equal(unwinder__add_process(u, 1002, 1), -E2BIG);
	unwinder__stats(u, &st);
	assert_int_equal(st.procs_dropped, 1);
	/* a process whose exit we did not hear of is pruned once it is gone */
	assert_int_equal(unwinder__prune(u), 0);
	snprintf(gone, sizeof(gone), "rm -rf %s/1001", proc_root);
	assert_int_equal(system(gone), 0);
	assert_int_equal(unwinder__prune(u), 1);
	assert_int_equal(fake.proc_drops, 1);
	unwinder__stats(u, &st);
	assert_int_equal(st.processes, 0);
	assert_int_equal(st.objects, 0);
	/* a process that is gone */
	assert_true(unwinder__add_process(u, 999999, 1) < 0);
	unwinder__stats(u, &st);
	assert_int_equal(st.processes, 0);
	unwinder__free(u);
}

/* A process made from a static layout: its entry, relative to its start_code, becomes the
 * layout's tables, whose objects stay while BPF may use them; not when BPF set it already (taken
 * over then, or dropped where there is no room), nor for a process that maps more than its
 * executable or whose start_code lies outside its code, nor when BPF dropped the layout
 * meanwhile. Tables replaced or unused for a minute let their objects go a round later. */
static void test_layout_tables(void **state)
{
	struct unwinder *u = new_unwinder(8 << 20, 3);
	struct unwind_layout lay = {0}, taken;
	unsigned long lo = 0, hi = 0;
	const char *lib = NULL;
	struct unwinder_stats st;
	char line[4096];
	struct stat file;
	FILE *maps;

	/* "the executable": libcmocka, as mapped here; its code's mapping holds start_code */
	maps = fopen("/proc/self/maps", "r");
	assert_non_null(maps);
	while (!lib && fgets(line, sizeof(line), maps))
		if (strstr(line, "/libcmocka.so") && strstr(line, " r-xp ") &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			lib = strchr(line, '/');
	fclose(maps);
	assert_non_null(lib);
	*strchr(lib, '\n') = 0;
	assert_int_equal(stat(lib, &file), 0);
	lay.dev = file.st_dev;
	lay.ino = file.st_ino;
	lay.start_code = lo;
	/* a start_code outside its code: the maps are of another image */
	fake_process_only(4000, "/libcmocka.so");
	assert_int_equal(
	    unwinder__add_layout_process(
		u, 4000, 1,
		&(struct unwind_layout){.dev = lay.dev, .ino = lay.ino, .start_code = hi + 0x1000}),
	    0);
	assert_int_equal(fake.layout_sets, 0);
	unwinder__forget_process(u, 4000, 1);

	fake_process_only(4001, "/libcmocka.so");
	assert_int_equal(unwinder__add_layout_process(u, 4001, 1, &lay), 0);
	assert_int_equal(fake.layout_sets, 1);
	assert_int_equal(fake.layout_dev, major(file.st_dev) << 20 | minor(file.st_dev));
	assert_int_equal(fake.layout_ino, file.st_ino);
	assert_int_equal(fake.layout.nr, fake.last.nr);
	assert_int_equal(fake.layout.vdso, TP_LAYOUT_NO_VDSO);
	assert_int_equal(fake.layout.size, file.st_size);
	for (uint32_t i = 0; i < fake.last.nr; i++) {
		const struct tp_exec_mapping *t = &fake.layout.m[i], *e = &fake.last.m[i];

		/* the next process's start_code added back gives this one's entry */
		assert_int_equal(t->start + lay.start_code, e->start);
		assert_int_equal(t->end + lay.start_code, e->end);
		assert_int_equal(t->bias + lay.start_code, e->bias);
		assert_int_equal(t->row_start, e->row_start);
		assert_int_equal(t->nr_rows, e->nr_rows);
		assert_true(e->nr_rows > 0);
	}
	assert_int_equal(fake.layout.m[0].start, 0); /* its code starts at start_code */
	unwinder__stats(u, &st);
	assert_int_equal(st.layout_tables, 1);
	assert_int_equal(st.layout_pins, 1);
	/* the process gone, its objects stay referenced (BPF's tables use them): none idle */
	unwinder__forget_process(u, 4001, 1);
	unwinder__end_round(u);
	unwinder__stats(u, &st);
	assert_int_equal(st.processes, 0);
	assert_int_equal(st.idle_objects, 0);
	assert_true(st.objects >= 1);

	/* BPF set the next one's entry at its exec: taken over, nothing more to give */
	taken = lay;
	taken.tables_set = true;
	fake_process_only(4002, "/libcmocka.so");
	assert_int_equal(unwinder__add_layout_process(u, 4002, 1, &taken), 0);
	assert_int_equal(fake.layout_sets, 1);
	/* a process that maps more than the executable gives no tables */
	fake_process(4003);
	assert_int_equal(unwinder__add_layout_process(u, 4003, 1, &lay), 0);
	assert_int_equal(fake.layout_sets, 1);
	/* no room to take BPF's entry over (3 processes at most): it is dropped */
	fake_process_only(4004, "/libcmocka.so");
	assert_int_equal(unwinder__add_process(u, 4005, 1), -ENOENT); /* no such process */
	fake_process_only(4005, "/libcmocka.so");
	assert_int_equal(unwinder__add_process(u, 4005, 1), 0);
	fake.proc_drops = 0;
	assert_int_equal(unwinder__add_layout_process(u, 4004, 1, &taken), -E2BIG);
	assert_int_equal(fake.proc_drops, 1);
	unwinder__forget_process(u, 4003, 1);
	unwinder__forget_process(u, 4005, 1);
	/* BPF dropped the layout meanwhile: nothing kept for it */
	fake.layout_err = -ENOENT;
	assert_int_equal(unwinder__add_layout_process(u, 4004, 1, &lay), 0);
	assert_int_equal(fake.layout_sets, 2);
	unwinder__stats(u, &st);
	assert_int_equal(st.layout_tables, 1);
	assert_int_equal(st.layout_pins, 1);
	unwinder__forget_process(u, 4004, 1);
	unwinder__forget_process(u, 4002, 1);

	/* no process of the file for a minute: BPF's tables go, then the objects, a round on */
	fake.layout_err = 0;
	fake_now_ns += 61ull * 1000 * 1000 * 1000;
	unwinder__end_round(u);
	assert_int_equal(fake.layout_sets, 3);
	assert_int_equal(fake.layout.nr, 0);
	unwinder__stats(u, &st);
	assert_int_equal(st.layout_pins, 0);
	assert_true(st.objects >= 1); /* an exec may still be building from them */
	unwinder__end_round(u);
	unwinder__stats(u, &st);
	assert_int_equal(st.objects, 0);
	assert_int_equal(st.processes, 0);
	unwinder__free(u);
}

static void test_bad_options(void **state)
{
	struct tp_unwind_row one;

	assert_null(unwinder__new(&(struct unwinder_opts){.ops = &fake_ops}));
	assert_int_equal(errno, EINVAL);
	assert_null(
	    unwinder__new(&(struct unwinder_opts){.ops = &fake_ops, .rows = &one, .nr_rows = 1}));
	assert_int_equal(errno, EINVAL);
	assert_null(unwinder__new(NULL));
}

static void test_rescan_rate_limited(void **state)
{
	struct unwinder *u = new_unwinder(8 << 20, 4);
	struct unwinder_stats st;

	(void)state;
	fake_process_only(1001, "libc");
	/* unknown process: added */
	assert_int_equal(unwinder__rescan(u, 1001, 1, false), 1);
	assert_int_equal(fake.proc_sets, 1);
	/* its first rescan at once (the maps read at the add may lack libraries mapped since) */
	fake_process(1001);
	fake_now_ns += 1000000;
	assert_int_equal(unwinder__rescan(u, 1001, 1, false), 1);
	assert_int_equal(fake.proc_sets, 2);
	/* then, 100 ms after that scan: not again */
	fake_now_ns += 100000000;
	assert_int_equal(unwinder__rescan(u, 1001, 1, false), 0);
	assert_int_equal(fake.proc_sets, 2);
	/* 300 ms after: read, the same mappings: BPF is not told again, and the next waits 500 ms
	 */
	fake_now_ns += 200000000;
	assert_int_equal(unwinder__rescan(u, 1001, 1, false), 1);
	assert_int_equal(fake.proc_sets, 2);
	fake_now_ns += 400000000;
	assert_int_equal(unwinder__rescan(u, 1001, 1, false), 0);
	fake_now_ns += 100000000;
	assert_int_equal(unwinder__rescan(u, 1001, 1, false), 1);
	assert_int_equal(fake.proc_sets, 2);
	/* unchanged twice: 1 s now, but 250 ms for a leaf's PC (new code for sure); a change then
	 * is handed over and resets the wait to 250 ms */
	fake_now_ns += 249000000;
	assert_int_equal(unwinder__rescan(u, 1001, 1, true), 0);
	fake_now_ns += 750000000;
	assert_int_equal(unwinder__rescan(u, 1001, 1, false), 0);
	fake_process_only(1001, "libc");
	fake_now_ns += 1000000;
	assert_int_equal(unwinder__rescan(u, 1001, 1, false), 1);
	assert_int_equal(fake.proc_sets, 3);
	fake_now_ns += 250000000;
	fake_process(1001);
	assert_int_equal(unwinder__rescan(u, 1001, 1, false), 1);
	assert_int_equal(fake.proc_sets, 4);
	unwinder__stats(u, &st);
	assert_int_equal(st.rescans, 5);
	assert_int_equal(st.rescans_same, 2);
	unwinder__free(u);
}

static int group_setup(void **state)
{
	assert_non_null(mkdtemp(proc_root));
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", proc_root);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_own_process, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tables_shared_and_released, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_idle_tables_evicted_for_room, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_budget_and_limits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_layout_tables, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bad_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rescan_rate_limited, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
