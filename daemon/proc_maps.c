// SPDX-License-Identifier: GPL-2.0-only
/* Parses /proc/PID/maps text into the executable mappings of a process (see proc(5)). */
#include "proc_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DELETED_SUFFIX " (deleted)"

bool proc_mapping__is_file(const struct proc_mapping *m)
{
	return m->inode != 0 && m->path[0] == '/';
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

int proc_maps__parse(const char *text, size_t len, struct proc_maps *out)
{
	const char *p = text, *end = text + len;
	struct proc_mapping *v = NULL;
	size_t nr = 0, cap = 0;

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
		if (nr == cap) {
			size_t ncap = cap ? cap * 2 : 32;
			struct proc_mapping *nv = realloc(v, ncap * sizeof(*v));

			if (!nv)
				goto enomem;
			v = nv;
			cap = ncap;
		}
		m.path = malloc(plen + 1);
		if (!m.path)
			goto enomem;
		memcpy(m.path, path, plen);
		m.path[plen] = '\0';
		v[nr++] = m;
	}
	/* The kernel lists mappings in address order; sort anyway so lookups can bisect. */
	if (nr > 1)
		qsort(v, nr, sizeof(*v), cmp_mapping);
	out->v = v;
	out->nr = nr;
	return nr > INT32_MAX ? INT32_MAX : (int)nr;

enomem:
	out->v = v;
	out->nr = nr;
	proc_maps__clear(out);
	return -ENOMEM;
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

int proc_read_file(const char *path, size_t max_bytes, char **buf, size_t *len)
{
	size_t cap = 16384, n = 0;
	char *b = NULL;
	int fd, err;

	*buf = NULL;
	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	b = malloc(cap);
	if (!b) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			/* room for max_bytes and a read that shows the file is longer */
			size_t limit = max_bytes + 4096;
			char *nb;

			if (cap >= limit) {
				err = -EFBIG;
				goto out;
			}
			cap = cap * 2 > limit ? limit : cap * 2;
			nb = realloc(b, cap);
			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += r;
	}
	if (n > max_bytes) {
		err = -EFBIG;
		goto out;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	b = NULL;
	err = 0;
out:
	free(b);
	close(fd);
	return err;
}

/* ---- maps text shared within a round ---- */

#define SHARED_MAPS 64 /* processes whose maps text one round keeps (direct-mapped by pid) */

static struct {
	pthread_mutex_t lock;
	bool open;	/* in a round */
	uint64_t round; /* the current or last round */
	uint64_t shared, read;
	struct {
		uint64_t round; /* 0: empty */
		uint32_t pid;
		char root[64];
		char *text;
		size_t len;
	} v[SHARED_MAPS];
} maps_cache = {.lock = PTHREAD_MUTEX_INITIALIZER, .round = 1};

int proc_maps__read(const char *proc_root, uint32_t pid, size_t max_bytes, char **buf, size_t *len)
{
	char path[PATH_MAX];
	size_t slot = pid % SHARED_MAPS;
	bool cacheable = strlen(proc_root) < sizeof(maps_cache.v[0].root);
	char *text;
	int err;

	if (snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	pthread_mutex_lock(&maps_cache.lock);
	cacheable &= maps_cache.open;
	if (cacheable && maps_cache.v[slot].round == maps_cache.round &&
	    maps_cache.v[slot].pid == pid && !strcmp(maps_cache.v[slot].root, proc_root) &&
	    maps_cache.v[slot].len <= max_bytes) {
		text = malloc(maps_cache.v[slot].len + 1);
		if (text) {
			memcpy(text, maps_cache.v[slot].text, maps_cache.v[slot].len + 1);
			*buf = text;
			*len = maps_cache.v[slot].len;
			maps_cache.shared++;
		}
		pthread_mutex_unlock(&maps_cache.lock);
		return text ? 0 : -ENOMEM;
	}
	pthread_mutex_unlock(&maps_cache.lock);
	err = proc_read_file(path, max_bytes, buf, len);
	if (err || !cacheable)
		return err;
	text = malloc(*len + 1);
	if (!text)
		return 0;
	memcpy(text, *buf, *len + 1);
	pthread_mutex_lock(&maps_cache.lock);
	maps_cache.read++;
	if (!maps_cache.open) {
		pthread_mutex_unlock(&maps_cache.lock);
		free(text);
		return 0;
	}
	free(maps_cache.v[slot].text);
	maps_cache.v[slot].round = maps_cache.round;
	maps_cache.v[slot].pid = pid;
	snprintf(maps_cache.v[slot].root, sizeof(maps_cache.v[slot].root), "%s", proc_root);
	maps_cache.v[slot].text = text;
	maps_cache.v[slot].len = *len;
	pthread_mutex_unlock(&maps_cache.lock);
	return 0;
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

void proc_maps__read_stats(uint64_t *shared, uint64_t *read)
{
	pthread_mutex_lock(&maps_cache.lock);
	*shared = maps_cache.shared;
	*read = maps_cache.read;
	pthread_mutex_unlock(&maps_cache.lock);
}
