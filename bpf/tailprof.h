/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The ABI shared by the BPF programs and tailprofd: event records and metric indexes. */
#ifndef TAILPROF_ABI_H
#define TAILPROF_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "tp_hist.h"

/* Frames per stack, kernel and user each; matches the kernel's default perf_event_max_stack. */
#define TP_MAX_STACK_DEPTH 127
#define TP_COMM_LEN	   16
/* Static executables whose layout tailprofd keeps (static_layouts, the symbolizer's table). */
#define TP_STATIC_LAYOUTS 256

/* ---- Python frames (bpf/lib/python.bpf.h) ---- */

/* Python frames per sample at most (innermost kept); deeper stacks are marked
 * TP_SAMPLE_PY_TRUNCATED. */
#define TP_PY_MAX_FRAMES 64 /* a power of two: the walker masks indexes with it */
/* Threads of an interpreter and interpreters of a process searched for the sampled thread. */
#define TP_PY_MAX_THREADS 64
#define TP_PY_MAX_INTERPS 4
/* Offset sets (interpreter versions) that py_offsets holds. */
#define TP_PY_MAX_VERSIONS 8
/* An offset that the version does not have. */
#define TP_PY_NO_OFFSET 0xffff
/* The bytes of a _PyInterpreterFrame the walker reads at once (its header, up to localsplus in
 * 3.11 to 3.13): every frame_* field of tp_py_offsets lies inside (tp_py_frame_fits). */
#define TP_PY_FRAME_HEAD 72

/* One Python frame in tp_sample.addrs: two words. */
struct tp_py_frame {
	__u64 code; /* the PyCodeObject's address in the process */
	/* bits 0..31: the instruction offset in 2-byte code units from the code's first
	 * instruction (prev_instr - _PyCode_CODE(code)), signed: -1 before the first one;
	 * bit 32: is_entry (the frame was entered from C: the eval loop's C frame ends here);
	 * bits 40..47: owner (_PyInterpreterFrame.owner) */
	__u64 info;
};
_Static_assert(sizeof(struct tp_py_frame) == 16, "tp_py_frame layout");

#define TP_PY_INFO_ENTRY       (1ull << 32)
#define TP_PY_INFO_OWNER_SHIFT 40

/* The structure offsets the walker needs for one interpreter version, in bytes (x86-64). Filled
 * by tailprofd (daemon/python.c, derived by tests/tools/py_offsets.c). */
struct tp_py_offsets {
	__u16 runtime_interp_head;  /* _PyRuntimeState.interpreters.head */
	__u16 interp_next;	    /* PyInterpreterState.next */
	__u16 interp_threads_head;  /* PyInterpreterState.threads.head */
	__u16 tstate_next;	    /* PyThreadState.next */
	__u16 tstate_native_tid;    /* PyThreadState.native_thread_id */
	__u16 tstate_cframe;	    /* PyThreadState.cframe; TP_PY_NO_OFFSET: current_frame is
				     * in the thread state itself (3.13) */
	__u16 cframe_current_frame; /* _PyCFrame.current_frame (or PyThreadState's) */
	__u16 frame_code;	    /* _PyInterpreterFrame.f_code */
	__u16 frame_previous;	    /* _PyInterpreterFrame.previous */
	__u16 frame_prev_instr;	    /* _PyInterpreterFrame.prev_instr */
	__u16 frame_is_entry;	    /* _PyInterpreterFrame.is_entry; TP_PY_NO_OFFSET: none */
	__u16 frame_owner;	    /* _PyInterpreterFrame.owner */
	__u16 code_adaptive;	    /* PyCodeObject.co_code_adaptive: the first instruction */
	__u16 pad[3];
};
_Static_assert(sizeof(struct tp_py_offsets) == 32, "tp_py_offsets layout");

/* Whether o's frame fields (8-byte code, previous and prev_instr; 1-byte is_entry and owner) lie
 * in the first TP_PY_FRAME_HEAD bytes of a frame, all the walker reads of one. */
static inline int tp_py_frame_fits(const struct tp_py_offsets *o)
{
	return o->frame_code <= TP_PY_FRAME_HEAD - 8 && o->frame_previous <= TP_PY_FRAME_HEAD - 8 &&
	       o->frame_prev_instr <= TP_PY_FRAME_HEAD - 8 &&
	       (o->frame_is_entry == TP_PY_NO_OFFSET ||
		o->frame_is_entry <= TP_PY_FRAME_HEAD - 1) &&
	       o->frame_owner <= TP_PY_FRAME_HEAD - 1;
}

