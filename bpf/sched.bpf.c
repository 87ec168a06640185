// SPDX-License-Identifier: GPL-2.0-only
/* The scheduler: off-CPU time (where threads block, and for how long) and run-queue latency (how
 * long runnable threads wait for a CPU), from tp_btf/sched_switch; the stacks of captured blocks
 * are taken at switch-out where predicted, else at switch-in (kernel) and by a task work (or
 * raw_tp/sys_exit) on the way back to user space (user).
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
 *   6.18, some 7 us a capture) takes it there; on older kernels raw_tp/sys_exit does, one
 *   per-CPU load and compare on every syscall's return. Shorter blocks are counted per process
 *   and drain period in sched_ptab (an array: no hashing, no locks);
 * - a block outside a syscall (a page fault), of a kernel thread, or of an io_uring or vhost
 *   worker (user threads that never return to user space) is sent at switch-in with its kernel
 *   stack and TP_SAMPLE_NO_USER_STACK. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "tailprof.h"
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

/* Per-thread scheduler state. Task storage lives and dies with the thread, so threads that exit
 * (blocked or not) leave nothing behind. Created at a thread's first blocking switch-out; written
 * and read here only. */
struct tp_sched_task {
	__u64 blocked_at;	  /* switch-out while blocked (block clock), 0: not blocked */
	__u64 blocked_rq;	  /* and its CPU's rq clock then */
	__u64 run_delay_seen;	  /* sched_info.run_delay once its last wait was counted */
	__s64 syscall_nr;	  /* the syscall it blocked in, -1: none */
	__u32 pending;		  /* a captured block waits for its syscall to return */
	__u32 seen;		  /* run_delay_seen is set (0: the storage was just created) */
	__u32 slot_cpu;		  /* pending: whose offcpu_slot holds it (TP_NO_SLOT: `pending`) */
	__u32 early;		  /* TP_EARLY_*: what its blocking switch-out took already */
	__u64 block_ip, block_sp; /* its user registers at the blocking switch-out */
	__u64 long_ip, long_sp;	  /* those of its last captured block (0: none): the prediction */
	__u64 known_start;	  /* its process's start_ns, once seen in known_procs */
	__u32 key_tid;		  /* pending: the tid its capture is kept under (a thread that
				   * execs takes its leader's pid in de_thread) */
	__u32 pad2;
	__u64 early_ksp; /* TP_EARLY_KERNEL: the stack pointer its switch will have saved */
	__u64 out_ctx;	 /* the address of the tracepoint's arguments at its last blocking
			  * switch-out (on its kernel stack: see early_kernel_stack) */
	__u64 known_mm;	 /* its address space (task->mm) when tailprofd was found or told to
			  * know its process (note_process): an exec gives it a new one, while the
			  * process's start_ns stays */
};

/* st->early: what a blocking switch-out took for a block predicted long (stacks: in sched_early) */
#define TP_EARLY_REGS	1 /* st->syscall_nr, block_ip, block_sp are this block's */
#define TP_EARLY_USER	2 /* its user stack */
#define TP_EARLY_KERNEL 4 /* its kernel stack */
#define TP_EARLY_AGAIN	8 /* its user stack is its own copy's, verified again (not walked) */

#define TP_NO_SLOT	       0xffffffffu
#define TP_USTACK_EARLY_FRAMES TP_MAX_STACK_DEPTH

#define TP_EARLY_KFRAMES 32

/* The stacks of a thread taken at its switch-out, where its last block at the same user
 * registers was captured: the thread is current there and its stacks are in the CPU's caches,
 * so this is the cheap place; at switch-in the sample is sent whole. Each is the one its last
 * such switch-out took where that verifies again, so it is not copied, and no shared cache
 * entry is read (the first load from one costs some 440 ns here): the kernel stack (that of its
 * last capture at first) where every return address is in its place again, at the same offset
 * from the saved stack pointer or, for the frames outside the random offset that each syscall
 * entry puts on the stack (CONFIG_RANDOMIZE_KSTACK_OFFSET: do_syscall_64 and the entry code),
 * from the stack's base; the user stack where every word its walk read reads the same. Created
 * for threads whose blocks get captured, and dies with the thread. */
struct tp_early_kframe {
	__u64 ip;   /* a return address */
	__u16 off;  /* its place: the offset from the saved stack pointer */
	__u16 boff; /* and from the stack's base (task->stack) */
	__u32 pad;
};

struct tp_early_stacks {
	__s32 k_syscall; /* the kernel stack of its last capture: its syscall */
	__u32 k_nr;	 /* frames, 0: none */
	struct tp_early_kframe k[TP_EARLY_KFRAMES]; /* leaf first: a frame's line, for both */
	__u32 nr;				    /* the user stack: frames */
	__u32 flags;				    /* TP_SAMPLE_* of the walk */
	__u64 frames[TP_USTACK_EARLY_FRAMES];
	/* and how to verify it again (as ustack_cache does, but in the thread's own storage):
	 * the registers and tables the walk started from (and the unwind_epoch they were last
	 * found unchanged at), and each word it read (its offset in the span [u_span_lo,
	 * u_span_lo + u_span_len) and its value); u_ok 0: none */
	__u32 u_ok, u_nw;
	__u64 u_pc, u_sp, u_bp, u_span_lo, u_start_ns, u_epoch;
	__u32 u_span_len, u_gen;
	__u16 u_off[TP_UNWIND_LOG_WORDS];
	__u64 u_val[TP_UNWIND_LOG_WORDS];
	/* CLOCK_MONOTONIC of the last sample sent with k and frames as its stacks (marked
	 * TP_SAMPLE_REPEATABLE), 0: none since either changed */
	__u64 sent_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tp_early_stacks);
} sched_early SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tp_sched_task);
} sched_tasks SEC(".maps");

/* Per-CPU state: the drain period, the offset between CLOCK_MONOTONIC and this CPU's rq clock,
 * and the thread whose capture waits for its return from a syscall on this CPU. */
struct tp_sched_cpu {
	__u64 period;	     /* CLOCK_MONOTONIC / slot_ns */
	__u64 period_end;    /* its end, CLOCK_MONOTONIC; 0: not set yet */
	__u64 period_end_rq; /* about when the rq clock reaches it (checked with the clock) */
	/* the smallest bpf_ktime_get_ns() - rq->clock seen at a switch in this period and in the
	 * one before: where the rq clock was fresh, so rq clock now = ktime - offset */
	__s64 off_cur, off_prev;
	__u32 pending_tid;  /* 0: none */
	__u32 calls;	    /* switch-ins, for the clock's sampling */
	__u64 pending_regs; /* its user registers (task_pt_regs), which sys_exit is given */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_sched_cpu);
} sched_cpu SEC(".maps");

/* A captured block between switch-in and the thread's return from its syscall: what the off-CPU
 * sample needs from the switch-in. A quarter of a tp_sample, so the hash update copies little. */
#define TP_PENDING_KFRAMES 64 /* deeper kernel stacks are sent at switch-in, without user stack */

struct tp_pending {
	__u64 ts_ns; /* CLOCK_MONOTONIC of the wake-up (the window) */
	__u64 start_ns;
	__u64 blocked_ns;
	__u32 pid;
	__u32 cpu;
	__u32 flags;
	__u32 stage;
	__u32 nr_kernel;
	__u32 pad;
	__u64 kaddrs[TP_PENDING_KFRAMES];
};

/* pending: tid -> its captured block, waiting for the thread's return from the syscall for the
 * user stack. Written at switch-in, read and deleted at sys_exit, deleted at thread exit. Bounded:
 * 4096 threads woken from long blocks but not yet back in user space at once; beyond that a sample
 * is sent with its kernel stack only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tp_pending);
} pending SEC(".maps");

/* offcpu_slot: per CPU, the captured block of the thread switched in last with one, as a whole
 * sample: its kernel stack is written there at switch-in, its user stack at its syscall's
 * return, and it is sent from there; no hash map, no copies. Nearly always the thread returns
 * from its syscall on the same CPU before any other capture there. Otherwise the slot moves to
 * `pending`. tid says whose it is: 0 free, TP_SLOT_BUSY while one CPU takes it out, else the
 * thread's; it changes hands only by compare-and-swap (the thread's return may run on another
 * CPU than the capture, which may meanwhile need the slot for another thread). */
#define TP_SLOT_BUSY 0xffffffffu

struct tp_offcpu_slot {
	__u32 tid;
	__u32 pad;
	struct tp_sample s;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_offcpu_slot);
} offcpu_slot SEC(".maps");

/* tw_pending: tid -> a captured block whose user stack was not taken at switch-out, waiting for
 * its thread's way back to user space, where the task work tw takes the user stack and sends the
 * sample s (kernel stack filled at switch-in). use_task_work only. Written at switch-in, deleted
 * by the task work, or at thread exit (which cancels the work). */
struct tp_tw_pending {
	struct bpf_task_work tw;
	struct tp_sample s;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tp_tw_pending);
} tw_pending SEC(".maps");

