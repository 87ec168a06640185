// SPDX-License-Identifier: GPL-2.0-only
/* The file of one stored entry (a spike, a snapshot), format version 1: built for a write, read
 * back checked. */
#include "spike_file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* Version 1 of the file, all integers little-endian:
 *   prelude, the same in every version (16 bytes):
 *     0  magic "TPSPIKE\0"   8  u32 version   12  u32 CRC-32 of bytes 0..12
 *   header (the rest of 96 bytes):
 *     16 u32 nr_sections (1 + blobs)   20 u32 CRC-32 of header (this field zero) and table
 *     24 i64 start_unix_ns             32 id, 64 bytes, NUL-padded
 *   table: nr_sections entries of 48 bytes:
 *     0  name, 32 bytes, NUL-padded ("" for section 0, the JSON)
 *     32 u64 length   40 u32 CRC-32 of the data   44 u32 flags (0)
 *   data: the sections' bytes in table order, back to back, up to the end of the file. */
#define MAGIC	    "TPSPIKE"
#define MAGIC_LEN   8
#define PRELUDE_LEN 16
#define HEADER_LEN  96
#define SECTION_LEN 48

_Static_assert(sizeof(MAGIC) == MAGIC_LEN, "the magic and its NUL fill 8 bytes");
_Static_assert(SPIKE_STORE_NAME_MAX < SPIKE_FILE_SECTION_NAME_LEN, "a blob name and its NUL fit");
_Static_assert(32 + SPIKE_STORE_ID_MAX == HEADER_LEN, "the id ends the header");
_Static_assert(SPIKE_FILE_MAX_HEAD_LEN == HEADER_LEN + SPIKE_FILE_MAX_SECTIONS * SECTION_LEN,
	       "the header's size as spike_file.h gives it");

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

static uint32_t get_le32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint32_t crc(uint32_t c, const void *p, size_t len)
{
	const uint8_t *b = p;

	/* zlib's crc32 takes a uInt length */
	while (len) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

		c = crc32(c, b, n);
		b += n;
		len -= n;
	}
	return c;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

bool spike_file__valid_name(const char *s, size_t name_max)
{
	size_t n;

	if (!s)
		return false;
	for (n = 0; s[n]; n++)
		if (n >= name_max || !name_char(s[n]))
			return false;
	return n > 0 && strcmp(s, ".") && strcmp(s, "..");
}

/* Reads len bytes at off. A file shorter than its fstat said (cut while it is read) is -EBADMSG,
 * with why saying so: every -EBADMSG comes with its why (found by tests/fuzz/fuzz_spike_file.c,
 * where it was left empty). */
static int pread_full(int fd, void *buf, size_t len, uint64_t off, char *why, size_t whylen)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0) {
			snprintf(why, whylen, "cut short while read: it ends at byte %" PRIu64,
				 off);
			return -EBADMSG;
		}
		p += n;
		len -= n;
		off += n;
	}
	return 0;
}

/* Copies a NUL-padded name of field_len bytes into out (out_len bytes). Returns whether it fits
 * with its NUL and the padding is all NUL. */
static bool padded_name(const uint8_t *field, size_t field_len, char *out, size_t out_len)
{
	size_t n = strnlen((const char *)field, field_len);

	if (n >= out_len)
		return false;
	memcpy(out, field, n);
	out[n] = '\0';
	for (size_t i = n; i < field_len; i++)
		if (field[i])
			return false;
	return true;
}

#define BAD(...)                                                                                   \
	do {                                                                                       \
		snprintf(why, whylen, __VA_ARGS__);                                                \
		return -EBADMSG;                                                                   \
	} while (0)

