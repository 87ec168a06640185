// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the window ring: rotation and eviction, sample placement by timestamp, drop
 * counting, and the interning and release of stacks and tasks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "intern.h"
#include "window.h"

#define SEC 1000000000ULL

static int released;

static void count_release(void *data, void *ctx)
{
	released++;
}

struct fixture {
	struct intern_table *stacks, *tasks;
	struct window_ring *ring;
};

static int setup(void **state)
{
	static struct fixture f;
	struct intern_ops ops = {.release = count_release};

	released = 0;
	f.stacks = intern_table__new(&ops);
	f.tasks = intern_table__new(NULL);
	f.ring = window_ring__new(&(struct window_ring_opts){.window_ns = 10 * SEC,
							     .nr_windows = 3,
							     .nr_cpus = 2,
							     .stacks = f.stacks,
							     .tasks = f.tasks});
	assert_non_null(f.ring);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	window_ring__free(f->ring);
	intern_table__free(f->stacks);
	intern_table__free(f->tasks);
	return 0;
}

/* A stack of one kernel frame at addr (no object). */
static struct stack *make_stack(struct fixture *f, uint64_t addr)
{
	struct {
		struct stack s;
		struct frame fr[1];
	} key;

	memset(&key, 0, sizeof(key));
	key.s.nr_kernel = 1;
	key.fr[0].addr = addr;
	return intern_table__get(f->stacks, &key, sizeof(key), NULL);
}

static struct task *make_task(struct fixture *f, uint32_t pid, const char *comm)
{
	struct task t;

	memset(&t, 0, sizeof(t));
	t.pid = t.tid = pid;
	strncpy(t.comm, comm, sizeof(t.comm) - 1);
	return intern_table__get(f->tasks, &t, sizeof(t), NULL);
}

static void test_rotation_aligned(void **state)
{
	struct fixture *f = *state;
	struct window *w;

	window_ring__advance(f->ring, 1005 * SEC + 7);
	assert_int_equal(window_ring__count(f->ring), 1);
	w = window_ring__current(f->ring);
	assert_int_equal(w->start_ns, 1000 * SEC);
	assert_int_equal(w->end_ns, 1010 * SEC);
	assert_false(w->closed);

	window_ring__advance(f->ring, 1021 * SEC);
	assert_int_equal(window_ring__count(f->ring), 3);
	assert_true(window_ring__get(f->ring, 0)->closed);
	assert_true(window_ring__get(f->ring, 1)->closed);
	assert_int_equal(window_ring__get(f->ring, 1)->start_ns, 1010 * SEC);
	assert_int_equal(window_ring__current(f->ring)->start_ns, 1020 * SEC);

	/* ring of 3: the oldest is evicted */
	window_ring__advance(f->ring, 1030 * SEC);
	assert_int_equal(window_ring__count(f->ring), 3);
	assert_int_equal(window_ring__get(f->ring, 0)->start_ns, 1010 * SEC);
	assert_int_equal(window_ring__current(f->ring)->start_ns, 1030 * SEC);
}

static void test_gap_longer_than_retention(void **state)
{
	struct fixture *f = *state;

	window_ring__advance(f->ring, 100 * SEC);
	window_ring__advance(f->ring, 5000 * SEC + 1);
	/* no 490 empty windows: one new window, the old one kept until evicted */
	assert_int_equal(window_ring__count(f->ring), 2);
	assert_int_equal(window_ring__current(f->ring)->start_ns, 5000 * SEC);
	assert_null(window_ring__window_at(f->ring, 200 * SEC));
}

