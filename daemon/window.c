// SPDX-License-Identifier: GPL-2.0-only
/* Time windows of (stack, task) sample counts and the fixed ring that holds them. */
#include "window.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stages.h"
#include "gc.h"

const char *const window_drop_names[DROP_NR] = {
    [DROP_RINGBUF_FULL] = "ringbuf_full",
    [DROP_KERNEL_STACK] = "kernel_stack",
    [DROP_USER_STACK] = "user_stack",
    [DROP_EVENT_LOST] = "event_lost",
    [DROP_LATE] = "late",
    [DROP_NO_MEMORY] = "no_memory",
    [DROP_REPEAT_UNKNOWN] = "repeat_unknown",
    [DROP_STACK_TABLE_FULL] = "stack_table_full",
    [DROP_TASK_TABLE_FULL] = "task_table_full",
};

/* Length of the valid UTF-8 sequence (RFC 3629: no overlongs, surrogates or values past
 * U+10FFFF) at s, or 0. */
static int utf8_len(const unsigned char *s)
{
	int n = s[0] < 0x80		      ? 1
		: s[0] >= 0xc2 && s[0] < 0xe0 ? 2
		: s[0] >= 0xe0 && s[0] < 0xf0 ? 3
		: s[0] >= 0xf0 && s[0] < 0xf5 ? 4
					      : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
	    (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

void task__sanitize_name(char *s)
{
	unsigned char *p = (unsigned char *)s;

	/* printable ASCII, the common case, stays as it is */
	while (*p >= 0x20 && *p < 0x7f)
		p++;
	while (*p) {
		int n = utf8_len(p);

		if (n == 1 && (*p < 0x20 || *p == 0x7f)) {
			*p++ = '?';
		} else if (n) {
			p += n;
		} else {
			/* a lead byte whose sequence the end cut off: drop the rest */
			size_t rest = strlen((char *)p);

			if (*p >= 0xc2 && *p < 0xf5 && rest < 4) {
				bool cut = true;

				for (size_t i = 1; i < rest; i++)
					cut &= (p[i] & 0xc0) == 0x80;
				if (cut) {
					memset(p, 0, rest);
					break;
				}
			}
			*p++ = '?';
		}
	}
}

struct window_ring {
	struct window_ring_opts opts;
	struct window **slots; /* circular, nr_windows */
	size_t head;	       /* slot of the oldest window */
	size_t count;
	/* evicted windows that pins keep, oldest first */
	struct window **pinned;
	size_t nr_pinned, cap_pinned;
};

struct window *window__new(uint64_t start_ns, uint64_t end_ns, uint32_t nr_cpus)
{
	struct window *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->start_ns = start_ns;
	w->end_ns = end_ns;
	w->nr_cpus = nr_cpus;
	w->cpu_received = calloc(nr_cpus, sizeof(*w->cpu_received));
	w->cpu_sampled_ns = calloc(nr_cpus, sizeof(*w->cpu_sampled_ns));
	if (!w->cpu_received || !w->cpu_sampled_ns) {
		window__free(w, NULL, NULL);
		errno = ENOMEM;
		return NULL;
	}
	return w;
}

void window__free(struct window *w, struct intern_table *stacks, struct intern_table *tasks)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nr_entries; i++) {
		intern_table__put(stacks, w->entries[i].stack);
		intern_table__put(tasks, w->entries[i].task);
	}
	free(w->entries);
	hashmap__clear(&w->index);
	if (w->sched) {
		free(w->sched->procs);
		hashmap__clear(&w->sched->index);
		free(w->sched);
	}
	free(w->cpu_received);
	free(w->cpu_sampled_ns);
	free(w->records);
	stage_window__free(w->stages);
	gc_window__free(w->gc);
	free(w);
}

static uint64_t entry_hash(const struct stack *s, const struct task *t)
{
	return hashmap__combine(hashmap__hash_ptr(s), (uintptr_t)t);
}

