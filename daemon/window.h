/* SPDX-License-Identifier: GPL-2.0-only */
/* Time windows: per-window sample counts by (stack, task), counters per CPU, and the fixed ring
 * that holds the last `retention` of them.
 *
 * Windows are cut on CLOCK_MONOTONIC (BPF timestamps) at multiples of the window length, and
 * labelled with wall-clock time through the realtime-monotonic offset measured at the last drain
 * into them: an NTP step moves labels, never reorders or drops windows.
 *
 * Not thread-safe: the collector serializes writers and readers with its lock. */
#ifndef TAILPROF_WINDOW_H
#define TAILPROF_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"
#include "intern.h"
#include "symbolizer.h"
#include "tp_hist.h"

#define STACK_TRUNCATED_KERNEL (1u << 0) /* the kernel stack filled TP_MAX_STACK_DEPTH frames */
#define STACK_TRUNCATED_USER   (1u << 1) /* the user stack filled TP_MAX_STACK_DEPTH frames */
#define STACK_USER_FAILED      (1u << 2) /* the user stack could not be read */
#define STACK_KERNEL_FAILED    (1u << 3) /* the kernel stack could not be read */
#define STACK_NO_USER	       (1u << 4) /* off-CPU outside a syscall: user stack unknown */

/* An interned stack: kernel frames first, then user frames, each leaf first. Its objects are
 * referenced while it is interned. Every byte is significant (zero any padding). */
struct stack {
	uint16_t nr_kernel;
	uint16_t nr_user;
	uint32_t flags; /* STACK_* */
	struct frame frames[];
};

#define TASK_SELF  (1u << 0) /* a thread of tailprofd itself */
#define TASK_IN_GC (1u << 1) /* sampled while its process was in a GC pause (label gc=1) */

/* An interned task identity: the labels a sample carries. Zero-padded strings. */
struct task {
	uint32_t pid; /* process id (tgid), in the daemon's PID namespace */
	uint32_t tid;
	uint32_t flags;	 /* TASK_* */
	uint32_t stage;	 /* innermost stage the thread was in (stages.h id), 0: none */
	uint32_t ns_pid; /* pid in the process's own PID namespace; 0: the same as pid */
	uint32_t cgroup; /* the process's cgroup (cgroups.h id); 0: the root or unknown */
	char comm[16];	 /* the kernel's process name (at most 15 characters) */
	char thread[16]; /* thread name */
	char process[PROCESS_NAME_LEN]; /* the executable's name, uncut; "" when unknown */
};

/* Makes the NUL-terminated name s (a process, thread or executable name: any bytes but NUL) fit
 * for a pprof string label, in place: valid UTF-8 is kept, control characters and bytes of no
 * valid sequence become '?', and a sequence cut short at the end (a name cut to its buffer) is
 * dropped. */
void task__sanitize_name(char *s);

/* Drop reasons counted per window (names are the JSON and Prometheus label values). */
enum window_drop {
	DROP_RINGBUF_FULL, /* "ringbuf_full": lost in the kernel, the ring buffer was full */
	DROP_KERNEL_STACK, /* "kernel_stack": kernel stack read failed (sample kept) */
	DROP_USER_STACK,   /* "user_stack": user stack read failed (sample kept) */
	DROP_EVENT_LOST,   /* "event_lost": exec/exit/fork notification lost */
	DROP_LATE,	   /* "late": sample older than the oldest window held */
	DROP_NO_MEMORY,	   /* "no_memory": sample lost in user space, allocation failed */
	/* "repeat_unknown": an off-CPU repeat whose thread's stacks tailprofd did not keep (lost;
	 * only when keeping them found no memory) */
	DROP_REPEAT_UNKNOWN,
	DROP_STACK_TABLE_FULL, /* "stack_table_full": a new stack past [limits] stacks */
	DROP_TASK_TABLE_FULL,  /* "task_table_full": a new task past [limits] tasks */
	DROP_NR,
};
extern const char *const window_drop_names[DROP_NR];

struct stage_window;
struct gc_window;

/* Rows of a window's heat map (FlameScope's sub-window counts): row r counts the samples whose
 * time falls in [start + r * len / TP_HEAT_ROWS, start + (r + 1) * len / TP_HEAT_ROWS). */
#define TP_HEAT_ROWS 20

struct window_entry {
	struct stack *stack;
	struct task *task;
	uint64_t count;		 /* CPU samples */
	uint64_t offcpu_ns;	 /* off-CPU time of the blocks captured with this stack */
	uint64_t offcpu_samples; /* those blocks */
};

/* One CPU sample or one captured off-CPU block as request profiles need it (stages.h): when, on
 * which thread and CPU, and the entry (stack, task) of its window it was counted in. 32 bytes. */