/* py_procs value: a process running a supported Python. */
struct tp_py_proc {
	__u64 start_ns; /* identifies the process with its pid (tp_event_hdr.start_ns) */
	__u64 runtime;	/* the address of _PyRuntime in the process */
	__u32 version;	/* index into py_offsets */
	__u32 pad;
	__u64 woke_ns; /* BPF's: when a new Python stack of the process last woke user space */
	/* the interpreter file's image in the process [image_lo, image_hi) (0, 0: unknown) and the
	 * file's identity: a stack of code objects all in there is the same stack in every process
	 * of that file (tp_py_stack_end) */
	__u64 image_lo, image_hi, image_key;
};
_Static_assert(sizeof(struct tp_py_proc) == 56, "tp_py_proc layout");

/* The value of py_exes (key tp_file_key): a CPython interpreter executable (_PyRuntime in the
 * executable itself, not a libpython) as a process of it placed its tp_py_proc fields, relative
 * to the start of its code (mm->start_code: its PF_X segments' lowest address, load bias added),
 * so that the exec program sets a new image's py_procs entry with no maps read. */
struct tp_py_exe {
	__u64 runtime_off;		  /* tp_py_proc.runtime - start_code */
	__u64 image_lo_off, image_hi_off; /* tp_py_proc.image_lo/hi - start_code */
	__u64 image_key;
	__u32 version;
	__u32 pad;
};
_Static_assert(sizeof(struct tp_py_exe) == 40, "tp_py_exe layout");

/* The py_seen key of a Python stack, built a frame at a time, innermost first, by BPF's walker
 * and by tailprofd (daemon/python.c) alike: FNV-1a's prime over 64-bit words. Each frame adds its
 * code object's address, as its offset from image_lo when it lies in the interpreter file's
 * image (struct tp_py_proc). A stack wholly in the image ends with the file's image_key (the
 * same in every process of the file), any other with the process (pid and start_ns). */
#define TP_PY_STACK_SEED  0xcbf29ce484222325ULL
#define TP_PY_STACK_PRIME 0x100000001b3ULL
static inline __u64 tp_py_stack_step(__u64 h, __u64 word)
{
	return (h ^ word) * TP_PY_STACK_PRIME;
}
static inline __u64 tp_py_stack_end(__u64 h, int in_image, __u64 image_key, __u32 pid,
				    __u64 start_ns)
{
	return tp_py_stack_step(h, in_image ? image_key : ((__u64)pid << 32 | (__u32)start_ns));
}

/* Kinds of record in the `events` ring buffer; every record starts with struct tp_event_hdr. */
enum tp_event_kind {
	TP_EV_SAMPLE = 1, /* struct tp_sample: one CPU sample of a non-idle task */
	TP_EV_EXEC = 2,	  /* struct tp_exec: the process replaced its image (pid kept) */
	TP_EV_EXIT = 3,	  /* struct tp_event_hdr: the last thread of the process exited */
	TP_EV_FORK = 4,	  /* struct tp_fork: a new process (not a thread) was forked */
	/* struct tp_sample with blocked_ns: a thread woke (hdr.ts_ns, which places it in a window)
	 * from a block of at least offcpu_min_ns, with the stacks it blocked with. Sent by
	 * bpf/sched.bpf.c at wake-up when its user stack was taken at switch-out (or it has none:
	 * TP_SAMPLE_NO_USER_STACK), else on its way back to user space from the syscall, where the
	 * user stack is taken. */
	TP_EV_OFFCPU = 5,
	TP_EV_SEEN = 6, /* struct tp_event_hdr: a thread of a process user space does not know yet
			 * blocks (bpf/sched.bpf.c): read its maps, load its unwind tables */
};

/* Bits of tp_sample.flags. */
#define TP_SAMPLE_KSTACK_FAILED (1u << 0) /* bpf_get_stack on the kernel stack failed */
#define TP_SAMPLE_USTACK_FAILED (1u << 1) /* bpf_get_stack on the user stack failed */
#define TP_SAMPLE_KERNEL_THREAD (1u << 2) /* the task has no user address space */
#define TP_SAMPLE_IN_GC		(1u << 3) /* the process was in a GC pause (gc_pausing) */
/* the user stack went on past TP_MAX_STACK_DEPTH frames (frame pointers: it filled them all) */
#define TP_SAMPLE_USTACK_TRUNCATED (1u << 4)
/* the table unwinder met a PC in no known mapping: user space reads the process's maps again */
#define TP_SAMPLE_UNWIND_RESCAN (1u << 5)
/* the user stack was walked with unwind tables (else by frame pointers, bpf_get_stack) */
#define TP_SAMPLE_UNWIND_TABLES (1u << 6)
#define TP_SAMPLE_NO_USER_STACK (1u << 7) /* off-CPU: blocked outside a syscall, no user stack */
/* off-CPU: user space keeps this sample's stacks for the thread (pid, tid), which its repeats
 * name, until a drain period after its ts_ns */
