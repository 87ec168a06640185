/* SPDX-License-Identifier: GPL-2.0-only */
/* A header-only open-addressing hash index from a caller's key to a uint32_t (usually an index
 * into the caller's own array of entries, which holds the keys).
 *
 * The table stores 32 bits of each key's hash and the value; it never sees keys. Lookups take the
 * key's 64-bit hash and an equality callback that compares the key with the entry a value names,
 * so one table type serves strings, pointers and tuples. Linear probing, power-of-two capacity,
 * load factor at most 1/2, no deletion. Usage:
 *
 *	struct hashmap idx = {0};
 *	uint64_t h = hashmap__hash_str(name);
 *	uint32_t i;
 *	if (!hashmap__find(&idx, h, name_eq, &ctx, &i)) {
 *		i = append_entry(...);
 *		err = hashmap__insert(&idx, h, i);	// -ENOMEM
 *	}
 *	...
 *	hashmap__clear(&idx);
 */
#ifndef TAILPROF_HASHMAP_H
#define TAILPROF_HASHMAP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct hashmap_slot {
	uint32_t hash; /* low 32 bits of the key's hash: picks the slot and filters compares */
	uint32_t val;  /* value + 1; 0 marks an empty slot */
};

/* Zero-initialize ({0}) before use; hashmap__clear() frees it. */
struct hashmap {
	struct hashmap_slot *slots;
	size_t cap; /* 0 or a power of two */
	size_t len;
};

/* A finalizer with good low bits (MurmurHash3's fmix64), for integers and pointers. */
static inline uint64_t hashmap__mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Combines a running hash with one more 64-bit word (tuples of integers). */
static inline uint64_t hashmap__combine(uint64_t h, uint64_t word)
{
	return hashmap__mix64(h ^ (word + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

/* The high and low halves of a * b folded together: one multiply instruction mixes 128 bits. */
static inline uint64_t hashmap__fold(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* Hashes n bytes: 32 at a time in two lanes of folded multiplies (the scheme of wyhash) while 32
 * are left, then eight at a time. 2.5 times the speed of one multiply chain on a 400-byte stack
 * key, whose hashing was a tenth of tailprofd's time. Not for untrusted input that could be
 * chosen to collide. */
static inline uint64_t hashmap__hash_bytes(const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xff51afd7ed558ccdULL);
	uint64_t w;

	if (n >= 32) {
		uint64_t a = h, b = h ^ 0x243f6a8885a308d3ULL, w1, w2, w3;

		for (; n >= 32; p += 32, n -= 32) {
			memcpy(&w, p, 8);
			memcpy(&w1, p + 8, 8);
			memcpy(&w2, p + 16, 8);
			memcpy(&w3, p + 24, 8);
			a = hashmap__fold(w ^ a, w1 ^ 0xa0761d6478bd642fULL);
			b = hashmap__fold(w2 ^ b, w3 ^ 0xe7037ed1a0b428dbULL);
		}
		h = hashmap__fold(a ^ 0x8ebc6af09c88c6e3ULL, b ^ 0x589965cc75374cc3ULL);
	}
	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
		h ^= h >> 29;
	}
	if (n) {
		w = 0;
		memcpy(&w, p, n);
		h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
	}
	return hashmap__mix64(h);
}

static inline uint64_t hashmap__hash_str(const char *s)
{
	return hashmap__hash_bytes(s, strlen(s));
}

static inline uint64_t hashmap__hash_ptr(const void *p)
{
	return hashmap__mix64((uint64_t)(uintptr_t)p);
}

/* Looks a key up. eq(ctx, val) says whether the entry that val names holds the key. Returns true
 * and *val when found. An empty map (never inserted into) finds nothing. */
static inline bool hashmap__find(const struct hashmap *m, uint64_t hash,
				 bool (*eq)(const void *ctx, uint32_t val), const void *ctx,
				 uint32_t *val)
{
	uint32_t h = (uint32_t)hash;
	size_t i;

	if (!m->cap)
		return false;
	for (i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		const struct hashmap_slot *s = &m->slots[i];

		if (!s->val)
			return false;
		if (s->hash == h && eq(ctx, s->val - 1)) {
			*val = s->val - 1;
			return true;
		}
	}
}

static inline void hashmap__place(struct hashmap_slot *slots, size_t cap, uint32_t h,
				  uint32_t stored)
{
	size_t i;

	for (i = h & (cap - 1); slots[i].val; i = (i + 1) & (cap - 1))
		;
	slots[i].hash = h;
	slots[i].val = stored;
}

/* Makes room for n entries in all without growing again. Returns 0 or -ENOMEM. */
static inline int hashmap__reserve(struct hashmap *m, size_t n)
{
	struct hashmap_slot *slots;
	size_t cap = m->cap ? m->cap : 16, i;

	while (cap / 2 < n) {
		if (cap > SIZE_MAX / 2 / sizeof(*slots))
			return -ENOMEM;
		cap *= 2;
	}
	if (cap == m->cap)
		return 0;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++)
		if (m->slots[i].val)
			hashmap__place(slots, cap, m->slots[i].hash, m->slots[i].val);
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return 0;
}

/* Adds val under hash; the caller has checked with hashmap__find() that the key is absent.
 * val must be below UINT32_MAX. Returns 0, -ENOMEM, or -EOVERFLOW for val == UINT32_MAX. */
static inline int hashmap__insert(struct hashmap *m, uint64_t hash, uint32_t val)
{
	int err;

	if (val == UINT32_MAX)
		return -EOVERFLOW;
	err = hashmap__reserve(m, m->len + 1);
	if (err)
		return err;
	hashmap__place(m->slots, m->cap, (uint32_t)hash, val + 1);
	m->len++;
	return 0;
}

/* Frees the slots and leaves an empty map, ready for reuse. */
static inline void hashmap__clear(struct hashmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = 0;
	m->len = 0;
}

#endif
