/* SPDX-License-Identifier: GPL-2.0-only */
/* The unwind-work queue: what the unwinder must do for the events of one drain, queued under the
 * store lock and done after it. Building unwind tables takes milliseconds per object, so the
 * drain queues the work, in event order, and runs it once the lock is released: queries do not
 * wait for it. One thread (the drain loop's); no locking. */
#ifndef TAILPROF_UNWIND_QUEUE_H
#define TAILPROF_UNWIND_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "unwinder.h"

enum unwind_op {
	UNWIND_ADD,	    /* unwinder__add_process */
	UNWIND_RESCAN,	    /* unwinder__rescan, a walk that ended past its leaf */
	UNWIND_RESCAN_SURE, /* unwinder__rescan that no backoff delays: a walk that ended at its
			     * leaf (new code for sure), the recheck after an exec */
	UNWIND_FORGET,	    /* unwinder__forget_process (start_ns: the event's ts_ns) */
	UNWIND_ADD_LAYOUT,  /* unwinder__add_layout_process (layout) */
};

struct unwind_req {
	enum unwind_op op;
	uint32_t pid;
	uint64_t start_ns;
	struct unwind_layout layout; /* UNWIND_ADD_LAYOUT's */
};

/* Zero-initialised: empty. */
struct unwind_queue {
	struct unwind_req *ops;
	size_t nr, cap;
};

/* Queues op on process (pid, start_ns). Returns 0, or -ENOMEM (the request is lost). */
int unwind_queue__push(struct unwind_queue *q, enum unwind_op op, uint32_t pid, uint64_t start_ns);
/* Queues UNWIND_ADD_LAYOUT of process (pid, start_ns), made from static layout lay. Returns 0, or
 * -ENOMEM (the request is lost). */
int unwind_queue__push_layout(struct unwind_queue *q, uint32_t pid, uint64_t start_ns,
			      const struct unwind_layout *lay);
/* Does the queued requests on u, in the order queued, and empties the queue; then ends the
 * unwinder's round (unwinder__end_round). */
void unwind_queue__run(struct unwind_queue *q, struct unwinder *u);
/* Frees the queue's memory (requests not run are dropped): q is empty again. */
void unwind_queue__free(struct unwind_queue *q);

#endif
