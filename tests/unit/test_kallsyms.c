// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the kernel object: kallsyms fixtures, hidden addresses, notes, the real kernel. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kallsyms.h"
#include "symbolizer.h"

static const char *fixture(const char *env)
{
	const char *p = getenv(env);

	if (!p)
		fail_msg("%s is not set: run through meson test", env);
	return p;
}

static struct symbolizer *kernel_symbolizer(const char *kallsyms, const char *notes)
{
	struct symbolizer_opts opts = {.kallsyms = kallsyms, .kernel_notes = notes};
	struct symbolizer *s = symbolizer__new(&opts);

	assert_non_null(s);
	return s;
}

static struct object *kernel_object(struct symbolizer *s)
{
	uint64_t addr = 0;
	struct frame f;

	symbolizer__resolve_kernel(s, &addr, 1, false, &f);
	assert_non_null(f.obj);
	return f.obj;
}

#define assert_ksym(obj, addr, name, start, module)                                                \
	do {                                                                                       \
		uint64_t s_ = 0;                                                                   \
		const char *n_ = object__lookup(obj, addr, &s_);                                   \
		const char *m_ = object__kernel_module(obj, addr);                                 \
		assert_non_null(n_);                                                               \
		assert_string_equal(n_, name);                                                     \
		assert_int_equal(s_, start);                                                       \
		if (module) {                                                                      \
			assert_non_null(m_);                                                       \
			assert_string_equal(m_, (const char *)(module));                           \
		} else {                                                                           \
			assert_null(m_);                                                           \
		}                                                                                  \
	} while (0)

static void test_fixture_core(void **state)
{
	struct symbolizer *s =
	    kernel_symbolizer(fixture("TAILPROF_FIXTURE_KALLSYMS"), "/nonexistent/notes");
	struct object *k = kernel_object(s);
	uint64_t start, limit, off;

	(void)state;
	assert_true(object__is_kernel(k));
	assert_string_equal(object__path(k), "[kernel.kallsyms]");
	assert_string_equal(object__name(k), "[kernel.kallsyms]");
	assert_string_equal(object__build_id(k), "");

	assert_null(object__lookup(k, 0xffffffff80ffffffull, NULL));
	assert_null(object__lookup(k, 0, NULL));
	/* Aliases _text, _stext, startup_64: the name without underscores. */
	assert_ksym(k, 0xffffffff81000000ull, "startup_64", 0xffffffff81000000ull, NULL);
	assert_ksym(k, 0xffffffff810000ffull, "startup_64", 0xffffffff81000000ull, NULL);
	assert_ksym(k, 0xffffffff81000100ull, "__pfx_schedule", 0xffffffff81000100ull, NULL);
	assert_ksym(k, 0xffffffff81000110ull, "schedule", 0xffffffff81000110ull, NULL);
	assert_ksym(k, 0xffffffff810001ffull, "schedule", 0xffffffff81000110ull, NULL);
	assert_ksym(k, 0xffffffff81000200ull, "arch_cpu_idle", 0xffffffff81000200ull, NULL);
	assert_ksym(k, 0xffffffff81000280ull, "weak_local_fn", 0xffffffff81000280ull, NULL);
	/* Data symbols (r, D, b) are not text: do_idle runs up to _etext. */
	assert_ksym(k, 0xffffffff81000400ull, "do_idle", 0xffffffff81000300ull, NULL);
	assert_ksym(k, 0xffffffff810004ffull, "do_idle", 0xffffffff81000300ull, NULL);
	/* The last core symbol before the modules covers a page, not the gap up to them. */
	assert_ksym(k, 0xffffffff810014ffull, "_etext", 0xffffffff81000500ull, NULL);
	assert_null(object__lookup(k, 0xffffffff81001500ull, NULL));
	assert_null(object__lookup(k, 0xffffffff82000000ull, NULL));

	object__range(k, &start, &limit, &off);
	assert_int_equal(start, 0xffffffff81000000ull);
	assert_int_equal(limit, 0xffffffffc0c01100ull);
	assert_int_equal(off, 0);
	symbolizer__free(s);
}

