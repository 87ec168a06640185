// SPDX-License-Identifier: GPL-2.0-only
/* The on-disk store of named entries (closed spikes, snapshots): one file an entry, written
 * atomically, scanned at open and read back without trusting a length it holds. The format is in
 * docs/spike-store.md. */
#include "spike_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "spike_file.h"

#define TMP_SUFFIX ".tmp"
/* ID.SUFFIX.SEQ.tmp */
#define FILE_NAME_LEN (SPIKE_STORE_ID_MAX + SPIKE_STORE_SUFFIX_MAX + 24 + sizeof(TMP_SUFFIX))

enum entry_state {
	ENTRY_SPIKE,   /* readable (a spike, a snapshot): listed, counted against both bounds */
	ENTRY_CORRUPT, /* reported; counted against max_bytes; evicted first (not with no_evict,
			* nor when foreign) */
	ENTRY_UNKNOWN, /* a newer format: kept, counted in unknown_format only */
};

struct entry {
	char id[SPIKE_STORE_ID_MAX + 1];
	int64_t start_unix_ns; /* INT64_MIN for corrupt and unknown files: they sort first */
	uint64_t bytes;
	enum entry_state state;
	bool reported; /* a problem of this file was reported: not again */
	bool foreign;  /* corrupt and without the store's magic (or not a regular file): nothing
			* says the store wrote it, so the store never deletes it */
	bool not_reg;  /* a symlink or another file that is not a regular one */
	char why[80];  /* of a corrupt file: what is wrong, for the line of its eviction */
};

struct spike_store {
	pthread_mutex_t lock; /* guards entries, nr, cap and st; the rest is set at open */
	int dirfd;	      /* DIR/SUBDIR, flock'd */
	char *path;	      /* DIR/SUBDIR, for messages */
	char suffix[SPIKE_STORE_SUFFIX_MAX + 1];
	char what[32];	     /* the noun of messages: "spike", "snapshot" */
	char remove_cmd[48]; /* "" when none */
	uint64_t max_bytes;
	uint32_t max_spikes;
	bool no_evict;
	uint64_t seq;	       /* of temp files; atomic */
	struct entry *entries; /* sorted by (start_unix_ns, id) */
	size_t nr, cap;
	struct spike_store_stats st;
	int write_err; /* -errno of the last failed write since the last good one, else 0: a
			* full or read-only disk is reported when it starts and when it ends, not
			* at every retry */
};

static bool valid_id(const char *id)
{
	return spike_file__valid_name(id, SPIKE_STORE_ID_MAX);
}

static void file_name(const struct spike_store *s, char *buf, const char *id)
{
	snprintf(buf, FILE_NAME_LEN, "%s%s", id, s->suffix);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

/* Whether name is a temp file of ours: ID.SUFFIX.SEQ.tmp (SEQ decimal); other files are left
 * alone. Read from the end, since an id may hold the suffix too. */
static bool is_our_tmp(const struct spike_store *s, const char *name)
{
	size_t n = strlen(name), m = strlen(s->suffix), digits = 0;
	char id[SPIKE_STORE_ID_MAX + 1];

	if (!has_suffix(name, TMP_SUFFIX))
		return false;
	n -= strlen(TMP_SUFFIX);
	while (digits < n && name[n - digits - 1] >= '0' && name[n - digits - 1] <= '9')
		digits++;
	if (!digits || digits == n || name[n - digits - 1] != '.')
		return false;
	n -= digits + 1;
	if (n <= m || strncmp(name + n - m, s->suffix, m) || n - m > SPIKE_STORE_ID_MAX)
		return false;
	memcpy(id, name, n - m);
	id[n - m] = '\0';
	return valid_id(id);
}

/* -- the index (callers hold the lock) -- */

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->start_unix_ns != y->start_unix_ns)
		return x->start_unix_ns < y->start_unix_ns ? -1 : 1;
	return strcmp(x->id, y->id);
}

static struct entry *find(struct spike_store *s, const char *id)
{
	for (size_t i = 0; i < s->nr; i++)
		if (!strcmp(s->entries[i].id, id))
			return &s->entries[i];
	return NULL;
}