static void test_samples_by_timestamp_and_eviction_release(void **state)
{
	struct fixture *f = *state;
	struct window *w0, *w1;
	uint32_t nr_stacks, nr_procs;

	window_ring__advance(f->ring, 0);
	/* three samples of one (stack, task) and one of another task, in window 0 */
	for (int i = 0; i < 3; i++) {
		w0 = window_ring__window_at(f->ring, (uint64_t)i * SEC);
		assert_int_equal(window__add(w0, make_stack(f, 0x1000), make_task(f, 7, "a"), 1,
					     f->stacks, f->tasks),
				 0);
	}
	assert_int_equal(
	    window__add(w0, make_stack(f, 0x1000), make_task(f, 8, "b"), 1, f->stacks, f->tasks),
	    0);
	/* a sample at 12 s advances the ring; a late one at 9 s still lands in window 0 */
	w1 = window_ring__window_at(f->ring, 12 * SEC);
	assert_ptr_not_equal(w0, w1);
	assert_int_equal(
	    window__add(w1, make_stack(f, 0x2000), make_task(f, 7, "a"), 5, f->stacks, f->tasks),
	    0);
	assert_ptr_equal(window_ring__window_at(f->ring, 9 * SEC), w0);

	assert_int_equal(w0->samples, 4);
	assert_int_equal(w0->nr_entries, 2);
	assert_int_equal(w1->samples, 5);
	window__counts(w0, &nr_stacks, &nr_procs);
	assert_int_equal(nr_stacks, 1);
	assert_int_equal(nr_procs, 2);
	/* interned once, shared by both windows */
	assert_int_equal(intern_table__count(f->stacks), 2);
	assert_int_equal(intern_table__count(f->tasks), 2);

	/* evict window 0 (ring of 3): stack 0x1000 and task 8 are released, the rest live on */
	window_ring__advance(f->ring, 35 * SEC);
	assert_int_equal(window_ring__get(f->ring, 0)->start_ns, 10 * SEC);
	assert_int_equal(released, 1);
	assert_int_equal(intern_table__count(f->stacks), 1);
	assert_int_equal(intern_table__count(f->tasks), 1);
	/* older than anything held: the caller counts it as late */
	assert_null(window_ring__window_at(f->ring, 5 * SEC));
}

/* A pinned window outlives its eviction, is found by its start, and goes (with its stacks) at
 * its last unpin. */
static void test_pinned_window_outlives_eviction(void **state)
{
	struct fixture *f = *state;
	struct window *w0;

	window_ring__advance(f->ring, 0);
	w0 = window_ring__current(f->ring);
	assert_int_equal(
	    window__add(w0, make_stack(f, 0x1000), make_task(f, 7, "a"), 2, f->stacks, f->tasks),
	    0);
	window_ring__pin(f->ring, w0);
	window_ring__pin(f->ring, w0);
	for (int t = 15; t <= 45; t += 10) /* ring of 3: windows 20, 30, 40 s */
		window_ring__advance(f->ring, (uint64_t)t * SEC);
	assert_int_equal(window_ring__get(f->ring, 0)->start_ns, 20 * SEC);
	assert_int_equal(window_ring__nr_pinned(f->ring), 1);
	assert_ptr_equal(window_ring__pinned(f->ring, 0), w0);
	assert_ptr_equal(window_ring__find(f->ring, 0), w0);
	assert_ptr_equal(window_ring__find(f->ring, 30 * SEC), window_ring__get(f->ring, 1));
	assert_null(window_ring__find(f->ring, 10 * SEC)); /* evicted unpinned */
	assert_int_equal(released, 0);
	assert_int_equal(w0->samples, 2);
	window_ring__unpin(f->ring, w0);
	assert_int_equal(window_ring__nr_pinned(f->ring), 1);
	window_ring__unpin(f->ring, w0);
	assert_int_equal(window_ring__nr_pinned(f->ring), 0);
	assert_int_equal(released, 1);
	assert_null(window_ring__find(f->ring, 0));
}

/* The heat map rows (10 s window, 20 rows of 500 ms): CPU samples by their time, blocks by their
 * wake-up time; times on a row's edge belong to the row they start, outside ones to the ends. */
