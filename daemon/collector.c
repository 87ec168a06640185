// SPDX-License-Identifier: GPL-2.0-only
/* The drain loop: BPF ring buffer and counters into windows, under the store lock. */
#include "collector.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "gc.h"
#include "hashmap.h"
#include "loader.h"
#include "log.h"
#include "probes.h"
#include "proc_maps.h"
#include "python.h"
#include "spikes.h"
#include "stages.h"
#include "symbolizer.h"
#include "sysinfo.h"
#include "timeparse.h"
#include "tailprof.h"

struct capture {
	struct window *w;
	struct capture *next;
};

/* pid -> start_ns of processes marked known in the BPF map (open addressing, pid 0 = empty). */
struct pid_set {
	uint32_t *pids;
	uint64_t *starts;
	size_t mask, count;
};

enum unwind_op { UNWIND_ADD, UNWIND_RESCAN, UNWIND_FORGET };

/* A new image's maps read within its first milliseconds (a CPU sample in its dynamic loader
 * made it known) lack its libraries, and nothing reads them again before its first long block's
 * stacks are taken on its way back, nor before it exits: so every process that exec'd is read
 * once more this long after the exec, when it is known by then. */
#define RECHECK_NS     (300 * NSEC_PER_MSEC)
#define RECHECK_MAX    1024
#define PY_PENDING_MAX 1024

struct unwind_req {
	enum unwind_op op;
	uint32_t pid;
	uint64_t start_ns;
};

/* The stacks of a thread's last TP_SAMPLE_REPEATABLE off-CPU sample, which its repeats
 * (TP_SAMPLE_REPEAT: no frames) name; kept until two drain periods after ts_ns. */
struct repeat_entry {
	uint32_t pid, tid;
	uint64_t start_ns;
	uint64_t ts_ns;
	struct stack *stack; /* a reference */
};

struct repeats {
	struct repeat_entry *v;
	size_t nr, cap;
	struct hashmap idx; /* (pid, tid) -> index in v */
	uint64_t newest_ns; /* the newest ts_ns of an off-CPU sample seen */
};

struct collector {
	struct collector_opts opts;
	pthread_rwlock_t lock;
	struct intern_table *stacks, *tasks;
	struct window_ring *ring;
	struct capture *captures;
	struct ring_buffer *rb;
	uint32_t nr_cpus;
	uint32_t self_pid;
	uint64_t period_ns;

	/* BPF counters are taken per drain period; per CPU, since when it is sampled (0: not) */
	uint64_t next_period; /* first drain period whose BPF counts are not taken yet */
	uint64_t *sampled_since;
	uint64_t *cpu_received_total;
	uint64_t *cpu_sampled_ns_total;
	uint64_t last_tick_ns;
	int64_t wall_offset_ns;

	struct pid_set known;
	struct collector_status st;
	struct window *stage_window; /* the current window at the last tick (stages) */

	/* drain notifications for capture waiters */
	pthread_mutex_t drain_mu;
	pthread_cond_t drain_cond;
	uint64_t drained_up_to_ns;
	bool stopping;

	uint64_t runq_buckets[TP_HIST_BUCKETS]; /* since start, for /metrics */
	/* unwinder work of the current drain (unwind_queue) */
	struct unwind_req *unwind_ops;
	size_t nr_unwind_ops, cap_unwind_ops;

	struct repeats repeats;
	/* processes that exec'd lately: their maps are read again RECHECK_NS after the exec
	 * (recheck_due), a ring of RECHECK_MAX; the oldest is overwritten when it is full */
	struct recheck {
		uint32_t pid;
		uint64_t start_ns, due_ns;
	} rechecks[RECHECK_MAX];
	size_t recheck_head, nr_rechecks;
	/* processes to look at for a CPython after this drain (py_queue) */
	struct recheck py_pending[PY_PENDING_MAX];
	size_t nr_py_pending;

	/* scratch for one stack key */
	struct stack *key;
	struct frame *frames;
};

static void stack_acquire(void *data, void *ctx)
{
	struct stack *s = data;

	for (uint32_t i = 0; i < (uint32_t)s->nr_kernel + s->nr_user; i++)
		if (s->frames[i].obj)
			object__get(s->frames[i].obj);
}

static void stack_release(void *data, void *ctx)
{
	struct stack *s = data;

	for (uint32_t i = 0; i < (uint32_t)s->nr_kernel + s->nr_user; i++)
		object__put(s->frames[i].obj);
}

/* ---- repeats: the stacks off-CPU repeats name ---- */

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

/* The entry of thread (pid, tid), or NULL. */
static struct repeat_entry *repeat_find(struct repeats *r, uint32_t pid, uint32_t tid)
{
	struct repeat_key k = {r, pid, tid};
	uint32_t i;

	return hashmap__find(&r->idx, repeat_hash(pid, tid), repeat_eq, &k, &i) ? &r->v[i] : NULL;
}

/* Keeps stack (the caller's reference stays the caller's) as the stacks of thread (pid, tid)'s
 * repeats. Returns 0 or -ENOMEM. */
static int repeat_keep(struct collector *c, const struct tp_sample *s, struct stack *stack)
{
	struct repeats *r = &c->repeats;
	struct repeat_entry *e = repeat_find(r, s->hdr.pid, s->tid);

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
		intern_table__put(c->stacks, e->stack);
	}
	e->start_ns = s->hdr.start_ns;
	e->ts_ns = s->hdr.ts_ns;
	e->stack = intern_table__ref(stack);
	return 0;
}

/* Drops the entries that no repeat can name any more: BPF sends repeats of a sample for less than
 * a drain period after it, and samples come in ring buffer order (their stamps a few us apart at
 * most), so entries two periods older than the newest sample are done. */
