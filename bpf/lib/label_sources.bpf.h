/* SPDX-License-Identifier: GPL-2.0-only */
/* label_sources: whether anything has ever written the maps the stage and gc=1 labels come from.
 * The stage programs set TP_LABEL_STAGE when a thread first enters a stage, the GC programs
 * TP_LABEL_GC when a GC phase first opens; the CPU sampler and the scheduler look up a thread's
 * stage (task storage) and its process's pauses (a hash) only once they are set, and the
 * sampler's exec and exit programs delete a process's GC state only then. On a host that
 * traces no stage and no GC, those lookups (some 150 ns each on this machine kind, where a miss
 * walks the task's storage list or hashes) are saved for every sample. One map shared by every
 * object through the loaders (bpf_map__reuse_fd), created by the first of them. */
#ifndef TAILPROF_LABEL_SOURCES_BPF_H
#define TAILPROF_LABEL_SOURCES_BPF_H

#define TP_LABEL_STAGE 0
#define TP_LABEL_GC    1

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u32);
} label_sources SEC(".maps");

/* Whether label source i has ever been written (sticky). */
static __always_inline bool tp_label_seen(__u32 i)
{
	__u32 *v = bpf_map_lookup_elem(&label_sources, &i);

	return v && *(volatile __u32 *)v;
}

/* Marks label source i written (a load first: no store to a shared line once set). */
static __always_inline void tp_label_mark(__u32 i)
{
	__u32 *v = bpf_map_lookup_elem(&label_sources, &i);

	if (v && !*(volatile __u32 *)v)
		*(volatile __u32 *)v = 1;
}

#endif