struct window_record {
	uint64_t ts_ns;	     /* CLOCK_MONOTONIC: a CPU sample's time; a block's start */
	uint64_t blocked_ns; /* a block's length; 0: a CPU sample */
	uint32_t pid, tid;
	uint32_t entry; /* index in the window's entries[] */
	uint32_t cpu;
};

/* What one process did on the scheduler in a window (bpf/sched.bpf.c). */
struct window_sched_proc {
	uint32_t pid;
	uint32_t pad;
	uint64_t runq_count, runq_ns, runq_max_ns; /* waits for a CPU */
	uint64_t short_count, short_ns; /* blocks below the off-CPU threshold (no stacks) */
};

/* The scheduler view of a window: run-queue latency of the whole machine as a log-linear
 * histogram (tp_hist.h buckets), and per-process counts. Allocated at its first event. */
struct window_sched {
	uint64_t runq_count, runq_sum_ns, runq_max_ns;
	uint64_t runq_buckets[TP_HIST_BUCKETS];
	struct window_sched_proc *procs; /* unsorted */
	size_t nr_procs, cap_procs;
	struct hashmap index; /* pid -> procs index */
};

struct window {
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC, [start, end) */
	int64_t wall_offset_ns;	   /* realtime - monotonic at the last drain into this window */
	uint64_t samples;	   /* samples with stacks stored here (the profile's total) */
	uint64_t offcpu_samples;   /* off-CPU samples (captured blocks) stored here */
	uint64_t offcpu_ns;	   /* their blocked time */
	uint64_t idle_samples;	   /* samples of idle CPUs: counted, no stack */
	uint64_t drops[DROP_NR];
	uint32_t nr_cpus;
	uint64_t *cpu_received;	  /* [nr_cpus] samples the BPF program saw on each CPU */
	uint64_t *cpu_sampled_ns; /* [nr_cpus] time each CPU was sampled within the window */
	/* (stack, task) -> count: entries[] dense, index maps the pair to its entry */
	struct window_entry *entries;
	size_t nr_entries, cap_entries;
	struct hashmap index;
	bool closed;
	/* cached when closed: distinct stacks and processes */
	uint32_t nr_stacks, nr_processes;
	bool counted;
	struct stage_window *stages; /* stage latencies and slow spans (stages.h), NULL: none */
	struct gc_window *gc;	     /* GC events that started in the window (gc.h), NULL: none */
	struct window_sched *sched;  /* NULL until a scheduler event lands here */
	uint32_t pins;		     /* spikes that keep this window past the ring's eviction */
	uint64_t sample_period_ns;   /* a CPU sample stands for this much CPU time (0: unknown) */
	/* Heat map rows (TP_HEAT_ROWS): CPU samples with stacks by their time, captured off-CPU
	 * blocks by the time they ended (window__add_recorded fills them). */
	uint32_t heat_cpu[TP_HEAT_ROWS];
	uint32_t heat_offcpu[TP_HEAT_ROWS];
	/* Per-sample records (window__add_recorded), in the order they came: kept while the
	 * window is the ring's current or previous one (records_recent) or pinned, freed after
	 * (window__drop_records), so their memory stays bounded. */
	struct window_record *records;
	size_t nr_records, cap_records;
	uint64_t records_lost; /* records not kept for want of memory (their samples were) */
	bool records_recent;   /* one of the ring's two newest windows: keeps its records */
	bool records_dropped;  /* dropped: no record is kept any more */
};

struct window_ring_opts {
	uint64_t window_ns;	     /* length of a window, > 0 */
	uint32_t nr_windows;	     /* windows held, >= 1 (retention / window) */
	uint32_t nr_cpus;	     /* possible CPUs */
	uint64_t sample_period_ns;   /* the CPU sampling period, given to each window */
	struct intern_table *stacks; /* where struct stack values live (not owned) */
	struct intern_table *tasks;  /* where struct task values live (not owned) */
};

/* Returns an empty ring (no window until the first advance) or NULL with errno set. */
struct window_ring *window_ring__new(const struct window_ring_opts *opts);
/* Releases every window's references and frees the ring. NULL allowed. */
void window_ring__free(struct window_ring *r);

/* Makes the window containing now_ns current, closing and evicting windows as needed (the oldest
 * is evicted when the ring is full; a gap longer than the retention skips the empty windows). */
void window_ring__advance(struct window_ring *r, uint64_t now_ns);
/* The window that contains ts_ns, advancing the ring when ts_ns is past the current window, or
 * NULL when ts_ns is older than the oldest window held. */
struct window *window_ring__window_at(struct window_ring *r, uint64_t ts_ns);
struct window *window_ring__current(const struct window_ring *r);

/* Windows held, oldest first: i in [0, window_ring__count). */
size_t window_ring__count(const struct window_ring *r);
struct window *window_ring__get(const struct window_ring *r, size_t i);
uint64_t window_ring__window_ns(const struct window_ring *r);
uint32_t window_ring__capacity(const struct window_ring *r);

