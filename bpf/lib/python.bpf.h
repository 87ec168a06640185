/* SPDX-License-Identifier: GPL-2.0-only */
/* The CPython frame walker shared by the CPU sampler and the scheduler programs: finds the
 * current thread's PyThreadState through the interpreter's thread list (so a thread that does not
 * hold the GIL is found too) and copies its _PyInterpreterFrame chain, innermost first, as
 * (code object, instruction offset, entry flag) triples. Structure offsets come per interpreter
 * version from py_offsets; which processes run which version, from py_procs. Both maps are
 * defined here, owned by profile.bpf.c and reused by sched.bpf.c (daemon/loader.c). */
#ifndef TAILPROF_PYTHON_BPF_H
#define TAILPROF_PYTHON_BPF_H

/* py_offsets: version id -> the structure offsets of that CPython version (tp_py_offsets).
 * Written by tailprofd at start (daemon/python_versions.c's table), read here. TP_PY_MAX_VERSIONS
 * entries: one per supported version. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_PY_MAX_VERSIONS);
	__type(key, __u32);
	__type(value, struct tp_py_offsets);
} py_offsets SEC(".maps");

/* py_procs: tgid -> the process's Python runtime (tp_py_proc). Written by tailprofd when it finds
 * a supported interpreter in a process's maps, deleted at its exec or exit by the sampler's
 * programs (and by tailprofd when it wrote the entry after that), and checked against start_ns
 * here, for a pid reused before that. Sized like known_procs' share of interpreters on a busy
 * host; when full, the processes beyond it keep native stacks only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tp_py_proc);
} py_procs SEC(".maps");

/* py_seen: the Python stacks (tp_py_stack_end(): their frames' code objects, and the process or,
 * for a stack wholly in the interpreter file's image, that file) whose code objects user space
 * reads in time. A stack not in it makes its sample wake user space (TP_SAMPLE_PY_NEW), at most
 * once per TP_PY_WAKE_GAP_NS per process. A process's own stacks go in at that wake-up; an image
 * stack goes in when tailprofd has named its frames (they never change and need no live
 * process), so the start-ups of later processes of the file (importlib, site: 3.11 and 3.12's
 * deep-frozen modules) wake nobody. A busy process's stacks are all in it after its first
 * seconds, so steady sampling wakes nobody. LRU: forgetting an old stack costs one early drain. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} py_seen SEC(".maps");

/* The frame window's size (tp_py_read_head): bytes copied at most, a power of two (masks bound
 * its indexes for the verifier). */
#define TP_PY_WIN_BYTES 512

/* py_frame_head: the first TP_PY_FRAME_HEAD bytes of the frame a walk is at, per CPU: one
 * bpf_probe_read_user() a frame instead of one a field (five), and the window they may come from.
 * Each object has its own, and a walk does not nest in another of its object on a CPU: the
 * sampler's does not nest in itself; the scheduler's run on the return paths only (sched_switch
 * never walks Python), sys_exit with preemption off and fexit/schedule under BPF's recursion
 * guard. Not so the task work, whose callback runs preemptible: two threads' walks on one CPU
 * could interleave here and in ustack_scratch's return entry, so tw_returned walks only while it
 * holds its CPU's return_busy (sched_state.bpf.h). Include after unwind.bpf.h (TP_UNWIND_PAGE). */
struct tp_py_frame_head {
	__u8 b[TP_PY_FRAME_HEAD];
	/* the frame window: a copy of user memory [win_lo, win_lo + win_len), taken by
	 * tp_py_read_head; win_len 0: none */
	__u64 win_lo;
	__u64 win_len;
	__u64 win[TP_PY_WIN_BYTES / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_py_frame_head);
} py_frame_head SEC(".maps");

/* The least time between two wake-ups for new Python stacks of one process. */
#define TP_PY_WAKE_GAP_NS 2000000ULL

