/* SPDX-License-Identifier: GPL-2.0-only */
/* GC probes: loads bpf/gc.bpf.c once, attaches a runtime's USDT probes or uprobes to one object
 * for every process (pid -1: later processes too, USDT semaphores included), and the dlopen
 * uretprobe on libc. Like the loader, the only place that touches the GC skeleton; of discovery
 * it knows only the description of an object (struct gc_object_info), and nothing of windows. */
#ifndef TAILPROF_GC_PROBES_H
#define TAILPROF_GC_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc_discovery.h"
#include "loader.h"
#include "tailprof.h"

/* Loads the programs and maps (nothing attached). label_sources_fd: > 0, the label_sources map
 * to share (probes__label_sources_fd); 0: its own. Sets the gc capability in f (may be NULL):
 * on, or off with what the kernel lacks or why the object did not load. Returns NULL with errno
 * set when it is off (the features report says why; nothing logged here). */
struct gc_probes *gc_probes__new(int label_sources_fd, struct features *f);
/* Its label_sources map (bpf/lib/label_sources.bpf.h). */
int gc_probes__label_sources_fd(const struct gc_probes *p);
/* Detaches everything still attached (attachments must be freed first) and frees. NULL ok. */
void gc_probes__free(struct gc_probes *p);

/* The gc_events ring buffer (struct tp_gc_event records), the gc_pausing map (pid -> pauses
 * open) and the gc_open map ((pid, slot) -> open phase), for ring_buffer__add and for the CPU
 * sampler (loader_opts.gc_pausing_fd, gc_open_fd), whose exec and exit programs delete a
 * process's entries of both. */
int gc_probes__events_fd(const struct gc_probes *p);
int gc_probes__pausing_fd(const struct gc_probes *p);
int gc_probes__open_fd(const struct gc_probes *p);

/* Attaches the dlopen uretprobe to the C library at path. 0 or -errno (logged). */
int gc_probes__attach_dlopen(struct gc_probes *p, const char *libc_path);

/* Attaches the probes that info (a supported object, from gc_discovery__classify) names to the
 * ELF object at path for every process: JVM gc__begin/end (and the safepoint probes when
 * info->safepoints); CPython by USDT gc__start/done, or by uprobe an entry uprobe and a
 * uretprobe at info->collect_offset (the uretprobe first, and detached last, so that no call is
 * seen entering without its return); Go's four runtime entry uprobes (gc_discovery.h). All or
 * nothing: returns the attachment, or NULL with errno set and err (errlen bytes) naming the
 * probe and the problem. */
struct gc_attachment *gc_probes__attach(struct gc_probes *p, const struct gc_object_info *info,
					const char *path, char *err, size_t errlen);
/* Probes (links) an attachment holds. */
int gc_attachment__nr_links(const struct gc_attachment *a);
/* Detaches, the last attached first, and frees. NULL allowed. */
void gc_attachment__free(struct gc_attachment *a);

/* The GC programs' counters (enum tp_gc_metric), since load. */
void gc_probes__metrics(struct gc_probes *p, uint64_t out[TP_GCM_NR]);
/* Run time and runs of each GC program; returns the number filled (<= max). */
size_t gc_probes__prog_stats(struct gc_probes *p, struct loader_prog_stats *out, size_t max);

#endif
