// SPDX-License-Identifier: GPL-2.0-only
/* Event decoding: the records of the events, GC and spans ring buffers into windows (samples
 * symbolized and interned, repeats named by their thread's last stack, Python frames spliced in),
 * and the process tracking the events drive: known processes, maps read again after an exec, and
 * the unwinder's and Python discovery's work queued for after the store lock. Runs in the drain,
 * under the store lock (collector_internal.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "collector_internal.h"
#include "gc.h"
#include "loader.h"
#include "proc_maps.h"
#include "python.h"
#include "stages.h"
#include "symbolizer.h"
#include "sysinfo.h"

/* ---- work for after the lock ---- */

/* The unwinder's work (unwind_queue.h), when there is an unwinder; a request lost for want of
 * memory is counted. */
static void queue_unwind(struct collector *c, enum unwind_op op, uint32_t pid, uint64_t start_ns)
{
	if (!c->opts.unwinder)
		return;
	if (unwind_queue__push(&c->unwind_work, op, pid, start_ns))
		c->st.unwind_queue_full++;
}

/* Queues process (pid, start_ns) for Python discovery after the drain: reading its maps must not
 * hold the lock, nor delay the unwinder's work; forked: a child that has not exec'd, which walks
 * its parent's CPython, if the parent has one (queued after the parent if that is here too: a
 * parent seen in the same drain). When the queue is full the process is looked at again only at
 * its next recheck. */
static void py_queue(struct collector *c, uint32_t pid, uint64_t start_ns, bool forked)
{
	if (c->opts.python && c->nr_py_pending < PY_PENDING_MAX)
		c->py_pending[c->nr_py_pending++] =
		    (struct recheck){.pid = pid, .start_ns = start_ns, .forked = forked};
}

void collector_py_run_queue(struct collector *c)
{
	for (size_t i = 0; i < c->nr_py_pending; i++) {
		const struct recheck *r = &c->py_pending[i];
		uint64_t pstart;
		uint32_t ppid;

		if (!r->forked)
			python__note_process(c->opts.python, r->pid, r->start_ns);
		/* not if it exec'd since (its fork link went with the old image) */
		else if (symbolizer__fork_parent(c->opts.symbolizer, r->pid, r->start_ns, &ppid,
						 &pstart))
			python__note_fork(c->opts.python, r->pid, r->start_ns, ppid, pstart);
	}
	c->nr_py_pending = 0;
}

/* ---- events ---- */

/* Process pid exec'd or exited (the event's ts_ns: CLOCK_MONOTONIC, as bpf_ktime_get_ns()). */
static void forget_process(struct collector *c, uint32_t pid, bool exited, uint64_t ts_ns)
{
	/* the maps read this round were the old image's */
	proc_maps__forget(pid);
	if (exited)
		symbolizer__forget_exited(c->opts.symbolizer, pid);
	else
		symbolizer__forget_process(c->opts.symbolizer, pid);
	/* BPF forgot it (known_procs, py_procs) at the event, and marks the new image known at
	 * the sample that wakes us for it (or at the exec, with tables from its static layout's:
	 * known at the record then, TP_EXEC_TABLES_SET): nothing to delete here */
	pid_set__del(&c->known, pid);
	if (c->opts.python)
		python__forget_process(c->opts.python, pid, ts_ns);
	queue_unwind(c, UNWIND_FORGET, pid, ts_ns);
}