/* What tp_py_walk found. */
enum tp_py_result {
	TP_PY_NONE = 0,	 /* not a Python process tailprofd knows: no frames */
	TP_PY_OK,	 /* frames written (maybe 0: the thread runs no Python code now) */
	TP_PY_FAILED,	 /* a Python process, but no thread state or an unreadable frame */
	TP_PY_TRUNCATED, /* TP_PY_MAX_FRAMES written and the stack goes on */
};

static __always_inline __u64 tp_py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* State of one walk, on the caller's stack, shared with the bpf_loop callbacks: unrolled loops
 * of reads would make the verifier follow every path through them (over a million
 * instructions on 6.x). */
struct tp_py_state {
	const struct tp_py_offsets *o;
	__u64 *out;		       /* 2 * TP_PY_MAX_FRAMES words */
	struct tp_py_frame_head *head; /* py_frame_head's */
	__u64 interp;
	__u64 ts;		   /* the thread state looked at, then the one found (0: none) */
	__u64 frame;		   /* the next frame to copy (0: none) */
	__u64 hash;		   /* of the code objects copied (tp_py_stack_step) */
	__u64 image_lo, image_len; /* the interpreter file's image (tp_py_proc) */
	__u32 tid;     /* as the process sees it (its PID namespace's), like native_thread_id */
	__u32 found;   /* the thread state of tid was found */
	__u32 nr;      /* frames copied */
	__u32 failed;  /* a frame without code: stop, the sample says so */
	__u32 outside; /* a frame's code object is not in the image */
};

/* One step of the search for the thread state of st->tid: a thread of the current interpreter,
 * or the move to the next interpreter. Returns 1 to stop, with st->ts the thread state found
 * (0: none). */
static long tp_py_find_step(__u32 index, void *ctx)
{
	struct tp_py_state *st = ctx;
	const struct tp_py_offsets *o = st->o;

	if (!st->ts) {
		st->interp = st->interp ? tp_py_read_ptr(st->interp + o->interp_next) : 0;
		if (!st->interp)
			return 1;
		st->ts = tp_py_read_ptr(st->interp + o->interp_threads_head);
		return 0;
	}
	if (tp_py_read_ptr(st->ts + o->tstate_native_tid) == st->tid) {
		st->found = 1;
		return 1;
	}
	st->ts = tp_py_read_ptr(st->ts + o->tstate_next);
	return 0;
}

/* The word at off in a frame's head, 0 where off is past it (tp_py_frame_fits). */
static __always_inline __u64 tp_py_head_word(const struct tp_py_frame_head *h, __u32 off)
{
	barrier_var(off); /* the bound checked on the register that is used */
	if (off > TP_PY_FRAME_HEAD - 8)
		return 0;
	return *(const __u64 *)&h->b[off];
}

/* The byte at off in a frame's head, 0 where off is past it (TP_PY_NO_OFFSET: none). */
static __always_inline __u8 tp_py_head_byte(const struct tp_py_frame_head *h, __u32 off)
{
	barrier_var(off);
	if (off > TP_PY_FRAME_HEAD - 1)
		return 0;
	return h->b[off];
}

/* Reads the head of the frame at frame (TP_PY_FRAME_HEAD bytes) into h->b, through h's window.
 * Returns 0, or non-zero where it cannot be read.
 *
 * From CPython 3.11 a thread's frames are pushed on its data stack, each above its caller, a few
 * hundred bytes apart; a helper call costs more here than the bytes it copies (some 130 ns warm:
 * retpolines, the SRSO return thunk). A head outside the window copies the TP_PY_WIN_BYTES that
 * end where the head does (from the start of its page at most) in one call, and its callers'
 * heads are then plain loads. The copy stays in one page, and every byte of a page can be read if
 * one can, so it fails exactly where the head's read would have. A head across a page and an
 * unaligned one are read directly. */
