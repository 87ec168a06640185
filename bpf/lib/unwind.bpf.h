/* SPDX-License-Identifier: GPL-2.0-only */
/* The user-stack walker: unwind tables built by tailprofd from .eh_frame (tailprof.h, rows),
 * frame pointers where an object has none. One function, tp_unwind_user(), for every program
 * that takes user stacks (CPU samples now; off-CPU and stage samples later).
 *
 * Include after vmlinux.h, the libbpf helpers and tailprof.h. The maps below are defined in
 * every BPF object that includes this header; the loader shares one set between objects
 * (bpf_map__reuse_fd), so tables are loaded once. */
#ifndef TAILPROF_UNWIND_BPF_H
#define TAILPROF_UNWIND_BPF_H

/* Why a walk ended (tp_unwind_result.reason). */
enum tp_unwind_reason {
	TP_UNWIND_END = 0,     /* the outermost frame: RA 0 or undefined, RBP 0 by frame pointer */
	TP_UNWIND_TRUNCATED,   /* TP_MAX_STACK_DEPTH frames taken, the stack goes on */
	TP_UNWIND_UNSUPPORTED, /* a row the walker cannot follow (TP_CFA_UNSUPPORTED) */
	TP_UNWIND_NO_MAPPING,  /* a PC in no mapping of unwind_procs: user space rescans */
	TP_UNWIND_READ_FAILED, /* bpf_probe_read_user failed */
	TP_UNWIND_BAD_FRAME,   /* the CFA did not move up the stack */
};

/* unwind_rows: the unwind tables of every object, each a run of rows sorted by pc
 * (struct tp_unwind_row), one run per object shared by every process that maps it. Written by
 * tailprofd (the unwinder module, through the loader's mmap of this array) when the first
 * process that maps an object is seen; a run is reused once the last such process is gone.
 * Read by tp_unwind_user(). max_entries set by the loader from --unwind-memory (8 bytes a
 * row). One array rather than a map per object: updating a map in a map waits for an RCU
 * grace period, per table. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_unwind_row);
} unwind_rows SEC(".maps");

/* unwind_pages: the page indexes of the tables (struct tp_exec_mapping says how to read them):
 * they narrow a search to the rows of one TP_UNWIND_PAGE_BYTES of code. Written by tailprofd
 * with the rows, through its mmap; read here. max_entries set by the loader to a sixteenth of
 * unwind_rows' (objects that find no room are searched whole). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_unwind_page);
} unwind_pages SEC(".maps");

/* unwind_procs: tgid -> its executable mappings (struct tp_proc_mappings: start, end, bias,
 * the run of unwind_rows of the object mapped). Written by tailprofd when a process is first
 * sampled and when its maps changed (a PC in no known mapping asks for a rescan); deleted at exec
 * and exit. Read here. A process not in it is walked by frame pointers (bpf_get_stack). max_entries
 * set by the loader to
 * --unwind-max-processes; 5 KiB each. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct tp_proc_mappings);
} unwind_procs SEC(".maps");

/* unwind_epoch: one counter, bumped before every change of unwind_procs (by tailprofd through its
 * mmap, and at exec and exit here). A walk whose process entry was read at epoch E (read before
 * the entry) walks the same while the epoch is still E: verifying it again needs no lookup. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} unwind_epoch SEC(".maps");

/* The epoch of unwind_procs now (see unwind_epoch). */
static __always_inline __u64 tp_unwind_epoch(void)
{
	__u32 zero = 0;
	__u64 *e = bpf_map_lookup_elem(&unwind_epoch, &zero);

	return e ? *(volatile __u64 *)e : 0;
}

/* Bumps the epoch of unwind_procs, before a change of it (see unwind_epoch); returns it after. */
static __always_inline __u64 tp_unwind_epoch_bump(void)
{
	__u32 zero = 0;
	__u64 *e = bpf_map_lookup_elem(&unwind_epoch, &zero);

	if (!e)
		return 0;
	__sync_fetch_and_add(e, 1);
	return *(volatile __u64 *)e;
}

