// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of unwind table generation on fixture objects: frame pointer, no frame pointer, PLT
 * stubs, .debug_frame only, no unwind info, the outermost frame, and a non-ELF file. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unwind_table.h"

static const char *fixture(const char *env)
{
	const char *p = getenv(env);

	if (!p)
		fail_msg("%s is not set: run through meson test", env);
	return p;
}

/* Reads the symbol or section named name of path with libelf, independently of the code under
 * test: [*start, *end). Fails the test when there is none. */
static void find_elf(const char *path, const char *name, bool section, uint64_t *start,
		     uint64_t *end)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		assert_non_null(gelf_getshdr(scn, &sh));
		if (section) {
			if (!strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name)) {
				*start = sh.sh_addr;
				*end = sh.sh_addr + sh.sh_size;
				goto found;
			}
			continue;
		}
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			gelf_getsym(d, i, &sym);
			if (sym.st_value &&
			    !strcmp(elf_strptr(elf, sh.sh_link, sym.st_name), name)) {
				*start = sym.st_value;
				*end = sym.st_value + sym.st_size;
				goto found;
			}
		}
	}
	fail_msg("no %s %s in %s", section ? "section" : "symbol", name, path);
found:
	elf_end(elf);
	close(fd);
}

static void build(const char *env, struct unwind_table *t)
{
	int fd = open(fixture(env), O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(unwind_table__build_fd(fd, t), 0);
	close(fd);
	assert_true(t->nr_rows > 0);
	/* sorted, strictly ascending */
	for (size_t i = 1; i < t->nr_rows; i++)
		assert_true(t->rows[i - 1].pc < t->rows[i].pc);
}

/* Every row inside [start, end) must be walkable (not NONE, UNSUPPORTED or END). */
static void assert_walkable(const struct unwind_table *t, uint64_t start, uint64_t end)
{
	for (uint64_t pc = start; pc < end; pc++) {
		const struct tp_unwind_row *r = unwind_table__find(t, pc);

		assert_non_null(r);
		assert_true(r->cfa_type == TP_CFA_RSP || r->cfa_type == TP_CFA_RBP);
	}
}

static void test_frame_pointer(void **state)
{
	const char *path = fixture("TAILPROF_FIXTURE_UNWIND_FP");
	struct unwind_table t;
	const struct tp_unwind_row *r;
	uint64_t start, end;
	bool rbp_based = false;

	build("TAILPROF_FIXTURE_UNWIND_FP", &t);
	assert_false(t.from_debug_frame);
	find_elf(path, "unwind_big_frame", false, &start, &end);
	assert_walkable(&t, start, end);
	/* at entry: CFA = RSP + 8, RBP untouched; after push %rbp: RSP + 16, RBP at CFA - 16 */
	r = unwind_table__find(&t, start);
	assert_int_equal(r->cfa_type, TP_CFA_RSP);
	assert_int_equal(r->cfa_off8, 1);
	assert_int_equal(r->rbp_off8, 0);
	r = unwind_table__find(&t, start + 1);
	assert_int_equal(r->cfa_type, TP_CFA_RSP);
	assert_int_equal(r->cfa_off8, 2);
	assert_int_equal(r->rbp_off8, -2);
	/* in the body the CFA is RBP + 16 */
	for (uint64_t pc = start; pc < end; pc++) {
		r = unwind_table__find(&t, pc);
		if (r->cfa_type == TP_CFA_RBP) {
			assert_int_equal(r->cfa_off8, 2);
			assert_int_equal(r->rbp_off8, -2);
			rbp_based = true;
		}
	}
	assert_true(rbp_based);
	/* below the first FDE: no row */
	assert_null(unwind_table__find(&t, t.rows[0].pc - 1));
	assert_int_equal(t.nr_unsupported, 0);
	unwind_table__clear(&t);
	assert_null(t.rows);
	unwind_table__clear(NULL);
}

static void test_no_frame_pointer(void **state)
{
	const char *path = fixture("TAILPROF_FIXTURE_UNWIND_NOFP");
	struct unwind_table t;
	const struct tp_unwind_row *r;
	uint64_t start, end, max_off = 0;

	build("TAILPROF_FIXTURE_UNWIND_NOFP", &t);
	find_elf(path, "unwind_big_frame", false, &start, &end);
	assert_walkable(&t, start, end);
	for (uint64_t pc = start; pc < end; pc++) {
		r = unwind_table__find(&t, pc);
		assert_int_equal(r->cfa_type, TP_CFA_RSP);
		if (r->cfa_off8 * 8u > max_off)
			max_off = r->cfa_off8 * 8u;
	}
	/* the 5000-byte buffer is on the stack: CFA = RSP + more than 5000 somewhere */
	assert_true(max_off > 5000);
	/* a leaf without frame: CFA = RSP + 8 throughout */
	find_elf(path, "unwind_leaf", false, &start, &end);
	for (uint64_t pc = start; pc < end; pc++) {
		r = unwind_table__find(&t, pc);
		assert_int_equal(r->cfa_type, TP_CFA_RSP);
		assert_int_equal(r->cfa_off8, 1);
		assert_int_equal(r->rbp_off8, 0);
	}
	unwind_table__clear(&t);
}

static void test_plt(void **state)
{
	const char *path = fixture("TAILPROF_FIXTURE_UNWIND_FP");
	struct unwind_table t;
	const struct tp_unwind_row *r;
	uint64_t start, end;

	build("TAILPROF_FIXTURE_UNWIND_FP", &t);
	find_elf(path, ".plt", true, &start, &end);
	assert_true(end - start >= 32); /* PLT0 and at least one stub */
	/* PLT0 pushes once, then jumps: RSP + 16, then RSP + 24 */
	r = unwind_table__find(&t, start);
	assert_int_equal(r->cfa_type, TP_CFA_RSP);
	assert_int_equal(r->cfa_off8, 2);
	r = unwind_table__find(&t, start + 6);
	assert_int_equal(r->cfa_type, TP_CFA_RSP);
	assert_int_equal(r->cfa_off8, 3);
	/* the stubs: the PLT expression, CFA = RSP + 8 (+ 8 from the 11th byte of each stub) */
	for (uint64_t pc = start + 16; pc < end; pc++) {
		r = unwind_table__find(&t, pc);
		assert_int_equal(r->cfa_type, TP_CFA_PLT);
		assert_int_equal(r->cfa_off8, 11);
	}
	unwind_table__clear(&t);
}

static void test_debug_frame_only(void **state)
{
	const char *path = fixture("TAILPROF_FIXTURE_UNWIND_DEBUG");
	struct unwind_table t;
	uint64_t start, end;

	build("TAILPROF_FIXTURE_UNWIND_DEBUG", &t);
	assert_true(t.from_debug_frame);
	find_elf(path, "unwind_big_frame", false, &start, &end);
	assert_walkable(&t, start, end);
	unwind_table__clear(&t);
}

static void test_no_unwind_info(void **state)
{
	int fd = open(fixture("TAILPROF_FIXTURE_UNWIND_NONE"), O_RDONLY);
	struct unwind_table t;

	assert_true(fd >= 0);
	assert_int_equal(unwind_table__build_fd(fd, &t), -ENOENT);
	assert_null(t.rows);
	assert_int_equal(t.nr_rows, 0);
	close(fd);
}

static void test_outermost_frame(void **state)
{
	const char *path = fixture("TAILPROF_FIXTURE_PIE");
	struct unwind_table t;
	const struct tp_unwind_row *r;
	uint64_t start, end;

	build("TAILPROF_FIXTURE_PIE", &t);
	/* _start: the return address is undefined in CFI */
	find_elf(path, "_start", false, &start, &end);
	r = unwind_table__find(&t, start);
	assert_non_null(r);
	assert_int_equal(r->cfa_type, TP_CFA_END);
	unwind_table__clear(&t);
}

/* Go's stack tops end the walk (TP_CFA_END over the whole function, name or name.abi0), as
 * the runtime's traceback does; a name that only begins like one, another runtime function, and
 * the same object without a symbol table keep their CFI rows. */
static void test_go_stack_tops(void **state)
{
	const char *path = fixture("TAILPROF_FIXTURE_UNWIND_GO");
	static const char *const tops[] = {"runtime.mcall", "runtime.mstart.abi0"};
	static const char *const others[] = {"runtime.mcallx", "runtime.park_m"};
	struct unwind_table t, stripped;
	uint64_t start, end;

	(void)state;
	build("TAILPROF_FIXTURE_UNWIND_GO", &t);
	build("TAILPROF_FIXTURE_UNWIND_GO_STRIPPED", &stripped);
	for (size_t i = 0; i < 2; i++) {
		find_elf(path, tops[i], false, &start, &end);
		for (uint64_t pc = start; pc < end; pc++) {
			assert_int_equal(unwind_table__find(&t, pc)->cfa_type, TP_CFA_END);
			/* the same code without the names: its CFI */
			assert_int_equal(unwind_table__find(&stripped, pc)->cfa_type, TP_CFA_RSP);
		}
		find_elf(path, others[i], false, &start, &end);
		assert_walkable(&t, start, end);
	}
	/* the synthetic extents are not counted as FDEs read */
	assert_int_equal(t.nr_fdes, stripped.nr_fdes);
	unwind_table__clear(&t);
	unwind_table__clear(&stripped);
}

static void test_not_elf(void **state)
{
	char path[] = "/tmp/tailprof_unwind_XXXXXX";
	int fd = mkstemp(path);
	struct unwind_table t;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not an ELF file at all", 22), 22);
	assert_int_equal(unwind_table__build_fd(fd, &t), -ENOEXEC);
	assert_null(t.rows);
	close(fd);
	unlink(path);
	assert_true(unwind_table__bpf_bytes(1000) >= 8000);
}

/* The FDE list: each function of the fixture is one FDE, of its symbol's extent; from
 * .debug_frame when there is no .eh_frame; none without CFI. */
static void test_fdes(void **state)
{
	static const char *const envs[] = {"TAILPROF_FIXTURE_UNWIND_NOFP",
					   "TAILPROF_FIXTURE_UNWIND_DEBUG",
					   "TAILPROF_FIXTURE_UNWIND_NONE"};
	static const char *const fns[] = {"unwind_leaf", "unwind_big_frame", "unwind_calls_libc"};

	for (int e = 0; e < 3; e++) {
		const char *path = fixture(envs[e]);
		struct unwind_fde *fdes;
		size_t nr;
		int fd = open(path, O_RDONLY);
		Elf *elf;

		assert_true(fd >= 0);
		elf_version(EV_CURRENT);
		elf = elf_begin(fd, ELF_C_READ, NULL);
		assert_non_null(elf);
		if (e == 2) {
			assert_int_equal(unwind_table__fdes(elf, &fdes, &nr), -ENOENT);
			assert_null(fdes);
		} else {
			assert_int_equal(unwind_table__fdes(elf, &fdes, &nr), 0);
			for (size_t i = 1; i < nr; i++)
				assert_true(fdes[i - 1].start <= fdes[i].start);
			for (int f = 0; f < 3; f++) {
				uint64_t start, end;
				bool found = false;

				find_elf(path, fns[f], false, &start, &end);
				for (size_t i = 0; i < nr; i++)
					found =
					    found || (fdes[i].start == start && fdes[i].end == end);
				assert_true(found);
			}
			free(fdes);
		}
		elf_end(elf);
		close(fd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_frame_pointer),
	    cmocka_unit_test(test_no_frame_pointer),
	    cmocka_unit_test(test_plt),
	    cmocka_unit_test(test_debug_frame_only),
	    cmocka_unit_test(test_no_unwind_info),
	    cmocka_unit_test(test_outermost_frame),
	    cmocka_unit_test(test_go_stack_tops),
	    cmocka_unit_test(test_not_elf),
	    cmocka_unit_test(test_fdes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
