// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of source lines: the DWARF reader (dwarf_lines) on a fixture with functions inlined
 * two deep and on a malformed debug file, and the per-object caches (source_lines): hits, the
 * budget, a file replaced. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#include "dwarf_lines.h"
#include "elf_object.h"
#include "source_lines.h"
#include "test_elf.h"
#include "test_files.h"

static const char *fixture(const char *env)
{
	const char *p = getenv(env);

	if (!p)
		fail_msg("%s is not set: run through meson test", env);
	return p;
}

/* The fixture's source file, as its DWARF should name it (absolute, no "..") */
static void source_path(char *out)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/lines_funcs.c", fixture("TAILPROF_FIXTURES_SRC"));
	assert_non_null(realpath(path, out));
}

/* The line of the source that holds "LINE: marker" (markers are unique). */
static uint32_t marker_line(const char *marker)
{
	char path[PATH_MAX], want[128], buf[512];
	uint32_t n = 0, found = 0;
	FILE *f;

	source_path(path);
	snprintf(want, sizeof(want), "LINE: %s */", marker);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f)) {
		n++;
		if (strstr(buf, want)) {
			assert_int_equal(found, 0);
			found = n;
		}
	}
	fclose(f);
	if (!found)
		fail_msg("no marker \"%s\" in %s", marker, path);
	return found;
}

/* Where lines_outer's code is, from the fixture's symbol table. */
static void outer_extent(const char *path, uint64_t *start, uint64_t *size)
{
	test_elf_symbol(path, "lines_outer", start, size);
	assert_true(*size > 8);
}

static void check_line(const char *function, const char *file, uint32_t line, uint32_t start,
		       const char *want_function, const char *want_file, const char *line_marker,
		       const char *decl_marker)
{
	assert_non_null(function);
	assert_string_equal(function, want_function);
	assert_non_null(file);
	assert_string_equal(file, want_file);
	assert_int_equal(line, marker_line(line_marker));
	assert_int_equal(start, marker_line(decl_marker));
}

/* --- the DWARF reader --- */

static void test_dwarf_inline_chain(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LINES_LIB");
	uint64_t start = 0, size = 0;
	size_t depth[DWARF_LINES_MAX + 1] = {0};
	char src[PATH_MAX];
	struct dwarf_lines *dl;
	int fd = open(lib, O_RDONLY);

	(void)state;
	source_path(src);
	assert_true(fd >= 0);
	dl = dwarf_lines__open(fd);
	close(fd); /* the reader keeps its own */
	assert_non_null(dl);
	assert_true(dwarf_lines__nr_units(dl) >= 1);
	outer_extent(lib, &start, &size);
	for (uint64_t a = start; a < start + size; a++) {
		struct dwarf_line l[DWARF_LINES_MAX];
		size_t n = dwarf_lines__lookup(dl, a, l, DWARF_LINES_MAX);

		assert_true(n <= 3);
		depth[n]++;
		if (!n)
			continue;
		/* the out-of-line function last, whatever is inlined at a */
		assert_string_equal(l[n - 1].name, "lines_outer");
		assert_null(l[n - 1].linkage_name);
		assert_int_equal(l[n - 1].decl_line, marker_line("outer decl"));
		if (n == 3) {
			/* innermost first, each at the line where it called the one before */
			check_line(l[0].name, l[0].file, l[0].line, l[0].decl_line, "lines_leaf",
				   src, "leaf body", "leaf decl");
			check_line(l[1].name, l[1].file, l[1].line, l[1].decl_line, "lines_mid",
				   src, "mid calls leaf", "mid decl");
			check_line(l[2].name, l[2].file, l[2].line, l[2].decl_line, "lines_outer",
				   src, "outer calls mid", "outer decl");
			/* at most max: the innermost and the outermost */
			assert_int_equal(dwarf_lines__lookup(dl, a, l, 2), 2);
			assert_string_equal(l[0].name, "lines_leaf");
			assert_string_equal(l[1].name, "lines_outer");
			assert_int_equal(l[1].line, marker_line("outer calls mid"));
			assert_int_equal(dwarf_lines__lookup(dl, a, l, 1), 1);
			assert_string_equal(l[0].name, "lines_outer");
		}
	}
	/* code of lines_leaf inlined two deep, and code of lines_outer's own */
	assert_true(depth[3] > 0);
	assert_true(depth[1] > 0);
	{
		struct dwarf_line l[4];

		assert_int_equal(dwarf_lines__lookup(dl, 0x10, l, 4), 0);
		assert_int_equal(dwarf_lines__lookup(dl, UINT64_MAX - 1, l, 4), 0);
	}
	dwarf_lines__close(dl);
	dwarf_lines__close(NULL);
}