/* unwind_memo: per CPU, where recent lookups were found: a direct-mapped cache of
 * TP_UNWIND_MEMO_SLOTS slots, each the mapping (its index in the process's unwind_procs entry) and
 * the row (its index in unwind_rows) of one lookup address. A slot is only a guess, checked
 * before use: the mapping must hold the address, and the row must be the one a search would find
 * (its table's, at or before the address, with the next row past it). So a slot from another
 * process, from a table since rewritten or half written by a nested program is a search, never a
 * wrong frame, and nothing needs to invalidate it. What it saves is the search's cold memory:
 * at 99 Hz every walk is cold, and a frame's search touches some ten cache lines of the process's
 * entry, the page index and the rows, where a checked guess touches two or three. */
#define TP_UNWIND_MEMO_SLOTS 256

struct tp_unwind_memo_slot {
	__u64 addr; /* the lookup address (0: empty) */
	__u32 mi;   /* its mapping's index in the process's entry */
	__u32 row;  /* its row's index in unwind_rows */
};

struct tp_unwind_memo {
	struct tp_unwind_memo_slot s[TP_UNWIND_MEMO_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_unwind_memo);
} unwind_memo SEC(".maps");

struct tp_unwind_result {
	__u32 nr;      /* frames written */
	__u32 reason;  /* enum tp_unwind_reason */
	__u32 used_fp; /* 1: at least one frame was stepped by frame pointer */
	__u32 pad;
};

/* The user-stack words a walk read, in order (TP_UNWIND_LOG_WORDS at most): with the starting
 * registers and the same tables, they decide the walk, so a caller can cache a walk and reuse it
 * once it has read the same words again (bpf/sched.bpf.c). */
#define TP_UNWIND_LOG_WORDS 64
struct tp_unwind_log {
	__u32 n;
	__u32 full; /* more words were read than fit, or a signal frame: not reusable */
	/* the span of the words read, [lo, hi), and whether any was not 8-byte aligned from the
	 * first (kept as they are logged: no loop over the log afterwards) */
	__u64 lo, hi;
	__u64 unaligned;
	__u64 addr[TP_UNWIND_LOG_WORDS];
	__u64 val[TP_UNWIND_LOG_WORDS];
};

/* Empties log for a new walk. */
static __always_inline void tp_unwind_log_reset(struct tp_unwind_log *log)
{
	log->n = 0;
	log->full = 0;
	log->lo = ~0ull;
	log->hi = 0;
	log->unaligned = 0;
}

static __always_inline void tp_unwind_logged(struct tp_unwind_log *log, __u64 addr, __u64 val)
{
	__u32 i;

	if (!log)
		return;
	i = log->n;
	if (i >= TP_UNWIND_LOG_WORDS) {
		log->full = 1;
		return;
	}
	log->addr[i] = addr;
	log->val[i] = val;
	log->n = i + 1;
	if (addr < log->lo)
		log->lo = addr;
	if (addr + 8 > log->hi)
		log->hi = addr + 8;
	log->unaligned |= addr & 7;
}

/* The stack window (tp_unwind_read): bytes copied at most, a power of two (masks bound its
 * indexes for the verifier). 512: at 99 Hz, where every walk is cold, the rest of a whole page
 * cost more to copy than the reads it saved (docs/sampling-and-unwinding.md). A copy never
 * crosses the end of its first byte's page (x86-64's 4 KiB). */
#define TP_UNWIND_WIN_BYTES 512
#define TP_UNWIND_PAGE	    4096

/* The values of one walk that change from frame to frame, and the search of the frame's mapping
 * and row: in the caller's map memory (a per-CPU scratch), where the verifier tracks no values.
 * So every frame looks the same to it, and bpf_loop's callbacks, which verifiers since Linux 6.8
 * follow until their state repeats, are verified in a pass or two. Kept on the BPF stack, each
 * combination of flags, each range of the search's bounds and each mapping pointer made a state
 * of its own: 6.18.44-fc-v1272's verifier gave up on perf_sample after 1M instructions (35
 * states per instruction), where others had accepted it. */
struct tp_unwind_walk {
	__u64 pc, sp, bp;
	__u64 uret_tramp; /* the uretprobe trampoline's address, 0: none (tp_unwind_uretprobe) */
	__u64 key;	  /* the search's: the PC (mappings) or the offset (rows) looked up */
	__u32 base;	  /* the search's: rows: the first row of the table in unwind_rows */
	__u32 lo, hi;	  /* the search's bounds */
	__u32 failed;	  /* the search's: it met a bad index */
	__u32 n;
	__u32 reason;
	__u32 used_fp;
	__u32 exact_pc; /* pc is not a return address: frame 0, or interrupted by a signal */
	__u32 after_fp; /* pc came from a frame-pointer step */
	__u32 done;
	__u32 last_m; /* 1 + the index in procs of the previous frame's mapping, 0: none */
	/* the stack window: a copy of user memory [win_lo, win_lo + win_len) taken by
	 * tp_unwind_read; win_len 0: none */
	__u64 win_lo;
	__u32 win_len;
	__u32 win_on; /* 0: every word read directly (see tp_unwind_read) */
	/* its words: not cleared between walks (only win_len is), so past the fields above */
	__u64 win[TP_UNWIND_WIN_BYTES / 8];
};

