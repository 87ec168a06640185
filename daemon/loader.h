/* SPDX-License-Identifier: GPL-2.0-only */
/* The loader: probes the kernel, loads the BPF skeleton, attaches the programs (cpu-clock perf
 * events on every online CPU, process exec/exit/fork tracepoints) and reads the BPF counters.
 * The only module that includes *.skel.h; it knows nothing of symbols or pprof. */
#ifndef TAILPROF_LOADER_H
#define TAILPROF_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "feature_table.h"
#include "tailprof.h"

struct loader_opts {
	uint32_t frequency_hz; /* cpu-clock sampling frequency, 1..10000 */
	size_t ringbuf_bytes;  /* size of the events ring buffer: power of two, >= 4096 */
	uint64_t slot_ns;      /* the drain period: BPF counts events per period (tailprof.h) */
	int stage_stacks_fd;   /* > 0: the stage programs' stage_stacks map (probes.h), read by
				  the sampler for the stage label; 0: a map of its own (none) */
	bool time_stage_label; /* benchmark: time the sampler's stage lookup (loader__label_cost) */
	int gc_pausing_fd;     /* > 0: the GC programs' gc_pausing map (gc_probes.h), read by the
				  sampler for the gc=1 label; 0: a map of its own (stays empty) */
	int gc_open_fd;	       /* > 0: the GC programs' gc_open map, whose entries the sampler's
				  exec and exit programs delete; 0: a map of one entry (unused) */
	int label_sources_fd;  /* > 0: the label_sources map the stage and GC programs mark
				  (bpf/lib/label_sources.bpf.h); 0: a map of its own (stays 0) */
	uint64_t offcpu_min_ns; /* blocks at least this long get stacks (bpf/sched.bpf.c) */
	/* The table unwinder (bpf/lib/unwind.bpf.h): off, user stacks are walked by frame
	 * pointers only and its maps take no memory but their per-CPU memo's (4 KiB a CPU in
	 * each of the sampler's and the scheduler's objects). */
	bool unwind_tables;
	uint32_t unwind_rows;	       /* rows of unwind_rows (8 bytes each), >= 1 */
	uint32_t unwind_max_processes; /* processes in unwind_procs, >= 1 */
	/* Python frames (bpf/lib/python.bpf.h) of processes given by loader__python_set_process;
	 * off: the verifier drops the walker */
	bool python_frames;
	/* BPF_ENABLE_STATS held for the loader's life (the programs' run time and count); off
	 * (--bpf-stats=off): bpf_stats is off and those figures read 0 (unless another process
	 * holds statistics on) */
	bool bpf_stats;
	uint32_t bench_pid; /* benchmark: time perf_sample for this process (loader__bench_cost) */
	/* Filled in: cpu_sampling, eh_frame_unwinding (when unwind_tables), offcpu, runq_latency,
	 * task_work, bpf_stats; read: what TAILPROF_FEATURES_OFF forced off. NULL: neither. */
	struct features *features;
	bool load_only; /* tailprofd --check: load the objects, attach nothing */
	/* the v1 name=systemd hierarchy's id (cgroups__systemd_hierarchy), whose cgroup the exec
	 * records carry (struct tp_exec); 0: none */
	uint32_t cgroup_v1_hierarchy;
};

struct loader_prog_stats {
	const char *name;
	uint64_t run_time_ns; /* cumulative, while BPF stats are enabled */
	uint64_t run_cnt;
};

/* Checks that the kernel has what CPU sampling needs (kernel_probe__sampler), and from then on
 * takes libbpf's messages (libbpf_log.h). Returns 0, or -ENOTSUP after printing one line that
 * names the first missing piece and setting cpu_sampling off with it in f (may be NULL). */
int loader__probe_kernel(struct features *f);

/* Opens, loads and attaches everything (load_only: loads, attaches nothing); enables BPF run-time
 * stats (BPF_ENABLE_STATS) for the loader's lifetime. Optional parts that the kernel lacks or
 * rejects (the scheduler programs, the stats) are left off, as opts->features says. Returns NULL
 * with errno set after logging what failed. */
struct loader *loader__new(const struct loader_opts *opts);
/* Detaches every program and frees. NULL allowed. */
void loader__free(struct loader *l);

/* File descriptor of the `events` ring buffer map (for ring_buffer__new). */
int loader__events_fd(const struct loader *l);
/* Number of possible CPUs (size of per-CPU arrays). */
uint32_t loader__nr_cpus(const struct loader *l);
/* Attaches the sampling program to CPUs that came online since the last call and forgets CPUs
 * that went offline. Returns the number of CPUs sampled now; online[cpu] (nr_cpus entries, may be
 * NULL) receives 1 for CPUs being sampled. */