static __always_inline long tp_py_read_head(struct tp_py_frame_head *h, __u64 frame)
{
	__u64 off = frame - h->win_lo, end = frame + TP_PY_FRAME_HEAD, page, lo, len;
	__u32 i;

	if (frame & 7)
		return bpf_probe_read_user(h->b, sizeof(h->b), (const void *)frame);
	if (off >= h->win_len || h->win_len - off < TP_PY_FRAME_HEAD) {
		page = (end - 1) & ~(__u64)(TP_UNWIND_PAGE - 1);
		if (frame < page)
			return bpf_probe_read_user(h->b, sizeof(h->b), (const void *)frame);
		lo = end - TP_PY_WIN_BYTES;
		if (lo < page || lo > frame)
			lo = page;
		len = end - lo;
		/* opaque to clang, which could otherwise prove the cap below never changes len and
		 * drop it: it is the verifier's only bound on the read's length */
		barrier_var(len);
		if (len > TP_PY_WIN_BYTES) /* never: a bound for the verifier */
			len = TP_PY_WIN_BYTES;
		h->win_len = 0;
		if (bpf_probe_read_user(h->win, len, (const void *)lo))
			return -1;
		h->win_lo = lo;
		h->win_len = len;
		off = frame - lo;
	}
	i = off / 8;
	for (int k = 0; k < TP_PY_FRAME_HEAD / 8; k++)
		((__u64 *)h->b)[k] = h->win[(i + k) & (TP_PY_WIN_BYTES / 8 - 1)];
	return 0;
}

/* Copies frame st->frame as the index-th, and moves to its previous one. Returns 1 to stop. */
static long tp_py_frame_step(__u32 index, void *ctx)
{
	struct tp_py_state *st = ctx;
	const struct tp_py_offsets *o = st->o;
	struct tp_py_frame_head *h = st->head;
	__u64 frame = st->frame, code = 0, instr;
	__u8 entry, owner;
	__s64 units;

	/* the frame number is bpf_loop's index, not a count kept in st: one verifier state */
	if (index >= TP_PY_MAX_FRAMES || !frame || !h)
		return 1;
	/* the header holds every field read (a frame is never shorter: localsplus follows it) */
	if (!tp_py_read_head(h, frame))
		code = tp_py_head_word(h, o->frame_code);
	if (!code) {
		/* a process's own stack: BPF adds it to py_seen, as any stack left incomplete */
		st->failed = 1;
		st->outside = 1;
		return 1;
	}
	instr = tp_py_head_word(h, o->frame_prev_instr);
	entry = tp_py_head_byte(h, o->frame_is_entry);
	owner = tp_py_head_byte(h, o->frame_owner);
	/* arithmetic shift: clang 14 cannot emit signed division for BPF */
	units = (__s64)(instr - (code + o->code_adaptive)) >> 1;
	/* masked where it is used: a bound checked on a copy is lost on some verifiers */
	barrier_var(index);
	index &= TP_PY_MAX_FRAMES - 1;
	st->out[2 * index] = code;
	st->out[2 * index + 1] = (__u32)units | (entry ? TP_PY_INFO_ENTRY : 0) |
				 ((__u64)owner << TP_PY_INFO_OWNER_SHIFT);
	st->nr = index + 1;
	if (code - st->image_lo < st->image_len) {
		st->hash = tp_py_stack_step(st->hash, code - st->image_lo);
	} else {
		st->hash = tp_py_stack_step(st->hash, code);
		st->outside = 1;
	}
	st->frame = tp_py_head_word(h, o->frame_previous);
	return 0;
}

/* The current thread's id as its own process sees it: in its innermost PID namespace (a
 * container's), which is what CPython stores in native_thread_id (gettid()). */
static __always_inline __u32 tp_py_current_tid(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pid *p = t->thread_pid, *up;
	unsigned int level;
	__u32 nr = 0;

	/* the initial namespace: numbers[0], which plain loads reach on every kernel */
	if (p->level == 0)
		return p->numbers[0].nr;
	/* a nested one: numbers[] past the length Linux 6.1 declares (numbers[1]), by helpers */
	up = BPF_CORE_READ(t, thread_pid);
	level = BPF_CORE_READ(up, level);
	/* the kernel's MAX_PID_NS_LEVEL is 32 */
	bpf_core_read(&nr, sizeof(nr), &up->numbers[level & 31].nr);
	/* read here: one load of nr's stack slot or numbers[0] would be a pointer of two types */
	barrier_var(nr);
	return nr;
}