#define TP_SAMPLE_REPEATABLE (1u << 8)
/* off-CPU: no frames: the stacks are those of the thread's last TP_SAMPLE_REPEATABLE sample,
 * sent less than a drain period before (both verified unchanged where it blocked) */
#define TP_SAMPLE_REPEAT (1u << 9)
/* the Python stack went on past TP_PY_MAX_FRAMES frames (outer ones not sent) */
#define TP_SAMPLE_PY_TRUNCATED (1u << 10)
/* the process runs a known Python, but the thread's PyThreadState was not found (a thread
 * Python does not know, or past TP_PY_MAX_THREADS) or reading its frames failed */
#define TP_SAMPLE_PY_FAILED (1u << 11)
/* a Python stack (code objects) not seen lately in this process: the record wakes user space, so
 * that it reads the code objects while the process lives (a short-lived one included) */
#define TP_SAMPLE_PY_NEW (1u << 12)
/* a CPU sample of a process user space does not know yet, young (young_ns, profile.bpf.c): the
 * record woke nobody for it and did not mark it known; user space makes it known at its first
 * sample past its youth, which wakes it */
#define TP_SAMPLE_YOUNG (1u << 13)

struct tp_event_hdr {
	__u32 kind;	/* enum tp_event_kind */
	__u32 pid;	/* process id (tgid) */
	__u64 ts_ns;	/* CLOCK_MONOTONIC, from bpf_ktime_get_ns() */
	__u64 start_ns; /* start time of the process (group leader start_boottime), identifies it
			   with pid */
};
_Static_assert(sizeof(struct tp_event_hdr) == 24, "tp_event_hdr layout");

/* A new process: until it execs, its memory maps are its parent's. */
#define TP_EXEC_NAME_LEN 64 /* struct tp_fork's and tp_exec's executable names, with the NUL */
struct tp_fork {
	struct tp_event_hdr hdr; /* the child */
	__u32 parent_pid;
	__u32 ns_pid; /* the child's pid in its PID namespace */
	__u64 parent_start_ns;
	/* the child's cgroups and PID namespace, as struct tp_exec's: its parent's, unless it was
	 * cloned into another (CLONE_INTO_CGROUP, CLONE_NEWPID) */
	__u64 cgroup_id;
	__u64 cgroup_v1_id;
	__u32 pid_ns;
	__u32 pad;
	/* the file name of its executable (its parent's image, mm->exe_file), as struct
	 * tp_exec's name; "" when unreadable */
	char name[TP_EXEC_NAME_LEN];
};
_Static_assert(sizeof(struct tp_fork) == 128, "tp_fork layout");

/* An exec, with what identifies the new image's process, so that user space need not read it
 * from /proc: its cgroup, its PID namespace, its executable file and its comm. */
struct tp_exec {
	struct tp_event_hdr hdr;
	__u64 cgroup_id; /* its cgroup in the v2 (default) hierarchy: the kernfs node id that
			  * bpf_get_current_cgroup_id() and name_to_handle_at() give */
	__u32 pid_ns;	 /* inode number of its PID namespace (as in the ns/pid link) */
	__u32 ns_pid;	 /* its pid in that namespace */
	__u64 exe_ino;	 /* mm->exe_file's inode number, 0 when unreadable */
	__u32 exe_dev;	 /* and its superblock's device, the kernel's dev_t (major << 20 | minor):
			  * both as /proc/PID/maps shows them for the file's mappings */
	__u32 pad;
	/* its cgroup in the v1 name=systemd hierarchy of hybrid layouts (that hierarchy's kernfs
	 * node id); 0: no such hierarchy, or not found */
	__u64 cgroup_v1_id;
	char comm[TP_COMM_LEN];	     /* the new image's comm (the kernel set it at the exec) */
	char name[TP_EXEC_NAME_LEN]; /* the file name of mm->exe_file (what /proc/PID/exe names),
				      * cut to 63 bytes; "" when unreadable */
	/* where the new image starts running in user space: its dynamic loader's entry point (the
	 * executable's when it has none); 0 when unreadable */
	__u64 entry_ip;
	/* the executable's code, [start_code, end_code) (mm_struct: its PF_X segments, load bias
	 * added), and the vDSO's address (mm->context.vdso); 0 when unreadable */
	__u64 start_code, end_code, vdso;
	__u64 exe_size; /* the executable's size (its inode's i_size), bytes */
	__u32 flags;	/* TP_EXEC_* */
	__u32 pad2;
};
_Static_assert(sizeof(struct tp_exec) == 192, "tp_exec layout");

/* Bits of tp_exec.flags. */
/* the image is static (entry_ip in its executable's code) and its executable is in
 * static_layouts: tailprofd names it from the layout it recorded (its maps are not read) */