/* The identity the exec record x gives its process, for when its maps are first read. */
static void note_exec(struct collector *c, const struct tp_exec *x)
{
	struct exec_identity id = {
	    .cgroup_id = x->cgroup_id,
	    .cgroup_v1_id = x->cgroup_v1_id,
	    .pid_ns = x->pid_ns,
	    .ns_pid = x->ns_pid,
	    .exe_dev = sysinfo__dev_of_kernel(x->exe_dev),
	    .exe_ino = x->exe_ino,
	    .entry_ip = x->entry_ip,
	    .exe_size = x->exe_size,
	    .start_code = x->start_code,
	    .vdso = x->vdso,
	    .layout_known = (x->flags & TP_EXEC_LAYOUT_KNOWN) != 0,
	};

	_Static_assert(sizeof(id.name) >= sizeof(x->name), "exec name fits");
	memcpy(id.name, x->name, sizeof(x->name));
	id.name[sizeof(id.name) - 1] = 0;
	symbolizer__note_exec(c->opts.symbolizer, x->hdr.pid, x->hdr.start_ns, &id);
}

/* What exec record x says of the new image for GC discovery, in *out. */
static const struct gc_exec *gc_exec_of(const struct tp_exec *x, struct gc_exec *out)
{
	*out =
	    (struct gc_exec){.exe_dev = sysinfo__dev_of_kernel(x->exe_dev), .exe_ino = x->exe_ino};
	_Static_assert(sizeof(out->comm) == sizeof(x->comm), "comm sizes");
	memcpy(out->comm, x->comm, sizeof(out->comm));
	out->comm[sizeof(out->comm) - 1] = 0;
	return out;
}

/* Process (pid, start_ns) exec'd, read in the drain that began at drain_ns: its maps are read
 * again at the first drain from drain_ns + PROC_MAPS_EXEC_RECHECK_NS on (recheck_due), the one
 * where GC discovery looks again (gc.c, from the same drain's time). */
static void recheck_later(struct collector *c, uint32_t pid, uint64_t start_ns, uint64_t drain_ns,
			  bool forked)
{
	c->rechecks[(c->recheck_head + c->nr_rechecks) % RECHECK_MAX] =
	    (struct recheck){.pid = pid,
			     .forked = forked,
			     .start_ns = start_ns,
			     .due_ns = drain_ns + PROC_MAPS_EXEC_RECHECK_NS};
	if (c->nr_rechecks < RECHECK_MAX)
		c->nr_rechecks++;
	else
		c->recheck_head = (c->recheck_head + 1) % RECHECK_MAX;
}

/* The rechecks due at now, in exec order: the symbolizer's maps and the unwinder's tables of
 * each process that is known (one that exited or exec'd again meanwhile is not). */
void collector_recheck_due(struct collector *c, uint64_t now)
{
	uint64_t pstart;
	uint32_t ppid;

	while (c->nr_rechecks) {
		const struct recheck *r = &c->rechecks[c->recheck_head];

		if (r->due_ns > now)
			break;
		if (r->forked) {
			/* a forked child that neither exec'd nor exited: a worker, with maps of
			 * its own from now on */
			if (pid_set__has(&c->known, r->pid, r->start_ns) &&
			    symbolizer__fork_parent(c->opts.symbolizer, r->pid, r->start_ns, &ppid,
						    &pstart)) {
				symbolizer__note_process(c->opts.symbolizer, r->pid, r->start_ns);
				py_queue(c, r->pid, r->start_ns, false);
				queue_unwind(c, UNWIND_ADD, r->pid, r->start_ns);
			}
		} else if (pid_set__has(&c->known, r->pid, r->start_ns) &&
			   symbolizer__loaded(c->opts.symbolizer, r->pid, r->start_ns)) {
			/* read after its dynamic loader's work: nothing more is mapped at start
			 * (a dlopen is read when a sample or a walk meets it); GC discovery's look
			 * at the libraries, due now too, is made in those maps */
			struct proc_maps maps;

			if (c->opts.gc &&
			    !symbolizer__copy_maps(c->opts.symbolizer, r->pid, r->start_ns, &maps))
				gc__process_loaded(c->opts.gc, r->pid, &maps);
			c->st.exec_rechecks[1]++;
		} else if (pid_set__has(&c->known, r->pid, r->start_ns)) {
			/* its first read may have come while its dynamic loader mapped its
			 * libraries (a new image maps its libpython after its first samples) */
			symbolizer__reread_process(c->opts.symbolizer, r->pid, r->start_ns);
			queue_unwind(c, UNWIND_RESCAN_SURE, r->pid, r->start_ns);
			py_queue(c, r->pid, r->start_ns, false);
			c->st.exec_rechecks[0]++;
		}
		c->recheck_head = (c->recheck_head + 1) % RECHECK_MAX;
		c->nr_rechecks--;
	}
}