/* Writes the Python frames of thread tid (as its process sees it: tp_py_current_tid()) of process
 * pid (started at start_ns) into out[0 .. 2 * TP_PY_MAX_FRAMES) as struct tp_py_frame pairs,
 * innermost first, and their number into *nr; sets TP_SAMPLE_PY_NEW in *flags for a stack not in
 * py_seen (see there). The thread state is found by native_thread_id in the interpreters' thread
 * lists, so threads that do not hold the GIL have their frames too; at most about
 * TP_PY_MAX_INTERPS x TP_PY_MAX_THREADS thread states are looked at in all, and a thread not
 * found among them gets TP_PY_FAILED (never another thread's frames). Incomplete frames (still in
 * their prologue) are sent as they are, with their (negative or prologue) offset: user space,
 * which reads the code object anyway, drops them as CPython's _PyFrame_IsIncomplete does. Needs
 * bpf_loop (Linux 5.17). */
static __always_inline enum tp_py_result tp_py_walk(__u32 pid, __u64 start_ns, __u32 tid,
						    __u64 *out, __u16 *nr, __u32 *flags)
{
	struct tp_py_state st = {.out = out, .tid = tid, .hash = TP_PY_STACK_SEED};
	struct tp_py_proc *py;
	__u32 v, zero = 0;
	__u64 cur;

	*nr = 0;
	py = bpf_map_lookup_elem(&py_procs, &pid);
	if (!py || py->start_ns != start_ns)
		return TP_PY_NONE;
	v = py->version;
	st.o = bpf_map_lookup_elem(&py_offsets, &v);
	st.head = bpf_map_lookup_elem(&py_frame_head, &zero);
	if (!st.o || !st.head)
		return TP_PY_FAILED;
	st.head->win_len = 0;
	if (py->image_hi > py->image_lo) {
		st.image_lo = py->image_lo;
		st.image_len = py->image_hi - py->image_lo;
	}
	st.interp = tp_py_read_ptr(py->runtime + st.o->runtime_interp_head);
	/* no interpreter yet (a process given to the walker at its exec, before Py_Initialize):
	 * no Python code runs */
	if (!st.interp)
		return TP_PY_OK;
	st.ts = tp_py_read_ptr(st.interp + st.o->interp_threads_head);
	bpf_loop(TP_PY_MAX_INTERPS * (TP_PY_MAX_THREADS + 1), tp_py_find_step, &st, 0);
	/* not found within the bound (more threads than it allows): never another thread's frames
	 */
	if (!st.found || !st.ts)
		return TP_PY_FAILED;
	cur = st.ts;
	if (st.o->tstate_cframe != TP_PY_NO_OFFSET)
		cur = tp_py_read_ptr(cur + st.o->tstate_cframe);
	if (!cur)
		return TP_PY_FAILED;
	st.frame = tp_py_read_ptr(cur + st.o->cframe_current_frame);
	bpf_loop(TP_PY_MAX_FRAMES + 1, tp_py_frame_step, &st, 0);
	*nr = st.nr;
	if (st.nr) {
		__u64 key = tp_py_stack_end(st.hash, !st.outside, py->image_key, pid, start_ns);
		__u64 now = bpf_ktime_get_ns();
		__u8 one = 1;

		if (!bpf_map_lookup_elem(&py_seen, &key) &&
		    now - py->woke_ns >= TP_PY_WAKE_GAP_NS) {
			py->woke_ns = now;
			/* an image stack: tailprofd adds it once it has named the frames */
			if (st.outside)
				bpf_map_update_elem(&py_seen, &key, &one, BPF_ANY);
			*flags |= TP_SAMPLE_PY_NEW;
		}
	}
	if (st.failed)
		return TP_PY_FAILED;
	return st.frame ? TP_PY_TRUNCATED : TP_PY_OK;
}

#endif