#define TP_EXEC_LAYOUT_KNOWN (1u << 0)
/* and static_layouts held its unwind tables: the exec program set the process's unwind_procs
 * entry from them and marked it known (its first sample wakes nobody); tailprofd takes the
 * entry over at this record */
#define TP_EXEC_TABLES_SET (1u << 1)
/* its executable is a CPython interpreter in py_exes: the exec program set its py_procs entry
 * (its Python frames are walked from its first sample) */
#define TP_EXEC_PY_SET (1u << 2)

/* Key of static_layouts: an executable file, as tp_exec gives it. */
struct tp_file_key {
	__u64 ino;
	__u32 dev; /* the kernel's dev_t (major << 20 | minor) */
	__u32 pad;
};

struct tp_sample {
	struct tp_event_hdr hdr;
	__u32 tid;
	__u32 cpu;
	__u32 flags;		       /* TP_SAMPLE_* */
	__u16 nr_kernel;	       /* kernel frames at addrs[0 .. nr_kernel) */
	__u16 nr_user;		       /* user frames at addrs[nr_kernel .. nr_kernel + nr_user) */
	char comm[TP_COMM_LEN];	       /* the process's (group leader's) comm */
	char thread_comm[TP_COMM_LEN]; /* the sampled thread's comm */
	__u32 stage;		       /* innermost active stage of the thread (0: none) */
	__u16 nr_python; /* Python frames (struct tp_py_frame) after the user frames */
	__u16 pad;
	__u64 blocked_ns; /* TP_EV_OFFCPU: how long the thread was blocked; else 0 */
	/* Leaf first: nr_kernel kernel addresses, nr_user user addresses, then nr_python Python
	 * frames of two words each (struct tp_py_frame), the innermost first. Only the used part
	 * is sent: the record is TP_SAMPLE_HDR_SIZE + 8 * (nr_kernel + nr_user + 2 * nr_python)
	 * bytes. */
	__u64 addrs[2 * TP_MAX_STACK_DEPTH + 2 * TP_PY_MAX_FRAMES];
};
_Static_assert(sizeof(struct tp_sample) ==
		   24 + 16 + 32 + 8 + 8 + 8 * (2 * TP_MAX_STACK_DEPTH + 2 * TP_PY_MAX_FRAMES),
	       "tp_sample layout");

#define TP_SAMPLE_HDR_SIZE                                                                         \
	(sizeof(struct tp_sample) - 8 * (2 * TP_MAX_STACK_DEPTH + 2 * TP_PY_MAX_FRAMES))

/* Counters live in the `counters` map, an mmap-able array of __u64 that each CPU writes in its
 * own region, one set per drain period of the last TP_COUNTER_SLOTS periods:
 *   counters[(cpu * TP_COUNTER_SLOTS + slot) * TP_M_NR + metric], slot = (ts / slot_ns) % SLOTS
 * where ts is the event's CLOCK_MONOTONIC time. User space takes each period's counts (atomic
 * exchange with 0) once it has ended, so they land in the window of their timestamp, exactly
 * like the stacks. */
#define TP_COUNTER_SLOTS 64

enum tp_metric {
	TP_M_SAMPLES = 0,   /* every perf event the program saw, idle included */
	TP_M_IDLE,	    /* samples of the idle task (pid 0): counted, not sent */
	TP_M_RINGBUF_FULL,  /* samples lost: no room in `events` */
	TP_M_KSTACK_FAILED, /* kernel stack read failed (sample kept, kernel frames lost) */
	TP_M_USTACK_FAILED, /* user stack read failed (sample kept, user frames lost) */
	TP_M_EVENT_LOST,    /* exec/exit/fork notifications lost: no room */
	/* The table unwinder (bpf/lib/unwind.bpf.h): */
	TP_M_UNWIND_STACKS,	 /* user stacks walked with unwind tables */
	TP_M_UNWIND_FP_STACKS,	 /* of those, stacks with frame-pointer steps (code without CFI) */
	TP_M_UNWIND_UNSUPPORTED, /* walks stopped at a CFI rule that tables cannot express */
	TP_M_UNWIND_NO_MAPPING, /* walks stopped at a PC in no known mapping (user space rescans) */
	TP_M_UNWIND_READ_FAILED, /* walks stopped: reading the stack failed */
	TP_M_UNWIND_BAD_FRAME,	 /* walks stopped: the CFA did not move up, or a frame-pointer
				    step led out of every mapping */
	TP_M_NR,
};

/* ---- stages (bpf/stage.bpf.c) ---- */

/* Stage ids index per-stage maps: 0 means "no stage"; ids 1 .. TP_FIRST_DYN_STAGE - 1 are given
 * by tailprofd to configured stages, ids TP_FIRST_DYN_STAGE .. TP_MAX_STAGES - 1 by the BPF
 * programs to the stages that applications name through include/tailprof/stage.h. */