static void repeats_prune(struct collector *c)
{
	struct repeats *r = &c->repeats;
	uint64_t keep = 2 * c->opts.drain_ns;
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
			intern_table__put(c->stacks, r->v[i].stack);
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

static void repeats_free(struct collector *c)
{
	for (size_t i = 0; i < c->repeats.nr; i++)
		intern_table__put(c->stacks, c->repeats.v[i].stack);
	free(c->repeats.v);
	hashmap__clear(&c->repeats.idx);
	c->repeats = (struct repeats){0};
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		abort(); /* fixed-size allocations: abort on failure (STYLE.md) */
	return p;
}

/* ---- known pids ---- */

static size_t pid_slot(const struct pid_set *s, uint32_t pid)
{
	size_t h = hashmap__mix64(pid) & s->mask;

	while (s->pids[h] && s->pids[h] != pid)
		h = (h + 1) & s->mask;
	return h;
}

static bool pid_set__has(const struct pid_set *s, uint32_t pid, uint64_t start)
{
	size_t h = pid_slot(s, pid);

	return s->pids[h] == pid && s->starts[h] == start;
}

static void pid_set__add(struct pid_set *s, uint32_t pid, uint64_t start)
{
	size_t h;

	if ((s->count + 1) * 2 > s->mask + 1) {
		struct pid_set n = {.mask = s->mask * 2 + 1};

		n.pids = xcalloc(n.mask + 1, sizeof(*n.pids));
		n.starts = xcalloc(n.mask + 1, sizeof(*n.starts));
		for (size_t i = 0; i <= s->mask; i++)
			if (s->pids[i])
				pid_set__add(&n, s->pids[i], s->starts[i]);
		free(s->pids);
		free(s->starts);
		*s = n;
	}
	h = pid_slot(s, pid);
	s->count += s->pids[h] != pid;
	s->pids[h] = pid;
	s->starts[h] = start;
}

/* Removes pid; returns whether it was there. */
static bool pid_set__del(struct pid_set *s, uint32_t pid)
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

/* ---- unwinder work: queued under the lock, done after it ---- */

/* Building unwind tables takes milliseconds per object: the drain queues what the unwinder must
 * do, in event order, and does it once the store lock is released, so queries do not wait. */
static void unwind_queue(struct collector *c, enum unwind_op op, uint32_t pid, uint64_t start_ns)
{
	if (!c->opts.unwinder)
		return;
	if (c->nr_unwind_ops == c->cap_unwind_ops) {
		size_t n = c->cap_unwind_ops ? 2 * c->cap_unwind_ops : 64;
		struct unwind_req *v = realloc(c->unwind_ops, n * sizeof(*v));

		if (!v) {
			c->st.unwind_queue_full++;
			return;
		}
		c->unwind_ops = v;
		c->cap_unwind_ops = n;
	}
	c->unwind_ops[c->nr_unwind_ops++] =
	    (struct unwind_req){.op = op, .pid = pid, .start_ns = start_ns};
}

static void unwind_run_queue(struct collector *c)
{
	for (size_t i = 0; i < c->nr_unwind_ops; i++) {
		const struct unwind_req *r = &c->unwind_ops[i];

		switch (r->op) {
		case UNWIND_ADD:
			unwinder__add_process(c->opts.unwinder, r->pid, r->start_ns);
			break;
		case UNWIND_RESCAN:
			unwinder__rescan(c->opts.unwinder, r->pid, r->start_ns);
			break;
		case UNWIND_FORGET:
			unwinder__forget_process(c->opts.unwinder, r->pid);
			break;
		}
	}
	c->nr_unwind_ops = 0;
}

/* Queues process (pid, start_ns) for Python discovery after the drain: reading its maps must not
 * hold the lock, nor delay the unwinder's work. When the queue is full the process is looked at
 * again only at its next recheck. */
static void py_queue(struct collector *c, uint32_t pid, uint64_t start_ns)
{
	if (c->opts.python && c->nr_py_pending < PY_PENDING_MAX)
		c->py_pending[c->nr_py_pending++] =
		    (struct recheck){.pid = pid, .start_ns = start_ns};
}

static void py_run_queue(struct collector *c)
{
	for (size_t i = 0; i < c->nr_py_pending; i++)
		python__note_process(c->opts.python, c->py_pending[i].pid,
				     c->py_pending[i].start_ns);
	c->nr_py_pending = 0;
}

/* ---- events ---- */

static void forget_process(struct collector *c, uint32_t pid, bool exited)
{
	/* the maps read this round were the old image's */
	proc_maps__forget(pid);
	if (exited)
		symbolizer__forget_exited(c->opts.symbolizer, pid);
	else
		symbolizer__forget_process(c->opts.symbolizer, pid);
	/* BPF deleted it at the exec, but a sample from before the exec, drained after it, may
	 * have marked the process known again: the new image's samples must wake us. Only a
	 * process marked known here has an entry to delete. */
	if (pid_set__del(&c->known, pid))
		loader__forget(c->opts.loader, pid);
	if (c->opts.python)
		python__forget_process(c->opts.python, pid);
	unwind_queue(c, UNWIND_FORGET, pid, 0);
}

/* Process (pid, start_ns) exec'd at now: its maps are read again at the first drain from
 * now + RECHECK_NS on (recheck_due). */
static void recheck_later(struct collector *c, uint32_t pid, uint64_t start_ns, uint64_t now)
{
	c->rechecks[(c->recheck_head + c->nr_rechecks) % RECHECK_MAX] =
	    (struct recheck){.pid = pid, .start_ns = start_ns, .due_ns = now + RECHECK_NS};
	if (c->nr_rechecks < RECHECK_MAX)
		c->nr_rechecks++;
	else
		c->recheck_head = (c->recheck_head + 1) % RECHECK_MAX;
}

/* The rechecks due at now, in exec order: the symbolizer's maps and the unwinder's tables of
 * each process that is known (one that exited or exec'd again meanwhile is not). */
static void recheck_due(struct collector *c, uint64_t now)
{
	while (c->nr_rechecks) {
		const struct recheck *r = &c->rechecks[c->recheck_head];

		if (r->due_ns > now)
			break;
		if (pid_set__has(&c->known, r->pid, r->start_ns)) {
			symbolizer__reread_process(c->opts.symbolizer, r->pid, r->start_ns);
			unwind_queue(c, UNWIND_RESCAN, r->pid, r->start_ns);
			/* a new image maps its libpython after its first samples */
			py_queue(c, r->pid, r->start_ns);
		}
		c->recheck_head = (c->recheck_head + 1) % RECHECK_MAX;
		c->nr_rechecks--;
	}
}

/* The first sample of a process (or its first block, TP_EV_SEEN) woke us so that its maps are
 * read while it lives: from now on its samples may wait for the next drain, and they are walked
 * with its unwind tables. */
static void know_process(struct collector *c, uint32_t pid, uint64_t start_ns)
{
	if (pid_set__has(&c->known, pid, start_ns))
		return;
	loader__mark_known(c->opts.loader, pid, start_ns);
	pid_set__add(&c->known, pid, start_ns);
	py_queue(c, pid, start_ns);
	unwind_queue(c, UNWIND_ADD, pid, start_ns);
}

/* Whether user frame f (not the leaf: a return address) is in CPython's eval loop. */
static bool is_eval_frame(const struct frame *f, bool leaf)
{
	const char *name;

	if (!f->obj)
		return false;
	name = object__lookup(f->obj, leaf ? f->addr : f->addr - 1, NULL);
	return name && !strcmp(name, "_PyEval_EvalFrameDefault");
}

/* Splices the Python frames of sample s into the nu resolved user frames at c->key->frames[nk..]:
 * before each _PyEval_EvalFrameDefault frame (from the leaf up) go the Python frames that it ran,
 * up to and including the next entry frame (an empty entry: none); Python frames left over (the
 * native walk ended early) go at the end. The user part stays within TP_MAX_STACK_DEPTH frames
 * (outer ones cut, marked truncated). Returns the new number of user frames. */
static uint32_t splice_python(struct collector *c, const struct tp_sample *s, uint32_t nk,
			      uint32_t nu)
{
	struct python_frame py[TP_PY_MAX_FRAMES];
	struct frame out[TP_MAX_STACK_DEPTH];
	const struct frame *user = c->key->frames + nk;
	uint32_t np, ip = 0, no = 0, nreal = 0;

	np = python__resolve(c->opts.python, s->hdr.pid, s->hdr.start_ns,
			     (const struct tp_py_frame *)&s->addrs[nk + nu], s->nr_python, py);
	for (uint32_t i = 0; i < np; i++)
		nreal += py[i].f.obj != NULL;
	if (!nreal)
		return nu;
	for (uint32_t i = 0; i < nu && no < TP_MAX_STACK_DEPTH; i++) {
		if (ip < np && is_eval_frame(&user[i], i == 0)) {
			while (ip < np && no < TP_MAX_STACK_DEPTH) {
				bool entry = py[ip].entry;

				/* an empty entry: this C frame runs no complete Python frame */
				if (py[ip].f.obj)
					out[no++] = py[ip].f;
				ip++;
				if (entry)
					break;
			}
		}
		if (no < TP_MAX_STACK_DEPTH)
			out[no++] = user[i];
	}
	for (; ip < np && no < TP_MAX_STACK_DEPTH; ip++)
		if (py[ip].f.obj)
			out[no++] = py[ip].f;
	if (no < nu + nreal)
		c->key->flags |= STACK_TRUNCATED_USER;
	if (s->flags & TP_SAMPLE_PY_TRUNCATED)
		c->key->flags |= STACK_TRUNCATED_USER;
	memcpy(c->key->frames + nk, out, no * sizeof(*out));
	return no;
}

/* The interned stack of sample s (symbolized; a reference), or NULL (no memory). */
static struct stack *sample_stack(struct collector *c, const struct tp_sample *s)
{
	uint32_t nk = s->nr_kernel, nu = s->nr_user, n = nk + nu;

	memset(c->key, 0, sizeof(*c->key));
	c->key->nr_kernel = nk;
	c->key->nr_user = nu;
	if (nk == TP_MAX_STACK_DEPTH)
		c->key->flags |= STACK_TRUNCATED_KERNEL;
	/* the table walker says when the stack went on; a frame-pointer walk that filled every
	 * slot may have */
	if ((s->flags & TP_SAMPLE_USTACK_TRUNCATED) ||
	    (nu == TP_MAX_STACK_DEPTH && !(s->flags & TP_SAMPLE_UNWIND_TABLES)))
		c->key->flags |= STACK_TRUNCATED_USER;
	if (s->flags & TP_SAMPLE_KSTACK_FAILED)
		c->key->flags |= STACK_KERNEL_FAILED;
	if (s->flags & TP_SAMPLE_USTACK_FAILED)
		c->key->flags |= STACK_USER_FAILED;
	if (s->flags & TP_SAMPLE_NO_USER_STACK)
		c->key->flags |= STACK_NO_USER;
	symbolizer__resolve_kernel(c->opts.symbolizer, (const uint64_t *)s->addrs, nk,
				   c->key->frames);
	if (nu) {
		int valid = symbolizer__resolve_user(
		    c->opts.symbolizer, s->hdr.pid, s->hdr.start_ns, s->hdr.ts_ns,
		    (const uint64_t *)s->addrs + nk, nu, c->key->frames + nk);

		/* A frame-pointer walk through code built without frame pointers returns stack
		 * or heap words as return addresses: end the stack at the first address in no
		 * executable mapping, as one "[unknown]" frame, so that garbage does not multiply
		 * distinct stacks. The leaf (the sampled IP) is always kept. */
		if (valid >= 1 && (uint32_t)valid < nu) {
			c->key->frames[nk + valid] = (struct frame){.obj = NULL, .addr = 0};
			nu = valid + 1;
			n = nk + nu;
			c->key->nr_user = nu;
			c->key->flags &= ~STACK_TRUNCATED_USER;
			c->st.cut_stacks++;
		}
	}
	if (s->flags & TP_SAMPLE_PY_FAILED)
		c->st.py_failed++;
	if (s->flags & TP_SAMPLE_PY_TRUNCATED)
		c->st.py_truncated++;
	if (s->nr_python && c->opts.python) {
		nu = splice_python(c, s, nk, nu);
		n = nk + nu;
		c->key->nr_user = nu;
	}
	return intern_table__get(c->stacks, c->key, sizeof(*c->key) + n * sizeof(struct frame),
				 NULL);
}

/* Adds a CPU sample (blocked_ns 0) or an off-CPU sample (a block of blocked_ns) to its window. */
static void add_sample(struct collector *c, const struct tp_sample *s, uint64_t blocked_ns)
{
	struct task tk = {.pid = s->hdr.pid, .tid = s->tid, .stage = s->stage};
	struct process_info info;
	struct stack *stack;
	struct task *task;
	struct window *w;

	/* tasks are interned as bytes: tk is zeroed, so the names are NUL-padded (a copy, not
	 * snprintf, which was a fifth of tailprofd's time at 2,000 off-CPU samples a second) */
	_Static_assert(sizeof(tk.comm) <= sizeof(s->comm) &&
			   sizeof(tk.thread) <= sizeof(s->thread_comm),
		       "comms fit");
	memcpy(tk.comm, s->comm, strnlen(s->comm, sizeof(tk.comm) - 1));
	memcpy(tk.thread, s->thread_comm, strnlen(s->thread_comm, sizeof(tk.thread) - 1));
	if (tk.pid == c->self_pid)
		tk.flags |= TASK_SELF;
	if (s->flags & TP_SAMPLE_IN_GC)
		tk.flags |= TASK_IN_GC;

	/* a repeat: the stacks of the thread's last repeatable sample, kept (BPF verified them
	 * unchanged); else symbolized */
	if (s->flags & TP_SAMPLE_REPEAT) {
		struct repeat_entry *rep =
		    blocked_ns ? repeat_find(&c->repeats, s->hdr.pid, s->tid) : NULL;

		if (!rep || rep->start_ns != s->hdr.start_ns) {
			w = window_ring__current(c->ring);
			w->drops[DROP_REPEAT_UNKNOWN]++;
			c->st.drops[DROP_REPEAT_UNKNOWN]++;
			return;
		}
		stack = intern_table__ref(rep->stack);
	} else {
		stack = sample_stack(c, s);
		/* without the memory to keep it, its repeats are lost (and counted) */
		if (stack && (s->flags & TP_SAMPLE_REPEATABLE) && blocked_ns)
			repeat_keep(c, s, stack);
	}
	if (blocked_ns && s->hdr.ts_ns > c->repeats.newest_ns)
		c->repeats.newest_ns = s->hdr.ts_ns;
	if (!symbolizer__process_info(c->opts.symbolizer, s->hdr.pid, s->hdr.start_ns, &info)) {
		memcpy(tk.process, info.name, sizeof(tk.process));
		tk.ns_pid = info.ns_pid;
	}
	/* names are any bytes a process chose: labels must be UTF-8 (zero padding stays) */
	task__sanitize_name(tk.comm);
	task__sanitize_name(tk.thread);
	task__sanitize_name(tk.process);
	/* the table walker met a PC in no mapping it knew: the process mapped something new */
	if (s->flags & TP_SAMPLE_UNWIND_RESCAN)
		unwind_queue(c, UNWIND_RESCAN, s->hdr.pid, s->hdr.start_ns);
	know_process(c, s->hdr.pid, s->hdr.start_ns);

	task = intern_table__get(c->tasks, &tk, sizeof(tk), NULL);
	w = window_ring__window_at(c->ring, s->hdr.ts_ns);
	if (!stack || !task || !w) {
		enum window_drop why = stack && task ? DROP_LATE : DROP_NO_MEMORY;

		w = window_ring__current(c->ring);
		w->drops[why]++;
		c->st.drops[why]++;
		intern_table__put(c->stacks, stack);
		intern_table__put(c->tasks, task);
		return;
	}
	if (blocked_ns) {
		if (!window__add_recorded(w, stack, task, s->hdr.ts_ns, blocked_ns, s->cpu,
					  c->stacks, c->tasks)) {
			c->st.offcpu_samples++;
			c->st.offcpu_ns += blocked_ns;
		} else {
			c->st.drops[DROP_NO_MEMORY]++;
		}
		return;
	}
	for (struct capture *cap = c->captures; cap; cap = cap->next) {
		if (s->hdr.ts_ns >= cap->w->start_ns && s->hdr.ts_ns < cap->w->end_ns)
			window__add(cap->w, intern_table__ref(stack), intern_table__ref(task), 1,
				    c->stacks, c->tasks);
	}
	/* with its record: request profiles (stages.h) take a span's thread's samples */
	if (!window__add_recorded(w, stack, task, s->hdr.ts_ns, 0, s->cpu, c->stacks, c->tasks))
		c->st.samples++;
	else
		c->st.drops[DROP_NO_MEMORY]++; /* counted in w too */
}

/* A record of stacks is whole: its frame counts fit TP_MAX_STACK_DEPTH and the record. */
static bool stacks_fit(const struct tp_sample *s, size_t size, size_t hdr_size)
{
	return size >= hdr_size && s->nr_kernel <= TP_MAX_STACK_DEPTH &&
	       s->nr_user <= TP_MAX_STACK_DEPTH && s->nr_python <= TP_PY_MAX_FRAMES &&
	       size >= hdr_size + 8 * ((size_t)s->nr_kernel + s->nr_user + 2 * s->nr_python);
}

static int on_event(void *ctx, void *data, size_t size)
{
	const struct tp_event_hdr *hdr = data;
	struct collector *c = ctx;

	if (size < sizeof(*hdr))
		return 0;
	switch (hdr->kind) {
	case TP_EV_SAMPLE: {
		const struct tp_sample *s = data;

		if (stacks_fit(s, size, TP_SAMPLE_HDR_SIZE))
			add_sample(c, s, 0);
		break;
	}
	case TP_EV_OFFCPU: {
		const struct tp_sample *s = data;

		if (stacks_fit(s, size, TP_SAMPLE_HDR_SIZE) && s->blocked_ns)
			add_sample(c, s, s->blocked_ns);
		break;
	}
	case TP_EV_SEEN:
		/* a process we did not know blocks: its maps now (it may be gone when its sample
		 * comes), its unwind tables before it wakes */
		if (!pid_set__has(&c->known, hdr->pid, hdr->start_ns))
			symbolizer__note_process(c->opts.symbolizer, hdr->pid, hdr->start_ns);
		know_process(c, hdr->pid, hdr->start_ns);
		break;
	case TP_EV_FORK: {
		const struct tp_fork *f = data;

		if (size >= sizeof(*f))
			symbolizer__note_fork(c->opts.symbolizer, f->hdr.pid, f->hdr.start_ns,
					      f->parent_pid, f->parent_start_ns);
		break;
	}
	case TP_EV_EXEC:
	case TP_EV_EXIT:
		/* in order after the process's earlier samples, which used the old maps */
		forget_process(c, hdr->pid, hdr->kind == TP_EV_EXIT);
		if (hdr->kind == TP_EV_EXEC)
			recheck_later(c, hdr->pid, hdr->start_ns, sysinfo__mono_ns());
		if (c->opts.gc && hdr->kind == TP_EV_EXEC)
			gc__process_exec(c->opts.gc, hdr->pid);
		else if (c->opts.gc)
			gc__process_exit(c->opts.gc, hdr->pid);
		break;
	}
	return 0;
}

/* A GC event, kept in the window it started in; or a dlopen to look at. */
static int on_gc_event(void *ctx, void *data, size_t size)
{
	const struct tp_gc_event *rec = data;
	struct collector *c = ctx;
	struct gc_event ev;
	struct window *w;

	if (size < sizeof(*rec))
		return 0;
	if (rec->record == TP_GC_REC_DLOPEN) {
		gc__note_dlopen(c->opts.gc, rec->pid);
		return 0;
	}
	if (rec->record != TP_GC_REC_EVENT)
		return 0;
	gc__event(c->opts.gc, rec, &ev);
	w = window_ring__window_at(c->ring, rec->start_ns);
	if (!w) {
		gc__count_late(c->opts.gc);
		return 0;
	}
	gc_window__add(&w->gc, &ev);
	return 0;
}

/* A slow span: kept in the window it ended in. */
static int on_span(void *ctx, void *data, size_t size)
{
	const struct tp_span *sp = data;
	struct collector *c = ctx;

	if (size < sizeof(*sp))
		return 0;
	stages__add_span(c->opts.stages, sp,
			 window_ring__window_at(c->ring, sp->start_ns + sp->duration_ns));
	return 0;
}

/* ---- drain ---- */

/* Takes the BPF counts of drain period p of every CPU into window w (NULL: the period is older
 * than every window held; the counts still reach the totals). */
static void take_period(struct collector *c, uint64_t p, struct window *w)
{
	uint64_t *ctr = loader__counters(c->opts.loader);
	static const struct {
		enum tp_metric metric;
		enum window_drop drop;
	} drops[] = {
	    {TP_M_RINGBUF_FULL, DROP_RINGBUF_FULL},
	    {TP_M_KSTACK_FAILED, DROP_KERNEL_STACK},
	    {TP_M_USTACK_FAILED, DROP_USER_STACK},
	    {TP_M_EVENT_LOST, DROP_EVENT_LOST},
	};

	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++) {
		uint64_t *slot =
		    &ctr[((size_t)cpu * TP_COUNTER_SLOTS + p % TP_COUNTER_SLOTS) * TP_M_NR];
		uint64_t d[TP_M_NR];

		/* exchange, not read-then-clear: a BPF program on another CPU may still add */
		for (int m = 0; m < TP_M_NR; m++)
			d[m] = __atomic_exchange_n(&slot[m], 0, __ATOMIC_RELAXED);
		c->cpu_received_total[cpu] += d[TP_M_SAMPLES];
		c->st.received_samples += d[TP_M_SAMPLES];
		c->st.idle_samples += d[TP_M_IDLE];
		for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
			c->st.drops[drops[i].drop] += d[drops[i].metric];
		for (int m = TP_M_UNWIND_STACKS; m < TP_M_NR; m++)
			c->st.unwind_bpf[m - TP_M_UNWIND_STACKS] += d[m];
		if (!w)
			continue;
		w->cpu_received[cpu] += d[TP_M_SAMPLES];
		w->idle_samples += d[TP_M_IDLE];
		for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
			w->drops[drops[i].drop] += d[drops[i].metric];
	}
}

