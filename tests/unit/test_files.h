/* SPDX-License-Identifier: GPL-2.0-only */
/* Whole files for the tests of on-disk stores (test_spike_store.c, test_snapshots.c): read one,
 * write one, remove a tree (and a fixture's); stderr captured to count what was reported; and a
 * field of /proc/PID/stat. A failure fails the test. Include after <cmocka.h>.
 */
#ifndef TAILPROF_TEST_FILES_H
#define TAILPROF_TEST_FILES_H

#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Field number field (3 or more, as proc(5) numbers them: 22 starttime, 26 startcode) of
 * /proc/PID/stat, a decimal number. The fields are counted after the last ')', which ends the
 * comm a process may fill with spaces and parentheses. */
static inline unsigned long long test_proc_stat_field(pid_t pid, int field)
{
	char path[64], buf[4096], *f;
	FILE *in;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	in = fopen(path, "r");
	assert_non_null(in);
	assert_non_null(fgets(buf, sizeof(buf), in));
	fclose(in);
	f = strrchr(buf, ')');
	assert_non_null(f);
	/* the space before field 3 follows the ')' */
	for (int i = 3; i <= field && f; i++)
		f = strchr(f + 1, ' ');
	assert_non_null(f);
	return strtoull(f + 1, NULL, 10);
}

/* The bytes of the file at path (malloc'd, one spare byte at the end) and *len. */
static inline uint8_t *test_slurp(const char *path, size_t *len)
{
	struct stat sb;
	uint8_t *buf;
	int fd;

	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	buf = malloc(sb.st_size + 1);
	assert_int_equal(read(fd, buf, sb.st_size), sb.st_size);
	close(fd);
	*len = sb.st_size;
	return buf;
}

/* Makes the file at path hold buf[0..len) (created 0600, or truncated). */
static inline void test_spew(const char *path, const uint8_t *buf, size_t len)
{
	int fd;

	if (len > SSIZE_MAX) {
		fail_msg("%s: a length of %zu", path, len);
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static inline int test_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* Removes dir and everything below it, links not followed. */
static inline void test_rm_tree(const char *dir)
{
	nftw(dir, test_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A cmocka teardown for a malloc'd fixture that begins with the path of its directory (char
 * dir[N] as the first member): removes the tree and frees the fixture. */
static inline int test_teardown_dir(void **state)
{
	test_rm_tree((const char *)*state);
	free(*state);
	return 0;
}

/* stderr into a temp file from test_capture_start to test_capture_end, which returns what was
 * written (the first 16 KiB; valid until the next capture) and restores stderr. */
static int test_saved_stderr = -1;
static char test_captured[16384];

static inline void test_capture_start(void)
{
	FILE *t = tmpfile();

	assert_non_null(t);
	fflush(stderr);
	test_saved_stderr = dup(2);
	dup2(fileno(t), 2);
	fclose(t); /* fd 2 keeps it open */
}

static inline const char *test_capture_end(void)
{
	ssize_t n;

	lseek(2, 0, SEEK_SET);
	n = read(2, test_captured, sizeof(test_captured) - 1);
	test_captured[n > 0 ? n : 0] = '\0';
	dup2(test_saved_stderr, 2);
	close(test_saved_stderr);
	return test_captured;
}

/* How many times needle occurs in hay, not overlapping. */
static inline int test_count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

#endif
