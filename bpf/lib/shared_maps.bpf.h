/* SPDX-License-Identifier: GPL-2.0-only */
/* The maps that the CPU sampler (profile.bpf.c) and the scheduler programs (sched.bpf.c) read but
 * other programs own: one definition for both readers, so that the loader's map reuse finds the
 * same type and sizes. Their owners define them alike: known_procs (profile.bpf.c itself),
 * stage_stacks (stage.bpf.c), gc_pausing (gc.bpf.c). */
#ifndef TAILPROF_SHARED_MAPS_BPF_H
#define TAILPROF_SHARED_MAPS_BPF_H

#include "label_sources.bpf.h"

/* known_procs: tgid -> start_ns of processes user space has been woken for. A sample of a process
 * not in it wakes user space at once (unless tailprofd wrote its unwind tables: perf_sample), so
 * the maps are read while the process lives (and, for the scheduler, its unwind tables are in
 * place for its next blocks). The sample or block (TP_EV_SEEN) that wakes user space inserts the
 * process (tp_mark_known), so each image wakes it once and tailprofd spends no bpf() call on it;
 * the sampler's exec/exit programs delete it, and tailprofd deletes what its cap on known
 * processes evicts. Sized for a host with many processes; when full, samples just wake user space
 * more often. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, __u64);
} known_procs SEC(".maps");

#define TP_PF_EXITING 0x00000004 /* include/linux/sched.h: set at do_exit's start */

/* Marks the process (pid, start_ns) known: its samples stop waking user space, which this one
 * wakes. Never for a thread that exits (the caller checks, TP_PF_EXITING): its process's exit
 * event may have deleted the entry already (the thread's last samples and switch come after it),
 * and nothing would delete it again. A failed insert (full, or the bucket busy on this CPU) only
 * means the next sample wakes user space again. */
static __always_inline void tp_mark_known(__u32 pid, __u64 start_ns)
{
	bpf_map_update_elem(&known_procs, &pid, &start_ns, BPF_ANY);
}

/* stage_stacks: the stages each thread is in, written by stage.bpf.c; read for the stage label. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tp_stage_stack);
} stage_stacks SEC(".maps");

/* gc_pausing: tgid -> GC pauses open in the process (0 between pauses), for each process that
 * has opened a GC phase; written by gc.bpf.c, deleted at exec and exit by profile.bpf.c; read
 * for the gc=1 label. The entries above 0 are counted in label_sources (TP_LABEL_GC_PAUSING). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} gc_pausing SEC(".maps");

/* The innermost stage task is in (untimed stages past the depth keep the deepest timed one), 0
 * when none. */
static __always_inline __u32 tp_stage_of(struct task_struct *task)
{
	struct tp_stage_stack *stages;
	__u32 d;

	if (!tp_label_seen(TP_LABEL_STAGE))
		return 0;
	stages = bpf_task_storage_get(&stage_stacks, task, 0, 0);
	if (!stages || !stages->depth)
		return 0;
	d = stages->depth < TP_STAGE_DEPTH ? stages->depth : TP_STAGE_DEPTH;
	return stages->frames[(d - 1) & (TP_STAGE_DEPTH - 1)].stage;
}

/* Whether process pid is in a GC pause now: a lookup only while some process may be. */
static __always_inline bool tp_in_gc(__u32 pid)
{
	__u64 *pausing;

	if (!tp_label_count(TP_LABEL_GC_PAUSING))
		return false;
	pausing = bpf_map_lookup_elem(&gc_pausing, &pid);
	return pausing && *pausing;
}

#endif
