/* SPDX-License-Identifier: GPL-2.0-only */
/* An on-disk store of named entries under the state directory (--state-dir DIR): one file an
 * entry in DIR/SUBDIR, its JSON and its named blobs, written atomically, listed and read again
 * after a restart. The store knows nothing of what it keeps: an id, a start time, a JSON text and
 * named blobs. Closed spikes (DIR/spikes/ID.spike, gzip pprof profiles as blobs) and snapshots
 * (snapshots.h: DIR/snapshots/NAME.snap, refusing instead of evicting) are its users.
 * docs/spike-store.md gives the file format and the reasons for its rules.
 *
 * Files: DIR/SUBDIR/ID.SUFFIX (mode 0600), written as ID.SUFFIX.SEQ.tmp, fsync'd, renamed over,
 * and the directory fsync'd; temp files left by a crash are removed at open. A file of a newer
 * format version is reported, kept (never evicted, removed or overwritten) and not counted
 * against the bounds. A corrupt or truncated file is reported once and skipped; it counts against
 * max_bytes and, in an evicting store, is the first to go when bytes are needed (the largest
 * first), only if it holds the store's magic: a symlink, a file that is not regular or one
 * without the magic ("foreign": nothing says the store wrote it) is never deleted or overwritten
 * by the store, and only a no_evict store counts it. A no_evict store deletes nothing but on
 * spike_store__remove. Every file the store deletes is logged (pr_info, naming it and why) and
 * counted in evicted. A file put into the directory while the store is open is indexed when its
 * id is first asked for (entry, read_blob, save, remove). Blobs are checked (CRC-32) when read,
 * headers, tables and JSON when the directory is scanned and when read.
 *
 * Thread-safe: a mutex guards the index and the counters; file reads and writes happen outside
 * it (renames make every file whole or absent), so save may run on the drain thread while HTTP
 * threads call each and read_blob. One store a directory: open takes an exclusive flock on
 * DIR/SUBDIR, so a second daemon on the same DIR fails to open it (EBUSY). */
#ifndef TAILPROF_SPIKE_STORE_H
#define TAILPROF_SPIKE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPIKE_STORE_FORMAT_VERSION 1
#define SPIKE_STORE_ID_MAX	   64		  /* ids: 1-64 characters of [A-Za-z0-9._-] */
#define SPIKE_STORE_NAME_MAX	   31		  /* blob names: 1-31 characters, the same set */
#define SPIKE_STORE_MAX_BLOBS	   16		  /* blobs a spike */
#define SPIKE_STORE_MAX_JSON_BYTES (16u << 20)	  /* a spike's JSON at most */
#define SPIKE_STORE_MAX_BLOB_BYTES (64u << 20)	  /* a blob at most */
#define SPIKE_STORE_DEFAULT_BYTES  (256ull << 20) /* max_bytes when 0 */
#define SPIKE_STORE_DEFAULT_SPIKES 256		  /* max_spikes when 0 */
#define SPIKE_STORE_SUFFIX_MAX	   15		  /* file suffixes: '.' and 1-14 name characters */

struct spike_store_opts {
	const char *dir;	/* the state directory (--state-dir); entries live in DIR/SUBDIR */
	const char *subdir;	/* 1-64 characters of [A-Za-z0-9._-]; NULL: "spikes" */
	const char *suffix;	/* of entry files: '.' then 1-14 of [A-Za-z0-9_-]; NULL: ".spike" */
	const char *what;	/* the noun of messages, e.g. "snapshot"; NULL: "spike" */
	uint64_t max_bytes;	/* of entry files (and corrupt ones) at most; 0: the default */
	uint32_t max_spikes;	/* readable entries kept at most; 0: the default */
	bool no_evict;		/* refuse a save past a bound (-EMLINK, -EFBIG) instead of evicting;
				 * nothing is deleted but by spike_store__remove */
	const char *remove_cmd; /* the command that removes an entry, for the messages about
				 * corrupt files ("tailprof snapshot rm"); NULL: none */
};

struct spike_store_stats {
	/* counters since open */
	uint64_t saved;	      /* entries written */
	uint64_t save_failed; /* saves that returned an error other than -EINVAL (refusals of a
			       * no_evict store included) */
	uint64_t evicted;     /* files the store removed to stay within the bounds (entries, corrupt
			       * files), each logged; not those of spike_store__remove */
	uint64_t corrupt;     /* files found corrupt or unreadable (at the scan, or a read of their
			       * JSON or a blob): each reported and counted once */
	uint64_t temp_removed; /* temp files of interrupted writes (a crash) removed at open */
	int last_write_err;    /* errno of the last failed write (ENOSPC, EROFS, EIO...) while
				* writes fail; 0 once one goes through */
	/* gauges */
	uint64_t unknown_format; /* files of a newer format kept in the directory */
	uint64_t bytes;		 /* sizes of the entry files and corrupt files (the bounded part;
				  * foreign files only with no_evict) */
	uint32_t spikes;	 /* readable entries stored */
};

/* One named section of an entry: name is 1-31 characters of [A-Za-z0-9._-] (e.g. "cpu",
 * "cpu.baseline"); data[0..len) any bytes, len at most SPIKE_STORE_MAX_BLOB_BYTES (0 allowed). */
struct spike_blob {
	const char *name;
	const uint8_t *data;
	size_t len;
};

struct spike_store;