/* Takes the run-queue histograms of drain period p of every CPU into window w (NULL: older than
 * every window held; the totals still count them). */
static void take_runq_period(struct collector *c, uint64_t p, struct window *w)
{
	struct tp_runq_hist *hists = loader__runq_hist(c->opts.loader);
	uint64_t b[TP_HIST_BUCKETS];

	for (uint32_t cpu = 0; hists && cpu < c->nr_cpus; cpu++) {
		struct tp_runq_hist *h = &hists[(size_t)cpu * TP_SCHED_SLOTS + p % TP_SCHED_SLOTS];
		uint64_t count = __atomic_exchange_n(&h->count, 0, __ATOMIC_RELAXED);
		uint64_t sum = __atomic_exchange_n(&h->sum_ns, 0, __ATOMIC_RELAXED);
		uint64_t max = __atomic_exchange_n(&h->max_ns, 0, __ATOMIC_RELAXED);

		if (!count && !max)
			continue;
		for (uint32_t i = 0; i < TP_HIST_BUCKETS; i++) {
			b[i] = __atomic_exchange_n(&h->buckets[i], 0, __ATOMIC_RELAXED);
			c->runq_buckets[i] += b[i];
		}
		c->st.runq_count += count;
		c->st.runq_sum_ns += sum;
		if (max > c->st.runq_max_ns)
			c->st.runq_max_ns = max;
		if (w && window__add_runq(w, count, sum, max, b))
			c->st.drops[DROP_NO_MEMORY]++;
	}
}

