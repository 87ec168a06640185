/* SPDX-License-Identifier: GPL-2.0-only */
/* A set of processes, pid -> start_ns: the processes the collector knows (BPF's known_procs marks
 * them too, and forgets them at exec and exit).
 * Open addressing, pid 0 = empty; it grows by doubling and aborts when it cannot (STYLE.md). One
 * thread; no locking. */
#ifndef TAILPROF_PID_SET_H
#define TAILPROF_PID_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pid_set {
	uint32_t *pids;
	uint64_t *starts;
	size_t mask, count;
};

/* An empty set of 1,024 slots. */
void pid_set__init(struct pid_set *s);
void pid_set__free(struct pid_set *s);
/* Whether process (pid, start) is in the set (pid with another start is not). */
bool pid_set__has(const struct pid_set *s, uint32_t pid, uint64_t start);
/* Adds pid with start, replacing pid's earlier one. */
void pid_set__add(struct pid_set *s, uint32_t pid, uint64_t start);
/* Removes pid, whatever its start; returns whether it was there. */
bool pid_set__del(struct pid_set *s, uint32_t pid);
/* Removes the process that started first (smallest start; among equal starts, any) and returns
 * its pid, or 0 when the set is empty. A scan of the whole table: for when a cap is reached. */
uint32_t pid_set__evict_oldest(struct pid_set *s);

#endif
