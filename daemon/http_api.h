/* SPDX-License-Identifier: GPL-2.0-only */
/* The HTTP API (libmicrohttpd, one thread per connection so a long request never blocks the
 * others): paths and bytes; the data comes from query.c under the collector's read lock. */
#ifndef TAILPROF_HTTP_API_H
#define TAILPROF_HTTP_API_H

#include <stddef.h>

struct query_ctx;

/* Parses HOST:PORT ("127.0.0.1:7077", "[::1]:7077", ":7077" for every address; numeric
 * address, port 1-65535), binds and listens. Returns the socket; -2 for a malformed address, or
 * -1 when it cannot listen (address in use, permission), after writing a sentence for people
 * into err (errlen bytes) that names the problem and the fix. */
int http_api__listen(const char *listen, char *err, size_t errlen);
/* The same check of the address's form, with no socket made (tailprofd --check: a running
 * tailprofd may hold the port). Returns 0, or -2 after writing into err what is wrong. */
int http_api__check_listen(const char *listen, char *err, size_t errlen);

/* Serves on listen_fd (taken over) until http_api__stop. ctx must outlive the server. Returns
 * NULL with errno set. */
struct http_api *http_api__start(int listen_fd, const struct query_ctx *ctx);
/* Stops accepting, waits for requests in flight, closes the socket. NULL allowed. */
void http_api__stop(struct http_api *h);

#endif