/* Whether (pid, start_ns) is a forked child that has not exec'd and whose parent's maps are cached:
 * it runs its parent's image, which names its samples. */
static bool forked_image(struct collector *c, uint32_t pid, uint64_t start_ns)
{
	uint64_t pstart;
	uint32_t ppid;

	return symbolizer__fork_parent(c->opts.symbolizer, pid, start_ns, &ppid, &pstart) &&
	       symbolizer__knows(c->opts.symbolizer, ppid, pstart) &&
	       !symbolizer__knows(c->opts.symbolizer, pid, start_ns);
}

/* The first sample of a process (or its first block, TP_EV_SEEN) woke us so that its maps are
 * read while it lives (BPF marked it known then: its samples now wait for the next drain), and
 * its unwind tables are loaded for its next samples; read_now: its maps are read here (a block,
 * whose sample may come after the process is gone), not at its sample's symbolization. A process
 * made from a static layout has its maps made from it, and the unwinder makes its tables the
 * layout's; tables_set: BPF set them at its exec from the layout's and marked it known (its exec
 * record calls this), and the unwinder takes them over. A forked
 * child that has not exec'd runs its parent's image (forked_image): its parent's maps name it and
 * its parent's CPython is walked in it after this drain, and its own maps, unwind tables and
 * CPython wait PROC_MAPS_EXEC_RECHECK_NS (recheck_later's adoption): most such children exec or
 * exit before then (a shell's, subprocess's), and are never read. */
static void know_process(struct collector *c, uint32_t pid, uint64_t start_ns, bool read_now,
			 bool tables_set)
{
	struct symbolizer_layout sl;
	const struct exited_process *x = &c->exited[pid % COLLECTOR_EXITED];

	if (pid_set__has(&c->known, pid, start_ns) || (x->pid == pid && x->start_ns == start_ns))
		return;
	/* past the cap the process that started first is forgotten: its next sample wakes us and
	 * makes it known again (a lost exit notification must not grow the set forever) */
	while (c->known.count >= c->opts.max_known) {
		uint32_t old = pid_set__evict_oldest(&c->known);

		if (!old)
			break;
		loader__forget(c->opts.loader, old);
		c->known_evicted++;
	}
	pid_set__add(&c->known, pid, start_ns);
	if (forked_image(c, pid, start_ns)) {
		py_queue(c, pid, start_ns, true);
		recheck_later(c, pid, start_ns, c->drain_ns, true);
		c->st.forks_deferred++;
		return;
	}
	/* maps made from its static executable's layout: the unwinder and Python discovery look
	 * at them, not at a read of their own; the unwinder makes its tables the layout's */
	if (symbolizer__offer_layout_maps(c->opts.symbolizer, pid, start_ns, &sl)) {
		py_queue(c, pid, start_ns, false);
		if (c->opts.unwinder &&
		    unwind_queue__push_layout(&c->unwind_work, pid, start_ns,
					      &(struct unwind_layout){.dev = sl.dev,
								      .ino = sl.ino,
								      .start_code = sl.start_code,
								      .vdso = sl.vdso,
								      .tables_set = tables_set}))
			c->st.unwind_queue_full++;
		return;
	}
	if (read_now)
		symbolizer__note_process(c->opts.symbolizer, pid, start_ns);
	py_queue(c, pid, start_ns, false);
	queue_unwind(c, UNWIND_ADD, pid, start_ns);
}