/* tw_scratch: a tw_pending entry being built (and the sample of a capture sent from switch-in
 * where use_task_work). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_tw_pending);
} tw_scratch SEC(".maps");

/* runq_hist: nr_cpus * TP_SCHED_SLOTS histograms (tailprof.h), sized by the loader. mmap'able so
 * tailprofd takes periods without syscalls. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_runq_hist);
} runq_hist SEC(".maps");

/* sched_ptab: per-process counts, nr_cpus * TP_SCHED_SLOTS * TP_SCHED_PTAB entries (tailprof.h),
 * sized by the loader, mmap'able. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_sched_pentry);
} sched_ptab SEC(".maps");

/* sched_procs: (pid, drain period, CPU) -> run-queue and short-block counts of the processes that
 * found no room in sched_ptab. Written here by that CPU only, taken and deleted by tailprofd once
 * the period has ended (so the kernel never writes an entry being read). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tp_sched_key);
	__type(value, struct tp_sched_proc);
} sched_procs SEC(".maps");

/* sched_metrics: TP_SCH_NR counters (tailprof.h) per CPU, summed by tailprofd. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TP_SCH_NR);
	__type(key, __u32);
	__type(value, __u64);
} sched_metrics SEC(".maps");

/* Per-CPU scratch, too big for the BPF stack: the sample a switch-in builds when the CPU's
 * offcpu_slot is not free, the one sys_exit or thread exit builds from `pending`, and the
 * record hold() builds (separate: a preemptible kernel may switch in the middle of sys_exit). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct tp_sample);
} off_scratch SEC(".maps");

#define TP_SCRATCH_SWITCH 0
#define TP_SCRATCH_EXIT	  1
#define TP_SCRATCH_HOLD	  2 /* hold(): a `pending` record in the making */

/* The kernel stack cache. A blocked thread's kernel stack is a chain of return addresses at
 * places on its stack that the call path fixes; bpf_get_task_stack finds them with the ORC
 * unwinder, 2-3 us a stack when its tables are cold (as they are at scheduler time). So each walk
 * is kept with where on the stack (offset from the saved stack pointer) it found each address,
 * keyed by the stack's depth and the syscall, in a direct-mapped array. A later block with the
 * same key re-reads those places: when every return address is still there, the unwinder (which
 * reads its next frame from where the previous one's return address says) would walk the same
 * frames, and the stack is taken from the cache. Anything else is walked again and replaces the
 * entry. An entry is written under a sequence count (odd while written), so a reader on another
 * CPU never takes half of one. */
#define TP_KSTACK_FRAMES   32	 /* stacks with more frames are always walked */
#define TP_KSTACK_BYTES	   4096	 /* and those whose frames lie deeper */
#define TP_KSTACK_ENTRIES  4096	 /* a power of two; 1.3 MiB */
#define TP_THREAD_SIZE_MIN 16384 /* x86-64's THREAD_SIZE (KASAN doubles it) */

struct tp_kstack {
	__u32 seq;
	__u32 depth; /* the saved stack pointer's offset from the stack's base (task->stack) */
	__s32 syscall_nr;
	__u32 nr;		     /* 0: empty */
	__u16 off[TP_KSTACK_FRAMES]; /* byte offsets from the saved stack pointer */
	__u64 ip[TP_KSTACK_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_KSTACK_ENTRIES);
	__type(key, __u32);
	__type(value, struct tp_kstack);
} kstack_cache SEC(".maps");

/* kstack_scratch: a copy of the top TP_KSTACK_BYTES of a blocked thread's stack, and the entry
 * being built (too big for the BPF stack). */
struct tp_kstack_scratch {
	__u64 words[TP_KSTACK_BYTES / 8];
	struct tp_kstack k;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_kstack_scratch);
} kstack_scratch SEC(".maps");

/* The user stack cache, the same idea for the user stacks taken at sys_exit: a walk is kept with
 * the registers it started from and every stack word it read (tp_unwind_log), keyed by process
 * and registers. Where the process's tables are unchanged (tp_proc_mappings.gen) and every word
 * reads the same again, the walk would go the same way: its frames are taken from the cache.
 * Threads that block in the same place again and again (a worker's wait) take the cheap path. */
#define TP_USTACK_FRAMES  32 /* longer walks are not cached */
#define TP_USTACK_ENTRIES 512

struct tp_ustack {
	__u32 seq;
	__u32 pid;
	__u64 start_ns;
	__u64 pc, sp, bp;
	__u32 gen;
	__u32 nr;	/* frames; 0: empty */
	__u32 used_fp;	/* the walk's tp_unwind_result */
	__u32 nr_words; /* of the log */
	/* the words lie in [span_lo, span_lo + span_len), 8-byte aligned from span_lo, so one read
	 * checks them all; span_len 0: read one by one */
	__u64 span_lo;
	__u32 span_len;
	__u32 pad;
	__u64 frames[TP_USTACK_FRAMES];
	__u64 addr[TP_UNWIND_LOG_WORDS];
	__u64 val[TP_UNWIND_LOG_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_USTACK_ENTRIES);
	__type(key, __u32);
	__type(value, struct tp_ustack);
} ustack_cache SEC(".maps");

#define TP_USTACK_SPAN 4096 /* bytes, a power of two: one verifying read takes less */

/* ustack_scratch: the log of a walk, and the copy of the span a verification reads. Entry
 * TP_USCRATCH_SWITCH for sched_switch, TP_USCRATCH_RETURN for the return paths (sys_exit, the
 * task work: preemptible, and a switch may walk a stack meanwhile on the same CPU). */
