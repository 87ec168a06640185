// SPDX-License-Identifier: GPL-2.0-only
/* One side of a comparison: its string table, its release, and the checks that let a reader
 * (the statistics, the snapshot reader) index it without bounds checks of its own. */
#include "cmp_side.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_hist.h"

int64_t cmp_side__intern(struct cmp_side *side, const char *s)
{
	char **strings, *copy;

	for (uint32_t i = 0; i < side->nr_strings; i++)
		if (!strcmp(side->strings[i], s))
			return i;
	if (side->nr_strings == UINT32_MAX)
		return -ENOMEM;
	copy = strdup(s);
	/* one more each time: the table may come from a builder that sized it exactly */
	strings = copy ? realloc(side->strings, (side->nr_strings + 1) * sizeof(*strings)) : NULL;
	if (!strings) {
		free(copy);
		return -ENOMEM;
	}
	side->strings = strings;
	strings[side->nr_strings] = copy;
	return side->nr_strings++;
}

static void window_free(struct cmp_window *w)
{
	for (uint32_t i = 0; w->stages && i < w->nr_stages; i++)
		free(w->stages[i].cells);
	free(w->stages);
	free(w->runq_cells);
	free(w->stacks);
}

int cmp_side__cells(const uint64_t *dense, struct hist_cell **out, uint32_t *nr)
{
	uint32_t n = 0;

	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		n += dense[b] != 0;
	*nr = 0;
	*out = malloc((n ? n : 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		if (dense[b])
			(*out)[(*nr)++] = (struct hist_cell){
			    b, dense[b] > UINT32_MAX ? UINT32_MAX : (uint32_t)dense[b]};
	return 0;
}

void cmp_side__free(struct cmp_side *side)
{
	if (!side)
		return;
	for (uint32_t i = 0; side->strings && i < side->nr_strings; i++)
		free(side->strings[i]);
	free(side->strings);
	for (uint32_t i = 0; side->stacks && i < side->nr_stacks; i++)
		free(side->stacks[i].frames);
	free(side->stacks);
	for (uint32_t i = 0; side->windows && i < side->nr_windows; i++)
		window_free(&side->windows[i]);
	free(side->windows);
	free(side);
}

/* Writes the first problem into why (the caller's why and whylen); the value is false. */
#define BAD(...) (snprintf(why, whylen, __VA_ARGS__), false)

/* Histogram cells: buckets in range and strictly ascending, counts summing to count. what names
 * them for why ("window 3 runq", "window 3 stage 1"). */
static bool cells_valid(const struct hist_cell *cells, uint32_t nr, uint64_t count,
			const char *what, char *why, size_t whylen)
{
	uint64_t sum = 0;

	if (nr && !cells)
		return BAD("%s: %" PRIu32 " cells but no array", what, nr);
	for (uint32_t i = 0; i < nr; i++) {
		if (cells[i].bucket >= TP_HIST_BUCKETS)
			return BAD("%s cell %" PRIu32 ": bucket %" PRIu32
				   " out of range (%u buckets)",
				   what, i, cells[i].bucket, (unsigned int)TP_HIST_BUCKETS);
		if (i && cells[i].bucket <= cells[i - 1].bucket)
			return BAD("%s cell %" PRIu32 ": bucket %" PRIu32
				   " not after the previous cell's %" PRIu32,
				   what, i, cells[i].bucket, cells[i - 1].bucket);
		sum += cells[i].count;
	}
	if (sum != count)
		return BAD("%s: cells sum to %" PRIu64 ", not its count %" PRIu64, what, sum,
			   count);
	return true;
}

static bool conditions_valid(const struct cmp_conditions *c, char *why, size_t whylen)
{
	const struct {
		const char *name, *s;
		size_t len;
	} fields[] = {
	    {"host", c->host, sizeof(c->host)},
	    {"kernel", c->kernel, sizeof(c->kernel)},
	    {"version", c->version, sizeof(c->version)},
	    {"snapshot", c->snapshot, sizeof(c->snapshot)},
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!memchr(fields[i].s, '\0', fields[i].len))
			return BAD("conditions: %s is not NUL-terminated", fields[i].name);
	return true;
}

/* count * max_ns, UINT64_MAX when that does not fit */
static uint64_t most_ns(uint64_t count, uint64_t max_ns)
{
	uint64_t v;

	return __builtin_mul_overflow(count, max_ns, &v) ? UINT64_MAX : v;
}

/* With windows, the range and the units the statistics divide by must make sense. */
static bool range_valid(const struct cmp_conditions *c, char *why, size_t whylen)
{
	if (c->from_unix_ns >= c->to_unix_ns)
		return BAD("conditions: from %" PRId64 " is not before to %" PRId64,
			   c->from_unix_ns, c->to_unix_ns);
	if (!c->window_ns)
		return BAD("conditions: window_ns is 0");
	if (!c->frequency_hz)
		return BAD("conditions: frequency_hz is 0");
	if (!c->sample_period_ns)
		return BAD("conditions: sample_period_ns is 0");
	return true;
}

static bool window_valid(const struct cmp_side *side, uint32_t i, char *why, size_t whylen)
{
	const struct cmp_window *w = &side->windows[i];
	char what[48];

	if (w->end_unix_ns <= w->start_unix_ns)
		return BAD("window %" PRIu32 ": end %" PRId64 " is not after its start %" PRId64, i,
			   w->end_unix_ns, w->start_unix_ns);
	if (i && w->start_unix_ns < side->windows[i - 1].end_unix_ns)
		return BAD("window %" PRIu32 " starts before window %" PRIu32 " ends (%" PRId64
			   " < %" PRId64 "; windows go oldest first, without overlap)",
			   i, i - 1, w->start_unix_ns, side->windows[i - 1].end_unix_ns);
	if (w->start_unix_ns < side->cond.from_unix_ns || w->end_unix_ns > side->cond.to_unix_ns)
		return BAD("window %" PRIu32 ": [%" PRId64 ", %" PRId64
			   ") is outside the side's range [%" PRId64 ", %" PRId64 "]",
			   i, w->start_unix_ns, w->end_unix_ns, side->cond.from_unix_ns,
			   side->cond.to_unix_ns);
	snprintf(what, sizeof(what), "window %" PRIu32 " runq", i);
	if (!cells_valid(w->runq_cells, w->nr_runq_cells, w->runq_count, what, why, whylen))
		return false;
	if (w->nr_stages && !w->stages)
		return BAD("window %" PRIu32 ": %" PRIu32 " stages but no array", i, w->nr_stages);
	for (uint32_t j = 0; j < w->nr_stages; j++) {
		const struct cmp_stage_win *st = &w->stages[j];

		if (st->name >= side->nr_strings)
			return BAD("window %" PRIu32 " stage %" PRIu32 ": name %" PRIu32
				   " out of bounds (%" PRIu32 " strings)",
				   i, j, st->name, side->nr_strings);
		snprintf(what, sizeof(what), "window %" PRIu32 " stage %" PRIu32, i, j);
		if (!cells_valid(st->cells, st->nr_cells, st->count, what, why, whylen))
			return false;
		if (st->sum_ns > most_ns(st->count, st->max_ns))
			return BAD("%s: latency sum %" PRIu64 " ns is more than its %" PRIu64
				   " requests of at most %" PRIu64 " ns can take",
				   what, st->sum_ns, st->count, st->max_ns);
	}
	if (w->nr_stacks && !w->stacks)
		return BAD("window %" PRIu32 ": %" PRIu32 " stack counts but no array", i,
			   w->nr_stacks);
	for (uint32_t j = 0; j < w->nr_stacks; j++)
		if (w->stacks[j].stack >= side->nr_stacks)
			return BAD("window %" PRIu32 " stack count %" PRIu32 ": stack %" PRIu32
				   " out of bounds (%" PRIu32 " stacks)",
				   i, j, w->stacks[j].stack, side->nr_stacks);
	return true;
}

bool cmp_side__valid(const struct cmp_side *side, char *why, size_t whylen)
{
	if (!side)
		return BAD("no side");
	if (!conditions_valid(&side->cond, why, whylen))
		return false;
	if (side->nr_strings && !side->strings)
		return BAD("%" PRIu32 " strings but no table", side->nr_strings);
	for (uint32_t i = 0; i < side->nr_strings; i++)
		if (!side->strings[i])
			return BAD("string %" PRIu32 " is NULL", i);
	if (side->nr_stacks && !side->stacks)
		return BAD("%" PRIu32 " stacks but no array", side->nr_stacks);
	for (uint32_t i = 0; i < side->nr_stacks; i++) {
		const struct cmp_stack *st = &side->stacks[i];

		if (st->nr_frames && !st->frames)
			return BAD("stack %" PRIu32 ": %" PRIu32 " frames but no array", i,
				   st->nr_frames);
		for (uint32_t j = 0; j < st->nr_frames; j++)
			if (st->frames[j] >= side->nr_strings)
				return BAD("stack %" PRIu32 " frame %" PRIu32 ": string %" PRIu32
					   " out of bounds (%" PRIu32 " strings)",
					   i, j, st->frames[j], side->nr_strings);
	}
	if (side->nr_windows && !side->windows)
		return BAD("%" PRIu32 " windows but no array", side->nr_windows);
	if (side->nr_windows && !range_valid(&side->cond, why, whylen))
		return false;
	for (uint32_t i = 0; i < side->nr_windows; i++)
		if (!window_valid(side, i, why, whylen))
			return false;
	return true;
}
