// SPDX-License-Identifier: GPL-2.0-only
/* Parses /proc/PID/maps text into the executable mappings of a process (see proc(5)). */
#include "proc_maps.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "log.h"
#include "mmap_records.h"

#define DELETED_SUFFIX " (deleted)"

bool proc_mapping__is_file(const struct proc_mapping *m)
{
	return m->inode != 0 && m->path[0] == '/';
}

bool proc_mapping__of(const struct proc_mapping *m, uint64_t dev, uint64_t ino)
{
	return ino && m->inode == ino && makedev(m->dev_major, m->dev_minor) == dev;
}

/* Cursor over one line: [p, end). */
struct cursor {
	const char *p;
	const char *end;
};

static bool parse_num(struct cursor *c, unsigned int base, uint64_t *out)
{
	uint64_t v = 0;
	const char *start = c->p;

	while (c->p < c->end) {
		char ch = *c->p;
		unsigned int d;

		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (base == 16 && ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else if (base == 16 && ch >= 'A' && ch <= 'F')
			d = ch - 'A' + 10;
		else
			break;
		if (v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
		c->p++;
	}
	*out = v;
	return c->p > start;
}

static bool expect(struct cursor *c, char ch)
{
	if (c->p >= c->end || *c->p != ch)
		return false;
	c->p++;
	return true;
}

static void skip_spaces(struct cursor *c)
{
	while (c->p < c->end && *c->p == ' ')
		c->p++;
}

/* Parses one line; returns false when it is not a maps line. The path is [*path, *path_end). */
static bool parse_line(struct cursor *c, struct proc_mapping *m, bool *exec, const char **path,
		       const char **path_end)
{
	uint64_t major, minor;
	const char *perms;

	if (!parse_num(c, 16, &m->start) || !expect(c, '-') || !parse_num(c, 16, &m->end) ||
	    !expect(c, ' '))
		return false;
	if (c->end - c->p < 5 || c->p[4] != ' ')
		return false;
	perms = c->p;
	c->p += 5;
	if (!parse_num(c, 16, &m->pgoff) || !expect(c, ' ') || !parse_num(c, 16, &major) ||
	    !expect(c, ':') || !parse_num(c, 16, &minor) || !expect(c, ' ') ||
	    !parse_num(c, 10, &m->inode))
		return false;
	if (c->p < c->end && *c->p != ' ')
		return false;
	if (m->end <= m->start || major > UINT32_MAX || minor > UINT32_MAX)
		return false;
	m->dev_major = major;
	m->dev_minor = minor;
	*exec = perms[2] == 'x';
	skip_spaces(c);
	*path = c->p;
	*path_end = c->end;
	return true;
}

static int cmp_mapping(const void *a, const void *b)
{
	const struct proc_mapping *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/* Appends m (its path taken) to *out; returns 0 or -ENOMEM (m's path freed). */
static int maps_push(struct proc_maps *out, size_t *cap, struct proc_mapping *m)
{
	if (out->nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct proc_mapping *nv = realloc(out->v, ncap * sizeof(*nv));

		if (!nv) {
			free(m->path);
			return -ENOMEM;
		}
		out->v = nv;
		*cap = ncap;
	}
	out->v[out->nr++] = *m;
	return 0;
}

int proc_maps__parse(const char *text, size_t len, struct proc_maps *out)
{
	const char *p = text, *end = text + len;
	size_t cap = 0;

	out->v = NULL;
	out->nr = 0;
	while (p < end) {
		const char *eol = memchr(p, '\n', end - p);
		struct cursor c = {.p = p, .end = eol ? eol : end};
		struct proc_mapping m = {};
		const char *path, *path_end;
		size_t plen, slen = strlen(DELETED_SUFFIX);
		bool exec;

		p = eol ? eol + 1 : end;
		if (!parse_line(&c, &m, &exec, &path, &path_end) || !exec)
			continue;
		plen = path_end - path;
		if (plen >= slen && !memcmp(path_end - slen, DELETED_SUFFIX, slen)) {
			m.deleted = true;
			plen -= slen;
		}
		m.path = strndup(path, plen);
		if (!m.path || maps_push(out, &cap, &m) < 0) {
			proc_maps__clear(out);
			return -ENOMEM;
		}
	}
	/* The kernel lists mappings in address order; sort anyway so lookups can bisect. */
	if (out->nr > 1)
		qsort(out->v, out->nr, sizeof(*out->v), cmp_mapping);
	return out->nr > INT32_MAX ? INT32_MAX : (int)out->nr;
}

void proc_maps__clear(struct proc_maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nr; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->nr = 0;
}

const struct proc_mapping *proc_maps__find(const struct proc_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nr;

	/* Last mapping with start <= addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= m->v[lo - 1].end)
		return NULL;
	return &m->v[lo - 1];
}

/* proc_read_file()'s loop on an open file: the whole text into a malloc'ed NUL-terminated
 * buffer. Same returns. */
static int read_fd(int fd, size_t max_bytes, char **buf, size_t *len)
{
	size_t cap = 16384, n = 0;
	char *b;

	*buf = NULL;
	*len = 0;
	b = malloc(cap);
	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			/* room for max_bytes and a read that shows the file is longer */
			size_t limit = max_bytes + 4096;
			char *nb;

			if (cap >= limit) {
				free(b);
				return -EFBIG;
			}
			cap = cap * 2 > limit ? limit : cap * 2;
			nb = realloc(b, cap);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0) {
			int err = -errno;

			if (err == -EINTR)
				continue;
			free(b);
			return err;
		}
		if (r == 0)
			break;
		n += r;
	}
	if (n > max_bytes) {
		free(b);
		return -EFBIG;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

int proc_read_file(const char *path, size_t max_bytes, char **buf, size_t *len)
{
	int fd, err;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	err = read_fd(fd, max_bytes, buf, len);
	close(fd);
	return err;
}

int proc_read_file_whole_version(const char *path, int fd, size_t max_bytes, int tries,
				 struct stat *st, char **buf, size_t *len, uint64_t *torn)
{
	char *prev = NULL;
	size_t prev_len = 0, stable = 0;

	for (int i = 0; i < tries; i++) {
		struct stat after;
		int err = proc_read_file(path, max_bytes, buf, len);

		if (err) {
			free(prev);
			return err;
		}
		if (fstat(fd, &after)) {
			err = -errno;
			free(prev);
			free(*buf);
			*buf = NULL;
			return err;
		}
		if (after.st_size == st->st_size && (size_t)after.st_size == *len &&
		    after.st_mtim.tv_sec == st->st_mtim.tv_sec &&
		    after.st_mtim.tv_nsec == st->st_mtim.tv_nsec &&
		    after.st_ctim.tv_sec == st->st_ctim.tv_sec &&
		    after.st_ctim.tv_nsec == st->st_ctim.tv_nsec) {
			free(prev);
			return 0;
		}
		(*torn)++;
		/* a file only appended to (a JIT's perf map, most often) changes under every read
		 * of a large one: the bytes it had before the last torn read, alike in that read
		 * and the one before, are a version's, up to their last whole line */
		if (prev && stable && prev_len >= stable && *len >= stable &&
		    !memcmp(prev, *buf, stable)) {
			char *nl = memrchr(*buf, '\n', stable);

			if (nl) {
				free(prev);
				*len = (size_t)(nl + 1 - *buf);
				(*buf)[*len] = '\0';
				*st = after;
				return 0;
			}
		}
		free(prev);
		prev = *buf;
		prev_len = *len;
		stable = (size_t)st->st_size;
		*buf = NULL;
		*len = 0;
		*st = after;
	}
	free(prev);
	return -EAGAIN;
}

int proc_read_single(const char *path, size_t max_bytes, char **buf, size_t *len)
{
	int fd, err;
	char *b;
	ssize_t r;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	b = malloc(max_bytes + 2);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	do
		r = read(fd, b, max_bytes + 1);
	while (r < 0 && errno == EINTR);
	err = r < 0 ? -errno : (size_t)r > max_bytes ? -EFBIG : 0;
	close(fd);
	if (err) {
		free(b);
		return err;
	}
	b[r] = '\0';
	*buf = b;
	*len = (size_t)r;
	return 0;
}

/* ---- the executable mappings of a process, by PROCMAP_QUERY or from the text ---- */

/* PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h): an ioctl on a /proc/PID/maps file that
 * returns one mapping, the one covering an address or the next, filtered by permissions, with
 * its path; the kernel formats no text and takes no mmap lock for it. Our declaration of the
 * ABI (its first version, 104 bytes), for build hosts whose headers predate it. */
struct tp_procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};

#define TP_PROCMAP_QUERY		      _IOWR('f', 17, struct tp_procmap_query)
#define TP_PROCMAP_QUERY_VMA_EXECUTABLE	      0x04
#define TP_PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
#define QUERY_BYTES_PER_MAPPING		      64 /* max_bytes / this: the most mappings a query takes */

/* The executable mappings of the maps file open at fd by PROCMAP_QUERY, in address order.
 * Returns their number, or -ENOTTY when the kernel (or the file: a test's fake root) has no such
 * ioctl, or another negative errno; *out is left empty on error. */
static int maps_query(int fd, size_t max_bytes, struct proc_maps *out)
{
	char name[PATH_MAX];
	size_t cap = 0, slen = strlen(DELETED_SUFFIX);
	uint64_t addr = 0;
	int err = 0;

	out->v = NULL;
	out->nr = 0;
	for (;;) {
		struct tp_procmap_query q = {
		    .size = sizeof(q),
		    .query_flags =
			TP_PROCMAP_QUERY_COVERING_OR_NEXT_VMA | TP_PROCMAP_QUERY_VMA_EXECUTABLE,
		    .query_addr = addr,
		    .vma_name_size = sizeof(name),
		    .vma_name_addr = (uint64_t)(uintptr_t)name,
		};
		struct proc_mapping m = {};
		size_t plen;

		if (ioctl(fd, TP_PROCMAP_QUERY, &q)) {
			err = -errno;
			break;
		}
		if (q.vma_end <= q.vma_start || q.vma_end <= addr) {
			err = -EIO;
			break;
		}
		if ((out->nr + 1) * QUERY_BYTES_PER_MAPPING > max_bytes) {
			err = -EFBIG;
			break;
		}
		addr = q.vma_end;
		m.start = q.vma_start;
		m.end = q.vma_end;
		m.pgoff = q.vma_offset;
		m.inode = q.inode;
		m.dev_major = q.dev_major;
		m.dev_minor = q.dev_minor;
		/* vma_name_size: the name's length with its NUL, 0 when the mapping has none */
		plen = q.vma_name_size ? strnlen(name, sizeof(name) - 1) : 0;
		if (plen >= slen && !memcmp(name + plen - slen, DELETED_SUFFIX, slen)) {
			m.deleted = true;
			plen -= slen;
		}
		m.path = malloc(plen + 1);
		if (!m.path) {
			err = -ENOMEM;
			break;
		}
		memcpy(m.path, name, plen);
		m.path[plen] = '\0';
		err = maps_push(out, &cap, &m);
		if (err)
			break;
	}
	/* ENOENT: no mapping past the last one; ESRCH: the process's memory is gone (it exited
	 * after the open): no mappings, as its text would be empty */
	if (err == -ENOENT)
		err = 0;
	if (err == -ESRCH) {
		proc_maps__clear(out);
		err = 0;
	}
	if (err) {
		proc_maps__clear(out);
		return err;
	}
	return out->nr > INT32_MAX ? INT32_MAX : (int)out->nr;
}

/* Loads from the file since start (read), and of those by PROCMAP_QUERY (queried). */
static struct {
	uint64_t read, queried;
} load_counts;

/* The executable mappings of the maps file at path, by query or from the text; *size: what
 * counted against max_bytes (the text's length, or 64 bytes per mapping queried). */
static int maps_load_file(const char *path, size_t max_bytes, struct proc_maps *out, size_t *size)
{
	char *text;
	size_t len;
	int fd, err;

	out->v = NULL;
	out->nr = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	err = maps_query(fd, max_bytes, out);
	*size = out->nr * QUERY_BYTES_PER_MAPPING;
	if (err >= 0) {
		__atomic_fetch_add(&load_counts.queried, 1, __ATOMIC_RELAXED);
	} else if (err == -ENOTTY || err == -EINVAL) {
		/* before 6.11 (or not procfs): the text, read from the same file */
		err = read_fd(fd, max_bytes, &text, &len);
		if (!err) {
			err = proc_maps__parse(text, len, out);
			*size = len;
			free(text);
		}
	}
	close(fd);
	__atomic_fetch_add(&load_counts.read, 1, __ATOMIC_RELAXED);
	return err;
}

int proc_maps__copy(const struct proc_maps *src, struct proc_maps *dst)
{
	dst->nr = 0;
	dst->v = src->nr ? calloc(src->nr, sizeof(*dst->v)) : NULL;
	if (src->nr && !dst->v)
		return -ENOMEM;
	for (size_t i = 0; i < src->nr; i++) {
		dst->v[i] = src->v[i];
		dst->v[i].path = strdup(src->v[i].path);
		if (!dst->v[i].path) {
			dst->nr = i;
			proc_maps__clear(dst);
			return -ENOMEM;
		}
		dst->nr = i + 1;
	}
	return 0;
}

/* ---- mappings shared within a round ---- */

#define SHARED_MAPS 64 /* processes whose mappings one round keeps (direct-mapped by pid) */

static struct {
	pthread_mutex_t lock;
	bool open;	/* in a round */
	uint64_t round; /* the current or last round */
	uint64_t shared;
	struct {
		uint64_t round; /* 0: empty */
		uint32_t pid;
		char root[64];
		size_t size; /* what counted against the loader's max_bytes */
		int err; /* 0, or -ENOENT/-ESRCH: the process was gone (no module opens again) */
		struct proc_maps maps;
	} v[SHARED_MAPS];
} maps_cache = {.lock = PTHREAD_MUTEX_INITIALIZER, .round = 1};

/* The mmap records that serve loads under one proc root (mmap_records.h), and the check of them
 * against /proc. */
static struct {
	struct mmap_records *r;
	char root[64];
	bool check;
	uint64_t checked, mismatched;
} records;

void proc_maps__use_records(struct mmap_records *r, const char *proc_root, bool check)
{
	records.r = r;
	snprintf(records.root, sizeof(records.root), "%s", r ? proc_root : "");
	records.check = check;
}

bool proc_maps__records_is_process(const char *proc_root, uint32_t pid, uint64_t start_ns)
{
	return records.r && !strcmp(proc_root, records.root) &&
	       mmap_records__is_process(records.r, pid, start_ns) > 0;
}

struct mmap_records *proc_maps__records(void)
{
	return records.r;
}

void proc_maps__records_check_stats(uint64_t *checked, uint64_t *mismatched)
{
	*checked = __atomic_load_n(&records.checked, __ATOMIC_RELAXED);
	*mismatched = __atomic_load_n(&records.mismatched, __ATOMIC_RELAXED);
}

/* Whether every mapping of fresh (read from /proc after have was given) is in have, the same:
 * the records may hold more (ranges unmapped since, or mapped after the read), and say a file is
 * there that was deleted after it was mapped (the users of a path check its inode). */
static bool maps_cover(const struct proc_maps *have, const struct proc_maps *fresh)
{
	for (size_t i = 0; i < fresh->nr; i++) {
		const struct proc_mapping *f = &fresh->v[i], *m = proc_maps__find(have, f->start);

		if (!m || m->start != f->start || m->end != f->end || m->inode != f->inode ||
		    (f->inode && m->pgoff != f->pgoff) || m->dev_major != f->dev_major ||
		    m->dev_minor != f->dev_minor || (m->deleted && !f->deleted) ||
		    strcmp(m->path, f->path))
			return false;
	}
	return true;
}

/* The check (TAILPROF_MAPS_RECORDS_CHECK): the maps file of pid against what the records gave;
 * a mismatch is counted and its first ones logged. */
static void check_records(const char *path, uint32_t pid, size_t max_bytes,
			  const struct proc_maps *have)
{
	struct proc_maps fresh, again;
	size_t size;

	if (maps_load_file(path, max_bytes, &fresh, &size) < 0)
		return; /* gone meanwhile */
	/* what it mapped after the records were taken is in them now */
	if (!maps_cover(have, &fresh) &&
	    (mmap_records__maps(records.r, pid, 0, max_bytes / QUERY_BYTES_PER_MAPPING, &again) <
		 0 ||
	     !maps_cover(&again, &fresh))) {
		if (__atomic_fetch_add(&records.mismatched, 1, __ATOMIC_RELAXED) < 5) {
			for (size_t i = 0; i < fresh.nr; i++)
				pr_warn("maps records check: pid %u: /proc has %" PRIx64 "-%" PRIx64
					" %" PRIx64 " %u:%u %" PRIu64 " %s%s",
					pid, fresh.v[i].start, fresh.v[i].end, fresh.v[i].pgoff,
					fresh.v[i].dev_major, fresh.v[i].dev_minor,
					fresh.v[i].inode, fresh.v[i].path,
					fresh.v[i].deleted ? " (deleted)" : "");
			for (size_t i = 0; i < have->nr; i++)
				pr_warn("maps records check: pid %u: records have %" PRIx64
					"-%" PRIx64 " %" PRIx64 " %u:%u %" PRIu64 " %s%s",
					pid, have->v[i].start, have->v[i].end, have->v[i].pgoff,
					have->v[i].dev_major, have->v[i].dev_minor,
					have->v[i].inode, have->v[i].path,
					have->v[i].deleted ? " (deleted)" : "");
		}
		proc_maps__clear(&again);
	}
	__atomic_fetch_add(&records.checked, 1, __ATOMIC_RELAXED);
	proc_maps__clear(&fresh);
}

int proc_maps__load(const char *proc_root, uint32_t pid, size_t max_bytes, struct proc_maps *out)
{
	char path[PATH_MAX];
	size_t slot = pid % SHARED_MAPS;
	bool cacheable = strlen(proc_root) < sizeof(maps_cache.v[0].root);
	struct proc_maps copy;
	size_t size = 0;
	int err;

	out->v = NULL;
	out->nr = 0;
	if (snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	pthread_mutex_lock(&maps_cache.lock);
	cacheable &= maps_cache.open;
	if (cacheable && maps_cache.v[slot].round == maps_cache.round &&
	    maps_cache.v[slot].pid == pid && !strcmp(maps_cache.v[slot].root, proc_root) &&
	    maps_cache.v[slot].size <= max_bytes) {
		err = maps_cache.v[slot].err ? maps_cache.v[slot].err
					     : proc_maps__copy(&maps_cache.v[slot].maps, out);
		if (!err)
			maps_cache.shared++;
		pthread_mutex_unlock(&maps_cache.lock);
		return err ? err : (out->nr > INT32_MAX ? INT32_MAX : (int)out->nr);
	}
	pthread_mutex_unlock(&maps_cache.lock);
	if (records.r && !strcmp(proc_root, records.root)) {
		err =
		    mmap_records__maps(records.r, pid, 0, max_bytes / QUERY_BYTES_PER_MAPPING, out);
		if (err >= 0 && records.check)
			check_records(path, pid, max_bytes, out);
		if (err != -ENOENT)
			return err;
	}
	err = maps_load_file(path, max_bytes, out, &size);
	if (!cacheable || (err < 0 && err != -ENOENT && err != -ESRCH))
		return err;
	copy = (struct proc_maps){0};
	if (err >= 0 && proc_maps__copy(out, &copy))
		return err;
	pthread_mutex_lock(&maps_cache.lock);
	if (!maps_cache.open) {
		pthread_mutex_unlock(&maps_cache.lock);
		proc_maps__clear(&copy);
		return err;
	}
	proc_maps__clear(&maps_cache.v[slot].maps);
	maps_cache.v[slot].round = maps_cache.round;
	maps_cache.v[slot].pid = pid;
	maps_cache.v[slot].size = size;
	maps_cache.v[slot].err = err < 0 ? err : 0;
	snprintf(maps_cache.v[slot].root, sizeof(maps_cache.v[slot].root), "%s", proc_root);
	maps_cache.v[slot].maps = copy;
	pthread_mutex_unlock(&maps_cache.lock);
	return err;
}

int proc_maps__load_process(const char *proc_root, uint32_t pid, uint64_t start_ns,
			    size_t max_bytes, struct proc_maps *out, bool *known)
{
	char path[PATH_MAX];
	int err;

	*known = false;
	if (records.r && start_ns && !strcmp(proc_root, records.root)) {
		err = mmap_records__maps(records.r, pid, start_ns,
					 max_bytes / QUERY_BYTES_PER_MAPPING, out);
		if (err >= 0) {
			*known = true;
			if (records.check &&
			    snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid) <
				(int)sizeof(path) &&
			    proc_maps__records_is_process(proc_root, pid, start_ns))
				check_records(path, pid, max_bytes, out);
		}
		if (err != -ENOENT)
			return err;
	}
	return proc_maps__load(proc_root, pid, max_bytes, out);
}

void proc_maps__offer(const char *proc_root, uint32_t pid, const struct proc_maps *maps)
{
	size_t slot = pid % SHARED_MAPS;
	struct proc_maps copy;

	if (strlen(proc_root) >= sizeof(maps_cache.v[0].root) || proc_maps__copy(maps, &copy))
		return;
	pthread_mutex_lock(&maps_cache.lock);
	if (!maps_cache.open) {
		pthread_mutex_unlock(&maps_cache.lock);
		proc_maps__clear(&copy);
		return;
	}
	proc_maps__clear(&maps_cache.v[slot].maps);
	maps_cache.v[slot].round = maps_cache.round;
	maps_cache.v[slot].pid = pid;
	maps_cache.v[slot].size = 0;
	maps_cache.v[slot].err = 0;
	snprintf(maps_cache.v[slot].root, sizeof(maps_cache.v[slot].root), "%s", proc_root);
	maps_cache.v[slot].maps = copy;
	pthread_mutex_unlock(&maps_cache.lock);
}

void proc_maps__begin_round(void)
{
	pthread_mutex_lock(&maps_cache.lock);
	maps_cache.round++;
	maps_cache.open = true;
	pthread_mutex_unlock(&maps_cache.lock);
}

void proc_maps__end_round(void)
{
	pthread_mutex_lock(&maps_cache.lock);
	maps_cache.open = false;
	maps_cache.round++;
	pthread_mutex_unlock(&maps_cache.lock);
}

void proc_maps__forget(uint32_t pid)
{
	size_t slot = pid % SHARED_MAPS;

	pthread_mutex_lock(&maps_cache.lock);
	if (maps_cache.v[slot].pid == pid)
		maps_cache.v[slot].round = 0;
	pthread_mutex_unlock(&maps_cache.lock);
}

void proc_maps__read_stats(uint64_t *shared, uint64_t *read, uint64_t *queried)
{
	pthread_mutex_lock(&maps_cache.lock);
	*shared = maps_cache.shared;
	pthread_mutex_unlock(&maps_cache.lock);
	*read = __atomic_load_n(&load_counts.read, __ATOMIC_RELAXED);
	*queried = __atomic_load_n(&load_counts.queried, __ATOMIC_RELAXED);
}