static void test_dwarf_none(void **state)
{
	/* stripped: no DWARF; kallsyms text: no ELF */
	const char *paths[] = {fixture("TAILPROF_FIXTURE_STRIPPED_LIB"),
			       fixture("TAILPROF_FIXTURE_KALLSYMS")};
	const int want[] = {ENOENT, ENOEXEC};

	(void)state;
	for (int i = 0; i < 2; i++) {
		int fd = open(paths[i], O_RDONLY);

		assert_true(fd >= 0);
		errno = 0;
		assert_null(dwarf_lines__open(fd));
		assert_int_equal(errno, want[i]);
		close(fd);
	}
}

/* A debug file whose .debug_line_str ends inside the name of a source file (no NUL up to the
 * section's end), which libdw hands out as it is: the frame keeps its function and line, its file
 * is unknown, and nothing is read past the section. tests/fuzz/fuzz_dwarf_lines.c found it
 * (the reader's strstr ran past the buffer); the input is in its corpus. */
static void test_dwarf_unterminated_string(void **state)
{
	char path[PATH_MAX];
	struct dwarf_line l[4];
	struct dwarf_lines *dl;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/../fuzz/corpus/dwarf_lines/unterminated-path",
		 fixture("TAILPROF_FIXTURES_SRC"));
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	dl = dwarf_lines__open(fd);
	assert_non_null(dl);
	assert_int_equal(dwarf_lines__lookup(dl, 0x11f3, l, 4), 1);
	assert_string_equal(l[0].name, "fixture_beta");
	assert_int_equal(l[0].line, 33);
	assert_null(l[0].file);
	dwarf_lines__close(dl);
	close(fd);
}

/* --- the caches --- */

/* An object read from the ELF file at path, its DWARF there (as the symbolizer records it). */
static struct object *load_object(const char *path)
{
	struct object *obj = object__new(path);
	struct elf_file ef;
	struct stat st;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(elf_file__open(&ef, fd), 0);
	assert_true(ef.has_dwarf);
	assert_int_equal(elf_file__load(&ef, NULL, 0, obj), 0);
	elf_file__close(&ef);
	close(fd);
	obj->dwarf.paths[0] = strdup(path);
	obj->dwarf.dev = st.st_dev;
	obj->dwarf.inode = st.st_ino;
	obj->dwarf.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	obj->dwarf.size_bytes = st.st_size;
	return obj;
}

/* The first address of lines_outer (in path) where lines_leaf is inlined, and one where nothing
 * is. */
static void pick_addresses(const char *path, uint64_t *inlined, uint64_t *own)
{
	struct dwarf_lines *dl;
	uint64_t start = 0, size = 0;
	int fd = open(path, O_RDONLY);

	*inlined = *own = 0;
	dl = dwarf_lines__open(fd);
	close(fd);
	assert_non_null(dl);
	outer_extent(path, &start, &size);
	for (uint64_t a = start; a < start + size; a++) {
		struct dwarf_line l[4];
		size_t n = dwarf_lines__lookup(dl, a, l, 4);

		if (n == 3 && !*inlined)
			*inlined = a;
		if (n == 1 && !*own)
			*own = a;
	}
	dwarf_lines__close(dl);
	assert_true(*inlined && *own);
}

static void test_cache(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LINES_LIB");
	struct source_lines_stats before, st;
	struct source_line l[SOURCE_LINES_MAX];
	struct line_reader *r1, *r2;
	uint64_t inlined, own;
	struct object *obj, *plain;
	char src[PATH_MAX];
	size_t n;

	(void)state;
	source_path(src);
	pick_addresses(lib, &inlined, &own);
	obj = load_object(lib);
	source_lines__stats(&before);
	r1 = line_reader__new(0);
	assert_non_null(r1);
	/* asked for 2: the whole chain is cached all the same */
	assert_int_equal(line_reader__lookup(r1, obj, inlined, l, 2), 2);
	assert_string_equal(l[1].function, "lines_outer");
	assert_int_equal(line_reader__lookup(r1, obj, inlined, l, SOURCE_LINES_MAX), 3);
	check_line(l[0].function, l[0].file, l[0].line, l[0].start_line, "lines_leaf", src,
		   "leaf body", "leaf decl");
	check_line(l[2].function, l[2].file, l[2].line, l[2].start_line, "lines_outer", src,
		   "outer calls mid", "outer decl");
	assert_null(l[0].system_name); /* C: no linkage name */
	assert_int_equal(line_reader__lookup(r1, obj, own, l, SOURCE_LINES_MAX), 1);
	assert_string_equal(l[0].function, "lines_outer");
	source_lines__stats(&st);
	assert_int_equal(st.dwarf_reads, before.dwarf_reads + 1);
	assert_int_equal(st.objects, before.objects + 1);
	assert_true(st.bytes > before.bytes);

	/* another query's reader: from the cache, strings its own */
	r2 = line_reader__new(0);
	assert_int_equal(line_reader__lookup(r2, obj, inlined, l, SOURCE_LINES_MAX), 3);
	assert_string_equal(l[1].function, "lines_mid");
	assert_int_equal(line_reader__lookup(r2, obj, inlined, l, 2), 2);
	assert_string_equal(l[0].function, "lines_leaf");
	assert_string_equal(l[1].function, "lines_outer"); /* cut as the DWARF reader cuts */
	source_lines__stats(&st);
	assert_int_equal(st.dwarf_reads, before.dwarf_reads + 1);
	line_reader__free(r1);

	/* over the budget: the cache goes, the answer stays right */
	source_lines__set_budget(1);
	source_lines__stats(&st);
	assert_int_equal(st.objects, before.objects);
	assert_true(st.evicted_objects > before.evicted_objects);
	n = line_reader__lookup(r2, obj, own, l, SOURCE_LINES_MAX);
	assert_int_equal(n, 1);
	assert_string_equal(l[0].function, "lines_outer");
	source_lines__stats(&st);
	assert_int_equal(st.objects, before.objects);
	source_lines__set_budget(0);
	assert_int_equal(line_reader__lookup(r2, obj, inlined, l, SOURCE_LINES_MAX), 3);
	line_reader__free(r2);

	/* an object without DWARF location: no lines, no cache */
	plain = object__new("/nowhere/libplain.so");
	r1 = line_reader__new(0);
	assert_int_equal(line_reader__lookup(r1, plain, inlined, l, SOURCE_LINES_MAX), 0);
	line_reader__free(r1);
	object__put(plain);

	object__put(obj);
	source_lines__stats(&st);
	assert_int_equal(st.objects, before.objects);
	assert_int_equal(st.bytes, before.bytes);
}