/* The bpf_loop context of a walk, on the caller's stack: pointers only, the same in every
 * iteration. */
struct tp_unwind_state {
	struct tp_unwind_walk *w;
	__u64 *out;		   /* TP_MAX_STACK_DEPTH slots */
	struct tp_unwind_log *log; /* NULL: not logged */
	struct tp_proc_mappings *procs;
	struct tp_unwind_memo *memo; /* this CPU's unwind_memo, NULL: none */
};

/* Binary searches run in bpf_loop callbacks: unrolled, the verifier would follow every path
 * through them for every frame. Halvings per bpf_loop iteration: fewer callbacks, and still few
 * paths for the verifier. */
#define TP_UNWIND_HALVINGS 2

/* Up to TP_UNWIND_HALVINGS halvings over the mappings of a process: w->lo ends one past the
 * last start <= w->key. */
static long tp_unwind_mapping_step(__u32 index, void *ctx)
{
	struct tp_unwind_state *st = ctx;
	struct tp_unwind_walk *w = st->w;
	struct tp_proc_mappings *p = st->procs;
	__u32 lo = w->lo, hi = w->hi, mid;
	long ret = 0;

	for (int k = 0; k < TP_UNWIND_HALVINGS; k++) {
		if (lo >= hi) {
			ret = 1;
			break;
		}
		mid = (lo + hi) / 2;
		if (mid >= TP_MAX_PROC_MAPPINGS) {
			w->failed = 1;
			return 1;
		}
		if (p->m[mid].start <= w->key)
			lo = mid + 1;
		else
			hi = mid;
	}
	w->lo = lo;
	w->hi = hi;
	return ret;
}

/* Up to TP_UNWIND_HALVINGS halvings over the rows of a table: w->lo ends one past the last row
 * whose pc <= w->key. */
static long tp_unwind_row_step(__u32 index, void *ctx)
{
	struct tp_unwind_state *st = ctx;
	struct tp_unwind_walk *w = st->w;
	struct tp_unwind_row *r;
	__u32 lo = w->lo, hi = w->hi, mid, idx;
	long ret = 0;

	for (int k = 0; k < TP_UNWIND_HALVINGS; k++) {
		if (lo >= hi) {
			ret = 1;
			break;
		}
		mid = (lo + hi) / 2;
		idx = w->base + mid;
		r = bpf_map_lookup_elem(&unwind_rows, &idx);
		if (!r) {
			w->failed = 1;
			return 1;
		}
		if (r->pc <= w->key)
			lo = mid + 1;
		else
			hi = mid;
	}
	w->lo = lo;
	w->hi = hi;
	return ret;
}

/* The index in st->procs of the mapping holding pc, or -1. 8 halvings cover
 * TP_MAX_PROC_MAPPINGS. */
static __always_inline long tp_unwind_find_mapping(struct tp_unwind_state *st, __u64 pc)
{
	struct tp_unwind_walk *w = st->w;
	struct tp_proc_mappings *p = st->procs;
	__u32 i, hi = p->nr;

	w->key = pc;
	w->lo = 0;
	w->hi = hi > TP_MAX_PROC_MAPPINGS ? TP_MAX_PROC_MAPPINGS : hi;
	w->failed = 0;
	bpf_loop((8 + TP_UNWIND_HALVINGS - 1) / TP_UNWIND_HALVINGS, tp_unwind_mapping_step, st, 0);
	i = w->lo;
	if (w->failed || i == 0)
		return -1;
	i--;
	if (i >= TP_MAX_PROC_MAPPINGS || pc >= p->m[i].end)
		return -1;
	return i;
}

/* Row idx of unwind_rows if it is the row in effect at rel in mapping m's table (the row a
 * search would find: in the table, its pc <= rel, and the next row's, if any, > rel: rows are
 * sorted by pc), else NULL. */
