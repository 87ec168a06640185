/* SPDX-License-Identifier: GPL-2.0-only */
/* A flame graph tree pre-aggregated for GET /api/v1/flamegraph: paths of named frames (outermost
 * first) with a value on the selection side and on the baseline side, summed into a tree whose
 * children are sorted by value, small nodes merged into "(other)", and written as JSON. Pure: no
 * windows, no symbols (query_flame.c feeds it). Not thread-safe; one tree per request. */
#ifndef TAILPROF_FLAMEGRAPH_H
#define TAILPROF_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a node stands for (the "kind" key of the JSON). */
enum flame_kind {
	FLAME_PROCESS = 0, /* level 1: a process name */
	FLAME_USER,	   /* user code of a native object */
	FLAME_KERNEL,	   /* kernel code */
	FLAME_PYTHON,	   /* a Python function */
	FLAME_JIT,	   /* JIT code named by a perf map */
	FLAME_OTHER,	   /* "[unknown]", "[truncated]", "(other)" and the like */
	FLAME_KIND_NR,
};

#define FLAME_ROOT 0u /* the node id of the root ("all") */
/* Nodes written at most, "(other)" nodes aside: past it the smallest (by their larger share of
 * either side's total) merge into "(other)" whatever min_share says; about 110 bytes of JSON
 * each, so a reply stays under some 11 MB (a full ring's every node is 109 MB). */
#define FLAME_MAX_NODES 50000u

struct flamegraph;

/* Returns an empty tree (the root only) or NULL on ENOMEM. */
struct flamegraph *flamegraph__new(void);
/* NULL allowed. */
void flamegraph__free(struct flamegraph *fg);

/* The id of name (any bytes but NUL: bytes of no valid UTF-8 sequence and control characters
 * become '?'), interned in the tree. Returns the id or -ENOMEM. */
int64_t flamegraph__name(struct flamegraph *fg, const char *name);
/* The child of node parent with name id name (flamegraph__name) of kind, added when missing (a
 * child keeps the kind it was added with). Node ids are below UINT32_MAX; a child's id is above
 * its parent's. Returns the child's id, or -ENOMEM / -EINVAL (no such parent or name). */
int64_t flamegraph__child(struct flamegraph *fg, uint32_t parent, uint32_t name,
			  enum flame_kind kind);
/* Appends a new child of node parent with name id name of kind, without looking for one of that
 * name: for builders that never add the same (parent, name) twice (query_flame.c adds sorted
 * paths). flamegraph__child does not find appended children: use one or the other under a
 * parent. Returns the child's id, or -ENOMEM / -EINVAL. */
int64_t flamegraph__append(struct flamegraph *fg, uint32_t parent, uint32_t name,
			   enum flame_kind kind);
/* Adds value to node's own value (self) on the selection side, or on the baseline side when
 * baseline. Units are the caller's (samples, ns). -EINVAL: no such node. */
int flamegraph__add(struct flamegraph *fg, uint32_t node, uint64_t value, bool baseline);
/* Nodes in the tree (the root included). */
size_t flamegraph__nodes(const struct flamegraph *fg);

/* What the JSON says beside the tree. */
struct flamegraph_json_opts {
	const char *type;		  /* "cpu", "offcpu", "wall" */
	const char *unit;		  /* "samples", "nanoseconds" */
	const char *from, *to;		  /* RFC 3339 */
	int64_t from_unix_ns, to_unix_ns; /* the same */
	double min_share;   /* in [0, 1): nodes below it on both sides become "(other)" */
	bool with_baseline; /* a baseline was asked for: "baseline_total" is written */
};

/* Sums self values up the tree into values (value = self + the children's values, on each
 * side), then writes the JSON of docs/api.md's /api/v1/flamegraph: {"type", "unit", "from",
 * "from_unix_ns", "to", "to_unix_ns", "total", "baseline_total"?, "root": {"name": "all", "kind",
 * "value", "self", "baseline", "children": [...]}, "truncated_nodes"}. Under each node, the
 * children whose value is below min_share of the root's value and whose baseline is below min_share
 * of the root's baseline (a zero counts as below) merge into one child "(other)" of kind "other" (a
 * leaf: its self is its value); children are sorted by value, largest first (ties: by baseline,
 * then by name). Past FLAME_MAX_NODES nodes to write, the smallest merge into "(other)" too.
 * truncated_nodes counts the nodes not written (merged ones and all below them); "max_nodes"
 * says FLAME_MAX_NODES.
 * Returns a malloc'd NUL-terminated string, or NULL on ENOMEM. */
char *flamegraph__json(struct flamegraph *fg, const struct flamegraph_json_opts *o);

#endif
