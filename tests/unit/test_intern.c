// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the interning table (intern.c) against a model: random gets and puts of values of
 * several lengths keep every stored value found at its one copy, with its reference count, through
 * growth and removals in the middle of probe runs (which shift later slots back); acquire and
 * release run once per value; the byte count returns to the empty table's. The caps are
 * test_limits.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "intern.h"

#define NR_KEYS 3000

struct model {
	void *copy;	 /* the stored copy, NULL while not stored */
	unsigned refs;	 /* references the test holds */
	uint64_t key[5]; /* the value: its first len bytes */
	size_t len;
};

struct counts {
	unsigned acquired, released;
};

static void on_acquire(void *data, void *ctx)
{
	(void)data;
	((struct counts *)ctx)->acquired++;
}

static void on_release(void *data, void *ctx)
{
	(void)data;
	((struct counts *)ctx)->released++;
}

/* A deterministic generator (xorshift64*), so that a failure repeats. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* Every value the model says is stored is found at its copy (a new reference, dropped again), and
 * one never stored is not. */
static void check_all(struct intern_table *t, struct model *m, size_t stored)
{
	for (size_t i = 0; i < NR_KEYS; i++) {
		bool inserted = true;
		void *p;

		if (!m[i].copy)
			continue;
		p = intern_table__get(t, m[i].key, m[i].len, &inserted);
		assert_ptr_equal(p, m[i].copy);
		assert_false(inserted);
		assert_int_equal(intern_table__len(p), m[i].len);
		assert_memory_equal(p, m[i].key, m[i].len);
		intern_table__put(t, p);
	}
	assert_int_equal(intern_table__count(t), stored);
}

static void test_intern_model(void **state)
{
	struct counts n = {0};
	struct intern_ops ops = {.acquire = on_acquire, .release = on_release, .ctx = &n};
	struct intern_table *t = intern_table__new(&ops);
	struct model *m = calloc(NR_KEYS, sizeof(*m));
	size_t empty_bytes = intern_table__bytes(t), stored = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;

	(void)state;
	assert_non_null(t);
	assert_non_null(m);
	for (size_t i = 0; i < NR_KEYS; i++) {
		/* lengths 1 to 40: the hash's byte tail, word and 32-byte paths */
		m[i].len = 1 + i % 40;
		for (int w = 0; w < 5; w++)
			m[i].key[w] = next_rand(&seed);
	}
	/* the same length and bytes would be one value: such a repeat is left out (len 0) */
	for (size_t i = 0; i < NR_KEYS; i++)
		for (size_t j = 0; j < i; j++)
			if (m[i].len == m[j].len && !memcmp(m[i].key, m[j].key, m[i].len))
				m[i].len = 0;
	for (int round = 0; round < 60000; round++) {
		size_t i = next_rand(&seed) % NR_KEYS;
		bool inserted;
		void *p;

		if (!m[i].len)
			continue;
		/* mostly gets while few are stored, mostly puts past two thirds of the keys */
		if (!m[i].refs || next_rand(&seed) % 3 < (stored < NR_KEYS * 2 / 3 ? 2u : 1u)) {
			p = intern_table__get(t, m[i].key, m[i].len, &inserted);
			assert_non_null(p);
			assert_int_equal(inserted, !m[i].refs);
			if (m[i].refs)
				assert_ptr_equal(p, m[i].copy);
			else
				stored++;
			m[i].copy = p;
			m[i].refs++;
		} else {
			intern_table__put(t, m[i].copy);
			if (!--m[i].refs) {
				m[i].copy = NULL;
				stored--;
			}
		}
		if (round % 5000 == 4999)
			check_all(t, m, stored);
	}
	check_all(t, m, stored);
	assert_int_equal(n.acquired - n.released, stored);
	/* every reference dropped: nothing left, and only the grown index's bytes */
	for (size_t i = 0; i < NR_KEYS; i++)
		while (m[i].refs--)
			intern_table__put(t, m[i].copy);
	assert_int_equal(intern_table__count(t), 0);
	assert_int_equal(n.acquired, n.released);
	assert_true(intern_table__bytes(t) >= empty_bytes);
	assert_int_equal(intern_table__bytes(t) % empty_bytes, 0);
	intern_table__free(t);
	free(m);
}

/* Values whose index slots collide are told apart by their bytes: one value and its prefix, and
 * the same bytes at two lengths, are three values. */
static void test_intern_lengths(void **state)
{
	struct intern_table *t = intern_table__new(NULL);
	uint64_t k[2] = {1, 0};
	void *a = intern_table__get(t, k, 16, NULL);
	void *b = intern_table__get(t, k, 8, NULL);
	void *c = intern_table__get(t, k, 9, NULL);

	(void)state;
	assert_true(a != b && b != c && a != c);
	assert_int_equal(intern_table__count(t), 3);
	assert_ptr_equal(intern_table__ref(b), b);
	intern_table__put(t, b);
	intern_table__put(t, b);
	assert_int_equal(intern_table__count(t), 2);
	assert_ptr_equal(intern_table__get(t, k, 16, NULL), a);
	assert_ptr_equal(intern_table__get(t, k, 9, NULL), c);
	intern_table__free(t); /* with references left: freed all the same */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_intern_model),
	    cmocka_unit_test(test_intern_lengths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