static void test_heat_rows(void **state)
{
	struct fixture *f = *state;
	struct window *w;
	struct task *t = make_task(f, 42, "app");

	window_ring__advance(f->ring, 10 * SEC);
	w = window_ring__current(f->ring);
	assert_int_equal(window__heat_row(w, 10 * SEC), 0);
	assert_int_equal(window__heat_row(w, 10 * SEC + SEC / 2 - 1), 0);
	assert_int_equal(window__heat_row(w, 10 * SEC + SEC / 2), 1);
	assert_int_equal(window__heat_row(w, 20 * SEC - 1), TP_HEAT_ROWS - 1);
	assert_int_equal(window__heat_row(w, 5 * SEC), 0);
	assert_int_equal(window__heat_row(w, 25 * SEC), TP_HEAT_ROWS - 1);
	assert_int_equal(
	    window__add_recorded(w, make_stack(f, 1), t, 10 * SEC + 100, 0, 0, f->stacks, f->tasks),
	    0);
	assert_int_equal(window__add_recorded(w, make_stack(f, 1), intern_table__ref(t),
					      13 * SEC + SEC / 4, 0, 0, f->stacks, f->tasks),
			 0);
	/* a block of 4 s that ended at 19.9 s: its wake-up row, 19 */
	assert_int_equal(window__add_recorded(w, make_stack(f, 2), intern_table__ref(t),
					      19 * SEC + 9 * SEC / 10, 4 * SEC, 0, f->stacks,
					      f->tasks),
			 0);
	assert_int_equal(w->heat_cpu[0], 1);
	assert_int_equal(w->heat_cpu[6], 1);
	assert_int_equal(w->heat_offcpu[19], 1);
	assert_int_equal(w->heat_offcpu[11], 0);
	for (int r = 0; r < TP_HEAT_ROWS; r++) {
		if (r != 0 && r != 6)
			assert_int_equal(w->heat_cpu[r], 0);
		if (r != 19)
			assert_int_equal(w->heat_offcpu[r], 0);
	}
}

/* window__add_recorded counts like window__add/window__add_offcpu and keeps one record each: a
 * block's record starts blocked_ns before the time it ended. */
static void test_records_of_samples_and_blocks(void **state)
{
	struct fixture *f = *state;
	struct window *w;
	struct task *t = make_task(f, 42, "app");
	size_t bytes;

	window_ring__advance(f->ring, 0);
	w = window_ring__current(f->ring);
	bytes = window__bytes(w);
	assert_int_equal(
	    window__add_recorded(w, make_stack(f, 1), t, 1 * SEC, 0, 1, f->stacks, f->tasks), 0);
	assert_int_equal(window__add_recorded(w, make_stack(f, 2), intern_table__ref(t), 5 * SEC,
					      2 * SEC, 0, f->stacks, f->tasks),
			 0);
	assert_int_equal(window__add_recorded(w, make_stack(f, 1), intern_table__ref(t),
					      1 * SEC + 5, 0, 0, f->stacks, f->tasks),
			 0);
	assert_int_equal(w->nr_entries, 2);
	assert_int_equal(w->entries[0].count, 2);
	assert_int_equal(w->entries[1].offcpu_ns, 2 * SEC);
	assert_int_equal(w->entries[1].offcpu_samples, 1);
	assert_int_equal(w->samples, 2);
	assert_int_equal(w->offcpu_samples, 1);
	assert_int_equal(w->nr_records, 3);
	assert_int_equal(w->records[0].ts_ns, 1 * SEC);
	assert_int_equal(w->records[0].blocked_ns, 0);
	assert_int_equal(w->records[0].cpu, 1);
	assert_int_equal(w->records[0].pid, 42);
	assert_int_equal(w->records[0].tid, 42);
	assert_int_equal(w->records[0].entry, 0);
	assert_int_equal(w->records[1].ts_ns, 3 * SEC); /* its start */
	assert_int_equal(w->records[1].blocked_ns, 2 * SEC);
	assert_int_equal(w->records[1].entry, 1);
	assert_int_equal(w->records[2].entry, 0);
	assert_true(window__bytes(w) >= bytes + 3 * sizeof(struct window_record));
	assert_int_equal(w->sample_period_ns, 0); /* the fixture gives none */
}

