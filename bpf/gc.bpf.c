// SPDX-License-Identifier: GPL-2.0-only
/* GC pauses: USDT programs for HotSpot and CPython, an entry uprobe and a uretprobe on the
 * collector of a CPython without USDT probes, entry-only uprobes for the Go runtime, and a
 * uretprobe on libc's dlopen (so that a libjvm.so loaded after exec is found at once). Each GC
 * event goes to user space through the gc_events ring buffer; the processes in a pause are kept
 * in gc_pausing, which the CPU sampler (profile.bpf.c) reads for the gc=1 label. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
/* USDT specs: libbpf's default (256) bounds the objects attached at once; a few per object */
#define BPF_USDT_MAX_SPEC_CNT 1024
#define BPF_USDT_MAX_IP_CNT   4096
#include <bpf/usdt.bpf.h>
#include "tailprof.h"
#include "tp_gc_calls.h"
#include "lib/label_sources.bpf.h"
#include "lib/gc_open.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* gc_events: finished GC events and dlopen notices (struct tp_gc_event) to tailprofd, drained at
 * each drain period and woken at once for dlopen. 256 KB holds 5461 records: more GC events than
 * any runtime makes in a drain period; losses are counted (TP_GCM_EVENTS_LOST). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} gc_events SEC(".maps");

/* gc_pausing: tgid -> number of GC pauses open in the process (0 or 1 in practice), for every
 * process that has opened a GC phase of any kind: made at its first, kept (0 between pauses)
 * until the sampler's exec and exit programs (profile.bpf.c, the same map through reuse) delete
 * it with the process's gc_open entries. Read by the samplers for the gc=1 label. Kept rather
 * than made and deleted at each pause: a CPython collects some 12 times in its start-up alone,
 * and an LRU insert and delete cost a cold probe hit more than the rest of it. LRU all the same:
 * 4096 live processes with GC state, beyond which the least recently used lose theirs (a live
 * one makes it again at its next phase; its phase open then goes unmatched). A process whose
 * entry was evicted leaves its gc_open entries at its exit, so the making of an entry clears
 * the pid's gc_open slots (gc_proc). The processes with a pause open are counted in
 * label_sources (TP_LABEL_GC_PAUSING). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} gc_pausing SEC(".maps");

/* gc_calls: thread (pid_tgid) -> its open calls of CPython's collector (struct tp_gc_calls),
 * for the uprobe way. Written by python_gc_entry, closed and deleted by python_gc_return when
 * the thread has none open; nothing else reads it. LRU: entries of threads that died inside
 * the collector (the process was killed) are evicted, and told from a reused thread id by the
 * thread's start time. 4096: threads inside a collection at once, host-wide. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct tp_gc_calls);
} gc_calls SEC(".maps");

/* gc_metrics: error and hit counters (enum tp_gc_metric). Written here, read by tailprofd. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_GCM_NR);
	__type(key, __u32);
	__type(value, __u64);
} gc_metrics SEC(".maps");

static __always_inline void bump_by(__u32 metric, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&gc_metrics, &metric);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void bump(__u32 metric)
{
	bump_by(metric, 1);
}

/* Process pid's gc_pausing entry, made (0) if it has none; NULL without room (counted). A new
 * entry first clears the pid's gc_open slots: an earlier process of the pid whose entry the LRU
 * evicted left them at its exit (profile.bpf.c deletes them where it finds the entry), and an
 * open one would pair with this process's first end. Once a process, and mostly misses. */
static __always_inline __u64 *gc_proc(__u32 pid)
{
	__u64 *n = bpf_map_lookup_elem(&gc_pausing, &pid), zero = 0;

	if (n)
		return n;
	tp_label_mark(TP_LABEL_GC);
	tp_gc_open_clear(pid);
	/* BPF_NOEXIST: another thread of the process may have made it meanwhile */
	bpf_map_update_elem(&gc_pausing, &pid, &zero, BPF_NOEXIST);
	n = bpf_map_lookup_elem(&gc_pausing, &pid);
	if (!n)
		bump(TP_GCM_OPEN_FULL);
	return n;
}

/* One more pause open in the process of gc_pausing entry n; the process enters
 * TP_LABEL_GC_PAUSING's count as its pauses leave 0. */
