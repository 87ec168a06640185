/* SPDX-License-Identifier: GPL-2.0-only */
/* The file of one stored entry (a spike, a snapshot), format version 1: its header and section
 * table built for a write, and read back checked, trusting no length it holds.
 * docs/spike-store.md draws the layout; spike_store.c is its only user (directory, atomic writes,
 * index). Pure: no state, reads through pread on a descriptor the caller opened. */
#ifndef TAILPROF_SPIKE_FILE_H
#define TAILPROF_SPIKE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spike_store.h"

#define SPIKE_FILE_SECTION_NAME_LEN 32 /* a blob name and its NUL padding */
#define SPIKE_FILE_MAX_SECTIONS	    (1 + SPIKE_STORE_MAX_BLOBS)		/* the JSON and the blobs */
#define SPIKE_FILE_MAX_HEAD_LEN	    (96 + SPIKE_FILE_MAX_SECTIONS * 48) /* header and table */

/* A section as the table gives it, checked: off and len lie within the file. */
struct spike_file_section {
	char name[SPIKE_FILE_SECTION_NAME_LEN]; /* "" for section 0, the JSON */
	uint64_t off, len;			/* bytes from the file's start */
	uint32_t crc;				/* zlib's CRC-32 of the section's bytes */
};

struct spike_file_head {
	uint32_t version; /* set also when read_head returns -EPROTONOSUPPORT */
	int64_t start_unix_ns;
	uint32_t nr_sections; /* 1 + blobs */
	struct spike_file_section sec[SPIKE_FILE_MAX_SECTIONS];
};

/* Whether s is 1 to name_max characters of [A-Za-z0-9._-], and neither "." nor "..": the rule
 * of spike ids (name_max SPIKE_STORE_ID_MAX; they become file names) and blob names
 * (SPIKE_STORE_NAME_MAX). NULL is not. */
bool spike_file__valid_name(const char *s, size_t name_max);

/* Checks the arguments of spike_store__save (id, json and its size, n, the blobs' names, sizes
 * and data) and builds the file's header and table in buf (SPIKE_FILE_MAX_HEAD_LEN bytes), the
 * CRCs of the JSON and blobs computed. The file is then buf, json (without its NUL) and the blobs
 * in order. Returns the length of header and table, with *size the whole file's, or -EINVAL. */
int spike_file__build_head(uint8_t *buf, const char *id, int64_t start_unix_ns, const char *json,
			   const struct spike_blob *blobs, size_t n, uint64_t *size);

/* Reads and checks the header and table of the file fd, of size bytes (its fstat), which must
 * hold the entry id: magic, checksums, the id, names, lengths within their caps, sections back to
 * back ending exactly at size. Returns 0, -EPROTONOSUPPORT (a newer version, in h->version),
 * -ENOMSG (no magic: not a file of this store, or cut before its magic ended; why says so),
 * -EBADMSG (the magic is there, the rest corrupt or cut short; why, whylen bytes, says how, for a
 * message), or the -errno of a read. */
int spike_file__read_head(int fd, uint64_t size, const char *id, struct spike_file_head *h,
			  char *why, size_t whylen);

/* Reads section i (< h->nr_sections) into *out, malloc'd with a NUL after its len bytes, and
 * checks its CRC. Returns 0, -EBADMSG (why), -ENOMEM, or the -errno of the read; *out is NULL on
 * failure. */
int spike_file__read_section(int fd, const struct spike_file_head *h, uint32_t i, uint8_t **out,
			     char *why, size_t whylen);

#endif
