/* SPDX-License-Identifier: GPL-2.0-only */
/* label_sources: whether anything has ever written the maps the stage and gc=1 labels come from,
 * and how many processes are in a GC pause now.
 * The stage programs set TP_LABEL_STAGE when a thread first enters a stage, the GC programs
 * TP_LABEL_GC when a GC phase first opens; the CPU sampler and the scheduler look up a thread's
 * stage (task storage) only once TP_LABEL_STAGE is set, and the sampler's exec and exit programs
 * delete a process's GC phases only once TP_LABEL_GC is. On a host that traces no stage and no
 * GC, those lookups (some 150 ns each on this machine kind, where a miss walks the task's
 * storage list or hashes) are saved for every sample. TP_LABEL_GC_PAUSING counts the processes
 * in a pause: the gc_pausing entries above 0. The GC programs add one as an entry goes from 0 to
 * 1 and take one off as it goes back to 0; the exec and exit programs take one off for an entry
 * they delete above 0 (no thread of the process is left to end its pause). An entry the LRU
 * evicts while above 0 leaves the count too high,
 * never too low, so a count of 0 means that no process is in a pause: a sample then needs no
 * lookup (a cold miss some 0.3-0.5 us at 99 Hz). One map shared by every object through the
 * loaders (bpf_map__reuse_fd), created by the first of them. */
#ifndef TAILPROF_LABEL_SOURCES_BPF_H
#define TAILPROF_LABEL_SOURCES_BPF_H

#define TP_LABEL_STAGE	    0
#define TP_LABEL_GC	    1
#define TP_LABEL_GC_PAUSING 2 /* a count, not a flag */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u32);
} label_sources SEC(".maps");

/* Entry i now: a flag (TP_LABEL_STAGE, TP_LABEL_GC: 0 or 1) or the count TP_LABEL_GC_PAUSING,
 * never below the number of entries it counts. */
static __always_inline __u32 tp_label_count(__u32 i)
{
	__u32 *v = bpf_map_lookup_elem(&label_sources, &i);

	return v ? *(volatile __u32 *)v : 0;
}

/* Whether label source i has ever been written (sticky). */
static __always_inline bool tp_label_seen(__u32 i)
{
	return tp_label_count(i) != 0;
}

/* Marks label source i written (a load first: no store to a shared line once set). */
static __always_inline void tp_label_mark(__u32 i)
{
	__u32 *v = bpf_map_lookup_elem(&label_sources, &i);

	if (v && !*(volatile __u32 *)v)
		*(volatile __u32 *)v = 1;
}

/* Adds delta (1 or -1) to count i (TP_LABEL_GC_PAUSING), atomically. */
static __always_inline void tp_label_add(__u32 i, int delta)
{
	__u32 *v = bpf_map_lookup_elem(&label_sources, &i);

	if (v)
		__sync_fetch_and_add(v, delta);
}

#endif
