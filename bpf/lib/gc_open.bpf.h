/* SPDX-License-Identifier: GPL-2.0-only */
/* gc_open: (pid, slot) -> the open GC phase (struct tp_gc_open, its start). Written by the GC
 * programs (gc.bpf.c) at a phase's begin, deleted at its end; the sampler's exec and exit programs
 * (profile.bpf.c, the same map through the loader's bpf_map__reuse_fd) delete a process's
 * entries, which a process that dies or execs inside a phase leaves. LRU so that a leak cannot
 * fill it. 8192: four slots of 2048 processes in GC at once. Without GC programs the loader makes
 * the sampler's one entry: nothing writes it then. */
#ifndef TAILPROF_GC_OPEN_BPF_H
#define TAILPROF_GC_OPEN_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct tp_gc_open_key);
	__type(value, struct tp_gc_open);
} gc_open SEC(".maps");

#endif
