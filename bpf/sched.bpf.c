// SPDX-License-Identifier: GPL-2.0-only
/* The scheduler: off-CPU time (where threads block, and for how long) and run-queue latency (how
 * long runnable threads wait for a CPU), from tp_btf scheduler tracepoints and raw_tp/sys_exit.
 *
 * Cost is the design problem: a context switch must stay cheap when nothing is captured. So:
 * - switch-out of a blocked thread: one timestamp (and its syscall number) in task storage;
 * - switch-in: the block's length; a block of at least offcpu_min_ns takes the kernel stack of
 *   the woken thread (bpf_get_task_stack: the path where it blocked) and waits in `pending`;
 *   shorter blocks are only counted per process and drain period;
 * - when the woken thread returns from that syscall (raw_tp/sys_exit, a task-storage lookup per
 *   syscall), its user stack is the one it blocked with: taken there, and the off-CPU sample
 *   goes to user space. A block outside a syscall (a page fault) is sent at switch-in with its
 *   kernel stack and TP_SAMPLE_NO_USER_STACK.
 * - run-queue latency: from wake-up (or preemption while runnable) to switch-in, into a
 *   log-linear histogram per CPU and drain period, and per process and drain period. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "tailprof.h"
#include "lib/unwind.bpf.h"
#include "lib/shared_maps.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load. */
const volatile __u64 slot_ns = 500000000;     /* the drain period */
const volatile __u64 offcpu_min_ns = 1000000; /* blocks at least this long get stacks */
const volatile __u64 wakeup_bytes = 1 << 20;
const volatile __u32 unwind_tables_on = 0; /* 1: walk user stacks with unwind_rows (the
					    * sampler's maps, shared by the loader) */

#define TASK_RUNNING 0

/* Captured blocks waiting in `pending` now. sys_exit runs on every syscall of the machine: while
 * nothing is pending (nearly always) it costs one load. */
__u64 nr_pending = 0;

/* events: the off-CPU samples, into the ring buffer profile.bpf.c owns (the loader makes it this
 * program's through map reuse), so they are drained in order with the CPU samples. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

/* Per-thread scheduler state: when it blocked or became runnable. Task storage lives and dies
 * with the thread, so threads that exit (blocked or not) leave nothing behind. Written and read
 * here only. */
struct tp_sched_task {
	__u64 blocked_at;  /* switch-out while blocked (CLOCK_MONOTONIC), 0: not blocked */
	__u64 runnable_at; /* wake-up or preemption, 0: not waiting for a CPU */
	__s64 syscall_nr;  /* the syscall it blocked in, -1: none */
	__u32 pending;	   /* a captured block waits in `pending` for its syscall to return */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tp_sched_task);
} sched_tasks SEC(".maps");

/* pending: tid -> the off-CPU sample of a captured block, kernel stack filled, waiting for the
 * thread's return from the syscall for its user stack. Written at switch-in, read and deleted at
 * sys_exit, deleted at thread exit. Bounded: 4096 threads woken from long blocks but not yet
 * back in user space at once; beyond that a sample is sent with its kernel stack only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tp_sample);
} pending SEC(".maps");

/* runq_hist: nr_cpus * TP_SCHED_SLOTS histograms (tailprof.h), sized by the loader. mmap'able so
 * tailprofd takes periods without syscalls. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_runq_hist);
} runq_hist SEC(".maps");

/* sched_procs: (pid, drain period, CPU) -> run-queue and short-block counts. Written here by that
 * CPU only, taken and deleted by tailprofd once the period has ended (so the kernel never writes
 * an entry being read). Sized for 4096 process-CPU pairs active in each of about 4 periods in
 * flight. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tp_sched_key);
	__type(value, struct tp_sched_proc);
} sched_procs SEC(".maps");

/* sched_metrics: TP_SCH_NR counters (tailprof.h), read by tailprofd. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_SCH_NR);
	__type(key, __u32);
	__type(value, __u64);
} sched_metrics SEC(".maps");

/* off_scratch: one tp_sample per CPU, too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_sample);
} off_scratch SEC(".maps");

static __always_inline void bump(__u32 metric)
{
	__u64 *v = bpf_map_lookup_elem(&sched_metrics, &metric);

	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline struct tp_sched_proc *proc_slot(__u32 pid, __u64 ts)
{
	struct tp_sched_key key = {
	    .pid = pid, .slot = (__u32)(ts / slot_ns), .cpu = bpf_get_smp_processor_id()};
	struct tp_sched_proc zero = {}, *v;

	v = bpf_map_lookup_elem(&sched_procs, &key);
	if (v)
		return v;
	if (bpf_map_update_elem(&sched_procs, &key, &zero, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&sched_procs, &key)) {
		bump(TP_SCH_PROCS_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&sched_procs, &key);
}

/* A run-queue wait of lat ns ended now: into this CPU's histogram of the period, and p's counts.
 * Plain adds: the histogram and p are this CPU's own (p's key has the CPU), and tailprofd takes a
 * period only once it has ended, so nothing else writes them meanwhile. */
