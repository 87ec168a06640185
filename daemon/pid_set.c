// SPDX-License-Identifier: GPL-2.0-only
/* A set of processes by pid and start time, open addressing (pid_set.h). */
#include "pid_set.h"

#include <stdlib.h>

#include "hashmap.h"
#include "xalloc.h"

void pid_set__init(struct pid_set *s)
{
	s->mask = 1023;
	s->count = 0;
	s->pids = xcalloc(s->mask + 1, sizeof(uint32_t));
	s->starts = xcalloc(s->mask + 1, sizeof(uint64_t));
}

void pid_set__free(struct pid_set *s)
{
	free(s->pids);
	free(s->starts);
}

static size_t pid_slot(const struct pid_set *s, uint32_t pid)
{
	size_t h = hashmap__mix64(pid) & s->mask;

	while (s->pids[h] && s->pids[h] != pid)
		h = (h + 1) & s->mask;
	return h;
}

bool pid_set__has(const struct pid_set *s, uint32_t pid, uint64_t start)
{
	size_t h = pid_slot(s, pid);

	return s->pids[h] == pid && s->starts[h] == start;
}

void pid_set__add(struct pid_set *s, uint32_t pid, uint64_t start)
{
	size_t h;

	if ((s->count + 1) * 2 > s->mask + 1) {
		struct pid_set n = {.mask = s->mask * 2 + 1};

		n.pids = xcalloc(n.mask + 1, sizeof(*n.pids));
		n.starts = xcalloc(n.mask + 1, sizeof(*n.starts));
		for (size_t i = 0; i <= s->mask; i++)
			if (s->pids[i])
				pid_set__add(&n, s->pids[i], s->starts[i]);
		pid_set__free(s);
		*s = n;
	}
	h = pid_slot(s, pid);
	s->count += s->pids[h] != pid;
	s->pids[h] = pid;
	s->starts[h] = start;
}

bool pid_set__del(struct pid_set *s, uint32_t pid)
{
	size_t h = pid_slot(s, pid), j;

	if (s->pids[h] != pid)
		return false;
	s->pids[h] = 0;
	s->count--;
	/* backward-shift deletion keeps probe chains intact */
	for (j = (h + 1) & s->mask; s->pids[j]; j = (j + 1) & s->mask) {
		uint32_t p = s->pids[j];
		uint64_t st = s->starts[j];

		s->pids[j] = 0;
		s->count--;
		pid_set__add(s, p, st);
	}
	return true;
}

uint32_t pid_set__evict_oldest(struct pid_set *s)
{
	uint32_t pid = 0;
	uint64_t oldest = UINT64_MAX;

	for (size_t i = 0; i <= s->mask; i++) {
		if (s->pids[i] && (!pid || s->starts[i] < oldest)) {
			pid = s->pids[i];
			oldest = s->starts[i];
		}
	}
	if (pid)
		pid_set__del(s, pid);
	return pid;
}