struct entry_key {
	const struct window *w;
	const struct stack *stack;
	const struct task *task;
};

static bool entry_eq(const void *ctx, uint32_t i)
{
	const struct entry_key *k = ctx;

	return k->w->entries[i].stack == k->stack && k->w->entries[i].task == k->task;
}

/* The entry of (stack, task) in w, created if needed, consuming one reference on each (kept by a
 * new entry, dropped otherwise). NULL on ENOMEM (references dropped). */
static struct window_entry *entry_of(struct window *w, struct stack *stack, struct task *task,
				     struct intern_table *stacks, struct intern_table *tasks)
{
	struct entry_key key = {w, stack, task};
	uint64_t h = entry_hash(stack, task);
	uint32_t i;

	if (hashmap__find(&w->index, h, entry_eq, &key, &i)) {
		intern_table__put(stacks, stack);
		intern_table__put(tasks, task);
		return &w->entries[i];
	}
	if (w->nr_entries == w->cap_entries) {
		size_t cap = w->cap_entries ? w->cap_entries * 2 : 32;
		struct window_entry *e = realloc(w->entries, cap * sizeof(*e));

		if (!e)
			goto nomem;
		w->entries = e;
		w->cap_entries = cap;
	}
	if (hashmap__insert(&w->index, h, w->nr_entries))
		goto nomem;
	w->entries[w->nr_entries] = (struct window_entry){.stack = stack, .task = task};
	w->counted = false;
	return &w->entries[w->nr_entries++];
nomem:
	intern_table__put(stacks, stack);
	intern_table__put(tasks, task);
	return NULL;
}

int window__add(struct window *w, struct stack *stack, struct task *task, uint64_t count,
		struct intern_table *stacks, struct intern_table *tasks)
{
	struct window_entry *e = entry_of(w, stack, task, stacks, tasks);

	if (!e) {
		w->drops[DROP_NO_MEMORY] += count;
		return -ENOMEM;
	}
	e->count += count;
	w->samples += count;
	return 0;
}

int window__add_offcpu(struct window *w, struct stack *stack, struct task *task,
		       uint64_t blocked_ns, struct intern_table *stacks, struct intern_table *tasks)
{
	struct window_entry *e = entry_of(w, stack, task, stacks, tasks);

	if (!e) {
		w->drops[DROP_NO_MEMORY]++;
		return -ENOMEM;
	}
	e->offcpu_ns += blocked_ns;
	e->offcpu_samples++;
	w->offcpu_samples++;
	w->offcpu_ns += blocked_ns;
	return 0;
}

uint32_t window__heat_row(const struct window *w, uint64_t ts_ns)
{
	uint64_t len = w->end_ns - w->start_ns, row;

	if (ts_ns <= w->start_ns || !len)
		return 0;
	row = (uint64_t)((unsigned __int128)(ts_ns - w->start_ns) * TP_HEAT_ROWS / len);
	return row < TP_HEAT_ROWS ? (uint32_t)row : TP_HEAT_ROWS - 1;
}

int window__add_recorded(struct window *w, struct stack *stack, struct task *task, uint64_t ts_ns,
			 uint64_t blocked_ns, uint32_t cpu, struct intern_table *stacks,
			 struct intern_table *tasks)
{
	struct window_entry *e = entry_of(w, stack, task, stacks, tasks);
	struct window_record *rec;

	if (!e) {
		w->drops[DROP_NO_MEMORY]++;
		return -ENOMEM;
	}
	if (blocked_ns) {
		e->offcpu_ns += blocked_ns;
		e->offcpu_samples++;
		w->offcpu_samples++;
		w->offcpu_ns += blocked_ns;
		w->heat_offcpu[window__heat_row(w, ts_ns)]++;
	} else {
		e->count++;
		w->samples++;
		w->heat_cpu[window__heat_row(w, ts_ns)]++;
	}
	if (w->records_dropped)
		return 0;
	if (w->nr_records == w->cap_records) {
		size_t cap = w->cap_records ? 2 * w->cap_records : 256;
		struct window_record *v = realloc(w->records, cap * sizeof(*v));

		if (!v) {
			w->records_lost++;
			return 0;
		}
		w->records = v;
		w->cap_records = cap;
	}
	rec = &w->records[w->nr_records++];
	*rec = (struct window_record){
	    .ts_ns = blocked_ns < ts_ns ? ts_ns - blocked_ns : 0,
	    .blocked_ns = blocked_ns,
	    .pid = task->pid,
	    .tid = task->tid,
	    .entry = (uint32_t)(e - w->entries),
	    .cpu = cpu,
	};
	return 0;
}