/* A reader that spent its time reads no more DWARF, but still answers from the cache. */
static void test_read_time(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LINES_LIB");
	struct source_line l[SOURCE_LINES_MAX];
	struct source_lines_stats before, st;
	struct line_reader *slow, *r;
	uint64_t inlined, own;
	struct object *obj;

	(void)state;
	pick_addresses(lib, &inlined, &own);
	obj = load_object(lib);
	source_lines__stats(&before);
	slow = line_reader__new(1);
	assert_int_equal(line_reader__lookup(slow, obj, inlined, l, SOURCE_LINES_MAX), 3);
	assert_int_equal(line_reader__lookup(slow, obj, own, l, SOURCE_LINES_MAX), 0);
	source_lines__stats(&st);
	assert_int_equal(st.deferred, before.deferred + 1);
	r = line_reader__new(0);
	assert_int_equal(line_reader__lookup(r, obj, own, l, SOURCE_LINES_MAX), 1);
	line_reader__free(r);
	assert_int_equal(line_reader__lookup(slow, obj, own, l, SOURCE_LINES_MAX), 1);
	assert_int_equal(line_reader__lookup(slow, obj, inlined, l, SOURCE_LINES_MAX), 3);
	line_reader__free(slow);
	object__put(obj);
}

static void test_file_replaced(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LINES_LIB");
	char dir[PATH_MAX] = "/tmp/tailprof-lines-XXXXXX", copy[PATH_MAX + 16];
	struct source_lines_stats before, st;
	struct source_line l[SOURCE_LINES_MAX];
	struct line_reader *r;
	uint64_t inlined, own;
	struct object *obj;
	uint8_t *buf;
	size_t len;

	(void)state;
	pick_addresses(lib, &inlined, &own);
	assert_non_null(mkdtemp(dir));
	snprintf(copy, sizeof(copy), "%s/lib.so", dir);
	buf = test_slurp(lib, &len);
	test_spew(copy, buf, len);
	obj = load_object(copy);
	/* rewritten (another build, say) before any profile asked */
	buf[len] = 0;
	test_spew(copy, buf, len + 1);
	free(buf);
	source_lines__stats(&before);
	r = line_reader__new(0);
	assert_int_equal(line_reader__lookup(r, obj, inlined, l, SOURCE_LINES_MAX), 0);
	line_reader__free(r);
	source_lines__stats(&st);
	assert_int_equal(st.dwarf_failures, before.dwarf_failures + 1);
	/* not tried again */
	r = line_reader__new(0);
	assert_int_equal(line_reader__lookup(r, obj, own, l, SOURCE_LINES_MAX), 0);
	line_reader__free(r);
	source_lines__stats(&st);
	assert_int_equal(st.dwarf_failures, before.dwarf_failures + 1);
	assert_int_equal(st.dwarf_reads, before.dwarf_reads);
	object__put(obj);
	test_rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dwarf_inline_chain),
	    cmocka_unit_test(test_dwarf_none),
	    cmocka_unit_test(test_dwarf_unterminated_string),
	    cmocka_unit_test(test_cache),
	    cmocka_unit_test(test_read_time),
	    cmocka_unit_test(test_file_replaced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