static __always_inline struct tp_unwind_row *tp_unwind_memo_row(struct tp_exec_mapping *m,
								__u32 rel, __u32 idx)
{
	struct tp_unwind_row *r, *next;
	__u32 i = idx - m->row_start;

	if (idx < m->row_start || i >= m->nr_rows)
		return NULL;
	r = bpf_map_lookup_elem(&unwind_rows, &idx);
	if (!r || r->pc > rel)
		return NULL;
	if (i + 1 < m->nr_rows) {
		i = idx + 1;
		next = bpf_map_lookup_elem(&unwind_rows, &i);
		if (!next || next->pc <= rel)
			return NULL;
	}
	return r;
}

/* The row in effect at rel (the last row whose pc <= rel) of mapping m's table, or NULL. The
 * page index narrows the search to one page's rows; 24 halvings cover 16M rows. */
static __always_inline struct tp_unwind_row *
tp_unwind_find_row(struct tp_unwind_state *st, struct tp_exec_mapping *m, __u32 rel)
{
	struct tp_unwind_walk *w = st->w;
	struct tp_unwind_row *first;
	struct tp_unwind_page *pg;
	__u32 i = m->row_start, page, hi = m->nr_rows;

	first = bpf_map_lookup_elem(&unwind_rows, &i);
	if (!first || rel < first->pc)
		return NULL;
	w->key = rel;
	w->base = i;
	w->lo = 0;
	w->hi = hi;
	w->failed = 0;
	page = (rel - first->pc) / TP_UNWIND_PAGE_BYTES;
	if (page < m->nr_pages) {
		i = m->pages_start + page;
		pg = bpf_map_lookup_elem(&unwind_pages, &i);
		if (pg && pg->first < pg->end && pg->end <= hi) {
			w->lo = pg->first;
			w->hi = pg->end;
		}
	}
	bpf_loop((24 + TP_UNWIND_HALVINGS - 1) / TP_UNWIND_HALVINGS, tp_unwind_row_step, st, 0);
	i = w->lo;
	if (w->failed || i == 0)
		return NULL;
	i = w->base + i - 1;
	return bpf_map_lookup_elem(&unwind_rows, &i);
}

/* uretprobes. At a uretprobed function's entry the kernel replaces its return address on the
 * user stack with the uretprobe trampoline (the first slot of the [uprobes] page, the xol area:
 * prepare_uretprobe() in kernel/events/uprobes.c) and keeps the real one in a struct
 * return_instance, pushed on current->utask->return_instances (innermost first), whose stack is
 * the user SP at that entry: the address of the slot that now holds the trampoline. A function
 * entered with the trampoline as its return address already (a tail call from another probed
 * function) gets a "chained" instance of the same slot, whose orig_ret_vaddr is copied from the
 * one below. So the instance of a slot is the first of the list whose stack is that slot's
 * address, whatever the chaining; instances below the slot (left by a longjmp, which the kernel
 * drops lazily) are passed over. Each search starts at the head (TP_UNWIND_URET_MAX instances at
 * most: as many nested timed functions): a cursor kept from one frame to the next would be a
 * value that changes between the walk's iterations, which 6.12's verifier (bpf_loop callbacks
 * verified to convergence) followed past its limit in perf_sample.
 *
 * The trampoline is mm->uprobes_state.xol_area->vaddr, where the kernel's own
 * get_trampoline_vaddr() (uprobe_get_trampoline_vaddr() since 6.12) finds it; read once a walk
 * of the current task, in one chain of reads without a branch (a failed read gives 0: no xol
 * area, no uprobe ever hit the process), so that the verifier follows one walk, not two. A
 * return address is compared with it as it is read, not when it is found in no mapping: a
 * lookup then would be a second mapping search in the frame step. Only the current task's instances
 * are known here: walks of another task's stack pass is_current 0. struct xol_area is private to
 * uprobes.c but in the kernel's BTF; the field checks keep the object loadable where it were not
 * (the walk then stops at the trampoline, as before). */
#define TP_UNWIND_URET_MAX 8 /* instances passed over at most per trampoline met */

struct tp_unwind_uret_scan {
	__u64 slot; /* the address of the return address read */
	__u64 ri;   /* the instance to look at */
	__u64 orig; /* the return address it keeps, 0: not found */
};