/* Fills w with n CPU-sample records of thread 7. */
static void add_records(struct fixture *f, struct window *w, int n)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(window__add_recorded(w, make_stack(f, 9), make_task(f, 7, "t"),
						      w->start_ns + (uint64_t)i, 0, 0, f->stacks,
						      f->tasks),
				 0);
}

/* Records stay for the ring's two newest windows, go at the next tick for older ones (none kept
 * later, the samples still counted), and stay while a pin holds the window, in the ring or past
 * its eviction; window__drop_records does nothing to a window that still needs them. */
static void test_records_kept_for_the_two_newest_and_pinned(void **state)
{
	struct fixture *f = *state;
	struct window *w0, *w1, *w2, *w3, *with[8];

	window_ring__advance(f->ring, 0);
	w0 = window_ring__current(f->ring);
	add_records(f, w0, 3);
	window_ring__advance(f->ring, 10 * SEC);
	w1 = window_ring__current(f->ring);
	add_records(f, w1, 2);
	window_ring__drop_records(f->ring);
	assert_int_equal(w0->nr_records, 3);
	window__drop_records(w0); /* the previous window: still needed */
	assert_int_equal(w0->nr_records, 3);
	window_ring__advance(f->ring, 20 * SEC);
	w2 = window_ring__current(f->ring);
	add_records(f, w2, 1);
	/* until the tick, the window that just went past the previous one keeps them */
	assert_int_equal(window_ring__with_records(f->ring, with, 8), 3);
	window_ring__drop_records(f->ring);
	assert_int_equal(w0->nr_records, 0);
	assert_null(w0->records);
	assert_true(w0->records_dropped);
	add_records(f, w0, 1); /* a straggler: counted, not recorded */
	assert_int_equal(w0->nr_records, 0);
	assert_int_equal(w0->samples, 4);
	assert_int_equal(window_ring__with_records(f->ring, with, 8), 2);
	assert_ptr_equal(with[0], w1);
	assert_ptr_equal(with[1], w2);

	/* pinned: kept past the two newest, and past the ring's eviction */
	window_ring__pin(f->ring, w1);
	window_ring__advance(f->ring, 30 * SEC);
	w3 = window_ring__current(f->ring);
	window_ring__drop_records(f->ring);
	assert_int_equal(w1->nr_records, 2);
	window__drop_records(w1); /* pinned: still needed */
	assert_int_equal(w1->nr_records, 2);
	window_ring__advance(f->ring, 40 * SEC); /* evicts w1 into the pinned list */
	window_ring__drop_records(f->ring);
	assert_int_equal(window_ring__nr_pinned(f->ring), 1);
	assert_int_equal(window_ring__with_records(f->ring, with, 8), 3);
	assert_ptr_equal(with[0], w1); /* pinned ones first: the oldest */
	assert_ptr_equal(with[1], w3);
	assert_int_equal(w2->nr_records, 0);
	window_ring__unpin(f->ring, w1); /* freed with its records */
	assert_int_equal(window_ring__nr_pinned(f->ring), 0);
	assert_int_equal(window_ring__with_records(f->ring, with, 8), 2);
}

/* The last unpin of a window the ring still holds, older than the previous one, frees its
 * records (the spike module's unpin); of a recent one, it leaves them. */
static void test_unpin_drops_records_of_older_windows(void **state)
{
	struct fixture *f = *state;
	struct window *w0, *w1;

	window_ring__advance(f->ring, 0);
	w0 = window_ring__current(f->ring);
	add_records(f, w0, 2);
	window_ring__pin(f->ring, w0);
	window_ring__advance(f->ring, 10 * SEC);
	w1 = window_ring__current(f->ring);
	add_records(f, w1, 2);
	window_ring__pin(f->ring, w1);
	window_ring__advance(f->ring, 20 * SEC);
	window_ring__drop_records(f->ring);
	assert_int_equal(w0->nr_records, 2);
	window_ring__unpin(f->ring, w0);
	assert_int_equal(w0->nr_records, 0);
	assert_true(w0->records_dropped);
	window_ring__unpin(f->ring, w1); /* the previous window: kept until the tick after */
	assert_int_equal(w1->nr_records, 2);
	window_ring__advance(f->ring, 30 * SEC);
	window_ring__drop_records(f->ring);
	assert_int_equal(w1->nr_records, 0);
	window__drop_records(NULL);
}

