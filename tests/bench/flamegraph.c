// SPDX-License-Identifier: GPL-2.0-only
/* Benchmark of GET /api/v1/flamegraph's work on a synthetic full ring: W windows (default 360, an
 * hour of 10 s windows) holding S distinct stacks (default 100,000) of 24 kernel frames over 5,000
 * functions (a kallsyms file written for the run), shared prefixes like a real call tree, 20
 * threads of 5 processes (a stack is of one process), 2,000 entries a window. Prints the median of
 * RUNS of: the tree of the whole ring (query__flame_add, the frames named as the pprof profile
 * names them) with its JSON at min_share 0.0005 and at 0 (every node), and the tree of the last
 * half against the first half as the baseline, in CPU time (the wall time of a loaded machine would
 * measure the other jobs). Asserts nothing. Usage: tp_bench_flamegraph [WINDOWS] [STACKS] [RUNS] */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"
#include "flamegraph.h"
#include "hashmap.h"
#include "intern.h"
#include "kallsyms.h"
#include "query.h"
#include "window.h"

#define SEC	   1000000000ULL
#define FUNCTIONS  5000
#define DEPTH	   24
#define PER_WINDOW 2000
#define TASKS	   20
#define KBASE	   0xffffffff81000000ULL

/* A kernel object of FUNCTIONS symbols 256 bytes apart. */
static struct object *kernel_object(void)
{
	char path[] = "/tmp/tp_bench_flamegraph.XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	struct object *obj;

	if (!f) {
		perror("tp_bench_flamegraph: temporary kallsyms");
		exit(1);
	}
	for (int i = 0; i < FUNCTIONS; i++)
		fprintf(f, "%llx T bench_function_%d_of_the_kernel\n", KBASE + 256ULL * i, i);
	fclose(f);
	obj = kallsyms__load(path, NULL);
	unlink(path);
	return obj;
}

/* Stack k: frame j from the root is shared by the stacks with the same k >> (17 - j) (a call tree
 * that branches in two at each level), unique past level 17; kernel frames, leaf first. */
static struct stack *make_stack(struct intern_table *t, struct object *obj, uint32_t k)
{
	struct {
		struct stack s;
		struct frame fr[DEPTH];
	} key;

	memset(&key, 0, sizeof(key));
	key.s.nr_kernel = DEPTH;
	for (int j = 0; j < DEPTH; j++) {
		uint64_t prefix = j < 17 ? k >> (17 - j) : k;
		uint64_t fn = hashmap__combine(j, prefix) % FUNCTIONS;

		key.fr[DEPTH - 1 - j] = (struct frame){obj, KBASE + 256 * fn + 16};
	}
	return intern_table__get(t, &key, sizeof(key), NULL);
}

/* CPU time of this thread: the machine is shared, wall time measures the neighbours too */
static double cpu_s(void)
{
	return bench_seconds(CLOCK_THREAD_CPUTIME_ID);
}

