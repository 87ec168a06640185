// SPDX-License-Identifier: GPL-2.0-only
/* The scheduler: off-CPU time (where threads block, and for how long) and run-queue latency (how
 * long runnable threads wait for a CPU), from tp_btf/sched_switch; the stacks of captured blocks
 * are taken at switch-out where predicted, else at switch-in (kernel) and by a task work (or
 * fexit/schedule, or raw_tp/sys_exit) on the way back to user space (user).
 *
 * Cost is the design problem: a context switch must stay cheap when nothing is captured, and on
 * this machine kind every helper call, bpf_loop step and return costs tens of ns (retpolines,
 * the SRSO return thunk). So no hash map is touched and at most one clock read on that path:
 * - time is the run queue's clock (rq->clock, sched_clock ns), which __schedule has just updated:
 *   a load. Where it may be stale (it has not moved since the wake-up: __schedule skips the
 *   update after a wake-up that preempts, onto an idle CPU say) "now" is bpf_ktime_get_ns (some
 *   70 ns) taken to the rq clock with a per-CPU offset. Blocks are timed across CPUs with rq
 *   clocks only where sched_clock is one clock for every CPU (TSC clocksource: block_clock_rq);
 *   elsewhere with bpf_ktime_get_ns at both ends;
 * - run-queue latency is the kernel's own (CONFIG_SCHED_INFO, as delay accounting and
 *   /proc/PID/schedstat measure it): at switch-in, now - next->sched_info.last_queued (set at
 *   wake-up and at preemption while runnable), plus the parts of the wait on other run queues of
 *   a thread migrated while it waited (its sched_info.run_delay grew by them). No wake-up
 *   programs;
 * - switch-out of a blocked thread: a timestamp and its run_delay in task storage. Its registers
 *   are not read, except where its last captured block was at the same user registers: that
 *   block is likely long too, so its stacks are taken now, the thread being current and its
 *   stacks in this CPU's caches, into its sched_early, where it keeps those of its last
 *   switch-out and what verifies them: the kernel stack where its return addresses are all in
 *   their places again, from the stack pointer the switch will save (the tracepoint's arguments
 *   are on the thread's stack, a fixed distance below it); the user stack where every word its
 *   walk read is unchanged, else from ustack_cache the same way, else walked;
 * - switch-in: the block's length; a block of at least offcpu_min_ns takes the kernel stack of the
 *   woken thread where switch-out did not (where it blocked: from kstack_cache when the same
 *   return addresses are still at the same places on its stack, else bpf_get_task_stack). With
 *   its stacks from switch-out the sample goes to user space at once. Otherwise (not predicted:
 *   the thread's first such block there) the user stack is the one the thread has on its way
 *   back to user space from that syscall: a task work (bpf_task_work_schedule_resume, Linux
 *   6.18, some 7 us a capture) takes it there; on older kernels fexit/schedule takes it as the
 *   thread returns from schedule() (one per-CPU load and compare on each return), and where the
 *   kernel has no BPF trampolines raw_tp/sys_exit does (the same on every syscall's return,
 *   which also sends every syscall through the slow exit path). Shorter blocks are counted per
 *   process and drain period in sched_ptab (an array: no hashing, no locks);
 * - a block outside a syscall (a page fault), of a kernel thread, or of an io_uring or vhost
 *   worker (user threads that never return to user space) is sent at switch-in with its kernel
 *   stack and TP_SAMPLE_NO_USER_STACK.
 *
 * This file holds the configuration, the events ring buffer and the programs; their pieces are
 * bpf/lib/sched_*.bpf.h, included in this order: state (task storage, per-CPU state, the maps),
 * runq (clocks, run-queue accounting), send (building and sending samples), kstack and ustack
 * (the kernel and user stack caches), switch_out (switch-out bookkeeping, early stacks) and
 * capture (holding a block until its user stack is taken). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "tailprof.h"
#include "lib/task.bpf.h"
#include "lib/unwind.bpf.h"
#include "lib/shared_maps.bpf.h"
#include "lib/python.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load. */
const volatile __u64 slot_ns = 500000000;     /* the drain period */
const volatile __u64 offcpu_min_ns = 1000000; /* blocks at least this long get stacks */
const volatile __u64 wakeup_bytes = 1 << 20;
const volatile __u32 unwind_tables_on = 0; /* 1: walk user stacks with unwind_rows (the
					    * sampler's maps, shared by the loader) */
