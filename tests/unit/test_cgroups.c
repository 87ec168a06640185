// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of cgroup paths: which line of /proc/PID/cgroup is taken, the container ID and pod
 * UID a path names, interning and the container= match. */
#include <errno.h>
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

#include "cgroups.h"
#include "proc_maps.h"

#define ID64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID  "1f2e3d4c-5b6a-4789-8abc-def012345678"
#define UID_ "1f2e3d4c_5b6a_4789_8abc_def012345678"

static void check(const char *path, const char *want_id, const char *want_pod)
{
	char id[CONTAINER_ID_LEN], pod[POD_UID_LEN];

	cgroups__parse(path, id, pod);
	assert_string_equal(id, want_id);
	assert_string_equal(pod, want_pod);
}

static void test_parse(void **state)
{
	check("/system.slice/docker-" ID64 ".scope", ID64, "");
	check("/docker/" ID64, ID64, "");
	check("/system.slice/containerd.service/kubepods-burstable-pod" UID_
	      ".slice:cri-containerd:" ID64,
	      ID64, UID);
	check("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	      ".slice/cri-containerd-" ID64 ".scope",
	      ID64, UID);
	check("/kubepods/besteffort/pod" UID "/" ID64, ID64, UID);
	check("/machine.slice/libpod-" ID64 ".scope/container", ID64, "");
	check("/crio-" ID64 ".scope", ID64, "");
	/* 63 or 65 hex digits are no container ID; a pod needs the whole UUID */
	check("/docker/"
	      "123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	      "", "");
	check("/docker/" ID64 "0", "", "");
	check("/kubepods/pod1f2e3d4c-5b6a-4789", "", "");
	check("/user.slice/user-0.slice/session-3.scope", "", "");
	check("/", "", "");
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_read_pid(void **state)
{
	char root[] = "/tmp/tp-cgroups-XXXXXX", dir[128], file[160], out[256];
	bool v2 = false;

	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/42", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(file, sizeof(file), "%s/cgroup", dir);
	/* cgroup v2 only */
	write_file(file, "0::/system.slice/docker-" ID64 ".scope\n");
	assert_int_equal(cgroups__read_pid(root, 42, out, sizeof(out), &v2), 0);
	assert_string_equal(out, "/system.slice/docker-" ID64 ".scope");
	assert_true(v2); /* the path of the cgroup BPF's cgroup id names */
	/* hybrid: the v2 line at the root, the container in name=systemd */
	write_file(file, "12:memory:/docker/" ID64 "\n9:name=systemd:/docker/" ID64 "\n0::/\n");
	assert_int_equal(cgroups__read_pid(root, 42, out, sizeof(out), &v2), 0);
	assert_string_equal(out, "/docker/" ID64);
	assert_false(v2); /* not the v2 cgroup's path */
	/* hybrid, nothing but the roots */
	write_file(file, "9:name=systemd:/\n0::/\n");
	assert_int_equal(cgroups__read_pid(root, 42, out, sizeof(out), NULL), 0);
	assert_string_equal(out, "/");
	/* v1 without name=systemd nor v2: nothing to take */
	write_file(file, "4:memory:/a\n");
	assert_int_equal(cgroups__read_pid(root, 42, out, sizeof(out), NULL), -ENOENT);
	/* a path longer than the buffer */
	write_file(file, "0::/a/very/long/path\n");
	assert_int_equal(cgroups__read_pid(root, 42, out, 8, NULL), -ENAMETOOLONG);
	/* a process gone */
	assert_int_equal(cgroups__read_pid(root, 43, out, sizeof(out), NULL), -ENOENT);
	unlink(file);
	rmdir(dir);
	rmdir(root);
}

/* proc_read_single(): what the read-to-EOF loop reads, of procfs and of a regular file, in one
 * read; a file past max_bytes is refused whole. */
static void test_read_single(void **state)
{
	char path[] = "/tmp/tp-single-XXXXXX", *a, *b;
	size_t la, lb;
	int fd;

	/* a file the kernel writes in one show, and one written by many (the loop's case) */
	assert_int_equal(proc_read_file("/proc/self/cgroup", 1 << 16, &a, &la), 0);
	assert_int_equal(proc_read_single("/proc/self/cgroup", 1 << 16, &b, &lb), 0);
	assert_true(la > 0);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	assert_int_equal(b[lb], 0);
	free(a);
	free(b);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	close(fd);
	assert_int_equal(proc_read_single(path, 10, &b, &lb), 0);
	assert_int_equal(lb, 10);
	assert_string_equal(b, "0123456789");
	free(b);
	assert_int_equal(proc_read_single(path, 9, &b, &lb), -EFBIG);
	assert_null(b);
	unlink(path);
	assert_int_equal(proc_read_single(path, 9, &b, &lb), -ENOENT);
}

static void test_intern(void **state)
{
	uint32_t a = cgroups__intern("/system.slice/docker-" ID64 ".scope");
	uint32_t b = cgroups__intern("/user.slice");
	uint32_t c = cgroups__intern("/bad\x01name\xff");
	const struct cgroup_entry *e;

	assert_int_equal(cgroups__intern(""), 0);
	assert_int_equal(cgroups__intern("/"), 0);
	assert_true(a && b && c && a != b && b != c);
	assert_int_equal(cgroups__intern("/system.slice/docker-" ID64 ".scope"), a);
	/* the same raw bytes find the same (sanitized) entry */
	assert_int_equal(cgroups__intern("/bad\x01name\xff"), c);
	e = cgroups__get(c);
	assert_string_equal(e->path, "/bad?name?");
	e = cgroups__get(a);
	assert_string_equal(e->container_id, ID64);
	assert_null(cgroups__get(0));
	assert_null(cgroups__get(100000));
	assert_true(cgroups__container_is(a, ID64));
	assert_true(cgroups__container_is(a, "0123456789ab"));
	assert_false(cgroups__container_is(a, "0123456789a")); /* under 12 */
	assert_false(cgroups__container_is(a, "1123456789ab"));
	assert_false(cgroups__container_is(b, "0123456789ab"));
	assert_false(cgroups__container_is(0, "0123456789ab"));
	assert_int_equal(cgroups__overflow(), 0);
}

/* The name=systemd hierarchy's id from a cgroup file: hybrid, pure v2, unreadable. */
static void test_systemd_hierarchy(void **state)
{
	char path[] = "/tmp/tp-hier-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	write_file(path, "12:memory:/a\n9:name=systemd:/x/y\n0::/\n");
	assert_int_equal(cgroups__systemd_hierarchy(path), 9);
	write_file(path, "1:name=systemd:/\n");
	assert_int_equal(cgroups__systemd_hierarchy(path), 1);
	write_file(path, "0::/user.slice\n");
	assert_int_equal(cgroups__systemd_hierarchy(path), 0);
	unlink(path);
	assert_int_equal(cgroups__systemd_hierarchy(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),	cmocka_unit_test(test_read_pid),
	    cmocka_unit_test(test_read_single), cmocka_unit_test(test_systemd_hierarchy),
	    cmocka_unit_test(test_intern),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
