// SPDX-License-Identifier: GPL-2.0-only
/* libFuzzer target: a saved snapshot (snapshots.h), as tailprofd finds it in its state
 * directory after a restart: the input is the file NAME.snap (its CRC-32s made right, and named
 * after the id its header holds, so that the fuzzer gets past both), put in a snapshots
 * directory that the store then scans (spike_store.c), lists (each entry's metadata JSON) and
 * loads (the gzip'd side inflated and read by cmp_side_json.c). The side loaded must be valid. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cmp_side.h"
#define FUZZ_OWN_INITIALIZE
#include "fuzz.h"
#include "fuzz_store.h"
#include "snapshots.h"

static char state_dir[] = "/tmp/tailprof-fuzz-snapshot.XXXXXX";

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void rm_state_dir(void)
{
	nftw(state_dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char sub[sizeof(state_dir) + 16];

	(void)argc;
	(void)argv;
	fuzz_quiet();
	if (!mkdtemp(state_dir)) {
		perror("mkdtemp");
		abort();
	}
	snprintf(sub, sizeof(sub), "%s/snapshots", state_dir);
	if (mkdir(sub, 0700)) {
		perror("mkdir");
		abort();
	}
	atexit(rm_state_dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[SPIKE_STORE_ID_MAX + 1], path[sizeof(state_dir) + 96], err[512];
	struct cmp_side *side = NULL;
	struct snapshots *s;
	uint8_t *file = fuzz_copy(data, size);
	json_t *list;
	int fd, rc;

	fix_crcs(file, size);
	header_id(file, size, id);
	snprintf(path, sizeof(path), "%s/snapshots/%s.snap", state_dir, id);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, file, size) != (ssize_t)size) {
		perror(path);
		abort();
	}
	close(fd);
	free(file);

	s = snapshots__open(state_dir, NULL, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "snapshots__open: %s\n", err);
		abort(); /* a corrupt file is reported and skipped, never a reason to fail */
	}
	list = snapshots__list(s);
	FUZZ_CHECK(list != NULL);
	json_decref(list);
	err[0] = 0;
	rc = snapshots__load(s, id, &side, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -ENOENT || rc == -EBADMSG || rc == -EPROTONOSUPPORT ||
		   rc == -ENOMEM);
	if (!rc) {
		char why[256];

		FUZZ_CHECK(side != NULL);
		FUZZ_CHECK(cmp_side__valid(side, why, sizeof(why)));
		FUZZ_CHECK(!strcmp(side->cond.snapshot, id));
		cmp_side__free(side);
	} else {
		FUZZ_CHECK(side == NULL && err[0]);
	}
	snapshots__free(s);
	if (unlink(path)) {
		perror(path);
		abort();
	}
	return 0;
}