static __always_inline void runq_done(struct tp_sched_proc *p, __u64 lat, __u64 now)
{
	__u32 idx =
	    bpf_get_smp_processor_id() * TP_SCHED_SLOTS + (__u32)((now / slot_ns) % TP_SCHED_SLOTS);
	struct tp_runq_hist *h = bpf_map_lookup_elem(&runq_hist, &idx);
	__u32 b = tp_hist_bucket(lat);

	if (h) {
		h->count++;
		h->sum_ns += lat;
		if (lat > h->max_ns)
			h->max_ns = lat;
		if (b < TP_HIST_BUCKETS)
			h->buckets[b]++;
	}
	if (p) {
		p->runq_count++;
		p->runq_ns += lat;
		if (lat > p->runq_max_ns)
			p->runq_max_ns = lat;
	}
}

static __always_inline __u64 process_start_ns(struct task_struct *task)
{
	return BPF_CORE_READ(task, group_leader, start_boottime);
}

static __always_inline long send(struct tp_sample *o)
{
	__u32 n = TP_SAMPLE_HDR_SIZE + ((__u32)o->nr_kernel + o->nr_user) * 8;
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (n > sizeof(*o))
		n = sizeof(*o);
	__u64 *known = bpf_map_lookup_elem(&known_procs, &o->hdr.pid);

	if (!known || *known != o->hdr.start_ns ||
	    bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&events, o, n, flags)) {
		bump(TP_SCH_RINGBUF_FULL);
		return -1;
	}
	return 0;
}

/* A block of next that ended now after blocked_ns: captured with its kernel stack. */
static __always_inline void capture(struct task_struct *next, struct tp_sched_task *st,
				    __u64 blocked_ns, __u64 now)
{
	__u32 zero = 0, tid = BPF_CORE_READ(next, pid);
	struct tp_sample *o;
	long n;

	if (st->pending) {
		/* blocked again in the same syscall: one sample for the whole wait */
		o = bpf_map_lookup_elem(&pending, &tid);
		if (o) {
			o->blocked_ns += blocked_ns;
			o->hdr.ts_ns = now;
			return;
		}
	}
	o = bpf_map_lookup_elem(&off_scratch, &zero);
	if (!o)
		return;
	bump(TP_SCH_CAPTURED);
	o->blocked_ns = blocked_ns;
	o->hdr.kind = TP_EV_OFFCPU;
	o->hdr.pid = BPF_CORE_READ(next, tgid);
	o->hdr.ts_ns = now;
	o->hdr.start_ns = process_start_ns(next);
	o->tid = tid;
	o->cpu = bpf_get_smp_processor_id();
	o->flags = 0;
	o->nr_user = 0;
	o->pad = 0;
	/* the labels of the stage and GC pause it blocked in */
	o->stage = tp_stage_of(next);
	if (tp_in_gc(o->hdr.pid))
		o->flags |= TP_SAMPLE_IN_GC;
	BPF_CORE_READ_STR_INTO(&o->comm, next, group_leader, comm);
	BPF_CORE_READ_STR_INTO(&o->thread_comm, next, comm);
	n = bpf_get_task_stack(next, o->addrs, TP_MAX_STACK_DEPTH * 8, 0);
	if (n < 0) {
		o->flags |= TP_SAMPLE_KSTACK_FAILED;
		n = 0;
	}
	n /= 8;
	if (n > TP_MAX_STACK_DEPTH)
		n = TP_MAX_STACK_DEPTH;
	o->nr_kernel = n;
	if (!BPF_CORE_READ(next, mm)) {
		o->flags |= TP_SAMPLE_KERNEL_THREAD;
		send(o);
		return;
	}
	if (st->syscall_nr < 0) {
		o->flags |= TP_SAMPLE_NO_USER_STACK;
		send(o);
		return;
	}
	if (bpf_map_update_elem(&pending, &tid, o, BPF_ANY)) {
		bump(TP_SCH_PENDING_FULL);
		o->flags |= TP_SAMPLE_NO_USER_STACK;
		send(o);
		return;
	}
	__sync_fetch_and_add(&nr_pending, 1);
	st->pending = 1;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns(), runq = 0, blocked = 0;
	struct tp_sched_task *st;

	/* tp_btf arguments are trusted task pointers: fields are read directly, not probed */
	/* prev: blocked (off-CPU starts) or preempted while runnable (run-queue wait starts) */
	if (prev->pid) {
		st = bpf_task_storage_get(&sched_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!st) {
			bump(TP_SCH_NO_STORAGE);
		} else if (prev_state == TASK_RUNNING) {
			st->runnable_at = now;
			st->blocked_at = 0;
		} else {
			st->blocked_at = now;
			st->runnable_at = 0;
			st->syscall_nr = -1;
			if (prev->mm) {
				struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);

				if (regs)
					st->syscall_nr = BPF_CORE_READ(regs, orig_ax);
			}
		}
	}
	/* next: the end of its run-queue wait, and of its block (also when it was woken before we
	 * attached) */
	if (!next->pid)
		return 0;
	st = bpf_task_storage_get(&sched_tasks, next, 0, 0);
	if (!st)
		return 0;
	if (st->runnable_at && now > st->runnable_at)
		runq = now - st->runnable_at;
	st->runnable_at = 0;
	if (st->blocked_at && now > st->blocked_at)
		blocked = now - st->blocked_at;
	st->blocked_at = 0;
	if (blocked >= offcpu_min_ns)
		capture(next, st, blocked, now);
	if (runq || (blocked && blocked < offcpu_min_ns)) {
		struct tp_sched_proc *p = proc_slot(next->tgid, now);

		if (runq)
			runq_done(p, runq, now);
		if (p && blocked && blocked < offcpu_min_ns) {
			p->short_count++;
			p->short_ns += blocked;
		}
	}
	return 0;
}

