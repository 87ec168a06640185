// SPDX-License-Identifier: GPL-2.0-only
/* Refcounted interning table: an open-addressing hash of immutable byte strings. */
#include "intern.h"

#include "hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct intern_entry {
	uint64_t hash;
	uint32_t refcnt;
	uint32_t len;
	uint64_t data[]; /* 8-byte aligned payload */
};

/* A slot of the index: the entry's hash beside its pointer, so that a probe past other values
 * reads only the slot array (four slots a cache line) and touches no entry but the one that
 * matches. */
struct intern_slot {
	uint64_t hash;
	struct intern_entry *e; /* NULL: empty */
};

/* Open addressing with linear probing over a power-of-two slot array, at most half full; removal
 * shifts the rest of a run back (no tombstones), so probes stay as short as at insertion. */
struct intern_table {
	struct intern_slot *slots;
	size_t cap; /* power of two */
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
	t->cap = 1024;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	if (!t->slots) {
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
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].e)
			release_entry(t, t->slots[i].e);
	free(t->slots);
	free(t);
}

/* The first empty slot of hash h's run. */
static size_t free_slot(const struct intern_slot *slots, size_t cap, uint64_t h)
{
	size_t i = h & (cap - 1);

	while (slots[i].e)
		i = (i + 1) & (cap - 1);
	return i;
}

/* Doubles the slot array. Returns false (nothing changed) without the memory. */
static bool grow(struct intern_table *t)
{
	size_t n = t->cap * 2;
	struct intern_slot *b = calloc(n, sizeof(*b));

	if (!b)
		return false;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].e)
			b[free_slot(b, n, t->slots[i].hash)] = t->slots[i];
	free(t->slots);
	t->slots = b;
	t->cap = n;
	return true;
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
	size_t mask = t->cap - 1, i;
	struct intern_entry *e;

	for (i = h & mask; (e = t->slots[i].e); i = (i + 1) & mask) {
		if (t->slots[i].hash == h && e->len == len && !memcmp(e->data, key, len)) {
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
	/* at most half full after this one; without the memory to grow, fuller (longer probes,
	 * still right) while one slot stays empty to end them */
	if ((t->count + 1) * 2 > t->cap) {
		if (grow(t)) {
			i = free_slot(t->slots, t->cap, h);
		} else if (t->count + 2 > t->cap) {
			errno = ENOMEM;
			return NULL;
		}
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
	t->slots[i] = (struct intern_slot){.hash = h, .e = e};
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

/* Empties slot i, moving back each later slot of the run that may then stand there: a slot may
 * fill the hole unless its hash's home lies cyclically after the hole, up to the slot itself. */
static void remove_slot(struct intern_table *t, size_t i)
{
	size_t mask = t->cap - 1, j = i, home;

	for (;;) {
		j = (j + 1) & mask;
		if (!t->slots[j].e)
			break;
		home = t->slots[j].hash & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i] = (struct intern_slot){0};
}

void intern_table__put(struct intern_table *t, void *data)
{
	struct intern_entry *e;
	size_t mask, i;

	if (!data)
		return;
	e = entry_of(data);
	if (--e->refcnt)
		return;
	mask = t->cap - 1;
	for (i = e->hash & mask; t->slots[i].e; i = (i + 1) & mask) {
		if (t->slots[i].e == e) {
			remove_slot(t, i);
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
	return t->bytes + t->cap * sizeof(*t->slots);
}

size_t intern_table__max(const struct intern_table *t)
{
	return t->max;
}

uint64_t intern_table__refused(const struct intern_table *t)
{
	return t->refused;
}