/* One process's scheduler counts of an ended drain period, into the window of that period. */
static void take_sched_proc(const struct tp_sched_key *k, const struct tp_sched_proc *v, void *arg)
{
	struct collector *c = arg;
	uint64_t slot_ns = c->opts.drain_ns, cur = sysinfo__mono_ns() / slot_ns;
	uint64_t p = cur - (uint32_t)((uint32_t)cur - k->slot); /* the period, unwrapped */
	struct window *w = window_ring__window_at(c->ring, p * slot_ns + slot_ns / 2);
	struct window_sched_proc wp = {
	    .pid = k->pid,
	    .runq_count = v->runq_count,
	    .runq_ns = v->runq_ns,
	    .runq_max_ns = v->runq_max_ns,
	    .short_count = v->short_count,
	    .short_ns = v->short_ns,
	};

	c->st.short_blocks += v->short_count;
	c->st.short_blocked_ns += v->short_ns;
	if (w && window__add_sched_proc(w, &wp))
		c->st.drops[DROP_NO_MEMORY]++;
}

/* Takes the per-process counts of drain period p of every CPU from sched_ptab (those that found
 * no room there come from sched_procs, after). */
static void take_ptab_period(struct collector *c, uint64_t p)
{
	struct tp_sched_pentry *tab = loader__sched_ptab(c->opts.loader);

	for (uint32_t cpu = 0; tab && cpu < c->nr_cpus; cpu++) {
		struct tp_sched_pentry *e =
		    &tab[((size_t)cpu * TP_SCHED_SLOTS + p % TP_SCHED_SLOTS) * TP_SCHED_PTAB];

		for (uint32_t i = 0; i < TP_SCHED_PTAB; i++, e++) {
			struct tp_sched_key k = {.pid = e->pid, .slot = e->slot, .cpu = cpu};
			struct tp_sched_proc v;

			if (!k.pid || k.slot != (uint32_t)p)
				continue;
			v.runq_count = __atomic_exchange_n(&e->v.runq_count, 0, __ATOMIC_RELAXED);
			v.runq_ns = __atomic_exchange_n(&e->v.runq_ns, 0, __ATOMIC_RELAXED);
			v.runq_max_ns = __atomic_exchange_n(&e->v.runq_max_ns, 0, __ATOMIC_RELAXED);
			v.short_count = __atomic_exchange_n(&e->v.short_count, 0, __ATOMIC_RELAXED);
			v.short_ns = __atomic_exchange_n(&e->v.short_ns, 0, __ATOMIC_RELAXED);
			if (v.runq_count || v.short_count)
				take_sched_proc(&k, &v, c);
		}
	}
}

