// SPDX-License-Identifier: GPL-2.0-only
/* Per-object caches of source lines under one lock and one budget, filled by query threads'
 * readers from DWARF. */
#include "source_lines.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "demangle.h"
#include "elf_object.h"
#include "hashmap.h"
#include "sysinfo.h"

/* DWARF files one reader keeps open at once (each holds a file descriptor): past it they go back
 * to the pool, to be taken again if needed. */
#define READER_MAX_OPEN 64
/* DWARF readers kept open between profiles, since opening one costs up to a few hundred ms (a
 * compressed debug file is decompressed whole, libc6-dbg's in 270 ms) and their parsed CUs are
 * read again otherwise: at most POOL_MAX, holding at most POOL_BYTES of heap as
 * dwarf_lines__heap_bytes() estimates it, none idle for longer than POOL_IDLE_NS (looked at when
 * a profile takes or returns one); least recently used closed first. */
#define POOL_MAX     16
#define POOL_BYTES   (128ull << 20)
#define POOL_IDLE_NS (60ull * 1000 * 1000 * 1000)

/* A string in a cache's pool: offset + 1, 0 for NULL. */
typedef uint32_t str_ref;

struct cached_line {
	str_ref function, system_name, file;
	uint32_t line, start_line;
};

/* An address looked up: lines[first .. first + nr) (nr 0: DWARF has no line for it). */
struct cached_addr {
	uint64_t addr;
	uint32_t first, nr;
};

/* What one object's lookups found. Everything here is under `lock`. */
struct line_cache {
	struct line_cache *prev, *next; /* most recently used first */
	struct object *obj;
	bool unavailable; /* the DWARF could not be opened: no lines, no more tries */
	struct cached_addr *addrs;
	size_t nr_addrs, cap_addrs;
	struct hashmap addr_index;
	struct cached_line *lines;
	size_t nr_lines, cap_lines;
	char *pool; /* NUL-terminated strings back to back */
	size_t pool_len, pool_cap;
	struct hashmap str_index; /* values: pool offsets */
	size_t bytes;		  /* heap bytes of all of the above */
};

/* An idle reader of obj's DWARF, returned by a profile. */
struct pooled {
	struct object *obj;
	struct dwarf_lines *dl;
	uint64_t idle_since_ns;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct line_cache *lru_head, *lru_tail;
static size_t total_bytes, budget_bytes = SOURCE_LINES_BUDGET_BYTES;
static struct source_lines_stats stats;
static struct pooled pool[POOL_MAX];
static size_t pool_n;

/* ---- the caches (under lock) ---- */

static void lru_unlink(struct line_cache *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		lru_head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		lru_tail = c->prev;
	c->prev = c->next = NULL;
}

static void lru_push(struct line_cache *c)
{
	c->next = lru_head;
	if (lru_head)
		lru_head->prev = c;
	lru_head = c;
	if (!lru_tail)
		lru_tail = c;
}

static size_t cache_bytes(const struct line_cache *c)
{
	return sizeof(*c) + c->cap_addrs * sizeof(*c->addrs) + c->cap_lines * sizeof(*c->lines) +
	       c->pool_cap + (c->addr_index.cap + c->str_index.cap) * sizeof(struct hashmap_slot);
}

static void cache_free(struct line_cache *c)
{
	lru_unlink(c);
	total_bytes -= c->bytes;
	stats.objects--;
	c->obj->lines = NULL;
	free(c->addrs);
	free(c->lines);
	free(c->pool);
	hashmap__clear(&c->addr_index);
	hashmap__clear(&c->str_index);
	free(c);
}

/* obj's cache, created when missing (NULL on ENOMEM), made the most recently used. */
static struct line_cache *cache_of(struct object *obj)
{
	struct line_cache *c = obj->lines;

