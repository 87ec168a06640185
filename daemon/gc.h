/* SPDX-License-Identifier: GPL-2.0-only */
/* GC tracking: finds the runtimes of the host's processes (a /proc scan at start-up and every
 * 30 s, each exec, again 250 ms after it for libraries the dynamic loader maps, each dlopen),
 * attaches their probes once per object (device and inode) for every process through
 * gc_probes, detaches them 1 s after the last process using the object went, and keeps each
 * window's GC events. Runs on the drain thread; the status may be read from any thread.
 *
 * Configuration: struct gc_opts is what `--gc=auto|off` sets, and what the config file's [gc]
 * section maps onto: `enabled = auto|off` -> enabled, `jvm = on|off`, `python = on|off`,
 * `go = on|off` -> jvm, python, go. */
#ifndef TAILPROF_GC_H
#define TAILPROF_GC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gc_discovery.h"
#include "tailprof.h"

struct gc_probes;

struct gc_opts {
	bool enabled; /* --gc=auto: true; --gc=off: nothing is loaded or attached */
	bool jvm;     /* probe HotSpot JVMs */
	bool python;  /* probe CPython */
	bool go;      /* probe Go programs */
};

/* The defaults: everything on. */
#define GC_OPTS_DEFAULT ((struct gc_opts){.enabled = true, .jvm = true, .python = true, .go = true})

/* Parses --gc's value ("auto" or "off") into opts->enabled. 0, or -EINVAL. */
int gc_opts__parse_mode(const char *value, struct gc_opts *opts);

/* One GC event as windows keep it (times CLOCK_MONOTONIC). */
struct gc_event {
	uint32_t pid, tid;
	uint16_t runtime; /* enum tp_gc_runtime */
	uint16_t kind;	  /* enum tp_gc_kind */
	uint32_t pad;
	int64_t arg, arg2; /* as in struct tp_gc_event */
	uint64_t start_ns, duration_ns;
	char comm[16]; /* the process's name when discovered, "" when unknown */
};

/* The GC events of one window, in arrival order (not sorted). */
#define GC_WINDOW_MAX_EVENTS 65536
struct gc_window {
	struct gc_event *v;
	size_t nr, cap;
	uint64_t dropped; /* past GC_WINDOW_MAX_EVENTS, or no memory */
};

/* Appends ev to *gw (allocated on first use). Returns 0, or -ENOSPC / -ENOMEM (counted in
 * (*gw)->dropped when *gw exists). */
int gc_window__add(struct gc_window **gw, const struct gc_event *ev);
/* NULL allowed. */
void gc_window__free(struct gc_window *gw);

/* One object with a runtime, for the status. */
enum gc_object_state {
	GC_OBJ_ATTACHED,    /* probes attached */
	GC_OBJ_DETACHED,    /* no process uses it any more: probes detached */
	GC_OBJ_UNSUPPORTED, /* a runtime we cannot probe (reason says why) */
	GC_OBJ_FAILED,	    /* attaching failed (reason says why); not retried */
	GC_OBJ_DISABLED,    /* its runtime is turned off (gc_opts) */
};
const char *gc_object_state_name(enum gc_object_state s);

struct gc_object_status {
	struct gc_object_info info;
	enum gc_object_state state;
	char path[256];
	uint64_t dev, ino;
	uint32_t processes; /* processes known to map it now */
	int probes;	    /* attached probes */
};

struct gc_stats {
	uint64_t scans;		     /* processes' maps read */
	uint64_t exec_scans_skipped; /* execs of an executable classified before: no maps read */
	uint64_t later_looks_shared; /* looks after an exec made in maps another module had read
				      * (gc__process_loaded): no read of their own */
	uint64_t attaches, detaches; /* objects */
	int probes_attached;	     /* now, dlopen uretprobe included */
	uint64_t late;		     /* events older than every window held */
	uint64_t pauses[TP_GC_RUNTIME_NR], pause_ns[TP_GC_RUNTIME_NR]; /* since start */
	uint64_t metrics[TP_GCM_NR];
};

/* probes may be NULL (then nothing is attached: tests of the bookkeeping, or --gc=off).
 * Scans /proc once. Returns NULL with errno set. */
struct gc *gc__new(const struct gc_opts *opts, struct gc_probes *probes);
/* Detaches every object and frees. NULL allowed. */
void gc__free(struct gc *g);

/* What an exec event says of the new image (bpf/profile.bpf.c, struct tp_exec), so that the
 * looks at the process after it need neither stat /proc/PID/exe nor read /proc/PID/comm. */
struct gc_exec {
	uint64_t exe_dev; /* the executable's device, makedev() of /proc/PID/maps' major:minor */
	uint64_t exe_ino; /* and inode number; 0: unknown (then /proc/PID/exe is looked at) */
	char comm[16];	  /* the process's comm after the exec; "": unknown */
};

/* Notices from the event stream, handled at the next gc__tick, in order. exe (NULL: unknown)
 * is the exec's identity of the new image. */
void gc__process_exec(struct gc *g, uint32_t pid, const struct gc_exec *exe);
void gc__process_exit(struct gc *g, uint32_t pid);
void gc__note_dlopen(struct gc *g, uint32_t pid);
struct proc_maps;
/* Process pid's maps, *maps (taken: left empty), were read after its dynamic loader's work
 * (symbolizer__loaded): the look due PROC_MAPS_EXEC_RECHECK_NS after its exec is made in them at
 * the next gc__tick, with no read of its own. Nothing when no such look is due. */
void gc__process_loaded(struct gc *g, uint32_t pid, struct proc_maps *maps);
/* Handles the notices, due re-scans, lingering detaches and the periodic scan. now_ns is
 * CLOCK_MONOTONIC. Reads /proc and attaches probes: call it outside the collector's lock. */
void gc__tick(struct gc *g, uint64_t now_ns);
/* Reads every process's maps now (the start-up and periodic scan). */
void gc__scan_all(struct gc *g);

/* Turns a BPF event record into *out, with the process's name, and counts it. */
void gc__event(struct gc *g, const struct tp_gc_event *rec, struct gc_event *out);
/* Counts an event that fell before every window held. */
void gc__count_late(struct gc *g);

/* The objects with a runtime seen, into out[0..max); returns how many there are (may exceed
 * max). And the counters. Any thread. */
size_t gc__objects(struct gc *g, struct gc_object_status *out, size_t max);
void gc__stats(struct gc *g, struct gc_stats *st);
const struct gc_opts *gc__opts(const struct gc *g);

#endif