int loader__sync_cpus(struct loader *l, uint8_t *online);
/* Number of CPUs sampled now. */
int loader__nr_sampled_cpus(const struct loader *l);
/* Number of attached probes (perf events and tracepoints). */
int loader__nr_attached(const struct loader *l);
/* The BPF counters, mapped into this process: nr_cpus * TP_COUNTER_SLOTS * TP_M_NR values laid
 * out as tailprof.h says. Read and clear them with atomic operations: BPF adds concurrently. */
uint64_t *loader__counters(const struct loader *l);
/* The start time (tp_event_hdr.start_ns) of the process that has pid now, from BPF's table of
 * the processes forked since the load (live_procs): 0, or -ENOENT when the table does not have
 * pid (gone, from before the load, or the table was full: /proc tells then). */
int loader__live_start(struct loader *l, uint32_t pid, uint64_t *start_ns);
/* The boot time (CLOCK_BOOTTIME ns, as start_ns) from which every process forked is in that
 * table until it exits: one that started later and is not there is gone. 0 when no time is
 * (not attached, or a process found the table full). */
uint64_t loader__live_since(const struct loader *l);
/* A new process that started at since_ns or later (CLOCK_BOOTTIME ns, as start_ns) is young while
 * its sampled thread has run less than young_ns (ns): its CPU samples wake tailprofd for none of
 * them being new, and come flagged TP_SAMPLE_YOUNG at the next drain (bpf/profile.bpf.c; its
 * blocks still wake it). Only while the mmap records give such processes' maps after they exit;
 * young_ns 0: every new process's first sample wakes it (the default). */
void loader__set_young(struct loader *l, uint64_t young_ns, uint64_t since_ns);
/* Forgets a process on the BPF side (it is no longer known: its next sample wakes user space
 * and marks it known again). BPF marks processes known itself, at the sample that wakes user
 * space for them, and forgets them at exec and exit; this is for the cap on known processes. */
void loader__forget(struct loader *l, uint32_t pid);
/* Tells BPF whether tailprofd keeps the layout of static executable (dev: the kernel's dev_t,
 * major << 20 | minor; ino) (static_layouts): a process exec'd from it afterwards is flagged at
 * its exec (TP_EXEC_LAYOUT_KNOWN). Recording it again drops its tables (loader__layout_tables).
 * Returns 0 or a negative errno (-E2BIG: the table is full, -ENOENT: forgetting an executable it
 * did not have). */
int loader__static_layout(struct loader *l, uint32_t dev, uint64_t ino, bool known);
/* Gives the static layout of executable (dev, ino) its unwind tables t (a template: struct
 * tp_layout_table; nr 0 drops them): a process exec'd from it afterwards gets its unwind_procs
 * entry and is marked known at its exec (TP_EXEC_TABLES_SET). Only for a layout BPF has: returns
 * 0, -ENOENT when it has none (dropped meanwhile), or another negative errno. */
int loader__layout_tables(struct loader *l, uint32_t dev, uint64_t ino,
			  const struct tp_layout_table *t);
/* With time_stage_label: ns spent in the sampler's stage lookup, ns of the clock reads that
 * measured it (to subtract), and samples measured, since load. All 0 otherwise. */
void loader__label_cost(const struct loader *l, uint64_t *ns, uint64_t *clock_ns,
			uint64_t *samples);
/* The scheduler programs (bpf/sched.bpf.c), false when the kernel could not load them (a
 * warning said why; CPU profiling works without them). */
bool loader__has_sched(const struct loader *l);
/* The run-queue histograms, mapped into this process: nr_cpus * TP_SCHED_SLOTS of them, laid out
 * as tailprof.h says; NULL without the scheduler programs. Atomic operations only. */
struct tp_runq_hist *loader__runq_hist(const struct loader *l);
/* The clock blocks are timed with: "rq" (the run queues' clocks, where sched_clock is one
 * clock for every CPU: TSC clocksource), "monotonic" (CLOCK_MONOTONIC at both ends; also with
 * TAILPROF_SCHED_CLOCK=monotonic in the environment, for tests), "none" without the scheduler
 * programs. */
const char *loader__block_clock(const struct loader *l);
/* The per-process scheduler counts, mapped into this process: nr_cpus * TP_SCHED_SLOTS *
 * TP_SCHED_PTAB entries laid out as tailprof.h says; NULL without the scheduler programs. Take
 * counts with atomic exchanges. */
