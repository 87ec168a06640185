// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the flame graph tree (flamegraph.c): values and self sums from known stacks, the
 * baseline side, "(other)" merging at min_share, children order, names made safe for JSON; and
 * the tree query_flame.c builds from windows (sorted stacks sharing prefixes, frames named as the
 * pprof profile names them, pseudo-frames, processes by name). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "flamegraph.h"
#include "intern.h"
#include "kallsyms.h"
#include "query.h"
#include "symbolizer.h"
#include "window.h"

/* Adds value along the path of names (outermost first: the process, then frames) on one side. */
static void add_path(struct flamegraph *fg, const char *const *names, size_t n, uint64_t value,
		     bool baseline)
{
	int64_t node = FLAME_ROOT;

	for (size_t i = 0; i < n; i++) {
		int64_t name = flamegraph__name(fg, names[i]);

		assert_true(name >= 0);
		node = flamegraph__child(fg, (uint32_t)node, (uint32_t)name,
					 i ? FLAME_USER : FLAME_PROCESS);
		assert_true(node > 0);
	}
	assert_int_equal(flamegraph__add(fg, (uint32_t)node, value, baseline), 0);
}

#define PATH(...)                                                                                  \
	(const char *const[]){__VA_ARGS__},                                                        \
	    sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)

/* The tree as JSON, parsed. */
static json_t *tree(struct flamegraph *fg, double min_share, bool with_baseline)
{
	char *s = flamegraph__json(fg, &(struct flamegraph_json_opts){
					   .type = "cpu",
					   .unit = "samples",
					   .from = "2026-12-02T10:00:00.000Z",
					   .to = "2026-12-02T10:01:00.000Z",
					   .min_share = min_share,
					   .with_baseline = with_baseline,
				       });
	json_error_t err;
	json_t *j;

	assert_non_null(s);
	j = json_loads(s, 0, &err);
	if (!j)
		fail_msg("bad JSON (%s): %s", err.text, s);
	free(s);
	return j;
}

static json_t *child(json_t *node, size_t i)
{
	json_t *c = json_array_get(json_object_get(node, "children"), i);

	assert_non_null(c);
	return c;
}

static size_t nr_children(json_t *node)
{
	return json_array_size(json_object_get(node, "children"));
}

static void assert_node(json_t *n, const char *name, const char *kind, json_int_t value,
			json_int_t self, json_int_t base)
{
	assert_string_equal(json_string_value(json_object_get(n, "name")), name);
	assert_string_equal(json_string_value(json_object_get(n, "kind")), kind);
	assert_int_equal(json_integer_value(json_object_get(n, "value")), value);
	assert_int_equal(json_integer_value(json_object_get(n, "self")), self);
	assert_int_equal(json_integer_value(json_object_get(n, "baseline")), base);
}

/* app: main->f->g 3, main->f 2, main->h 6; db: main 4. Values sum up, self is what ends there,
 * children come largest first. */
static void test_values_self_and_order(void **state)
{
	struct flamegraph *fg = flamegraph__new();
	json_t *j, *root, *app, *main_, *f;

	(void)state;
	add_path(fg, PATH("app", "main", "f", "g"), 3, false);
	add_path(fg, PATH("app", "main", "f"), 2, false);
	add_path(fg, PATH("app", "main", "h"), 6, false);
	add_path(fg, PATH("db", "main"), 4, false);
	add_path(fg, PATH("app", "main", "f", "g"), 1, false); /* the same path again: summed */
	assert_int_equal(flamegraph__nodes(fg), 1 + 5 + 2);
	j = tree(fg, 0, false);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "cpu");
	assert_string_equal(json_string_value(json_object_get(j, "unit")), "samples");
	assert_int_equal(json_integer_value(json_object_get(j, "total")), 16);
	assert_null(json_object_get(j, "baseline_total"));
	assert_int_equal(json_integer_value(json_object_get(j, "truncated_nodes")), 0);
	root = json_object_get(j, "root");
	assert_node(root, "all", "other", 16, 0, 0);
	assert_int_equal(nr_children(root), 2);
	app = child(root, 0);
	assert_node(app, "app", "process", 12, 0, 0);
	assert_node(child(root, 1), "db", "process", 4, 0, 0);
	assert_node(child(child(root, 1), 0), "main", "user", 4, 4, 0);
	main_ = child(app, 0);
	assert_node(main_, "main", "user", 12, 0, 0);
	assert_int_equal(nr_children(main_), 2);
	f = child(main_, 0); /* f 6 and h 6: equal values, then by name */
	assert_node(f, "f", "user", 6, 2, 0);
	assert_node(child(f, 0), "g", "user", 4, 4, 0);
	assert_int_equal(nr_children(child(f, 0)), 0);
	assert_node(child(main_, 1), "h", "user", 6, 6, 0);
	json_decref(j);
	flamegraph__free(fg);
}