struct tp_ustack_scratch {
	struct tp_unwind_log log;
	__u64 span[TP_USTACK_SPAN / 8];
	__u64 frames[TP_MAX_STACK_DEPTH]; /* the walk's output */
	__u64 py[2 * TP_PY_MAX_FRAMES];	  /* current_python_stack's: struct tp_py_frame pairs */
	__u16 nr_py;			  /* and their number */
	__u16 py_pad;
	__u32 flags; /* and its TP_SAMPLE_* */
	/* rec_ok: the walk can be verified again, from these registers and tables, by the words
	 * in log (their span: [rec_span_lo, rec_span_lo + rec_span_len)) */
	__u32 rec_ok;
	__u64 rec_pc, rec_sp, rec_bp, rec_span_lo, rec_start_ns;
	__u64 rec_epoch; /* unwind_epoch, read before the process's tables were */
	__u32 rec_span_len, rec_gen;
	struct tp_unwind_result res; /* the walk's (here, not on the BPF stack: see capture()) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct tp_ustack_scratch);
} ustack_scratch SEC(".maps");

#define TP_USCRATCH_SWITCH 0
#define TP_USCRATCH_RETURN 1

static __always_inline void bump(__u32 metric)
{
	__u64 *v = bpf_map_lookup_elem(&sched_metrics, &metric);

	if (v)
		(*v)++;
}

/* Takes CLOCK_MONOTONIC time mono, read at rq clock clk, into this CPU's state: the offset
 * between the clocks and the drain period. */
static __always_inline void sched_cpu_clock(struct tp_sched_cpu *c, __u64 mono, __u64 clk)
{
	__s64 d = (__s64)(mono - clk);

	if (mono >= c->period_end) {
		c->off_prev = c->period_end ? c->off_cur : d;
		c->off_cur = d;
		c->period = mono / slot_ns;
		c->period_end = (c->period + 1) * slot_ns;
	}
	if (d < c->off_cur)
		c->off_cur = d;
	c->period_end_rq = c->period_end - (__u64)c->off_cur;
}

/* The rq clock now as CLOCK_MONOTONIC gives it (never before clk). */
static __always_inline __u64 rq_now(struct tp_sched_cpu *c, __u64 mono, __u64 clk)
{
	__u64 now = mono - (__u64)(c->off_prev < c->off_cur ? c->off_prev : c->off_cur);

	return now > clk ? now : clk;
}

/* A new sched_procs entry's value: in .rodata, not on the BPF stack (see capture()). */
static const struct tp_sched_proc zero_proc;

/* The counts of process pid in this CPU's drain period: its sched_ptab entry, or sched_procs
 * when the entries it may use hold other processes. NULL: no room anywhere (counted). */
static __always_inline struct tp_sched_proc *proc_slot(__u32 pid, __u64 period, __u32 cpu)
{
	__u32 base = (cpu * TP_SCHED_SLOTS + (__u32)(period % TP_SCHED_SLOTS)) * TP_SCHED_PTAB;
	__u32 h = (pid * 2654435761u) >> (32 - 7); /* Knuth's multiplicative hash, 7 bits */
	struct tp_sched_key key = {.pid = pid, .slot = (__u32)period, .cpu = cpu};
	struct tp_sched_proc *v;

	_Static_assert(TP_SCHED_PTAB == 1 << 7, "proc_slot hashes to 7 bits");
	for (__u32 i = 0; i < TP_SCHED_PTAB_PROBES; i++) {
		__u32 idx = base + ((h + i) & (TP_SCHED_PTAB - 1));
		struct tp_sched_pentry *e = bpf_map_lookup_elem(&sched_ptab, &idx);

		if (!e)
			break;
		if (e->pid == pid && e->slot == (__u32)period)
			return &e->v;
		if (e->slot != (__u32)period && !e->v.runq_count && !e->v.short_count) {
			/* free, or of an older period whose counts tailprofd has taken */
			e->pid = pid;
			e->slot = (__u32)period;
			e->v.runq_ns = e->v.runq_max_ns = e->v.short_ns = 0;
			return &e->v;
		}
	}
	v = bpf_map_lookup_elem(&sched_procs, &key);
	if (v)
		return v;
	if (!bpf_map_update_elem(&sched_procs, &key, &zero_proc, BPF_NOEXIST))
		__sync_fetch_and_add(&sched_procs_added, 1);
	else if (!bpf_map_lookup_elem(&sched_procs, &key)) {
		bump(TP_SCH_PROCS_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&sched_procs, &key);
}

/* A run-queue wait of lat ns ended now: into this CPU's histogram of the period, and p's counts.
 * Plain adds: the histogram and p are this CPU's own (p's key has the CPU), and tailprofd takes a
 * period only once it has ended, so nothing else writes them meanwhile. */
static __always_inline void runq_done(struct tp_sched_proc *p, __u64 lat, __u64 period, __u32 cpu)
{
	__u32 idx = cpu * TP_SCHED_SLOTS + (__u32)(period % TP_SCHED_SLOTS);
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

/* Trusted task pointers (tp_btf arguments, bpf_get_current_task_btf) are read with plain loads,
 * which the verifier guards: cheaper than bpf_probe_read_kernel. */
static __always_inline __u64 process_start_ns(struct task_struct *task)
{
	return task->group_leader->start_boottime;
}

/* The base of task's kernel stack (task->stack) as a number. Read with a helper, not a plain
 * load: Linux 6.18's verifier types a plain load of that void * as read-only untrusted memory,
 * and then rejects the arithmetic (depth, hashing) done on it ("pointer ^= pointer
 * prohibited"). 0 when the read fails. */
static __always_inline __u64 task_stack_base(struct task_struct *task)
{
	__u64 base = 0;

	bpf_probe_read_kernel(&base, sizeof(base), &task->stack);
	return base;
}

/* The comm of task's process and its own, both TP_COMM_LEN bytes, NUL-padded as the kernel keeps
 * them. */
static __always_inline void comms(struct tp_sample *o, struct task_struct *task)
{
	_Static_assert(TP_COMM_LEN == 16 && sizeof(task->comm) == 16, "comm is two words");
	__u64 *p = (__u64 *)o->comm, *t = (__u64 *)o->thread_comm;

	p[0] = *(__u64 *)&task->group_leader->comm[0];
	p[1] = *(__u64 *)&task->group_leader->comm[8];
	t[0] = *(__u64 *)&task->comm[0];
	t[1] = *(__u64 *)&task->comm[8];
}

/* Sends off-CPU sample o to user space (woken at once for a process it does not know yet, or
 * when the ring buffer fills). st: the thread's state, where whether user space knows its
 * process is kept (a hash lookup less a sample), or NULL. Returns 0 or -1 (ring buffer full). */
static __always_inline long send(struct tp_sample *o, struct tp_sched_task *st)
{
	__u32 nk = o->nr_kernel, nu = o->nr_user, n;
	__u64 flags = BPF_RB_NO_WAKEUP;

	/* each clamped in its own register, which the verifier then sees bounded */
	nk = nk < TP_MAX_STACK_DEPTH ? nk : TP_MAX_STACK_DEPTH;
	barrier_var(nk);
	nu = nu < TP_MAX_STACK_DEPTH ? nu : TP_MAX_STACK_DEPTH;
	barrier_var(nu);
	n = TP_SAMPLE_HDR_SIZE + (nk + nu) * 8;
	if (python_on) {
		__u32 npy = o->nr_python;

		npy = npy < TP_PY_MAX_FRAMES ? npy : TP_PY_MAX_FRAMES;
		barrier_var(npy);
		n += npy * 16;
	}
	if (!st || st->known_start != o->hdr.start_ns) {
		__u64 *known = bpf_map_lookup_elem(&known_procs, &o->hdr.pid);

		if (known && *known == o->hdr.start_ns) {
			if (st)
				st->known_start = o->hdr.start_ns;
		} else {
			flags = BPF_RB_FORCE_WAKEUP;
		}
	}
	if ((o->flags & TP_SAMPLE_PY_NEW) ||
	    bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&events, o, n, flags)) {
		bump(TP_SCH_RINGBUF_FULL);
		return -1;
	}
	return 0;
}

static __always_inline __u32 mix64(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull; /* MurmurHash3's 64-bit finaliser */
	x ^= x >> 33;
	return (__u32)x;
}

/* Scanning a copied kernel stack for the return addresses of a walk, in a bpf_loop callback
 * (unrolled, 512 words would be too many verifier states). */
struct tp_kstack_scan {
	struct tp_kstack_scratch *sc;
	__u64 *out; /* the walk, leaf first */
	__u32 nr;   /* addresses found so far */
	__u32 want; /* frames in out */
};

static long kstack_scan_step(__u32 w, void *ctx)
{
	struct tp_kstack_scan *s = ctx;
	__u32 f = s->nr;

	if (f >= s->want || f >= TP_KSTACK_FRAMES)
		return 1;
	if (s->sc->words[w & (TP_KSTACK_BYTES / 8 - 1)] == s->out[f & (TP_KSTACK_FRAMES - 1)]) {
		s->sc->k.off[f & (TP_KSTACK_FRAMES - 1)] = w * 8;
		s->sc->k.ip[f & (TP_KSTACK_FRAMES - 1)] = s->out[f & (TP_KSTACK_FRAMES - 1)];
		s->nr = f + 1;
	}
	return 0;
}

/* The kernel stack of the current thread, which blocks now in syscall nr: e's, where each of its
 * return addresses is in its place (struct tp_early_stacks). sp: the stack pointer the switch
 * will save (from switch_sp_from_ctx); depth: its offset from the stack's base (task->stack).
 * Returns 1 (verified) or 0. One copy of the stack from sp up (the thread is current: most of
 * it is in this CPU's caches), then plain loads.
 *
 * Everything from sp + sizeof(struct inactive_task_frame) up is the blocking call path's and
 * stays as it is until the thread runs again; below it, __switch_to_asm writes its frame at the
 * switch: the saved registers and the return address into __schedule (the same for every
 * switched-out thread, and not in the walk: bpf_get_task_stack leaves out the scheduler's own
 * functions). A stack with a return address below that is not verified here.
 *
 * A global function: the verifier checks it once. */
__noinline int early_kernel_stack(struct tp_early_stacks *e, __u64 sp, __u64 depth, __s64 nr)
{
	__u32 n, i, skip = bpf_core_type_size(struct inactive_task_frame), outer = 0, zero = 0;
	struct tp_kstack_scratch *sc = bpf_map_lookup_elem(&kstack_scratch, &zero);
	__u64 end, off;

	if (!e || !sc || skip >= 256 || skip & 7 || depth + skip >= TP_THREAD_SIZE_MIN)
		return 0;
	n = e->k_nr;
	if (!n || n > TP_EARLY_KFRAMES || e->k_syscall != (__s32)nr)
		return 0;
	/* one copy, from sp + skip up to the stack's top (or TP_KSTACK_BYTES from sp): words[w]
	 * is the word at sp + 8 * w */
	end = TP_THREAD_SIZE_MIN - depth;
	if (end > TP_KSTACK_BYTES)
		end = TP_KSTACK_BYTES;
	barrier_var(end);
	if (end <= skip || end - skip > TP_KSTACK_BYTES - 256 ||
	    bpf_probe_read_kernel(&sc->words[skip / 8], end - skip, (void *)(sp + skip)))
		return 0;
	for (i = 0; i < TP_EARLY_KFRAMES; i++) {
		struct tp_early_kframe *f = &e->k[i];

		if (i >= n)
			break;
		/* where it was from sp; else, once and for the rest, from the base */
		off = f->off;
		if (!outer && off >= skip && off + 8 <= end &&
		    sc->words[(off / 8) & (TP_KSTACK_BYTES / 8 - 1)] == f->ip)
			continue;
		off = (__u64)f->boff - depth;
		if (f->boff < depth + skip || off + 8 > end ||
		    sc->words[(off / 8) & (TP_KSTACK_BYTES / 8 - 1)] != f->ip)
			return 0;
		outer = 1;
	}
	return 1;
}

/* The kernel stack of blocked thread t into out[TP_MAX_STACK_DEPTH] (leaf first): its own copy e
 * where its switch-out verified it (early & TP_EARLY_KERNEL), else from kstack_cache when
 * verified, else walked (and the walk cached), then learnt into e (NULL: none). Sets *from_e to 1
 * where out is e's copy. Returns frames, or -1. */
static __always_inline long kernel_stack(struct task_struct *t, struct tp_sched_task *st,
					 __u32 early, __s64 syscall_nr, __u64 *out,
					 struct tp_early_stacks *e, __u32 *from_e)
{
	__u64 ksp = t->thread.sp, base = task_stack_base(t), len;
	struct tp_kstack_scan scan = {.out = out};
	struct tp_kstack_scratch *sc;
	__u32 zero = 0, depth = 0, idx, nr, seq, i, ok;
	struct tp_kstack *k = NULL;
	const __u16 *offs;
	long n;

	/* verified at its switch-out, where the thread switched with the stack pointer that was
	 * foreseen (or switch_sp_from_ctx is wrong) */
	if ((early & TP_EARLY_KERNEL) && e) {
		nr = e->k_nr;
		if (ksp != st->early_ksp) {
			switch_sp_from_ctx = 0;
			bump(TP_SCH_KSTACK_EARLY_MISSED);
		} else if (nr <= TP_EARLY_KFRAMES) {
			for (i = 0; i < TP_EARLY_KFRAMES; i++) {
				if (i >= nr)
					break;
				out[i] = e->k[i].ip;
			}
			bump(TP_SCH_KSTACK_EARLY);
			*from_e = 1;
			return nr;
		}
	}
	sc = bpf_map_lookup_elem(&kstack_scratch, &zero);
	/* the stack is THREAD_SIZE bytes from base, at least 16 KiB on x86-64; the depth is
	 * measured from base, which pins it as well as from the top */
	if (!sc || ksp <= base || ksp - base >= TP_THREAD_SIZE_MIN)
		goto walk;
	depth = (__u32)(ksp - base);
	idx = mix64(((__u64)depth << 32) | (__u32)syscall_nr) & (TP_KSTACK_ENTRIES - 1);
	k = bpf_map_lookup_elem(&kstack_cache, &idx);
	if (!k)
		goto walk;
	seq = k->seq;
	barrier();
	nr = k->nr;
	if ((seq & 1) || k->depth != depth || k->syscall_nr != (__s32)syscall_nr || !nr ||
	    nr > TP_KSTACK_FRAMES)
		goto walk;
	/* One copy of the stack down to the outermost cached return address, then plain loads:
	 * where indirect calls go through retpolines and every return through the SRSO return
	 * thunk (this machine kind), a helper call or a bpf_loop step costs more than the cache
	 * lines. (A bpf_rdonly_cast load per return address costs more still: some 50 ns each
	 * here, warm.) Offsets ascend (leaf first), so the last one is the outermost. */
	len = (__u64)k->off[(nr - 1) & (TP_KSTACK_FRAMES - 1)] + 8;
	if (len > TP_KSTACK_BYTES || bpf_probe_read_kernel(sc->words, len, (void *)ksp))
		goto walk;
	ok = 1;
	for (i = 0; i < TP_KSTACK_FRAMES; i++) {
		__u64 v;

		if (i >= nr)
			break;
		v = sc->words[(k->off[i] / 8) & (TP_KSTACK_BYTES / 8 - 1)];
		if (v != k->ip[i]) {
			ok = 0;
			break;
		}
		out[i] = v;
	}
	barrier();
	if (ok && k->seq == seq) {
		bump(TP_SCH_KSTACK_CACHED);
		offs = k->off;
		n = nr;
		goto learn;
	}
walk:
	bump(TP_SCH_KSTACK_WALKED);
	n = bpf_get_task_stack(t, out, TP_MAX_STACK_DEPTH * 8, 0);
	if (n <= 0)
		return n < 0 ? -1 : 0;
	n /= 8;
	if (!sc || !k || !depth || n > TP_KSTACK_FRAMES)
		return n;
	/* where each return address is on the stack, in order, leaf (lowest address) first */
	len = TP_THREAD_SIZE_MIN - depth;
	if (len > TP_KSTACK_BYTES)
		len = TP_KSTACK_BYTES;
	if (bpf_probe_read_kernel(sc->words, len, (void *)ksp))
		return n;
	scan.sc = sc;
	scan.want = n;
	bpf_loop(len / 8, kstack_scan_step, &scan, 0);
	if (scan.nr != n)
		return n;
	/* replace the entry: seq odd while it is written */
	seq = k->seq | 1;
	k->seq = seq;
	barrier();
	k->depth = depth;
	k->syscall_nr = (__s32)syscall_nr;
	k->nr = n;
	__builtin_memcpy(k->off, sc->k.off, sizeof(k->off));
	__builtin_memcpy(k->ip, sc->k.ip, sizeof(k->ip));
	barrier();
	k->seq = seq + 1;
	offs = sc->k.off;
	seq = 0; /* this CPU's own walk: nothing to check again */
learn:
	/* the thread's own copy, for its next block at the same user registers: verified at its
	 * switch-out (early_kernel_stack) */
	if (e && n <= TP_EARLY_KFRAMES) {
		for (i = 0; i < TP_EARLY_KFRAMES; i++) {
			if (i >= n)
				break;
			e->k[i].ip = out[i];
			e->k[i].off = offs[i];
			e->k[i].boff = (__u16)(depth + offs[i]);
		}
		barrier();
		/* from the shared entry: still the one verified (a walk replacing it meanwhile
		 * would have left other places: then no copy) */
		e->k_nr = !seq || (k && k->seq == seq) ? n : 0;
		e->k_syscall = (__s32)syscall_nr;
		e->sent_ns = 0; /* k changed */
		*from_e = n && e->k_nr == n;
	}
	return n;
}

/* The off-CPU sample of pending block pd of thread tid (task t, the current one at sys_exit), in
 * o, kernel stack and labels filled; no user stack yet. */
static __always_inline void sample_of(struct tp_sample *o, struct tp_pending *pd, __u32 tid,
				      struct task_struct *t)
{
	__u32 nk = pd->nr_kernel;

	o->hdr.kind = TP_EV_OFFCPU;
	o->hdr.pid = pd->pid;
	o->hdr.ts_ns = pd->ts_ns;
	o->hdr.start_ns = pd->start_ns;
	o->tid = tid;
	o->cpu = pd->cpu;
	o->flags = pd->flags;
	o->stage = pd->stage;
	o->pad = 0;
	o->nr_python = 0;
	o->blocked_ns = pd->blocked_ns;
	o->nr_kernel = nk < TP_PENDING_KFRAMES ? nk : TP_PENDING_KFRAMES;
	o->nr_user = 0;
	__builtin_memcpy(o->addrs, pd->kaddrs, sizeof(pd->kaddrs));
	comms(o, t);
}

/* The frames of cached walk u into out when it is the walk of (procs, pid, pc, sp, bp) and every
 * word it read reads the same again. Returns frames, 0: not usable. */
static __always_inline __u32 ustack_cached(struct tp_ustack *u, struct tp_proc_mappings *procs,
					   __u32 pid, __u64 pc, __u64 sp, __u64 bp, __u64 *out,
					   struct tp_ustack_scratch *sc)
{
	__u32 seq = u->seq, nr, nw, i, len;

	barrier();
	nr = u->nr;
	nw = u->nr_words;
	if ((seq & 1) || !nr || nr > TP_USTACK_FRAMES || nw > TP_UNWIND_LOG_WORDS ||
	    u->pid != pid || u->start_ns != procs->start_ns || u->gen != procs->gen ||
	    u->pc != pc || u->sp != sp || u->bp != bp)
		return 0;
	len = u->span_len & (TP_USTACK_SPAN - 1); /* the mask bounds it for the verifier */
	if (len && bpf_probe_read_user(sc->span, len, (void *)u->span_lo))
		return 0;
	/* plain loads from the span's copy, not a bpf_loop callback a word: where indirect calls
	 * go through retpolines and returns through the SRSO thunk, those cost more than the
	 * words */
	for (i = 0; i < TP_UNWIND_LOG_WORDS; i++) {
		__u64 v;

		if (i >= nw)
			break;
		if (len)
			v = sc->span[((u->addr[i] - u->span_lo) / 8) & (TP_USTACK_SPAN / 8 - 1)];
		else if (bpf_probe_read_user(&v, sizeof(v), (void *)u->addr[i]))
			return 0;
		if (v != u->val[i])
			return 0;
	}
	for (i = 0; i < TP_USTACK_FRAMES; i++) {
		if (i >= nr)
			break;
		out[i] = u->frames[i];
	}
	barrier();
	return u->seq == seq ? nr : 0;
}

/* The user stack of the current thread at its syscall's return into out (TP_MAX_STACK_DEPTH
 * slots), walked with the process's unwind tables procs: from ustack_cache when every word the
 * cached walk read still reads the same, else walked (and cached). Returns frames; *flags gets
 * TP_SAMPLE_USTACK_TRUNCATED. */
static __always_inline __u32 user_stack(struct tp_proc_mappings *procs, __u32 pid, __u64 pc,
					__u64 sp, __u64 bp, __u64 *out, __u32 *flags,
					struct tp_ustack_scratch *sc, __u32 rec)
{
	__u32 idx = mix64(sp ^ (pc << 7) ^ ((__u64)pid << 40)) & (TP_USTACK_ENTRIES - 1);
	struct tp_ustack *u = bpf_map_lookup_elem(&ustack_cache, &idx);
	struct tp_unwind_result *res = &sc->res;
	struct tp_unwind_log *log;
	__u32 nr, seq, i, slen;

	if (!u)
		return 0;
	log = &sc->log;
	nr = ustack_cached(u, procs, pid, pc, sp, bp, out, sc);
	if (nr) {
		bump(TP_SCH_USTACK_CACHED);
		/* what verified it, for the caller to keep: copied, then the entry checked to be
		 * the same walk still (another CPU may replace it meanwhile) */
		seq = u->seq;
		barrier();
		if (rec && u->span_len && !(seq & 1)) {
			log->n = u->nr_words;
			for (i = 0; i < TP_UNWIND_LOG_WORDS; i++) {
				if (i >= log->n)
					break;
				log->addr[i] = u->addr[i];
				log->val[i] = u->val[i];
			}
			sc->rec_span_lo = u->span_lo;
			sc->rec_span_len = u->span_len;
			barrier();
			sc->rec_ok = u->seq == seq && u->pid == pid && u->pc == pc && u->sp == sp &&
				     u->bp == bp;
		}
		goto out;
	}
	bump(TP_SCH_USTACK_WALKED);
	tp_unwind_log_reset(log);
	__builtin_memset(res, 0, sizeof(*res));
	tp_unwind_user(procs, pc, sp, bp, out, res, log, 1);
	if (res->reason == TP_UNWIND_TRUNCATED)
		*flags |= TP_SAMPLE_USTACK_TRUNCATED;
	/* a PC in no mapping of the process's tables (read while it was still being mapped, in
	 * its dynamic loader, say): tailprofd reads its maps again, as for a CPU sample. Without
	 * this a thread that mostly blocks kept its leaf alone until a CPU sample said so */
	if (res->reason == TP_UNWIND_NO_MAPPING)
		*flags |= TP_SAMPLE_UNWIND_RESCAN;
	nr = res->nr > TP_MAX_STACK_DEPTH ? TP_MAX_STACK_DEPTH : res->nr;
	/* cache walks that the words read decide: not those cut by a failed read or an unknown
	 * mapping (they change as the process maps and touches memory) */
	if (log->full || !nr || nr > TP_USTACK_FRAMES ||
	    (res->reason != TP_UNWIND_END && res->reason != TP_UNWIND_BAD_FRAME &&
	     res->reason != TP_UNWIND_UNSUPPORTED))
		return nr;
	slen = !log->unaligned && log->hi > log->lo && log->hi - log->lo < TP_USTACK_SPAN
		   ? (__u32)(log->hi - log->lo)
		   : 0;
	seq = u->seq | 1;
	u->seq = seq;
	barrier();
	u->span_lo = log->lo;
	u->span_len = slen;
	u->pid = pid;
	u->start_ns = procs->start_ns;
	u->gen = procs->gen;
	u->pc = pc;
	u->sp = sp;
	u->bp = bp;
	u->nr = nr;
	u->used_fp = res->used_fp;
	u->nr_words = log->n;
	for (i = 0; i < TP_USTACK_FRAMES; i++) {
		if (i >= nr)
			break;
		u->frames[i] = out[i];
	}
	__builtin_memcpy(u->addr, log->addr, sizeof(u->addr));
	__builtin_memcpy(u->val, log->val, sizeof(u->val));
	barrier();
	u->seq = seq + 1;
	/* this CPU's walk (another may replace the entry already) */
	if (!rec || !slen)
		return nr;
	sc->rec_span_lo = log->lo;
	sc->rec_span_len = slen;
	sc->rec_ok = 1;
out:
	sc->rec_pc = pc;
	sc->rec_sp = sp;
	sc->rec_bp = bp;
	sc->rec_start_ns = procs->start_ns;
	sc->rec_gen = procs->gen;
	return nr;
}

/* The syscall a thread blocks in, from regs, its user registers at its entry to the kernel: a
 * syscall while orig_ax is a number (the entry of an exception or interrupt leaves -1 there) and
 * ax still holds the -ENOSYS the syscall entry puts there (a block after the syscall has set its
 * result, on the way out, is not in it); otherwise -1. */
static __always_inline __s64 blocked_syscall(struct pt_regs *regs)
{
	__s64 nr = regs->orig_ax;

	return nr >= 0 && (__s64)regs->ax == -38 /* -ENOSYS */ ? nr : -1;
}

/* The syscall a thread blocks in (blocked_syscall), and its user registers then (for the
 * prediction), into st. */
static __always_inline void read_block_regs(struct tp_sched_task *st, struct pt_regs *regs)
{
	st->syscall_nr = blocked_syscall(regs);
	st->block_ip = regs->ip;
	st->block_sp = regs->sp;
}

/* The user stack of the current thread, from the user registers it entered the kernel with,
 * into ustack_scratch entry key (frames, flags): with unwind tables where its process has them,
 * else (tables_only 0) by frame pointers. Returns frames (0: none).
 *
 * A global function: the verifier checks it once, not once per caller (sched_switch at a
 * blocking switch-out, sys_exit, the task work), which together would pass its limit. */
__noinline int current_user_stack(__u32 key, __u32 tables_only)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	struct tp_ustack_scratch *sc = bpf_map_lookup_elem(&ustack_scratch, &key);
	struct tp_proc_mappings *procs = NULL;
	__u32 pid = t->tgid, flags = 0;
	long n;

	if (!regs || !sc)
		return 0;
	sc->flags = 0;
	sc->rec_ok = 0;
	if (unwind_tables_on) {
		sc->rec_epoch = tp_unwind_epoch();
		procs = bpf_map_lookup_elem(&unwind_procs, &pid);
	}
	if (procs && procs->start_ns == process_start_ns(t)) {
		flags |= TP_SAMPLE_UNWIND_TABLES;
		n = user_stack(procs, pid, regs->ip, regs->sp, regs->bp, sc->frames, &flags, sc,
			       key == TP_USCRATCH_SWITCH);
	} else if (tables_only) {
		return 0;
	} else {
		/* With unwind tables on, the process's are not loaded yet (a new process, for its
		 * first tenths of a second): a frame-pointer walk through code built without frame
		 * pointers would skip callers and make up edges, which a long block weighs
		 * heavily. The leaf only, marked cut. */
		n = bpf_get_task_stack(t, sc->frames, unwind_tables_on ? 8 : sizeof(sc->frames),
				       BPF_F_USER_STACK);
		if (n < 0) {
			flags |= TP_SAMPLE_USTACK_FAILED;
			n = 0;
		}
		n /= 8;
		if (n >= TP_MAX_STACK_DEPTH || (n && unwind_tables_on))
			flags |= TP_SAMPLE_USTACK_TRUNCATED;
	}
	sc->flags = flags;
	return n > TP_MAX_STACK_DEPTH ? TP_MAX_STACK_DEPTH : n;
}

/* The Python frames of the current thread into ustack_scratch entry key (py, nr_py), when its
 * process runs a Python tailprofd gave to py_procs. Returns TP_SAMPLE_PY_* flags (PY_NEW: the
 * record must wake user space). A global function, verified once; its BPF stack (the walk's
 * state) is not its callers'. */
__noinline int current_python_stack(__u32 key)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tp_ustack_scratch *sc = bpf_map_lookup_elem(&ustack_scratch, &key);
	enum tp_py_result r;
	__u32 flags = 0;

