// SPDX-License-Identifier: GPL-2.0-only
/* Access to the HTTP API: the token file, the loopback test of a listener, the bearer check and
 * the unix socket (access.h, docs/security.md). */
#include "access.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

char *access__read_token(const char *path, char *err, size_t errlen)
{
	char buf[ACCESS_TOKEN_MAX + 2];
	struct stat st;
	ssize_t n = 0, r;
	size_t len;
	char *tok = NULL;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0) {
		snprintf(err, errlen, "auth token file %s: %s%s", path, strerror(errno),
			 errno == ELOOP ? " (a symbolic link is not followed; give the file itself)"
					: "");
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "auth token file %s: not a regular file", path);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		snprintf(err, errlen,
			 "auth token file %s: open to group or others (mode %04o); make it "
			 "readable by its owner only: chmod 600 %s",
			 path, (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen,
			 "auth token file %s: owned by uid %u; it must belong to root or to the "
			 "user that reads it (uid %u)",
			 path, (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	while ((size_t)n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += r;
	buf[n] = 0;
	{
		const char *nl = memchr(buf, '\n', (size_t)n);

		len = nl ? (size_t)(nl - buf) : (size_t)n;
	}
	if (memchr(buf, 0, len)) {
		snprintf(
		    err, errlen,
		    "auth token file %s: a NUL byte in its first line (not a text file); write "
		    "the token as one line of text",
		    path);
		goto out;
	}
	while (len && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\r'))
		len--;
	buf[len] = 0;
	if (!len) {
		snprintf(err, errlen,
			 "auth token file %s: its first line is empty; write the token "
			 "there",
			 path);
	} else if (len < ACCESS_TOKEN_MIN) {
		snprintf(
		    err, errlen,
		    "auth token file %s: the token is %zu bytes, too easily guessed; use at least "
		    "%d, e.g. the output of: openssl rand -hex 32",
		    path, len, ACCESS_TOKEN_MIN);
	} else if (len > ACCESS_TOKEN_MAX) {
		snprintf(err, errlen, "auth token file %s: the token is longer than %d bytes", path,
			 ACCESS_TOKEN_MAX);
	} else if (strspn(buf, "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			       "[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~") != len) {
		snprintf(err, errlen,
			 "auth token file %s: the token has a blank or a character outside "
			 "printable ASCII; use e.g. the output of: openssl rand -hex 32",
			 path);
	} else if (!(tok = strdup(buf))) {
		snprintf(err, errlen, "auth token file %s: out of memory", path);
	}
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return tok;
}

bool access__fd_is_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return false;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a = &((struct sockaddr_in6 *)&ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

bool access__fd_is_unix(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	return !getsockname(fd, (struct sockaddr *)&ss, &len) && ss.ss_family == AF_UNIX;
}

bool access__bearer_ok(const char *authorization, const char *token)
{
	size_t tlen = strlen(token), vlen;
	volatile unsigned char diff = 0;

	if (!authorization || strncasecmp(authorization, "Bearer ", 7))
		return false;
	authorization += 7;
	authorization += strspn(authorization, " \t");
	vlen = strlen(authorization);
	/* blanks after the token are the header's, not the token's (RFC 9110's OWS) */
	while (vlen && (authorization[vlen - 1] == ' ' || authorization[vlen - 1] == '\t'))
		vlen--;
	/* every byte of the token is compared, whatever the value: the time says nothing of how
	 * much of it was right */
	diff = vlen != tlen;
	for (size_t i = 0; i < tlen; i++)
		diff |= (unsigned char)token[i] ^ (unsigned char)(i < vlen ? authorization[i] : 0);
	return !diff;
}

/* Makes the directory of path (and its parents) when missing, mode 0755. */
static int make_parent(const char *path, char *err, size_t errlen)
{
	char dir[sizeof(((struct access_socket *)0)->path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	for (char *p = dir + 1;; p++) {
		char c = *p;

		if (c && c != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0755) && errno != EEXIST) {
			int e = errno;

			snprintf(err, errlen, "cannot make the socket's directory %s: %s", dir,
				 strerror(e));
			return -e;
		}
		*p = c;
		if (!c)
			return 0;
	}
}

/* Whether a server answers on the unix socket sa. */
static bool answers(const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return true; /* cannot tell: leave it alone */
	live = !connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) || errno != ECONNREFUSED;
	close(fd);
	return live;
}

/* Binds fd to sa with mode ACCESS_SOCKET_MODE (the umask decides a socket's mode). */
static int bind_private(int fd, const struct sockaddr_un *sa)
{
	mode_t old = umask(0777 & ~ACCESS_SOCKET_MODE);
	int rc = bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) ? -errno : 0;

	umask(old);
	return rc;
}

int access__listen_unix(const char *path, struct access_socket *s, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct group *gr;
	struct stat st;
	int rc;

	*s = (struct access_socket){.fd = -1};
	if (path[0] != '/' || strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen,
			 "--socket '%s': give an absolute path of at most %zu characters, or none",
			 path, sizeof(sa.sun_path) - 1);
		return -EINVAL;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	snprintf(s->path, sizeof(s->path), "%s", path);
	rc = make_parent(path, err, errlen);
	if (rc)
		return rc;
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot create a unix socket: %s", strerror(-rc));
		return rc;
	}
	rc = bind_private(s->fd, &sa);
	if (rc == -EADDRINUSE) {
		if (lstat(path, &st) || !S_ISSOCK(st.st_mode)) {
			snprintf(
			    err, errlen,
			    "socket %s: the path exists and is not a socket; remove it or give "
			    "another --socket",
			    path);
			rc = -ENOTSOCK;
			goto fail;
		}
		if (answers(&sa)) {
			snprintf(err, errlen,
				 "socket %s is held by a running server (another tailprofd?); stop "
				 "it, or give another --socket PATH, or --socket none",
				 path);
			goto fail;
		}
		/* stale: its server is gone */
		if (unlink(path) && errno != ENOENT) {
			rc = -errno;
			snprintf(err, errlen, "cannot remove the stale socket %s: %s", path,
				 strerror(-rc));
			goto fail;
		}
		rc = bind_private(s->fd, &sa);
	}
	if (rc) {
		snprintf(err, errlen, "cannot bind the socket %s: %s", path, strerror(-rc));
		goto fail;
	}
	if (lstat(path, &st)) {
		rc = -errno;
		snprintf(err, errlen, "socket %s: %s", path, strerror(-rc));
		goto fail;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	/* without CAP_CHOWN, root may give it to a group only as one of the group's members (the
	 * unit's SupplementaryGroups=): else the socket stays root's, which is safe */
	gr = getgrnam(ACCESS_SOCKET_GROUP);
	if (gr && lchown(path, (uid_t)-1, gr->gr_gid))
		pr_warn("cannot give the socket %s to group %s: %s; it is root's only (run "
			"tailprofd with the group %s among its groups, or with CAP_CHOWN)",
			path, ACCESS_SOCKET_GROUP, strerror(errno), ACCESS_SOCKET_GROUP);
	else
		s->group_set = gr != NULL;
	if (listen(s->fd, 64)) {
		rc = -errno;
		snprintf(err, errlen, "cannot listen on the socket %s: %s", path, strerror(-rc));
		goto fail_unlink;
	}
	return 0;
fail_unlink:
	access__close_unix(s);
	return rc;
fail:
	close(s->fd);
	s->fd = -1;
	s->ino = 0;
	return rc;
}

void access__close_unix(struct access_socket *s)
{
	struct stat st;

	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->ino && !lstat(s->path, &st) && st.st_dev == s->dev && st.st_ino == s->ino)
		unlink(s->path);
	s->ino = 0;
}