static void drain_counters(struct collector *c, uint64_t now)
{
	uint64_t slot_ns = c->opts.drain_ns, cur = now / slot_ns;
	/* the period that just ended, and the one before again: an event stamped just before its
	 * end may have been counted after we took it (a straggler lands in the right window) */
	uint64_t p = c->next_period ? c->next_period - 1 : cur;

	if (cur >= TP_COUNTER_SLOTS && p < cur - TP_COUNTER_SLOTS + 1)
		p = cur - TP_COUNTER_SLOTS +
		    1; /* a stall longer than the slots: they were reused */
	for (; p < cur; p++) {
		struct window *w = window_ring__window_at(c->ring, p * slot_ns + slot_ns / 2);

		take_period(c, p, w);
		/* stage histograms keep fewer periods: older ones were reused */
		if (c->opts.stages && p + TP_STAGE_SLOTS > cur)
			stages__take_period(c->opts.stages, p, w);
		/* run-queue histograms and per-process counts too */
		if (p + TP_SCHED_SLOTS > cur) {
			take_runq_period(c, p, w);
			take_ptab_period(c, p);
		}
	}
	c->next_period = cur;
	if (loader__take_sched_procs(c->opts.loader, (uint32_t)cur, take_sched_proc, c) < 0)
		c->st.drops[DROP_NO_MEMORY]++;
	c->st.sched = loader__has_sched(c->opts.loader);
	loader__sched_metrics(c->opts.loader, c->st.sched_metrics);

	/* The time each CPU was sampled since the last tick, split over the windows it spans (a
	 * drain delayed by a long query must not put seconds of it into one window). */
	window_ring__window_at(c->ring, now - 1);
	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++) {
		uint64_t from;

		if (!c->sampled_since[cpu])
			continue;
		from = c->sampled_since[cpu] > c->last_tick_ns ? c->sampled_since[cpu]
							       : c->last_tick_ns;
		if (now <= from)
			continue;
		c->cpu_sampled_ns_total[cpu] += now - from;
		for (size_t i = window_ring__count(c->ring); i-- > 0;) {
			struct window *w = window_ring__get(c->ring, i);
			uint64_t a = w->start_ns > from ? w->start_ns : from;
			uint64_t b = w->end_ns < now ? w->end_ns : now;

			if (w->end_ns <= from)
				break;
			if (b > a)
				w->cpu_sampled_ns[cpu] += b - a;
		}
	}
}