/* Opens the store of o->dir: creates DIR (one level) and DIR/SUBDIR, mode 0700, when missing;
 * locks DIR/SUBDIR; removes temp files a crash left; scans the entry files (reporting the corrupt
 * ones and those of a newer format, pr_warn once each); then evicts beyond the bounds (not with
 * no_evict). Returns the store, to free with
 * spike_store__free, or NULL with errno set and err (errlen bytes) one sentence for people naming
 * the directory, the problem and the fix: EINVAL (no dir given, a bad subdir or suffix), ENOENT
 * (DIR's parent is missing), ENOTDIR (DIR or DIR/SUBDIR is not a directory), ELOOP (DIR/SUBDIR is
 * a symlink), EACCES or EROFS (not writable), EBUSY (another tailprofd has it open), ENOMEM (a
 * huge directory). */
struct spike_store *spike_store__open(const struct spike_store_opts *o, char *err, size_t errlen);

/* Closes the store (and releases its lock). NULL allowed. Files stay. */
void spike_store__free(struct spike_store *s);

/* Writes the entry id atomically: json (NUL-terminated, at most SPIKE_STORE_MAX_JSON_BYTES, no
 * other NUL) and blobs[0..n) (distinct names, n <= SPIKE_STORE_MAX_BLOBS), in that order;
 * start_unix_ns orders entries (oldest first) for listing and eviction. An entry of the same id
 * (or a corrupt file of that id the store wrote) is replaced, and the bounds count the replacement
 * net. Then evicts beyond max_spikes and max_bytes (corrupt files first, then the oldest
 * entries); the entry just written is not evicted by its own save. With no_evict nothing is
 * evicted: a save that would leave more than max_spikes readable entries, or more than max_bytes
 * of files, is refused before anything is written. Blocks for the write and two fsyncs
 * (milliseconds; more on a slow disk): not for hot paths. Failures of the write are reported
 * (pr_warn, naming the file) and counted; the caller need not log them. Returns 0, -EINVAL (a bad
 * id, name, size or count: not reported), -EEXIST (a file of a newer format has this id and is
 * kept; also a foreign file: a symlink, one without the store's magic), -EFBIG (the file would be
 * larger than max_bytes; with no_evict also: it would take the
 * store past max_bytes), -EMLINK (no_evict: it would take the store past max_spikes), -ENOMEM, or
 * the -errno of the failed write (-ENOSPC, -EIO, ...: nothing of the entry is left behind) or of
 * the directory's fsync after the rename (the entry is stored but may not outlive a power loss).
 * -EFBIG and -EMLINK always mean a bound: no write returns -EMLINK, and -EFBIG only past
 * RLIMIT_FSIZE, whose SIGXFSZ ends tailprofd first. */
int spike_store__save(struct spike_store *s, const char *id, int64_t start_unix_ns,
		      const char *json, const struct spike_blob *blobs, size_t n);

/* Calls fn(arg, id, start_unix_ns, json) for each readable stored entry, oldest first (by start
 * time, then id); json is NUL-terminated and valid only during the call; a non-zero return stops
 * the walk. fn runs without the store's lock: it may call read_blob, entry, save or remove. The
 * JSON is read from the file at the call: a file found corrupt is reported once, skipped and
 * counted; a file gone meanwhile is skipped. Returns 0 when every entry was visited, fn's non-zero
 * return that stopped the walk, or -ENOMEM. */
int spike_store__each(struct spike_store *s,
		      int (*fn)(void *arg, const char *id, int64_t start_unix_ns, const char *json),
		      void *arg);

/* What the index knows of the entry id, without reading its file: returns 0 (readable when last
 * read), -EINVAL (a bad id), -ENOENT (not stored), -ELOOP (a symlink or not a regular file:
 * reported already, never followed), -EBADMSG (found corrupt or without the store's magic:
 * reported already) or -EPROTONOSUPPORT (a file of a newer format, kept); *bytes (NULL allowed) is
 * its file's size when it is stored. */
int spike_store__entry(struct spike_store *s, const char *id, uint64_t *bytes);

/* What is wrong with the file of entry id, as its report said ("cut short in section 1: 5499
 * of 5506 bytes"), into why (len bytes; "" when nothing was found wrong). Returns 0, or -ENOENT
 * when id is not stored. */
int spike_store__why(struct spike_store *s, const char *id, char *why, size_t len);

/* Reads the blob name of the entry id into *out (malloc'd, the caller frees; NULL when len is 0)
 * and *len, checked against its CRC-32. Returns 0, -EINVAL (a bad id or name), -ENOENT (no such
 * entry or no such blob in it; also a file of a newer format), -EBADMSG (the file or the blob is
 * corrupt: reported once a file, counted), -EIO or another -errno of the read, or -ENOMEM. */
int spike_store__read_blob(struct spike_store *s, const char *id, const char *name, uint8_t **out,
			   size_t *len);

/* Removes the entry id: any regular file ID.SUFFIX in the directory (a corrupt one, one without
 * the store's magic, one put there while the store is open), never a symlink. Returns 0, -EINVAL
 * (a bad id), -ENOENT (no such file), -EPROTONOSUPPORT (a file of a newer format: kept), -ELOOP
 * (a symlink or another file that is not regular: kept), or the -errno of lstat or unlink (-EPERM,
 * -EACCES, -EROFS, -EIO, ...: a refusal of the disk, not of the store). */
int spike_store__remove(struct spike_store *s, const char *id);

/* Copies the counters and gauges into *st. */
void spike_store__stats(struct spike_store *s, struct spike_store_stats *st);

#endif
