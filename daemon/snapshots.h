/* SPDX-License-Identifier: GPL-2.0-only */
/* Snapshots (tailprof compare, docs/compare.md): comparison sides saved by name in
 * STATE_DIR/snapshots and read back, so that a side can be yesterday's load test after the ring
 * moved on or the daemon restarted. Built on the spike store (spike_store.h: atomic writes,
 * checksums, a scan at open, one daemon a directory), with the subdirectory "snapshots", files
 * NAME.snap, and no eviction: a save past a bound is refused and nothing older goes.
 *
 * A snapshot's file holds a small metadata object as its JSON (what a listing shows) and one
 * blob, "side.json.gz": the side as cmp_side_json.h writes it, gzip'd. Names are 1-64 characters
 * of [A-Za-z0-9._-], not "." or "..".
 *
 * Errors a caller maps (the HTTP layer: docs/compare.md), beside -ENOMEM and the -errno of I/O:
 *   -EINVAL            a bad name (or a side that cannot be saved, a bug: logged)
 *   -ENOENT            no snapshot of that name
 *   -EMLINK            save: max_count snapshots are stored ([snapshots] max_count): HTTP 507
 *   -EFBIG             save: the store would go past max_bytes ([snapshots] max_bytes): 507
 *   -E2BIG             save: the side is larger than a snapshot may be (SNAPSHOTS_MAX_JSON_BYTES
 *                      of JSON, SPIKE_STORE_MAX_BLOB_BYTES gzip'd): 507 as well, no key helps
 *   -EEXIST            save: a file the store keeps has that name: of a newer tailprofd, or
 *                      not one it wrote (a symlink, no snapshot magic): HTTP 409
 *   -EBADMSG           load: the file is corrupt, cut short, not a snapshot file or a symlink
 *   -EPROTONOSUPPORT   load: written by a newer tailprofd (its file or its side's format);
 *                      remove: a file of a newer tailprofd, kept: HTTP 409
 *   -ELOOP             remove: NAME.snap is a symlink or not a regular file, kept: HTTP 409
 * Any other code (-EPERM, -EACCES, -EROFS, -ENOSPC, -EIO, ...) is the disk's refusal of a write,
 * rename or unlink, never the store's: HTTP 500. snapshots__describe_op gives the sentence for
 * people of each, saying which operation failed.
 *
 * Thread-safe: HTTP threads call every function at once (the store locks its index; the rest is
 * set at open). */
#ifndef TAILPROF_SNAPSHOTS_H
#define TAILPROF_SNAPSHOTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "cmp_side.h"

#define SNAPSHOTS_DEFAULT_MAX_COUNT 32
#define SNAPSHOTS_DEFAULT_MAX_BYTES (256ull << 20)
#define SNAPSHOTS_MAX_COUNT	    10000	 /* the largest max_count allowed */
#define SNAPSHOTS_MAX_BYTES	    (1ull << 40) /* the largest max_bytes allowed (1 TiB) */
#define SNAPSHOTS_MIN_BYTES	    (1ull << 20) /* the smallest (1 MiB) */
#define SNAPSHOTS_MAX_JSON_BYTES    (256u << 20) /* a side's JSON, inflated, at most */
#define SNAPSHOTS_BLOB		    "side.json.gz"

#define SNAPSHOTS_DEFAULT_SAVE_RATE 60 /* saves a minute (POST /api/v1/snapshots) */
#define SNAPSHOTS_MAX_SAVE_RATE	    6000
#define SNAPSHOTS_SAVE_BURST	    5 /* saves taken at once after a quiet time */

/* The bounds ([snapshots] and --snapshot-*): zero means the default. */
struct snapshots_opts {
	uint32_t max_count; /* snapshots kept at most, 1..SNAPSHOTS_MAX_COUNT */
	uint32_t save_rate; /* saves a minute, 1..SNAPSHOTS_MAX_SAVE_RATE (a token bucket of
			     * SNAPSHOTS_SAVE_BURST) */
	uint64_t
	    max_bytes; /* their files' sizes together, SNAPSHOTS_MIN_BYTES..SNAPSHOTS_MAX_BYTES */
};

/* Sets the option named key ([snapshots] key: max_count, an integer from 1 to 10000; max_bytes,
 * a size from 1M to 1024G, bytes or with a K, M or G suffix, tp_parse_size; save_rate, an
 * integer from 1 to 6000) from its text: one
 * parser for the config key and its flag. Returns 0, or -EINVAL with msg (msglen bytes) saying
 * what is allowed ("'0': give an integer from 1 to 10000, e.g. 32"); -ENOENT for an unknown key
 * (msg lists the known ones). */
int snapshots_opts__set(struct snapshots_opts *o, const char *key, const char *value, char *msg,
			size_t msglen);

struct snapshots;