static void test_fixture_modules(void **state)
{
	struct symbolizer *s = kernel_symbolizer(fixture("TAILPROF_FIXTURE_KALLSYMS"), NULL);
	struct object *k = kernel_object(s);

	(void)state;
	/* Listed out of order in the file. */
	assert_ksym(k, 0xffffffffc0a01000ull, "nf_hook_slow", 0xffffffffc0a01000ull, "nf_tables");
	assert_ksym(k, 0xffffffffc0a013ffull, "nf_hook_slow", 0xffffffffc0a01000ull, "nf_tables");
	assert_ksym(k, 0xffffffffc0a01400ull, "nft_do_chain", 0xffffffffc0a01400ull, "nf_tables");
	assert_ksym(k, 0xffffffffc0a02fffull, "nf_tables_core_exit", 0xffffffffc0a02000ull,
		    "nf_tables");
	assert_null(object__lookup(k, 0xffffffffc0a03000ull, NULL));
	assert_null(object__kernel_module(k, 0xffffffffc0a03000ull));
	assert_ksym(k, 0xffffffffc0b00010ull, "bpf_prog_6deef7357e7b4530_perf_sample",
		    0xffffffffc0b00000ull, "bpf");
	assert_ksym(k, 0xffffffffc0c00000ull, "e1000_probe", 0xffffffffc0c00000ull, "e1000");
	assert_ksym(k, 0xffffffffc0c010ffull, "e1000_remove", 0xffffffffc0c00100ull, "e1000");
	assert_null(object__lookup(k, 0xffffffffc0c01100ull, NULL));
	assert_null(object__lookup(k, UINT64_MAX, NULL));
	symbolizer__free(s);
}

static void test_resolve_kernel(void **state)
{
	struct symbolizer *s = kernel_symbolizer(fixture("TAILPROF_FIXTURE_KALLSYMS"), NULL);
	uint64_t addrs[3] = {0xffffffff81000111ull, 0xffffffffc0a01001ull, 0x10};
	struct frame f[3];
	struct object *kept;

	(void)state;
	assert_int_equal(symbolizer__resolve_kernel(s, addrs, 3, true, f), 3);
	for (int i = 0; i < 3; i++) {
		assert_ptr_equal(f[i].obj, f[0].obj);
		assert_int_equal(f[i].addr, addrs[i]);
	}
	assert_string_equal(object__lookup(f[0].obj, f[0].addr, NULL), "schedule");
	assert_string_equal(object__lookup(f[1].obj, f[1].addr, NULL), "nf_hook_slow");
	assert_null(object__lookup(f[2].obj, f[2].addr, NULL));
	assert_int_equal(symbolizer__resolve_kernel(s, addrs, 0, false, f), 0);
	/* The kernel object outlives the symbolizer while referenced. */
	kept = object__get(f[0].obj);
	symbolizer__free(s);
	assert_string_equal(object__lookup(kept, 0xffffffff81000111ull, NULL), "schedule");
	object__put(kept);
}

/* kptr_restrict: every address reads 0. No symbols, no crash. */
static void test_hidden_addresses(void **state)
{
	struct symbolizer *s = kernel_symbolizer(fixture("TAILPROF_FIXTURE_KALLSYMS_ZERO"), NULL);
	struct object *k = kernel_object(s);
	uint64_t start = 1, limit = 1, off = 1;

	(void)state;
	assert_true(object__is_kernel(k));
	assert_null(object__lookup(k, 0, NULL));
	assert_null(object__lookup(k, 0xffffffff81000000ull, NULL));
	assert_null(object__kernel_module(k, 0));
	object__range(k, &start, &limit, &off);
	assert_int_equal(start, 0);
	assert_int_equal(limit, 0);
	symbolizer__free(s);

	/* No file at all. */
	s = kernel_symbolizer("/nonexistent/kallsyms", "/nonexistent/notes");
	k = kernel_object(s);
	assert_null(object__lookup(k, 0xffffffff81000000ull, NULL));
	assert_string_equal(object__build_id(k), "");
	symbolizer__free(s);
}

static void put_u32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, sizeof(v));
}

