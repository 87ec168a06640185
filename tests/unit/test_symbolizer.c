// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the symbolizer: maps parsing, symbol tables, ELF layouts, caches, live /proc. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroups.h"
#include "demangle.h"
#include "elf_object.h"
#include "perf_map.h"
#include "proc_maps.h"
#include "symbolizer.h"
#include "test_elf.h"

#define PAGE	     ((uint64_t)4096)
#define PAGE_DOWN(x) ((x) & ~(PAGE - 1))
#define PAGE_UP(x)   (((x) + PAGE - 1) & ~(PAGE - 1))

static char fake_root[PATH_MAX];
static uint64_t ns_per_tick;

/* --- helpers: fixtures, the test's own ELF reading, a fake /proc --- */

static const char *fixture(const char *env)
{
	const char *p = getenv(env);

	if (!p)
		fail_msg("%s is not set: run through meson test", env);
	return p;
}

struct test_elf {
	int type;
	size_t nr_loads;
	GElf_Phdr loads[16];
	char build_id[2 * BUILD_ID_MAX_BYTES + 1];
};

/* Reads what the tests compare against with libelf, independently of the code under test. */
static void test_elf_read(const char *path, struct test_elf *te)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	GElf_Ehdr ehdr;
	size_t phnum;
	Elf *elf;

	memset(te, 0, sizeof(*te));
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_non_null(gelf_getehdr(elf, &ehdr));
	te->type = ehdr.e_type;
	assert_int_equal(elf_getphdrnum(elf, &phnum), 0);
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, i, &ph));
		if (ph.p_type == PT_LOAD && te->nr_loads < 16)
			te->loads[te->nr_loads++] = ph;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && gelf_getnote(d, 0, &nh, &name_off, &desc_off) && nh.n_type == 3 &&
		    nh.n_descsz <= BUILD_ID_MAX_BYTES) {
			for (size_t i = 0; i < nh.n_descsz; i++)
				sprintf(te->build_id + 2 * i, "%02x",
					((unsigned char *)d->d_buf)[desc_off + i]);
		}
	}
	elf_end(elf);
	close(fd);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* Creates (or updates) fake process pid under fake_root: its stat says starttime ticks; maps is
 * written when not NULL. */
static void fake_process(uint32_t pid, uint64_t starttime, const char *maps)
{
	char path[PATH_MAX + 64], stat[512];

	snprintf(path, sizeof(path), "%s/%u", fake_root, pid);
	mkdir(path, 0755);
	/* A comm with spaces and parentheses: fields restart after the last ')'. */
	snprintf(stat, sizeof(stat),
		 "%u (a (b) c) S 1 %u %u 0 -1 4194304 10 0 0 0 1 2 0 0 20 0 1 0 %" PRIu64
		 " 1000000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
		 pid, pid, pid, starttime);
	snprintf(path, sizeof(path), "%s/%u/stat", fake_root, pid);
	write_file(path, stat);
	if (maps) {
		snprintf(path, sizeof(path), "%s/%u/maps", fake_root, pid);
		write_file(path, maps);
	}
}

/* Appends the maps lines of ELF file path loaded with bias (address = bias + vaddr), as the
 * dynamic loader maps PT_LOAD segments: page-rounded, at the page-rounded file offset. */