/* Pinning (spikes.h): a window with pins is not freed when the ring evicts it; it moves to the
 * ring's pinned list and is freed at its last unpin. pin: pins++; unpin: pins-- (at 0, frees w
 * when the ring no longer holds it, else its records unless it is one of the two newest). */
void window_ring__pin(struct window_ring *r, struct window *w);
void window_ring__unpin(struct window_ring *r, struct window *w);
/* At each tick: frees the records of every window older than the ring's current and previous
 * ones that no pin keeps (window__drop_records). */
void window_ring__drop_records(struct window_ring *r);
/* The windows that keep per-sample records (not dropped: the ring's current and previous ones,
 * pinned ones), oldest first, into out[0..max). Returns how many. */
size_t window_ring__with_records(const struct window_ring *r, struct window **out, size_t max);
/* Evicted windows kept by pins, oldest first: i in [0, window_ring__nr_pinned). */
size_t window_ring__nr_pinned(const struct window_ring *r);
struct window *window_ring__pinned(const struct window_ring *r, size_t i);
/* The window that starts at start_ns (CLOCK_MONOTONIC), in the ring or pinned; NULL: none. */
struct window *window_ring__find(const struct window_ring *r, uint64_t start_ns);

/* Creates a detached window over [start_ns, end_ns) (e.g. an exact-interval capture). */
struct window *window__new(uint64_t start_ns, uint64_t end_ns, uint32_t nr_cpus);
/* Drops every entry's references (into the given tables) and frees w. NULL allowed. */
void window__free(struct window *w, struct intern_table *stacks, struct intern_table *tasks);

/* Adds count samples of (stack, task) to w, consuming one reference on each of stack and task
 * (kept by a new entry, dropped otherwise). Returns 0 or -ENOMEM (references dropped, sample
 * counted as DROP_NO_MEMORY). */
int window__add(struct window *w, struct stack *stack, struct task *task, uint64_t count,
		struct intern_table *stacks, struct intern_table *tasks);
/* Adds one off-CPU sample (a block of blocked_ns) of (stack, task) to w, consuming one reference
 * on each as window__add does. Returns 0 or -ENOMEM (counted as DROP_NO_MEMORY). */
int window__add_offcpu(struct window *w, struct stack *stack, struct task *task,
		       uint64_t blocked_ns, struct intern_table *stacks,
		       struct intern_table *tasks);
/* Adds one CPU sample (blocked_ns 0), or one captured block of blocked_ns that ended at ts_ns
 * (CLOCK_MONOTONIC), of (stack, task) seen on cpu, to w as window__add or window__add_offcpu
 * does (consuming the references), counts it in its heat map row (window__heat_row of ts_ns),
 * and keeps its record (struct window_record) unless w's records were dropped. Returns 0 or -ENOMEM
 * (the sample counted as DROP_NO_MEMORY; a record without memory only counts in records_lost). */
int window__add_recorded(struct window *w, struct stack *stack, struct task *task, uint64_t ts_ns,
			 uint64_t blocked_ns, uint32_t cpu, struct intern_table *stacks,
			 struct intern_table *tasks);
/* The heat map row (0 .. TP_HEAT_ROWS - 1) of time ts_ns (CLOCK_MONOTONIC) in w; times outside
 * [start_ns, end_ns) fall in the first or the last row. */
uint32_t window__heat_row(const struct window *w, uint64_t ts_ns);
/* Frees w's records and keeps no more, unless w still needs them: pins > 0, or it is one of the
 * ring's two newest windows (window_ring__drop_records frees them at the tick after). The spike
 * module calls it when it unpins a window the ring still holds (window_ring__unpin does too:
 * calling it again is harmless). NULL allowed. */
void window__drop_records(struct window *w);
/* Adds run-queue latencies (buckets: TP_HIST_BUCKETS counts) to w's machine-wide histogram.
 * Returns 0 or -ENOMEM (nothing added). */
int window__add_runq(struct window *w, uint64_t count, uint64_t sum_ns, uint64_t max_ns,
		     const uint64_t *buckets);
/* Adds a process's scheduler counts (p->pid selects the process) to w. 0 or -ENOMEM. */
int window__add_sched_proc(struct window *w, const struct window_sched_proc *p);
/* Distinct stacks and processes in w (computed on demand, cached once w is closed). */
void window__counts(struct window *w, uint32_t *nr_stacks, uint32_t *nr_processes);
/* Expected samples of w at period_ns per sample: sum over CPUs of sampled_ns / period_ns. */
uint64_t window__expected(const struct window *w, uint64_t period_ns);
uint64_t window__received(const struct window *w);
uint64_t window__drops(const struct window *w);
/* Heap bytes the window itself uses (entries, index and records; not the interned values). */
size_t window__bytes(const struct window *w);

#endif