	if (!sc)
		return 0;
	sc->nr_py = 0;
	if (!python_on)
		return 0;
	r = tp_py_walk(t->tgid, process_start_ns(t), tp_py_current_tid(), sc->py, &sc->nr_py,
		       &flags);
	if (r == TP_PY_FAILED)
		flags |= TP_SAMPLE_PY_FAILED;
	else if (r == TP_PY_TRUNCATED)
		flags |= TP_SAMPLE_PY_TRUNCATED;
	return flags;
}

/* The user stack of the current thread (back on its way to user space) into o, after its kernel
 * frames, and its Python frames after those. */
static __always_inline void take_user_stack(struct tp_sample *o)
{
	__u32 key = TP_USCRATCH_RETURN, nk = o->nr_kernel, n = current_user_stack(key, 0);
	struct tp_ustack_scratch *sc = bpf_map_lookup_elem(&ustack_scratch, &key);

	o->nr_user = 0;
	if (!sc)
		return;
	o->flags |= sc->flags;
	n = n < TP_MAX_STACK_DEPTH ? n : TP_MAX_STACK_DEPTH;
	barrier_var(n);
	nk = nk < TP_MAX_STACK_DEPTH ? nk : TP_MAX_STACK_DEPTH;
	barrier_var(nk);
	if (n > 0 && !bpf_probe_read_kernel(&o->addrs[nk], n * 8, sc->frames))
		o->nr_user = n;
	o->nr_python = 0;
	if (python_on) {
		__u32 npy, at;

		o->flags |= current_python_stack(key);
		npy = sc->nr_py;
		npy = npy < TP_PY_MAX_FRAMES ? npy : TP_PY_MAX_FRAMES;
		barrier_var(npy);
		at = nk + o->nr_user;
		at = at < 2 * TP_MAX_STACK_DEPTH ? at : 2 * TP_MAX_STACK_DEPTH;
		barrier_var(at);
		if (npy > 0 && !bpf_probe_read_kernel(&o->addrs[at], npy * 16, sc->py))
			o->nr_python = npy;
	}
}

