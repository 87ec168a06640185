// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: the file of one stored spike or snapshot (spike_file.h), as the store reads
 * it back at start-up from the state directory, trusting no length it holds. The input is the
 * whole file; it is read once as it is, and once with its CRC-32s made right (so that mutations
 * of lengths, names and tables get past the checksums), each time also as a file that shrank
 * after its fstat. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <jansson.h>

#include "fuzz.h"
#include "fuzz_store.h"
#include "spike_file.h"
#include "spike_store.h"

static void read_file(const uint8_t *f, size_t size, uint64_t claimed)
{
	struct spike_file_head h;
	char id[SPIKE_STORE_ID_MAX + 1], why[256];
	int fd = fuzz_file(0, f, size), err;
	uint64_t end;

	header_id(f, size, id);
	why[0] = 0;
	err = spike_file__read_head(fd, claimed, id, &h, why, sizeof(why));
	FUZZ_CHECK(err == 0 || err == -EPROTONOSUPPORT || err == -ENOMSG || err == -EBADMSG);
	if (err == -ENOMSG || err == -EBADMSG)
		FUZZ_CHECK(why[0] && strlen(why) < sizeof(why));
	if (err)
		return;
	FUZZ_CHECK(h.nr_sections >= 1 && h.nr_sections <= SPIKE_FILE_MAX_SECTIONS);
	end = h.sec[0].off;
	for (uint32_t i = 0; i < h.nr_sections; i++) {
		uint8_t *data;

		FUZZ_CHECK(h.sec[i].off == end);
		end += h.sec[i].len;
		FUZZ_CHECK(end <= claimed);
		err = spike_file__read_section(fd, &h, i, &data, why, sizeof(why));
		FUZZ_CHECK(err == 0 || err == -EBADMSG || err == -ENOMEM);
		FUZZ_CHECK(!err == !!data);
		if (!err && i == 0) {
			/* the JSON, as the spikes and snapshots read it */
			json_t *j = json_loads((const char *)data, 0, NULL);

			json_decref(j);
		}
		free(data);
	}
	FUZZ_CHECK(end == claimed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed;

	read_file(data, size, size);
	read_file(data, size, size + 7); /* a file that shrank since its fstat */
	fixed = fuzz_copy(data, size);
	fix_crcs(fixed, size);
	read_file(fixed, size, size);
	if (size > HEADER_LEN)
		read_file(fixed, size - 1, size); /* cut by one byte after its fstat */
	free(fixed);
	return 0;
}