/* The baseline side sums apart: a frame only in the baseline has value 0 and is kept. */
static void test_baseline(void **state)
{
	struct flamegraph *fg = flamegraph__new();
	json_t *j, *main_;

	(void)state;
	add_path(fg, PATH("app", "main", "slow"), 8, false);
	add_path(fg, PATH("app", "main", "fast"), 2, false);
	add_path(fg, PATH("app", "main", "slow"), 1, true);
	add_path(fg, PATH("app", "main", "fast"), 5, true);
	add_path(fg, PATH("app", "main", "gone"), 4, true);
	j = tree(fg, 0.0005, true);
	assert_int_equal(json_integer_value(json_object_get(j, "total")), 10);
	assert_int_equal(json_integer_value(json_object_get(j, "baseline_total")), 10);
	assert_node(json_object_get(j, "root"), "all", "other", 10, 0, 10);
	main_ = child(child(json_object_get(j, "root"), 0), 0);
	assert_node(main_, "main", "user", 10, 0, 10);
	assert_int_equal(nr_children(main_), 3);
	assert_node(child(main_, 0), "slow", "user", 8, 8, 1);
	assert_node(child(main_, 1), "fast", "user", 2, 2, 5);
	assert_node(child(main_, 2), "gone", "user", 0, 0, 4);
	json_decref(j);
	flamegraph__free(fg);
}

/* min_share 0.1 of 100 samples (and of a baseline of 100): children under 10 on both sides merge
 * into one "(other)" leaf; one small in value but large in the baseline stays; the merged
 * subtrees count in truncated_nodes. "(other)" is sorted by its value like the rest. */
static void test_other_merging(void **state)
{
	struct flamegraph *fg = flamegraph__new();
	json_t *j, *main_;

	(void)state;
	add_path(fg, PATH("app", "main", "big"), 70, false);
	add_path(fg, PATH("app", "main", "a", "a1"), 4, false);
	add_path(fg, PATH("app", "main", "a", "a2"), 2, false);
	add_path(fg, PATH("app", "main", "b"), 5, false);
	add_path(fg, PATH("app", "main", "c"), 9, false);
	add_path(fg, PATH("app", "main", "grew"), 3, false);
	add_path(fg, PATH("app", "main", "grew"), 50, true);
	add_path(fg, PATH("app", "main", "big"), 50, true);
	add_path(fg, PATH("app", "main", "tiny"), 7, false);
	j = tree(fg, 0.1, true);
	main_ = child(child(json_object_get(j, "root"), 0), 0);
	assert_node(main_, "main", "user", 100, 0, 100);
	assert_int_equal(nr_children(main_), 3);
	assert_node(child(main_, 0), "big", "user", 70, 70, 50);
	/* a (6, with a1 and a2), b 5, c 9, tiny 7: 27 */
	assert_node(child(main_, 1), "(other)", "other", 27, 27, 0);
	assert_int_equal(nr_children(child(main_, 1)), 0);
	assert_node(child(main_, 2), "grew", "user", 3, 3, 50);
	/* a, a1, a2, b, c, tiny are not in the answer ("(other)" is no node of the tree) */
	assert_int_equal(json_integer_value(json_object_get(j, "truncated_nodes")), 6);
	json_decref(j);
	/* no baseline: a zero baseline counts as small, so the same nodes merge */
	flamegraph__free(fg);
	fg = flamegraph__new();
	add_path(fg, PATH("app", "x"), 95, false);
	add_path(fg, PATH("app", "y"), 5, false);
	j = tree(fg, 0.1, false);
	assert_int_equal(nr_children(child(json_object_get(j, "root"), 0)), 2);
	assert_node(child(child(json_object_get(j, "root"), 0), 1), "(other)", "other", 5, 5, 0);
	assert_int_equal(json_integer_value(json_object_get(j, "truncated_nodes")), 1);
	json_decref(j);
	flamegraph__free(fg);
}