struct tp_sched_pentry *loader__sched_ptab(const struct loader *l);
/* Takes (reads and deletes) the entries of `sched_procs` whose drain period is before period
 * `before`, calling fn for each. Returns the number taken, or -errno. */
int loader__take_sched_procs(struct loader *l, uint32_t before,
			     void (*fn)(const struct tp_sched_key *, const struct tp_sched_proc *,
					void *),
			     void *ctx);
/* How a captured block whose user stack was not taken at switch-out gets it on its thread's way
 * back to user space: "task_work" (bpf_task_work_schedule_resume, Linux 6.18), "fexit_schedule"
 * (a program on the return from schedule(): older kernels with BPF trampolines), "sys_exit" (a
 * program on every syscall's return: kernels without them, or TAILPROF_SCHED_RETURN=sys_exit in
 * the environment, for tests), "none" without the scheduler programs. */
const char *loader__return_path(const struct loader *l);
/* True when that is "fexit_schedule": its BPF trampoline's return address is then on the kernel
 * stack of every thread blocked in schedule() (symbolizer_opts.hide_trampolines). False for a
 * NULL l. */
bool loader__fexit_schedule(const struct loader *l);
/* The scheduler programs' counters (TP_SCH_NR values, cumulative); zeros without them. */
void loader__sched_metrics(const struct loader *l, uint64_t out[TP_SCH_NR]);
/* True when the loaded programs walk user stacks with unwind tables. */
bool loader__unwind_tables(const struct loader *l);
/* The unwind_rows array, mapped into this process (writable; BPF reads it concurrently), and
 * its size in rows, or NULL when the table unwinder is off. Valid until loader__free(). */
struct tp_unwind_row *loader__unwind_rows(struct loader *l, uint32_t *nr_rows);
/* The unwind_pages array (page indexes of the tables, a sixteenth of the rows' entries), mapped
 * likewise, and its size, or NULL when the table unwinder is off. */
struct tp_unwind_page *loader__unwind_pages(struct loader *l, uint32_t *nr_pages);
/* Sets the executable mappings of process pid in unwind_procs. 0, or -E2BIG when the map is
 * full, or another negative errno. */
int loader__unwind_set_process(struct loader *l, uint32_t pid, const struct tp_proc_mappings *m);
/* Removes process pid from unwind_procs (its stacks are walked by frame pointers again). */
void loader__unwind_drop_process(struct loader *l, uint32_t pid);

/* True when the loaded sampler walks Python frames (loader_opts.python_frames). */
bool loader__python_frames(const struct loader *l);
/* Sets offset set `version` (< TP_PY_MAX_VERSIONS) of py_offsets. Returns 0 or a negative errno
 * (-EINVAL: version out of range or Python frames off). */
int loader__python_set_offsets(struct loader *l, uint32_t version, const struct tp_py_offsets *o);
/* Tells the walker that process pid runs the interpreter p describes (py_procs). Returns 0 or a
 * negative errno (-E2BIG: py_procs is full; -EINVAL: Python frames off). */
int loader__python_set_process(struct loader *l, uint32_t pid, const struct tp_py_proc *p);
/* Removes process pid from py_procs (absent: nothing). */
void loader__python_drop_process(struct loader *l, uint32_t pid);
/* Tells the exec program that executable (kdev: the kernel's dev_t, as tp_exec.exe_dev; ino)
 * is the interpreter x describes (py_exes): its next images get their py_procs entry at their
 * exec (TP_EXEC_PY_SET). Returns 0 or a negative errno (-E2BIG: py_exes is full; -EINVAL: Python
 * frames off). */
int loader__python_set_exe(struct loader *l, uint32_t kdev, uint64_t ino,
			   const struct tp_py_exe *x);
/* Adds key (tp_py_stack_end() of a stack wholly in an interpreter file's image) to py_seen: the
 * walker's samples of that stack stop waking user space. Returns 0 or a negative errno (-EINVAL:
 * Python frames off). */
int loader__python_mark_seen(struct loader *l, uint64_t key);
/* Benchmark (loader_opts.bench_pid): out[0] ns perf_sample spent on that process's samples,
 * out[1] their number, out[2] ns of their Python walks, out[3] Python frames they took. */
void loader__bench_cost(const struct loader *l, uint64_t out[4]);
/* Run time of each program; returns the number filled (<= max). */
size_t loader__prog_stats(struct loader *l, struct loader_prog_stats *out, size_t max);
/* The same for the programs of any BPF object (another module's skeleton). */
struct bpf_object;
size_t loader__object_prog_stats(struct bpf_object *obj, struct loader_prog_stats *out, size_t max);

#endif
