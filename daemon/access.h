/* SPDX-License-Identifier: GPL-2.0-only */
/* Who may use the HTTP API (docs/security.md): the unix socket beside the TCP listener (its mode
 * and group guard it), and the bearer token that a listener off loopback requires. In
 * libtailprof_common: the CLI reads its --token-file with access__read_token too. */
#ifndef TAILPROF_ACCESS_H
#define TAILPROF_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define ACCESS_SOCKET_DEFAULT "/run/tailprof/tailprofd.sock"
/* the group that may use the socket, when it exists (the Debian package makes it) */
#define ACCESS_SOCKET_GROUP "tailprof"
#define ACCESS_SOCKET_MODE  0660
/* the longest socket path (sun_path less its NUL) */
#define ACCESS_SOCKET_PATH_MAX 107
/* a token is at most this many bytes (the first line of the file) */
#define ACCESS_TOKEN_MAX 1024
#define ACCESS_TOKEN_MIN 12 /* bytes: a token that short is guessed */

/* A unix listening socket that access__listen_unix made: removed by access__close_unix only
 * while the path is still that socket (same device and inode). */
struct access_socket {
	int fd; /* -1: none */
	char path[108];
	dev_t dev;
	ino_t ino;
	bool group_set; /* its group is ACCESS_SOCKET_GROUP */
};

/* Reads the API token from path: its first line without trailing blanks, printable ASCII
 * without spaces, ACCESS_TOKEN_MIN to ACCESS_TOKEN_MAX bytes; a NUL byte in that line is an
 * error (it would cut the token short). The file must be
 * a regular file (a symbolic link is not followed), owned by root or by us, with no permission
 * for group or others (mode 0600 or 0400). Returns a malloc'd token (the caller frees it,
 * after explicit_bzero), or NULL with err (errlen bytes) naming the file, what is wrong and the
 * fix; the token itself is never written into err. */
char *access__read_token(const char *path, char *err, size_t errlen);

/* Whether the listening socket fd is bound to a loopback address (127.0.0.0/8, ::1, or
 * ::ffff:127.0.0.0/104); false for any other address, 0.0.0.0 and :: included. */
bool access__fd_is_loopback(int fd);

/* Whether the connected socket fd is a unix socket (a client of the --socket listener). */
bool access__fd_is_unix(int fd);

/* Whether the value of an Authorization header (NULL: none) is "Bearer TOKEN" with token
 * (the scheme's case ignored, blanks after it skipped). The comparison takes the same time
 * whatever the value, for a token of a given length. */
bool access__bearer_ok(const char *authorization, const char *token);

/* Binds and listens on the unix socket path (absolute, shorter than sun_path), mode
 * ACCESS_SOCKET_MODE and group ACCESS_SOCKET_GROUP when that group exists (when it cannot be
 * given to the group: a warning, and the socket stays root's); its directory is made
 * (mode 0755) when missing. A socket left at path that nobody answers is replaced; one that
 * answers is left alone. Fills *s. Returns 0; -EADDRINUSE when a live server holds path; another
 * negative errno otherwise (-ENOTSOCK: path is some other file, left alone). On failure err
 * (errlen bytes) says what and the fix. Changes the process's umask for a moment: call before
 * other threads create files. */
int access__listen_unix(const char *path, struct access_socket *s, char *err, size_t errlen);

/* Closes s->fd if still open (-1 after) and removes the socket file if path is still the one
 * access__listen_unix made. NULL allowed. */
void access__close_unix(struct access_socket *s);

#endif
