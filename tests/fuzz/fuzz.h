/* SPDX-License-Identifier: GPL-2.0-only */
/* What the libFuzzer targets of tests/fuzz share: the input as a file (one memfd a process,
 * rewritten for each input, reachable by a path through /proc/self/fd) or as a C string, the
 * daemon's log quieted, and a check that aborts (a finding) when an invariant breaks. */
#ifndef TAILPROF_FUZZ_H
#define TAILPROF_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"

/* An invariant of the parser's result: a failure is a finding, like a crash. */
#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* The daemon's messages about bad input are expected: only errors are printed (TAILPROF_FUZZ_LOG
 * set: all of them). */
static inline void fuzz_quiet(void)
{
	log_set_level(getenv("TAILPROF_FUZZ_LOG") ? LOG_DEBUG : LOG_ERROR);
}

/* A file holding data[0..size): the same memfd for every input of this process (fd n of the
 * array, up to 4 files an input), truncated and rewritten, its offset at 0. Aborts when the
 * kernel refuses (not a finding of the parser: the target cannot run). */
static inline int fuzz_file(int n, const uint8_t *data, size_t size)
{
	static int fds[4] = {-1, -1, -1, -1};
	size_t done = 0;

	if (fds[n] < 0) {
		fds[n] = memfd_create("tailprof-fuzz", MFD_CLOEXEC);
		if (fds[n] < 0) {
			perror("memfd_create");
			abort();
		}
	}
	if (ftruncate(fds[n], 0)) {
		perror("ftruncate");
		abort();
	}
	while (done < size) {
		ssize_t w = pwrite(fds[n], data + done, size - done, (off_t)done);

		if (w <= 0) {
			perror("pwrite");
			abort();
		}
		done += (size_t)w;
	}
	if (lseek(fds[n], 0, SEEK_SET)) {
		perror("lseek");
		abort();
	}
	return fds[n];
}

/* The path of fd for functions that open a path ("/proc/self/fd/N"), into buf. */
static inline const char *fuzz_fd_path(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
	return buf;
}

/* A copy of data[0..size) of exactly size bytes, no NUL after it (so that a read past the end
 * trips ASan): the parsers of length-delimited text and JSON get this. malloc'd; the caller frees
 * it. */
static inline void *fuzz_copy(const uint8_t *data, size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		abort();
	memcpy(p, data, size);
	return p;
}

/* data[0..size) as a NUL-terminated string (malloc'd; the caller frees it). An embedded NUL
 * ends the string early, as it would in the daemon's C strings. */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = 0;
	return s;
}

/* Splits data at the first occurrence of the line "--\n" (or keeps it whole): *a the part
 * before, *b the part after (NULL, 0 when there is no separator). For targets reading two
 * inputs, e.g. a file and its notes. */
static inline void fuzz_split(const uint8_t *data, size_t size, const uint8_t **a, size_t *alen,
			      const uint8_t **b, size_t *blen)
{
	const uint8_t *sep = size >= 3 ? memmem(data, size, "\n--\n", 4) : NULL;

	*a = data;
	*alen = size;
	*b = NULL;
	*blen = 0;
	if (!sep)
		return;
	*alen = (size_t)(sep - data) + 1;
	*b = sep + 4;
	*blen = size - *alen - 3;
}

/* The targets' LLVMFuzzerInitialize, unless one defines FUZZ_OWN_INITIALIZE and its own. */
#ifndef FUZZ_OWN_INITIALIZE
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}
#endif

#endif