const volatile __u32 block_clock_rq = 0;   /* 1: time blocks with rq->clock (sched_clock is one
					    * clock on every CPU), 0: with bpf_ktime_get_ns */
/* 1: Python frames (bpf/lib/python.bpf.h) with the user stacks taken on the way back to user
 * space; Python processes' user stacks are then never taken at switch-out (their native stack
 * does not tell their Python callers apart: a repeat could name the wrong ones) */
const volatile __u32 python_on = 0;
const volatile __u32 use_task_work = 0; /* 1: unpredicted captures get their user stack from
					 * a task work (bpf_task_work_schedule_resume, Linux
					 * 6.18): sched_switch_tw is loaded, not sched_switch
					 * and sys_exit (the loader sets both) */

#define TASK_RUNNING	  0
#define TP_NR_EXECVE	  59	     /* x86-64 */
#define TP_NR_EXECVEAT	  322	     /* x86-64 */
#define TP_PF_IO_WORKER	  0x00000010 /* include/linux/sched.h */
#define TP_PF_USER_WORKER 0x00004000

/* libbpf 1.1 has no bpf_ksym_exists: a weak kfunc the kernel lacks resolves to 0 */
#define bpf_ksym_exists_tp(sym) (!!(sym))

extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map, bpf_task_work_callback_t callback,
					      void *aux__prog) __ksym __weak;

/* Captured blocks waiting in `pending` now: thread exit looks in `pending` only while some are. */
__u64 nr_pending = 0;
/* The distance from a blocking switch-out's tracepoint arguments (ctx, on the blocking thread's
 * kernel stack, in bpf_trace_run4's frame below __schedule's) to the stack pointer its switch then
 * saves (thread.sp): the same for every switch of one kernel build while the number of programs
 * on the tracepoint stays (one is called directly, several through its iterator: 24 and 72
 * bytes here), learnt from a captured block (0: not yet; reset when a switch disagrees). */
__u64 switch_sp_from_ctx = 0;
/* Entries ever added to sched_procs: tailprofd walks that hash (16,384 buckets, scanned even when
 * empty) only while it has taken fewer. */
__u64 sched_procs_added = 0;

/* events: the off-CPU samples, into the ring buffer profile.bpf.c owns (the loader makes it this
 * program's through map reuse), so they are drained in order with the CPU samples. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

#include "lib/sched_state.bpf.h"
#include "lib/sched_runq.bpf.h"
#include "lib/sched_send.bpf.h"
#include "lib/sched_kstack.bpf.h"
#include "lib/sched_ustack.bpf.h"
#include "lib/sched_switch_out.bpf.h"
#include "lib/sched_capture.bpf.h"

/* sched_switch's body; task_work (a constant): unpredicted captures get their user stack from a
 * task work (sched_switch_tw), else from sys_exit (sched_switch). */