static __always_inline void pausing_inc(__u64 *n)
{
	if (!__sync_fetch_and_add(n, 1))
		tp_label_add(TP_LABEL_GC_PAUSING, 1);
}

/* One fewer pause open in process pid; the process leaves TP_LABEL_GC_PAUSING's count as its
 * pauses return to 0. Never below 0 (compare-and-swap, retried while another runtime of the
 * process moves the count: a lost decrement would label the process gc=1 until it exits). */
static __always_inline void pausing_dec(__u32 pid)
{
	__u64 *n = bpf_map_lookup_elem(&gc_pausing, &pid), old;

	if (!n)
		return;
	for (int i = 0; i < 4; i++) {
		old = *(volatile __u64 *)n;
		if (!old)
			return;
		if (__sync_val_compare_and_swap(n, old, old - 1) == old) {
			if (old == 1)
				tp_label_add(TP_LABEL_GC_PAUSING, -1);
			return;
		}
	}
}

/* The open phase slot of process pid, or NULL when it has none open. */
static __always_inline struct tp_gc_open *open_phase(__u32 pid, __u32 slot)
{
	struct tp_gc_open_key key = {.pid = pid, .slot = slot};
	struct tp_gc_open *o = bpf_map_lookup_elem(&gc_open, &key);

	return o && (o->flags & TP_GC_OPEN_ACTIVE) ? o : NULL;
}

/* Closes phase o (an entry of gc_open), keeping the entry for the process's next phase there. */
static __always_inline void close_phase(struct tp_gc_open *o)
{
	o->flags = 0;
}

/* Opens phase slot of the current process; a begin while open restarts it (a missed end). A
 * slot's entry is made at the process's first phase there and written in place after that. */
static __always_inline void phase_begin(__u32 slot, __s64 arg, __u32 flags)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct tp_gc_open_key key = {.pid = pid_tgid >> 32, .slot = slot};
	struct tp_gc_open v = {
	    .start_ns = bpf_ktime_get_ns(),
	    .arg = arg,
	    .tid = (__u32)pid_tgid,
	    .flags = flags | TP_GC_OPEN_ACTIVE,
	};
	int was, is = flags & TP_GC_OPEN_PAUSING;
	struct tp_gc_open *old;
	__u64 *n;

	bump(TP_GCM_HITS);
	/* the process's entry, pausing or not: the sampler deletes its GC state at exec and exit
	 * where it has one (and looks up gc=1 from the first). Before the slot's lookup: making it
	 * clears the pid's slots. */
	n = gc_proc(key.pid);
	old = bpf_map_lookup_elem(&gc_open, &key);
	was = old && (old->flags & TP_GC_OPEN_ACTIVE) && (old->flags & TP_GC_OPEN_PAUSING);
	if (!n) {
		/* untimed (counted): an open phase here must not pair with the next end */
		if (old)
			close_phase(old);
		return;
	}
	/* the process is counted once per open slot */
	if (is && !was)
		pausing_inc(n);
	else if (was && !is)
		pausing_dec(key.pid);
	if (old) {
		*old = v;
	} else if (bpf_map_update_elem(&gc_open, &key, &v, BPF_ANY)) {
		bump(TP_GCM_OPEN_FULL);
		if (is)
			pausing_dec(key.pid);
	}
}

static __always_inline void emit(__u32 pid, const struct tp_gc_open *o, __u64 now, __u32 runtime,
				 __u32 kind, __s64 arg, __s64 arg2)
{
	struct tp_gc_event ev = {
	    .record = TP_GC_REC_EVENT,
	    .pid = pid,
	    .tid = o->tid,
	    .runtime = runtime,
	    .kind = kind,
	    .start_ns = o->start_ns,
	    .duration_ns = now - o->start_ns,
	    .arg = arg,
	    .arg2 = arg2,
	};

	/* drained at the next drain period: no wakeup per event */
	if (bpf_ringbuf_output(&gc_events, &ev, sizeof(ev), BPF_RB_NO_WAKEUP))
		bump(TP_GCM_EVENTS_LOST);
}

/* Closes phase slot of the current process and sends its event with the begin's arg. */
static __always_inline void phase_end(__u32 slot, __u32 runtime, __u32 kind, __s64 arg2)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct tp_gc_open *o = open_phase(pid, slot), v;

	bump(TP_GCM_HITS);
	if (!o) {
		bump(TP_GCM_UNMATCHED);
		return;
	}
	v = *o;
	close_phase(o);
	if (v.flags & TP_GC_OPEN_PAUSING)
		pausing_dec(pid);
	emit(pid, &v, now, runtime, kind, v.arg, arg2);
}

