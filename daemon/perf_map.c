// SPDX-License-Identifier: GPL-2.0-only
/* JIT perf maps: parsing with later-entry-wins semantics, and a safe open. */
#include "perf_map.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

struct pm_entry {
	uint64_t start, end;
	const char *name; /* NUL-terminated in the parser's copy of the text */
	uint32_t seq;	  /* line order: a higher seq wins */
};

static bool hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	const char *digits = s;

	while (s < end) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (v >> 60)
			return false;
		v = v << 4 | d;
		s++;
	}
	if (s == digits)
		return false;
	*p = s;
	*out = v;
	return true;
}

static int cmp_start(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A binary max-heap of entry indexes ordered by seq. */
struct heap {
	uint32_t *v;
	size_t n;
};

static void heap_push(struct heap *h, const struct pm_entry *e, uint32_t i)
{
	size_t k = h->n++;

	h->v[k] = i;
	while (k && e[h->v[(k - 1) / 2]].seq < e[h->v[k]].seq) {
		uint32_t t = h->v[k];

		h->v[k] = h->v[(k - 1) / 2];
		h->v[(k - 1) / 2] = t;
		k = (k - 1) / 2;
	}
}

static void heap_pop(struct heap *h, const struct pm_entry *e)
{
	size_t k = 0;

	h->v[0] = h->v[--h->n];
	for (;;) {
		size_t l = 2 * k + 1, r = l + 1, m = k;

		if (l < h->n && e[h->v[l]].seq > e[h->v[m]].seq)
			m = l;
		if (r < h->n && e[h->v[r]].seq > e[h->v[m]].seq)
			m = r;
		if (m == k)
			break;
		uint32_t t = h->v[k];

		h->v[k] = h->v[m];
		h->v[m] = t;
		k = m;
	}
}

/* Feeds the disjoint pieces of the entries, each owned by the latest entry covering it, to b: a
 * sweep over starts with a heap of the open entries by seq (ended ones are dropped lazily). */
static int add_pieces(struct pm_entry *e, size_t n, struct symtab_builder *b)
{
	struct heap h = {.v = malloc((n ? n : 1) * sizeof(*h.v))};
	size_t next = 0;
	uint64_t pos = 0;
	int err = 0;

	if (!h.v)
		return -ENOMEM;
	qsort(e, n, sizeof(*e), cmp_start);
	while (!err && (next < n || h.n)) {
		if (!h.n)
			pos = e[next].start;
		while (next < n && e[next].start <= pos)
			heap_push(&h, e, next++);
		while (h.n && e[h.v[0]].end <= pos)
			heap_pop(&h, e);
		if (!h.n)
			continue;
		const struct pm_entry *top = &e[h.v[0]];
		uint64_t to = top->end;

		if (next < n && e[next].start < to)
			to = e[next].start;
		err = symtab_builder__add(b, pos, to, top->name, 0, 0);
		pos = to;
	}
	free(h.v);
	return err;
}

int perf_map__parse(const char *text, size_t len, struct symtab *t, size_t *skipped)
{
	struct symtab_builder b = {};
	struct pm_entry *e = NULL;
	size_t n = 0, cap = 0, bad = 0;
	char *copy = malloc(len + 1);
	const char *p = copy, *end;
	int err = -ENOMEM;

	memset(t, 0, sizeof(*t));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = 0;
	end = copy + len;
	/* Only the last PERF_MAP_MAX_ENTRIES lines count: they win over earlier ones anyway,
	 * and memory stays bounded whatever the file holds. */
	{
		size_t lines = 0;

		for (const char *q = copy; (q = memchr(q, '\n', end - q)); q++)
			lines++;
		lines += len && end[-1] != '\n';
		for (; lines > PERF_MAP_MAX_ENTRIES; lines--) {
			const char *q = memchr(p, '\n', end - p);

			bad++;
			p = q ? q + 1 : end;
		}
	}
	while (p < end) {
		char *eol = memchr(p, '\n', end - p);
		const char *line = p;
		uint64_t start, size;

		if (!eol)
			eol = (char *)end;
		*eol = 0;
		if (eol > p && eol[-1] == '\r')
			eol[-1] = 0;
		if (!hex(&p, eol, &start) || *p != ' ' || (p++, !hex(&p, eol, &size)) ||
		    *p != ' ' || !p[1] || !size || start + size < start) {
			bad += *line != 0;
			p = eol + 1;
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 256;
			struct pm_entry *ne = realloc(e, ncap * sizeof(*ne));

			if (!ne || ncap > UINT32_MAX)
				goto out;
			e = ne;
			cap = ncap;
		}
		e[n] = (struct pm_entry){start, start + size, p + 1, (uint32_t)n};
		n++;
		p = eol + 1;
	}
	err = add_pieces(e, n, &b);
	if (!err)
		err = symtab_builder__finish(&b, SYMTAB_SIZED, 0, false, t);
out:
	symtab_builder__clear(&b);
	free(e);
	free(copy);
	if (skipped)
		*skipped = bad;
	return err ? err : (int)(n > INT32_MAX ? INT32_MAX : n);
}

int perf_map__open(const char *root, uint32_t ns_pid, uint32_t uid_a, uint32_t uid_b,
		   struct stat *st)
{
	struct open_how how = {
	    .flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	char rel[64];
	int dirfd, fd;

	snprintf(rel, sizeof(rel), "tmp/perf-%u.map", ns_pid);
	dirfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) {
		/* Before Linux 5.6: the last component at least is no link. */
		fd = openat(dirfd, rel, (int)how.flags);
	}
	if (fd < 0) {
		fd = -errno;
		close(dirfd);
		return fd == -ELOOP || fd == -EXDEV ? -EPERM : fd;
	}
	close(dirfd);
	if (fstat(fd, st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st->st_mode) || (st->st_uid != uid_a && st->st_uid != uid_b)) {
		close(fd);
		return -EPERM;
	}
	if ((uint64_t)st->st_size > PERF_MAP_MAX_BYTES) {
		close(fd);
		return -EFBIG;
	}
	return fd;
}