static __always_inline int switch_body(unsigned long long *ctx, bool preempt,
				       struct task_struct *prev, struct task_struct *next,
				       unsigned int prev_state, const bool task_work)
{
	/* tp_btf arguments are trusted task pointers: fields are read directly, not probed. This
	 * CPU's run queue is next's (or, switching to idle, prev's): se.cfs_rq is set for every
	 * class to the task's group's cfs_rq on the CPU it is on. */
	struct rq *rq = next->pid ? next->se.cfs_rq->rq : prev->se.cfs_rq->rq;
	__u64 clk = rq->clock, lq, rd, runq = 0, blocked = 0, mono, now;
	__u32 zero = 0;
	__u32 early = 0;
	struct tp_sched_task *st;
	struct tp_sched_cpu *c;
	__u32 cpu;

	/* prev blocked: its off-CPU time starts (a preempted prev's run-queue wait is the kernel's
	 * sched_info, nothing to do; prev_state is what it had set, so a thread preempted between
	 * setting a sleep state and calling schedule() is not blocked: preempt says so) */
	if (prev->pid && prev_state != TASK_RUNNING && !preempt) {
		st = bpf_task_storage_get(&sched_tasks, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!st) {
			bump(TP_SCH_NO_STORAGE);
		} else {
			st->blocked_at = block_clock_rq ? clk : bpf_ktime_get_ns();
			st->blocked_rq = clk;
			st->run_delay_seen = prev->sched_info.run_delay;
			st->seen = 1;
			st->early = 0;
			st->out_ctx = (__u64)ctx;
			/* Its registers (the syscall, the user stack) are read at switch-in, and
			 * only for a capture; here only where its last captured block was at the
			 * same place: likely long again, and its stacks are taken now (a call
			 * less for the other blocks). A pending capture keeps its syscall. */
			/* a compare for a thread of a known process (its group leader's line may
			 * be cold: start_ns is read only until then) */
			if (prev->mm && st->known_mm != (__u64)prev->mm)
				note_process(prev, st);
			if (st->long_sp && !st->pending) {
				struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(prev);

				if (regs) {
					read_block_regs(st, regs);
					st->early = TP_EARLY_REGS;
					if (regs->sp == st->long_sp && regs->ip == st->long_ip &&
					    st->syscall_nr >= 0)
						early_stacks(prev, st, regs);
				}
			}
		}
	}
	if (!next->pid)
		return 0;
	/* next: the end of its run-queue wait and of its block. lq (set at wake-up and at
	 * preemption) says it waited on this run queue since then; run_delay grew by the parts of
	 * the wait on other run queues if it was migrated meanwhile (sched_info_dequeue). */
	lq = next->sched_info.last_queued;
	rd = next->sched_info.run_delay;
	st = bpf_task_storage_get(&sched_tasks, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (st) {
		if (st->seen && rd > st->run_delay_seen && rd - st->run_delay_seen < (1ull << 40))
			runq = rd - st->run_delay_seen;
		/* run_delay once sched_info_arrive, right after this tracepoint, has counted it */
		st->run_delay_seen = rd + runq_here(lq, clk);
		st->seen = 1;
		/* A block whose end this program missed is not this one: the thread ran since
		 * (sched_info.last_arrival, set at each switch-in after this tracepoint, is later
		 * than the rq clock of the CPU it blocked on, where it last arrived). A switch-in
		 * this program did not see the thread's storage at (the storage lock is per CPU,
		 * and a preempted program may hold it) leaves one; a trial run left 3 in some
		 * 200,000 switches without such a failure counted. */
		if (st->blocked_at && next->sched_info.last_arrival > st->blocked_rq) {
			st->blocked_at = 0;
			st->early = 0;
			bump(TP_SCH_STALE_BLOCK);
		}
	} else {
		bump(TP_SCH_NO_STORAGE);
	}
	if (!lq && !(st && (st->blocked_at || st->pending)))
		return 0;
	c = bpf_map_lookup_elem(&sched_cpu, &zero);
	if (!c)
		return 0;
	/* "Now" is rq->clock, unless it has not moved since the wake-up: __schedule skips its
	 * update after a wake-up that preempts (the idle task, say). Then, and where blocks are
	 * timed with CLOCK_MONOTONIC, at the end of a drain period, and every 32nd switch-in (to
	 * keep the offset between the clocks fresh), it is CLOCK_MONOTONIC taken to the rq clock
	 * with this CPU's offset. */
	mono = 0;
	now = clk;
	if ((lq && clk <= lq) || (!block_clock_rq && st && st->blocked_at) ||
	    clk >= c->period_end_rq || !(++c->calls & 31)) {
		mono = bpf_ktime_get_ns();
		sched_cpu_clock(c, mono, clk);
		now = rq_now(c, mono, clk);
	}
	runq += runq_here(lq, now);
	if (st && st->blocked_at) {
		__u64 end = block_clock_rq ? now : mono;

		if (end > st->blocked_at)
			blocked = end - st->blocked_at;
		st->blocked_at = 0;
		early = st->early;
		st->early = 0;
		if ((early & (TP_EARLY_USER | TP_EARLY_KERNEL)) && blocked < offcpu_min_ns)
			bump(TP_SCH_EARLY_WASTED);
	}
	if (st && st->pending && !task_work) {
		/* its capture waits for its return from the syscall, here */
		c->pending_tid = next->pid;
		c->pending_regs = (__u64)bpf_task_pt_regs(next);
		c->pending_task = (__u64)next;
	}
	if (st && blocked >= offcpu_min_ns)
		(task_work ? capture_tw : capture)(next, st, blocked,
						   mono ? mono : bpf_ktime_get_ns(), early);
	if (lq || (blocked && blocked < offcpu_min_ns)) {
		cpu = bpf_get_smp_processor_id();
		struct tp_sched_proc *p = proc_slot(next->tgid, c->period, cpu);

		if (lq)
			runq_done(p, runq, c->period, cpu);
		if (p && blocked && blocked < offcpu_min_ns) {
			p->short_count++;
			p->short_ns += blocked;
		}
		/* short where its last captured block was: not predicted next time */
		if (st && blocked && blocked < offcpu_min_ns && st->block_sp == st->long_sp &&
		    st->block_ip == st->long_ip)
			st->long_sp = st->long_ip = 0;
	}
	return 0;
}

/* The scheduler's switch: one of the two is loaded (the loader picks by the kernel's kfuncs). */
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return switch_body(ctx, preempt, prev, next, prev_state, false);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_tw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return switch_body(ctx, preempt, prev, next, prev_state, true);
}