/* Every length is checked against the file's size before it is used. */
int spike_file__read_head(int fd, uint64_t size, const char *id, struct spike_file_head *h,
			  char *why, size_t whylen)
{
	uint8_t buf[SPIKE_FILE_MAX_HEAD_LEN];
	char name[SPIKE_STORE_ID_MAX + 1];
	uint64_t off, table_len;
	uint32_t want;
	int err;

	memset(h, 0, sizeof(*h));
	/* without the magic, nothing says this store wrote the file: -ENOMSG, not -EBADMSG */
	if (size < MAGIC_LEN) {
		snprintf(why, whylen, "%" PRIu64 " bytes, no magic: not a file of this store",
			 size);
		return -ENOMSG;
	}
	err = pread_full(fd, buf, MAGIC_LEN, 0, why, whylen);
	if (err)
		return err;
	if (memcmp(buf, MAGIC, MAGIC_LEN)) {
		snprintf(why, whylen, "bad magic: not a file of this store");
		return -ENOMSG;
	}
	if (size < PRELUDE_LEN)
		BAD("cut short in its header: %" PRIu64 " bytes", size);
	err = pread_full(fd, buf + MAGIC_LEN, PRELUDE_LEN - MAGIC_LEN, MAGIC_LEN, why, whylen);
	if (err)
		return err;
	if (get_le32(buf + 12) != crc(0, buf, 12))
		BAD("checksum mismatch in its prelude");
	h->version = get_le32(buf + 8);
	if (h->version > SPIKE_STORE_FORMAT_VERSION)
		return -EPROTONOSUPPORT;
	if (h->version != SPIKE_STORE_FORMAT_VERSION)
		BAD("format version %" PRIu32 " was never written", h->version);
	if (size < HEADER_LEN)
		BAD("cut short in its header: %" PRIu64 " bytes", size);
	err = pread_full(fd, buf + PRELUDE_LEN, HEADER_LEN - PRELUDE_LEN, PRELUDE_LEN, why, whylen);
	if (err)
		return err;
	h->nr_sections = get_le32(buf + 16);
	if (h->nr_sections < 1 || h->nr_sections > SPIKE_FILE_MAX_SECTIONS)
		BAD("%" PRIu32 " sections (1 to %d allowed)", h->nr_sections,
		    SPIKE_FILE_MAX_SECTIONS);
	table_len = (uint64_t)h->nr_sections * SECTION_LEN;
	if (size < HEADER_LEN + table_len)
		BAD("cut short in its table: %" PRIu64 " bytes", size);
	err = pread_full(fd, buf + HEADER_LEN, table_len, HEADER_LEN, why, whylen);
	if (err)
		return err;
	want = get_le32(buf + 20);
	put_le32(buf + 20, 0);
	if (want != crc(0, buf, HEADER_LEN + table_len))
		BAD("checksum mismatch in its header");
	h->start_unix_ns = (int64_t)get_le64(buf + 24);
	if (!padded_name(buf + 32, SPIKE_STORE_ID_MAX, name, sizeof(name)) || strcmp(name, id))
		BAD("its header names another entry");

	off = HEADER_LEN + table_len;
	for (uint32_t i = 0; i < h->nr_sections; i++) {
		const uint8_t *t = buf + HEADER_LEN + i * SECTION_LEN;
		struct spike_file_section *sec = &h->sec[i];
		uint64_t max = i ? SPIKE_STORE_MAX_BLOB_BYTES : SPIKE_STORE_MAX_JSON_BYTES;

		if (!padded_name(t, SPIKE_FILE_SECTION_NAME_LEN, sec->name, sizeof(sec->name)) ||
		    get_le32(t + 44))
			BAD("section %" PRIu32 " is malformed", i);
		if (i == 0 ? sec->name[0] != '\0'
			   : !spike_file__valid_name(sec->name, SPIKE_STORE_NAME_MAX))
			BAD("section %" PRIu32 " has a bad name", i);
		for (uint32_t j = 1; j < i; j++)
			if (!strcmp(h->sec[j].name, sec->name))
				BAD("two sections named %s", sec->name);
		sec->len = get_le64(t + 32);
		sec->crc = get_le32(t + 40);
		if (sec->len > max)
			BAD("section %" PRIu32 " of %" PRIu64 " bytes (at most %" PRIu64 ")", i,
			    sec->len, max);
		sec->off = off;
		off += sec->len; /* no overflow: at most 17 x 64 MiB past the table */
		if (off > size)
			BAD("cut short in section %" PRIu32 ": %" PRIu64 " of %" PRIu64 " bytes", i,
			    size, off);
	}
	if (off != size)
		BAD("%" PRIu64 " bytes past its last section", size - off);
	return 0;
}

int spike_file__read_section(int fd, const struct spike_file_head *h, uint32_t i, uint8_t **out,
			     char *why, size_t whylen)
{
	const struct spike_file_section *sec = &h->sec[i];
	uint8_t *p = malloc(sec->len + 1);
	int err;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	err = pread_full(fd, p, sec->len, sec->off, why, whylen);
	if (!err && crc(0, p, sec->len) != sec->crc) {
		snprintf(why, whylen, "checksum mismatch in %s%s", i ? "blob " : "its JSON",
			 sec->name);
		err = -EBADMSG;
	}
	if (err) {
		free(p);
		return err;
	}
	p[sec->len] = '\0';
	*out = p;
	return 0;
}

int spike_file__build_head(uint8_t *buf, const char *id, int64_t start_unix_ns, const char *json,
			   const struct spike_blob *blobs, size_t n, uint64_t *size)
{
	size_t json_len = json ? strnlen(json, SPIKE_STORE_MAX_JSON_BYTES + 1) : 0;
	size_t head_len = HEADER_LEN + (1 + n) * SECTION_LEN;
	uint8_t *t = buf + HEADER_LEN;

	if (!spike_file__valid_name(id, SPIKE_STORE_ID_MAX) || !json ||
	    json_len > SPIKE_STORE_MAX_JSON_BYTES || n > SPIKE_STORE_MAX_BLOBS || (n && !blobs))
		return -EINVAL;
	memset(buf, 0, head_len);
	memcpy(buf, MAGIC, MAGIC_LEN);
	put_le32(buf + 8, SPIKE_STORE_FORMAT_VERSION);
	put_le32(buf + 12, crc(0, buf, 12));
	put_le32(buf + 16, 1 + n);
	put_le64(buf + 24, (uint64_t)start_unix_ns);
	memcpy(buf + 32, id, strlen(id));

	put_le64(t + 32, json_len);
	put_le32(t + 40, crc(0, json, json_len));
	*size = head_len + json_len;
	for (size_t i = 0; i < n; i++) {
		const struct spike_blob *b = &blobs[i];

		t += SECTION_LEN;
		if (!spike_file__valid_name(b->name, SPIKE_STORE_NAME_MAX) ||
		    b->len > SPIKE_STORE_MAX_BLOB_BYTES || (b->len && !b->data))
			return -EINVAL;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(blobs[j].name, b->name))
				return -EINVAL;
		memcpy(t, b->name, strlen(b->name));
		put_le64(t + 32, b->len);
		put_le32(t + 40, crc(0, b->data, b->len));
		*size += b->len;
	}
	put_le32(buf + 20, crc(0, buf, head_len));
	return head_len;
}
