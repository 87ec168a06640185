// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the API's access: the token file's rules, the bearer check, the loopback test,
 * the unix socket (stale replaced, live and non-socket paths left alone), and the [daemon] keys
 * socket and auth_token_file beside their flags. */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "access.h"
#include "config.h"
#include "options.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/tp_test_access.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* Writes text to DIR/name with mode; returns the path (static). */
static const char *file(const char *name, const char *text, mode_t mode)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void test_token_file(void **state)
{
	char err[512], *tok;

	(void)state;
	tok = access__read_token(file("ok", "s3cr3t-token \t\r\nsecond line\n", 0600), err,
				 sizeof(err));
	assert_non_null(tok);
	assert_string_equal(tok, "s3cr3t-token");
	free(tok);
	tok = access__read_token(file("ro", "abcdefghijkl", 0400), err, sizeof(err));
	assert_string_equal(tok, "abcdefghijkl");
	free(tok);
	/* too short to resist guessing; a NUL byte would cut it short */
	assert_null(access__read_token(file("short", "abcdefghijk\n", 0600), err, sizeof(err)));
	assert_non_null(strstr(err, "11 bytes, too easily guessed"));
	{
		const char *p = file("nul", "", 0600);
		FILE *f = fopen(p, "w");

		assert_non_null(f);
		assert_int_equal(fwrite("abcdefghijkl\0mnop\n", 1, 18, f), 18);
		fclose(f);
		assert_null(access__read_token(p, err, sizeof(err)));
		assert_non_null(strstr(err, "a NUL byte"));
	}

	assert_null(access__read_token(file("644", "s3cr3t-token\n", 0644), err, sizeof(err)));
	assert_non_null(strstr(err, "open to group or others (mode 0644)"));
	assert_non_null(strstr(err, "chmod 600"));
	assert_null(strstr(err, "s3cr3t"));
	assert_null(access__read_token(file("620", "s3cr3t-token\n", 0620), err, sizeof(err)));
	assert_non_null(strstr(err, "mode 0620"));
	assert_null(access__read_token(file("empty", "\nnext\n", 0600), err, sizeof(err)));
	assert_non_null(strstr(err, "first line is empty"));
	assert_null(
	    access__read_token(file("blank", "two long words here\n", 0600), err, sizeof(err)));
	assert_non_null(strstr(err, "a blank"));
	assert_null(strstr(err, "words"));
	{
		char big[ACCESS_TOKEN_MAX + 2];

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		assert_null(access__read_token(file("big", big, 0600), err, sizeof(err)));
		assert_non_null(strstr(err, "longer than 1024 bytes"));
	}
	{
		char link[128], target[128];

		snprintf(target, sizeof(target), "%s/ok", dir);
		snprintf(link, sizeof(link), "%s/link", dir);
		assert_int_equal(symlink(target, link), 0);
		assert_null(access__read_token(link, err, sizeof(err)));
		assert_non_null(strstr(err, "symbolic link is not followed"));
		snprintf(link, sizeof(link), "%s/none", dir);
		assert_null(access__read_token(link, err, sizeof(err)));
		assert_non_null(strstr(err, "No such file"));
		assert_null(access__read_token(dir, err, sizeof(err)));
		assert_non_null(strstr(err, "not a regular file"));
	}
}

static void test_bearer(void **state)
{
	(void)state;
	assert_true(access__bearer_ok("Bearer tok-123", "tok-123"));
	assert_true(access__bearer_ok("bearer tok-123", "tok-123"));
	assert_true(access__bearer_ok("BEARER   tok-123", "tok-123"));
	assert_true(access__bearer_ok("Bearer tok-123  \t", "tok-123"));
	assert_false(access__bearer_ok("Bearer tok-12 ", "tok-123"));
	assert_false(access__bearer_ok(NULL, "tok-123"));
	assert_false(access__bearer_ok("", "tok-123"));
	assert_false(access__bearer_ok("tok-123", "tok-123"));
	assert_false(access__bearer_ok("Basic tok-123", "tok-123"));
	assert_false(access__bearer_ok("Bearer", "tok-123"));
	assert_false(access__bearer_ok("Bearer ", "tok-123"));
	assert_false(access__bearer_ok("Bearer tok-12", "tok-123"));
	assert_false(access__bearer_ok("Bearer tok-1234", "tok-123"));
	assert_false(access__bearer_ok("Bearer tok-124", "tok-123"));
	assert_false(access__bearer_ok("Bearer Tok-123", "tok-123"));
}