#define TP_MAX_STAGES	   64
#define TP_FIRST_DYN_STAGE 32
#define TP_STAGE_NAME_LEN  32 /* NUL included */
#define TP_STAGE_DEPTH	   8  /* nested stages kept per thread (a power of two) */
#define TP_STAGE_SLOTS	   8  /* drain periods of stage histograms kept in BPF */

/* One active stage of a thread. */
struct tp_stage_frame {
	__u64 start_ns;	  /* CLOCK_MONOTONIC at entry */
	__u64 request_id; /* the application's request id (USDT), 0 for uprobes */
	__u32 stage;
	__u32 accounting; /* 1: runtime_ns and run_delay_ns were read at entry */
	/* The thread's CPU time at entry, as stage.bpf.c's sched_now() counts it (meaningful only
	 * as a difference with another read), and its sched_info.run_delay then. */
	__u64 runtime_ns;
	__u64 run_delay_ns;
};
_Static_assert(sizeof(struct tp_stage_frame) == 40, "tp_stage_frame layout");

/* The stages a thread is in, innermost at frames[depth - 1]. depth counts past TP_STAGE_DEPTH
 * (those frames are not timed) so that entries and exits stay balanced. */
struct tp_stage_stack {
	__u32 depth;
	__u32 pad;
	struct tp_stage_frame frames[TP_STAGE_DEPTH];
};
_Static_assert(sizeof(struct tp_stage_stack) == 8 + 40 * TP_STAGE_DEPTH, "tp_stage_stack layout");

/* Latencies of one stage that ended in one drain period: stage_hist[slot * TP_MAX_STAGES + id],
 * slot = (end_ts / slot_ns) % TP_STAGE_SLOTS. BPF adds atomically; tailprofd takes each ended
 * period with atomic exchanges, as with `counters`. Buckets: tp_hist.h. */
struct tp_stage_hist {
	__u64 count;
	__u64 sum_ns;
	__u64 max_ns;
	__u32 buckets[TP_HIST_BUCKETS];
	__u32 pad;
};
_Static_assert(sizeof(struct tp_stage_hist) == 24 + 4 * TP_HIST_BUCKETS + 4, "tp_stage_hist");

/* A slow span (longer than its stage's threshold), through the `spans` ring buffer. */
struct tp_span {
	__u32 pid;
	__u32 tid;
	__u64 start_ns; /* CLOCK_MONOTONIC */
	__u64 duration_ns;
	__u64 request_id;
	__u32 stage;
	__u32 accounting; /* TP_ACCT_*: how cpu_ns and runq_ns were measured */
	/* The thread's own scheduler accounting over the span (TP_ACCT_EXACT), else 0: time on a
	 * CPU and time runnable in a run queue; the rest of duration_ns it was blocked. */
	__u64 cpu_ns;
	__u64 runq_ns;
};
_Static_assert(sizeof(struct tp_span) == 56, "tp_span layout");

/* tp_span.accounting */
enum tp_span_accounting {
	TP_ACCT_NONE = 0,  /* not measured: tailprofd estimates from samples ("sampled") */
	TP_ACCT_EXACT = 1, /* from sum_exec_runtime and sched_info.run_delay ("exact") */
	/* tailprofd's own, never sent by BPF: cpu_ns and runq_ns hold its estimate from samples,
	 * made once the span's window closed (stages.h) */
	TP_ACCT_SAMPLED = 2,
};

/* Counters of the stage programs, in `stage_metrics` (one __u64 each, atomic adds). */
enum tp_stage_metric {
	TP_SM_NO_STORAGE = 0,  /* the thread's stage stack could not be created */
	TP_SM_TOO_DEEP,	       /* more than TP_STAGE_DEPTH nested stages: the inner ones untimed */
	TP_SM_UNMATCHED,       /* an exit without its entry (attached mid-call, USDT misuse) */
	TP_SM_SPANS_LOST,      /* slow spans lost: no room in `spans` */
	TP_SM_NAMES_FULL,      /* application stage names beyond TP_MAX_STAGES: not timed */
	TP_SM_NAME_UNREADABLE, /* an application's stage name could not be read (its page not
				* mapped yet): that call is not timed */
	TP_SM_NR,
};

/* ---- GC pauses (bpf/gc.bpf.c) ---- */

enum tp_gc_runtime {
	TP_GC_JVM = 1,	  /* HotSpot: USDT hotspot:gc__begin/gc__end, hs_private:safepoint__* */
	TP_GC_PYTHON = 2, /* CPython: USDT python:gc__start/gc__done, or gc_collect_main uprobes */
	TP_GC_GO = 3,	  /* Go: entry uprobes on runtime functions */
	TP_GC_RUNTIME_NR,
};