static void append_elf_maps(char *buf, size_t cap, const char *path, uint64_t bias)
{
	struct test_elf te;
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	test_elf_read(path, &te);
	for (size_t i = 0; i < te.nr_loads; i++) {
		const GElf_Phdr *ph = &te.loads[i];
		size_t len = strlen(buf);

		snprintf(buf + len, cap - len,
			 "%" PRIx64 "-%" PRIx64 " %c%c%cp %08" PRIx64 " %02x:%02x %" PRIu64
			 "                   %s\n",
			 bias + PAGE_DOWN(ph->p_vaddr), bias + PAGE_UP(ph->p_vaddr + ph->p_memsz),
			 ph->p_flags & PF_R ? 'r' : '-', ph->p_flags & PF_W ? 'w' : '-',
			 ph->p_flags & PF_X ? 'x' : '-', PAGE_DOWN(ph->p_offset), major(st.st_dev),
			 minor(st.st_dev), (uint64_t)st.st_ino, path);
	}
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup_fake_root(void **state)
{
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(fake_root, sizeof(fake_root), "%s/tailprof-sym-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(fake_root))
		return -1;
	ns_per_tick = 1000000000ull / sysconf(_SC_CLK_TCK);
	return 0;
}

static int teardown_fake_root(void **state)
{
	(void)state;
	return nftw(fake_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A symbolizer reading the fake /proc and the small kallsyms fixture. */
static struct symbolizer *fake_symbolizer(void)
{
	struct symbolizer_opts opts = {
	    .proc_root = fake_root,
	    .kallsyms = fixture("TAILPROF_FIXTURE_KALLSYMS"),
	    .kernel_notes = "/nonexistent",
	};
	struct symbolizer *s = symbolizer__new(&opts);

	assert_non_null(s);
	return s;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* --- symbol tables --- */

static const char *span_name(const struct symtab *t, uint64_t addr, uint64_t *start)
{
	const struct sym_span *sp = symtab__find(t, addr);

	if (!sp)
		return NULL;
	if (start)
		*start = sp->sym_start;
	return t->names + sp->name;
}

#define assert_span(t, addr, name, start)                                                          \
	do {                                                                                       \
		uint64_t s_ = 0;                                                                   \
		const char *n_ = span_name(t, addr, &s_);                                          \
		assert_non_null(n_);                                                               \
		assert_string_equal(n_, name);                                                     \
		assert_int_equal(s_, start);                                                       \
	} while (0)

static void test_symtab_nested(void **state)
{
	struct symtab_builder b = {};
	struct symtab t;
	uint64_t s;

	(void)state;
	assert_int_equal(symtab_builder__add(&b, 100, 200, "A_dynsym", 1 << 8, 0), 0);
	assert_int_equal(symtab_builder__add(&b, 100, 200, "A", 0, 0), 0);
	assert_int_equal(symtab_builder__add(&b, 100, 200, "__A", 0, 0), 0);
	assert_int_equal(symtab_builder__add(&b, 120, 140, "B", 0, 0), 0);
	assert_int_equal(symtab_builder__add(&b, 125, 130, "B2", 0, 0), 0);
	assert_int_equal(symtab_builder__add(&b, 150, 300, "C", 0, 0), 0);
	assert_int_equal(symtab_builder__add(&b, 400, 410, "E", 0, 0), 0);
	assert_int_equal(symtab_builder__add(&b, 500, 508, "__getpid", 0, 0), 0); /* global */
	assert_int_equal(symtab_builder__add(&b, 500, 508, "getpid", 1, 0), 0);	  /* weak */
	assert_int_equal(symtab_builder__add(&b, UINT64_MAX - 10, UINT64_MAX - 20, "wrap", 0, 0),
			 0);
	assert_int_equal(symtab_builder__finish(&b, SYMTAB_SIZED, 0, false, &t), 0);

	assert_null(span_name(&t, 99, &s));
	assert_span(&t, 100, "A", 100); /* best rank, fewest underscores */
	assert_span(&t, 119, "A", 100);
	assert_span(&t, 120, "B", 120);
	assert_span(&t, 125, "B2", 125);
	assert_span(&t, 129, "B2", 125);
	assert_span(&t, 130, "B", 120);
	assert_span(&t, 139, "B", 120);
	assert_span(&t, 140, "A", 100); /* the outer symbol resumes after the inner one */
	assert_span(&t, 149, "A", 100);
	assert_span(&t, 150, "C", 150); /* partial overlap: the later start wins */
	assert_span(&t, 199, "C", 150);
	assert_span(&t, 200, "C", 150);
	assert_span(&t, 299, "C", 150);
	assert_null(span_name(&t, 300, &s));
	assert_null(span_name(&t, 399, &s));
	assert_span(&t, 400, "E", 400);
	assert_span(&t, 409, "E", 400);
	assert_null(span_name(&t, 410, &s));
	assert_span(&t, 507, "getpid", 500); /* fewer underscores before binding */
	assert_span(&t, UINT64_MAX - 1, "wrap", UINT64_MAX - 10);
	symtab__clear(&t);

	/* Empty. */
	assert_int_equal(symtab_builder__finish(&b, SYMTAB_SIZED, 0, false, &t), 0);
	assert_null(span_name(&t, 0, &s));
	symtab__clear(&t);
}

/* --- /proc/PID/maps --- */

static const char sample_maps[] =
    "55d4c8a00000-55d4c8a02000 r--p 00000000 fd:01 1311 /usr/bin/app\n"
    "55d4c8a02000-55d4c8a08000 r-xp 00002000 fd:01 1311 /usr/bin/app\n"
    "55d4c9000000-55d4c9021000 rw-p 00000000 00:00 0                          [heap]\n"
    "7f0000000000-7f0000010000 rwxp 00000000 00:00 0 \n"
    "7f1000001000-7f1000100000 r-xp 00001000 fd:01 2222                       "
    "/opt/my app/lib x.so (deleted)\n"
    "this line is garbage\n"
    "7f2000000000-7f1000000000 r-xp 00000000 00:00 0 [backwards]\n"
    "7f3000028000-7f30001bd000 r-xp 00028000 FD:0A 3333                       "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7ffd3b5f9000-7ffd3b5fb000 r-xp 00000000 00:00 0                          [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* One executable mapping of /x/NAME, as a maps line */
static void write_maps(const char *path, const char *name)
{
	char text[128];

	snprintf(text, sizeof(text), "55d0c0000000-55d0c0001000 r-xp 00000000 08:01 1234 /x/%s\n",
		 name);
	write_text(path, text);
}

static void assert_maps_read(const char *root, uint32_t pid, const char *want)
{
	struct proc_maps m;
	char path[64];

	snprintf(path, sizeof(path), "/x/%s", want);
	assert_int_equal(proc_maps__load(root, pid, 1 << 20, &m), 1);
	assert_string_equal(m.v[0].path, path);
	proc_maps__clear(&m);
}

/* A file rewritten (truncated and written again, in two writes) by another thread every 2 ms,
 * versions of 1 MiB and 768 KiB of one repeated byte each, read every 200 us:
 * proc_read_file_whole_version() hands out only what the file held at one time (a whole version,
 * or the part of one written so far), and it met torn reads (the race was run) and read again.
 * Reads until 100 whole versions and 3 torn reads were seen, or for 5 s. */
#define VERSION_A_BYTES (1u << 20)
#define VERSION_B_BYTES (3u << 18)

struct rewriter {
	const char *path;
	bool append; /* append numbered lines instead of rewriting two versions */
	atomic_bool stop;
	atomic_int failed; /* a write that failed (cmocka's asserts belong to the test's thread) */
};

static void *rewrite_loop(void *arg)
{
	struct rewriter *r = arg;
	char *a = malloc(VERSION_A_BYTES), *b = malloc(VERSION_B_BYTES);
	int fd = open(r->path, O_WRONLY | O_CLOEXEC);
	off_t at = 0;

	if (!a || !b || fd < 0) {
		atomic_store(&r->failed, 1);
		goto out;
	}
	memset(a, 'a', VERSION_A_BYTES);
	memset(b, 'b', VERSION_B_BYTES);
	for (unsigned i = 0; !atomic_load(&r->stop) && !atomic_load(&r->failed); i++) {
		const char *v = i % 2 ? b : a;
		size_t n = i % 2 ? VERSION_B_BYTES : VERSION_A_BYTES;
		bool ok;

		if (r->append) {
			/* 512 lines of 9 bytes, "%08u\n", cut in two writes mid-line */
			char chunk[512 * 9 + 1];
			size_t len = 0;

			for (unsigned k = 0; k < 512; k++)
				len += snprintf(chunk + len, sizeof(chunk) - len, "%08u\n",
						i * 512 + k);
			ok = pwrite(fd, chunk, 100, at) == 100 &&
			     pwrite(fd, chunk + 100, len - 100, at + 100) == (ssize_t)(len - 100);
			at += len;
			if (at > (off_t)(16u << 20))
				break;
			if (at > (off_t)(4u << 20))
				usleep(200);
			continue;
		}
		/* in two writes: a reader can fall between them too */
		ok = !ftruncate(fd, 0) && pwrite(fd, v, n / 2, 0) == (ssize_t)(n / 2) &&
		     pwrite(fd, v + n / 2, n - n / 2, n / 2) == (ssize_t)(n - n / 2);
		if (!ok)
			atomic_store(&r->failed, 1);
		usleep(2000);
	}
out:
	if (fd >= 0)
		close(fd);
	free(a);
	free(b);
	return NULL;
}

/* Starts r's writer on a new file (r->path, a mkstemp template): returns the file open for
 * reading, and its /proc/self/fd path in self. */
static int writer_start(struct rewriter *r, pthread_t *t, char *self, size_t self_size)
{
	int fd = mkstemp((char *)r->path);

	assert_true(fd >= 0);
	snprintf(self, self_size, "/proc/self/fd/%d", fd);
	assert_int_equal(pthread_create(t, NULL, rewrite_loop, r), 0);
	return fd;
}

/* Stops r's writer and removes its file; its writes all succeeded. */
static void writer_stop(struct rewriter *r, pthread_t t, int fd)
{
	atomic_store(&r->stop, true);
	pthread_join(t, NULL);
	close(fd);
	unlink(r->path);
	assert_int_equal(atomic_load(&r->failed), 0);
}

static void test_read_whole_version(void **state)
{
	char path[] = "/tmp/tp_test_whole_XXXXXX", self[64];
	struct rewriter r = {.path = path};
	uint64_t torn = 0, end = monotonic_ns() + 5000000000ull;
	unsigned whole = 0, gave_up = 0;
	pthread_t t;
	int fd;

	(void)state;
	fd = writer_start(&r, &t, self, sizeof(self));
	for (int i = 0; monotonic_ns() < end && (whole < 100 || torn < 3); i++) {
		struct stat st;
		char *buf;
		size_t len;
		int err;

		assert_int_equal(fstat(fd, &st), 0);
		err = proc_read_file_whole_version(self, fd, 2u << 20, 3, &st, &buf, &len, &torn);
		if (err == -EAGAIN) {
			assert_null(buf);
			gave_up++;
			continue;
		}
		assert_int_equal(err, 0);
		/* a version the writer is still writing is not torn: it is read again later */
		if (len == VERSION_A_BYTES || len == VERSION_B_BYTES) {
			char c = len == VERSION_A_BYTES ? 'a' : 'b';

			for (size_t k = 0; k < len; k++)
				if (buf[k] != c)
					fail_msg("read %d: byte %zu of %zu is '%c', not '%c'", i, k,
						 len, buf[k], c);
			whole++;
		} else {
			/* between the truncate and the last write: a prefix of one version */
			for (size_t k = 1; k < len; k++)
				if (buf[k] != buf[0])
					fail_msg("read %d: a torn text of %zu bytes", i, len);
		}
		assert_int_equal((uint64_t)st.st_size, len);
		free(buf);
		usleep(200);
	}
	writer_stop(&r, t, fd);
	print_message("%u whole versions read, %" PRIu64
		      " torn reads thrown away, %u looks gave up\n",
		      whole, torn, gave_up);
	assert_true(whole >= 100);
	assert_true(torn >= 1);
}

/* A file appended to by another thread (lines "%08u\n" numbered from 0, 512 a time in two
 * writes, the first cut mid-line): 4 MiB at once, then every 200 us up to 16 MiB, read back to
 * back (each read some ms, so nearly all torn): every read is taken, whole lines in order, the
 * torn ones up to the size the file had before them. */
static void test_read_whole_version_appended(void **state)
{
	char path[] = "/tmp/tp_test_append_XXXXXX", self[64];
	struct rewriter r = {.path = path, .append = true};
	uint64_t torn = 0, end = monotonic_ns() + 3000000000ull;
	unsigned reads = 0;
	pthread_t t;
	int fd;

	(void)state;
	fd = writer_start(&r, &t, self, sizeof(self));
	for (struct stat st = {0}; st.st_size < (off_t)(4u << 20) && monotonic_ns() < end;
	     usleep(1000))
		assert_int_equal(fstat(fd, &st), 0);
	while (monotonic_ns() < end && reads < 100) {
		struct stat st;
		char *buf;
		size_t len;

		assert_int_equal(fstat(fd, &st), 0);
		assert_int_equal(
		    proc_read_file_whole_version(self, fd, 32u << 20, 3, &st, &buf, &len, &torn),
		    0);
		/* whole lines, numbered in order (a version cut mid-line is one the writer left so:
		 * its last line alone may be cut); every 1000th and the last whole one looked at */
		for (size_t line = 0, lines = len / 9; line < lines;
		     line = line + 1000 < lines - 1 ? line + 1000
			    : line == lines - 1	    ? lines
						    : lines - 1) {
			char want[10];

			snprintf(want, sizeof(want), "%08u\n", (unsigned)line);
			if (memcmp(buf + line * 9, want, 9))
				fail_msg("read %u: line %zu of %zu bytes is not %s", reads, line,
					 len, want);
		}
		free(buf);
		reads++;
	}
	writer_stop(&r, t, fd);
	print_message("%u reads of a growing file, %" PRIu64 " torn\n", reads, torn);
	assert_true(reads >= 10);
	assert_true(torn >= 3);
}

/* Within a round the mappings loaded first, or a process found gone, are handed out again,
 * unless the pid was forgotten (an exec, an exit); outside rounds, and in the next round, the
 * file is read. */
static void test_proc_maps_shared_in_round(void **state)
{
	char root[] = "/tmp/tailprof_maps_XXXXXX", dir[64], path[80];
	uint64_t shared0, read0, queried0, shared, nread, queried;
	struct proc_maps m;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/42", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/maps", dir);
	proc_maps__read_stats(&shared0, &read0, &queried0);
	write_maps(path, "A");
	proc_maps__begin_round();
	assert_maps_read(root, 42, "A");
	write_maps(path, "B");
	assert_maps_read(root, 42, "A");
	/* a module with a smaller bound that the mappings fit shares them too */
	assert_int_equal(proc_maps__load(root, 42, 128, &m), 1);
	assert_string_equal(m.v[0].path, "/x/A");
	proc_maps__clear(&m);
	proc_maps__read_stats(&shared, &nread, &queried);
	assert_int_equal(shared - shared0, 2);
	assert_int_equal(nread - read0, 1);
	/* a regular file has no PROCMAP_QUERY: its text was read */
	assert_int_equal(queried, queried0);
	/* an exec: the new image's maps */
	proc_maps__forget(42);
	assert_maps_read(root, 42, "B");
	proc_maps__end_round();
	write_maps(path, "C");
	assert_maps_read(root, 42, "C");
	write_maps(path, "D");
	assert_maps_read(root, 42, "D");
	proc_maps__begin_round();
	assert_maps_read(root, 42, "D");
	/* a process that is gone: the next module in the round does not look again (a file that
	 * appears now stands for a process that reused the pid, which an exec notice forgets) */
	assert_int_equal(proc_maps__load(root, 43, 1 << 20, &m), -ENOENT);
	assert_null(m.v);
	snprintf(dir, sizeof(dir), "%s/43", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/maps", dir);
	write_maps(path, "E");
	proc_maps__read_stats(&shared0, &read0, &queried0);
	assert_int_equal(proc_maps__load(root, 43, 1 << 20, &m), -ENOENT);
	assert_null(m.v);
	proc_maps__read_stats(&shared, &nread, &queried);
	assert_int_equal(shared, shared0);
	assert_int_equal(nread, read0);
	proc_maps__forget(43);
	assert_maps_read(root, 43, "E");
	proc_maps__end_round();
	unlink(path);
	rmdir(dir);
	snprintf(dir, sizeof(dir), "%s/42", root);
	snprintf(path, sizeof(path), "%s/maps", dir);
	unlink(path);
	rmdir(dir);
	rmdir(root);
}

/* A live process's mappings by PROCMAP_QUERY (where the kernel has it: Linux 6.11) are the
 * ones its maps text lists, field for field, a deleted file's path and mark included. */
static void test_proc_maps_query_matches_text(void **state)
{
	char tmpl[] = "/tmp/tailprof_exec_XXXXXX", *text;
	uint64_t s0, r0, q0, s1, r1, q1;
	struct proc_maps a, b;
	struct utsname u;
	unsigned major = 0, minor = 0;
	size_t len;
	void *mem;
	int fd;

	(void)state;
	/* a deleted file mapped executable (unless /tmp is mounted noexec) */
	fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	mem = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	unlink(tmpl);
	close(fd);
	proc_maps__read_stats(&s0, &r0, &q0);
	assert_true(proc_maps__load("/proc", (uint32_t)getpid(), 1 << 20, &a) > 2);
	proc_maps__read_stats(&s1, &r1, &q1);
	assert_int_equal(uname(&u), 0);
	assert_int_equal(sscanf(u.release, "%u.%u", &major, &minor), 2);
	/* from 6.11 by query (older kernels may have it backported) */
	if (major > 6 || (major == 6 && minor >= 11))
		assert_int_equal(q1 - q0, 1);
	assert_true(q1 - q0 <= 1);
	assert_int_equal(r1 - r0, 1);
	assert_int_equal(s1, s0);
	assert_int_equal(proc_read_file("/proc/self/maps", 1 << 20, &text, &len), 0);
	assert_true(proc_maps__parse(text, len, &b) >= (int)a.nr);
	free(text);
	/* the text's last line, x86-64's vsyscall page, is no mapping of the process (its gate
	 * page, above user space): a query does not list it */
	if (b.nr == a.nr + 1 && !strcmp(b.v[a.nr].path, "[vsyscall]"))
		free(b.v[--b.nr].path);
	assert_int_equal(b.nr, a.nr);
	for (size_t i = 0; i < a.nr; i++) {
		assert_int_equal(a.v[i].start, b.v[i].start);
		assert_int_equal(a.v[i].end, b.v[i].end);
		assert_int_equal(a.v[i].pgoff, b.v[i].pgoff);
		assert_int_equal(a.v[i].inode, b.v[i].inode);
		assert_int_equal(a.v[i].dev_major, b.v[i].dev_major);
		assert_int_equal(a.v[i].dev_minor, b.v[i].dev_minor);
		assert_int_equal(a.v[i].deleted, b.v[i].deleted);
		assert_string_equal(a.v[i].path, b.v[i].path);
		if (a.v[i].start == (uintptr_t)mem) {
			assert_true(a.v[i].deleted);
			assert_string_equal(a.v[i].path, tmpl);
		}
	}
	proc_maps__clear(&a);
	proc_maps__clear(&b);
	if (mem != MAP_FAILED)
		munmap(mem, 4096);
	/* a bound too small for them: refused */
	assert_int_equal(proc_maps__load("/proc", (uint32_t)getpid(), 100, &a), -EFBIG);
}

static void test_proc_maps_parse(void **state)
{
	struct proc_maps m;
	const struct proc_mapping *v;

	(void)state;
	assert_int_equal(proc_maps__parse(sample_maps, strlen(sample_maps), &m), 6);
	v = m.v;
	assert_int_equal(v[0].start, 0x55d4c8a02000);
	assert_int_equal(v[0].end, 0x55d4c8a08000);
	assert_int_equal(v[0].pgoff, 0x2000);
	assert_int_equal(v[0].dev_major, 0xfd);
	assert_int_equal(v[0].dev_minor, 1);
	assert_int_equal(v[0].inode, 1311);
	assert_string_equal(v[0].path, "/usr/bin/app");
	assert_false(v[0].deleted);
	assert_true(proc_mapping__is_file(&v[0]));

	assert_int_equal(v[1].start, 0x7f0000000000); /* anonymous rwx */
	assert_string_equal(v[1].path, "");
	assert_false(proc_mapping__is_file(&v[1]));

	assert_string_equal(v[2].path, "/opt/my app/lib x.so");
	assert_true(v[2].deleted);
	assert_int_equal(v[2].pgoff, 0x1000);

	assert_int_equal(v[3].dev_major, 0xfd);
	assert_int_equal(v[3].dev_minor, 0xa);
	assert_string_equal(v[3].path, "/usr/lib/x86_64-linux-gnu/libc.so.6");

	assert_string_equal(v[4].path, "[vdso]");
	assert_false(proc_mapping__is_file(&v[4]));
	assert_string_equal(v[5].path, "[vsyscall]"); /* no trailing newline */
	assert_int_equal(v[5].end, 0xffffffffff601000);

	assert_ptr_equal(proc_maps__find(&m, 0x55d4c8a02000), &v[0]);
	assert_ptr_equal(proc_maps__find(&m, 0x55d4c8a07fff), &v[0]);
	assert_null(proc_maps__find(&m, 0x55d4c8a08000));
	assert_null(proc_maps__find(&m, 0x55d4c8a01fff)); /* r-- is not kept */
	assert_null(proc_maps__find(&m, 0));
	assert_ptr_equal(proc_maps__find(&m, 0x7f3000028123), &v[3]);
	proc_maps__clear(&m);

	assert_int_equal(proc_maps__parse("", 0, &m), 0);
	assert_int_equal(m.nr, 0);
	proc_maps__clear(&m);
	proc_maps__clear(NULL);
}

/* --- ELF layouts, through fake processes --- */

struct layout {
	const char *env;	/* the fixture */
	const char *symbols_of; /* the unstripped file whose .symtab the test reads */
	uint64_t bias;		/* load address - link address */
	bool stripped;
};

static const char *const fixture_functions[] = {
    "fixture_alpha", "fixture_hidden", "fixture_beta", "fixture_outer", "fixture_inner",
};

/* Checks one function: start, middle and last byte resolve to it; one past the end does not. */
static void check_function(struct symbolizer *s, uint32_t pid, uint64_t start_ns, const char *path,
			   const struct layout *l, const char *fn)
{
	bool hidden = l->stripped && !strcmp(fn, "fixture_hidden");
	uint64_t value, size, addrs[4], offs[4];
	struct frame f[4];

	test_elf_symbol(l->symbols_of, fn, &value, &size);
	offs[0] = 0;
	/* The middle of fixture_outer is fixture_inner: take a byte before it. */
	offs[1] = strcmp(fn, "fixture_outer") ? size / 2 : size / 4;
	offs[2] = size - 1;
	offs[3] = size;
	for (int i = 0; i < 4; i++)
		addrs[i] = l->bias + value + offs[i];
	assert_int_equal(symbolizer__resolve_user(s, pid, start_ns, 0, addrs, 4, f), 4);
	for (int i = 0; i < 4; i++) {
		uint64_t sym_start = 0;
		const char *name;

		assert_non_null(f[i].obj);
		assert_string_equal(object__path(f[i].obj), path);
		assert_false(object__is_kernel(f[i].obj));
		/* The link-time address, what addr2line takes. */
		assert_int_equal(f[i].addr, value + offs[i]);
		name = object__lookup(f[i].obj, f[i].addr, &sym_start);
		if (i == 3) {
			assert_true(!name || strcmp(name, fn));
			continue;
		}
		if (hidden) {
			char buf[64], want[64];

			/* Not named after the exported function below it, but after its own
			 * extent in the unwind table: one name for the whole function. */
			assert_null(name);
			snprintf(want, sizeof(want), "%s+0x%" PRIx64, object__name(f[i].obj),
				 value);
			assert_string_equal(
			    object__anon_name(f[i].obj, f[i].addr, buf, sizeof(buf)), want);
			continue;
		}
		assert_non_null(name);
		assert_string_equal(name, fn);
		assert_int_equal(sym_start, value);
		/* a symbol covers it: no FDE stands in */
		assert_false(object__fde_start(f[i].obj, f[i].addr, &sym_start));
	}
	/* One past the end of the inner symbol is the outer one again. */
	if (!strcmp(fn, "fixture_inner")) {
		uint64_t outer, outer_size, sym_start;

		test_elf_symbol(l->symbols_of, "fixture_outer", &outer, &outer_size);
		assert_string_equal(object__lookup(f[3].obj, f[3].addr, &sym_start),
				    "fixture_outer");
		assert_int_equal(sym_start, outer);
	}
}

static void check_layout(const struct layout *l, uint32_t pid)
{
	const char *path = fixture(l->env);
	struct symbolizer *s = fake_symbolizer();
	uint64_t starttime = 4242 + pid, start_ns = starttime * ns_per_tick;
	uint64_t start, limit, off, vmin = UINT64_MAX, vmax = 0, omin = 0;
	char maps[8192] = "";
	struct test_elf te;
	struct frame f;
	uint64_t value, size, addr;

	append_elf_maps(maps, sizeof(maps), path, l->bias);
	strcat(maps, "7ffd3b5f9000-7ffd3b5fb000 r-xp 00000000 00:00 0      [vdso]\n");
	fake_process(pid, starttime, maps);

	for (size_t i = 0; i < sizeof(fixture_functions) / sizeof(fixture_functions[0]); i++)
		check_function(s, pid, start_ns, path, l, fixture_functions[i]);
	assert_true(symbolizer__knows(s, pid, start_ns));

	/* Range: the executable PT_LOADs. */
	test_elf_read(path, &te);
	for (size_t i = 0; i < te.nr_loads; i++) {
		if (!(te.loads[i].p_flags & PF_X))
			continue;
		if (te.loads[i].p_vaddr < vmin) {
			vmin = te.loads[i].p_vaddr;
			omin = te.loads[i].p_offset;
		}
		if (te.loads[i].p_vaddr + te.loads[i].p_memsz > vmax)
			vmax = te.loads[i].p_vaddr + te.loads[i].p_memsz;
	}
	test_elf_symbol(l->symbols_of, "fixture_alpha", &value, &size);
	addr = l->bias + value;
	assert_int_equal(symbolizer__resolve_user(s, pid, start_ns, 0, &addr, 1, &f), 1);
	object__range(f.obj, &start, &limit, &off);
	assert_int_equal(start, vmin);
	assert_int_equal(limit, vmax);
	assert_int_equal(off, omin);
	assert_string_equal(object__build_id(f.obj), te.build_id);
	assert_string_equal(object__name(f.obj), strrchr(path, '/') + 1);
	symbolizer__free(s);
}

static void test_layout_pie(void **state)
{
	const struct layout l = {"TAILPROF_FIXTURE_PIE", NULL, 0x555555554000ull, false};
	struct layout m = l;
	struct test_elf te;

	(void)state;
	m.symbols_of = fixture(l.env);
	test_elf_read(m.symbols_of, &te);
	assert_int_equal(te.type, ET_DYN);
	assert_int_equal(strlen(te.build_id), 40);
	check_layout(&m, 101);
}

static void test_layout_nopie(void **state)
{
	struct layout l = {"TAILPROF_FIXTURE_NOPIE", NULL, 0, false};
	struct test_elf te;

	(void)state;
	l.symbols_of = fixture(l.env);
	test_elf_read(l.symbols_of, &te);
	assert_int_equal(te.type, ET_EXEC);
	assert_string_equal(te.build_id, ""); /* identified by dev, inode and mtime */
	check_layout(&l, 102);
}

static void test_layout_shared_lib(void **state)
{
	struct layout l = {"TAILPROF_FIXTURE_LIB", NULL, 0x7f0000100000ull, false};

	(void)state;
	l.symbols_of = fixture(l.env);
	check_layout(&l, 103);
}

/* lld: the executable segment's file offset is not its vaddr (nor page-aligned). */
static void check_lld_fixture(const char *env, uint64_t bias, uint32_t pid)
{
	struct layout l = {env, NULL, bias, false};
	struct test_elf te;
	bool skewed = false;

	l.symbols_of = fixture(env);
	test_elf_read(l.symbols_of, &te);
	for (size_t i = 0; i < te.nr_loads; i++)
		if ((te.loads[i].p_flags & PF_X) && te.loads[i].p_offset != te.loads[i].p_vaddr)
			skewed = true;
	assert_true(skewed);
	check_layout(&l, pid);
}

static void test_layout_lld_lib(void **state)
{
	(void)state;
	check_lld_fixture("TAILPROF_FIXTURE_LLD_LIB", 0x7f0000200000ull, 104);
}

static void test_layout_lld_exe(void **state)
{
	(void)state;
	check_lld_fixture("TAILPROF_FIXTURE_LLD_EXE", 0x560000000000ull, 105);
}

/* An ET_DYN library linked at 0x40000000, loaded elsewhere. */
static void test_layout_based_lib(void **state)
{
	struct layout l = {"TAILPROF_FIXTURE_BASED_LIB", NULL, 0x7f0000300000ull - 0x40000000,
			   false};
	struct test_elf te;

	(void)state;
	l.symbols_of = fixture(l.env);
	test_elf_read(l.symbols_of, &te);
	assert_int_equal(te.type, ET_DYN);
	assert_true(te.loads[0].p_vaddr >= 0x40000000);
	check_layout(&l, 106);
}

/* Stripped to .dynsym: exported functions keep their names, the static one gets none. */
static void test_layout_stripped(void **state)
{
	struct layout l = {"TAILPROF_FIXTURE_STRIPPED_LIB", NULL, 0x7f0000400000ull, true};

	(void)state;
	l.symbols_of = fixture("TAILPROF_FIXTURE_LIB");
	check_layout(&l, 107);
}

/* --- caches and references --- */

static struct frame resolve_one(struct symbolizer *s, uint32_t pid, uint64_t starttime,
				uint64_t addr, int expect)
{
	struct frame f;

	int r = symbolizer__resolve_user(s, pid, starttime * ns_per_tick, 0, &addr, 1, &f);

	/* expect: 0 when the process was read (1 or 0 frames in an executable mapping), or the
	 * error */
	assert_int_equal(r < 0 ? r : 0, expect);
	assert_int_equal(r > 0, r >= 0 && f.obj != NULL);
	return f;
}

static uint64_t alpha_addr(const char *path, uint64_t bias)
{
	uint64_t value, size;

	test_elf_symbol(path, "fixture_alpha", &value, &size);
	return bias + value;
}

/* object__in_symbol() agrees with object__lookup() in and around fixture_outer, whose two
 * pieces lie either side of fixture_inner; a second name is answered by lookups. */
static void test_in_symbol(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	struct symbolizer *s = fake_symbolizer();
	uint64_t bias = 0x7f0000100000ull, value, size, inner, inner_size;
	char maps[8192] = "";
	unsigned in = 0;
	struct frame f;

	(void)state;
	append_elf_maps(maps, sizeof(maps), lib, bias);
	fake_process(261, 4, maps);
	f = resolve_one(s, 261, 4, alpha_addr(lib, bias), 0);
	assert_non_null(f.obj);
	test_elf_symbol(lib, "fixture_outer", &value, &size);
	test_elf_symbol(lib, "fixture_inner", &inner, &inner_size);
	assert_true(value < inner && inner + inner_size < value + size);
	for (uint64_t a = value - 16; a < value + size + 16; a++) {
		const char *name = object__lookup(f.obj, a, NULL);
		bool want = name && !strcmp(name, "fixture_outer");

		assert_int_equal(object__in_symbol(f.obj, a, "fixture_outer"), want);
		in += want;
	}
	assert_int_equal(in, size - inner_size);
	assert_false(object__in_symbol(f.obj, inner, "fixture_outer"));
	/* another name than the one the object keeps */
	test_elf_symbol(lib, "fixture_alpha", &value, &size);
	assert_true(object__in_symbol(f.obj, value, "fixture_alpha"));
	assert_true(object__in_symbol(f.obj, value + size - 1, "fixture_alpha"));
	assert_false(object__in_symbol(f.obj, value + size, "fixture_alpha"));
	assert_false(object__in_symbol(f.obj, value, "fixture_alph"));
	symbolizer__free(s);
}

/* A child gone before its maps were read resolves with its parent's, until it execs. */
static void test_fork_fallback(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	struct symbolizer *s = fake_symbolizer();
	char maps[8192] = "";
	struct symbolizer_stats st;
	struct frame f;

	(void)state;
	append_elf_maps(maps, sizeof(maps), lib, 0x7f0000100000ull);
	fake_process(251, 4, maps);
	/* pid 252 has no /proc entry: it exited */
	f = resolve_one(s, 252, 9, alpha_addr(lib, 0x7f0000100000ull), -ESRCH);
	assert_null(f.obj);
	symbolizer__note_fork(s, 252, 9 * ns_per_tick, 251, 4 * ns_per_tick, NULL);
	/* a failed read is retried only after 100 ms, but the fallback needs no read of 252 */
	f = resolve_one(s, 252, 9, alpha_addr(lib, 0x7f0000100000ull), 0);
	assert_non_null(f.obj);
	assert_string_equal(object__lookup(f.obj, f.addr, NULL), "fixture_alpha");
	symbolizer__stats(s, &st);
	assert_int_equal(st.fork_fallbacks, 1);
	/* another process that happens to get the pid later is not the parent's child */
	f = resolve_one(s, 252, 10, alpha_addr(lib, 0x7f0000100000ull), -ESRCH);
	assert_null(f.obj);
	/* its exit event comes before its last samples (exit_mm): they still resolve */
	symbolizer__forget_exited(s, 252);
	f = resolve_one(s, 252, 9, alpha_addr(lib, 0x7f0000100000ull), 0);
	assert_non_null(f.obj);
	assert_string_equal(object__lookup(f.obj, f.addr, NULL), "fixture_alpha");
	/* after an exec the parent's maps no longer apply */
	symbolizer__forget_process(s, 252);
	f = resolve_one(s, 252, 9, alpha_addr(lib, 0x7f0000100000ull), -ESRCH);
	assert_null(f.obj);
	symbolizer__free(s);
}

/* Writes n bytes at offset off of the fake /proc/PID/mem of pid (a sparse file). */
static void fake_mem(uint32_t pid, uint64_t off, const void *buf, size_t n)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%u/mem", fake_root, pid);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
	assert_int_equal(close(fd), 0);
}

/* A forked child whose maps were read but whose memory is gone by its first vDSO address: the
 * vDSO is its parent's (this process's own vDSO plays it, its .dynsym the answer). */
static void test_fork_vdso(void **state)
{
	const uint64_t at = 0x10000000;
	const char *image = (const char *)getauxval(AT_SYSINFO_EHDR);
	struct symbolizer *s = fake_symbolizer();
	char maps[512], path[PATH_MAX + 64], line[512];
	uint64_t value, size, addr, len = 0;
	struct frame f;
	FILE *self;

	(void)state;
	if (!image)
		skip();
	self = fopen("/proc/self/maps", "r");
	assert_non_null(self);
	while (fgets(line, sizeof(line), self)) {
		unsigned long lo, hi;

		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			len = hi - lo;
	}
	fclose(self);
	assert_true(len > 0);
	snprintf(maps, sizeof(maps),
		 "%" PRIx64 "-%" PRIx64 " r-xp 00000000 00:00 0                  [vdso]\n", at,
		 at + len);
	fake_process(271, 4, maps);
	fake_mem(271, at, image, len);
	fake_process(272, 9, maps); /* its child: maps read, its memory gone */
	fake_process(273, 9, maps); /* the same, no one's child */
	snprintf(path, sizeof(path), "%s/vdso.so", fake_root);
	{
		FILE *out = fopen(path, "w");

		assert_non_null(out);
		assert_int_equal(fwrite(image, 1, len, out), len);
		assert_int_equal(fclose(out), 0);
	}
	test_elf_symbol_in(path, SHT_DYNSYM, "__vdso_clock_gettime", &value, &size);
	symbolizer__note_fork(s, 272, 9 * ns_per_tick, 271, 4 * ns_per_tick, NULL);
	resolve_one(s, 271, 4, 0x1000, 0); /* the parent seen (its maps cached) */
	addr = at + value + size / 2;
	/* in the mapping, so 1 frame, named or not */
	assert_int_equal(symbolizer__resolve_user(s, 273, 9 * ns_per_tick, 0, &addr, 1, &f), 1);
	assert_null(f.obj);
	assert_int_equal(symbolizer__resolve_user(s, 272, 9 * ns_per_tick, 0, &addr, 1, &f), 1);
	assert_non_null(f.obj);
	assert_string_equal(object__path(f.obj), "[vdso]");
	assert_int_equal(f.addr, value + size / 2);
	assert_true(!strcmp(object__lookup(f.obj, f.addr, NULL), "clock_gettime") ||
		    !strcmp(object__lookup(f.obj, f.addr, NULL), "__vdso_clock_gettime"));
	symbolizer__free(s);
}

static void test_object_cache(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	const char *stripped = fixture("TAILPROF_FIXTURE_STRIPPED_LIB");
	const char *nopie = fixture("TAILPROF_FIXTURE_NOPIE");
	struct symbolizer *s = fake_symbolizer();
	char maps[8192] = "";
	struct symbolizer_stats st;
	struct object *kept;
	struct frame a, b, c, d;

	(void)state;
	append_elf_maps(maps, sizeof(maps), lib, 0x7f0000100000ull);
	append_elf_maps(maps, sizeof(maps), nopie, 0);
	fake_process(201, 1, maps);
	maps[0] = '\0';
	append_elf_maps(maps, sizeof(maps), lib, 0x7e0000100000ull);
	append_elf_maps(maps, sizeof(maps), stripped, 0x7d0000100000ull);
	fake_process(202, 2, maps);

	/* Objects are opened lazily: reading maps opens nothing. */
	resolve_one(s, 201, 1, alpha_addr(nopie, 0), 0);
	symbolizer__stats(s, &st);
	assert_int_equal(st.objects, 2); /* kernel + nopie */
	assert_int_equal(st.processes, 1);

	a = resolve_one(s, 201, 1, alpha_addr(lib, 0x7f0000100000ull), 0);
	b = resolve_one(s, 202, 2, alpha_addr(lib, 0x7e0000100000ull), 0);
	assert_non_null(a.obj);
	assert_ptr_equal(a.obj, b.obj); /* same (dev, inode) */
	assert_int_equal(a.addr, b.addr);
	/* The stripped copy has the same build ID: the same object. */
	c = resolve_one(s, 202, 2, alpha_addr(lib, 0x7d0000100000ull), 0);
	assert_ptr_equal(c.obj, a.obj);
	d = resolve_one(s, 201, 1, alpha_addr(nopie, 0), 0);
	assert_string_equal(object__build_id(d.obj), "");
	assert_string_equal(object__lookup(d.obj, d.addr, NULL), "fixture_alpha");
	symbolizer__stats(s, &st);
	assert_int_equal(st.objects, 3);
	assert_int_equal(st.processes, 2);
	assert_int_equal(st.elf_failed, 0);

	/* References keep objects alive past their processes and the symbolizer. */
	kept = object__get(d.obj);
	symbolizer__forget_process(s, 201);
	assert_false(symbolizer__knows(s, 201, 1 * ns_per_tick));
	assert_true(symbolizer__knows(s, 202, 2 * ns_per_tick));
	symbolizer__stats(s, &st);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.objects, 3); /* lib is still mapped by 202, nopie is kept */
	symbolizer__forget_process(s, 202);
	symbolizer__forget_process(s, 999); /* unknown: nothing */
	symbolizer__stats(s, &st);
	assert_int_equal(st.objects, 2); /* kernel + kept */
	symbolizer__free(s);
	assert_string_equal(object__name(kept), "fixture_nopie");
	assert_string_equal(object__lookup(kept, d.addr, NULL), "fixture_alpha");
	object__put(kept);
	object__put(NULL);
	symbolizer__free(NULL);
}

/* Malformed, missing and deleted files: objects without symbols, frames in file offsets. */
static void test_malformed_elf(void **state)
{
	static const char *const envs[] = {
	    "TAILPROF_FIXTURE_TRUNCATED",
	    "TAILPROF_FIXTURE_GARBAGE",
	    "TAILPROF_FIXTURE_BADSYMS",
	};
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	struct symbolizer *s = fake_symbolizer();
	char maps[8192] = "", line[PATH_MAX + 128];
	struct symbolizer_stats st;
	uint64_t base = 0x7f0000000000ull;
	struct test_elf te;
	struct frame f;

	(void)state;
	test_elf_read(lib, &te);
	for (size_t i = 0; i < 3; i++) {
		struct stat sb;

		assert_int_equal(stat(fixture(envs[i]), &sb), 0);
		snprintf(line, sizeof(line),
			 "%" PRIx64 "-%" PRIx64 " r-xp 00001000 %02x:%02x %" PRIu64 " %s\n",
			 base + i * 0x10000, base + i * 0x10000 + 0x2000, major(sb.st_dev),
			 minor(sb.st_dev), (uint64_t)sb.st_ino, fixture(envs[i]));
		strcat(maps, line);
	}
	strcat(maps,
	       "7f0000100000-7f0000102000 r-xp 00001000 fd:01 123456 /nonexistent/libgone.so\n");
	snprintf(line, sizeof(line),
		 "7f0000200000-7f0000202000 r-xp 00001000 fd:01 99 %s (deleted)\n", lib);
	strcat(maps, line);
	fake_process(301, 7, maps);

	for (size_t i = 0; i < 3; i++) {
		f = resolve_one(s, 301, 7, base + i * 0x10000 + 0x123, 0);
		assert_non_null(f.obj);
		assert_string_equal(object__path(f.obj), fixture(envs[i]));
		assert_null(object__lookup(f.obj, f.addr, NULL));
		/* badsyms keeps valid program headers: its frames are vaddrs. */
		assert_int_equal(f.addr, 0x1123);
		/* Truncated and garbage files are not read at all. */
		if (i < 2)
			assert_string_equal(object__build_id(f.obj), "");
		else
			assert_string_equal(object__build_id(f.obj), te.build_id);
	}
	f = resolve_one(s, 301, 7, 0x7f0000100010ull, 0);
	assert_non_null(f.obj);
	assert_string_equal(object__name(f.obj), "libgone.so");
	assert_int_equal(f.addr, 0x1010); /* file offset */
	assert_null(object__lookup(f.obj, f.addr, NULL));
	/* Deleted: the path may name another file now, so it is not opened (no map_files here). */
	f = resolve_one(s, 301, 7, 0x7f0000200010ull, 0);
	assert_non_null(f.obj);
	assert_string_equal(object__path(f.obj), lib);
	assert_null(object__lookup(f.obj, f.addr, NULL));
	symbolizer__stats(s, &st);
	assert_int_equal(st.elf_failed, 5);
	assert_int_equal(st.unresolved, 0);
	/* Failed objects are not found by build ID: the real library gets its symbols. */
	maps[0] = '\0';
	append_elf_maps(maps, sizeof(maps), lib, 0x7e0000000000ull);
	fake_process(302, 7, maps);
	f = resolve_one(s, 302, 7, alpha_addr(lib, 0x7e0000000000ull), 0);
	assert_string_equal(object__lookup(f.obj, f.addr, NULL), "fixture_alpha");
	symbolizer__free(s);
}

/* Special mappings and addresses outside every mapping are unresolved. */
static void test_unresolved(void **state)
{
	struct symbolizer *s = fake_symbolizer();
	struct symbolizer_stats st;
	uint64_t addrs[4] = {0x7ffd3b5f9100, 0x7f0000000010, 0x1234, 0x7f0000100000};
	struct frame f[4];

	(void)state;
	fake_process(401, 3,
		     "7ffd3b5f9000-7ffd3b5fb000 r-xp 00000000 00:00 0      [vdso]\n"
		     "7f0000000000-7f0000010000 rwxp 00000000 00:00 0 \n");
	/* vdso and the anonymous rwx mapping are executable; 0x1234 is the first address in none */
	assert_int_equal(symbolizer__resolve_user(s, 401, 3 * ns_per_tick, 0, addrs, 4, f), 2);
	for (int i = 0; i < 4; i++) {
		assert_null(f[i].obj);
		assert_int_equal(f[i].addr, addrs[i]);
	}
	symbolizer__stats(s, &st);
	assert_int_equal(st.unresolved, 4);
	assert_int_equal(st.maps_reads, 1); /* no rescan right after the read */
	assert_int_equal(symbolizer__resolve_user(s, 401, 3 * ns_per_tick, 0, addrs, 0, f), 0);
	symbolizer__free(s);
}

/* An address in a library loaded after the maps were read: one rescan, rate-limited. */
static void test_rescan(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	const char *lld = fixture("TAILPROF_FIXTURE_LLD_LIB");
	struct symbolizer *s = fake_symbolizer();
	uint64_t in_lib = alpha_addr(lib, 0x7f0000100000ull);
	uint64_t in_lld = alpha_addr(lld, 0x7f0000200000ull);
	struct symbolizer_stats st;
	char maps[8192] = "";
	struct frame f, g;
	uint64_t t0;

	(void)state;
	append_elf_maps(maps, sizeof(maps), lib, 0x7f0000100000ull);
	fake_process(501, 5, maps);
	t0 = monotonic_ns();
	f = resolve_one(s, 501, 5, in_lib, 0);
	assert_non_null(f.obj);
	append_elf_maps(maps, sizeof(maps), lld, 0x7f0000200000ull);
	fake_process(501, 5, maps);
	f = resolve_one(s, 501, 5, in_lld, 0);
	if (monotonic_ns() - t0 < 100000000ull) {
		/* Within 100 ms of the read: no rescan yet. */
		assert_null(f.obj);
		symbolizer__stats(s, &st);
		assert_int_equal(st.maps_reads, 1);
		assert_int_equal(st.unresolved, 1);
	}
	usleep(120 * 1000);
	{
		uint64_t addrs[2] = {in_lib, in_lld};
		struct frame fr[2];

		assert_int_equal(symbolizer__resolve_user(s, 501, 5 * ns_per_tick, 0, addrs, 2, fr),
				 2);
		f = fr[0];
		g = fr[1];
	}
	assert_non_null(g.obj);
	assert_string_equal(object__lookup(g.obj, g.addr, NULL), "fixture_alpha");
	assert_string_equal(object__path(g.obj), lld);
	/* The object of the unchanged mapping carried over. */
	assert_string_equal(object__path(f.obj), lib);
	symbolizer__stats(s, &st);
	assert_true(st.maps_reads >= 2);
	assert_int_equal(st.objects, 3);
	symbolizer__free(s);
}

/* An address in a mapped object's data (its non-executable segments, its bss up to the last
 * segment's end) is no new code: symbolizer__in_object_data says so, and a stack ending there
 * does not make the symbolizer read the maps again, while one ending past the object does, at
 * most every 100 ms, twice that after a reread that found the same mappings. */
static void test_object_data(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	const uint64_t bias = 0x7f0000100000ull;
	struct symbolizer *s = fake_symbolizer();
	uint64_t in_lib = alpha_addr(lib, bias), data = 0, end = 0;
	struct symbolizer_stats st;
	char maps[8192] = "";
	struct test_elf te;
	struct frame fr[2];

	(void)state;
	test_elf_read(lib, &te);
	for (size_t i = 0; i < te.nr_loads; i++) {
		if (!(te.loads[i].p_flags & PF_X) && te.loads[i].p_vaddr > data)
			data = te.loads[i].p_vaddr;
		if (te.loads[i].p_vaddr + te.loads[i].p_memsz > end)
			end = te.loads[i].p_vaddr + te.loads[i].p_memsz;
	}
	assert_true(data && data < end);
	append_elf_maps(maps, sizeof(maps), lib, bias);
	fake_process(511, 5, maps);
	/* unknown before a read */
	assert_false(symbolizer__in_object_data(s, 511, 5 * ns_per_tick, bias + data));
	assert_non_null(resolve_one(s, 511, 5, in_lib, 0).obj);
	assert_true(symbolizer__in_object_data(s, 511, 5 * ns_per_tick, bias + data));
	assert_true(symbolizer__in_object_data(s, 511, 5 * ns_per_tick, bias + end - 1));
	assert_false(symbolizer__in_object_data(s, 511, 5 * ns_per_tick, bias + end + 4096));
	assert_false(symbolizer__in_object_data(s, 511, 5 * ns_per_tick, in_lib)); /* code */
	assert_false(symbolizer__in_object_data(s, 511, 6 * ns_per_tick, bias + data));
	assert_false(symbolizer__in_object_data(s, 512, 5 * ns_per_tick, bias + data));

	usleep(120 * 1000); /* past the rescan interval */
	{
		uint64_t addrs[2] = {in_lib, bias + end - 8};

		assert_int_equal(symbolizer__resolve_user(s, 511, 5 * ns_per_tick, 0, addrs, 2, fr),
				 1);
	}
	symbolizer__stats(s, &st);
	assert_int_equal(st.maps_reads, 1);
	assert_int_equal(st.rereads_saved, 1);
	{
		uint64_t addrs[2] = {in_lib, bias + end + (1 << 20)};

		assert_int_equal(symbolizer__resolve_user(s, 511, 5 * ns_per_tick, 0, addrs, 2, fr),
				 1);
	}
	symbolizer__stats(s, &st);
	assert_int_equal(st.maps_reads, 2);
	assert_int_equal(st.rereads_saved, 1);
	/* that reread found the same mappings: the next for such an address waits 200 ms */
	usleep(120 * 1000);
	{
		uint64_t addrs[2] = {in_lib, bias + end + (2 << 20)};

		assert_int_equal(symbolizer__resolve_user(s, 511, 5 * ns_per_tick, 0, addrs, 2, fr),
				 1);
		symbolizer__stats(s, &st);
		assert_int_equal(st.maps_reads, 2);
		usleep(100 * 1000);
		assert_int_equal(symbolizer__resolve_user(s, 511, 5 * ns_per_tick, 0, addrs, 2, fr),
				 1);
	}
	symbolizer__stats(s, &st);
	assert_int_equal(st.maps_reads, 3);
	symbolizer__free(s);
}

/* A leaf (the code the thread ran) in no mapping read before the stack was taken: the maps are
 * read again at once (a process first seen in its dynamic loader); a caller there is no proof
 * (a broken frame chain) and waits for the rate limit. */
static void test_rescan_leaf(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	const char *lld = fixture("TAILPROF_FIXTURE_LLD_LIB");
	struct symbolizer *s = fake_symbolizer();
	uint64_t in_lib = alpha_addr(lib, 0x7f0000100000ull);
	uint64_t in_lld = alpha_addr(lld, 0x7f0000200000ull);
	uint64_t addrs[2] = {in_lib, in_lld}, t0;
	struct symbolizer_stats st;
	char maps[8192] = "";
	struct frame fr[2];
	int r;

	(void)state;
	append_elf_maps(maps, sizeof(maps), lib, 0x7f0000100000ull);
	fake_process(511, 5, maps);
	t0 = monotonic_ns();
	assert_int_equal(symbolizer__resolve_user(s, 511, 5 * ns_per_tick, t0, addrs, 1, fr), 1);
	append_elf_maps(maps, sizeof(maps), lld, 0x7f0000200000ull);
	fake_process(511, 5, maps);
	/* (what follows within 100 ms of the read, when the rate limit holds) */
	/* a caller in the new library, in a stack taken after the read: no rescan */
	r = symbolizer__resolve_user(s, 511, 5 * ns_per_tick, monotonic_ns(), addrs, 2, fr);
	symbolizer__stats(s, &st);
	if (monotonic_ns() - t0 < 100000000ull) {
		assert_int_equal(r, 1);
		assert_int_equal(st.maps_reads, 1);
	}
	/* the leaf there, in a stack taken before the read: no rescan either */
	addrs[0] = in_lld;
	r = symbolizer__resolve_user(s, 511, 5 * ns_per_tick, t0 - 1, addrs, 1, fr);
	symbolizer__stats(s, &st);
	if (monotonic_ns() - t0 < 100000000ull) {
		assert_int_equal(r, 0);
		assert_int_equal(st.maps_reads, 1);
	}
	/* the leaf there, in a stack taken after the read: read again at once */
	assert_int_equal(
	    symbolizer__resolve_user(s, 511, 5 * ns_per_tick, monotonic_ns(), addrs, 1, fr), 1);
	assert_non_null(fr[0].obj);
	assert_string_equal(object__path(fr[0].obj), lld);
	assert_string_equal(object__lookup(fr[0].obj, fr[0].addr, NULL), "fixture_alpha");
	symbolizer__stats(s, &st);
	assert_true(st.maps_reads >= 2);
	symbolizer__free(s);
}

/* Whether process pid (started at 6 ticks) is loaded after a sample at addr taken now. */
static bool sampled_loaded(struct symbolizer *s, uint32_t pid, uint64_t addr)
{
	struct frame fr;

	assert_int_equal(
	    symbolizer__resolve_user(s, pid, 6 * ns_per_tick, monotonic_ns(), &addr, 1, &fr), 1);
	return symbolizer__loaded(s, pid, 6 * ns_per_tick);
}

/* symbolizer__loaded: maps read after a sample whose leaf was in the executable (the identity its
 * exec noted) hold the dynamic loader's work, and such a sample after the read reads them again,
 * once; a leaf elsewhere or no exec identity tell nothing; a process whose only file code is its
 * executable has no loader. */
/* What a symbolizer told of static layouts (symbolizer_opts.layout_known). */
static struct {
	int known, forgotten;
	uint32_t dev;
	uint64_t ino;
} layout_calls;

static int note_layout(void *ctx, uint32_t dev, uint64_t ino, bool known)
{
	(void)ctx;
	layout_calls.dev = dev;
	layout_calls.ino = ino;
	if (known)
		layout_calls.known++;
	else
		layout_calls.forgotten++;
	return 0;
}

/* A static executable's layout is recorded from the maps of a process that ran only its code;
 * a process exec'd from it later (gone by now: nothing of it under /proc) is given maps made
 * from it at its exec, at its own start_code (a static PIE's bias moved), and its frames are
 * named with no read. An exec BPF took for a layout the symbolizer no longer has, or for a
 * file rewritten in place since, tells BPF to forget the file and leaves the process to a
 * read. */
static void test_static_layout(void **state)
{
	const char *exe = fixture("TAILPROF_FIXTURE_LIB");
	struct symbolizer_opts opts = {
	    .proc_root = fake_root,
	    .kallsyms = fixture("TAILPROF_FIXTURE_KALLSYMS"),
	    .kernel_notes = "/nonexistent",
	    .layout_known = note_layout,
	};
	uint64_t bias = 0x7f0000100000ull, moved = 0x10000000ull, value, size;
	struct symbolizer *s = symbolizer__new(&opts);
	struct exec_identity id = {0};
	struct symbolizer_layout where;
	struct symbolizer_stats st;
	char alone[8192] = "";
	struct stat file;
	struct frame f;

	(void)state;
	assert_non_null(s);
	memset(&layout_calls, 0, sizeof(layout_calls));
	assert_int_equal(stat(exe, &file), 0);
	test_elf_symbol(exe, "fixture_alpha", &value, &size);
	id.exe_dev = file.st_dev;
	id.exe_ino = file.st_ino;
	id.exe_size = file.st_size;
	id.start_code = bias + 0x1000;
	append_elf_maps(alone, sizeof(alone), exe, bias);
	fake_process(531, 6, alone);
	symbolizer__note_exec(s, 531, 6 * ns_per_tick, &id);
	assert_int_equal(symbolizer__note_process(s, 531, 6 * ns_per_tick), 0);
	assert_true(symbolizer__loaded(s, 531, 6 * ns_per_tick));
	assert_false(symbolizer__offer_layout_maps(s, 531, 6 * ns_per_tick, NULL));
	symbolizer__stats(s, &st);
	assert_int_equal(st.layouts, 1);
	assert_int_equal(layout_calls.known, 1);
	assert_int_equal(layout_calls.ino, file.st_ino);
	assert_int_equal(layout_calls.dev, major(file.st_dev) << 20 | minor(file.st_dev));

	/* a later process of the file, gone before its samples are symbolized */
	id.start_code += moved;
	id.layout_known = true;
	symbolizer__note_exec(s, 532, 7 * ns_per_tick, &id);
	assert_true(symbolizer__loaded(s, 532, 7 * ns_per_tick));
	f = resolve_one(s, 532, 7, bias + moved + value, 0);
	assert_non_null(f.obj);
	assert_int_equal(f.addr, value);
	symbolizer__stats(s, &st);
	assert_int_equal(st.from_layout, 1);
	assert_int_equal(st.maps_reads, 1);
	assert_true(symbolizer__offer_layout_maps(s, 532, 7 * ns_per_tick, &where));
	/* where it runs, for the unwinder's tables of the layout */
	assert_int_equal(where.dev, file.st_dev);
	assert_int_equal(where.ino, file.st_ino);
	assert_int_equal(where.start_code, id.start_code);
	assert_int_equal(where.vdso, id.vdso);

	/* BPF took another file for a recorded one (the table was replaced meanwhile); then the
	 * recorded file rewritten in place (the same inode, another size): the layout goes */
	for (int i = 1; i <= 2; i++) {
		uint32_t pid = 532 + i;

		if (i == 1) {
			id.exe_ino++;
		} else {
			id.exe_ino--;
			id.exe_size++;
		}
		symbolizer__note_exec(s, pid, pid * ns_per_tick, &id);
		assert_false(symbolizer__offer_layout_maps(s, pid, pid * ns_per_tick, NULL));
		symbolizer__stats(s, &st);
		assert_int_equal(st.layouts_missing, i);
		assert_int_equal(layout_calls.forgotten, i);
	}
	assert_int_equal(st.layouts, 0);
	assert_int_equal(layout_calls.ino, file.st_ino);
	symbolizer__free(s);
}

static void test_loaded(void **state)
{
	const char *exe = fixture("TAILPROF_FIXTURE_LIB");
	const char *ldso = fixture("TAILPROF_FIXTURE_LLD_LIB");
	uint64_t in_exe = alpha_addr(exe, 0x7f0000100000ull);
	uint64_t in_ldso = alpha_addr(ldso, 0x7f0000200000ull);
	struct symbolizer *s = fake_symbolizer();
	struct exec_identity id = {0};
	char both[8192] = "", alone[8192] = "", more[8192] = "", third[8192] = "";
	uint64_t in_pie = alpha_addr(fixture("TAILPROF_FIXTURE_PIE"), 0x7f0000400000ull);
	struct symbolizer_stats st;
	struct frame fr[1];
	struct stat file;
	uint64_t t, reads;

	(void)state;
	assert_int_equal(stat(exe, &file), 0);
	id.exe_dev = file.st_dev;
	id.exe_ino = file.st_ino;
	append_elf_maps(both, sizeof(both), exe, 0x7f0000100000ull);
	append_elf_maps(alone, sizeof(alone), exe, 0x7f0000100000ull);
	append_elf_maps(both, sizeof(both), ldso, 0x7f0000200000ull);
	snprintf(more, sizeof(more), "%s", both);
	append_elf_maps(more, sizeof(more), fixture("TAILPROF_FIXTURE_NAMES_LIB"),
			0x7f0000300000ull);
	snprintf(third, sizeof(third), "%s", both);
	append_elf_maps(third, sizeof(third), fixture("TAILPROF_FIXTURE_PIE"), 0x7f0000400000ull);
	for (uint32_t pid = 521; pid <= 527; pid++) {
		fake_process(pid, 6, pid == 524 || pid == 527 ? alone : pid == 522 ? third : both);
		if (pid == 527)
			snprintf(id.name, sizeof(id.name), "ld-linux-x86-64.so.2");
		if (pid != 525)
			symbolizer__note_exec(s, pid, 6 * ns_per_tick, &id);
	}
	/* in the loader when sampled: its libraries may not all be mapped yet */
	t = monotonic_ns();
	assert_int_equal(symbolizer__resolve_user(s, 521, 6 * ns_per_tick, t, &in_ldso, 1, fr), 1);
	assert_false(symbolizer__loaded(s, 521, 6 * ns_per_tick));
	/* in the executable when sampled, the maps read after: loaded */
	t = monotonic_ns();
	assert_int_equal(symbolizer__resolve_user(s, 522, 6 * ns_per_tick, t, &in_exe, 1, fr), 1);
	assert_true(symbolizer__loaded(s, 522, 6 * ns_per_tick));
	assert_false(symbolizer__loaded(s, 522, 7 * ns_per_tick));
	/* loaded by its first read: nothing for the other modules to look at again */
	assert_false(symbolizer__take_loaded_reread(s, 522, 6 * ns_per_tick));
	assert_true(symbolizer__loaded(s, 522, 6 * ns_per_tick));
	/* in the executable, but sampled after the read, which may have come before the loader was
	 * done: read again then, once (here it had mapped one more library since) */
	assert_int_equal(symbolizer__note_process(s, 523, 6 * ns_per_tick), 0);
	assert_false(symbolizer__loaded(s, 523, 6 * ns_per_tick));
	fake_process(523, 6, more);
	symbolizer__stats(s, &st);
	reads = st.maps_reads;
	t = monotonic_ns() + 1;
	assert_int_equal(symbolizer__resolve_user(s, 523, 6 * ns_per_tick, t, &in_exe, 1, fr), 1);
	assert_true(symbolizer__loaded(s, 523, 6 * ns_per_tick));
	t = monotonic_ns() + 1;
	assert_int_equal(symbolizer__resolve_user(s, 523, 6 * ns_per_tick, t, &in_exe, 1, fr), 1);
	symbolizer__stats(s, &st);
	assert_int_equal(st.maps_reads, reads + 1);
	assert_int_equal(st.loaded_by_sample, 2);
	assert_true(symbolizer__take_loaded_reread(s, 523, 6 * ns_per_tick));
	assert_false(symbolizer__take_loaded_reread(s, 523, 6 * ns_per_tick));
	/* the same, the maps unchanged: nothing for the other modules to look at again */
	assert_int_equal(symbolizer__note_process(s, 526, 6 * ns_per_tick), 0);
	t = monotonic_ns() + 1;
	assert_int_equal(symbolizer__resolve_user(s, 526, 6 * ns_per_tick, t, &in_exe, 1, fr), 1);
	assert_true(symbolizer__loaded(s, 526, 6 * ns_per_tick));
	assert_false(symbolizer__take_loaded_reread(s, 526, 6 * ns_per_tick));
	/* read early, its maps holding what 526's held once loaded (the same code files, mapped
	 * elsewhere): loaded with no read again; one of another set is read again */
	symbolizer__stats(s, &st);
	reads = st.maps_reads;
	id.name[0] = 0; /* not 527's loader name */
	fake_process(530, 6, both);
	fake_process(531, 6, more);
	for (uint32_t pid = 530; pid <= 531; pid++) {
		symbolizer__note_exec(s, pid, 6 * ns_per_tick, &id);
		assert_int_equal(symbolizer__note_process(s, pid, 6 * ns_per_tick), 0);
		assert_false(symbolizer__loaded(s, pid, 6 * ns_per_tick));
		t = monotonic_ns() + 1;
		assert_int_equal(
		    symbolizer__resolve_user(s, pid, 6 * ns_per_tick, t, &in_exe, 1, fr), 1);
		assert_true(symbolizer__loaded(s, pid, 6 * ns_per_tick));
		assert_false(symbolizer__take_loaded_reread(s, pid, 6 * ns_per_tick));
	}
	symbolizer__stats(s, &st);
	assert_int_equal(st.maps_reads, reads + 3);
	assert_int_equal(st.loaded_by_set, 1);
	assert_int_equal(st.loaded_by_sample, 4);
	/* no code mapped from a file but the executable's: no loader (a static executable) */
	assert_int_equal(symbolizer__note_process(s, 524, 6 * ns_per_tick), 0);
	assert_true(symbolizer__loaded(s, 524, 6 * ns_per_tick));
	symbolizer__stats(s, &st);
	assert_int_equal(st.loaded_static, 1);
	/* a dynamic loader run as the program (ld.so PROGRAM): neither its code nor its being the
	 * only file mapped says that the program and its libraries are mapped */
	t = monotonic_ns();
	assert_int_equal(symbolizer__resolve_user(s, 527, 6 * ns_per_tick, t, &in_exe, 1, fr), 1);
	assert_false(symbolizer__loaded(s, 527, 6 * ns_per_tick));
	/* with the entry point its exec began at, in the loader: code of any other file (a
	 * library, here a PIE's) runs only after the loader's work; the loader's does not tell */
	id.name[0] = 0;
	id.entry_ip = in_ldso;
	fake_process(528, 6, third);
	symbolizer__note_exec(s, 528, 6 * ns_per_tick, &id);
	assert_false(sampled_loaded(s, 528, in_ldso));
	assert_true(sampled_loaded(s, 528, in_pie));
	/* entered in the executable (no loader): its own code tells nothing either */
	id.entry_ip = in_exe;
	fake_process(529, 6, third);
	symbolizer__note_exec(s, 529, 6 * ns_per_tick, &id);
	assert_false(sampled_loaded(s, 529, in_exe));
	/* no exec identity: unknown */
	t = monotonic_ns();
	assert_int_equal(symbolizer__resolve_user(s, 525, 6 * ns_per_tick, t, &in_exe, 1, fr), 1);
	assert_false(symbolizer__loaded(s, 525, 6 * ns_per_tick));
	symbolizer__free(s);
}

/* The pid now belongs to another process. */
static void test_pid_reuse(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	struct symbolizer *s = fake_symbolizer();
	uint64_t in_lib = alpha_addr(lib, 0x7f0000100000ull);
	struct symbolizer_stats st;
	char maps[8192] = "";
	struct frame f;

	(void)state;
	append_elf_maps(maps, sizeof(maps), lib, 0x7f0000100000ull);
	fake_process(601, 10, maps);
	/* A wrong start time: another process than the one the sample came from. */
	f = resolve_one(s, 601, 11, in_lib, -ESRCH);
	assert_null(f.obj);
	assert_false(symbolizer__knows(s, 601, 11 * ns_per_tick));
	f = resolve_one(s, 601, 10, in_lib, 0);
	assert_non_null(f.obj);
	assert_true(symbolizer__knows(s, 601, 10 * ns_per_tick));

	/* The process exits and the pid is reused: cached maps still serve the old process's
	 * samples, but its maps are not read again from the new process. */
	fake_process(601, 20, "");
	f = resolve_one(s, 601, 10, in_lib, 0);
	assert_non_null(f.obj);
	usleep(120 * 1000);
	f = resolve_one(s, 601, 10, 0x1000, 0);
	assert_null(f.obj);
	symbolizer__stats(s, &st);
	assert_int_equal(st.maps_failed, 2);
	/* A sample of the new process replaces the entry. */
	fake_process(601, 20, maps);
	f = resolve_one(s, 601, 20, in_lib, 0);
	assert_non_null(f.obj);
	assert_true(symbolizer__knows(s, 601, 20 * ns_per_tick));
	assert_false(symbolizer__knows(s, 601, 10 * ns_per_tick));
	/* A late sample of the old one no longer resolves. */
	f = resolve_one(s, 601, 10, in_lib, -ESRCH);
	assert_null(f.obj);
	assert_true(symbolizer__knows(s, 601, 20 * ns_per_tick));
	symbolizer__free(s);
}

/* A fake of BPF's table of live processes (loader__live_start): pid live_pid started at
 * live_ticks. */
static uint32_t live_pid;
static uint64_t live_ticks;

static int fake_live_start(void *ctx, uint32_t pid, uint64_t *start_ns)
{
	(void)ctx;
	if (pid != live_pid)
		return -ENOENT;
	*start_ns = live_ticks * ns_per_tick;
	return 0;
}

/* fake_live_since: the table has every process started after this many ticks (0: none) */
static uint64_t live_since_ticks;

static uint64_t fake_live_since(void *ctx)
{
	(void)ctx;
	return live_since_ticks * ns_per_tick;
}

/* A fake process pid started at ticks with maps, its address addr resolved (to an object when
 * want is 0, else failing with want): the identity checks made by its stat file so far. */
static uint64_t stat_checks_after(struct symbolizer *s, uint32_t pid, uint64_t ticks,
				  const char *maps, uint64_t addr, int want)
{
	struct symbolizer_stats st;
	struct frame f;

	fake_process(pid, ticks, maps);
	f = resolve_one(s, pid, ticks, addr, want);
	if (want)
		assert_null(f.obj);
	else
		assert_non_null(f.obj);
	symbolizer__stats(s, &st);
	return st.identity_checks[1];
}

/* Where BPF's table has the pid, it decides whether a maps read was the sample's process's
 * (no stat file read), and where it would have it (started since the table has every process);
 * elsewhere /proc/PID/stat does. */
static void test_identity_from_bpf(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	struct symbolizer_opts opts = {
	    .proc_root = fake_root,
	    .kallsyms = fixture("TAILPROF_FIXTURE_KALLSYMS"),
	    .kernel_notes = "/nonexistent",
	    .live_start = fake_live_start,
	    .live_since = fake_live_since,
	};
	struct symbolizer *s = symbolizer__new(&opts);
	uint64_t in_lib = alpha_addr(lib, 0x7f0000100000ull);
	struct symbolizer_stats st;
	char maps[8192] = "";

	(void)state;
	assert_non_null(s);
	append_elf_maps(maps, sizeof(maps), lib, 0x7f0000100000ull);
	/* the stat file says 30 ticks, BPF says 31: BPF wins both ways */
	fake_process(651, 30, maps);
	live_pid = 651;
	live_ticks = 31;
	assert_null(resolve_one(s, 651, 30, in_lib, -ESRCH).obj);
	assert_non_null(resolve_one(s, 651, 31, in_lib, 0).obj);
	symbolizer__stats(s, &st);
	/* after the read for 30, and for 31 both to replace that entry and after its read */
	assert_int_equal(st.identity_checks[0], 3);
	assert_int_equal(st.identity_checks[1], 0);
	/* a pid BPF does not have (a process from before the load): the stat file */
	assert_int_equal(stat_checks_after(s, 652, 32, maps, in_lib, 0), 1);
	/* one the table would have but does not: gone, though its stat file says otherwise */
	live_since_ticks = 40;
	assert_int_equal(stat_checks_after(s, 653, 41, maps, in_lib, -ESRCH), 1);
	assert_false(symbolizer__knows(s, 653, 41 * ns_per_tick));
	/* one from before that time: the stat file */
	assert_int_equal(stat_checks_after(s, 654, 39, maps, in_lib, 0), 2);
	/* no such time (the table was full once): the stat file */
	live_since_ticks = 0;
	assert_int_equal(stat_checks_after(s, 655, 42, maps, in_lib, 0), 3);
	live_pid = 0;
	symbolizer__free(s);
}

/* Processes that vanished, or whose /proc files are broken. */
static void test_vanished(void **state)
{
	struct symbolizer *s = fake_symbolizer();
	char path[PATH_MAX + 64];
	struct symbolizer_stats st;
	uint64_t t0 = monotonic_ns();
	struct frame f;

	(void)state;
	f = resolve_one(s, 701, 1, 0x1000, -ESRCH); /* no such pid */
	assert_null(f.obj);
	fake_process(702, 1, NULL); /* stat without maps */
	resolve_one(s, 702, 1, 0x1000, -ESRCH);
	fake_process(703, 1, ""); /* exited: empty maps */
	resolve_one(s, 703, 1, 0x1000, -ESRCH);
	fake_process(704, 1, "garbage\nmore garbage");
	resolve_one(s, 704, 1, 0x1000, -ESRCH);
	snprintf(path, sizeof(path), "%s/705", fake_root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/705/stat", fake_root);
	write_file(path, "705 (x) S 1 2 3\n"); /* truncated stat */
	resolve_one(s, 705, 1, 0x1000, -ESRCH);
	/* A failed process is retried at most every 100 ms. */
	resolve_one(s, 701, 1, 0x1000, -ESRCH);
	symbolizer__stats(s, &st);
	if (monotonic_ns() - t0 < 100000000ull) {
		assert_int_equal(st.maps_reads, 5);
		assert_int_equal(st.maps_failed, 5);
	}
	assert_int_equal(st.maps_reads, st.maps_failed);
	assert_int_equal(st.unresolved, 6);
	assert_int_equal(st.processes, 0);
	for (uint32_t pid = 701; pid <= 705; pid++)
		assert_false(symbolizer__knows(s, pid, 1 * ns_per_tick));
	symbolizer__free(s);
}

/* --- the live process --- */

__attribute__((noinline, used)) int live_marker(int x)
{
	volatile int acc = x;

	for (int i = 0; i < x; i++)
		acc += i;
	return acc;
}

static uint64_t self_start_ns(void)
{
	char buf[1024], *p;
	unsigned long long ticks = 0;
	FILE *f = fopen("/proc/self/stat", "r");

	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')');
	assert_non_null(p);
	/* Field 22; field 3 follows ") ". */
	p++;
	for (int field = 3; field < 22; field++)
		p = strchr(p + 1, ' ');
	assert_int_equal(sscanf(p + 1, "%llu", &ticks), 1);
	return ticks * (1000000000ull / sysconf(_SC_CLK_TCK));
}

static void test_live_self(void **state)
{
	struct symbolizer_opts opts = {.kallsyms = fixture("TAILPROF_FIXTURE_KALLSYMS")};
	struct symbolizer *s = symbolizer__new(&opts);
	uint64_t start_ns = self_start_ns(), value, size, sym_start;
	void *getpid_addr = dlsym(RTLD_DEFAULT, "getpid");
	uint64_t addrs[3] = {
	    (uint64_t)(uintptr_t)&live_marker + 1,
	    (uint64_t)(uintptr_t)getpid_addr,
	    (uint64_t)(uintptr_t)getpid_addr + 1,
	};
	char exe[PATH_MAX];
	struct frame f[3];
	ssize_t n;

	(void)state;
	assert_non_null(s);
	assert_non_null(getpid_addr);
	assert_int_equal(symbolizer__resolve_user(s, getpid(), start_ns, 0, addrs, 3, f), 3);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';

	assert_non_null(f[0].obj);
	assert_string_equal(object__path(f[0].obj), exe);
	assert_string_equal(object__lookup(f[0].obj, f[0].addr, &sym_start), "live_marker");
	test_elf_symbol(exe, "live_marker", &value, &size);
	assert_int_equal(sym_start, value);
	assert_int_equal(f[0].addr, value + 1);

	for (int i = 1; i < 3; i++) {
		assert_non_null(f[i].obj);
		assert_string_equal(object__name(f[i].obj), "libc.so.6");
		assert_string_equal(object__lookup(f[i].obj, f[i].addr, NULL), "getpid");
	}
	assert_true(symbolizer__knows(s, getpid(), start_ns));

	/* A wrong start time: not this process. */
	assert_int_equal(
	    symbolizer__resolve_user(s, getpid(), start_ns + 10000000000ull, 0, addrs, 3, f),
	    -ESRCH);
	for (int i = 0; i < 3; i++) {
		assert_null(f[i].obj);
		assert_int_equal(f[i].addr, addrs[i]);
	}
	/* A pid above pid_max. */
	assert_int_equal(symbolizer__resolve_user(s, 0x7ffffff0, start_ns, 0, addrs, 3, f), -ESRCH);
	assert_null(f[0].obj);
	symbolizer__free(s);
}

/* --- separate debug files, MiniDebugInfo --- */

/* The symbolizer's name of fixture_hidden (a local function: in .symtab only) in the PIE fixture
 * file path mapped by fake process pid, or NULL. */
static const char *hidden_name(struct symbolizer *s, const char *path, uint32_t pid,
			       struct object **obj)
{
	const char *pie = fixture("TAILPROF_FIXTURE_PIE");
	uint64_t bias = 0x555555554000ull, value, size, addr;
	char maps[8192] = "", link[PATH_MAX + 64];
	struct frame f;

	test_elf_symbol(pie, "fixture_hidden", &value, &size);
	append_elf_maps(maps, sizeof(maps), path, bias);
	fake_process(pid, pid, maps);
	/* the process's root, as /proc/PID/root is: debuglink files are looked up through it */
	snprintf(link, sizeof(link), "%s/%u/root", fake_root, pid);
	unlink(link);
	assert_int_equal(symlink("/", link), 0);
	addr = bias + value + size / 2;
	assert_int_equal(
	    symbolizer__resolve_user(s, pid, (uint64_t)pid * ns_per_tick, 0, &addr, 1, &f), 1);
	assert_non_null(f.obj);
	*obj = f.obj;
	return object__lookup(f.obj, f.addr, NULL);
}

static void make_dirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(buf, 0755);
		*p = '/';
	}
	mkdir(buf, 0755);
}

static void test_debug_file_build_id(void **state)
{
	const char *stripped = fixture("TAILPROF_FIXTURE_PIE_STRIPPED");
	char dir[PATH_MAX + 16], sub[PATH_MAX + 64], file[2 * PATH_MAX];
	const char *dirs[2] = {"/nonexistent-debug-dir", dir};
	struct symbolizer_stats st;
	struct test_elf te;
	struct object *obj;
	struct symbolizer *s;

	(void)state;
	/* Without the debug file the stripped executable has no name for the local function. */
	s = fake_symbolizer();
	assert_null(hidden_name(s, stripped, 1101, &obj));
	symbolizer__free(s);

	test_elf_read(stripped, &te);
	assert_int_equal(strlen(te.build_id), 40);
	snprintf(dir, sizeof(dir), "%s/debug", fake_root);
	snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", dir, te.build_id);
	make_dirs(sub);
	snprintf(file, sizeof(file), "%s/%s.debug", sub, te.build_id + 2);
	assert_int_equal(symlink(fixture("TAILPROF_FIXTURE_PIE_DEBUG"), file), 0);
	s = symbolizer__new(&(struct symbolizer_opts){
	    .proc_root = fake_root,
	    .kallsyms = fixture("TAILPROF_FIXTURE_KALLSYMS"),
	    .kernel_notes = "/nonexistent",
	    .debug_dirs = dirs,
	    .nr_debug_dirs = 2,
	});
	assert_non_null(s);
	assert_string_equal(hidden_name(s, stripped, 1102, &obj), "fixture_hidden");
	/* the object is still the executable, with its own path and build ID */
	assert_string_equal(object__path(obj), stripped);
	assert_string_equal(object__build_id(obj), te.build_id);
	symbolizer__stats(s, &st);
	assert_int_equal(st.debug_files, 1);
	symbolizer__free(s);
}

static void test_debuglink(void **state)
{
	const char *linked = fixture("TAILPROF_FIXTURE_PIE_DEBUGLINK");
	char dir[PATH_MAX + 16], copy[PATH_MAX + 32], wrong[PATH_MAX + 64], cmd[3 * PATH_MAX + 256];
	struct symbolizer_stats st;
	struct symbolizer *s = fake_symbolizer();
	struct object *obj;

	(void)state;
	/* fixture_pie.debug lies beside the executable, as its .gnu_debuglink says */
	assert_string_equal(hidden_name(s, linked, 1103, &obj), "fixture_hidden");
	symbolizer__stats(s, &st);
	assert_int_equal(st.debug_files, 1);
	symbolizer__free(s);

	/* A FIFO or a device in the debug file's place is never opened (a read would block, an
	 * open can have side effects); nor is a file of another user beside the object. */
	snprintf(dir, sizeof(dir), "%s/fifodebug", fake_root);
	make_dirs(dir);
	snprintf(copy, sizeof(copy), "%s/app", dir);
	snprintf(wrong, sizeof(wrong), "%s/fifo", dir);
	snprintf(cmd, sizeof(cmd),
		 "cp '%s' '%s' && mkfifo '%s' && ln -s fifo '%s/fixture_pie.debug'", linked, copy,
		 wrong, dir);
	assert_int_equal(system(cmd), 0);
	s = fake_symbolizer();
	assert_null(hidden_name(s, copy, 1106, &obj));
	symbolizer__free(s);
	if (geteuid() == 0) {
		snprintf(cmd, sizeof(cmd),
			 "rm '%s/fixture_pie.debug' && cp '%s' '%s/fixture_pie.debug' && "
			 "chown 12345 '%s/fixture_pie.debug'",
			 dir, fixture("TAILPROF_FIXTURE_PIE_DEBUG"), dir, dir);
		assert_int_equal(system(cmd), 0);
		s = fake_symbolizer();
		assert_null(hidden_name(s, copy, 1107, &obj));
		symbolizer__free(s);
		/* owned by the object's owner: used */
		snprintf(cmd, sizeof(cmd), "chown 0 '%s/fixture_pie.debug'", dir);
		assert_int_equal(system(cmd), 0);
		s = fake_symbolizer();
		assert_string_equal(hidden_name(s, copy, 1108, &obj), "fixture_hidden");
		symbolizer__free(s);
	}

	/* A file of that name that belongs to another build is not used. */
	snprintf(dir, sizeof(dir), "%s/wrongdebug", fake_root);
	make_dirs(dir);
	snprintf(copy, sizeof(copy), "%s/app", dir);
	snprintf(wrong, sizeof(wrong), "%s/fixture_pie.debug", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && cp '%s' '%s'", linked, copy,
		 fixture("TAILPROF_FIXTURE_LIB"), wrong);
	assert_int_equal(system(cmd), 0);
	s = fake_symbolizer();
	assert_null(hidden_name(s, copy, 1104, &obj));
	symbolizer__stats(s, &st);
	assert_int_equal(st.debug_files, 0);
	symbolizer__free(s);
}

static void test_minidebuginfo(void **state)
{
	struct symbolizer_stats st;
	struct symbolizer *s = fake_symbolizer();
	struct object *obj;

	(void)state;
	assert_string_equal(hidden_name(s, fixture("TAILPROF_FIXTURE_PIE_MINI"), 1105, &obj),
			    "fixture_hidden");
	assert_string_equal(hidden_name(s, fixture("TAILPROF_FIXTURE_PIE_MINI"), 1105, &obj),
			    "fixture_hidden");
	symbolizer__stats(s, &st);
	assert_int_equal(st.minidebuginfo, 1);
	assert_int_equal(st.debug_files, 0);
	symbolizer__free(s);
}

/* --- JIT perf maps --- */

static void test_perf_map_parse(void **state)
{
	static const char text[] = "1000 100 first\n"
				   "0x1080 0x100 second overlaps the end of first\n"
				   "\n"
				   "garbage line\n"
				   "2000 0 empty\n"
				   "3000 40 py::<module>:/srv/app.py\r\n"
				   "1040 10 third\n"
				   "1000 100 first again";
	struct symtab t;
	size_t skipped;

	(void)state;
	assert_int_equal(perf_map__parse(text, sizeof(text) - 1, &t, &skipped), 5);
	assert_int_equal(skipped, 2); /* the garbage line and the empty entry */
	/* the last line wins all of 0x1000..0x10ff, second keeps what lies beyond */
	assert_string_equal(span_name(&t, 0x1000, NULL), "first again");
	assert_string_equal(span_name(&t, 0x1045, NULL), "first again");
	assert_string_equal(span_name(&t, 0x10ff, NULL), "first again");
	assert_string_equal(span_name(&t, 0x1100, NULL), "second overlaps the end of first");
	assert_string_equal(span_name(&t, 0x117f, NULL), "second overlaps the end of first");
	assert_null(span_name(&t, 0x1180, NULL));
	assert_string_equal(span_name(&t, 0x3000, NULL), "py::<module>:/srv/app.py");
	assert_null(span_name(&t, 0x2000, NULL));
	symtab__clear(&t);

	assert_int_equal(perf_map__parse("", 0, &t, &skipped), 0);
	assert_int_equal(t.nr_spans, 0);
	symtab__clear(&t);

	/* only the last PERF_MAP_MAX_ENTRIES lines are read */
	{
		size_t n = PERF_MAP_MAX_ENTRIES + 10, off = 0;
		char *text = malloc(n * 24);

		assert_non_null(text);
		for (size_t i = 0; i < n; i++)
			off += sprintf(text + off, "%zx 1 e%zu\n", 0x100000 + i, i);
		assert_int_equal(perf_map__parse(text, off, &t, &skipped), PERF_MAP_MAX_ENTRIES);
		assert_int_equal(skipped, 10);
		assert_null(span_name(&t, 0x100000 + 9, NULL));
		assert_string_equal(span_name(&t, 0x100000 + 10, NULL), "e10");
		assert_string_equal(span_name(&t, 0x100000 + n - 1, NULL), "e262153");
		symtab__clear(&t);
		free(text);
	}

	/* a 10 KB name is kept cut to SYMBOL_NAME_MAX bytes */
	{
		char *big = malloc(10100);
		const char *name;

		assert_non_null(big);
		strcpy(big, "5000 10 ");
		memset(big + 8, 'x', 10000);
		strcpy(big + 10008, "\n");
		assert_int_equal(perf_map__parse(big, strlen(big), &t, NULL), 1);
		name = span_name(&t, 0x5000, NULL);
		assert_int_equal(strlen(name), SYMBOL_NAME_MAX);
		assert_string_equal(name + SYMBOL_NAME_MAX - 3, "...");
		symtab__clear(&t);
		free(big);
	}
}

static void test_perf_map_open(void **state)
{
	char root[PATH_MAX + 16], tmp[PATH_MAX + 32], path[PATH_MAX + 64], target[PATH_MAX + 64];
	uint32_t uid = getuid();
	struct stat st;
	int fd;

	(void)state;
	snprintf(root, sizeof(root), "%s/openroot", fake_root);
	snprintf(tmp, sizeof(tmp), "%s/tmp", root);
	make_dirs(tmp);
	assert_int_equal(perf_map__open(root, 42, uid, uid, &st), -ENOENT);
	snprintf(path, sizeof(path), "%s/perf-42.map", tmp);
	write_file(path, "1000 10 f\n");
	fd = perf_map__open(root, 42, uid, uid, &st);
	assert_true(fd >= 0);
	close(fd);
	/* not the process's user */
	assert_int_equal(perf_map__open(root, 42, uid + 1, uid + 2, &st), -EPERM);
	/* a symbolic link, here to a file of the same user */
	snprintf(target, sizeof(target), "%s/secret", root);
	write_file(target, "1000 10 secret\n");
	snprintf(path, sizeof(path), "%s/perf-43.map", tmp);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(perf_map__open(root, 43, uid, uid, &st), -EPERM);
	/* a directory on the way that is a link */
	snprintf(path, sizeof(path), "%s/linkroot", fake_root);
	make_dirs(path);
	snprintf(path, sizeof(path), "%s/linkroot/tmp", fake_root);
	assert_int_equal(symlink(tmp, path), 0);
	snprintf(path, sizeof(path), "%s/linkroot", fake_root);
	assert_int_equal(perf_map__open(path, 42, uid, uid, &st), -EPERM);
	/* too large */
	snprintf(path, sizeof(path), "%s/perf-44.map", tmp);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, PERF_MAP_MAX_BYTES + 1), 0);
	close(fd);
	assert_int_equal(perf_map__open(root, 44, uid, uid, &st), -EFBIG);
}