int main(int argc, char **argv)
{
	uint32_t nw = argc > 1 ? (uint32_t)atoi(argv[1]) : 360;
	uint32_t ns = argc > 2 ? (uint32_t)atoi(argv[2]) : 100000;
	int runs = argc > 3 ? atoi(argv[3]) : 5;
	struct intern_table *stacks = intern_table__new(NULL), *tasks = intern_table__new(NULL);
	struct window_ring *ring;
	struct object *obj;
	struct stack **sv;
	struct task *tv[TASKS];
	struct window **ws;
	double t_trim[32], t_full[32], t_diff[32], t_json[32];
	size_t nodes = 0, len_trim = 0, len_full = 0, len_diff = 0, n;
	uint64_t samples = 0;
	double t0;

	if (nw < 2 || ns < 1 || runs < 1 || runs > 32) {
		fprintf(stderr,
			"usage: tp_bench_flamegraph [WINDOWS >= 2] [STACKS >= 1] [RUNS 1-32]\n");
		return 2;
	}
	ring = window_ring__new(&(struct window_ring_opts){.window_ns = 10 * SEC,
							   .nr_windows = nw,
							   .nr_cpus = 1,
							   .stacks = stacks,
							   .tasks = tasks});
	obj = kernel_object();
	sv = calloc(ns, sizeof(*sv));
	t0 = cpu_s();
	for (uint32_t k = 0; k < ns; k++)
		sv[k] = make_stack(stacks, obj, k);
	for (int i = 0; i < TASKS; i++) {
		struct task t;

		memset(&t, 0, sizeof(t));
		t.pid = 1000 + i % 5;
		t.tid = 1000 + i;
		snprintf(t.comm, sizeof(t.comm), "service_%d", i % 5);
		tv[i] = intern_table__get(tasks, &t, sizeof(t), NULL);
	}
	/* entry t of the ring: stack t * 7919 mod S (7919 is prime: every stack comes up) */
	for (uint32_t i = 0; i < nw; i++) {
		struct window *w;

		window_ring__advance(ring, (uint64_t)(i + 1) * 10 * SEC);
		w = window_ring__current(ring);
		for (uint32_t m = 0; m < PER_WINDOW; m++) {
			uint64_t t = (uint64_t)i * PER_WINDOW + m;

			uint64_t k = t * 7919 % ns;

			/* a stack belongs to one process (k % 5), any of its 4 threads */
			window__add(w, intern_table__ref(sv[k]),
				    intern_table__ref(tv[k % 5 + 5 * (t % 4)]), 1 + t % 5, stacks,
				    tasks);
			samples += 1 + t % 5;
		}
	}
	n = window_ring__count(ring);
	ws = calloc(n, sizeof(*ws));
	for (size_t i = 0; i < n; i++)
		ws[i] = window_ring__get(ring, i);
	printf("ring: %zu windows, %u distinct stacks of %d frames, %" PRIu64 " samples "
	       "(built in %.1f s)\n",
	       n, ns, DEPTH, samples, cpu_s() - t0);
	for (int r = 0; r < runs; r++) {
		struct profile_filter cpu = {.type = PROFILE_CPU};
		struct flame_query all = {.windows = ws, .n = n, .filter = &cpu};
		struct flame_query half = {.windows = ws + n / 2,
					   .n = n - n / 2,
					   .baseline = ws,
					   .nr_baseline = n / 2,
					   .with_baseline = true,
					   .filter = &cpu};
		struct flamegraph_json_opts o = {
		    .type = "cpu", .unit = "samples", .from = "", .to = "", .min_share = 0.0005};
		struct flamegraph *fg = flamegraph__new();
		char *json;
		double a = cpu_s(), b, c, d;

		if (query__flame_add(fg, &all, 10101010))
			return 1;
		b = cpu_s();
		json = flamegraph__json(fg, &o);
		c = cpu_s();
		len_trim = strlen(json);
		free(json);
		o.min_share = 0;
		json = flamegraph__json(fg, &o);
		d = cpu_s();
		len_full = strlen(json);
		nodes = flamegraph__nodes(fg);
		free(json);
		flamegraph__free(fg);
		t_trim[r] = c - a;
		t_json[r] = c - b;
		t_full[r] = (b - a) + (d - c);
		a = cpu_s();
		fg = flamegraph__new();
		o.min_share = 0.0005;
		if (query__flame_add(fg, &half, 10101010))
			return 1;
		json = flamegraph__json(fg, &o);
		t_diff[r] = cpu_s() - a;
		len_diff = strlen(json);
		free(json);
		flamegraph__free(fg);
	}
	printf("flame graph of the ring, %zu nodes (CPU time, medians of %d runs):\n", nodes, runs);
	printf("  tree + JSON, min_share 0.0005  %8.1f ms  %8.1f KB (JSON alone %.1f ms)\n",
	       1e3 * bench_median(t_trim, runs), len_trim / 1e3, 1e3 * bench_median(t_json, runs));
	printf("  tree + JSON, every node        %8.1f ms  %8.1f KB\n",
	       1e3 * bench_median(t_full, runs), len_full / 1e3);
	printf("  last half vs first half        %8.1f ms  %8.1f KB\n",
	       1e3 * bench_median(t_diff, runs), len_diff / 1e3);
	free(ws);
	window_ring__free(ring);
	for (uint32_t k = 0; k < ns; k++)
		intern_table__put(stacks, sv[k]);
	for (int i = 0; i < TASKS; i++)
		intern_table__put(tasks, tv[i]);
	free(sv);
	intern_table__free(stacks);
	intern_table__free(tasks);
	object__put(obj);
	return 0;
}