void window__drop_records(struct window *w)
{
	if (!w || w->pins || w->records_recent)
		return;
	free(w->records);
	w->records = NULL;
	w->nr_records = w->cap_records = 0;
	w->records_dropped = true;
}

static struct window_sched *sched_of(struct window *w)
{
	if (!w->sched)
		w->sched = calloc(1, sizeof(*w->sched));
	return w->sched;
}

int window__add_runq(struct window *w, uint64_t count, uint64_t sum_ns, uint64_t max_ns,
		     const uint64_t *buckets)
{
	struct window_sched *ws = sched_of(w);

	if (!ws)
		return -ENOMEM;
	ws->runq_count += count;
	ws->runq_sum_ns += sum_ns;
	if (max_ns > ws->runq_max_ns)
		ws->runq_max_ns = max_ns;
	for (uint32_t b = 0; b < TP_HIST_BUCKETS; b++)
		ws->runq_buckets[b] += buckets[b];
	return 0;
}

static bool sched_proc_eq(const void *ctx, uint32_t i)
{
	const struct window_sched *ws = ((const void *const *)ctx)[0];
	const uint32_t *pid = ((const void *const *)ctx)[1];

	return ws->procs[i].pid == *pid;
}

int window__add_sched_proc(struct window *w, const struct window_sched_proc *p)
{
	struct window_sched *ws = sched_of(w);
	struct window_sched_proc *e;
	const void *ctx[2] = {ws, &p->pid};
	uint64_t h = hashmap__mix64(p->pid);
	uint32_t i;

	if (!ws)
		return -ENOMEM;
	if (hashmap__find(&ws->index, h, sched_proc_eq, ctx, &i)) {
		e = &ws->procs[i];
	} else {
		if (ws->nr_procs == ws->cap_procs) {
			size_t cap = ws->cap_procs ? 2 * ws->cap_procs : 16;
			struct window_sched_proc *np = realloc(ws->procs, cap * sizeof(*np));

			if (!np)
				return -ENOMEM;
			ws->procs = np;
			ws->cap_procs = cap;
		}
		if (hashmap__insert(&ws->index, h, ws->nr_procs))
			return -ENOMEM;
		e = &ws->procs[ws->nr_procs++];
		*e = (struct window_sched_proc){.pid = p->pid};
	}
	e->runq_count += p->runq_count;
	e->runq_ns += p->runq_ns;
	if (p->runq_max_ns > e->runq_max_ns)
		e->runq_max_ns = p->runq_max_ns;
	e->short_count += p->short_count;
	e->short_ns += p->short_ns;
	return 0;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void window__counts(struct window *w, uint32_t *nr_stacks, uint32_t *nr_processes)
{
	uintptr_t *ptrs;
	uint32_t *pids;
	size_t n = w->nr_entries;

	if (!w->counted) {
		w->nr_stacks = w->nr_processes = 0;
		ptrs = malloc((n ? n : 1) * sizeof(*ptrs));
		pids = malloc((n ? n : 1) * sizeof(*pids));
		if (ptrs && pids) {
			for (size_t i = 0; i < n; i++) {
				ptrs[i] = (uintptr_t)w->entries[i].stack;
				pids[i] = w->entries[i].task->pid;
			}
			qsort(ptrs, n, sizeof(*ptrs), cmp_ptr);
			qsort(pids, n, sizeof(*pids), cmp_u32);
			for (size_t i = 0; i < n; i++) {
				w->nr_stacks += !i || ptrs[i] != ptrs[i - 1];
				w->nr_processes += !i || pids[i] != pids[i - 1];
			}
			w->counted = w->closed;
		}
		free(ptrs);
		free(pids);
	}
	*nr_stacks = w->nr_stacks;
	*nr_processes = w->nr_processes;
}

uint64_t window__expected(const struct window *w, uint64_t period_ns)
{
	uint64_t n = 0;

	for (uint32_t c = 0; c < w->nr_cpus; c++)
		n += w->cpu_sampled_ns[c] / period_ns;
	return n;
}

uint64_t window__received(const struct window *w)
{
	uint64_t n = 0;

	for (uint32_t c = 0; c < w->nr_cpus; c++)
		n += w->cpu_received[c];
	return n;
}

uint64_t window__drops(const struct window *w)
{
	uint64_t n = 0;

	for (int i = 0; i < DROP_NR; i++)
		n += w->drops[i];
	return n;
}

size_t window__bytes(const struct window *w)
{
	size_t n = sizeof(*w) + w->cap_entries * sizeof(*w->entries) +
		   w->index.cap * sizeof(*w->index.slots) + 2 * w->nr_cpus * sizeof(uint64_t) +
		   w->cap_records * sizeof(*w->records);

	if (w->sched)
		n += sizeof(*w->sched) + w->sched->cap_procs * sizeof(*w->sched->procs) +
		     w->sched->index.cap * sizeof(*w->sched->index.slots);
	return n;
}

struct window_ring *window_ring__new(const struct window_ring_opts *opts)
{
	struct window_ring *r;

	if (!opts->window_ns || !opts->nr_windows || !opts->nr_cpus) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->opts = *opts;
	r->slots = calloc(opts->nr_windows, sizeof(*r->slots));
	if (!r->slots) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

void window_ring__free(struct window_ring *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->count; i++)
		window__free(window_ring__get(r, i), r->opts.stacks, r->opts.tasks);
	for (size_t i = 0; i < r->nr_pinned; i++)
		window__free(r->pinned[i], r->opts.stacks, r->opts.tasks);
	free(r->pinned);
	free(r->slots);
	free(r);
}

void window_ring__pin(struct window_ring *r, struct window *w)
{
	(void)r;
	w->pins++;
}

void window_ring__unpin(struct window_ring *r, struct window *w)
{
	if (!w->pins || --w->pins)
		return;
	for (size_t i = 0; i < r->nr_pinned; i++) {
		if (r->pinned[i] != w)
			continue;
		memmove(&r->pinned[i], &r->pinned[i + 1],
			(r->nr_pinned - i - 1) * sizeof(*r->pinned));
		r->nr_pinned--;
		window__free(w, r->opts.stacks, r->opts.tasks);
		return;
	}
	window__drop_records(w);
}

void window_ring__drop_records(struct window_ring *r)
{
	for (size_t i = 0; i + 2 < r->count; i++) {
		struct window *w = window_ring__get(r, i);

		w->records_recent = false;
		window__drop_records(w);
	}
}

size_t window_ring__with_records(const struct window_ring *r, struct window **out, size_t max)
{
	size_t n = 0;

	/* pinned (evicted) windows are older than every window of the ring */
	for (size_t i = 0; i < r->nr_pinned && n < max; i++)
		if (!r->pinned[i]->records_dropped)
			out[n++] = r->pinned[i];
	for (size_t i = 0; i < r->count && n < max; i++)
		if (!window_ring__get(r, i)->records_dropped)
			out[n++] = window_ring__get(r, i);
	return n;
}

size_t window_ring__nr_pinned(const struct window_ring *r)
{
	return r->nr_pinned;
}

struct window *window_ring__pinned(const struct window_ring *r, size_t i)
{
	return r->pinned[i];
}

struct window *window_ring__find(const struct window_ring *r, uint64_t start_ns)
{
	for (size_t i = r->count; i-- > 0;) {
		struct window *w = window_ring__get(r, i);

		if (w->start_ns == start_ns)
			return w;
		if (w->start_ns < start_ns)
			break;
	}
	for (size_t i = 0; i < r->nr_pinned; i++)
		if (r->pinned[i]->start_ns == start_ns)
			return r->pinned[i];
	return NULL;
}

/* Keeps evicted window w in the pinned list (it has pins). false: no memory. */
static bool keep_pinned(struct window_ring *r, struct window *w)
{
	if (r->nr_pinned == r->cap_pinned) {
		size_t cap = r->cap_pinned ? 2 * r->cap_pinned : 16;
		struct window **v = realloc(r->pinned, cap * sizeof(*v));

		if (!v)
			return false;
		r->pinned = v;
		r->cap_pinned = cap;
	}
	r->pinned[r->nr_pinned++] = w;
	return true;
}

size_t window_ring__count(const struct window_ring *r)
{
	return r->count;
}

struct window *window_ring__get(const struct window_ring *r, size_t i)
{
	return r->slots[(r->head + i) % r->opts.nr_windows];
}

struct window *window_ring__current(const struct window_ring *r)
{
	return r->count ? window_ring__get(r, r->count - 1) : NULL;
}

uint64_t window_ring__window_ns(const struct window_ring *r)
{
	return r->opts.window_ns;
}

uint32_t window_ring__capacity(const struct window_ring *r)
{
	return r->opts.nr_windows;
}

static void push_window(struct window_ring *r, uint64_t start)
{
	struct window *cur = window_ring__current(r);
	struct window *w = window__new(start, start + r->opts.window_ns, r->opts.nr_cpus);

	if (!w)
		abort(); /* small fixed allocation: policy is to abort */
	w->records_recent = true;
	w->sample_period_ns = r->opts.sample_period_ns;
	if (cur) {
		cur->closed = true;
		w->wall_offset_ns = cur->wall_offset_ns;
	}
	if (r->count == r->opts.nr_windows) {
		struct window *old = r->slots[r->head];

		/* a pinned window stays (the pin budget bounds how many); without memory to list
		 * it, it goes as an unpinned one would */
		if (!old->pins || !keep_pinned(r, old))
			window__free(old, r->opts.stacks, r->opts.tasks);
		r->slots[r->head] = w;
		r->head = (r->head + 1) % r->opts.nr_windows;
	} else {
		r->slots[(r->head + r->count) % r->opts.nr_windows] = w;
		r->count++;
	}
}

void window_ring__advance(struct window_ring *r, uint64_t now_ns)
{
	uint64_t len = r->opts.window_ns, aligned = now_ns - now_ns % len;
	struct window *cur = window_ring__current(r);

	if (!cur || now_ns - cur->start_ns >= len * (uint64_t)r->opts.nr_windows) {
		/* first window, or a gap longer than the retention: no empty windows in between */
		if (!cur || aligned > cur->start_ns)
			push_window(r, aligned);
		return;
	}
	while (now_ns >= window_ring__current(r)->end_ns)
		push_window(r, window_ring__current(r)->end_ns);
}

struct window *window_ring__window_at(struct window_ring *r, uint64_t ts_ns)
{
	struct window *cur = window_ring__current(r), *first;
	size_t i;

	if (!cur || ts_ns >= cur->end_ns) {
		window_ring__advance(r, ts_ns);
		cur = window_ring__current(r);
	}
	if (ts_ns >= cur->start_ns)
		return cur;
	first = window_ring__get(r, 0);
	if (ts_ns < first->start_ns)
		return NULL;
	/* windows are contiguous except after a long gap: search back from the newest */
	for (i = r->count; i-- > 0;) {
		struct window *w = window_ring__get(r, i);

		if (ts_ns >= w->start_ns)
			return ts_ns < w->end_ns ? w : NULL;
	}
	return NULL;
}