static long tp_unwind_uret_step(__u32 index, void *ctx)
{
	struct tp_unwind_uret_scan *u = ctx;
	struct return_instance *ri = (struct return_instance *)u->ri;
	__u64 stack;

	if (!bpf_core_field_exists(struct return_instance, orig_ret_vaddr) || !ri)
		return 1;
	stack = BPF_CORE_READ(ri, stack);
	if (stack < u->slot) {
		u->ri = (__u64)BPF_CORE_READ(ri, next);
		return 0;
	}
	if (stack == u->slot)
		u->orig = BPF_CORE_READ(ri, orig_ret_vaddr);
	return 1;
}

/* The address of the uretprobe trampoline of the current task's process, 0: none. */
static __always_inline __u64 tp_unwind_uret_tramp(void)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	if (!bpf_core_field_exists(struct xol_area, vaddr) ||
	    !bpf_core_field_exists(struct uprobe_task, return_instances))
		return 0;
	return BPF_CORE_READ(t, mm, uprobes_state.xol_area, vaddr);
}

/* The return address that the trampoline read at slot stands for, 0: not found. */
static __always_inline __u64 tp_unwind_uretprobe(struct tp_unwind_log *log, __u64 slot)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	struct tp_unwind_uret_scan u = {.slot = slot};

	if (bpf_core_field_exists(struct uprobe_task, return_instances))
		u.ri = (__u64)BPF_CORE_READ(t, utask, return_instances);
	bpf_loop(TP_UNWIND_URET_MAX, tp_unwind_uret_step, &u, 0);
	if (!u.orig)
		return 0;
	/* the frames depend on kernel memory too now: not a walk to verify by its words */
	if (log)
		log->full = 1;
	return u.orig;
}

static __always_inline int tp_unwind_stop(struct tp_unwind_walk *w, __u32 reason)
{
	w->reason = reason;
	w->done = 1;
	return 1;
}

/* Reads nw words (1 or 2, a constant) of the current task's user memory at addr into dst,
 * through the walk's stack window. Returns 0, or non-zero where the memory cannot be read.
 *
 * A frame's words are mostly a few hundred bytes above the last frame's, and here a helper
 * call costs more than the bytes it copies (indirect calls through retpolines, returns through
 * the SRSO thunk: some 130 ns warm); a walk took one or two a frame. A read outside the window
 * first copies TP_UNWIND_WIN_BYTES from addr into it, in one call, cut at the end of addr's
 * page: every byte of a page can be read if one can, so that copy fails exactly where the read
 * would have. Unaligned words and words that cross a page are read directly, and every word
 * where w->win_on is 0. */
static __always_inline long tp_unwind_read(struct tp_unwind_walk *w, __u64 *dst, __u32 nw,
					   __u64 addr)
{
	__u64 off = addr - w->win_lo, len;
	__u32 i;

	if (!w->win_on || (addr & 7))
		return bpf_probe_read_user(dst, nw * 8, (void *)addr);
	if (off >= w->win_len || w->win_len - off < nw * 8) {
		len = TP_UNWIND_PAGE - (addr & (TP_UNWIND_PAGE - 1));
		if (len > TP_UNWIND_WIN_BYTES)
			len = TP_UNWIND_WIN_BYTES;
		if (len < nw * 8)
			return bpf_probe_read_user(dst, nw * 8, (void *)addr);
		w->win_len = 0;
		if (bpf_probe_read_user(w->win, len, (void *)addr))
			return -1;
		w->win_lo = addr;
		w->win_len = len;
		off = 0;
	}
	i = (off / 8) & (TP_UNWIND_WIN_BYTES / 8 - 1);
	dst[0] = w->win[i];
	if (nw == 2)
		dst[1] = w->win[(i + 1) & (TP_UNWIND_WIN_BYTES / 8 - 1)];
	return 0;
}