/* The captured block of thread tid (task t) that st says is pending, taken out: from its
 * offcpu_slot (in place: the slot is TP_SLOT_BUSY until released with release_slot()), else
 * from `pending` into the scratch sample of key (its caller's). NULL: gone. */
static __always_inline struct tp_sample *take_pending(struct tp_sched_task *st, __u32 tid,
						      struct task_struct *t,
						      struct tp_offcpu_slot **slp, __u32 key)
{
	__u32 zero = 0;
	struct tp_offcpu_slot *sl;
	struct tp_pending *e;
	struct tp_sample *o;

	*slp = NULL;
	st->pending = 0;
	if (st->slot_cpu != TP_NO_SLOT) {
		sl = bpf_map_lookup_percpu_elem(&offcpu_slot, &zero, st->slot_cpu);
		if (sl && __sync_val_compare_and_swap(&sl->tid, tid, TP_SLOT_BUSY) == tid) {
			__sync_fetch_and_add(&nr_pending, -1);
			*slp = sl;
			return &sl->s;
		}
	}
	/* moved to `pending` */
	e = bpf_map_lookup_elem(&pending, &tid);
	o = bpf_map_lookup_elem(&off_scratch, &key);
	if (!e || !o)
		return NULL;
	sample_of(o, e, tid, t);
	if (!bpf_map_delete_elem(&pending, &tid))
		__sync_fetch_and_add(&nr_pending, -1);
	return o;
}

static __always_inline void release_slot(struct tp_offcpu_slot *sl)
{
	if (sl) {
		barrier();
		sl->tid = 0;
	}
}

/* Thread t (current) is back from the block a capture of this CPU waits for, in syscall nr with
 * user registers regs: the capture gets its user stack and is sent. c: this CPU's state. With
 * same_regs (a constant) the registers must be those it blocked with: the return from schedule()
 * misses a block whose wait bypasses schedule() (rt_mutex_schedule, PI futexes from Linux 6.7),
 * and its capture is then taken at a later block's, after the thread has been back in user
 * space. */
