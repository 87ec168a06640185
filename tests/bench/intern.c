// SPDX-License-Identifier: GPL-2.0-only
/* The interning table (intern.c) with stack-shaped values: ns per lookup of a stored value (a get
 * and its put) and per new value (a get that stores it and the put that removes it), in random
 * order, with a table of N values (warm at 2,000; cold at 200,000, whose 80 MB no cache holds, as
 * tailprofd's tables are between drains at 99 Hz). Medians of 5 rounds.
 * Usage: tp_bench_intern [N...] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"
#include "intern.h"

#define ROUNDS 5
#define OPS    200000

struct key {
	uint32_t nr, flags;
	uint64_t frames[2 * 48]; /* (object, address) pairs, as struct frame */
};

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

/* Value i: 8 to 40 frames that share their outer ones with other values, as stacks do. */
static size_t make_key(struct key *k, uint64_t i)
{
	uint64_t s = i * 0x9e3779b97f4a7c15ULL + 1;

	memset(k, 0, sizeof(*k));
	k->nr = 8 + (uint32_t)(next_rand(&s) % 33);
	for (uint32_t f = 0; f < k->nr; f++) {
		k->frames[2 * f] = 0x55550000 + f % 3;
		k->frames[2 * f + 1] = f + 4 < k->nr ? 0x400000 + f * 64 : 0x400000 + next_rand(&s) % 65536;
	}
	return 8 + (size_t)k->nr * 16;
}

static void run(size_t n)
{
	struct intern_table *t = intern_table__new(NULL);
	double hit[ROUNDS], miss[ROUNDS];
	uint64_t seed = 42, sink = 0;
	struct key k;

	for (size_t i = 0; i < n; i++) {
		size_t len = make_key(&k, i);

		intern_table__get(t, &k, len, NULL);
	}
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = bench_seconds(CLOCK_MONOTONIC);

		for (int o = 0; o < OPS; o++) {
			size_t len = make_key(&k, next_rand(&seed) % n);
			void *p = intern_table__get(t, &k, len, NULL);

			sink += (uintptr_t)p;
			intern_table__put(t, p);
		}
		hit[r] = (bench_seconds(CLOCK_MONOTONIC) - t0) * 1e9 / OPS;
		t0 = bench_seconds(CLOCK_MONOTONIC);
		for (int o = 0; o < OPS; o++) {
			size_t len = make_key(&k, n + next_rand(&seed) % (1u << 30));
			void *p = intern_table__get(t, &k, len, NULL);

			sink += (uintptr_t)p;
			intern_table__put(t, p);
		}
		miss[r] = (bench_seconds(CLOCK_MONOTONIC) - t0) * 1e9 / OPS;
	}
	printf("%8zu values  %6.1f MB  stored %6.1f ns  new %6.1f ns  (medians of %d x %d)%s\n", n,
	       intern_table__bytes(t) / 1e6, bench_median(hit, ROUNDS), bench_median(miss, ROUNDS),
	       ROUNDS, OPS, sink == 1 ? " " : "");
	intern_table__free(t);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		run(2000);
		run(200000);
		return 0;
	}
	for (int i = 1; i < argc; i++)
		run((size_t)strtoull(argv[i], NULL, 10));
	return 0;
}