/* Tells tailprofd at once (TP_EV_SEEN, waking it) of the process of prev, which blocks now, when
 * it does not know it yet: it then loads the process's unwind tables while the thread waits, so
 * that even a new process's first long block gets its whole user stack on its way back. Once
 * per thread and image (st->known_mm: a thread that blocked in a syscall before it exec'd must
 * tell of its new image too); the caller tests that with one compare. */
static __always_inline void note_process(struct task_struct *prev, struct tp_sched_task *st)
{
	__u64 start = process_start_ns(prev);
	struct tp_event_hdr ev;
	__u32 pid = prev->tgid;
	struct pt_regs *regs;
	__u64 *known;
	__s64 nr;

	known = bpf_map_lookup_elem(&known_procs, &pid);
	if (known && *known == start) {
		st->known_start = start;
		st->known_mm = (__u64)prev->mm;
		return;
	}
	/* Only a block in a syscall other than an exec: a new process blocks in page faults
	 * while the kernel and the dynamic loader map it, and maps read then would lack its
	 * libraries (its later blocks in them would keep only their leaf). */
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (!regs)
		return;
	nr = blocked_syscall(regs);
	if (nr < 0 || nr == TP_NR_EXECVE || nr == TP_NR_EXECVEAT)
		return;
	/* told: from now on as if known (its samples need not wake tailprofd again) */
	st->known_start = start;
	st->known_mm = (__u64)prev->mm;
	ev.kind = TP_EV_SEEN;
	ev.pid = pid;
	ev.ts_ns = 0;
	ev.start_ns = start;
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), BPF_RB_FORCE_WAKEUP))
		bump(TP_SCH_RINGBUF_FULL);
}