/* Names: the same name under two parents is two nodes; quotes, backslashes, control characters
 * and bytes of no UTF-8 come out as valid JSON; a bad parent or name is refused. */
static void test_names_and_errors(void **state)
{
	struct flamegraph *fg = flamegraph__new();
	json_t *j, *app;
	int64_t a, b;

	(void)state;
	a = flamegraph__name(fg, "same");
	b = flamegraph__name(fg, "same");
	assert_int_equal(a, b);
	add_path(fg, PATH("app", "operator\"\\()", "same"), 1, false);
	add_path(fg, PATH("app", "bad\x01\xff", "same"), 2, false);
	j = tree(fg, 0, false);
	app = child(json_object_get(j, "root"), 0);
	assert_node(child(app, 0), "bad??", "user", 2, 0, 0);
	assert_node(child(app, 1), "operator\"\\()", "user", 1, 0, 0);
	assert_node(child(child(app, 0), 0), "same", "user", 2, 2, 0);
	assert_node(child(child(app, 1), 0), "same", "user", 1, 1, 0);
	json_decref(j);
	assert_int_equal(flamegraph__child(fg, 1000, (uint32_t)a, FLAME_USER), -EINVAL);
	assert_int_equal(flamegraph__child(fg, FLAME_ROOT, 1000, FLAME_USER), -EINVAL);
	assert_int_equal(flamegraph__child(fg, FLAME_ROOT, (uint32_t)a, FLAME_KIND_NR), -EINVAL);
	assert_int_equal(flamegraph__add(fg, 1000, 1, false), -EINVAL);
	flamegraph__free(fg);
	flamegraph__free(NULL);
}

/* An empty tree: the root alone, total 0. */
static void test_empty(void **state)
{
	struct flamegraph *fg = flamegraph__new();
	json_t *j;

	(void)state;
	j = tree(fg, 0.0005, true);
	assert_int_equal(json_integer_value(json_object_get(j, "total")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "baseline_total")), 0);
	assert_node(json_object_get(j, "root"), "all", "other", 0, 0, 0);
	assert_int_equal(nr_children(json_object_get(j, "root")), 0);
	json_decref(j);
	flamegraph__free(fg);
}

#define KBASE 0xffffffff81000000ULL

/* A stack of kernel frames, leaf first: addrs[i] in obj (0: no object), flags STACK_*. */
static struct stack *kstack(struct intern_table *t, struct object *obj, const uint64_t *addrs,
			    uint16_t n, uint32_t flags)
{
	struct {
		struct stack s;
		struct frame fr[8];
	} key;

	memset(&key, 0, sizeof(key));
	key.s.nr_kernel = n;
	key.s.flags = flags;
	for (uint16_t i = 0; i < n; i++)
		key.fr[i] = (struct frame){addrs[i] ? obj : NULL, addrs[i]};
	return intern_table__get(t, &key, sizeof(key), NULL);
}

static struct task *ktask(struct intern_table *t, uint32_t pid, const char *comm)
{
	struct task k;

	memset(&k, 0, sizeof(k));
	k.pid = k.tid = pid;
	strncpy(k.comm, comm, sizeof(k.comm) - 1);
	return intern_table__get(t, &k, sizeof(k), NULL);
}

/* query__flame_add over two windows (the selection and the baseline) of known kernel stacks in
 * functions fa..fd of a kallsyms file (0x100 bytes each): "app" (pids 1 and 2, one node) and
 * "db"; two addresses in fa are one frame; a stack that is a prefix of another ends in a node
 * with children; a stack cut short has "[truncated]" outermost, a frame without an object is
 * "[unknown]"; a pid filter keeps one process's. */