enum tp_gc_kind {
	TP_GC_PAUSE = 1,      /* the mutator stopped for GC (JVM GC, CPython GC, Go STW) */
	TP_GC_COLLECTION = 2, /* a whole (concurrent) Go GC cycle, its pauses included */
	TP_GC_SAFEPOINT = 3,  /* a HotSpot safepoint, for any reason */
	TP_GC_KIND_NR,
};

/* tp_gc_event.arg for Go pauses: which stop-the-world it was. */
enum tp_gc_go_cause {
	TP_GC_GO_OTHER = 0,	 /* not a GC phase (ReadMemStats, GOMAXPROCS, a restarted mark
				    termination) */
	TP_GC_GO_SWEEP_TERM = 1, /* the cycle's first pause */
	TP_GC_GO_MARK_TERM = 2,	 /* the cycle's last pause */
};

/* Records of the gc_events ring buffer. */
enum tp_gc_record {
	TP_GC_REC_EVENT = 1,  /* a finished GC event */
	TP_GC_REC_DLOPEN = 2, /* the process returned from dlopen: its maps may hold a runtime */
};

struct tp_gc_event {
	__u32 record;	   /* enum tp_gc_record */
	__u32 pid;	   /* tgid */
	__u32 tid;	   /* the thread that ran the GC (or stopped the world) */
	__u16 runtime;	   /* enum tp_gc_runtime */
	__u16 kind;	   /* enum tp_gc_kind */
	__u64 start_ns;	   /* CLOCK_MONOTONIC */
	__u64 duration_ns; /* 0 for TP_GC_REC_DLOPEN */
	__s64 arg;  /* CPython: generation; JVM pause: 1 full, 0 not; Go pause: tp_gc_go_cause */
	__s64 arg2; /* CPython: collected + uncollectable (as gc__done gives them); else 0 */
};
_Static_assert(sizeof(struct tp_gc_event) == 48, "tp_gc_event layout");

/* The kinds of GC phase, one gc_open entry each per process (open or closed). */
enum tp_gc_slot {
	TP_GC_SLOT_JVM_GC = 0,
	TP_GC_SLOT_JVM_SAFEPOINT,
	TP_GC_SLOT_PYTHON,
	TP_GC_SLOT_GO_STW,
	TP_GC_SLOT_GO_CYCLE,
	TP_GC_SLOT_NR,
};

struct tp_gc_open_key {
	__u32 pid;
	__u32 slot; /* enum tp_gc_slot */
};

struct tp_gc_open {
	__u64 start_ns;
	__s64 arg;
	__u32 tid;
	__u32 flags; /* TP_GC_OPEN_* */
};
_Static_assert(sizeof(struct tp_gc_open) == 24, "tp_gc_open layout");

#define TP_GC_OPEN_PAUSING   (1u << 0) /* counted in gc_pausing */
#define TP_GC_OPEN_MARK_TERM (1u << 1) /* Go: gcMarkTermination ran inside this stop */
#define TP_GC_OPEN_ACTIVE    (1u << 2) /* open: 0 once closed (the entry is kept, gc.bpf.c) */

/* Counters of the GC programs, in gc_metrics (one __u64 each, atomic adds). */
enum tp_gc_metric {
	TP_GCM_HITS = 0,    /* probe hits, every program */
	TP_GCM_EVENTS_LOST, /* gc_events full: events or dlopen notices lost */
	TP_GCM_UNMATCHED,   /* an end without its begin (attached mid-pause) */
	TP_GCM_OPEN_FULL,   /* gc_open, gc_calls or gc_pausing full: the phase is not timed */
	TP_GCM_ABANDONED,   /* a begin whose end never came (a missed return), dropped later */
	TP_GCM_NR,
};

/* ---- scheduler (bpf/sched.bpf.c) ---- */

/* Run-queue latency histograms and per-process scheduler counts are kept per drain period, in
 * TP_SCHED_SLOTS slots reused in turn; tailprofd takes each period once it has ended. */
#define TP_SCHED_SLOTS 8
/* runq_hist[cpu * TP_SCHED_SLOTS + slot]: run-queue latencies that ended (the task got the CPU)
 * on that CPU in that drain period, slot = (ts / slot_ns) % TP_SCHED_SLOTS. Log-linear buckets
 * (tp_hist.h). Written by BPF on its own CPU only, taken and zeroed by tailprofd (atomic
 * exchanges) from the mmap'ed array once the period has ended. */
struct tp_runq_hist {
	__u64 count;
	__u64 sum_ns;
	__u64 max_ns;
	__u32 buckets[TP_HIST_BUCKETS];
	__u32 pad;
};
_Static_assert(sizeof(struct tp_runq_hist) % 8 == 0, "tp_runq_hist layout");

