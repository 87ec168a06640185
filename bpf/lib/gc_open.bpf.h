/* SPDX-License-Identifier: GPL-2.0-only */
/* gc_open: (pid, slot) -> the GC phase of that slot (struct tp_gc_open: its start; open while
 * TP_GC_OPEN_ACTIVE is set). Made by the GC programs (gc.bpf.c) at the process's first phase in
 * the slot and written in place at later ones (an end clears the flags); the sampler's exec and
 * exit programs (profile.bpf.c, the same map through the loader's bpf_map__reuse_fd) delete a
 * process's entries where it has a gc_pausing entry, which every process that opened a phase
 * has (and the making of that entry clears the pid's slots, gc.bpf.c). LRU so that a leak
 * cannot fill it. 8192: two slots each of 4096 processes with GC state (a JVM's or Go's; a
 * CPython uses one). Without GC programs the loader makes the sampler's one entry: nothing
 * writes it then. */
#ifndef TAILPROF_GC_OPEN_BPF_H
#define TAILPROF_GC_OPEN_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct tp_gc_open_key);
	__type(value, struct tp_gc_open);
} gc_open SEC(".maps");

/* Deletes every gc_open entry of process pid (one per slot; a slot it never used is a miss). */
static __always_inline void tp_gc_open_clear(__u32 pid)
{
	for (__u32 slot = 0; slot < TP_GC_SLOT_NR; slot++) {
		struct tp_gc_open_key key = {.pid = pid, .slot = slot};

		bpf_map_delete_elem(&gc_open, &key);
	}
}

#endif