static void test_query_tree(void **state)
{
	char path[] = "/tmp/test_flamegraph.XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");
	struct intern_table *stacks = intern_table__new(NULL), *tasks = intern_table__new(NULL);
	struct window *sel = window__new(0, 10, 1), *base = window__new(10, 20, 1);
	struct object *obj;
	struct task *app1, *app2, *db;
	/* leaf first: fa < fb < fc, fb < fc, fa (another address) < fb < fc, fd < fc */
	const uint64_t s1[] = {KBASE + 0x10, KBASE + 0x110, KBASE + 0x210};
	const uint64_t s2[] = {KBASE + 0x120, KBASE + 0x210};
	const uint64_t s3[] = {KBASE + 0x80, KBASE + 0x110, KBASE + 0x210};
	const uint64_t s4[] = {KBASE + 0x310, KBASE + 0x210};
	const uint64_t s6[] = {0, KBASE + 0x210};
	struct profile_filter cpu = {.type = PROFILE_CPU}, pid2 = {.type = PROFILE_CPU};
	struct window *ws[1] = {sel}, *bs[1] = {base};
	struct flamegraph *fg;
	json_t *j, *app, *fc, *fb;

	(void)state;
	assert_non_null(f);
	fprintf(f, "%llx T fa\n%llx T fb\n%llx T fc\n%llx T fd\n%llx T fe\n", KBASE, KBASE + 0x100,
		KBASE + 0x200, KBASE + 0x300, KBASE + 0x400);
	fclose(f);
	obj = kallsyms__load(path, NULL);
	unlink(path);
	app1 = ktask(tasks, 1, "app");
	app2 = ktask(tasks, 2, "app");
	db = ktask(tasks, 3, "db");
	/* window__add consumes a reference to each: take one more per add */
#define ADD(w, st, tk, n)                                                                          \
	assert_int_equal(window__add(w, st, intern_table__ref(tk), n, stacks, tasks), 0)
	ADD(sel, kstack(stacks, obj, s1, 3, 0), app1, 3);
	ADD(sel, kstack(stacks, obj, s2, 2, 0), app2, 2);
	ADD(sel, kstack(stacks, obj, s3, 3, 0), app1, 1);
	ADD(sel, kstack(stacks, obj, s4, 2, 0), db, 4);
	ADD(sel, kstack(stacks, obj, s2, 2, STACK_TRUNCATED_KERNEL), app1, 1);
	ADD(sel, kstack(stacks, obj, s6, 2, 0), app2, 1);
	ADD(base, kstack(stacks, obj, s1, 3, 0), app2, 5);
	ADD(base, kstack(stacks, obj, s4, 2, 0), db, 1);
#undef ADD
	fg = flamegraph__new();
	assert_int_equal(query__flame_add(fg,
					  &(struct flame_query){.windows = ws,
								.n = 1,
								.baseline = bs,
								.nr_baseline = 1,
								.with_baseline = true,
								.filter = &cpu},
					  10101010),
			 0);
	j = tree(fg, 0, true);
	assert_int_equal(json_integer_value(json_object_get(j, "total")), 12);
	assert_int_equal(json_integer_value(json_object_get(j, "baseline_total")), 6);
	assert_int_equal(nr_children(json_object_get(j, "root")), 2);
	app = child(json_object_get(j, "root"), 0);
	assert_node(app, "app", "process", 8, 0, 5);
	assert_node(child(json_object_get(j, "root"), 1), "db", "process", 4, 0, 1);
	assert_node(child(child(json_object_get(j, "root"), 1), 0), "fc", "kernel", 4, 0, 1);
	assert_node(child(child(child(json_object_get(j, "root"), 1), 0), 0), "fd", "kernel", 4, 4,
		    1);
	assert_int_equal(nr_children(app), 2);
	fc = child(app, 0);
	assert_node(fc, "fc", "kernel", 7, 0, 5);
	assert_node(child(app, 1), "[truncated]", "other", 1, 0, 0);
	assert_node(child(child(app, 1), 0), "fc", "kernel", 1, 0, 0);
	assert_node(child(child(child(app, 1), 0), 0), "fb", "kernel", 1, 1, 0);
	assert_int_equal(nr_children(fc), 2);
	fb = child(fc, 0);
	assert_node(fb, "fb", "kernel", 6, 2, 5);
	assert_node(child(fc, 1), "[unknown]", "other", 1, 1, 0);
	/* fa at two addresses: one node */
	assert_int_equal(nr_children(fb), 1);
	assert_node(child(fb, 0), "fa", "kernel", 4, 4, 5);
	json_decref(j);
	flamegraph__free(fg);
	/* pid 2 alone: its own stacks, under the same process name */
	pid2.has_pid = true;
	pid2.pid = 2;
	fg = flamegraph__new();
	assert_int_equal(
	    query__flame_add(fg, &(struct flame_query){.windows = ws, .n = 1, .filter = &pid2},
			     10101010),
	    0);
	j = tree(fg, 0, false);
	assert_int_equal(json_integer_value(json_object_get(j, "total")), 3);
	app = child(json_object_get(j, "root"), 0);
	assert_node(app, "app", "process", 3, 0, 0);
	assert_int_equal(nr_children(app), 1);
	assert_node(child(app, 0), "fc", "kernel", 3, 0, 0);
	assert_node(child(child(app, 0), 0), "fb", "kernel", 2, 2, 0);
	assert_node(child(child(app, 0), 1), "[unknown]", "other", 1, 1, 0);
	json_decref(j);
	flamegraph__free(fg);
	window__free(sel, stacks, tasks);
	window__free(base, stacks, tasks);
	intern_table__put(tasks, app1);
	intern_table__put(tasks, app2);
	intern_table__put(tasks, db);
	assert_int_equal(intern_table__count(stacks), 0);
	intern_table__free(stacks);
	intern_table__free(tasks);
	object__put(obj);
}