/* Whether the user stack of the current thread (of process pid, with user registers ip, sp and bp)
 * is e's again: its registers are those e's walk started from, its process's unwind tables
 * unchanged, and every word the walk read reads the same (one read of their span, then plain
 * loads). Returns 1 or 0. A global function: verified once. */
__noinline int user_stack_again(struct tp_early_stacks *e, __u64 ip, __u64 sp, __u64 bp, __u32 pid)
{
	__u32 key = TP_USCRATCH_SWITCH, nw, len, i;
	struct tp_ustack_scratch *sc = bpf_map_lookup_elem(&ustack_scratch, &key);
	struct tp_proc_mappings *procs;
	__u64 epoch;

	if (!e || !sc || !e->u_ok || e->u_pc != ip || e->u_sp != sp || e->u_bp != bp)
		return 0;
	/* its process's tables as they were: unchanged since the epoch they were last found so at
	 * (a lookup less: 0.14 us), else looked up */
	epoch = tp_unwind_epoch();
	if (epoch != e->u_epoch) {
		procs = bpf_map_lookup_elem(&unwind_procs, &pid);
		if (!procs || procs->start_ns != e->u_start_ns || procs->gen != e->u_gen)
			return 0;
		e->u_epoch = epoch;
	}
	nw = e->u_nw;
	len = e->u_span_len & (TP_USTACK_SPAN - 1);
	if (!len || nw > TP_UNWIND_LOG_WORDS ||
	    bpf_probe_read_user(sc->span, len, (void *)e->u_span_lo))
		return 0;
	for (i = 0; i < TP_UNWIND_LOG_WORDS; i++) {
		if (i >= nw)
			break;
		if (sc->span[(e->u_off[i] / 8) & (TP_USTACK_SPAN / 8 - 1)] != e->u_val[i])
			return 0;
	}
	return 1;
}

/* Keeps in e how to verify the walk current_user_stack(TP_USCRATCH_SWITCH, ...) just took (its
 * rec_* and log), or marks e as having none. Returns 1 (kept) or 0. A global function: verified
 * once. */
__noinline int user_stack_keep(struct tp_early_stacks *e)
{
	__u32 key = TP_USCRATCH_SWITCH, nw, i;
	struct tp_ustack_scratch *sc = bpf_map_lookup_elem(&ustack_scratch, &key);
	__u64 off;

	if (!e)
		return 0;
	e->u_ok = 0;
	if (!sc || !sc->rec_ok)
		return 0;
	nw = sc->log.n;
	if (nw > TP_UNWIND_LOG_WORDS || sc->rec_span_len >= TP_USTACK_SPAN)
		return 0;
	for (i = 0; i < TP_UNWIND_LOG_WORDS; i++) {
		if (i >= nw)
			break;
		off = sc->log.addr[i] - sc->rec_span_lo;
		if (off >= sc->rec_span_len)
			return 0;
		e->u_off[i] = (__u16)off;
		e->u_val[i] = sc->log.val[i];
	}
	e->u_nw = nw;
	e->u_pc = sc->rec_pc;
	e->u_sp = sc->rec_sp;
	e->u_bp = sc->rec_bp;
	e->u_span_lo = sc->rec_span_lo;
	e->u_span_len = sc->rec_span_len;
	e->u_start_ns = sc->rec_start_ns;
	e->u_gen = sc->rec_gen;
	e->u_epoch = sc->rec_epoch;
	e->u_ok = 1;
	return 1;
}

/* The stacks of prev (user registers regs), which blocks now in syscall st->syscall_nr and is the
 * current thread, into its sched_early (struct tp_early_stacks): its last captured block had the
 * same user registers, so this one is likely long too. Sets TP_EARLY_KERNEL where its own kernel
 * stack is verified in place, and TP_EARLY_USER where its own user stack is verified again or a new
 * one is walked: not without its process's unwind tables (then it is taken on the way back, when
 * they may be loaded). */
static __always_inline void early_stacks(struct task_struct *prev, struct tp_sched_task *st,
					 struct pt_regs *regs)
{
	__u64 d = switch_sp_from_ctx, sp, base = task_stack_base(prev);
	__u32 key = TP_USCRATCH_SWITCH, n;
	struct tp_ustack_scratch *sc;
	struct tp_early_stacks *e;

	e = bpf_task_storage_get(&sched_early, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!e)
		return;
	/* read back from memory: a scalar now, not the ctx pointer */
	sp = *(volatile __u64 *)&st->out_ctx + d;
	if (d && sp > base && early_kernel_stack(e, sp, sp - base, st->syscall_nr)) {
		st->early_ksp = sp;
		st->early |= TP_EARLY_KERNEL;
	}
	if (!unwind_tables_on)
		return;
	/* a Python process's user stack goes with its Python frames, on the way back */
	if (python_on) {
		__u32 tgid = prev->tgid;

		if (bpf_map_lookup_elem(&py_procs, &tgid))
			return;
	}
	/* the user stack it took last time at this place, where every word that walk read is
	 * unchanged: nothing to copy */
	if (e->nr && user_stack_again(e, regs->ip, regs->sp, regs->bp, prev->tgid)) {
		bump(TP_SCH_USTACK_EARLY);
		st->early |= TP_EARLY_USER | TP_EARLY_AGAIN;
		return;
	}
	e->sent_ns = 0; /* its frames change */
	n = current_user_stack(key, 1);
	sc = bpf_map_lookup_elem(&ustack_scratch, &key);
	/* clamped in its own register: the verifier knows nothing of a global function's result */
	n = n < TP_USTACK_EARLY_FRAMES ? n : TP_USTACK_EARLY_FRAMES;
	barrier_var(n);
	e->nr = 0;
	if (!n || !sc || bpf_probe_read_kernel(e->frames, n * 8, sc->frames))
		return;
	e->nr = n;
	e->flags = sc->flags;
	user_stack_keep(e);
	st->early |= TP_EARLY_USER;
}

/* Learns switch_sp_from_ctx from thread t, switched in after a blocking switch-out whose
 * tracepoint arguments were at st->out_ctx. */
static __always_inline void learn_switch_sp(struct task_struct *t, struct tp_sched_task *st)
{
	__u64 sp = t->thread.sp, a = *(volatile __u64 *)&st->out_ctx;

	/* a few frames apart (bpf_trace_run4, the tracepoint's iterator, __schedule's call of
	 * __switch_to_asm) */
	if (a && sp > a && sp - a < 1024)
		switch_sp_from_ctx = sp - a;
}

/* Fills in o (kernel stack filled) the user stack taken at the switch-out, from e. Returns 0, or
 * -1 when there is none. */
static __always_inline int put_early_user_stack(struct tp_sample *o, struct tp_early_stacks *e)
{
	__u32 nk = o->nr_kernel, nu;

	if (!e)
		return -1;
	nu = e->nr;
	if (!nu || nu > TP_USTACK_EARLY_FRAMES)
		return -1;
	if (nk > TP_MAX_STACK_DEPTH)
		nk = TP_MAX_STACK_DEPTH;
	if (bpf_probe_read_kernel(&o->addrs[nk], nu * 8, e->frames))
		return -1;
	o->nr_user = nu;
	o->flags |= e->flags;
	return 0;
}

/* Whether kernel stacks a (na frames) and b (nb) are the same, where neither failed (0 frames). */
static __always_inline bool same_kstack(const __u64 *a, __u32 na, const __u64 *b, __u32 nb)
{
	if (!na || na != nb)
		return false;
	for (__u32 i = 0; i < TP_MAX_STACK_DEPTH; i++) {
		if (i >= na)
			break;
		if (a[i] != b[i])
			return false;
	}
	return true;
}