/* Opens the snapshots of the state directory dir (DIR/snapshots, created 0700 when missing,
 * locked against a second tailprofd) with the bounds of o (NULL: the defaults). Lowered bounds
 * keep the snapshots already stored (saves are refused until some are removed). Returns the
 * store, to free with snapshots__free, or NULL with errno set and err (errlen bytes) one sentence
 * for people naming the directory, the problem and the fix (see spike_store__open). */
struct snapshots *snapshots__open(const char *dir, const struct snapshots_opts *o, char *err,
				  size_t errlen);

/* Closes the store; the files stay. NULL allowed. */
void snapshots__free(struct snapshots *s);

/* The save rate limit: takes one token at now_ns (monotonic). Returns 0 when a save may go on,
 * else the whole seconds (>= 1) until one may, for Retry-After (counted in refused_rate). */
uint32_t snapshots__take_save(struct snapshots *s, uint64_t now_ns);

/* What the store holds against its bounds, and the saves refused since open. */
struct snapshots_counts {
	uint64_t count, max_count, bytes, max_bytes;
	uint64_t refused_full; /* saves past max_count or max_bytes (-EMLINK, -EFBIG) */
	uint64_t refused_rate; /* saves past save_rate (snapshots__take_save) */
};
void snapshots__counts(struct snapshots *s, struct snapshots_counts *c);

/* Saves side as the snapshot name, replacing one of that name (the bounds count a replacement
 * net). The saved side's conditions carry snapshot = name and saved_unix_ns = now (side itself is
 * not changed). Blocks for the compression, the write and two fsyncs. Returns 0, -EINVAL,
 * -EMLINK, -EFBIG, -E2BIG, -EEXIST, -ENOMEM or the -errno of the write (-ENOSPC, -EIO, ...;
 * nothing is left behind; the store logged it). */
int snapshots__save(struct snapshots *s, const char *name, const struct cmp_side *side);

/* Reads the snapshot name into *out (free with cmp_side__free), its conditions' snapshot set to
 * name and saved_unix_ns to when it was saved. Nothing read is trusted: the inflated JSON is
 * capped at SNAPSHOTS_MAX_JSON_BYTES, the side checked whole (cmp_side__from_json). Returns 0,
 * or with *out NULL and err (errlen bytes) one sentence naming the snapshot, the problem and the
 * fix ("snapshot base is corrupt (gzip data cut short); remove it with tailprof snapshot rm
 * base"): -EINVAL, -ENOENT, -EBADMSG, -EPROTONOSUPPORT, -ENOMEM or the -errno of a read. */
int snapshots__load(struct snapshots *s, const char *name, struct cmp_side **out, char *err,
		    size_t errlen);

/* The listing: {"snapshots": [{"name", "saved" (RFC 3339), "saved_unix_ns", "from_unix_ns",
 * "to_unix_ns", "windows", "bytes" (its file's size), "host", "kernel", "version",
 * "frequency_hz", "window_ns"}, ...] oldest saved first, "max_count", "max_bytes", "bytes" (of
 * every file the bound counts, corrupt ones too)}. Corrupt files are left out (the store reported
 * them). Returns a new reference, or NULL when out of memory. */
json_t *snapshots__list(struct snapshots *s);

/* Removes the snapshot name: also a corrupt one, or any regular file NAME.snap in the directory
 * (one put there by hand); never a symlink. Nothing else removes a snapshot file. Returns 0,
 * -EINVAL, -ENOENT, -EPROTONOSUPPORT (a newer tailprofd's file: kept), -ELOOP (a symlink or not a
 * regular file: kept) or the -errno of lstat or unlink (-EPERM, -EACCES, -EROFS, ...). */
int snapshots__remove(struct snapshots *s, const char *name);

enum snapshots_op {
	SNAPSHOTS_SAVE,	  /* err came from snapshots__save */
	SNAPSHOTS_REMOVE, /* from snapshots__remove */
	SNAPSHOTS_ANY,	  /* not said: messages of I/O errors name no operation */
};

/* One sentence for people on err, what op on snapshot name returned (not for load, whose message
 * is its own), naming the bound and its key where one refused a save ("snapshot b not saved: 2
 * snapshots are the most [snapshots] max_count (--snapshot-max-count) allows; 4 are stored;
 * remove one (tailprof snapshot rm NAME) or raise it") and what failed where the disk refused
 * ("cannot write snapshot b in DIR/snapshots: Operation not permitted; check that ..."). Into buf
 * (len bytes). */
void snapshots__describe_op(struct snapshots *s, enum snapshots_op op, const char *name, int err,
			    char *buf, size_t len);

/* The snapshot store's figures for /metrics (Prometheus text, appended to t's caller): saves,
 * failed saves, temp files removed at open, whether writes fail now. Returns a malloc'd text, or
 * NULL when out of memory. */
char *snapshots__metrics_text(struct snapshots *s);

#endif