static void sync_cpus(struct collector *c, uint64_t now)
{
	uint8_t online[c->nr_cpus];

	c->st.cpus_sampled = loader__sync_cpus(c->opts.loader, online);
	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++) {
		if (online[cpu] && !c->sampled_since[cpu]) {
			c->sampled_since[cpu] = now;
			if (c->st.drains)
				pr_info("cpu %u came online: sampling it", cpu);
		} else if (!online[cpu] && c->sampled_since[cpu]) {
			c->sampled_since[cpu] = 0;
			pr_info("cpu %u went offline", cpu);
		}
	}
	c->st.probes_attached = loader__nr_attached(c->opts.loader);
}

static bool window_held(struct window_ring *r, const struct window *w)
{
	for (size_t i = window_ring__count(r); i-- > 0;)
		if (window_ring__get(r, i) == w)
			return true;
	return false;
}

/* The spans of window w, which just closed, without exact accounting get their estimate from the
 * samples of the windows that still hold records (every sample of a span that ended in w came
 * before this tick: its thread ran its end probe after them). */
static void settle_spans(struct collector *c, struct window *w)
{
	size_t n = window_ring__count(c->ring), first = n > 3 ? n - 3 : 0, nr = 0;
	struct window *recent[3];

	for (size_t i = first; i < n; i++)
		recent[nr++] = window_ring__get(c->ring, i);
	stages__settle_spans(w, recent, nr);
}

static void drain(struct collector *c, bool tick)
{
	uint64_t now;
	int64_t offset;
	struct window *w;
	int n;

	pthread_rwlock_wrlock(&c->lock);
	/* the clocks after the lock: waiting for readers must not age the counters' time */
	now = sysinfo__mono_ns();
	offset = sysinfo__real_ns() - (int64_t)sysinfo__mono_ns();
	/* Keep the labels steady: the offset measured at each drain jitters by a few hundred ns,
	 * which would leave gaps between windows' labels. Follow it when it really moved (an NTP
	 * step or a slew that added up to a millisecond). */
	if (llabs(offset - c->wall_offset_ns) < (long long)NSEC_PER_MSEC)
		offset = c->wall_offset_ns;
	/* counters first: they are attributed to the period that just ended, and reading them
	 * after a long consume would count samples of the next window in this one */
	if (tick)
		drain_counters(c, now);
	if (c->opts.python)
		python__drain_begin(c->opts.python);
	/* the maps text one module reads from here to the end of the drain serves the others */
	proc_maps__begin_round();
	n = ring_buffer__consume(c->rb);
	if (n < 0)
		pr_warn("failed to drain the events ring buffer: %s", strerror(-n));
	recheck_due(c, now);
	if (tick) {
		repeats_prune(c);
		window_ring__advance(c->ring, now);
		w = window_ring__current(c->ring);
		/* A window is done for stages at the first tick after it: that tick took its last
		 * period's histograms. (Samples past its end may have advanced the ring earlier.)
		 */
		if (c->opts.stages) {
			stages__sync_names(c->opts.stages);
			if (c->stage_window && c->stage_window != w &&
			    window_held(c->ring, c->stage_window)) {
				stages__window_closed(c->opts.stages, c->stage_window);
				settle_spans(c, c->stage_window);
				if (c->opts.spikes)
					spikes__window_closed(c->opts.spikes, c->ring,
							      c->stage_window);
			}
			c->stage_window = w;
		}
		/* after the spans of the window just closed took their estimates from them */
		window_ring__drop_records(c->ring);
		w->wall_offset_ns = offset;
		c->last_tick_ns = now;
		sync_cpus(c, now);
		c->st.drains++;
		c->st.last_drain_mono_ns = now;
		c->st.healthy = c->st.probes_attached >= 4;
		symbolizer__stats(c->opts.symbolizer, &c->st.sym);
		if (c->opts.python) {
			c->st.python = true;
			python__stats(c->opts.python, &c->st.py);
		}
	}
	pthread_rwlock_unlock(&c->lock);
	/* discovery reads /proc and attaches probes: not under the lock, and before the unwinder's
	 * work (a new binary's tables take a while), while short-lived processes still run */
	if (c->opts.gc)
		gc__tick(c->opts.gc, now);
	if (c->opts.unwinder)
		unwind_run_queue(c);
	if (c->opts.python)
		py_run_queue(c);
	if (c->opts.unwinder) {
		/* every 20 drain periods (10 s by default): processes whose exit was lost */
		if (tick && c->st.drains % 20 == 0)
			unwinder__prune(c->opts.unwinder);
		if (tick) {
			pthread_rwlock_wrlock(&c->lock);
			unwinder__stats(c->opts.unwinder, &c->st.unwind);
			pthread_rwlock_unlock(&c->lock);
		}
	}
	proc_maps__end_round();

	/* spikes that closed: to the state directory (it takes the read lock per profile) */
	if (tick && c->opts.spikes)
		spikes__save_pending(c->opts.spikes);
	if (tick) {
		pthread_mutex_lock(&c->drain_mu);
		c->drained_up_to_ns = now;
		c->wall_offset_ns = offset;
		pthread_cond_broadcast(&c->drain_cond);
		pthread_mutex_unlock(&c->drain_mu);
	}
}

