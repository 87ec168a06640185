// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the flame graph tree (flamegraph.c): values and self sums from known stacks, the
 * baseline side, "(other)" merging at min_share, children order, names made safe for JSON. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "flamegraph.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values_self_and_order),
	    cmocka_unit_test(test_baseline),
	    cmocka_unit_test(test_other_merging),
	    cmocka_unit_test(test_names_and_errors),
	    cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