/* The build ID from a notes file laid out as /sys/kernel/notes: another note first. */
static void test_notes(void **state)
{
	const char *tmp = getenv("TMPDIR");
	unsigned char notes[128] = {};
	char path[4096];
	struct symbolizer *s;
	size_t n = 0;
	FILE *f;
	int fd;

	(void)state;
	put_u32(notes + n, 6); /* "Linux\0", padded to 8 */
	put_u32(notes + n + 4, 4);
	put_u32(notes + n + 8, 0x100);
	memcpy(notes + n + 12, "Linux", 6);
	n += 12 + 8 + 4;
	put_u32(notes + n, 4);
	put_u32(notes + n + 4, 20);
	put_u32(notes + n + 8, 3); /* NT_GNU_BUILD_ID */
	memcpy(notes + n + 12, "GNU", 4);
	for (int i = 0; i < 20; i++)
		notes[n + 16 + i] = i * 17;
	n += 16 + 20;

	snprintf(path, sizeof(path), "%s/tailprof-notes-XXXXXX", tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(notes, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	s = kernel_symbolizer(fixture("TAILPROF_FIXTURE_KALLSYMS"), path);
	assert_string_equal(object__build_id(kernel_object(s)),
			    "00112233445566778899aabbccddeeff10213243");
	symbolizer__free(s);

	/* Cut in the middle of the build ID note: none. */
	assert_int_equal(truncate(path, n - 8), 0);
	s = kernel_symbolizer(fixture("TAILPROF_FIXTURE_KALLSYMS"), path);
	assert_string_equal(object__build_id(kernel_object(s)), "");
	symbolizer__free(s);
	unlink(path);
}

/* The running kernel, when its symbols are visible. */
static void test_real_kallsyms(void **state)
{
	unsigned long long addr = 0, a;
	char line[512], type, name[256];
	struct symbolizer *s;
	struct object *k;
	uint64_t start;
	FILE *f;

	(void)state;
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		skip();
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 &&
		    !strcmp(name, "schedule") && (type == 'T' || type == 't'))
			addr = a;
	fclose(f);
	if (!addr)
		skip(); /* kptr_restrict */

	s = kernel_symbolizer(NULL, NULL);
	k = kernel_object(s);
	assert_string_equal(object__lookup(k, addr, &start), "schedule");
	assert_int_equal(start, addr);
	assert_string_equal(object__lookup(k, addr + 1, NULL), "schedule");
	assert_null(object__kernel_module(k, addr));
	if (access("/sys/kernel/notes", R_OK) == 0)
		assert_int_equal(strlen(object__build_id(k)), 40);
	symbolizer__free(s);
}

/* BPF trampolines: the symbols "bpf_trampoline_DIGITS" of module [bpf], each up to the next
 * symbol (at most a page); with hide_trampolines their frames are left out, wherever they are in
 * the stack, and nothing else is. */
static void test_trampolines(void **state)
{
	const char *path = fixture("TAILPROF_FIXTURE_KALLSYMS_TRAMPOLINES");
	const uint64_t addrs[] = {
	    0xffffffffc0b01023ull, /* the first trampoline (6.1: a page), left out */
	    0xffffffff81000210ull, /* hrtimer_nanosleep */
	    0xffffffffc0b02026ull, /* the second (6.12: 0xcd bytes), left out */
	    0xffffffffc0b020d0ull, /* a program just after it, kept */
	    0xffffffffc0b03010ull, /* "bpf_trampoline_": no key, kept */
	    0xffffffffc0b04000ull, /* "bpf_trampoline_42x", kept */
	    0xffffffffc0b05000ull, /* "bpf_trampoline_77" of another module, kept */
	    0xffffffff81000300ull, /* the core kernel's bpf_trampoline_lookup, kept */
	    0xffffffffc0b01fffull, /* the first trampoline's last byte, left out */
	};
	const size_t n = sizeof(addrs) / sizeof(addrs[0]);
	struct kernel_range *r;
	struct symbolizer_stats st;
	struct symbolizer *s;
	struct frame f[16];

	(void)state;
	assert_int_equal(kallsyms__trampolines(path, &r), 2);
	assert_int_equal(r[0].start, 0xffffffffc0b01000ull);
	assert_int_equal(r[0].end, 0xffffffffc0b02000ull);
	assert_int_equal(r[1].start, 0xffffffffc0b02000ull);
	assert_int_equal(r[1].end, 0xffffffffc0b020cdull);
	free(r);
	assert_int_equal(kallsyms__trampolines("/nonexistent/kallsyms", &r), -ENOENT);
	assert_null(r);

	s = symbolizer__new(&(struct symbolizer_opts){.kallsyms = path, .hide_trampolines = true});
	assert_non_null(s);
	assert_int_equal(symbolizer__resolve_kernel(s, addrs, n, true, f), n - 3);
	assert_int_equal(f[0].addr, addrs[1]);
	assert_string_equal(object__lookup(f[0].obj, f[0].addr, NULL), "hrtimer_nanosleep");
	for (size_t i = 1; i < n - 3; i++)
		assert_int_equal(f[i].addr, addrs[i + 2]);
	assert_string_equal(object__lookup(f[5].obj, f[5].addr, NULL), "bpf_trampoline_lookup");
	/* a blocked stack's leaf outside them: noted, read again only after 16 and a minute */
	for (int i = 0; i < 20; i++)
		assert_int_equal(symbolizer__resolve_kernel(s, addrs + 1, 2, true, f), 1);
	symbolizer__stats(s, &st);
	assert_int_equal(st.trampoline_frames, 3 + 20);
	assert_int_equal(st.trampoline_reads, 1);
	symbolizer__free(s);

	/* not asked: every frame stays */
	s = symbolizer__new(&(struct symbolizer_opts){.kallsyms = path});
	assert_int_equal(symbolizer__resolve_kernel(s, addrs, n, true, f), n);
	symbolizer__stats(s, &st);
	assert_int_equal(st.trampoline_reads, 0);
	symbolizer__free(s);
}

/* One read for both: the symbols kallsyms__load() gives and the trampolines
 * kallsyms__trampolines() gives, from the same file (the lines the symbols' parse cuts are read
 * for the trampolines first); an unreadable file gives its errno and an object without symbols. */
static void test_load_with_trampolines(void **state)
{
	const char *path = fixture("TAILPROF_FIXTURE_KALLSYMS_TRAMPOLINES");
	struct object *alone = kallsyms__load(path, NULL), *both;
	struct kernel_range *r, *r2;
	int n, n2;

	(void)state;
	both = kallsyms__load_with_trampolines(path, NULL, &r, &n);
	n2 = kallsyms__trampolines(path, &r2);
	assert_int_equal(n, 2);
	assert_int_equal(n2, 2);
	assert_memory_equal(r, r2, 2 * sizeof(*r));
	/* every symbol of the fixture, and the gaps after them, name the same */
	for (uint64_t a = 0xffffffff81000000ull; a < 0xffffffff81000500ull; a += 0x10)
		assert_ptr_equal(!object__lookup(both, a, NULL), !object__lookup(alone, a, NULL));
	for (uint64_t a = 0xffffffffc0b00000ull; a < 0xffffffffc0b07000ull; a += 0x80) {
		uint64_t s1 = 0, s2 = 0;
		const char *n1 = object__lookup(both, a, &s1), *n2 = object__lookup(alone, a, &s2);

		assert_true((n1 == NULL) == (n2 == NULL));
		if (n1) {
			assert_string_equal(n1, n2);
			assert_int_equal(s1, s2);
		}
	}
	assert_string_equal(object__lookup(both, 0xffffffff81000210ull, NULL), "hrtimer_nanosleep");
	assert_string_equal(object__lookup(both, 0xffffffffc0b01023ull, NULL),
			    "bpf_trampoline_6442458716");
	free(r);
	free(r2);
	object__put(both);
	object__put(alone);

	both = kallsyms__load_with_trampolines("/nonexistent/kallsyms", NULL, &r, &n);
	assert_int_equal(n, -ENOENT);
	assert_null(r);
	assert_null(object__lookup(both, 0xffffffff81000210ull, NULL));
	object__put(both);
}

/* More trampolines than are kept: the newest (listed last: the kernel appends new BPF symbols),
 * tailprofd's own among them, are; duplicates count once. */
static void test_many_trampolines(void **state)
{
	const char *tmp = getenv("TMPDIR");
	const size_t extra = 10;
	const uint64_t base = 0xffffffffc1000000ull;
	struct kernel_range *r;
	char path[4096];
	FILE *f;
	int fd, n;

	(void)state;
	snprintf(path, sizeof(path), "%s/tailprof-kallsyms-XXXXXX", tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	/* listed from the highest address down, as a rebuilt one can be anywhere */
	for (size_t i = 0; i < KALLSYMS_TRAMPOLINES_MAX + extra; i++)
		fprintf(f, "%" PRIx64 " t bpf_trampoline_%zu\t[bpf]\n",
			base + (KALLSYMS_TRAMPOLINES_MAX + extra - 1 - i) * 0x100, 6442450944 + i);
	fprintf(f, "%" PRIx64 " t bpf_trampoline_1\t[bpf]\n", base); /* again */
	fprintf(f, "%" PRIx64 " t bpf_prog_end\t[bpf]\n",
		base + (KALLSYMS_TRAMPOLINES_MAX + extra) * 0x100);
	assert_int_equal(fclose(f), 0);
	n = kallsyms__trampolines(path, &r);
	unlink(path);
	/* the first `extra + 1` listed (the highest addresses) gave way; base, listed last twice,
	 * is kept once */
	assert_int_equal(n, KALLSYMS_TRAMPOLINES_MAX - 1);
	assert_int_equal(r[0].start, base);
	assert_int_equal(r[0].end, base + 0x100);
	for (int i = 1; i < n; i++) {
		assert_true(r[i - 1].start < r[i].start);
		assert_int_equal(r[i].end - r[i].start, 0x100);
	}
	assert_int_equal(r[n - 1].start, base + (uint64_t)(KALLSYMS_TRAMPOLINES_MAX - 2) * 0x100);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixture_core),
	    cmocka_unit_test(test_fixture_modules),
	    cmocka_unit_test(test_resolve_kernel),
	    cmocka_unit_test(test_hidden_addresses),
	    cmocka_unit_test(test_notes),
	    cmocka_unit_test(test_real_kallsyms),
	    cmocka_unit_test(test_trampolines),
	    cmocka_unit_test(test_many_trampolines),
	    cmocka_unit_test(test_load_with_trampolines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