/* Whether the kernel stack of waiting block pd is o's (o->nr_kernel frames). Returns 1 or 0.
 * A global function, verified on its own: inlined, clang merged it with same_kstack() on a
 * sample (up to TP_MAX_STACK_DEPTH frames) into one loop, and Linux 6.1's verifier then saw
 * pd's TP_PENDING_KFRAMES-frame array read up to the sample's bound. */
__noinline int same_pending_kstack(struct tp_pending *pd, struct tp_sample *o)
{
	__u32 n, i;

	if (!pd || !o)
		return 0;
	n = pd->nr_kernel;
	if (!n || n != o->nr_kernel || n > TP_PENDING_KFRAMES)
		return 0;
	for (i = 0; i < TP_PENDING_KFRAMES; i++) {
		if (i >= n)
			break;
		if (pd->kaddrs[i] != o->addrs[i])
			return 0;
	}
	return 1;
}

/* Marks o as having no user stack (TP_SAMPLE_NO_USER_STACK). */
static __always_inline void no_user_stack(struct tp_sample *o)
{
	o->flags |= TP_SAMPLE_NO_USER_STACK;
	o->nr_user = 0;
}

/* The user stack of thread t (current, on its way back to user space from syscall nr, which
 * st says it blocked in) into o, or o marked without one. */
static __always_inline void finish_user_stack(struct tp_sample *o, struct task_struct *t,
					      struct tp_sched_task *st, __s64 nr)
{
	if (nr != st->syscall_nr) {
		bump(TP_SCH_SYSCALL_CHANGED);
		no_user_stack(o);
	} else if (nr == TP_NR_EXECVE || nr == TP_NR_EXECVEAT) {
		/* it returns into the new program: the stack it blocked with is gone */
		no_user_stack(o);
	} else {
		take_user_stack(o);
	}
}

/* Sends tw_pending entry w of thread tid (st: its state, or NULL) and deletes it, which cancels
 * its task work where that has not run. */
static __always_inline void release_tw(struct tp_tw_pending *w, __u32 tid, struct tp_sched_task *st)
{
	send(&w->s, st);
	if (!bpf_map_delete_elem(&tw_pending, &tid))
		__sync_fetch_and_add(&nr_pending, -1);
}

/* The task work of a tw_pending entry: its thread, current, is on its way back to user space. */
static int tw_returned(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tp_tw_pending *w = value;
	__u32 tid = *(__u32 *)key;
	struct tp_sched_task *st;
	struct pt_regs *regs;

	st = bpf_task_storage_get(&sched_tasks, t, 0, 0);
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	if (st)
		st->pending = 0;
	/* tid is the key: the thread's pid then, its leader's now if it has exec'd meanwhile
	 * (finish_user_stack then sees execve) */
	if (st && regs)
		finish_user_stack(&w->s, t, st, regs->orig_ax);
	else
		no_user_stack(&w->s);
	release_tw(w, tid, st);
	return 0;
}

/* Holds sample o (kernel stack filled) of thread tid (task t) in tw_pending (o is the
 * tw_scratch entry's sample) with a task work that takes the user stack on t's way back to
 * user space. Returns 0, or -1 when it could not (no room, no task work). */
static __always_inline int hold_task_work(struct tp_tw_pending *w, __u32 tid, struct task_struct *t)
{
	struct tp_tw_pending *e;

	if (!bpf_ksym_exists_tp(bpf_task_work_schedule_resume_impl))
		return -1;
	if (bpf_map_update_elem(&tw_pending, &tid, w, BPF_NOEXIST)) {
		bump(TP_SCH_PENDING_FULL);
		return -1;
	}
	e = bpf_map_lookup_elem(&tw_pending, &tid);
	if (!e)
		return -1;
	if (bpf_task_work_schedule_resume_impl(t, &e->tw, &tw_pending, tw_returned, NULL)) {
		bpf_map_delete_elem(&tw_pending, &tid);
		return -1;
	}
	return 0;
}

/* Holds sample o (kernel stack filled) of thread tid in `pending` until its syscall returns.
 * Returns 0, or -1 when it does not fit (no room, or a kernel stack too deep). */
static __always_inline int hold(struct tp_sample *o, __u32 tid)
{
	__u32 key = TP_SCRATCH_HOLD, nk = o->nr_kernel;
	struct tp_sample *sc;
	struct tp_pending *pd;

	if (nk > TP_PENDING_KFRAMES)
		return -1;
	/* built in a scratch sample's tail, and copied by the update */
	sc = bpf_map_lookup_elem(&off_scratch, &key);
	if (!sc)
		return -1;
	pd = (struct tp_pending *)&sc->addrs[TP_MAX_STACK_DEPTH];
	pd->ts_ns = o->hdr.ts_ns;
	pd->start_ns = o->hdr.start_ns;
	pd->blocked_ns = o->blocked_ns;
	pd->pid = o->hdr.pid;
	pd->cpu = o->cpu;
	pd->flags = o->flags;
	pd->stage = o->stage;
	pd->nr_kernel = nk;
	pd->pad = 0;
	__builtin_memcpy(pd->kaddrs, o->addrs, sizeof(pd->kaddrs));
	if (bpf_map_update_elem(&pending, &tid, pd, BPF_ANY)) {
		bump(TP_SCH_PENDING_FULL);
		return -1;
	}
	return 0;
}

/* Sends o now, without a user stack (st as send() takes it). */
static __always_inline void send_no_user(struct tp_sample *o, struct task_struct *t,
					 struct tp_sched_task *st)
{
	o->nr_user = 0;
	o->flags |= t->mm ? TP_SAMPLE_NO_USER_STACK : TP_SAMPLE_KERNEL_THREAD;
	send(o, st);
}

/* This CPU's offcpu_slot, free for a new capture: a block it still holds (its thread was
 * preempted or migrated before its syscall returned) moves to `pending`. NULL: not free. */
static __always_inline struct tp_offcpu_slot *free_slot(void)
{
	__u32 zero = 0, old;
	struct tp_offcpu_slot *sl = bpf_map_lookup_elem(&offcpu_slot, &zero);
	int held;

	if (!sl)
		return NULL;
	old = sl->tid;
	if (!old)
		return sl;
	if (old == TP_SLOT_BUSY)
		return NULL; /* another CPU is taking it out */
	/* Copied to `pending` before the slot is claimed: its thread, returning on another CPU,
	 * either claims the slot first (and this copy is deleted) or finds the copy there. */
	held = !hold(&sl->s, old);
	if (__sync_val_compare_and_swap(&sl->tid, old, TP_SLOT_BUSY) != old) {
		if (held)
			bpf_map_delete_elem(&pending, &old);
		return NULL;
	}
	if (!held) { /* no room: sent with its kernel stack at least */
		no_user_stack(&sl->s);
		send(&sl->s, NULL);
		__sync_fetch_and_add(&nr_pending, -1);
	}
	barrier();
	sl->tid = 0;
	return sl;
}

/* A block of next that ended at mono (CLOCK_MONOTONIC) after blocked_ns: captured with its kernel
 * stack, and held (in this CPU's offcpu_slot, else in `pending`, or with a task work where
 * task_work, a constant) until the thread is back at its syscall's return. early: what its
 * switch-out took (TP_EARLY_*). This CPU's sched_cpu is looked up here (capture() and
 * capture_tw() take at most five arguments). */
