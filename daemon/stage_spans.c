// SPDX-License-Identifier: GPL-2.0-only
/* Slow spans one by one: their ids, finding one, and where each one's time went, exact from the
 * stage programs or estimated from the per-sample records of its thread. */
#include "stages.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "window.h"

void stages__span_id(const struct tp_span *sp, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu32 "-%" PRIu64, sp->tid, (uint64_t)sp->start_ns);
}

/* Parses id into (tid, start_ns): the exact text stages__span_id() gives. */
static bool parse_id(const char *id, uint32_t *tid, uint64_t *start_ns)
{
	char again[SPAN_ID_LEN];
	unsigned long long start;
	unsigned int t;
	size_t len;
	int used = 0;

	if (!id)
		return false;
	len = strlen(id);
	if (!len || len > 64 || strspn(id, "0123456789-") != len)
		return false;
	if (sscanf(id, "%u-%llu%n", &t, &start, &used) != 2 || (size_t)used != len)
		return false;
	/* no leading zeros, no overflow: it must read back the same */
	stages__span_id(&(struct tp_span){.tid = t, .start_ns = start}, again, sizeof(again));
	if (strcmp(again, id))
		return false;
	*tid = t;
	*start_ns = start;
	return true;
}

bool stages__span_id_valid(const char *id)
{
	uint32_t tid;
	uint64_t start;

	return parse_id(id, &tid, &start);
}

const struct tp_span *stages__find_span(struct window *const *ws, size_t n, const char *id,
					struct window **where)
{
	uint32_t tid;
	uint64_t start;

	if (!parse_id(id, &tid, &start)) {
		errno = EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!ws[i]->stages)
			continue;
		for (uint32_t st_id = 1; st_id < TP_MAX_STAGES; st_id++) {
			const struct stage_stats *st = ws[i]->stages->by_id[st_id];

			for (uint32_t k = 0; st && k < st->nr_spans; k++) {
				if (st->spans[k].tid != tid || st->spans[k].start_ns != start)
					continue;
				if (where)
					*where = ws[i];
				return &st->spans[k];
			}
		}
	}
	errno = ENOENT;
	return NULL;
}

/* The thread's CPU samples within sp (times the sampling period) and its captured blocks
 * clipped to sp, from the records of ws[0..n). */
static void estimate(const struct tp_span *sp, struct window *const *ws, size_t n, uint64_t *cpu,
		     uint64_t *offcpu)
{
	uint64_t start = sp->start_ns, end = sp->start_ns + sp->duration_ns;

	*cpu = *offcpu = 0;
	for (size_t i = 0; i < n; i++) {
		const struct window *w = ws[i];

		/* records are in drain order; a window that ends before the span or starts after
		 * it may still hold a straggler of it, so every record is looked at */
		for (size_t k = 0; k < w->nr_records; k++) {
			const struct window_record *r = &w->records[k];
			uint64_t a, b;

			if (r->tid != sp->tid || r->pid != sp->pid)
				continue;
			if (!r->blocked_ns) {
				if (r->ts_ns >= start && r->ts_ns < end)
					*cpu += w->sample_period_ns;
				continue;
			}
			a = r->ts_ns > start ? r->ts_ns : start;
			b = r->ts_ns + r->blocked_ns < end ? r->ts_ns + r->blocked_ns : end;
			if (b > a)
				*offcpu += b - a;
		}
	}
}

void stages__span_accounting(const struct tp_span *sp, struct window *const *ws, size_t n,
			     struct span_accounting *out)
{
	uint64_t dur = sp->duration_ns, cpu, runq, off;

	if (sp->accounting == TP_ACCT_EXACT || sp->accounting == TP_ACCT_SAMPLED) {
		cpu = sp->cpu_ns < dur ? sp->cpu_ns : dur;
		runq = sp->runq_ns < dur - cpu ? sp->runq_ns : dur - cpu;
	} else {
		estimate(sp, ws, n, &cpu, &off);
		/* blocks are measured, samples stand for a period each: blocks first */
		if (off > dur)
			off = dur;
		if (cpu > dur - off)
			cpu = dur - off;
		runq = dur - cpu - off;
	}
	out->cpu_ns = cpu;
	out->runq_ns = runq;
	out->offcpu_ns = dur - cpu - runq;
	out->exact = sp->accounting == TP_ACCT_EXACT;
}

void stages__settle_spans(struct window *w, struct window *const *ws, size_t n)
{
	struct span_accounting a;

	if (!w->stages)
		return;
	for (uint32_t id = 1; id < TP_MAX_STAGES; id++) {
		struct stage_stats *st = w->stages->by_id[id];

		for (uint32_t k = 0; st && k < st->nr_spans; k++) {
			struct tp_span *sp = &st->spans[k];

			if (sp->accounting != TP_ACCT_NONE)
				continue;
			stages__span_accounting(sp, ws, n, &a);
			sp->cpu_ns = a.cpu_ns;
			sp->runq_ns = a.runq_ns;
			sp->accounting = TP_ACCT_SAMPLED;
		}
	}
}