/* A JIT process: anonymous executable memory named by its perf map, re-read as it grows. */
static void test_jit_symbols(void **state)
{
	char path[PATH_MAX + 64], status[256];
	struct symbolizer *s = fake_symbolizer();
	struct symbolizer_stats st;
	uint64_t addrs[3] = {0x7f0000001010ull, 0x7f0000002000ull, 0x7f0000009000ull};
	struct frame f[3];
	FILE *map;

	(void)state;
	fake_process(
	    1201, 12,
	    "7f0000000000-7f0000010000 r-xp 00000000 00:00 0 \n"
	    "7f0000010000-7f0000020000 rwxp 00000000 00:00 0                  [anon:jit]\n");
	snprintf(status, sizeof(status), "Name:\tnode\nUid:\t%u\t%u\t%u\t%u\nNSpid:\t1201\n",
		 getuid(), getuid(), getuid(), getuid());
	snprintf(path, sizeof(path), "%s/1201/status", fake_root);
	write_file(path, status);
	snprintf(path, sizeof(path), "%s/1201/root/tmp", fake_root);
	make_dirs(path);
	snprintf(path, sizeof(path), "%s/1201/root/tmp/perf-1201.map", fake_root);
	write_file(path, "7f0000001000 100 LazyCompile:*hot /srv/app.js:10\n"
			 "7f0000002000 80 Builtin:ArrayPush\n");
	assert_int_equal(symbolizer__resolve_user(s, 1201, 12 * ns_per_tick, 0, addrs, 3, f), 3);
	assert_non_null(f[0].obj);
	assert_string_equal(object__path(f[0].obj), "/tmp/perf-1201.map");
	assert_int_equal(f[0].addr, addrs[0]); /* JIT frames keep their absolute address */
	assert_string_equal(object__lookup(f[0].obj, f[0].addr, NULL),
			    "LazyCompile:*hot /srv/app.js:10");
	assert_string_equal(object__lookup(f[1].obj, f[1].addr, NULL), "Builtin:ArrayPush");
	assert_null(f[2].obj); /* JIT memory the map does not name */

	/* The JIT moves other code to the same place: the appended line wins after a re-read. */
	map = fopen(path, "a");
	assert_non_null(map);
	fputs("7f0000001000 100 LazyCompile:*reoptimized /srv/app.js:10\n", map);
	fclose(map);
	usleep(1100 * 1000); /* a changed map is read again at most once a second */
	assert_int_equal(symbolizer__resolve_user(s, 1201, 12 * ns_per_tick, 0, addrs, 1, f), 1);
	assert_string_equal(object__lookup(f[0].obj, f[0].addr, NULL),
			    "LazyCompile:*reoptimized /srv/app.js:10");
	symbolizer__stats(s, &st);
	assert_int_equal(st.perf_map_reads, 2);
	assert_int_equal(st.perf_map_rejected, 0);
	symbolizer__free(s);
}

