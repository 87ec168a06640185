// SPDX-License-Identifier: GPL-2.0-only
/* Repeat tracking: each thread's last repeatable off-CPU stack, for the repeats that name it
 * (repeats.h). */
#include "repeats.h"

#include <errno.h>
#include <stdlib.h>

#include "intern.h"

struct repeat_key {
	const struct repeats *r;
	uint32_t pid, tid;
};

static uint64_t repeat_hash(uint32_t pid, uint32_t tid)
{
	return hashmap__combine(hashmap__mix64(pid), tid);
}

static bool repeat_eq(const void *ctx, uint32_t i)
{
	const struct repeat_key *k = ctx;

	return k->r->v[i].pid == k->pid && k->r->v[i].tid == k->tid;
}

struct repeat_entry *repeats__find(struct repeats *r, uint32_t pid, uint32_t tid)
{
	struct repeat_key k = {r, pid, tid};
	uint32_t i;

	return hashmap__find(&r->idx, repeat_hash(pid, tid), repeat_eq, &k, &i) ? &r->v[i] : NULL;
}

int repeats__keep(struct repeats *r, struct intern_table *stacks, const struct tp_sample *s,
		  struct stack *stack)
{
	struct repeat_entry *e = repeats__find(r, s->hdr.pid, s->tid);

	if (!e) {
		if (r->nr == r->cap) {
			size_t cap = r->cap ? 2 * r->cap : 64;
			struct repeat_entry *v = realloc(r->v, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			r->v = v;
			r->cap = cap;
		}
		if (hashmap__insert(&r->idx, repeat_hash(s->hdr.pid, s->tid), (uint32_t)r->nr))
			return -ENOMEM;
		e = &r->v[r->nr++];
		*e = (struct repeat_entry){.pid = s->hdr.pid, .tid = s->tid};
	} else {
		intern_table__put(stacks, e->stack);
	}
	e->start_ns = s->hdr.start_ns;
	e->ts_ns = s->hdr.ts_ns;
	e->stack = intern_table__ref(stack);
	return 0;
}

/* BPF sends repeats of a sample for less than a drain period after it, and samples come in ring
 * buffer order (their stamps a few us apart at most), so entries two periods older than the
 * newest sample are done. */
void repeats__prune(struct repeats *r, struct intern_table *stacks, uint64_t drain_ns)
{
	uint64_t keep = 2 * drain_ns;
	struct hashmap idx = {0};
	size_t n = 0;

	if (!r->nr || r->newest_ns < keep)
		return;
	for (size_t i = 0; i < r->nr; i++)
		n += r->v[i].ts_ns < r->newest_ns - keep;
	if (!n)
		return;
	n = 0;
	/* the new index first: without the memory for it, nothing is dropped (next time) */
	if (hashmap__reserve(&idx, r->nr))
		return;
	for (size_t i = 0; i < r->nr; i++) {
		if (r->v[i].ts_ns < r->newest_ns - keep) {
			intern_table__put(stacks, r->v[i].stack);
			continue;
		}
		r->v[n] = r->v[i];
		hashmap__insert(&idx, repeat_hash(r->v[n].pid, r->v[n].tid), (uint32_t)n);
		n++;
	}
	hashmap__clear(&r->idx);
	r->idx = idx;
	r->nr = n;
}

void repeats__free(struct repeats *r, struct intern_table *stacks)
{
	for (size_t i = 0; i < r->nr; i++)
		intern_table__put(stacks, r->v[i].stack);
	free(r->v);
	hashmap__clear(&r->idx);
	*r = (struct repeats){0};
}