/* A tree of more than FLAME_MAX_NODES nodes: the largest FLAME_MAX_NODES are written whatever
 * min_share says (0 here), the rest merge into "(other)" under their parents. Process p (p < n)
 * has one child "f" with a child "g": value p + 2 at p and f, 1 at g; 3n nodes below the root.
 * Shares shrink down each path, so what is kept is an upper part of the tree: the processes
 * and their "f" from value c + 1 = n + 2 - FLAME_MAX_NODES / 2 up (FLAME_MAX_NODES nodes); the
 * smaller processes merge into one "(other)" under the root, every "g" into one under its "f". */
static void test_node_cap(void **state)
{
	const size_t n = FLAME_MAX_NODES / 2 + 1000;	/* 3n > 2n > FLAME_MAX_NODES > n */
	const uint64_t c = n + 1 - FLAME_MAX_NODES / 2; /* the largest value merged */
	struct flamegraph *fg = flamegraph__new();
	uint64_t other_value = 0, kept = 0;
	json_t *j, *procs;
	char name[32];

	(void)state;
	for (size_t p = 0; p < n; p++) {
		snprintf(name, sizeof(name), "p%zu", p);
		add_path(fg, PATH(name, "f"), p + 1, false);
		add_path(fg, PATH(name, "f", "g"), 1, false);
	}
	j = tree(fg, 0, false);
	assert_int_equal(json_integer_value(json_object_get(j, "max_nodes")), FLAME_MAX_NODES);
	assert_int_equal(json_integer_value(json_object_get(j, "truncated_nodes")),
			 3 * n - FLAME_MAX_NODES);
	procs = json_object_get(json_object_get(j, "root"), "children");
	for (size_t i = 0; i < json_array_size(procs); i++) {
		json_t *pc = json_array_get(procs, i), *f, *g;
		uint64_t v = json_integer_value(json_object_get(pc, "value"));

		if (!strcmp(json_string_value(json_object_get(pc, "name")), "(other)")) {
			other_value += v;
			continue;
		}
		kept++;
		assert_true(v > c);
		f = json_array_get(json_object_get(pc, "children"), 0);
		assert_string_equal(json_string_value(json_object_get(f, "name")), "f");
		g = json_array_get(json_object_get(f, "children"), 0);
		assert_int_equal(json_array_size(json_object_get(f, "children")), 1);
		assert_string_equal(json_string_value(json_object_get(g, "name")), "(other)");
	}
	assert_int_equal(kept, FLAME_MAX_NODES / 2);
	/* the processes of values 2 .. c */
	assert_int_equal(other_value, c * (c + 1) / 2 - 1);
	json_decref(j);
	flamegraph__free(fg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values_self_and_order),
	    cmocka_unit_test(test_baseline),
	    cmocka_unit_test(test_other_merging),
	    cmocka_unit_test(test_names_and_errors),
	    cmocka_unit_test(test_empty),
	    cmocka_unit_test(test_node_cap),
	    cmocka_unit_test(test_query_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
