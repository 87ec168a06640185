// SPDX-License-Identifier: GPL-2.0-only
/* Benchmark of spike detection: the cost of spikes__window_closed per window with 50 stages (31
 * configured and 19 named by applications: ids 1-31 and 32-50), each with a latency histogram of
 * 24 used buckets and 10 slow spans a window, and 2,000 (stack, task) entries a window; a spike of
 * one stage every 40 windows, whose close also runs its explanation. Prints the median and p99
 * of windows without a closing spike and of those with one, over 2,000 windows after 400 of
 * warm-up, and the heap in use before and after: it grows only by the evicted windows that pins
 * keep, which the pin budget (64) bounds.
 * Usage: tp_bench_spikes [WINDOWS] */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "intern.h"
#include "spikes.h"
#include "stages.h"
#include "tp_hist.h"
#include "window.h"

#define SEC	 1000000000ULL
#define MS	 1000000ULL
#define STAGES	 50
#define ENTRIES	 2000
#define SPIKE_ID 3
#define EVERY	 40
#define NR_RING	 360

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static uint64_t rnd_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* A window's stage data: STAGES histograms around base_ns (x4 for the spiking stage when spike),
 * 100-400 requests each, and 10 slow spans with an exact accounting. */
static void fill_stages(struct window *w, bool spike)
{
	w->stages = calloc(1, sizeof(*w->stages));
	for (uint32_t id = 1; id <= STAGES; id++) {
		struct stage_stats *st = calloc(1, sizeof(*st));
		uint64_t base = (id % 7 + 1) * MS * (spike && id == SPIKE_ID ? 4 : 1);
		uint32_t b0 = tp_hist_bucket(base);

		st->nr_cells = 24;
		st->cells = calloc(st->nr_cells, sizeof(*st->cells));
		for (uint32_t i = 0; i < st->nr_cells; i++) {
			st->cells[i] = (struct hist_cell){b0 - 12 + i, 5 + (uint32_t)(rnd() % 12)};
			st->count += st->cells[i].count;
		}
		st->max_ns = tp_hist_value(b0 + 11);
		st->sum_ns = st->count * base;
		st->nr_spans = STAGE_SPANS_KEPT;
		for (uint32_t i = 0; i < STAGE_SPANS_KEPT; i++)
			st->spans[i] = (struct tp_span){.pid = 1000 + id,
							.tid = 1000 + id,
							.start_ns = w->start_ns + i * MS,
							.duration_ns = base * 2,
							.stage = id,
							.accounting = TP_ACCT_EXACT,
							.cpu_ns = base,
							.runq_ns = base / 4};
		w->stages->by_id[id] = st;
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000, warm = 400;
	struct intern_table *stacks = intern_table__new(NULL), *tasks = intern_table__new(NULL);
	struct window_ring *ring =
	    window_ring__new(&(struct window_ring_opts){.window_ns = SEC,
							.nr_windows = NR_RING,
							.nr_cpus = 2,
							.stacks = stacks,
							.tasks = tasks});
	struct stages *stages = stages__new(NULL);
	struct spikes *sp = spikes__new(&SPIKES_OPTS_DEFAULT, stages, SEC);
	uint64_t *plain = calloc(n, sizeof(uint64_t)), *closing = calloc(n, sizeof(uint64_t));
	size_t np = 0, nc = 0, heap_warm = 0, heap_end, pinned_warm = 0;
	uint64_t t = 100 * SEC;

	if (!ring || !sp || !plain || !closing) {
		fprintf(stderr, "tp_bench_spikes: setup failed\n");
		return 1;
	}
	window_ring__advance(ring, t);
	for (int i = 0; i < warm + n; i++) {
		struct window *w = window_ring__current(ring);
		bool spike = i % EVERY == EVERY - 1, closes = i % EVERY == 0 && i;
		uint64_t t0, dt;

		fill_stages(w, spike);
		for (uint32_t e = 0; e < ENTRIES; e++) {
			struct {
				struct stack s;
				struct frame f[4];
			} sk = {.s = {.nr_user = 4}};
			struct task tk = {
			    .pid = 1000 + e % 97, .tid = 1000 + e % 97, .stage = 1 + e % STAGES};

			for (int f = 0; f < 4; f++)
				sk.f[f].addr = 0x400000 + (e * 4 + f) * 16;
			window__add(w, intern_table__get(stacks, &sk, sizeof(sk), NULL),
				    intern_table__get(tasks, &tk, sizeof(tk), NULL), 1 + e % 3,
				    stacks, tasks);
		}
		t += SEC;
		window_ring__advance(ring, t);
		t0 = now_ns();
		spikes__window_closed(sp, ring, w);
		dt = now_ns() - t0;
		if (i == warm) {
			heap_warm = mallinfo2().uordblks;
			pinned_warm = window_ring__nr_pinned(ring);
		}
		if (i < warm)
			continue;
		if (closes)
			closing[nc++] = dt;
		else
			plain[np++] = dt;
	}
	heap_end = mallinfo2().uordblks;
	qsort(plain, np, sizeof(*plain), cmp_u64);
	qsort(closing, nc, sizeof(*closing), cmp_u64);
	printf("spike detection, %d stages, %d entries a window, %d windows (ring of %d):\n",
	       STAGES, ENTRIES, n, NR_RING);
	printf("  window without a spike closing: median %.1f us, p99 %.1f us (%zu windows)\n",
	       plain[np / 2] / 1e3, plain[np * 99 / 100] / 1e3, np);
	printf("  window closing a spike (explained): median %.1f us, p99 %.1f us (%zu windows)\n",
	       closing[nc / 2] / 1e3, closing[nc * 99 / 100] / 1e3, nc);
	printf("  heap in use after warm-up %.1f MB with %zu evicted windows pinned, at the end "
	       "%.1f MB with %zu (the pin budget bounds them)\n",
	       heap_warm / 1e6, pinned_warm, heap_end / 1e6, window_ring__nr_pinned(ring));
	spikes__free(sp, ring);
	window_ring__free(ring);
	stages__free(stages);
	intern_table__free(stacks);
	intern_table__free(tasks);
	free(plain);
	free(closing);
	return 0;
}