static __always_inline void returned(struct tp_sched_cpu *c, struct task_struct *t,
				     struct pt_regs *regs, const bool same_regs)
{
	__s64 nr = BPF_CORE_READ(regs, orig_ax);
	struct tp_offcpu_slot *sl;
	struct tp_sched_task *st;
	struct tp_sample *o;

	c->pending_tid = 0;
	c->pending_regs = 0;
	c->pending_task = 0;
	st = bpf_task_storage_get(&sched_tasks, t, 0, 0);
	if (!st || !st->pending)
		return;
	o = take_pending(st, st->key_tid, t, &sl, TP_SCRATCH_EXIT);
	if (!o)
		return;
	if (same_regs &&
	    (BPF_CORE_READ(regs, ip) != st->block_ip || BPF_CORE_READ(regs, sp) != st->block_sp))
		nr = -2; /* not the block's syscall: finish_user_stack sends it without */
	finish_user_stack(o, t, st, nr);
	send(o, st);
	release_slot(sl);
}

/* The return from schedule(): the user stack of a captured block (without use_task_work), where
 * the kernel has BPF trampolines (fentry/fexit: ftrace's direct calls). The thread is current
 * there, in its own context, with the user registers and stack its syscall will return to, and
 * this runs once per return from schedule() rather than on every syscall's return: no syscall
 * takes the slow exit path for it. One per-CPU load and compare unless a capture waits on this
 * CPU. The trampoline's return address is on the kernel stack of every thread blocked in
 * schedule(): tailprofd leaves that frame out of the stacks it symbolizes. */
SEC("fexit/schedule")
int BPF_PROG(sched_return)
{
	__u32 zero = 0;
	struct tp_sched_cpu *c = bpf_map_lookup_elem(&sched_cpu, &zero);
	struct task_struct *t;
	struct pt_regs *regs;

	if (!c || !c->pending_tid)
		return 0;
	/* the task, not its pid: a thread that exec'd meanwhile has taken its leader's */
	t = bpf_get_current_task_btf();
	if (c->pending_task != (__u64)t)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (!regs)
		return 0;
	returned(c, t, regs, true);
	return 0;
}

/* The return from a syscall: the same where the kernel has no BPF trampolines. One per-CPU load
 * and compare (of the registers it is given: no helper call) unless this is the thread a
 * capture waits for on this CPU; but while it is attached every syscall of every thread takes
 * the kernel's slow exit path (docs/kernels.md). */
SEC("raw_tp/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	__u32 zero = 0;
	struct tp_sched_cpu *c = bpf_map_lookup_elem(&sched_cpu, &zero);

	/* the registers are the thread's own (the top of its kernel stack) even where it has
	 * taken its leader's pid in an exec meanwhile */
	if (!c || c->pending_regs != (__u64)regs)
		return 0;
	returned(c, bpf_get_current_task_btf(), regs, false);
	return 0;
}

/* A thread exits: a captured block that never got back to user space is sent without a user
 * stack, and its entry freed. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_thread_exit, struct task_struct *p)
{
	struct tp_offcpu_slot *sl;
	struct tp_sched_task *st;
	struct tp_sample *o;

	if (!*(volatile __u64 *)&nr_pending)
		return 0;
	st = bpf_task_storage_get(&sched_tasks, p, 0, 0);
	if (!st || !st->pending)
		return 0;
	st->exiting = 1;
	if (use_task_work) {
		__u32 tid = st->key_tid;
		struct tp_tw_pending *w = bpf_map_lookup_elem(&tw_pending, &tid);

		st->pending = 0;
		if (w) {
			no_user_stack(&w->s);
			release_tw(w, tid, st);
		}
		return 0;
	}
	o = take_pending(st, st->key_tid, p, &sl, TP_SCRATCH_THREAD_EXIT);
	if (!o)
		return 0;
	no_user_stack(o);
	send(o, st);
	release_slot(sl);
	return 0;
}
