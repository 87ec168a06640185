/* SPDX-License-Identifier: GPL-2.0-only */
/* The scheduler programs' state (sched.bpf.c): each thread's (task storage: when and where it
 * blocked, its early stacks), each CPU's (its clocks, the slot a capture waits in), the captures
 * waiting for their user stack (pending, offcpu_slot, tw_pending), the run-queue and per-process
 * counts per drain period (runq_hist, sched_ptab, sched_procs), the counters (sched_metrics) and
 * the scratch space. Included by sched.bpf.c only, first of its headers. */
#ifndef TAILPROF_SCHED_STATE_BPF_H
#define TAILPROF_SCHED_STATE_BPF_H

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
	__u32 exiting;		  /* it exits: its samples must not mark its process known */
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
 * and the thread whose capture waits on this CPU for its return from schedule() or its syscall. */
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
	__u64 pending_task; /* its task_struct, which the return from schedule() compares */
	/* the process and its unwind_procs entry's gen (+ 1) that a walk cut at a PC in no mapping
	 * last woke user space for from this CPU: once per entry, not once per block */
	__u32 rescan_pid, rescan_gen;
	/* 1 while a task work (tw_returned) walks a user stack on this CPU: it runs preemptible
	 * (only migration disabled), and the walk's scratch (ustack_scratch[TP_USCRATCH_RETURN],
	 * py_frame_head) is this CPU's, so another thread's task work here must not walk too */
	__u32 return_busy, pad;
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
 * user stack. Written at switch-in, read and deleted by the return program (fexit/schedule or
 * sys_exit), deleted at thread exit. Bounded:
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
 * where use_task_work). Its task work is opaque words of the same size, not a struct
 * bpf_task_work: that field is refused in per-CPU maps (map creation fails with EOPNOTSUPP on
 * 6.18.44-fc-v1272), and this copy's is never scheduled (bpf_map_update_elem skips it). */
struct tp_tw_build {
	__u64 tw[sizeof(struct bpf_task_work) / 8];
	struct tp_sample s;
};
_Static_assert(sizeof(struct tp_tw_build) == sizeof(struct tp_tw_pending) &&
		   __builtin_offsetof(struct tp_tw_build, s) ==
		       __builtin_offsetof(struct tp_tw_pending, s),
	       "tw_scratch holds a tw_pending value");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_tw_build);
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
 * offcpu_slot is not free, the one the return program (fexit/schedule or sys_exit) builds from
 * `pending`, the one thread exit builds so, and the record hold() builds. Each its own: a
 * preemptible kernel may switch (and run the switch and thread exit programs) in the middle of
 * the return program, which fexit/schedule always is (migration off, preemption on). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct tp_sample);
} off_scratch SEC(".maps");

#define TP_SCRATCH_SWITCH 0
#define TP_SCRATCH_EXIT	  1
#define TP_SCRATCH_HOLD	  2 /* hold(): a `pending` record in the making */
#define TP_SCRATCH_THREAD_EXIT 3

#endif