/* --- process names, caps --- */

static void test_process_info(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	char maps[8192] = "", path[PATH_MAX + 64];
	struct symbolizer *s = fake_symbolizer();
	struct exec_identity id = {};
	struct symbolizer_stats st;
	struct process_info info;

	(void)state;
	append_elf_maps(maps, sizeof(maps), lib, 0x7f0000100000ull);
	fake_process(1301, 13, maps);
	snprintf(path, sizeof(path), "%s/1301/status", fake_root);
	write_file(path, "Name:\tshort\nUid:\t0\t0\t0\t0\nNSpid:\t1301\t7\n");
	snprintf(path, sizeof(path), "%s/1301/exe", fake_root);
	assert_int_equal(symlink("/srv/bin/an-executable-name-longer-than-fifteen (deleted)", path),
			 0);
	/* before any user frame was resolved (its samples so far in execve, a page fault): read
	 * without its maps */
	assert_int_equal(symbolizer__process_info(s, 1301, 13 * ns_per_tick, &info), 0);
	assert_string_equal(info.name, "an-executable-name-longer-than-fifteen");
	assert_int_equal(info.ns_pid, 7);
	symbolizer__stats(s, &st);
	assert_int_equal(st.maps_reads, 0);
	resolve_one(s, 1301, 13, alpha_addr(lib, 0x7f0000100000ull), 0);
	memset(&info, 0, sizeof(info));
	assert_int_equal(symbolizer__process_info(s, 1301, 13 * ns_per_tick, &info), 0);
	assert_string_equal(info.name, "an-executable-name-longer-than-fifteen");
	assert_int_equal(info.ns_pid, 7);
	symbolizer__stats(s, &st);
	assert_int_equal(st.maps_reads, 1);
	assert_int_equal(symbolizer__process_info(s, 1301, 14 * ns_per_tick, &info), -ESRCH);
	/* gone before anything was read: what its exec told, not the /proc files of the pid's
	 * next process */
	assert_int_equal(symbolizer__process_info(s, 1302, 12 * ns_per_tick, &info), -ESRCH);
	fake_process(1302, 13, maps);
	snprintf(path, sizeof(path), "%s/1302/exe", fake_root);
	assert_int_equal(symlink("/srv/bin/the-next-one", path), 0);
	snprintf(id.name, sizeof(id.name), "from-its-exec");
	symbolizer__note_exec(s, 1302, 12 * ns_per_tick, &id);
	memset(&info, 0, sizeof(info));
	assert_int_equal(symbolizer__process_info(s, 1302, 12 * ns_per_tick, &info), 0);
	assert_string_equal(info.name, "from-its-exec");
	assert_int_equal(info.ns_pid, 0);
	assert_int_equal(info.cgroup, 0);
	assert_int_equal(symbolizer__process_info(s, 1302, 13 * ns_per_tick, &info), 0);
	assert_string_equal(info.name, "the-next-one");
	/* after its exit the name stays, for the samples of its teardown */
	symbolizer__forget_exited(s, 1301);
	assert_false(symbolizer__knows(s, 1301, 13 * ns_per_tick));
	memset(&info, 0, sizeof(info));
	assert_int_equal(symbolizer__process_info(s, 1301, 13 * ns_per_tick, &info), 0);
	assert_string_equal(info.name, "an-executable-name-longer-than-fifteen");
	symbolizer__free(s);
}