static int arm_timer(int tfd, uint64_t drain_ns)
{
	/* absolute ticks on multiples of the drain period, so windows (multiples of it) are cut
	 * exactly at ticks */
	uint64_t now = sysinfo__mono_ns(), next = now - now % drain_ns + drain_ns;
	struct itimerspec its = {
	    .it_value = {.tv_sec = next / 1000000000ULL, .tv_nsec = next % 1000000000ULL},
	    .it_interval = {.tv_sec = drain_ns / 1000000000ULL,
			    .tv_nsec = drain_ns % 1000000000ULL},
	};

	return timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) ? -errno : 0;
}

int collector__run(struct collector *c, int stop_fd)
{
	struct epoll_event ev, evs[4];
	int ep, tfd, err = 0;
	bool running = true;

	ep = epoll_create1(EPOLL_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ep < 0 || tfd < 0) {
		err = -errno;
		pr_err("failed to set up the drain loop: %s", strerror(-err));
		goto out;
	}
	err = arm_timer(tfd, c->opts.drain_ns);
	ev = (struct epoll_event){.events = EPOLLIN, .data.u32 = 0};
	if (!err && epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev))
		err = -errno;
	ev.data.u32 = 1;
	if (!err && epoll_ctl(ep, EPOLL_CTL_ADD, ring_buffer__epoll_fd(c->rb), &ev))
		err = -errno;
	ev.data.u32 = 2;
	if (!err && epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &ev))
		err = -errno;
	if (err) {
		pr_err("failed to set up the drain loop: %s", strerror(-err));
		goto out;
	}
	/* the first drain right away: /healthz turns 200 once it is done */
	drain(c, true);
	while (running) {
		int n = epoll_wait(ep, evs, 4, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			pr_err("drain loop: epoll_wait failed: %s", strerror(-err));
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t expirations;

			switch (evs[i].data.u32) {
			case 0:
				if (read(tfd, &expirations, sizeof(expirations)) > 0)
					drain(c, true);
				break;
			case 1:
				drain(c, false);
				break;
			case 2:
				running = false;
				break;
			}
		}
	}
	drain(c, true);
out:
	if (err)
		collector__stop(c);
	if (ep >= 0)
		close(ep);
	if (tfd >= 0)
		close(tfd);
	return err;
}

void collector__stop(struct collector *c)
{
	pthread_mutex_lock(&c->drain_mu);
	c->stopping = true;
	pthread_cond_broadcast(&c->drain_cond);
	pthread_mutex_unlock(&c->drain_mu);
}

struct collector *collector__new(const struct collector_opts *opts)
{
	struct intern_ops stack_ops = {.acquire = stack_acquire, .release = stack_release};
	pthread_rwlockattr_t attr;
	pthread_condattr_t cattr;
	struct collector *c;

	c = xcalloc(1, sizeof(*c));
	c->opts = *opts;
	c->nr_cpus = loader__nr_cpus(opts->loader);
	c->self_pid = getpid();
	c->period_ns = 1000000000ULL / opts->frequency_hz;
	c->stacks = intern_table__new(&stack_ops);
	c->tasks = intern_table__new(NULL);
	if (!c->stacks || !c->tasks)
		abort();
	c->ring = window_ring__new(&(struct window_ring_opts){
	    .window_ns = opts->window_ns,
	    .nr_windows = opts->nr_windows,
	    .nr_cpus = c->nr_cpus,
	    .sample_period_ns = c->period_ns,
	    .stacks = c->stacks,
	    .tasks = c->tasks,
	});
	if (!c->ring)
		goto fail;
	c->sampled_since = xcalloc(c->nr_cpus, sizeof(uint64_t));
	c->cpu_received_total = xcalloc(c->nr_cpus, sizeof(uint64_t));
	c->cpu_sampled_ns_total = xcalloc(c->nr_cpus, sizeof(uint64_t));
	c->key = xcalloc(1, sizeof(struct stack) + 2 * TP_MAX_STACK_DEPTH * sizeof(struct frame));
	c->known.mask = 1023;
	c->known.pids = xcalloc(c->known.mask + 1, sizeof(uint32_t));
	c->known.starts = xcalloc(c->known.mask + 1, sizeof(uint64_t));
	pthread_rwlockattr_init(&attr);
	/* a stream of profile queries must not starve the drain loop */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&c->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&c->drain_mu, NULL);
	/* capture waiters time out on CLOCK_MONOTONIC, like everything else here */
	pthread_condattr_init(&cattr);
	pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	pthread_cond_init(&c->drain_cond, &cattr);
	pthread_condattr_destroy(&cattr);

	c->rb = ring_buffer__new(loader__events_fd(opts->loader), on_event, c, NULL);
	if (!c->rb) {
		pr_err("failed to open the events ring buffer: %s", strerror(errno));
		goto fail;
	}
	if (opts->probes && ring_buffer__add(c->rb, probes__spans_fd(opts->probes), on_span, c)) {
		pr_err("failed to open the spans ring buffer: %s", strerror(errno));
		goto fail;
	}
	if (opts->gc && ring_buffer__add(c->rb, opts->gc_events_fd, on_gc_event, c)) {
		pr_err("failed to open the GC events ring buffer: %s", strerror(errno));
		goto fail;
	}
	c->st.started_unix_ns = sysinfo__real_ns();
	c->st.started_mono_ns = c->last_tick_ns = sysinfo__mono_ns();
	c->wall_offset_ns = c->st.started_unix_ns - (int64_t)c->st.started_mono_ns;
	/* counts from before the daemon started are not ours to report */
	for (size_t i = 0; i < (size_t)c->nr_cpus * TP_COUNTER_SLOTS * TP_M_NR; i++)
		__atomic_store_n(&loader__counters(opts->loader)[i], 0, __ATOMIC_RELAXED);
	c->next_period = c->last_tick_ns / opts->drain_ns;
	sync_cpus(c, c->last_tick_ns);
	window_ring__advance(c->ring, c->last_tick_ns);
	window_ring__current(c->ring)->wall_offset_ns = c->wall_offset_ns;
	return c;