	if (c) {
		if (lru_head != c) {
			lru_unlink(c);
			lru_push(c);
		}
		return c;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->obj = obj;
	c->bytes = cache_bytes(c);
	total_bytes += c->bytes;
	stats.objects++;
	obj->lines = c;
	lru_push(c);
	return c;
}

static bool addr_eq(const void *ctx, uint32_t i)
{
	const struct line_cache *c = ((const void *const *)ctx)[0];

	return c->addrs[i].addr == *(const uint64_t *)((const void *const *)ctx)[1];
}

static const struct cached_addr *cache_find(const struct line_cache *c, uint64_t addr)
{
	const void *ctx[2] = {c, &addr};
	uint32_t i;

	if (!hashmap__find(&c->addr_index, hashmap__mix64(addr), addr_eq, ctx, &i))
		return NULL;
	return &c->addrs[i];
}

static bool pool_eq(const void *ctx, uint32_t off)
{
	const struct line_cache *c = ((const void *const *)ctx)[0];

	return !strcmp(c->pool + off, ((const void *const *)ctx)[1]);
}

/* s in c's pool, added when missing. Returns 0 and *ref, or -ENOMEM. */
static int pool_intern(struct line_cache *c, const char *s, str_ref *ref)
{
	const void *ctx[2] = {c, s};
	uint64_t h;
	size_t len;
	uint32_t off;

	*ref = 0;
	if (!s)
		return 0;
	h = hashmap__hash_str(s);
	if (hashmap__find(&c->str_index, h, pool_eq, ctx, &off)) {
		*ref = off + 1;
		return 0;
	}
	len = strlen(s) + 1;
	if (c->pool_len + len >= UINT32_MAX - 1)
		return -ENOMEM;
	if (ARRAY_GROW(c->pool, c->pool_cap, c->pool_len + len))
		return -ENOMEM;
	off = c->pool_len;
	if (hashmap__insert(&c->str_index, h, off))
		return -ENOMEM;
	memcpy(c->pool + off, s, len);
	c->pool_len += len;
	*ref = off + 1;
	return 0;
}

/* Records the n lines of addr in c (already there: nothing). Returns 0 or -ENOMEM (c may then
 * hold unused strings, which is harmless). */
static int cache_add(struct line_cache *c, uint64_t addr, const struct source_line *lines, size_t n)
{
	struct cached_addr *a;

	if (cache_find(c, addr))
		return 0;
	if (c->nr_lines + n > UINT32_MAX || ARRAY_GROW(c->addrs, c->cap_addrs, c->nr_addrs + 1) ||
	    ARRAY_GROW(c->lines, c->cap_lines, c->nr_lines + n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct cached_line *l = &c->lines[c->nr_lines + i];

		if (pool_intern(c, lines[i].function, &l->function) ||
		    pool_intern(c, lines[i].system_name, &l->system_name) ||
		    pool_intern(c, lines[i].file, &l->file))
			return -ENOMEM;
		l->line = lines[i].line;
		l->start_line = lines[i].start_line;
	}
	if (hashmap__insert(&c->addr_index, hashmap__mix64(addr), c->nr_addrs))
		return -ENOMEM;
	a = &c->addrs[c->nr_addrs++];
	*a = (struct cached_addr){.addr = addr, .first = c->nr_lines, .nr = n};
	c->nr_lines += n;
	return 0;
}

/* Accounts for c's growth, then drops the least recently used caches while all of them are
 * over the budget: c (the most recently used) last, when it alone is over. */
static void enforce_budget(struct line_cache *c)
{
	total_bytes -= c->bytes;
	c->bytes = cache_bytes(c);
	total_bytes += c->bytes;
	while (total_bytes > budget_bytes && lru_tail) {
		struct line_cache *victim = lru_tail;

		cache_free(victim);
		stats.evicted_objects++;
		if (victim == c)
			break;
	}
}

/* ---- the pool of open readers (under lock) ---- */

/* Moves pool entry i into closing[*n] (closed by the caller, after the lock). */
static void pool_drop(size_t i, struct dwarf_lines **closing, size_t *n)
{
	closing[(*n)++] = pool[i].dl;
	pool[i] = pool[--pool_n];
}

/* Drops readers idle too long, then the least recently used while the pool is over its count or
 * bytes (extra: one about to be added). */
static void pool_trim(uint64_t now, size_t extra, uint64_t extra_bytes,
		      struct dwarf_lines **closing, size_t *n)
{
	uint64_t bytes = extra_bytes;

	for (size_t i = pool_n; i-- > 0;)
		if (now - pool[i].idle_since_ns > POOL_IDLE_NS)
			pool_drop(i, closing, n);
	for (size_t i = 0; i < pool_n; i++)
		bytes += dwarf_lines__heap_bytes(pool[i].dl);
	while (pool_n && (pool_n + extra > POOL_MAX || bytes > POOL_BYTES)) {
		size_t oldest = 0;

		for (size_t i = 1; i < pool_n; i++)
			if (pool[i].idle_since_ns < pool[oldest].idle_since_ns)
				oldest = i;
		bytes -= dwarf_lines__heap_bytes(pool[oldest].dl);
		pool_drop(oldest, closing, n);
	}
}

static void close_all(struct dwarf_lines **closing, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dwarf_lines__close(closing[i]);
}

/* obj's reader from the pool (the caller owns it now), or NULL. */
static struct dwarf_lines *pool_take(struct object *obj)
{
	struct dwarf_lines *closing[POOL_MAX], *dl = NULL;
	size_t n = 0;

	pthread_mutex_lock(&lock);
	pool_trim(sysinfo__mono_ns(), 0, 0, closing, &n);
	for (size_t i = 0; i < pool_n; i++) {
		if (pool[i].obj == obj) {
			dl = pool[i].dl;
			pool[i] = pool[--pool_n];
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	close_all(closing, n);
	return dl;
}

/* Returns obj's reader dl to the pool (closed when the pool has one for obj, or no room). */
static void pool_give(struct object *obj, struct dwarf_lines *dl)
{
	struct dwarf_lines *closing[POOL_MAX + 1];
	uint64_t bytes = dwarf_lines__heap_bytes(dl);
	size_t n = 0;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; dl && i < pool_n; i++)
		if (pool[i].obj == obj)
			closing[n++] = dl, dl = NULL;
	if (dl && bytes <= POOL_BYTES) {
		pool_trim(sysinfo__mono_ns(), 1, bytes, closing, &n);
		pool[pool_n++] = (struct pooled){obj, dl, sysinfo__mono_ns()};
	} else if (dl) {
		closing[n++] = dl;
	}
	pthread_mutex_unlock(&lock);
	close_all(closing, n);
}

/* ---- readers ---- */

struct reader_obj {
	struct object *obj;
	struct dwarf_lines *dl; /* NULL: not open (yet, or any more) */
	bool failed;		/* could not be opened in this query */
};

struct line_reader {
	uint64_t read_ns, spent_ns; /* DWARF reading allowed, done */
	struct reader_obj *objs;
	size_t nr_objs, cap_objs, nr_open;
	struct hashmap obj_index;
	char **strs; /* strings returned, each once */
	size_t nr_strs, cap_strs;
	struct hashmap str_index;
};

struct line_reader *line_reader__new(uint64_t read_ns)
{
	struct line_reader *r = calloc(1, sizeof(*r));

	if (r)
		r->read_ns = read_ns ? read_ns : SOURCE_LINES_READ_NS;
	return r;
}

void line_reader__free(struct line_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nr_objs; i++)
		if (r->objs[i].dl)
			pool_give(r->objs[i].obj, r->objs[i].dl);
	for (size_t i = 0; i < r->nr_strs; i++)
		free(r->strs[i]);
	free(r->objs);
	free(r->strs);
	hashmap__clear(&r->obj_index);
	hashmap__clear(&r->str_index);
	free(r);
}

static bool reader_str_eq(const void *ctx, uint32_t i)
{
	const struct line_reader *r = ((const void *const *)ctx)[0];

	return !strcmp(r->strs[i], ((const void *const *)ctx)[1]);
}

/* The reader's copy of s (NULL stays NULL; NULL on ENOMEM too: the line loses that string). */
static const char *reader_str(struct line_reader *r, const char *s)
{
	const void *ctx[2] = {r, s};
	uint64_t h;
	uint32_t i;
	char *copy;

	if (!s)
		return NULL;
	h = hashmap__hash_str(s);
	if (hashmap__find(&r->str_index, h, reader_str_eq, ctx, &i))
		return r->strs[i];
	if (r->nr_strs >= UINT32_MAX - 1 || ARRAY_GROW(r->strs, r->cap_strs, r->nr_strs + 1))
		return NULL;
	copy = strdup(s);
	if (!copy || hashmap__insert(&r->str_index, h, r->nr_strs)) {
		free(copy);
		return NULL;
	}
	r->strs[r->nr_strs++] = copy;
	return copy;
}

static bool reader_obj_eq(const void *ctx, uint32_t i)
{
	const struct line_reader *r = ((const void *const *)ctx)[0];

	return r->objs[i].obj == ((const void *const *)ctx)[1];
}

/* r's entry for obj, added when missing (NULL on ENOMEM). */
static struct reader_obj *reader_obj(struct line_reader *r, struct object *obj)
{
	const void *ctx[2] = {r, obj};
	uint64_t h = hashmap__hash_ptr(obj);
	uint32_t i;

	if (hashmap__find(&r->obj_index, h, reader_obj_eq, ctx, &i))
		return &r->objs[i];
	if (ARRAY_GROW(r->objs, r->cap_objs, r->nr_objs + 1) ||
	    hashmap__insert(&r->obj_index, h, r->nr_objs))
		return NULL;
	r->objs[r->nr_objs] = (struct reader_obj){.obj = obj};
	return &r->objs[r->nr_objs++];
}

/* Opens the DWARF of obj: the first of its paths that holds the very file recorded. Returns the
 * reader or NULL with *permanent telling whether trying again is pointless (the file is gone or
 * changed, or its DWARF unreadable) rather than a passing failure (ENOMEM, out of files). */
static struct dwarf_lines *open_dwarf(const struct object *obj, bool *permanent)
{
	const struct dwarf_location *loc = &obj->dwarf;
	int err = -ENOENT;

	for (int i = 0; i < DWARF_PATHS && loc->paths[i]; i++) {
		struct dwarf_lines *dl;
		struct stat st;
		int fd = open_regular_file(loc->paths[i], &st);

		if (fd < 0) {
			err = fd;
			continue;
		}
		if ((uint64_t)st.st_dev != loc->dev || (uint64_t)st.st_ino != loc->inode ||
		    (uint64_t)st.st_size != loc->size_bytes ||
		    (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec != loc->mtime_ns) {
			close(fd);
			err = -ESTALE;
			continue;
		}
		dl = dwarf_lines__open(fd);
		err = dl ? 0 : -errno;
		close(fd);
		if (dl)
			return dl;
		break;
	}
	*permanent = err != -ENOMEM && err != -EMFILE && err != -ENFILE;
	return NULL;
}

/* Looks addr up in the DWARF of obj through r (opening it if needed) into out[0 ..
 * SOURCE_LINES_MAX). Returns n, or -1 when the DWARF cannot be read (*permanent as
 * open_dwarf()). */
static int read_lines(struct line_reader *r, struct object *obj, uint64_t addr,
		      struct source_line *out, bool *permanent)
{
	struct dwarf_line dl_out[SOURCE_LINES_MAX];
	struct reader_obj *ro = reader_obj(r, obj);
	size_t n;

	*permanent = false;
	if (!ro || ro->failed)
		return -1;
	if (!ro->dl) {
		if (r->nr_open == READER_MAX_OPEN) {
			for (size_t i = 0; i < r->nr_objs; i++) {
				if (r->objs[i].dl)
					pool_give(r->objs[i].obj, r->objs[i].dl);
				r->objs[i].dl = NULL;
			}
			r->nr_open = 0;
		}
		ro->dl = pool_take(obj);
		if (!ro->dl) {
			ro->dl = open_dwarf(obj, permanent);
			if (!ro->dl) {
				ro->failed = true;
				return -1;
			}
			pthread_mutex_lock(&lock);
			stats.dwarf_reads++;
			pthread_mutex_unlock(&lock);
		}
		r->nr_open++;
	}
	n = dwarf_lines__lookup(ro->dl, addr, dl_out, SOURCE_LINES_MAX);
	for (size_t i = 0; i < n; i++) {
		const char *mangled = dl_out[i].linkage_name;
		char *readable = mangled ? demangle(mangled) : NULL;

		out[i] = (struct source_line){
		    .function = reader_str(r, readable ? readable : dl_out[i].name),
		    .system_name = mangled ? reader_str(r, mangled) : NULL,
		    .file = reader_str(r, dl_out[i].file),
		    .line = dl_out[i].line,
		    .start_line = dl_out[i].decl_line,
		};
		free(readable);
	}
	return (int)n;
}

/* Which of n lines is the i-th of the k < n kept: the innermost k - 1, then the outermost (as
 * dwarf_lines__lookup() cuts). */
static size_t kept(size_t i, size_t k, size_t n)
{
	return i + 1 == k ? n - 1 : i;
}

size_t line_reader__lookup(struct line_reader *r, struct object *obj, uint64_t addr,
			   struct source_line *out, size_t max)
{
	struct source_line full[SOURCE_LINES_MAX];
	const struct cached_addr *a;
	struct line_cache *c;
	bool permanent;
	uint64_t t0;
	size_t k;
	int n;

	/* paths are set before the object is shared and never change */
	if (!obj->dwarf.paths[0] || !max)
		return 0;
	pthread_mutex_lock(&lock);
	c = cache_of(obj);
	if (c && c->unavailable) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	a = c ? cache_find(c, addr) : NULL;
	if (a) {
		size_t k = a->nr < max ? a->nr : max;

		for (size_t i = 0; i < k; i++) {
			const struct cached_line *l = &c->lines[a->first + kept(i, k, a->nr)];

			out[i] = (struct source_line){
			    .function =
				l->function ? reader_str(r, c->pool + l->function - 1) : NULL,
			    .system_name =
				l->system_name ? reader_str(r, c->pool + l->system_name - 1) : NULL,
			    .file = l->file ? reader_str(r, c->pool + l->file - 1) : NULL,
			    .line = l->line,
			    .start_line = l->start_line,
			};
		}
		pthread_mutex_unlock(&lock);
		return k;
	}
	if (r->spent_ns >= r->read_ns) {
		stats.deferred++;
		pthread_mutex_unlock(&lock);
		return 0;
	}
	pthread_mutex_unlock(&lock);

	t0 = sysinfo__mono_ns();
	n = read_lines(r, obj, addr, full, &permanent);
	r->spent_ns += sysinfo__mono_ns() - t0;
	pthread_mutex_lock(&lock);
	if (n < 0) {
		if (permanent && (c = cache_of(obj)) && !c->unavailable) {
			c->unavailable = true;
			stats.dwarf_failures++;
		}
		pthread_mutex_unlock(&lock);
		return 0;
	}
	/* the cache may have been dropped meanwhile, by another query over the budget */
	c = cache_of(obj);
	if (c && !cache_add(c, addr, full, (size_t)n))
		enforce_budget(c);
	pthread_mutex_unlock(&lock);
	k = (size_t)n < max ? (size_t)n : max;
	for (size_t i = 0; i < k; i++)
		out[i] = full[kept(i, k, n)];
	return k;
}

void source_lines__stats(struct source_lines_stats *st)
{
	pthread_mutex_lock(&lock);
	*st = stats;
	st->bytes = total_bytes;
	st->budget_bytes = budget_bytes;
	pthread_mutex_unlock(&lock);
}

void source_lines__set_budget(size_t bytes)
{
	pthread_mutex_lock(&lock);
	budget_bytes = bytes ? bytes : SOURCE_LINES_BUDGET_BYTES;
	while (total_bytes > budget_bytes && lru_tail) {
		cache_free(lru_tail);
		stats.evicted_objects++;
	}
	pthread_mutex_unlock(&lock);
}

void source_lines__forget(struct object *obj)
{
	struct dwarf_lines *closing[POOL_MAX];
	size_t n = 0;

	pthread_mutex_lock(&lock);
	if (obj->lines)
		cache_free(obj->lines);
	for (size_t i = pool_n; i-- > 0;)
		if (pool[i].obj == obj)
			pool_drop(i, closing, &n);
	pthread_mutex_unlock(&lock);
	close_all(closing, n);
}