/* A listening socket of family on addr (a 4- or 16-byte address), port 0. */
static int listener(int family, const void *addr)
{
	struct sockaddr_storage ss = {.ss_family = family};
	int fd = socket(family, SOCK_STREAM, 0);

	if (family == AF_INET)
		memcpy(&((struct sockaddr_in *)&ss)->sin_addr, addr, 4);
	else
		memcpy(&((struct sockaddr_in6 *)&ss)->sin6_addr, addr, 16);
	assert_true(fd >= 0);
	if (bind(fd, (struct sockaddr *)&ss,
		 family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void test_loopback(void **state)
{
	static const uint8_t lo4[4] = {127, 0, 0, 1}, lo4b[4] = {127, 0, 0, 2}, any4[4] = {0};
	static const uint8_t lo6[16] = {[15] = 1}, any6[16] = {0};
	int fd;

	(void)state;
	fd = listener(AF_INET, lo4);
	assert_true(access__fd_is_loopback(fd));
	assert_false(access__fd_is_unix(fd));
	close(fd);
	fd = listener(AF_INET, lo4b);
	assert_true(access__fd_is_loopback(fd));
	close(fd);
	fd = listener(AF_INET, any4);
	assert_false(access__fd_is_loopback(fd));
	close(fd);
	fd = listener(AF_INET6, any6);
	if (fd >= 0) { /* a host without IPv6 has no :: */
		assert_false(access__fd_is_loopback(fd));
		close(fd);
	}
	fd = listener(AF_INET6, lo6);
	if (fd >= 0) {
		assert_true(access__fd_is_loopback(fd));
		close(fd);
	}
	assert_false(access__fd_is_loopback(-1));
}

static void test_unix_socket(void **state)
{
	struct access_socket s, t;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char path[sizeof(sa.sun_path)], err[512];
	struct stat st;
	int c;

	(void)state;
	snprintf(path, sizeof(path), "%s/made/by/us/api.sock", dir);
	assert_int_equal(access__listen_unix(path, &s, err, sizeof(err)), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0660);
	memcpy(sa.sun_path, path, sizeof(path));
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_true(access__fd_is_unix(c));
	close(c);
	/* live: left alone */
	assert_int_equal(access__listen_unix(path, &t, err, sizeof(err)), -EADDRINUSE);
	assert_non_null(strstr(err, "held by a running server"));
	assert_int_equal(t.fd, -1);
	assert_int_equal(lstat(path, &st), 0);
	/* stale: its server gone without removing it */
	close(s.fd);
	s.fd = -1;
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(access__listen_unix(path, &t, err, sizeof(err)), 0);
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(c);
	access__close_unix(&t);
	assert_int_equal(lstat(path, &st), -1);
	access__close_unix(NULL);
	/* not a socket: left alone */
	assert_int_equal(access__listen_unix(file("plain", "keep", 0600), &s, err, sizeof(err)),
			 -ENOTSOCK);
	assert_non_null(strstr(err, "not a socket"));
	assert_int_equal(access__listen_unix("relative.sock", &s, err, sizeof(err)), -EINVAL);
}

/* [daemon] socket and auth_token_file apply where no flag was given; a flag wins. */
static void test_options(void **state)
{
	char *argv_none[] = {"tailprofd", NULL};
	char *argv_flags[] = {"tailprofd",	   "--socket",	  "none",
			      "--auth-token-file", "/flag/token", NULL};
	char *argv_bad[] = {"tailprofd", "--socket", "rel.sock", NULL};
	struct options o;
	struct config *c;
	char err[512];
	const char *cfg;

	(void)state;
	cfg =
	    file("conf", "[daemon]\nsocket = /srv/t.sock\nauth_token_file = /etc/t/token\n", 0600);
	c = config__load(cfg, err, sizeof(err));
	assert_non_null(c);
	optind = 1;
	assert_int_equal(options__parse(1, argv_none, &o), 0);
	assert_string_equal(o.socket, ACCESS_SOCKET_DEFAULT);
	assert_false(o.socket_explicit);
	assert_null(o.auth_token_file);
	assert_int_equal(options__apply_config(&o, c), 0);
	assert_string_equal(o.socket, "/srv/t.sock");
	assert_true(o.socket_explicit);
	assert_string_equal(o.auth_token_file, "/etc/t/token");
	optind = 1;
	assert_int_equal(options__parse(5, argv_flags, &o), 0);
	assert_int_equal(options__apply_config(&o, c), 0);
	assert_null(o.socket);
	assert_string_equal(o.auth_token_file, "/flag/token");
	config__free(c);
	optind = 1;
	assert_int_equal(options__parse(3, argv_bad, &o), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_token_file), cmocka_unit_test(test_bearer),
	    cmocka_unit_test(test_loopback),   cmocka_unit_test(test_unix_socket),
	    cmocka_unit_test(test_options),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
