// SPDX-License-Identifier: GPL-2.0-only
/* Parses /proc/PID/maps text into the executable mappings of a process (see proc(5)). */
#include "proc_maps.h"

#include <errno.h>
#include <fcntl.h>
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