static __always_inline void capture_block(struct task_struct *next, struct tp_sched_task *st,
					  __u64 blocked_ns, __u64 mono, __u32 early,
					  const bool task_work)
{
	__u32 key = TP_SCRATCH_SWITCH, zero = 0, tid = next->pid, cpu = bpf_get_smp_processor_id();
	struct tp_sched_cpu *c = bpf_map_lookup_elem(&sched_cpu, &zero);
	struct tp_offcpu_slot *sl = NULL;
	struct tp_pending *again_pd = NULL;
	struct tp_sample *again = NULL;
	struct tp_tw_pending *w = NULL;
	__u32 twice = 0, from_e = 0;
	struct tp_early_stacks *e;
	struct tp_sample *o;
	bool user;
	long n;

	if (st->pending) {
		/* blocked again in the syscall whose captured block waits for its user stack (kept
		 * under the tid it had then: in an exec it may have taken its leader's pid since):
		 * its kernel stack decides, below */
		__u32 key_tid = st->key_tid;

		if (task_work) {
			w = bpf_map_lookup_elem(&tw_pending, &key_tid);
			if (w)
				again = &w->s;
		}
		if (!again && st->slot_cpu != TP_NO_SLOT) {
			sl = bpf_map_lookup_percpu_elem(&offcpu_slot, &zero, st->slot_cpu);
			if (sl && sl->tid == key_tid)
				again = &sl->s;
		}
		if (!again)
			again_pd = bpf_map_lookup_elem(&pending, &key_tid);
		if (again || again_pd)
			twice = 1;
		else
			st->pending = 0;
	}
	barrier_var(twice); /* a flag: the verifier forbids or-ing the two pointers */
	/* its registers, unless its switch-out read them (predicted), or it blocks again in the
	 * syscall of a waiting sample (whose return is checked against st->syscall_nr) */
	if (!(early & TP_EARLY_REGS) && !twice) {
		struct pt_regs *regs = next->mm ? (struct pt_regs *)bpf_task_pt_regs(next) : NULL;

		st->syscall_nr = -1;
		if (regs)
			read_block_regs(st, regs);
	}
	/* a user thread back to user space from this syscall (not an io_uring or vhost worker,
	 * which never returns there, nor a block outside a syscall, a page fault) */
	user = next->mm && !(next->flags & (TP_PF_IO_WORKER | TP_PF_USER_WORKER)) &&
	       st->syscall_nr >= 0;
	/* the sample is built where it waits: the tw_pending entry in the making, this CPU's
	 * offcpu_slot (sys_exit), or, when it is sent from here, a scratch */
	if (twice) {
		user = false;
		o = bpf_map_lookup_elem(&off_scratch, &key);
	} else if (task_work) {
		w = bpf_map_lookup_elem(&tw_scratch, &zero);
		o = w ? &w->s : NULL;
	} else {
		if (user && !early)
			sl = free_slot();
		o = sl ? &sl->s : bpf_map_lookup_elem(&off_scratch, &key);
	}
	if (!o)
		return;
	if (!twice)
		bump(TP_SCH_CAPTURED);
	o->hdr.kind = TP_EV_OFFCPU;
	o->hdr.pid = next->tgid;
	o->hdr.ts_ns = mono; /* the window: where it woke */
	o->hdr.start_ns = process_start_ns(next);
	o->tid = tid;
	o->cpu = cpu;
	o->flags = 0;
	o->pad = 0;
	o->nr_python = 0;
	o->nr_user = 0;
	o->blocked_ns = blocked_ns;
	/* the labels of the stage and GC pause it blocked in */
	o->stage = tp_stage_of(next);
	if (tp_in_gc(o->hdr.pid))
		o->flags |= TP_SAMPLE_IN_GC;
	comms(o, next);
	if (!switch_sp_from_ctx)
		learn_switch_sp(next, st);
	/* a user thread's stacks taken at switch-out, and its copy of this kernel stack (for the
	 * next block at the same user registers) */
	e = user ? bpf_task_storage_get(&sched_early, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE)
		 : NULL;
	/* Both stacks verified where it blocked as those of its last sample, sent less than a
	 * drain period ago: a repeat, without frames (tailprofd keeps that sample's stacks). */
	if (e && (early & TP_EARLY_KERNEL) && (early & TP_EARLY_AGAIN) && e->sent_ns &&
	    mono - e->sent_ns < slot_ns && next->thread.sp == st->early_ksp) {
		o->nr_kernel = 0;
		o->flags |= TP_SAMPLE_REPEAT | e->flags;
		bump(TP_SCH_KSTACK_EARLY);
		bump(TP_SCH_EARLY_USTACK);
		bump(TP_SCH_REPEAT);
		send(o, st);
		return;
	}
	n = kernel_stack(next, st, early, st->syscall_nr, o->addrs, e, &from_e);
	if (n < 0) {
		o->flags |= TP_SAMPLE_KSTACK_FAILED;
		n = 0;
	}
	if (n > TP_MAX_STACK_DEPTH)
		n = TP_MAX_STACK_DEPTH;
	o->nr_kernel = n;
	/* Blocked again before its syscall returned: on the same kernel path (a wait woken
	 * early, say) it is the same wait, one sample; on another (the copy out faulting, say) a
	 * block of its own, sent now with its kernel stack: the user stack, the syscall's, goes
	 * with the waiting sample. */
	if (twice) {
		if (again ? same_kstack(again->addrs, again->nr_kernel, o->addrs, n)
			  : same_pending_kstack(again_pd, o)) {
			bump(TP_SCH_AGAIN_SAME);
			if (again) {
				again->blocked_ns += blocked_ns;
				again->hdr.ts_ns = mono;
			} else {
				again_pd->blocked_ns += blocked_ns;
				again_pd->ts_ns = mono;
			}
		} else {
			bump(TP_SCH_CAPTURED);
			bump(TP_SCH_AGAIN_OTHER);
			send_no_user(o, next, st);
		}
		return;
	}
	if (!user) {
		send_no_user(o, next, st);
		return;
	}
	/* its user stack taken at switch-out: sent whole */
	if ((early & TP_EARLY_USER) && !put_early_user_stack(o, e)) {
		bump(TP_SCH_EARLY_USTACK);
		/* both stacks are its own copies: its next blocks there may be repeats of it */
		if (from_e)
			o->flags |= TP_SAMPLE_REPEATABLE;
		e->sent_ns = !send(o, st) && from_e ? mono : 0;
		return;
	}
	/* not predicted: its next block here is taken at switch-out; the user stack of this one
	 * on the thread's way back to user space */
	st->long_ip = st->block_ip;
	st->long_sp = st->block_sp;
	if (task_work) {
		if (!w || hold_task_work(w, tid, next)) {
			send_no_user(o, next, st);
			return;
		}
		bump(TP_SCH_TASK_WORK);
		__sync_fetch_and_add(&nr_pending, 1);
		st->pending = 1;
		st->key_tid = tid;
		return;
	}
	bump(TP_SCH_SYS_EXIT);
	if (sl) {
		barrier();
		sl->tid = tid;
		st->slot_cpu = cpu;
	} else if (!hold(o, tid)) {
		st->slot_cpu = TP_NO_SLOT;
	} else {
		send_no_user(o, next, st);
		return;
	}
	__sync_fetch_and_add(&nr_pending, 1);
	st->pending = 1;
	st->key_tid = tid;
	if (c) {
		c->pending_tid = tid;
		c->pending_regs = (__u64)bpf_task_pt_regs(next);
	}
}

/* capture_block() in a function of its own (not inlined). The BPF stack frames of a program and
 * of the functions it calls (bpf_loop callbacks included) add up along each call chain, each
 * rounded up to 32 bytes, and Linux 6.1 and 6.12 allow 512 (from 6.13 tracing programs get a
 * private stack, which hid this): inlined, capture made sched_switch's frame 320 bytes, and
 * with current_user_stack's 232 the chain was 576. Apart, the longest chains are sched_switch
 * (128) -> current_user_stack (224) -> tp_unwind_step (64) -> tp_unwind_row_step (32) = 448 and
 * sched_switch -> capture (256) -> kstack_scan_step (32) = 416. Without task works: sched_switch's.
 */
static __noinline void capture(struct task_struct *next, struct tp_sched_task *st, __u64 blocked_ns,
			       __u64 mono, __u32 early)
{
	capture_block(next, st, blocked_ns, mono, early, false);
}

/* The same with task works: sched_switch_tw's. Kept apart because the task work's callback
 * (tw_returned, which walks the user stack) counts as a call in the stack-depth check of
 * kernels without the kfunc: no kernel before 6.18 ever sees this code. */
static __noinline void capture_tw(struct task_struct *next, struct tp_sched_task *st,
				  __u64 blocked_ns, __u64 mono, __u32 early)
{
	capture_block(next, st, blocked_ns, mono, early, true);
}

/* The part of a wait since lq that sched_info_arrive counts at rq clock clk. */
static __always_inline __u64 runq_here(__u64 lq, __u64 clk)
{
	return lq && clk > lq ? clk - lq : 0;
}

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
 * from `pending` into the exit scratch sample. NULL: gone. */
static __always_inline struct tp_sample *take_pending(struct tp_sched_task *st, __u32 tid,
						      struct task_struct *t,
						      struct tp_offcpu_slot **slp)
{
	__u32 zero = 0, key = TP_SCRATCH_EXIT;
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

/* The return from a syscall: the user stack of a captured block (without use_task_work). One
 * per-CPU load and compare (of the registers it is given: no helper call) unless this is the
 * thread a capture waits for on this CPU. */
SEC("raw_tp/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	__u32 zero = 0;
	struct tp_sched_cpu *c = bpf_map_lookup_elem(&sched_cpu, &zero);
	struct tp_offcpu_slot *sl;
	struct task_struct *t;
	struct tp_sched_task *st;
	struct tp_sample *o;
	__u32 tid;

	/* the registers are the thread's own (the top of its kernel stack) even where it has
	 * taken its leader's pid in an exec meanwhile */
	if (!c || c->pending_regs != (__u64)regs)
		return 0;
	c->pending_tid = 0;
	c->pending_regs = 0;
	t = bpf_get_current_task_btf();
	st = bpf_task_storage_get(&sched_tasks, t, 0, 0);
	if (!st || !st->pending)
		return 0;
	tid = st->key_tid;
	o = take_pending(st, tid, t, &sl);
	if (!o)
		return 0;
	finish_user_stack(o, t, st, BPF_CORE_READ(regs, orig_ax));
	send(o, st);
	release_slot(sl);
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
	o = take_pending(st, st->key_tid, p, &sl);
	if (!o)
		return 0;
	no_user_stack(o);
	send(o, st);
	release_slot(sl);
	return 0;
}