static int reserve(struct spike_store *s)
{
	struct entry *n;
	size_t cap;

	if (s->nr < s->cap)
		return 0;
	cap = s->cap ? 2 * s->cap : 64;
	n = realloc(s->entries, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	s->entries = n;
	s->cap = cap;
	return 0;
}

static void account(struct spike_store *s, const struct entry *e, int sign)
{
	if (e->state == ENTRY_UNKNOWN) {
		s->st.unknown_format += sign;
		return;
	}
	/* the evicting store counts only what it may delete, lest a file it keeps evict every
	 * entry; with no_evict every file counts, since people make the room */
	if (e->foreign && !s->no_evict)
		return;
	s->st.bytes += sign * (int64_t)e->bytes;
	if (e->state == ENTRY_SPIKE)
		s->st.spikes += sign;
}

/* Inserts e in order; the caller has reserved room. */
static void insert(struct spike_store *s, const struct entry *e)
{
	size_t lo = 0, hi = s->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (entry_cmp(&s->entries[mid], e) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	memmove(&s->entries[lo + 1], &s->entries[lo], (s->nr - lo) * sizeof(*e));
	s->entries[lo] = *e;
	s->nr++;
	account(s, e, 1);
}

static void drop(struct spike_store *s, struct entry *e)
{
	size_t i = e - s->entries;

	account(s, e, -1);
	memmove(e, e + 1, (s->nr - i - 1) * sizeof(*e));
	s->nr--;
}

static bool over_bounds(const struct spike_store *s)
{
	return s->st.spikes > s->max_spikes || s->st.bytes > s->max_bytes;
}

/* The next file to evict, NULL when none may go: with bytes over, the largest corrupt file the
 * store wrote (the fewest deletions free the room), then the oldest entry; never a foreign file,
 * a file of a newer format, nor the entry keep. */
static struct entry *victim(struct spike_store *s, const char *keep, const char **reason)
{
	struct entry *big = NULL;

	for (size_t i = 0; s->st.bytes > s->max_bytes && i < s->nr; i++) {
		struct entry *e = &s->entries[i];

		if (e->state == ENTRY_CORRUPT && !e->foreign && (!keep || strcmp(e->id, keep)) &&
		    (!big || e->bytes > big->bytes))
			big = e;
	}
	if (big) {
		*reason = "corrupt";
		return big;
	}
	for (size_t i = 0; i < s->nr; i++) {
		struct entry *e = &s->entries[i];

		if (e->state == ENTRY_SPIKE && (!keep || strcmp(e->id, keep))) {
			*reason = "the oldest";
			return e;
		}
	}
	return NULL;
}

/* Removes files beyond the bounds (victim), each logged with why and counted in evicted. With
 * no_evict nothing goes: saves are refused instead. Returns how many files went. */
static unsigned int evict(struct spike_store *s, const char *keep)
{
	char name[FILE_NAME_LEN];
	unsigned int nr = 0;
	const char *reason;
	struct entry *e;

	while (!s->no_evict && over_bounds(s) && (e = victim(s, keep, &reason))) {
		bool bytes_over = s->st.bytes > s->max_bytes;

		file_name(s, name, e->id);
		/* dropped from the index even when unlink fails, so that the loop ends */
		if (unlinkat(s->dirfd, name, 0) && errno != ENOENT)
			pr_warn("failed to remove %s/%s to keep the %s store in its bounds: %s",
				s->path, name, s->what, strerror(errno));
		else if (e->state == ENTRY_CORRUPT)
			pr_info(
			    "%s store: removed %s/%s, corrupt (%s), to keep %s within max_bytes "
			    "(%" PRIu64 ")",
			    s->what, s->path, name, e->why, s->path, s->max_bytes);
		else
			pr_info("%s store: removed %s/%s, %s %s, to keep %s within %s (%" PRIu64
				")",
				s->what, s->path, name, reason, s->what, s->path,
				bytes_over ? "max_bytes" : "max_spikes",
				bytes_over ? s->max_bytes : (uint64_t)s->max_spikes);
		drop(s, e);
		s->st.evicted++;
		nr++;
	}
	return nr;
}

/* -- reading a file -- */

/* Opens DIR/SUBDIR/ID.SUFFIX for reading: never through a symlink, never blocking on a FIFO.
 * Returns the fd, -ENOENT, -ENOMSG (a symlink or not a regular file: why says so) or -errno. */
static int open_spike(struct spike_store *s, const char *id, struct stat *sb, char *why,
		      size_t whylen)
{
	char name[FILE_NAME_LEN];
	int fd;

	file_name(s, name, id);
	fd = openat(s->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP) {
		snprintf(why, whylen, "a symlink, not followed");
		return -ENOMSG;
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, sb)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(sb->st_mode)) {
		close(fd);
		snprintf(why, whylen, "not a regular file");
		return -ENOMSG;
	}
	return fd;
}

/* Reads the head and the JSON of the entry id. Returns 0 with *json (malloc'd), -ENOENT,
 * -EPROTONOSUPPORT (h->version), -EBADMSG or -ENOMSG (why), -ENOMEM or another -errno; *size is the
 * file's size when it could be opened. */
static int read_spike(struct spike_store *s, const char *id, struct spike_file_head *h, char **json,
		      uint64_t *size, char *why, size_t whylen)
{
	struct stat sb;
	int fd, err;

	*json = NULL;
	fd = open_spike(s, id, &sb, why, whylen);
	if (fd < 0)
		return fd;
	*size = sb.st_size;
	err = spike_file__read_head(fd, sb.st_size, id, h, why, whylen);
	if (!err)
		err = spike_file__read_section(fd, h, 0, (uint8_t **)json, why, whylen);
	if (!err && strlen(*json) != h->sec[0].len) {
		snprintf(why, whylen, "a NUL inside its JSON");
		err = -EBADMSG;
		free(*json);
		*json = NULL;
	}
	close(fd);
	return err;
}

/* why for an error of a read that is not corruption (-EBADMSG and -ENOMSG have their own) */
static void why_errno(char *why, size_t whylen, int err)
{
	if (err != -EBADMSG && err != -ENOMSG)
		snprintf(why, whylen, "cannot read it: %s", strerror(-err));
}

/* Reports a problem with the file of e once (naming it, what is wrong and what to do), and
 * counts it. The caller holds the lock. */
static void warn_bad(struct spike_store *s, struct entry *e, const char *why)
{
	char fix[160];

	if (why != e->why)
		snprintf(e->why, sizeof(e->why), "%s", why);
	if (e->reported)
		return;
	if (s->remove_cmd[0] && !e->not_reg)
		snprintf(fix, sizeof(fix), "remove it with %s %s", s->remove_cmd, e->id);
	else
		snprintf(fix, sizeof(fix), "delete it by hand if it is not needed");
	if (e->foreign)
		pr_warn("%s store: kept %s/%s%s: %s, not a %s file tailprofd wrote, so never "
			"deleted by it; %s",
			s->what, s->path, e->id, s->suffix, why, s->what, fix);
	else if (s->no_evict)
		pr_warn("%s store: %s/%s%s is corrupt (%s): kept, counted against max_bytes; %s",
			s->what, s->path, e->id, s->suffix, why, fix);
	else
		pr_warn("%s store: %s/%s%s is corrupt (%s): skipped, removed first when room is "
			"needed",
			s->what, s->path, e->id, s->suffix, why);
	s->st.corrupt++;
	e->reported = true;
}

/* Reports a problem with the file of id once, and counts it. With unlist (err, -EBADMSG or
 * -ENOMSG, says which), a listed entry becomes a corrupt file. Takes the lock. */
static void report_bad(struct spike_store *s, const char *id, const char *why, bool unlist, int err)
{
	char name[FILE_NAME_LEN];
	struct entry *e, c;
	struct stat lsb;

	pthread_mutex_lock(&s->lock);
	e = find(s, id);
	/* replaced by a directory or a link since it was indexed: the fix is by hand */
	file_name(s, name, id);
	if (e && !fstatat(s->dirfd, name, &lsb, AT_SYMLINK_NOFOLLOW) && !S_ISREG(lsb.st_mode))
		e->not_reg = e->foreign = true;
	if (e && unlist && e->state == ENTRY_SPIKE) {
		c = *e;
		drop(s, e);
		c.state = ENTRY_CORRUPT;
		c.start_unix_ns = INT64_MIN;
		c.foreign = err == -ENOMSG;
		insert(s, &c); /* room: the entry just dropped */
		e = find(s, id);
	}
	if (e)
		warn_bad(s, e, why);
	pthread_mutex_unlock(&s->lock);
}

/* A file that vanished: forget it (someone removed it by hand). Takes the lock. */
static void forget(struct spike_store *s, const char *id)
{
	struct entry *e;

	pthread_mutex_lock(&s->lock);
	e = find(s, id);
	if (e && e->state != ENTRY_UNKNOWN)
		drop(s, e);
	pthread_mutex_unlock(&s->lock);
}

/* -- the scan at open, and files that appear later -- */

/* Reads DIR/SUBDIR/ID.SUFFIX (of a valid id; lsb its lstat) into *e, reporting it when it is of
 * a newer format. Returns 0, -ENOENT (gone meanwhile) or -ENOMEM. */
static int read_entry(struct spike_store *s, const char *id, const struct stat *lsb,
		      struct entry *e)
{
	char why[128] = "";
	struct spike_file_head h;
	char *json;
	int err;

	*e = (struct entry){.start_unix_ns = INT64_MIN, .bytes = lsb->st_size};
	snprintf(e->id, sizeof(e->id), "%s", id);
	e->not_reg = !S_ISREG(lsb->st_mode);
	err = read_spike(s, id, &h, &json, &e->bytes, why, sizeof(why));
	free(json);
	if (err == -ENOENT || err == -ENOMEM)
		return err;
	if (err == -EPROTONOSUPPORT) {
		pr_warn("%s store: kept %s/%s%s: format version %" PRIu32
			", newer than this tailprofd reads (%d); a newer tailprofd reads it",
			s->what, s->path, id, s->suffix, h.version, SPIKE_STORE_FORMAT_VERSION);
		e->state = ENTRY_UNKNOWN;
	} else if (err) {
		why_errno(why, sizeof(why), err);
		e->state = ENTRY_CORRUPT;
		e->foreign = err == -ENOMSG || e->not_reg;
		snprintf(e->why, sizeof(e->why), "%s", why);
	} else {
		e->state = ENTRY_SPIKE;
		e->start_unix_ns = h.start_unix_ns;
	}
	return 0;
}

/* Indexes DIR/SUBDIR/ID.SUFFIX at the scan. Returns 0 or -ENOMEM. */
static int scan_spike(struct spike_store *s, const char *id, const struct stat *lsb)
{
	struct entry e;
	int err = read_entry(s, id, lsb, &e);

	if (err == -ENOENT)
		return 0; /* gone meanwhile */
	if (err || reserve(s))
		return -ENOMEM;
	if (e.state == ENTRY_CORRUPT)
		warn_bad(s, &e, e.why);
	s->entries[s->nr++] = e; /* sorted once the scan is done */
	account(s, &e, 1);
	return 0;
}

/* Indexes the file of id when the index does not know it but the directory holds it (put there
 * by hand while the store is open), so that what is on disk can be read, reported and removed.
 * Only files the scan would index: regular files and symlinks. */
static void adopt(struct spike_store *s, const char *id)
{
	char name[FILE_NAME_LEN];
	struct stat lsb;
	struct entry e;
	bool known;

	pthread_mutex_lock(&s->lock);
	known = find(s, id) != NULL;
	pthread_mutex_unlock(&s->lock);
	file_name(s, name, id);
	if (known || fstatat(s->dirfd, name, &lsb, AT_SYMLINK_NOFOLLOW) ||
	    (!S_ISREG(lsb.st_mode) && !S_ISLNK(lsb.st_mode)) || read_entry(s, id, &lsb, &e))
		return;
	pthread_mutex_lock(&s->lock);
	if (!find(s, id) && !reserve(s)) {
		if (e.state == ENTRY_CORRUPT)
			warn_bad(s, &e, e.why);
		insert(s, &e);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Removes temp files a crash left and indexes the entry files. Returns 0 or -errno. */
static int scan(struct spike_store *s)
{
	unsigned int nr_tmp = 0;
	struct dirent *d;
	DIR *dir;
	int fd, err = 0;

	fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		err = -errno;
		close(fd);
		return err;
	}
	while (!err && (errno = 0, d = readdir(dir))) {
		char id[SPIKE_STORE_ID_MAX + 1];
		size_t n = strlen(d->d_name);
		struct stat lsb;

		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (fstatat(s->dirfd, d->d_name, &lsb, AT_SYMLINK_NOFOLLOW))
			continue; /* gone meanwhile */
		if (is_our_tmp(s, d->d_name) && !S_ISDIR(lsb.st_mode)) {
			/* ours alone: the directory is locked */
			if (!unlinkat(s->dirfd, d->d_name, 0))
				nr_tmp++;
			continue;
		}
		if (!has_suffix(d->d_name, s->suffix) ||
		    n - strlen(s->suffix) > SPIKE_STORE_ID_MAX ||
		    (!S_ISREG(lsb.st_mode) && !S_ISLNK(lsb.st_mode))) {
			pr_debug("%s store: ignored %s/%s: not a %s file", s->what, s->path,
				 d->d_name, s->what);
			continue;
		}
		memcpy(id, d->d_name, n - strlen(s->suffix));
		id[n - strlen(s->suffix)] = '\0';
		if (!valid_id(id)) {
			pr_debug("%s store: ignored %s/%s: not a %s id", s->what, s->path,
				 d->d_name, s->what);
			continue;
		}
		err = scan_spike(s, id, &lsb);
	}
	if (!err && errno)
		err = -errno;
	closedir(dir);
	if (nr_tmp)
		pr_info("%s store: removed %u temp files an interrupted write left in %s", s->what,
			nr_tmp, s->path);
	s->st.temp_removed = nr_tmp;
	if (s->nr)
		qsort(s->entries, s->nr, sizeof(*s->entries), entry_cmp);
	return err;
}

static void sync_dir(struct spike_store *s, const char *what)
{
	if (fsync(s->dirfd))
		pr_warn("failed to fsync %s after %s: %s", s->path, what, strerror(errno));
}

/* Whether suffix is '.' and 1 to SPIKE_STORE_SUFFIX_MAX - 1 of [A-Za-z0-9_-], and not TMP_SUFFIX
 * (a dot inside would make file names ambiguous). */
static bool valid_suffix(const char *suffix)
{
	size_t n = strlen(suffix);

	if (n < 2 || n > SPIKE_STORE_SUFFIX_MAX || suffix[0] != '.' || strchr(suffix + 1, '.') ||
	    !strcmp(suffix, TMP_SUFFIX))
		return false;
	return spike_file__valid_name(suffix + 1, SPIKE_STORE_SUFFIX_MAX);
}

struct spike_store *spike_store__open(const struct spike_store_opts *o, char *err, size_t errlen)
{
	const char *subdir = o && o->subdir ? o->subdir : "spikes";
	const char *suffix = o && o->suffix ? o->suffix : ".spike";
	struct spike_store *s;
	int dfd = -1, e;

	if (!o || !o->dir || !o->dir[0]) {
		snprintf(err, errlen, "no state directory given");
		errno = EINVAL;
		return NULL;
	}
	if (!spike_file__valid_name(subdir, SPIKE_STORE_ID_MAX) || !valid_suffix(suffix)) {
		snprintf(err, errlen, "bad store directory '%s' or file suffix '%s'", subdir,
			 suffix);
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		abort(); /* fixed size (STYLE.md) */
	s->dirfd = -1;
	s->max_bytes = o->max_bytes ? o->max_bytes : SPIKE_STORE_DEFAULT_BYTES;
	s->max_spikes = o->max_spikes ? o->max_spikes : SPIKE_STORE_DEFAULT_SPIKES;
	s->no_evict = o->no_evict;
	snprintf(s->suffix, sizeof(s->suffix), "%s", suffix);
	snprintf(s->what, sizeof(s->what), "%s", o->what ? o->what : "spike");
	snprintf(s->remove_cmd, sizeof(s->remove_cmd), "%s", o->remove_cmd ? o->remove_cmd : "");
	pthread_mutex_init(&s->lock, NULL);
	if (asprintf(&s->path, "%s/%s", o->dir, subdir) < 0)
		abort();

	if (mkdir(o->dir, 0700) && errno != EEXIST) {
		e = errno;
		snprintf(err, errlen, "cannot create the state directory %s: %s; %s", o->dir,
			 strerror(e),
			 e == ENOENT ? "create its parent or give another --state-dir"
				     : "give a writable --state-dir");
		goto fail;
	}
	dfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		e = errno;
		if (e == ENOTDIR)
			snprintf(err, errlen,
				 "the state directory %s is not a directory; give a directory as "
				 "--state-dir",
				 o->dir);
		else
			snprintf(err, errlen,
				 "cannot open the state directory %s: %s; check its permissions",
				 o->dir, strerror(e));
		goto fail;
	}
	if (mkdirat(dfd, subdir, 0700) && errno != EEXIST) {
		e = errno;
		snprintf(err, errlen,
			 "cannot create %s: %s; make %s writable by tailprofd or give "
			 "another --state-dir",
			 s->path, strerror(e), o->dir);
		goto fail;
	}
	s->dirfd = openat(dfd, subdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->dirfd < 0) {
		struct stat lsb;

		e = errno;
		if ((e == ELOOP || e == ENOTDIR) &&
		    !fstatat(dfd, subdir, &lsb, AT_SYMLINK_NOFOLLOW) && S_ISLNK(lsb.st_mode)) {
			e = ELOOP;
			snprintf(err, errlen,
				 "%s is a symlink; make it a directory (tailprofd follows no link "
				 "there)",
				 s->path);
		} else if (e == ENOTDIR) {
			snprintf(err, errlen,
				 "%s is not a directory; move it away or give another --state-dir",
				 s->path);
		} else {
			snprintf(err, errlen, "cannot open %s: %s; check its permissions", s->path,
				 strerror(e));
		}
		goto fail;
	}
	if (faccessat(s->dirfd, ".", W_OK | X_OK, 0)) {
		e = errno;
		snprintf(err, errlen,
			 "%s is not writable: %s; make it writable by tailprofd or give another "
			 "--state-dir",
			 s->path, strerror(e));
		goto fail;
	}
	if (flock(s->dirfd, LOCK_EX | LOCK_NB)) {
		e = errno == EWOULDBLOCK ? EBUSY : errno;
		if (e == EBUSY)
			snprintf(err, errlen,
				 "%s is in use by another tailprofd; give each its own --state-dir",
				 s->path);
		else
			snprintf(err, errlen, "cannot lock %s: %s", s->path, strerror(e));
		goto fail;
	}
	close(dfd);
	dfd = -1;
	e = -scan(s);
	if (e) {
		snprintf(err, errlen, "cannot read %s: %s", s->path, strerror(e));
		goto fail;
	}
	if (evict(s, NULL))
		sync_dir(s, "evicting files beyond the bounds");
	return s;
fail:
	if (dfd >= 0)
		close(dfd);
	spike_store__free(s);
	errno = e;
	return NULL;
}

void spike_store__free(struct spike_store *s)
{
	if (!s)
		return;
	if (s->dirfd >= 0)
		close(s->dirfd); /* releases the flock */
	pthread_mutex_destroy(&s->lock);
	free(s->entries);
	free(s->path);
	free(s);
}

/* -- save -- */

static int write_full(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

/* Test-only (tests/integration/test_faults.py): TAILPROF_TEST_WRITE_DELAY_MS=N makes every write
 * pause N ms after the header, so that a test can kill the daemon in the middle of one. */
static void test_write_delay(void)
{
	const char *v = getenv("TAILPROF_TEST_WRITE_DELAY_MS");
	long ms = v ? strtol(v, NULL, 10) : 0;
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};

	if (ms > 0)
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
}

/* Writes the temp file tmp: header and table, JSON, blobs; fsync'd. Returns 0 or -errno. */
static int write_tmp(struct spike_store *s, const char *tmp, const uint8_t *head, size_t head_len,
		     const char *json, const struct spike_blob *blobs, size_t n)
{
	int fd, err;

	fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = write_full(fd, head, head_len);
	if (!err)
		test_write_delay();
	if (!err)
		err = write_full(fd, json, strlen(json));
	for (size_t i = 0; !err && i < n; i++)
		err = write_full(fd, blobs[i].data, blobs[i].len);
	if (!err && fsync(fd))
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	return err;
}

/* Reports a failed write (msg: what failed, e.g. "failed to write spike X to DIR/TMP"; err:
 * -errno): at pr_warn when it is the first failure or another error than the last one, else at
 * pr_debug (a full disk fails every retry alike). Takes the lock. */
static void write_failed(struct spike_store *s, const char *msg, int err)
{
	bool again;

	pthread_mutex_lock(&s->lock);
	again = s->write_err == err;
	s->write_err = err;
	s->st.last_write_err = -err;
	pthread_mutex_unlock(&s->lock);
	if (again)
		pr_debug("%s: %s (again)", msg, strerror(-err));
	else
		pr_warn("%s: %s", msg, strerror(-err));
}

/* A write of entry id went through: says so once when writes had failed. Takes the lock. */
static void write_ok(struct spike_store *s, const char *id)
{
	int was;

	pthread_mutex_lock(&s->lock);
	was = s->write_err;
	s->write_err = 0;
	s->st.last_write_err = 0;
	pthread_mutex_unlock(&s->lock);
	if (was)
		pr_info("%s store: writing to %s works again (%s), %s %s written", s->what, s->path,
			strerror(-was), s->what, id);
}

/* no_evict: whether e fits with old (the entry of its id, NULL allowed) replaced and every other
 * file kept (corrupt ones too: only people remove them). Returns 0, -EMLINK (past max_spikes) or
 * -EFBIG (past max_bytes). The caller holds the lock. */
static int room_for(const struct spike_store *s, const struct entry *e, const struct entry *old)
{
	bool replaces = old && old->state == ENTRY_SPIKE;
	uint64_t bytes = s->st.bytes + e->bytes;

	if (old && old->state != ENTRY_UNKNOWN)
		bytes -= old->bytes;
	if (s->st.spikes + 1 - replaces > s->max_spikes)
		return -EMLINK;
	return bytes > s->max_bytes ? -EFBIG : 0;
}

/* Whether a save of old's id must keep old: a file of a newer format, or one the store did not
 * write (a rename over a symlink would delete the link). */
static bool kept(const struct entry *old)
{
	return old && (old->state == ENTRY_UNKNOWN || old->foreign);
}

/* The caller holds the lock. */
static void warn_kept(const struct spike_store *s, const char *id, const struct entry *old)
{
	pr_warn("%s store: %s %s not written: %s/%s%s, %s, is kept", s->what, s->what, id, s->path,
		id, s->suffix,
		old->state == ENTRY_UNKNOWN ? "of a newer format" : "not a file it wrote");
}

int spike_store__save(struct spike_store *s, const char *id, int64_t start_unix_ns,
		      const char *json, const struct spike_blob *blobs, size_t n)
{
	uint8_t head[SPIKE_FILE_MAX_HEAD_LEN];
	char tmp[FILE_NAME_LEN], name[FILE_NAME_LEN];
	struct entry e = {.start_unix_ns = start_unix_ns, .state = ENTRY_SPIKE};
	struct entry *old;
	char msg[768]; /* a message of a failed write: paths, cut if long */
	uint64_t seq;
	int head_len, err;

	head_len = spike_file__build_head(head, id, start_unix_ns, json, blobs, n, &e.bytes);
	if (head_len < 0)
		return head_len;
	snprintf(e.id, sizeof(e.id), "%s", id);
	file_name(s, name, id);
	if (e.bytes > s->max_bytes) {
		if (!s->no_evict) /* a refusal of a no_evict store is the caller's to tell */
			pr_warn("%s store: %s %s not written: %" PRIu64
				" bytes, more than the store's bound of %" PRIu64,
				s->what, s->what, id, e.bytes, s->max_bytes);
		err = -EFBIG;
		goto count;
	}
	adopt(s, id); /* a file put there by hand is not renamed over unseen */
	/* before the write, so that a refused save costs nothing; again at the rename, since
	 * another save may have taken the room meanwhile */
	pthread_mutex_lock(&s->lock);
	old = find(s, id);
	err = kept(old) ? -EEXIST : s->no_evict ? room_for(s, &e, old) : 0;
	if (err == -EEXIST)
		warn_kept(s, id, old);
	pthread_mutex_unlock(&s->lock);
	if (err)
		goto count;
	seq = __atomic_fetch_add(&s->seq, 1, __ATOMIC_RELAXED);
	snprintf(tmp, sizeof(tmp), "%s%s.%" PRIu64 TMP_SUFFIX, id, s->suffix, seq);
	err = write_tmp(s, tmp, head, head_len, json, blobs, n);
	if (err) {
		snprintf(msg, sizeof(msg), "failed to write %s %s to %s/%s", s->what, id, s->path,
			 tmp);
		write_failed(s, msg, err);
		unlinkat(s->dirfd, tmp, 0);
		goto count;
	}

	pthread_mutex_lock(&s->lock);
	err = reserve(s); /* before find: it may move the entries */
	old = find(s, id);
	if (!err && kept(old)) {
		err = -EEXIST;
		warn_kept(s, id, old);
	}
	if (!err && s->no_evict)
		err = room_for(s, &e, old);
	if (!err && renameat(s->dirfd, tmp, s->dirfd, name)) {
		err = -errno;
		snprintf(msg, sizeof(msg), "failed to rename %s/%s to %s", s->path, tmp, name);
	} else {
		msg[0] = '\0';
	}
	if (!err) {
		if (old)
			drop(s, old);
		insert(s, &e);
		s->st.saved++;
		evict(s, id);
	}
	if (err)
		s->st.save_failed++;
	pthread_mutex_unlock(&s->lock);
	if (err) {
		if (msg[0])
			write_failed(s, msg, err);
		unlinkat(s->dirfd, tmp, 0);
		return err;
	}
	/* the rename and the evictions reach the disk */
	if (fsync(s->dirfd)) {
		err = -errno;
		snprintf(msg, sizeof(msg), "failed to fsync %s after writing %s %s", s->path,
			 s->what, id);
		write_failed(s, msg, err);
		goto count;
	}
	write_ok(s, id);
	return 0;
count:
	pthread_mutex_lock(&s->lock);
	s->st.save_failed++;
	pthread_mutex_unlock(&s->lock);
	return err;
}

/* -- reads -- */

struct each_item {
	char id[SPIKE_STORE_ID_MAX + 1];
};

int spike_store__each(struct spike_store *s,
		      int (*fn)(void *arg, const char *id, int64_t start_unix_ns, const char *json),
		      void *arg)
{
	struct each_item *items;
	size_t nr = 0;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	items = malloc((s->nr ? s->nr : 1) * sizeof(*items));
	for (size_t i = 0; items && i < s->nr; i++)
		if (s->entries[i].state == ENTRY_SPIKE)
			memcpy(items[nr++].id, s->entries[i].id, sizeof(items->id));
	pthread_mutex_unlock(&s->lock);
	if (!items)
		return -ENOMEM;

	for (size_t i = 0; !ret && i < nr; i++) {
		const char *id = items[i].id;
		char why[128] = "";
		struct spike_file_head h;
		uint64_t size;
		char *json;
		int err;

		err = read_spike(s, id, &h, &json, &size, why, sizeof(why));
		if (err == -ENOENT) {
			forget(s, id);
		} else if (err == -ENOMEM) {
			ret = err;
		} else if (err) {
			why_errno(why, sizeof(why), err);
			report_bad(s, id, why, true, err);
		} else {
			ret = fn(arg, id, h.start_unix_ns, json);
		}
		free(json);
	}
	free(items);
	return ret;
}

int spike_store__entry(struct spike_store *s, const char *id, uint64_t *bytes)
{
	const struct entry *e;
	int err;

	if (!valid_id(id))
		return -EINVAL;
	adopt(s, id);
	pthread_mutex_lock(&s->lock);
	e = find(s, id);
	err = !e			  ? -ENOENT
	      : e->not_reg		  ? -ELOOP
	      : e->state == ENTRY_CORRUPT ? -EBADMSG
	      : e->state == ENTRY_UNKNOWN ? -EPROTONOSUPPORT
					  : 0;
	if (e && bytes)
		*bytes = e->bytes;
	pthread_mutex_unlock(&s->lock);
	return err;
}

int spike_store__why(struct spike_store *s, const char *id, char *why, size_t len)
{
	const struct entry *e;

	why[0] = 0;
	pthread_mutex_lock(&s->lock);
	e = find(s, id);
	if (e)
		snprintf(why, len, "%s", e->why);
	pthread_mutex_unlock(&s->lock);
	return e ? 0 : -ENOENT;
}

int spike_store__read_blob(struct spike_store *s, const char *id, const char *name, uint8_t **out,
			   size_t *len)
{
	char why[128] = "";
	const struct entry *e;
	enum entry_state state;
	struct spike_file_head h;
	struct stat sb;
	int fd, err;
	uint32_t i;

	*out = NULL;
	*len = 0;
	if (!valid_id(id) || !spike_file__valid_name(name, SPIKE_STORE_NAME_MAX))
		return -EINVAL;
	adopt(s, id);
	pthread_mutex_lock(&s->lock);
	e = find(s, id);
	state = e ? e->state : ENTRY_UNKNOWN;
	pthread_mutex_unlock(&s->lock);
	if (state == ENTRY_UNKNOWN)
		return -ENOENT; /* not stored, or not of a format we read */
	if (state == ENTRY_CORRUPT)
		return -EBADMSG; /* reported already */

	fd = open_spike(s, id, &sb, why, sizeof(why));
	if (fd == -ENOENT) {
		forget(s, id);
		return fd;
	}
	if (fd < 0) {
		why_errno(why, sizeof(why), fd);
		report_bad(s, id, why, fd == -ENOMSG, fd);
		return fd == -ENOMSG ? -EBADMSG : fd;
	}
	err = spike_file__read_head(fd, sb.st_size, id, &h, why, sizeof(why));
	if (err) {
		/* a file of a newer format put there by hand: corrupt to us */
		if (err == -EPROTONOSUPPORT)
			snprintf(why, sizeof(why), "format version %" PRIu32, h.version);
		else
			why_errno(why, sizeof(why), err);
		report_bad(s, id, why, err == -EBADMSG || err == -ENOMSG || err == -EPROTONOSUPPORT,
			   err);
		close(fd);
		return err == -EPROTONOSUPPORT || err == -ENOMSG ? -EBADMSG : err;
	}
	for (i = 1; i < h.nr_sections && strcmp(h.sec[i].name, name); i++)
		;
	if (i == h.nr_sections) {
		close(fd);
		return -ENOENT;
	}
	err = spike_file__read_section(fd, &h, i, out, why, sizeof(why));
	close(fd);
	if (err == -ENOMEM)
		return err;
	if (err) {
		if (err != -EBADMSG)
			snprintf(why, sizeof(why), "cannot read blob %s: %s", name, strerror(-err));
		/* its JSON and other blobs may be whole: it stays listed */
		report_bad(s, id, why, false, err);
		return err;
	}
	*len = h.sec[i].len;
	if (!*len) {
		free(*out);
		*out = NULL;
	}
	return 0;
}

int spike_store__remove(struct spike_store *s, const char *id)
{
	char name[FILE_NAME_LEN];
	struct stat lsb;
	struct entry *e;
	int err = 0;

	if (!valid_id(id))
		return -EINVAL;
	file_name(s, name, id);
	adopt(s, id);
	pthread_mutex_lock(&s->lock);
	e = find(s, id);
	if (e && e->state == ENTRY_UNKNOWN)
		err = -EPROTONOSUPPORT;
	else if (fstatat(s->dirfd, name, &lsb, AT_SYMLINK_NOFOLLOW))
		err = errno == ENOENT && e ? 0 : -errno; /* removed by hand: forgotten */
	else if (!S_ISREG(lsb.st_mode))
		err = -ELOOP; /* a symlink, a FIFO, a directory: not the store's to delete */
	else if (unlinkat(s->dirfd, name, 0))
		err = errno == ENOENT && e ? 0 : -errno;
	if (!err && e)
		drop(s, e);
	pthread_mutex_unlock(&s->lock);
	if (!err)
		sync_dir(s, "removing a file");
	return err;
}

void spike_store__stats(struct spike_store *s, struct spike_store_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
}
