/* SPDX-License-Identifier: GPL-2.0-only */
/* Repeat tracking: the stacks that off-CPU repeats name. BPF sends a thread's off-CPU sample
 * whose stacks it verified unchanged since the thread's last TP_SAMPLE_REPEATABLE sample as a
 * TP_SAMPLE_REPEAT, without frames; the collector keeps each thread's last repeatable stack here
 * and looks it up for its repeats. One thread (the drain loop's); no locking. */
#ifndef TAILPROF_REPEATS_H
#define TAILPROF_REPEATS_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "tailprof.h"

struct intern_table;
struct stack;

/* The stacks of a thread's last TP_SAMPLE_REPEATABLE off-CPU sample, which its repeats
 * (TP_SAMPLE_REPEAT: no frames) name; kept until two drain periods after ts_ns. */
struct repeat_entry {
	uint32_t pid, tid;
	uint64_t start_ns;
	uint64_t ts_ns;
	struct stack *stack; /* a reference */
};

/* Zero-initialised: empty. */
struct repeats {
	struct repeat_entry *v;
	size_t nr, cap;
	struct hashmap idx; /* (pid, tid) -> index in v */
	uint64_t newest_ns; /* the newest ts_ns of an off-CPU sample seen (the caller sets it) */
};

/* The entry of thread (pid, tid), or NULL. */
struct repeat_entry *repeats__find(struct repeats *r, uint32_t pid, uint32_t tid);
/* Keeps stack (a value of stacks; the caller's reference stays the caller's) as the stacks of
 * the repeats of sample s's thread. Returns 0 or -ENOMEM. */
int repeats__keep(struct repeats *r, struct intern_table *stacks, const struct tp_sample *s,
		  struct stack *stack);
/* Drops the entries that no repeat can name any more (two drain periods older than newest_ns),
 * and their references into stacks. */
void repeats__prune(struct repeats *r, struct intern_table *stacks, uint64_t drain_ns);
/* Drops every entry and its reference into stacks, and the memory: r is empty again. */
void repeats__free(struct repeats *r, struct intern_table *stacks);

#endif
