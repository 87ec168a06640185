// SPDX-License-Identifier: GPL-2.0-only
/* The unwind-work queue: the unwinder's work of a drain, run after the store lock is released
 * (unwind_queue.h). */
#include "unwind_queue.h"

#include <errno.h>
#include <stdlib.h>

#include "unwinder.h"

static int push(struct unwind_queue *q, const struct unwind_req *r)
{
	if (q->nr == q->cap) {
		size_t n = q->cap ? 2 * q->cap : 64;
		struct unwind_req *v = realloc(q->ops, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		q->ops = v;
		q->cap = n;
	}
	q->ops[q->nr++] = *r;
	return 0;
}

int unwind_queue__push(struct unwind_queue *q, enum unwind_op op, uint32_t pid, uint64_t start_ns)
{
	return push(q, &(struct unwind_req){.op = op, .pid = pid, .start_ns = start_ns});
}

int unwind_queue__push_layout(struct unwind_queue *q, uint32_t pid, uint64_t start_ns,
			      const struct unwind_layout *lay)
{
	return push(q,
		    &(struct unwind_req){
			.op = UNWIND_ADD_LAYOUT, .pid = pid, .start_ns = start_ns, .layout = *lay});
}

void unwind_queue__run(struct unwind_queue *q, struct unwinder *u)
{
	for (size_t i = 0; i < q->nr; i++) {
		const struct unwind_req *r = &q->ops[i];

		switch (r->op) {
		case UNWIND_ADD:
			unwinder__add_process(u, r->pid, r->start_ns);
			break;
		case UNWIND_RESCAN:
		case UNWIND_RESCAN_SURE:
			unwinder__rescan(u, r->pid, r->start_ns, r->op == UNWIND_RESCAN_SURE);
			break;
		case UNWIND_ADD_LAYOUT:
			unwinder__add_layout_process(u, r->pid, r->start_ns, &r->layout);
			break;
		case UNWIND_FORGET:
			unwinder__forget_process(u, r->pid, r->start_ns);
			break;
		}
	}
	q->nr = 0;
	unwinder__end_round(u);
}

void unwind_queue__free(struct unwind_queue *q)
{
	free(q->ops);
	*q = (struct unwind_queue){0};
}