/* sched_procs key: a process on a CPU in a drain period. */
struct tp_sched_key {
	__u32 pid;
	__u32 slot; /* the drain period number modulo 2^32 (not the slot index) */
	__u32 cpu;
};

/* sched_procs value: what one process did in one drain period. */
struct tp_sched_proc {
	__u64 runq_count; /* times its threads waited for a CPU */
	__u64 runq_ns;	  /* total wait */
	__u64 runq_max_ns;
	__u64 short_count; /* blocks shorter than offcpu_min_ns (no stacks) */
	__u64 short_ns;
};

/* sched_ptab: the per-process counts of each CPU and drain period in a small open-addressed
 * table, TP_SCHED_PTAB entries (a power of two) per CPU and slot:
 *   sched_ptab[(cpu * TP_SCHED_SLOTS + slot) * TP_SCHED_PTAB + (hash(pid) + probe) % PTAB]
 * probing TP_SCHED_PTAB_PROBES entries; a process that finds none free goes to the
 * `sched_procs` hash map instead. Written by BPF on its own CPU only (plain adds), read by
 * tailprofd from the mmap'ed array once the period has ended (atomic exchanges of the counts;
 * pid and period stay, so a straggler still lands in its entry). BPF reuses an entry of an older
 * period once its counts were taken (runq_count and short_count both 0). */
#define TP_SCHED_PTAB	     128
#define TP_SCHED_PTAB_PROBES 4
struct tp_sched_pentry {
	__u32 pid;
	__u32 slot; /* the drain period number modulo 2^32 */
	struct tp_sched_proc v;
};
_Static_assert(sizeof(struct tp_sched_pentry) == 48, "tp_sched_pentry layout");

/* Counters of the scheduler programs, in `sched_metrics` (one __u64 each, atomic adds). */
enum tp_sched_metric {
	TP_SCH_CAPTURED = 0,	/* blocks over the threshold given stacks */
	TP_SCH_NO_STORAGE,	/* task storage could not be created: the switch is not timed */
	TP_SCH_PENDING_FULL,	/* no room to hold a captured block until its syscall returns:
				 * sent with the kernel stack only */
	TP_SCH_SYSCALL_CHANGED, /* returned from another syscall than it blocked in: no user stack
				 */
	TP_SCH_RINGBUF_FULL,	/* off-CPU samples lost: no room in `events` */
	TP_SCH_PROCS_FULL,	/* per-process counts lost: `sched_procs` full */
	TP_SCH_KSTACK_CACHED,	/* captured kernel stacks taken from kstack_cache (verified) */
	TP_SCH_KSTACK_WALKED,	/* captured kernel stacks walked by bpf_get_task_stack */
	TP_SCH_USTACK_CACHED,	/* their user stacks taken from ustack_cache (verified) */
	TP_SCH_USTACK_WALKED,	/* their user stacks walked with the unwind tables */
	TP_SCH_EARLY_USTACK,	/* captured blocks whose user stack was taken at switch-out */
	TP_SCH_EARLY_WASTED,	/* user stacks taken at switch-out for blocks that were short */
	TP_SCH_TASK_WORK,	/* captured blocks given a task work for their user stack */
	TP_SCH_SYS_EXIT,	/* captured blocks held for their user stack until the return from
				 * schedule() (fexit) or from the syscall (sys_exit) */
	TP_SCH_STALE_BLOCK,	/* block starts found after the thread had run again (their end
				 * was missed: no task storage at that switch-in): dropped */
	TP_SCH_KSTACK_EARLY,	/* captured kernel stacks: the thread's own copy, verified at
				   switch-out */
	TP_SCH_KSTACK_EARLY_MISSED, /* and not used: the switch saved another stack pointer */
	TP_SCH_USTACK_EARLY,	    /* their user stacks: the thread's own copy, verified at
				     * switch-out */
	TP_SCH_AGAIN_SAME,  /* blocks again in a syscall whose captured block waits for its user
			     * stack, on the same kernel path: added to that sample */
	TP_SCH_AGAIN_OTHER, /* on another kernel path: a sample of their own, without user stack */
	TP_SCH_REPEAT,	    /* captured blocks sent as repeats (TP_SAMPLE_REPEAT) */
	TP_SCH_RETURN_BUSY, /* task works that found another one's user stack walk under way on
			     * their CPU (preempted): sent without user stack */
	TP_SCH_NR,
};

/* ---- the table unwinder: rows that user space builds from .eh_frame/.debug_frame ---- */

/* How a row finds the CFA (canonical frame address: the caller's RSP after the call returns).
 * The return address is always at CFA - 8 (x86-64). */