fail:
	collector__free(c);
	return NULL;
}

void collector__free(struct collector *c)
{
	if (!c)
		return;
	ring_buffer__free(c->rb);
	while (c->captures) {
		struct capture *cap = c->captures;

		c->captures = cap->next;
		window__free(cap->w, c->stacks, c->tasks);
		free(cap);
	}
	window_ring__free(c->ring);
	repeats_free(c);
	intern_table__free(c->stacks);
	intern_table__free(c->tasks);
	free(c->sampled_since);
	free(c->cpu_received_total);
	free(c->cpu_sampled_ns_total);
	free(c->key);
	free(c->unwind_ops);
	free(c->known.pids);
	free(c->known.starts);
	free(c);
}

void collector__rdlock(struct collector *c)
{
	pthread_rwlock_rdlock(&c->lock);
}

void collector__wrlock(struct collector *c)
{
	pthread_rwlock_wrlock(&c->lock);
}

void collector__unlock(struct collector *c)
{
	pthread_rwlock_unlock(&c->lock);
}

struct window_ring *collector__ring(struct collector *c)
{
	return c->ring;
}

uint64_t collector__period_ns(const struct collector *c)
{
	return c->period_ns;
}

uint32_t collector__nr_cpus(const struct collector *c)
{
	return c->nr_cpus;
}

bool collector__cpu_totals(struct collector *c, uint32_t cpu, uint64_t *received,
			   uint64_t *expected)
{
	*received = c->cpu_received_total[cpu];
	*expected = c->cpu_sampled_ns_total[cpu] / c->period_ns;
	return c->sampled_since[cpu] || c->cpu_sampled_ns_total[cpu] || *received;
}

const uint64_t *collector__runq_buckets(const struct collector *c)
{
	return c->runq_buckets;
}

int64_t collector__wall_offset_ns(struct collector *c)
{
	int64_t v;

	pthread_mutex_lock(&c->drain_mu);
	v = c->wall_offset_ns;
	pthread_mutex_unlock(&c->drain_mu);
	return v;
}

void collector__status(struct collector *c, struct collector_status *st)
{
	struct window_ring *r = c->ring;
	size_t n = window_ring__count(r);

	*st = c->st;
	st->window_bytes = st->record_bytes = st->records = 0;
	for (size_t i = 0; i < n + window_ring__nr_pinned(r); i++) {
		struct window *w = i < n ? window_ring__get(r, i) : window_ring__pinned(r, i - n);

		st->window_bytes += window__bytes(w);
		st->record_bytes += w->cap_records * sizeof(*w->records);
		st->records += w->nr_records;
	}
	st->expected_samples = 0;
	for (uint32_t cpu = 0; cpu < c->nr_cpus; cpu++)
		st->expected_samples += c->cpu_sampled_ns_total[cpu] / c->period_ns;
	st->stacks = intern_table__count(c->stacks);
	st->tasks = intern_table__count(c->tasks);
	st->interned_bytes = intern_table__bytes(c->stacks) + intern_table__bytes(c->tasks);
	st->windows = n;
	st->max_windows = window_ring__capacity(r);
}

struct window *collector__capture_begin(struct collector *c, uint64_t duration_ns)
{
	uint64_t now = sysinfo__mono_ns();
	struct capture *cap = calloc(1, sizeof(*cap));

	if (!cap)
		return NULL;
	cap->w = window__new(now, now + duration_ns, c->nr_cpus);
	if (!cap->w) {
		free(cap);
		return NULL;
	}
	pthread_rwlock_wrlock(&c->lock);
	cap->next = c->captures;
	c->captures = cap;
	pthread_rwlock_unlock(&c->lock);
	return cap->w;
}

int collector__capture_wait(struct collector *c, struct window *w, bool (*wanted)(void *arg),
			    void *arg)
{
	int err = 0;

	pthread_mutex_lock(&c->drain_mu);
	while (c->drained_up_to_ns < w->end_ns && !c->stopping) {
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += 200 * NSEC_PER_MSEC;
		if (until.tv_nsec >= (long)NSEC_PER_SEC) {
			until.tv_sec++;
			until.tv_nsec -= NSEC_PER_SEC;
		}
		pthread_cond_timedwait(&c->drain_cond, &c->drain_mu, &until);
		if (wanted && !wanted(arg)) {
			err = -ECONNRESET;
			break;
		}
	}
	if (!err && c->drained_up_to_ns < w->end_ns)
		err = -EINTR;
	pthread_mutex_unlock(&c->drain_mu);
	return err;
}

void collector__capture_end(struct collector *c, struct window *w)
{
	struct capture **pp, *cap = NULL;

	pthread_rwlock_wrlock(&c->lock);
	for (pp = &c->captures; *pp; pp = &(*pp)->next) {
		if ((*pp)->w == w) {
			cap = *pp;
			*pp = cap->next;
			break;
		}
	}
	window__free(w, c->stacks, c->tasks);
	pthread_rwlock_unlock(&c->lock);
	free(cap);
}