/* One frame: record pc, then find the caller's pc, sp and bp. Returns 1 to stop. */
static long tp_unwind_step(__u32 index, void *ctx)
{
	struct tp_unwind_state *st = ctx;
	struct tp_unwind_walk *w = st->w;
	struct tp_exec_mapping *m = NULL;
	struct tp_unwind_row *rp, row, *r = &row;
	struct tp_unwind_memo_slot *slot;
	__u64 lookup, cfa, ra = 0, bp = w->bp, pc = w->pc, sp = w->sp;
	__u32 mi;
	long found;

	/* the frame number is bpf_loop's index, not a count kept in st: the verifier then sees
	 * one state for every iteration instead of one per value of the count */
	if (index >= TP_MAX_STACK_DEPTH)
		return tp_unwind_stop(w, TP_UNWIND_TRUNCATED);
	st->out[index] = pc;
	w->n = index + 1;

	/* a return address points after the call, which may be the next function */
	lookup = w->exact_pc ? pc : pc - 1;
	/* this CPU's memo: where the same address was found last, if that still holds */
	slot = st->memo
		   ? &st->memo->s[((lookup >> 4) ^ (lookup >> 12)) & (TP_UNWIND_MEMO_SLOTS - 1)]
		   : NULL;
	if (slot && slot->addr == lookup) {
		mi = slot->mi;
		if (mi < TP_MAX_PROC_MAPPINGS && mi < st->procs->nr) {
			m = &st->procs->m[mi];
			if (lookup >= m->start && lookup < m->end && m->nr_rows) {
				rp = tp_unwind_memo_row(m, (__u32)(lookup - m->bias), slot->row);
				if (rp) {
					w->last_m = mi + 1;
					row = *rp;
					goto have_row;
				}
			}
			m = NULL;
		}
	}
	/* consecutive frames are mostly in one object: try the last mapping first */
	mi = w->last_m - 1;
	if (mi < TP_MAX_PROC_MAPPINGS) {
		m = &st->procs->m[mi];
		if (lookup < m->start || lookup >= m->end)
			m = NULL;
	}
	if (!m) {
		found = tp_unwind_find_mapping(st, lookup);
		if (found < 0 || found >= TP_MAX_PROC_MAPPINGS) {
			w->last_m = 0;
			/* a PC that a table step (or the registers) gave is real: the process
			 * mapped something new; one that a frame-pointer step gave is as likely a
			 * stack word of code without frame pointers */
			return tp_unwind_stop(w, w->after_fp ? TP_UNWIND_BAD_FRAME
							     : TP_UNWIND_NO_MAPPING);
		}
		mi = found;
		w->last_m = found + 1;
		m = &st->procs->m[found];
	}
	if (!m->nr_rows)
		goto frame_pointer;
	rp = tp_unwind_find_row(st, m, (__u32)(lookup - m->bias));
	if (!rp)
		goto frame_pointer;
	row = *rp;
	if (slot) {
		slot->addr = lookup;
		slot->mi = mi;
		/* the row tp_unwind_find_row returned: the search's base and end, less one */
		slot->row = w->base + w->lo - 1;
	}
have_row:

	switch (r->cfa_type) {
	case TP_CFA_RSP:
		cfa = sp + ((__u64)r->cfa_off8 << 3);
		break;
	case TP_CFA_RBP:
		if (!bp)
			return tp_unwind_stop(w, TP_UNWIND_END);
		cfa = bp + ((__u64)r->cfa_off8 << 3);
		break;
	case TP_CFA_PLT:
		cfa = sp + 8 + ((pc & 15) >= r->cfa_off8 ? 8 : 0);
		break;
	case TP_CFA_SIGNAL: {
		/* the kernel's rt_sigframe: RSP points at the ucontext; its mcontext holds the
		 * interrupted registers (RBP at +120, RSP at +160, RIP at +168). Two reads, not
		 * one of the 56 bytes from RBP to RIP: this frame's BPF stack adds up with its
		 * callers' (the scheduler's chain must stay under 512 bytes on Linux 6.1). */
		__u64 regs[2];

		if (bpf_probe_read_user(&bp, sizeof(bp), (void *)(sp + 120)) ||
		    bpf_probe_read_user(regs, sizeof(regs), (void *)(sp + 160)))
			return tp_unwind_stop(w, TP_UNWIND_READ_FAILED);
		if (st->log)
			st->log->full = 1;
		w->bp = bp;
		w->sp = regs[0];
		w->pc = regs[1];
		w->exact_pc = 1;
		w->after_fp = 0;
		if (!regs[1])
			return tp_unwind_stop(w, TP_UNWIND_END);
		return 0;
	}
	case TP_CFA_END:
		return tp_unwind_stop(w, TP_UNWIND_END);
	case TP_CFA_NONE:
		goto frame_pointer;
	default:
		return tp_unwind_stop(w, TP_UNWIND_UNSUPPORTED);
	}
	if (r->rbp_off8 == -2) {
		/* RBP pushed right after the call (frame-pointer code): one read for both */
		__u64 fr[2];

		if (tp_unwind_read(w, fr, 2, cfa - 16))
			return tp_unwind_stop(w, TP_UNWIND_READ_FAILED);
		bp = fr[0];
		ra = fr[1];
		tp_unwind_logged(st->log, cfa - 16, bp);
		tp_unwind_logged(st->log, cfa - 8, ra);
	} else {
		if (tp_unwind_read(w, &ra, 1, cfa - 8))
			return tp_unwind_stop(w, TP_UNWIND_READ_FAILED);
		tp_unwind_logged(st->log, cfa - 8, ra);
		if (r->rbp_off8 == TP_RBP_LOST) {
			bp = 0;
		} else if (r->rbp_off8) {
			__u64 at = cfa + ((__s64)r->rbp_off8 << 3);

			if (tp_unwind_read(w, &bp, 1, at))
				return tp_unwind_stop(w, TP_UNWIND_READ_FAILED);
			tp_unwind_logged(st->log, at, bp);
		}
	}
	w->after_fp = 0;
	goto next;

frame_pointer:
	/* [RBP] = the caller's RBP, [RBP + 8] = the return address */
	w->used_fp = 1;
	if (!bp)
		return tp_unwind_stop(w, TP_UNWIND_END);
	{
		__u64 fr[2], fp = bp;

		if (tp_unwind_read(w, fr, 2, fp))
			return tp_unwind_stop(w, TP_UNWIND_READ_FAILED);
		bp = fr[0];
		ra = fr[1];
		tp_unwind_logged(st->log, fp, bp);
		tp_unwind_logged(st->log, fp + 8, ra);
		cfa = fp + 16;
	}
	w->after_fp = 1;
next:
	if (cfa <= sp)
		return tp_unwind_stop(w, TP_UNWIND_BAD_FRAME);
	/* the uretprobe trampoline: the return address it stands for (both steps read it at
	 * cfa - 8); not found, the next frame stops in no mapping */
	if (ra && ra == w->uret_tramp) {
		__u64 orig = tp_unwind_uretprobe(st->log, cfa - 8);

		if (orig)
			ra = orig;
	}
	w->sp = cfa;
	w->bp = bp;
	w->pc = ra;
	w->exact_pc = 0;
	if (!ra)
		return tp_unwind_stop(w, TP_UNWIND_END);
	return 0;
}