/* A fake process pid (started at starttime ticks) mapping lib, whose cgroup file is cgroup (none
 * when NULL), resolved once after an exec noted with id (none when NULL): its process_info. */
static struct process_info exec_process(struct symbolizer *s, const char *lib, uint32_t pid,
					uint64_t starttime, const char *cgroup,
					const struct exec_identity *id)
{
	char maps[8192] = "", path[PATH_MAX + 64];
	struct process_info info;

	append_elf_maps(maps, sizeof(maps), lib, 0x7f0000100000ull);
	fake_process(pid, starttime, maps);
	snprintf(path, sizeof(path), "%s/%u/cgroup", fake_root, pid);
	if (cgroup)
		write_file(path, cgroup);
	if (id)
		symbolizer__note_exec(s, pid, starttime * ns_per_tick, id);
	resolve_one(s, pid, starttime, alpha_addr(lib, 0x7f0000100000ull), 0);
	assert_int_equal(symbolizer__process_info(s, pid, starttime * ns_per_tick, &info), 0);
	return info;
}

/* fork_process: events lost between the fork record and the read */
static bool forget_first;

/* A forked child (pid, starttime) of (parent, parent_starttime) that has not exec'd, whose /proc
 * files are another image's (exe: the link's target; cgroup file "0::/moved"), sampled once with
 * its fork record's identity id: its process_info. */