/* ---- HotSpot ---- */

SEC("usdt")
int BPF_USDT(jvm_gc_begin, long is_full)
{
	phase_begin(TP_GC_SLOT_JVM_GC, is_full ? 1 : 0, TP_GC_OPEN_PAUSING);
	return 0;
}

SEC("usdt")
int BPF_USDT(jvm_gc_end)
{
	phase_end(TP_GC_SLOT_JVM_GC, TP_GC_JVM, TP_GC_PAUSE, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(jvm_safepoint_begin)
{
	phase_begin(TP_GC_SLOT_JVM_SAFEPOINT, -1, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(jvm_safepoint_end)
{
	phase_end(TP_GC_SLOT_JVM_SAFEPOINT, TP_GC_JVM, TP_GC_SAFEPOINT, 0);
	return 0;
}

/* ---- CPython ---- */

SEC("usdt")
int BPF_USDT(python_gc_start, int generation)
{
	phase_begin(TP_GC_SLOT_PYTHON, generation, TP_GC_OPEN_PAUSING);
	return 0;
}

SEC("usdt")
int BPF_USDT(python_gc_done, long collected)
{
	phase_end(TP_GC_SLOT_PYTHON, TP_GC_PYTHON, TP_GC_PAUSE, collected);
	return 0;
}

/* ---- CPython without USDT: gc_collect_main(tstate, generation, ...) -> collected ----
 * The generation is its second argument, read at entry; the return value is what gc__done
 * gives, collected + uncollectable (Modules/gcmodule.c, 3.11). A thread's calls are kept by
 * tp_gc_calls.h: nested calls pair with their own returns. Each thread with a call open counts
 * once in its process's gc_pausing entry. */

static __always_inline __u64 thread_born_ns(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(task, start_time);
}

SEC("uprobe")
int python_gc_entry(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), born = thread_born_ns(), *n;
	struct tp_gc_calls *c = bpf_map_lookup_elem(&gc_calls, &id), fresh = {.born_ns = born};
	__u32 before;
	int dropped;

	bump(TP_GCM_HITS);
	/* the process's entry first: a call recorded without its count would take another
	 * thread's off at its return */
	n = gc_proc(id >> 32);
	if (!n)
		return 0;
	if (c && c->born_ns != born) {
		/* a dead thread's calls (its process died inside them: gc_pausing forgot it) */
		c->born_ns = born;
		c->depth = 0;
	}
	if (!c) {
		if (bpf_map_update_elem(&gc_calls, &id, &fresh, BPF_NOEXIST)) {
			bump(TP_GCM_OPEN_FULL);
			return 0;
		}
		c = bpf_map_lookup_elem(&gc_calls, &id);
		if (!c)
			return 0;
	}
	before = c->depth;
	dropped =
	    tp_gc_calls_enter(c, PT_REGS_SP(ctx), bpf_ktime_get_ns(), (int)PT_REGS_PARM2(ctx));
	if (dropped < 0) {
		bump(TP_GCM_OPEN_FULL);
		return 0;
	}
	if (dropped > 0)
		bump_by(TP_GCM_ABANDONED, dropped);
	/* dropped calls of this thread were counted; the new one keeps the count */
	if (!before)
		pausing_inc(n);
	return 0;
}

SEC("uretprobe")
int python_gc_return(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns(), id = bpf_get_current_pid_tgid();
	struct tp_gc_calls *c = bpf_map_lookup_elem(&gc_calls, &id);
	struct tp_gc_call call = {};
	struct tp_gc_open o;
	int closed;

	bump(TP_GCM_HITS);
	if (!c) {
		bump(TP_GCM_UNMATCHED);
		return 0;
	}
	if (c->born_ns != thread_born_ns()) {
		bpf_map_delete_elem(&gc_calls, &id); /* a dead thread's, as at entry */
		bump(TP_GCM_UNMATCHED);
		return 0;
	}
	closed = tp_gc_calls_leave(c, PT_REGS_SP(ctx), &call);
	if (!closed) {
		bump(TP_GCM_UNMATCHED);
		return 0;
	}
	if (closed > 1)
		bump_by(TP_GCM_ABANDONED, closed - 1);
	if (!c->depth) {
		bpf_map_delete_elem(&gc_calls, &id);
		pausing_dec(id >> 32);
	}
	o = (struct tp_gc_open){.start_ns = call.start_ns, .arg = call.arg, .tid = (__u32)id};
	emit(id >> 32, &o, now, TP_GC_PYTHON, TP_GC_PAUSE, call.arg, (long)PT_REGS_RC(ctx));
	return 0;
}

/* ---- Go: entry probes only (a uretprobe would corrupt moved goroutine stacks) ----
 * A cycle: gcResetMarkState (before the first stop), stopTheWorldWithSema/startTheWorldWithSema
 * (sweep termination), concurrent mark, stopTheWorldWithSema, gcMarkTermination,
 * startTheWorldWithSema (mark termination). A stop whose phase is neither is another
 * stop-the-world (TP_GC_GO_OTHER). */

SEC("uprobe")
int go_gc_reset(struct pt_regs *ctx)
{
	phase_begin(TP_GC_SLOT_GO_CYCLE, TP_GC_GO_SWEEP_TERM, 0);
	return 0;
}

SEC("uprobe")
int go_stop_world(struct pt_regs *ctx)
{
	struct tp_gc_open *cycle =
	    open_phase(bpf_get_current_pid_tgid() >> 32, TP_GC_SLOT_GO_CYCLE);

	/* a stop inside a cycle is one of its pauses: the label applies from here */
	phase_begin(TP_GC_SLOT_GO_STW, cycle ? cycle->arg : TP_GC_GO_OTHER,
		    cycle ? TP_GC_OPEN_PAUSING : 0);
	return 0;
}

SEC("uprobe")
int go_mark_termination(struct pt_regs *ctx)
{
	struct tp_gc_open *stw = open_phase(bpf_get_current_pid_tgid() >> 32, TP_GC_SLOT_GO_STW);

	bump(TP_GCM_HITS);
	if (stw)
		stw->flags |= TP_GC_OPEN_MARK_TERM;
	return 0;
}

SEC("uprobe")
int go_start_world(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct tp_gc_open *o = open_phase(pid, TP_GC_SLOT_GO_STW), stw, *cycle;
	__s64 cause;

	bump(TP_GCM_HITS);
	if (!o) {
		bump(TP_GCM_UNMATCHED);
		return 0;
	}
	stw = *o;
	close_phase(o);
	if (stw.flags & TP_GC_OPEN_PAUSING)
		pausing_dec(pid);
	cycle = open_phase(pid, TP_GC_SLOT_GO_CYCLE);
	if (stw.flags & TP_GC_OPEN_MARK_TERM)
		cause = TP_GC_GO_MARK_TERM;
	else if (cycle && stw.arg == TP_GC_GO_SWEEP_TERM)
		cause = TP_GC_GO_SWEEP_TERM;
	else
		cause = TP_GC_GO_OTHER;
	emit(pid, &stw, now, TP_GC_GO, TP_GC_PAUSE, cause, 0);
	if (!cycle)
		return 0;
	if (cause == TP_GC_GO_SWEEP_TERM) {
		/* the cycle runs from its first stop; later stops of it are mark terminations */
		cycle->start_ns = stw.start_ns;
		cycle->arg = TP_GC_GO_MARK_TERM;
	} else if (cause == TP_GC_GO_MARK_TERM) {
		struct tp_gc_open c = *cycle;

		close_phase(cycle);
		emit(pid, &c, now, TP_GC_GO, TP_GC_COLLECTION, 0, 0);
	}
	return 0;
}

/* ---- dlopen ---- */

SEC("uretprobe")
int dlopen_return(struct pt_regs *ctx)
{
	struct tp_gc_event ev = {
	    .record = TP_GC_REC_DLOPEN,
	    .pid = bpf_get_current_pid_tgid() >> 32,
	    .tid = (__u32)bpf_get_current_pid_tgid(),
	    .start_ns = bpf_ktime_get_ns(),
	};

	/* a failed dlopen mapped nothing */
	if (!PT_REGS_RC(ctx))
		return 0;
	if (bpf_ringbuf_output(&gc_events, &ev, sizeof(ev), BPF_RB_FORCE_WAKEUP))
		bump(TP_GCM_EVENTS_LOST);
	return 0;
}