/* Walks the user stack whose innermost frame has registers (pc, sp, bp) through the tables of
 * procs (the process's unwind_procs entry) into out[0 .. TP_MAX_STACK_DEPTH), leaf first.
 * Returns what it did in *res: frames written, why it ended, whether frame pointers were used.
 * w: the walk's values, in the caller's per-CPU scratch (see struct tp_unwind_walk); one walk at
 * a time on it. log: NULL, or where the words it read are recorded (emptied by the caller:
 * tp_unwind_log_reset). is_current: the stack is the current task's: uretprobe trampolines met
 * are replaced by the return addresses the kernel keeps for it (tp_unwind_uretprobe); 0 for
 * another task's. window: 1, the stack is read through w's window (tp_unwind_read), which pays
 * where the stack is warm or its frames close together; 0, a word at a time. Needs bpf_loop
 * (Linux 5.17). */
static __always_inline void tp_unwind_user(struct tp_proc_mappings *procs, __u64 pc, __u64 sp,
					   __u64 bp, __u64 *out, struct tp_unwind_result *res,
					   struct tp_unwind_log *log, int is_current,
					   struct tp_unwind_walk *w, int window)
{
	__u32 zero = 0;
	struct tp_unwind_state st = {
	    .w = w,
	    .out = out,
	    .log = log,
	    .procs = procs,
	    .memo = bpf_map_lookup_elem(&unwind_memo, &zero),
	};

	__builtin_memset(w, 0, __builtin_offsetof(struct tp_unwind_walk, win));
	w->pc = pc;
	w->sp = sp;
	w->bp = bp;
	w->exact_pc = 1;
	w->win_on = window;
	if (is_current)
		w->uret_tramp = tp_unwind_uret_tramp();

	bpf_loop(TP_MAX_STACK_DEPTH + 1, tp_unwind_step, &st, 0);
	res->nr = w->n;
	res->reason = w->done ? w->reason : TP_UNWIND_TRUNCATED;
	res->used_fp = w->used_fp;
}

#endif