enum tp_cfa_type {
	TP_CFA_NONE = 0,   /* no CFI covers this PC: step by frame pointer */
	TP_CFA_RSP = 1,	   /* CFA = RSP + 8 * cfa_off8 */
	TP_CFA_RBP = 2,	   /* CFA = RBP + 8 * cfa_off8 */
	TP_CFA_PLT = 3,	   /* PLT stub: CFA = RSP + 8 + ((PC & 15) >= cfa_off8 ? 8 : 0) */
	TP_CFA_SIGNAL = 4, /* signal trampoline (__restore_rt): registers in the ucontext at RSP */
	TP_CFA_END = 5,	   /* the return address is undefined: outermost frame */
	TP_CFA_UNSUPPORTED = 6, /* a rule tables cannot express: the walk stops here, counted */
};

/* rbp_off8 value: the caller's RBP is computed by an expression the walker cannot evaluate. */
#define TP_RBP_LOST (-128)

/* One row of an object's table: it holds from pc (a link-time virtual address of the object)
 * up to the next row's pc. Rows are sorted by pc; 8 bytes each. */
struct tp_unwind_row {
	__u32 pc;
	__u8 cfa_type;	/* enum tp_cfa_type */
	__s8 rbp_off8;	/* the caller's RBP is saved at CFA + 8 * rbp_off8; 0: RBP unchanged */
	__u16 cfa_off8; /* see enum tp_cfa_type */
};
_Static_assert(sizeof(struct tp_unwind_row) == 8, "tp_unwind_row layout");

/* Executable mappings per process that the walker knows; PCs in others are walked by frame
 * pointer. */
#define TP_MAX_PROC_MAPPINGS 128

/* One executable mapping of a process: PCs in [start, end) belong to link-time address
 * pc - bias of the object whose table is unwind_rows[row_start .. row_start + nr_rows). Its page
 * index, unwind_pages[pages_start .. pages_start + nr_pages), has a struct tp_unwind_page for
 * each TP_UNWIND_PAGE_BYTES of PCs from the first row's. */
struct tp_exec_mapping {
	__u64 start;
	__u64 end;
	__u64 bias;
	__u32 row_start; /* first row of the object's table in unwind_rows */
	__u32 nr_rows;	 /* 0: the object has no table: walk by frame pointer */
	__u32 pages_start;
	__u32 nr_pages; /* 0: no page index: search every row */
};
_Static_assert(sizeof(struct tp_exec_mapping) == 40, "tp_exec_mapping layout");

#define TP_UNWIND_PAGE_BYTES 4096

/* One entry of a page index: the rows, within the table, that a search for a PC of this page
 * needs: [first, end). (8 bytes: BPF arrays lay values out 8 bytes apart.) */
struct tp_unwind_page {
	__u32 first; /* the row in effect at the page's start */
	__u32 end;   /* one past the row in effect at the next page's start */
};
_Static_assert(sizeof(struct tp_unwind_page) == 8, "tp_unwind_page layout");

/* The value of unwind_procs: a process's executable mappings, sorted by start, disjoint. */
struct tp_proc_mappings {
	__u64 start_ns; /* identifies the process with its pid (tp_event_hdr.start_ns) */
	__u32 nr;
	__u32 gen; /* tailprofd's count of entries written: a new value each time the entry is;
		    * one the exec program made from a static layout's tables: its epoch
		    * (unwind_epoch) with TP_GEN_FROM_LAYOUT set */
	struct tp_exec_mapping m[TP_MAX_PROC_MAPPINGS];
};
_Static_assert(sizeof(struct tp_proc_mappings) == 16 + 40 * TP_MAX_PROC_MAPPINGS,
	       "tp_proc_mappings layout");
#define TP_GEN_FROM_LAYOUT 0x80000000u /* tp_proc_mappings.gen: made by BPF, not by tailprofd */

/* The executable's mappings (up to 4) and the vDSO's in a static layout's tables */
#define TP_LAYOUT_MAPPINGS 5
#define TP_LAYOUT_NO_VDSO  0xffffffffu

/* The value of static_layouts: a static executable whose layout tailprofd recorded, and, once a
 * process made from it had its unwind tables, those tables as a template: the entries of its
 * unwind_procs entry with start, end and bias less mm->start_code (mod 2^64), the vDSO's
 * (m[vdso]) less mm->context.vdso. nr 0: no template (the layout alone). Entries are sorted by
 * start, the vDSO's last (a template is made only where it lies above the executable's). */
struct tp_layout_table {
	__u32 nr;
	__u32 vdso; /* index of the vDSO's entry, or TP_LAYOUT_NO_VDSO */
	__u64 size; /* the executable's size (i_size) then: used only for an exec of that size */
	struct tp_exec_mapping m[TP_LAYOUT_MAPPINGS];
};
_Static_assert(sizeof(struct tp_layout_table) == 16 + 40 * TP_LAYOUT_MAPPINGS,
	       "tp_layout_table layout");

#endif