/* A wake-up: the run-queue wait starts (the block ends at switch-in, which times it). */
static __always_inline void woken(struct task_struct *p)
{
	struct tp_sched_task *st;

	if (!p->pid)
		return;
	st = bpf_task_storage_get(&sched_tasks, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (st && !st->runnable_at)
		st->runnable_at = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	woken(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new, struct task_struct *p)
{
	woken(p);
	return 0;
}

/* The return from a syscall: the user stack of a captured block. */
SEC("raw_tp/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	struct tp_sched_task *st;
	struct tp_sample *o;
	__u32 tid;
	long n;

	if (!*(volatile __u64 *)&nr_pending)
		return 0;
	st = bpf_task_storage_get(&sched_tasks, bpf_get_current_task_btf(), 0, 0);
	if (!st || !st->pending)
		return 0;
	st->pending = 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	o = bpf_map_lookup_elem(&pending, &tid);
	if (!o)
		return 0;
	if (BPF_CORE_READ(regs, orig_ax) != st->syscall_nr) {
		bump(TP_SCH_SYSCALL_CHANGED);
		o->flags |= TP_SAMPLE_NO_USER_STACK;
	} else {
		__u32 nk = o->nr_kernel;
		struct tp_proc_mappings *procs = NULL;

		if (nk > TP_MAX_STACK_DEPTH)
			nk = TP_MAX_STACK_DEPTH;
		/* the same walker as CPU samples: unwind tables where the process has them */
		if (unwind_tables_on)
			procs = bpf_map_lookup_elem(&unwind_procs, &o->hdr.pid);
		if (procs && procs->start_ns == o->hdr.start_ns) {
			struct tp_unwind_result res = {};

			tp_unwind_user(procs, BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp),
				       BPF_CORE_READ(regs, bp), &o->addrs[nk], &res);
			o->flags |= TP_SAMPLE_UNWIND_TABLES;
			if (res.reason == TP_UNWIND_TRUNCATED)
				o->flags |= TP_SAMPLE_USTACK_TRUNCATED;
			n = res.nr;
		} else {
			n = bpf_get_stack(ctx, &o->addrs[nk], TP_MAX_STACK_DEPTH * 8,
					  BPF_F_USER_STACK);
			if (n < 0) {
				o->flags |= TP_SAMPLE_USTACK_FAILED;
				n = 0;
			}
			n /= 8;
			if (n >= TP_MAX_STACK_DEPTH)
				o->flags |= TP_SAMPLE_USTACK_TRUNCATED;
		}
		if (n > TP_MAX_STACK_DEPTH)
			n = TP_MAX_STACK_DEPTH;
		o->nr_user = n;
	}
	send(o);
	if (!bpf_map_delete_elem(&pending, &tid))
		__sync_fetch_and_add(&nr_pending, -1);
	return 0;
}

/* A thread exits: a captured block that never got back to user space is sent without a user
 * stack, and its entry freed. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_thread_exit, struct task_struct *p)
{
	__u32 tid = p->pid;
	struct tp_sample *o;

	if (!*(volatile __u64 *)&nr_pending)
		return 0;
	o = bpf_map_lookup_elem(&pending, &tid);
	if (!o)
		return 0;
	o->flags |= TP_SAMPLE_NO_USER_STACK;
	send(o);
	if (!bpf_map_delete_elem(&pending, &tid))
		__sync_fetch_and_add(&nr_pending, -1);
	return 0;
}