static void test_expected_and_drops(void **state)
{
	struct fixture *f = *state;
	struct window *w;

	window_ring__advance(f->ring, 0);
	w = window_ring__current(f->ring);
	/* 99 Hz: period 10101010 ns; CPU 0 sampled the whole window, CPU 1 half of it */
	w->cpu_sampled_ns[0] = 10 * SEC;
	w->cpu_sampled_ns[1] = 5 * SEC;
	w->cpu_received[0] = 985;
	w->cpu_received[1] = 495;
	assert_int_equal(window__expected(w, 1000000000ULL / 99), 990 + 495);
	assert_int_equal(window__received(w), 1480);
	w->drops[DROP_RINGBUF_FULL] = 3;
	w->drops[DROP_USER_STACK] = 2;
	assert_int_equal(window__drops(w), 5);
	assert_string_equal(window_drop_names[DROP_RINGBUF_FULL], "ringbuf_full");
}

static void test_many_entries_grow(void **state)
{
	struct fixture *f = *state;
	struct window *w;

	window_ring__advance(f->ring, 0);
	w = window_ring__current(f->ring);
	for (int round = 0; round < 2; round++)
		for (uint64_t i = 0; i < 5000; i++)
			assert_int_equal(window__add(w, make_stack(f, 0x10000 + i),
						     make_task(f, 1 + i % 50, "x"), 1, f->stacks,
						     f->tasks),
					 0);
	assert_int_equal(w->nr_entries, 5000);
	assert_int_equal(w->samples, 10000);
	for (size_t i = 0; i < w->nr_entries; i++)
		assert_int_equal(w->entries[i].count, 2);
	assert_int_equal(intern_table__count(f->stacks), 5000);
	assert_int_equal(intern_table__count(f->tasks), 50);
}

static void test_intern_identity(void **state)
{
	struct fixture *f = *state;
	struct stack *a = make_stack(f, 0x42), *b = make_stack(f, 0x42), *c = make_stack(f, 0x43);

	assert_ptr_equal(a, b);
	assert_ptr_not_equal(a, c);
	assert_int_equal((uintptr_t)a % 8, 0);
	intern_table__put(f->stacks, a);
	assert_int_equal(released, 0);
	intern_table__put(f->stacks, b);
	assert_int_equal(released, 1);
	intern_table__put(f->stacks, c);
	assert_int_equal(intern_table__count(f->stacks), 0);
}

static void test_sanitize_name(void **state)
{
	char a[16] = "aaa\xc3", b[32] = "nl\nname\"q\\x\xff", c[16] = "caf\xc3\xa9",
	     d[16] = "eur\xe2\x82", e[16] = "\xed\xa0\x80s", f[16] = "\x7f\x01ok";

	(void)state;
	task__sanitize_name(a);
	assert_string_equal(a, "aaa");
	assert_int_equal(a[3], 0);
	task__sanitize_name(b);
	assert_string_equal(b, "nl?name\"q\\x?");
	task__sanitize_name(c);
	assert_string_equal(c, "caf\xc3\xa9");
	task__sanitize_name(d);
	assert_string_equal(d, "eur");
	assert_int_equal(d[4], 0);
	task__sanitize_name(e); /* a UTF-16 surrogate is no UTF-8 */
	assert_string_equal(e, "???s");
	task__sanitize_name(f);
	assert_string_equal(f, "??ok");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sanitize_name),
	    cmocka_unit_test_setup_teardown(test_rotation_aligned, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gap_longer_than_retention, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_samples_by_timestamp_and_eviction_release, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_pinned_window_outlives_eviction, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_records_of_samples_and_blocks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_records_kept_for_the_two_newest_and_pinned, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_unpin_drops_records_of_older_windows, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_expected_and_drops, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_entries_grow, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_intern_identity, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_heat_rows, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
