/* SPDX-License-Identifier: GPL-2.0-only */
/* For the targets that read the store's files (fuzz_spike_file.c, fuzz_snapshot.c): format
 * version 1's layout (spike_file.c), its CRC-32s made right so that mutations of lengths, names
 * and tables reach the checks behind the checksums, and the id its header names. */
#ifndef TAILPROF_FUZZ_STORE_H
#define TAILPROF_FUZZ_STORE_H

#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "spike_file.h"
#include "spike_store.h"

/* The layout of format version 1 (spike_file.c). */
#define PRELUDE_LEN 16
#define HEADER_LEN  96
#define SECTION_LEN 48

static inline void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = v >> (8 * i);
}

static inline uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Makes the CRCs of f[0..size) right where its header says they are: the prelude's, each
 * section's (as far as the sections lie in the file) and then the header's. */
static inline void fix_crcs(uint8_t *f, size_t size)
{
	uint64_t nr, off, table_len;

	if (size < PRELUDE_LEN)
		return;
	put_le32(f + 12, crc32(0, f, 12));
	if (size < HEADER_LEN)
		return;
	nr = get_le(f + 16, 4);
	if (nr > SPIKE_FILE_MAX_SECTIONS)
		nr = SPIKE_FILE_MAX_SECTIONS;
	table_len = nr * SECTION_LEN;
	if (size < HEADER_LEN + table_len)
		return;
	off = HEADER_LEN + table_len;
	for (uint64_t i = 0; i < nr; i++) {
		uint8_t *t = f + HEADER_LEN + i * SECTION_LEN;
		uint64_t len = get_le(t + 32, 8);

		if (off > size || len > size - off)
			break;
		put_le32(t + 40, crc32(0, f + off, (uInt)len));
		off += len;
	}
	put_le32(f + 20, 0);
	put_le32(f + 20, crc32(0, f, (uInt)(HEADER_LEN + table_len)));
}

/* The id the header names when it is a valid one (so the fuzzer can get past the id check), else
 * "fuzz". */
static inline void header_id(const uint8_t *f, size_t size, char *id)
{
	strcpy(id, "fuzz");
	if (size < HEADER_LEN)
		return;
	memcpy(id, f + 32, SPIKE_STORE_ID_MAX);
	id[SPIKE_STORE_ID_MAX] = 0;
	if (!spike_file__valid_name(id, SPIKE_STORE_ID_MAX))
		strcpy(id, "fuzz");
}

#endif