static struct process_info fork_process(struct symbolizer *s, const char *lib, uint32_t pid,
					uint64_t starttime, const char *exe, uint32_t parent,
					uint64_t parent_starttime, const struct exec_identity *id)
{
	char maps[8192] = "", path[PATH_MAX + 64];
	struct process_info info;

	append_elf_maps(maps, sizeof(maps), lib, 0x7f0000100000ull);
	fake_process(pid, starttime, maps);
	snprintf(path, sizeof(path), "%s/%u/cgroup", fake_root, pid);
	write_file(path, "0::/moved\n");
	snprintf(path, sizeof(path), "%s/%u/exe", fake_root, pid);
	assert_int_equal(symlink(exe, path), 0);
	symbolizer__note_fork(s, pid, starttime * ns_per_tick, parent,
			      parent_starttime * ns_per_tick, id);
	if (forget_first)
		symbolizer__forget_fork_identities(s);
	resolve_one(s, pid, starttime, alpha_addr(lib, 0x7f0000100000ull), 0);
	assert_int_equal(symbolizer__process_info(s, pid, starttime * ns_per_tick, &info), 0);
	return info;
}

/* The cgroups of test_exec_identity: path -> kernfs id, as name_to_handle_at would give them
 * below the hierarchies' mounts (88: the v2 root of the hybrid processes). */
