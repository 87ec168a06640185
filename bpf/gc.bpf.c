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

/* gc_pausing: tgid -> number of GC pauses open in the process (0 or 1 in practice). Written
 * here; read by perf_sample in profile.bpf.c (the same map, through reuse) for the gc=1 label;
 * deleted there at the process's exec and exit, with its gc_open entries. LRU all the same. 4096
 * processes pausing at once. Its entries are counted in label_sources (TP_LABEL_GC_PAUSING). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
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

static __always_inline void pausing_add(__u32 pid, int delta)
{
	__u32 *n = bpf_map_lookup_elem(&gc_pausing, &pid), one = 1;

	if (delta > 0) {
		tp_label_mark(TP_LABEL_GC);
		if (n)
			*n += 1;
		else if (bpf_map_update_elem(&gc_pausing, &pid, &one, BPF_NOEXIST))
			bump(TP_GCM_OPEN_FULL);
		else
			tp_label_add(TP_LABEL_GC_PAUSING, 1);
	} else if (n) {
		if (*n > 1)
			*n -= 1;
		else if (!bpf_map_delete_elem(&gc_pausing, &pid))
			tp_label_add(TP_LABEL_GC_PAUSING, -1);
	}
}

/* Opens phase slot of the current process; a begin while open restarts it (a missed end). */
static __always_inline void phase_begin(__u32 slot, __s64 arg, __u32 flags)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct tp_gc_open_key key = {.pid = pid_tgid >> 32, .slot = slot};
	struct tp_gc_open v = {
	    .start_ns = bpf_ktime_get_ns(),
	    .arg = arg,
	    .tid = (__u32)pid_tgid,
	    .flags = flags,
	};
	struct tp_gc_open *old = bpf_map_lookup_elem(&gc_open, &key);
	int was = old && (old->flags & TP_GC_OPEN_PAUSING), is = flags & TP_GC_OPEN_PAUSING;

	bump(TP_GCM_HITS);
	/* from now on the sampler looks up gc=1 and deletes GC state at exec and exit */
	tp_label_mark(TP_LABEL_GC);
	/* the process is counted once per open slot */
	if (is && !was)
		pausing_add(key.pid, 1);
	else if (was && !is)
		pausing_add(key.pid, -1);
	if (bpf_map_update_elem(&gc_open, &key, &v, BPF_ANY)) {
		bump(TP_GCM_OPEN_FULL);
		if (is)
			pausing_add(key.pid, -1);
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
	struct tp_gc_open_key key = {.pid = bpf_get_current_pid_tgid() >> 32, .slot = slot};
	struct tp_gc_open *o = bpf_map_lookup_elem(&gc_open, &key), v;

	bump(TP_GCM_HITS);
	if (!o) {
		bump(TP_GCM_UNMATCHED);
		return;
	}
	v = *o;
	bpf_map_delete_elem(&gc_open, &key);
	if (v.flags & TP_GC_OPEN_PAUSING)
		pausing_add(key.pid, -1);
	emit(key.pid, &v, now, runtime, kind, v.arg, arg2);
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
 * tp_gc_calls.h: nested calls pair with their own returns. The process counts once in
 * gc_pausing while any of its threads has a call open. */

static __always_inline __u64 thread_born_ns(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	return BPF_CORE_READ(task, start_time);
}

SEC("uprobe")
int python_gc_entry(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), born = thread_born_ns();
	struct tp_gc_calls *c = bpf_map_lookup_elem(&gc_calls, &id), fresh = {.born_ns = born};
	__u32 before;
	int dropped;

	bump(TP_GCM_HITS);
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
		pausing_add(id >> 32, 1);
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
		pausing_add(id >> 32, -1);
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
	struct tp_gc_open_key key = {.pid = bpf_get_current_pid_tgid() >> 32,
				     .slot = TP_GC_SLOT_GO_CYCLE};
	struct tp_gc_open *cycle = bpf_map_lookup_elem(&gc_open, &key);

	/* a stop inside a cycle is one of its pauses: the label applies from here */
	phase_begin(TP_GC_SLOT_GO_STW, cycle ? cycle->arg : TP_GC_GO_OTHER,
		    cycle ? TP_GC_OPEN_PAUSING : 0);
	return 0;
}

SEC("uprobe")
int go_mark_termination(struct pt_regs *ctx)
{
	struct tp_gc_open_key key = {.pid = bpf_get_current_pid_tgid() >> 32,
				     .slot = TP_GC_SLOT_GO_STW};
	struct tp_gc_open *stw = bpf_map_lookup_elem(&gc_open, &key);

	bump(TP_GCM_HITS);
	if (stw)
		stw->flags |= TP_GC_OPEN_MARK_TERM;
	return 0;
}

SEC("uprobe")
int go_start_world(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	struct tp_gc_open_key key = {.pid = bpf_get_current_pid_tgid() >> 32,
				     .slot = TP_GC_SLOT_GO_STW};
	struct tp_gc_open *o = bpf_map_lookup_elem(&gc_open, &key), stw, *cycle;
	__s64 cause;

	bump(TP_GCM_HITS);
	if (!o) {
		bump(TP_GCM_UNMATCHED);
		return 0;
	}
	stw = *o;
	bpf_map_delete_elem(&gc_open, &key);
	if (stw.flags & TP_GC_OPEN_PAUSING)
		pausing_add(key.pid, -1);
	key.slot = TP_GC_SLOT_GO_CYCLE;
	cycle = bpf_map_lookup_elem(&gc_open, &key);
	if (stw.flags & TP_GC_OPEN_MARK_TERM)
		cause = TP_GC_GO_MARK_TERM;
	else if (cycle && stw.arg == TP_GC_GO_SWEEP_TERM)
		cause = TP_GC_GO_SWEEP_TERM;
	else
		cause = TP_GC_GO_OTHER;
	emit(key.pid, &stw, now, TP_GC_GO, TP_GC_PAUSE, cause, 0);
	if (!cycle)
		return 0;
	if (cause == TP_GC_GO_SWEEP_TERM) {
		/* the cycle runs from its first stop; later stops of it are mark terminations */
		cycle->start_ns = stw.start_ns;
		cycle->arg = TP_GC_GO_MARK_TERM;
	} else if (cause == TP_GC_GO_MARK_TERM) {
		struct tp_gc_open c = *cycle;

		bpf_map_delete_elem(&gc_open, &key);
		emit(key.pid, &c, now, TP_GC_GO, TP_GC_COLLECTION, 0, 0);
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
