// SPDX-License-Identifier: GPL-2.0-only
/* Refcounted interning table: chained hash of immutable byte strings. */
#include "intern.h"

#include "hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct intern_entry {
	struct intern_entry *next;
	uint64_t hash;
	uint32_t refcnt;
	uint32_t len;
	uint64_t data[]; /* 8-byte aligned payload */
};

struct intern_table {
	struct intern_entry **buckets;
	size_t nr_buckets; /* power of two */
	size_t count;
	size_t bytes;
	size_t max;	  /* 0: no cap */
	uint64_t refused; /* new values past max */
	struct intern_ops ops;
};

#define entry_of(p) ((struct intern_entry *)((char *)(p)-offsetof(struct intern_entry, data)))

struct intern_table *intern_table__new(const struct intern_ops *ops)
{
	struct intern_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nr_buckets = 1024;
	t->buckets = calloc(t->nr_buckets, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return NULL;
	}
	if (ops)
		t->ops = *ops;
	return t;
}

static void release_entry(struct intern_table *t, struct intern_entry *e)
{
	if (t->ops.release)
		t->ops.release(e->data, t->ops.ctx);
	t->count--;
	t->bytes -= sizeof(*e) + e->len;
	free(e);
}

void intern_table__free(struct intern_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr_buckets; i++) {
		struct intern_entry *e = t->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			release_entry(t, e);
		}
	}
	free(t->buckets);
	free(t);
}

static void grow(struct intern_table *t)
{
	size_t n = t->nr_buckets * 2;
	struct intern_entry **b = calloc(n, sizeof(*b));

	if (!b)
		return; /* keep the longer chains: still correct */
	for (size_t i = 0; i < t->nr_buckets; i++) {
		struct intern_entry *e = t->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nr_buckets = n;
}

void intern_table__set_max(struct intern_table *t, size_t max)
{
	t->max = max;
}

/* intern_table__get with room for limit values (0: any number); count: whether a refusal counts */
static void *get(struct intern_table *t, const void *key, size_t len, bool *inserted, size_t limit,
		 bool count)
{
	uint64_t h = hashmap__hash_bytes(key, len);
	struct intern_entry *e;

	for (e = t->buckets[h & (t->nr_buckets - 1)]; e; e = e->next) {
		if (e->hash == h && e->len == len && !memcmp(e->data, key, len)) {
			e->refcnt++;
			if (inserted)
				*inserted = false;
			return e->data;
		}
	}
	if (limit && t->count >= limit) {
		t->refused += count;
		errno = ENOSPC;
		return NULL;
	}
	e = malloc(sizeof(*e) + len);
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	e->hash = h;
	e->refcnt = 1;
	e->len = len;
	memcpy(e->data, key, len);
	if (t->count >= t->nr_buckets)
		grow(t);
	e->next = t->buckets[h & (t->nr_buckets - 1)];
	t->buckets[h & (t->nr_buckets - 1)] = e;
	t->count++;
	t->bytes += sizeof(*e) + len;
	if (t->ops.acquire)
		t->ops.acquire(e->data, t->ops.ctx);
	if (inserted)
		*inserted = true;
	return e->data;
}

void *intern_table__get(struct intern_table *t, const void *key, size_t len, bool *inserted)
{
	return get(t, key, len, inserted, t->max - t->max / 8, true);
}

void *intern_table__get_spare(struct intern_table *t, const void *key, size_t len)
{
	return get(t, key, len, NULL, t->max, false);
}

void *intern_table__ref(void *data)
{
	entry_of(data)->refcnt++;
	return data;
}

void intern_table__put(struct intern_table *t, void *data)
{
	struct intern_entry *e, **pp;

	if (!data)
		return;
	e = entry_of(data);
	if (--e->refcnt)
		return;
	for (pp = &t->buckets[e->hash & (t->nr_buckets - 1)]; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	release_entry(t, e);
}

size_t intern_table__len(const void *data)
{
	return entry_of(data)->len;
}

size_t intern_table__count(const struct intern_table *t)
{
	return t->count;
}

size_t intern_table__bytes(const struct intern_table *t)
{
	return t->bytes + t->nr_buckets * sizeof(*t->buckets);
}

size_t intern_table__max(const struct intern_table *t)
{
	return t->max;
}

uint64_t intern_table__refused(const struct intern_table *t)
{
	return t->refused;
}