static int fake_cgroup_id(void *ctx, bool v1, const char *path, uint64_t *id)
{
	static const struct {
		bool v1;
		const char *path;
		uint64_t id;
	} ids[] = {{false, "/app.slice/a.service", 77},
		   {false, "/moved", 79},
		   {false, "/", 88},
		   {true, "/docker/z", 5001},
		   {true, "/docker/w", 5002}};

	(void)ctx;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (ids[i].v1 == v1 && !strcmp(ids[i].path, path)) {
			*id = ids[i].id;
			return 0;
		}
	return -ENOENT;
}

/* A process's labels come from its exec event: no exe, ns/pid or status file is there to read,
 * and a cgroup v2 id's path is read from the first process's cgroup file only, when it still
 * names that cgroup. */
static void test_exec_identity(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	struct symbolizer *s = symbolizer__new(&(struct symbolizer_opts){
	    .proc_root = fake_root,
	    .kallsyms = fixture("TAILPROF_FIXTURE_KALLSYMS"),
	    .kernel_notes = "/nonexistent",
	    .cgroup_id = fake_cgroup_id,
	});
	const uint32_t host_ns = 4026531836u;
	struct exec_identity a = {.cgroup_id = 77, .pid_ns = host_ns, .ns_pid = 1401};
	struct exec_identity b = {.cgroup_id = 77, .pid_ns = host_ns + 9, .ns_pid = 3};
	struct exec_identity h = {.cgroup_id = 88, .pid_ns = host_ns, .ns_pid = 1404}, f;
	char path[PATH_MAX + 64];
	struct symbolizer_stats st;
	struct process_info info;
	uint64_t checks;
	uint32_t cg;

	(void)state;
	snprintf(path, sizeof(path), "%s/1", fake_root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/1/ns", fake_root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/1/ns/pid", fake_root);
	assert_int_equal(symlink("pid:[4026531836]", path), 0);
	snprintf(a.name, sizeof(a.name), "from-exec");
	snprintf(b.name, sizeof(b.name), "second");
	snprintf(h.name, sizeof(h.name), "hybrid");

	/* moved after its exec (as runc moves its init): its own path, remembered for no one */
	info = exec_process(s, lib, 1400, 13, "0::/moved\n", &a);
	assert_string_equal(cgroups__get(info.cgroup)->path, "/moved");
	info = exec_process(s, lib, 1401, 14, "0::/app.slice/a.service\n", &a);
	assert_string_equal(info.name, "from-exec");
	assert_int_equal(info.ns_pid, 0); /* the proc mount's namespace */
	cg = info.cgroup;
	assert_string_equal(cgroups__get(cg)->path, "/app.slice/a.service");
	/* the same v2 cgroup: its path without a cgroup file; another namespace: its pid there */
	info = exec_process(s, lib, 1402, 15, NULL, &b);
	assert_string_equal(info.name, "second");
	assert_int_equal(info.ns_pid, 3);
	assert_int_equal(info.cgroup, cg);
	/* a note of an earlier process with the pid says nothing of this one: /proc does */
	snprintf(path, sizeof(path), "%s/1403", fake_root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/1403/exe", fake_root);
	assert_int_equal(symlink("/usr/bin/real-name", path), 0);
	symbolizer__note_exec(s, 1403, 99 * ns_per_tick, &a);
	info = exec_process(s, lib, 1403, 16, "0::/other\n", NULL);
	assert_string_equal(info.name, "real-name");
	assert_string_equal(cgroups__get(info.cgroup)->path, "/other");
	/* hybrid layouts: the v1 path is not the v2 cgroup's, so without the exec's name=systemd
	 * cgroup each process's file is read */
	info = exec_process(s, lib, 1404, 17, "9:name=systemd:/docker/x\n0::/\n", &h);
	assert_string_equal(cgroups__get(info.cgroup)->path, "/docker/x");
	h.ns_pid = 1405;
	info = exec_process(s, lib, 1405, 18, "9:name=systemd:/docker/y\n0::/\n", &h);
	assert_string_equal(info.name, "hybrid");
	assert_string_equal(cgroups__get(info.cgroup)->path, "/docker/y");
	symbolizer__stats(s, &st);
	assert_int_equal(st.identities_from_exec, 5);
	assert_int_equal(st.cgroup_reads_saved, 1);
	/* with it (BPF's walk, cgroup_v1_id): remembered for the pair of cgroups, and a process of
	 * the same v2 cgroup in another name=systemd cgroup is read, not given the first's path */
	h.cgroup_v1_id = 5001;
	h.ns_pid = 1406;
	info = exec_process(s, lib, 1406, 19, "9:name=systemd:/docker/z\n0::/\n", &h);
	assert_string_equal(cgroups__get(info.cgroup)->path, "/docker/z");
	h.ns_pid = 1407;
	info = exec_process(s, lib, 1407, 20, NULL, &h);
	assert_string_equal(cgroups__get(info.cgroup)->path, "/docker/z");
	h.cgroup_v1_id = 5002;
	h.ns_pid = 1408;
	info = exec_process(s, lib, 1408, 21, "9:name=systemd:/docker/w\n0::/\n", &h);
	assert_string_equal(cgroups__get(info.cgroup)->path, "/docker/w");
	symbolizer__stats(s, &st);
	assert_int_equal(st.cgroup_reads_saved, 2);
	/* a child of 1401 sampled before its exec, read after it: /proc tells its new image's name
	 * and a cgroup it was moved to, its fork record its executable's name, cgroups and
	 * namespace then */
	f = (struct exec_identity){.cgroup_id = 77, .pid_ns = host_ns, .ns_pid = 1409};
	snprintf(f.name, sizeof(f.name), "forking-shell");
	info = fork_process(s, lib, 1409, 22, "/usr/bin/new-image", 1401, 14, &f);
	assert_string_equal(info.name, "forking-shell");
	assert_int_equal(info.cgroup, cg);
	assert_int_equal(info.ns_pid, 0);
	/* cloned into a new PID namespace, its executable unreadable: its pid there, and its name
	 * from /proc */
	f = (struct exec_identity){.cgroup_id = 77, .pid_ns = host_ns + 11, .ns_pid = 1};
	info = fork_process(s, lib, 1410, 23, "/usr/bin/runtime", 999, 1, &f);
	assert_string_equal(info.name, "runtime");
	assert_int_equal(info.ns_pid, 1);
	assert_int_equal(info.cgroup, cg);
	/* gone before it was read (no /proc entry): its labels from its fork record */
	f = (struct exec_identity){.cgroup_id = 77, .pid_ns = host_ns, .ns_pid = 1411};
	snprintf(f.name, sizeof(f.name), "short-child");
	symbolizer__note_fork(s, 1411, 24 * ns_per_tick, 1401, 14 * ns_per_tick, &f);
	assert_int_equal(symbolizer__process_info(s, 1411, 24 * ns_per_tick, &info), 0);
	assert_string_equal(info.name, "short-child");
	assert_int_equal(info.cgroup, cg);
	symbolizer__stats(s, &st);
	assert_int_equal(st.identities_from_fork, 3);
	assert_int_equal(st.identities_from_exec, 8);
	assert_int_equal(st.cgroup_reads_saved, 5);
	/* a live child sampled in the kernel only, whose fork record tells all of its labels: no
	 * identity check (its stat file, exe and cgroup file are another image's), its labels
	 * kept for its next samples until it execs; then its exec record's */
	checks = st.identity_checks[0] + st.identity_checks[1];
	fake_process(1413, 26, "");
	snprintf(path, sizeof(path), "%s/1413/exe", fake_root);
	assert_int_equal(symlink("/usr/bin/new-image", path), 0);
	snprintf(path, sizeof(path), "%s/1413/cgroup", fake_root);
	write_file(path, "0::/moved\n");
	f = (struct exec_identity){.cgroup_id = 77, .pid_ns = host_ns, .ns_pid = 1413};
	snprintf(f.name, sizeof(f.name), "told-child");
	symbolizer__note_fork(s, 1413, 26 * ns_per_tick, 1401, 14 * ns_per_tick, &f);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(symbolizer__process_info(s, 1413, 26 * ns_per_tick, &info), 0);
		assert_string_equal(info.name, "told-child");
		assert_int_equal(info.cgroup, cg);
	}
	symbolizer__stats(s, &st);
	assert_int_equal(st.identity_checks[0] + st.identity_checks[1], checks);
	symbolizer__forget_process(s, 1413);
	f = a;
	snprintf(f.name, sizeof(f.name), "its-exec");
	symbolizer__note_exec(s, 1413, 26 * ns_per_tick, &f);
	assert_int_equal(symbolizer__process_info(s, 1413, 26 * ns_per_tick, &info), 0);
	assert_string_equal(info.name, "its-exec");
	symbolizer__stats(s, &st);
	assert_int_equal(st.identity_checks[0] + st.identity_checks[1], checks);
	/* events lost after its fork (its exec among them, maybe): /proc, as without the fork
	 * record (forget_first: fork_process calls it between the note and the read) */
	forget_first = true;
	info = fork_process(s, lib, 1412, 25, "/usr/bin/after-loss", 1401, 14, &f);
	forget_first = false;
	assert_string_equal(info.name, "after-loss");
	assert_string_equal(cgroups__get(info.cgroup)->path, "/moved");
	symbolizer__stats(s, &st);
	assert_int_equal(st.identities_from_fork, 4);
	for (uint32_t pid = 1409; pid <= 1413; pid++) {
		snprintf(path, sizeof(path), "%s/%u/exe", fake_root, pid);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/1403/exe", fake_root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/1/ns/pid", fake_root);
	unlink(path);
	symbolizer__free(s);
}