/* Whether user frame f (the leaf when leaf, else a return address) is in CPython's eval loop. */
static bool is_eval_frame(const struct frame *f, bool leaf)
{
	return f->obj &&
	       object__in_symbol(f->obj, leaf ? f->addr : f->addr - 1, "_PyEval_EvalFrameDefault");
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

	/* after all the user frames BPF sent, not after those kept (a cut stack keeps fewer) */
	np = python__resolve(c->opts.python, s->hdr.pid, s->hdr.start_ns,
			     (const struct tp_py_frame *)&s->addrs[s->nr_kernel + s->nr_user],
			     s->nr_python, (s->flags & TP_SAMPLE_PY_NEW) != 0, py);
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

/* Moves each named frame of k to its function's start + 1, which the leaf's lookup and a return
 * address's (one byte before it) both name: the stack by function, without the place in each.
 * Python frames (their addresses are line ids) and unnamed ones stay. */
static void fold_stack(struct stack *k)
{
	for (uint32_t i = 0; i < (uint32_t)k->nr_kernel + k->nr_user; i++) {
		struct frame *f = &k->frames[i];
		bool leaf = i == 0 || i == k->nr_kernel;
		uint64_t start;

		if (!f->obj || python__is_object(f->obj))
			continue;
		if (object__lookup(f->obj, leaf ? f->addr : f->addr - 1, &start))
			f->addr = start + 1;
	}
}

/* The interned stack of sample s (symbolized; a reference), or NULL: errno ENOMEM, or ENOSPC
 * when the table is full. A new stack past the cap less its spare goes in by function
 * (fold_stack), in the spare: profiles by function stay right when the table is full. */
static struct stack *sample_stack(struct collector *c, const struct tp_sample *s)
{
	uint32_t nk = s->nr_kernel, nu = s->nr_user, n = nk + nu;
	struct stack *stack;
	size_t len;

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
	/* (frames in BPF trampolines left out: nk becomes the frames kept) */
	nk = symbolizer__resolve_kernel(c->opts.symbolizer, (const uint64_t *)s->addrs, nk,
					s->blocked_ns != 0, c->key->frames);
	c->key->nr_kernel = nk;
	n = nk + nu;
	if (nu) {
		int valid = symbolizer__resolve_user(
		    c->opts.symbolizer, s->hdr.pid, s->hdr.start_ns, s->hdr.ts_ns,
		    (const uint64_t *)s->addrs + s->nr_kernel, nu, c->key->frames + nk);

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
	len = sizeof(*c->key) + n * sizeof(struct frame);
	stack = intern_table__get(c->stacks, c->key, len, NULL);
	if (!stack && errno == ENOSPC) {
		fold_stack(c->key);
		stack = intern_table__get_spare(c->stacks, c->key, len);
		c->st.folded_stacks += stack != NULL;
	}
	return stack;
}

/* The table walker of sample s ended at its last user address, in no mapping BPF had: the
 * process mapped something new, and the unwinder reads its maps again; unless that address lies
 * in a mapped object's data (a rescan would find nothing new). A walk that ended at its leaf
 * (the registers' PC) found new code for sure: no backoff delays its rescan. */
static void ask_rescan(struct collector *c, const struct tp_sample *s)
{
	if (!(s->flags & TP_SAMPLE_REPEAT) && s->nr_user &&
	    symbolizer__in_object_data(c->opts.symbolizer, s->hdr.pid, s->hdr.start_ns,
				       s->addrs[s->nr_kernel + s->nr_user - 1])) {
		c->st.rescans_saved++;
		return;
	}
	queue_unwind(c, s->nr_user == 1 ? UNWIND_RESCAN_SURE : UNWIND_RESCAN, s->hdr.pid,
		     s->hdr.start_ns);
}

/* Adds a CPU sample (blocked_ns 0) or an off-CPU sample (a block of blocked_ns) to its window. */
static void add_sample(struct collector *c, const struct tp_sample *s, uint64_t blocked_ns)
{
	struct task tk = {.pid = s->hdr.pid, .tid = s->tid, .stage = s->stage};
	struct process_info info;
	bool stack_full = false, task_full;
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
		    blocked_ns ? repeats__find(&c->repeats, s->hdr.pid, s->tid) : NULL;

		if (!rep || rep->start_ns != s->hdr.start_ns) {
			w = window_ring__current(c->ring);
			w->drops[DROP_REPEAT_UNKNOWN]++;
			c->st.drops[DROP_REPEAT_UNKNOWN]++;
			return;
		}
		stack = intern_table__ref(rep->stack);
	} else {
		stack = sample_stack(c, s);
		stack_full = !stack && errno == ENOSPC;
		/* without the memory to keep it, its repeats are lost (and counted) */
		if (stack && (s->flags & TP_SAMPLE_REPEATABLE) && blocked_ns)
			repeats__keep(&c->repeats, c->stacks, s, stack);
	}
	if (blocked_ns && s->hdr.ts_ns > c->repeats.newest_ns)
		c->repeats.newest_ns = s->hdr.ts_ns;
	if (!symbolizer__process_info(c->opts.symbolizer, s->hdr.pid, s->hdr.start_ns, &info)) {
		memcpy(tk.process, info.name, sizeof(tk.process));
		tk.ns_pid = info.ns_pid;
		tk.cgroup = info.cgroup;
	}
	/* names are any bytes a process chose: labels must be UTF-8 (zero padding stays) */
	task__sanitize_name(tk.comm);
	task__sanitize_name(tk.thread);
	task__sanitize_name(tk.process);
	if (s->flags & TP_SAMPLE_UNWIND_RESCAN)
		ask_rescan(c, s);
	/* a young process (TP_SAMPLE_YOUNG): BPF did not mark it known, and its first sample past
	 * its youth wakes us for it; until then it is not made known here either (its maps come
	 * from the mmap records at its symbolization; its unwind tables and CPython wait), most
	 * such processes being gone by then */
	if (!(s->flags & TP_SAMPLE_YOUNG))
		know_process(c, s->hdr.pid, s->hdr.start_ns, false, false);
	else
		c->st.young_samples++;
	/* its maps read again (after a sample in code that runs only after its dynamic loader's
	 * work) found more mapped than at its first read, where the unwinder and Python discovery
	 * looked: they look again now (the recheck after its exec will not) */
	if (symbolizer__take_loaded_reread(c->opts.symbolizer, s->hdr.pid, s->hdr.start_ns)) {
		queue_unwind(c, UNWIND_RESCAN_SURE, s->hdr.pid, s->hdr.start_ns);
		py_queue(c, s->hdr.pid, s->hdr.start_ns, false);
	}

	task = intern_table__get(c->tasks, &tk, sizeof(tk), NULL);
	task_full = !task && errno == ENOSPC;
	if (s->hdr.ts_ns < c->st.started_mono_ns) {
		/* queued while the daemon started: its count was zeroed with the others (the
		 * first window would hold more samples than it received) */
		intern_table__put(c->stacks, stack);
		intern_table__put(c->tasks, task);
		return;
	}
	w = window_ring__window_at(c->ring, s->hdr.ts_ns);
	if (!stack || !task || !w) {
		enum window_drop why = stack_full      ? DROP_STACK_TABLE_FULL
				       : task_full     ? DROP_TASK_TABLE_FULL
				       : stack && task ? DROP_LATE
						       : DROP_NO_MEMORY;

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

int collector_on_event(void *ctx, void *data, size_t size)
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
		know_process(c, hdr->pid, hdr->start_ns, true, false);
		break;
	case TP_EV_FORK: {
		const struct tp_fork *f = data;

		if (size >= sizeof(*f)) {
			struct exec_identity id = {.cgroup_id = f->cgroup_id,
						   .cgroup_v1_id = f->cgroup_v1_id,
						   .pid_ns = f->pid_ns,
						   .ns_pid = f->ns_pid};

			_Static_assert(sizeof(id.name) >= sizeof(f->name), "fork name fits");
			memcpy(id.name, f->name, sizeof(f->name));
			id.name[sizeof(id.name) - 1] = 0;

			symbolizer__note_fork(c->opts.symbolizer, f->hdr.pid, f->hdr.start_ns,
					      f->parent_pid, f->parent_start_ns, &id);
		}
		break;
	}
	case TP_EV_EXEC: {
		/* with the new image's identity (a shorter record: malformed, a bare exec) */
		const struct tp_exec *x = size >= sizeof(*x) ? data : NULL;
		struct gc_exec gx;

		/* in order after the process's earlier samples, which used the old maps */
		forget_process(c, hdr->pid, false, hdr->ts_ns);
		if (x)
			note_exec(c, x);
		/* BPF set its unwind tables from its static layout's and marked it known: its
		 * first sample wakes nobody, so it is known now (its maps made from the layout;
		 * read now where they could not be) and the unwinder takes its entry over */
		if (x && (x->flags & TP_EXEC_TABLES_SET)) {
			c->st.layout_tables_used++;
			know_process(c, hdr->pid, hdr->start_ns, true, true);
		}
		/* its interpreter, where the exec program gave it to the walker from its
		 * executable's (and where not, what python__note_process() makes that of) */
		if (x && c->opts.python)
			python__note_exec(c->opts.python, hdr->pid, hdr->start_ns,
					  &(struct python_exec){
					      .exe_dev = sysinfo__dev_of_kernel(x->exe_dev),
					      .exe_kdev = x->exe_dev,
					      .exe_ino = x->exe_ino,
					      .start_code = x->start_code,
					      .walker_set = x->flags & TP_EXEC_PY_SET,
					  });
		recheck_later(c, hdr->pid, hdr->start_ns, c->drain_ns, false);
		if (c->opts.gc)
			gc__process_exec(c->opts.gc, hdr->pid, x ? gc_exec_of(x, &gx) : NULL);
		break;
	}
	case TP_EV_EXIT:
		forget_process(c, hdr->pid, true, hdr->ts_ns);
		c->exited[hdr->pid % COLLECTOR_EXITED].pid = hdr->pid;
		c->exited[hdr->pid % COLLECTOR_EXITED].start_ns = hdr->start_ns;
		if (c->opts.gc)
			gc__process_exit(c->opts.gc, hdr->pid);
		break;
	}
	return 0;
}

/* A GC event, kept in the window it started in; or a dlopen to look at. */
int collector_on_gc_event(void *ctx, void *data, size_t size)
{
	const struct tp_gc_event *rec = data;
	struct collector *c = ctx;
	struct gc_event ev;
	struct window *w;

	if (size < sizeof(*rec))
		return 0;
	if (rec->record == TP_GC_REC_DLOPEN) {
		uint64_t start_ns;

		gc__note_dlopen(c->opts.gc, rec->pid);
		/* it may have loaded a libpython (a plugin, an embedding program): the look at the
		 * exec's recheck covered only the first 300 ms, and is skipped for a process read
		 * after its dynamic loader's work */
		if (!loader__live_start(c->opts.loader, rec->pid, &start_ns) &&
		    pid_set__has(&c->known, rec->pid, start_ns))
			py_queue(c, rec->pid, start_ns, false);
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
int collector_on_span(void *ctx, void *data, size_t size)
{
	const struct tp_span *sp = data;
	struct collector *c = ctx;

	if (size < sizeof(*sp))
		return 0;
	stages__add_span(c->opts.stages, sp,
			 window_ring__window_at(c->ring, sp->start_ns + sp->duration_ns));
	return 0;
}