static void test_caps_evict_lru(void **state)
{
	const char *lib = fixture("TAILPROF_FIXTURE_LIB");
	const char *nopie = fixture("TAILPROF_FIXTURE_NOPIE");
	struct symbolizer_stats st;
	struct symbolizer *s;
	char maps[8192];
	struct frame kept;

	(void)state;
	s = symbolizer__new(&(struct symbolizer_opts){
	    .proc_root = fake_root,
	    .kallsyms = fixture("TAILPROF_FIXTURE_KALLSYMS"),
	    .kernel_notes = "/nonexistent",
	    .max_processes = 2,
	    .max_objects = 3,
	});
	assert_non_null(s);
	for (uint32_t pid = 1401; pid <= 1403; pid++) {
		maps[0] = 0;
		append_elf_maps(maps, sizeof(maps), pid == 1401 ? nopie : lib, 0x7f0000100000ull);
		fake_process(pid, pid, maps);
	}
	kept = resolve_one(s, 1401, 1401, alpha_addr(nopie, 0x7f0000100000ull), 0);
	object__get(kept.obj); /* as a window would */
	resolve_one(s, 1402, 1402, alpha_addr(lib, 0x7f0000100000ull), 0);
	resolve_one(s, 1401, 1401, alpha_addr(nopie, 0x7f0000100000ull), 0); /* 1401 used last */
	/* a third process: the least recently used one (1402) goes, its object with it */
	resolve_one(s, 1403, 1403, alpha_addr(lib, 0x7f0000100000ull), 0);
	symbolizer__stats(s, &st);
	/* at the end of the call that passed the cap, after 1403 took lib: nothing read again */
	assert_int_equal(st.evicted_processes, 1);
	assert_int_equal(st.processes_held, 2);
	assert_int_equal(st.max_processes, 2);
	resolve_one(s, 1401, 1401, alpha_addr(nopie, 0x7f0000100000ull), 0);
	symbolizer__stats(s, &st);
	assert_int_equal(st.evicted_processes, 1);
	assert_false(symbolizer__knows(s, 1402, 1402 * ns_per_tick));
	assert_true(symbolizer__knows(s, 1401, 1401 * ns_per_tick));
	assert_true(symbolizer__knows(s, 1403, 1403 * ns_per_tick));
	/* 1403 maps the same library: evicting 1402 freed no object */
	assert_int_equal(st.evicted_objects, 0);
	assert_int_equal(st.objects, 3);
	/* objects over their cap: least recently used processes go until the objects only they
	 * kept are freed; an object a window holds stays */
	symbolizer__free(s);
	object__put(kept.obj);
	s = symbolizer__new(&(struct symbolizer_opts){
	    .proc_root = fake_root,
	    .kallsyms = fixture("TAILPROF_FIXTURE_KALLSYMS"),
	    .kernel_notes = "/nonexistent",
	    .max_objects = 2,
	});
	kept = resolve_one(s, 1401, 1401, alpha_addr(nopie, 0x7f0000100000ull), 0);
	object__get(kept.obj);
	resolve_one(s, 1402, 1402, alpha_addr(lib, 0x7f0000100000ull), 0);
	resolve_one(s, 1402, 1402, alpha_addr(lib, 0x7f0000100000ull), 0);
	symbolizer__stats(s, &st);
	/* kernel, nopie, lib: dropping 1401 would free nothing (a window holds nopie), so 1402,
	 * used more recently, goes with lib; its maps are read again for this call */
	assert_int_equal(st.evicted_processes, 1);
	assert_int_equal(st.evicted_objects, 1);
	assert_true(symbolizer__knows(s, 1401, 1401 * ns_per_tick));
	assert_true(symbolizer__knows(s, 1402, 1402 * ns_per_tick));
	/* Over the cap with nothing left to free, later calls evict nothing more: no thrashing. */
	{
		struct frame held =
		    resolve_one(s, 1402, 1402, alpha_addr(lib, 0x7f0000100000ull), 0);

		object__get(held.obj);
		resolve_one(s, 1401, 1401, alpha_addr(nopie, 0x7f0000100000ull), 0);
		symbolizer__stats(s, &st);
		for (int i = 0; i < 10; i++)
			resolve_one(s, 1402, 1402, alpha_addr(lib, 0x7f0000100000ull), 0);
		{
			struct symbolizer_stats st2;

			symbolizer__stats(s, &st2);
			assert_int_equal(st2.evicted_processes, st.evicted_processes);
			assert_int_equal(st2.maps_reads, st.maps_reads);
		}
		object__put(held.obj);
	}
	symbolizer__free(s);
	assert_string_equal(object__lookup(kept.obj, kept.addr, NULL), "fixture_alpha");
	object__put(kept.obj);
}

/* --- demangling --- */

static void test_demangle(void **state)
{
	static const char *const want[] = {
	    "(anonymous namespace)::f(int)",
	    "ns::Box<long>::churn(long)",
	    "mycrate::scheme::legacy::function",
	    "mycrate::scheme::v0::function",
	};
	int fd = open(fixture("TAILPROF_FIXTURE_NAMES_LIB"), O_RDONLY);
	struct object *obj = object__new("libfixture_names.so");
	bool found[4] = {};
	struct elf_file ef;
	char *d;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(elf_file__open(&ef, fd), 0);
	assert_int_equal(elf_file__load(&ef, NULL, 0, obj), 0);
	elf_file__close(&ef);
	close(fd);
	for (size_t i = 0; i < obj->symtab.nr_spans; i++) {
		const char *name = obj->symtab.names + obj->symtab.spans[i].name;

		d = demangle(name);
		for (size_t j = 0; d && j < 4; j++)
			found[j] |= !strcmp(d, want[j]);
		free(d);
	}
	for (size_t j = 0; j < 4; j++)
		if (!found[j])
			fail_msg("no symbol demangles to %s", want[j]);
	object__put(obj);
	/* a name that demangles into more than DEMANGLE_MAX_BYTES is cut, and quickly */
	{
		/* f<T>(T, T, ... 10 times) with T 30 nested 20-letter templates: 750 bytes that
		 * demangle into about 12 KB (each T_ repeats T) */
		static const char level[] = "20AAAAAAAAAAAAAAAAAAAAI";
		char deep[1024] = "_Z1fI";
		size_t n = strlen(deep);

		for (int i = 0; i < 30; i++, n += sizeof(level) - 1)
			memcpy(deep + n, level, sizeof(level) - 1);
		deep[n++] = 'i';
		for (int i = 0; i < 31; i++)
			deep[n++] = 'E';
		deep[n++] = 'v';
		for (int i = 0; i < 10; i++, n += 2)
			memcpy(deep + n, "T_", 2);
		deep[n] = 0;
		d = demangle(deep);
		assert_non_null(d);
		assert_int_equal(strlen(d), DEMANGLE_MAX_BYTES);
		assert_memory_equal(d, "void f<AAAAAAAAAAAAAAAAAAAA<", 28);
		assert_string_equal(d + DEMANGLE_MAX_BYTES - 3, "...");
		free(d);
	}
	/* C names and garbage are not demangled */
	assert_null(demangle("fixture_names_run"));
	assert_null(demangle("_Zgarbage"));
	assert_null(demangle("_R"));
	assert_null(demangle(""));
	assert_null(demangle(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_symtab_nested),
	    cmocka_unit_test(test_proc_maps_parse),
	    cmocka_unit_test(test_proc_maps_shared_in_round),
	    cmocka_unit_test(test_read_whole_version),
	    cmocka_unit_test(test_read_whole_version_appended),
	    cmocka_unit_test(test_proc_maps_query_matches_text),
	    cmocka_unit_test(test_layout_pie),
	    cmocka_unit_test(test_layout_nopie),
	    cmocka_unit_test(test_layout_shared_lib),
	    cmocka_unit_test(test_layout_lld_lib),
	    cmocka_unit_test(test_layout_lld_exe),
	    cmocka_unit_test(test_layout_based_lib),
	    cmocka_unit_test(test_layout_stripped),
	    cmocka_unit_test(test_object_cache),
	    cmocka_unit_test(test_fork_fallback),
	    cmocka_unit_test(test_in_symbol),
	    cmocka_unit_test(test_malformed_elf),
	    cmocka_unit_test(test_unresolved),
	    cmocka_unit_test(test_rescan),
	    cmocka_unit_test(test_object_data),
	    cmocka_unit_test(test_pid_reuse),
	    cmocka_unit_test(test_identity_from_bpf),
	    cmocka_unit_test(test_vanished),
	    cmocka_unit_test(test_live_self),
	    cmocka_unit_test(test_debug_file_build_id),
	    cmocka_unit_test(test_debuglink),
	    cmocka_unit_test(test_minidebuginfo),
	    cmocka_unit_test(test_perf_map_parse),
	    cmocka_unit_test(test_perf_map_open),
	    cmocka_unit_test(test_jit_symbols),
	    cmocka_unit_test(test_process_info),
	    cmocka_unit_test(test_exec_identity),
	    cmocka_unit_test(test_caps_evict_lru),
	    cmocka_unit_test(test_demangle),
	    cmocka_unit_test(test_rescan_leaf),
	    cmocka_unit_test(test_loaded),
	    cmocka_unit_test(test_static_layout),
	    cmocka_unit_test(test_fork_vdso),
	};

	return cmocka_run_group_tests(tests, setup_fake_root, teardown_fake_root);
}
