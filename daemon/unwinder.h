/* SPDX-License-Identifier: GPL-2.0-only */
/* The unwinder: decides which unwind tables the BPF walker has. For each process it is told
 * about it reads /proc/PID/maps, builds (or finds cached) the table of every executable object
 * mapped (unwind_table), hands new tables to BPF, and hands BPF the process's sorted list of
 * executable mappings (start, end, load bias, table). Tables are per object, not per process:
 * one table serves every process that maps the object. When the last such process is forgotten
 * the object stays, idle, with its table in BPF, for the next process that maps it (a command
 * run again and again costs one build); idle tables are evicted, oldest first, when a new table
 * needs their room. Memory is bounded by the rows array: tables that do not fit are not loaded
 * and their objects are walked by frame pointers (counted).
 *
 * It knows nothing of BPF itself: it calls the ops it is given (the loader's unwind functions in
 * the daemon, fakes in tests). Threading: one thread (the drain loop). */
#ifndef TAILPROF_UNWINDER_H
#define TAILPROF_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tailprof.h"

/* Where mappings go (the loader's loader__unwind_* functions, or test fakes). set_process
 * returns 0 or a negative errno. */
struct unwinder_ops {
	int (*set_process)(void *ctx, uint32_t pid, const struct tp_proc_mappings *m);
	void (*drop_process)(void *ctx, uint32_t pid);
	/* Optional: gives the static layout of executable (dev: the kernel's dev_t, ino) the
	 * tables template t (loader__layout_tables; nr 0: none). 0, or a negative errno (-ENOENT:
	 * BPF no longer has the layout). */
	int (*set_layout)(void *ctx, uint32_t dev, uint64_t ino, const struct tp_layout_table *t);
};

/* A process made from its static executable's layout (symbolizer_layout), for
 * unwinder__add_layout_process. */
struct unwind_layout {
	uint64_t dev, ino;   /* the executable (dev in makedev() form) */
	uint64_t start_code; /* the process's mm->start_code */
	uint64_t vdso;	     /* its vDSO's address; 0: none */
	bool tables_set;     /* BPF set its entry at its exec from the layout's tables */
};

struct unwinder_opts {
	const struct unwinder_ops *ops;
	void *ops_ctx;
	/* Where tables go: the BPF unwind_rows array as mapped by the loader (BPF reads it
	 * concurrently), nr_rows long. The unwinder gives each object's table a run of it. */
	struct tp_unwind_row *rows;
	uint32_t nr_rows;
	/* The BPF unwind_pages array (page indexes of the tables), nr_pages long; NULL: none. */
	struct tp_unwind_page *pages;
	uint32_t nr_pages;
	const char *proc_root;	    /* default "/proc" */
	uint32_t max_processes;	    /* processes with mappings in BPF */
	uint64_t rescan_min_ns;	    /* at most one rescan per process per this; default 250 ms */
	uint64_t (*clock_ns)(void); /* monotonic clock; default CLOCK_MONOTONIC (tests fake it) */
};

struct unwinder_stats {
	uint64_t processes;	   /* processes whose mappings BPF has now */
	uint64_t objects;	   /* objects referenced now (with or without a table) */
	uint64_t idle_objects;	   /* objects no process maps, kept (with their tables) */
	uint64_t tables;	   /* tables loaded in BPF now, idle objects' included */
	uint64_t table_rows;	   /* their rows (8 bytes each) */
	uint64_t capacity_rows;	   /* rows unwind_rows holds (--unwind-memory) */
	uint64_t pages;		   /* page index entries in use (8 bytes each) */
	uint64_t over_budget;	   /* objects not given a table: the budget was spent (total) */
	uint64_t no_cfi;	   /* objects without unwind information (total) */
	uint64_t failed;	   /* objects that could not be opened or read (total) */
	uint64_t rescans;	   /* maps re-read because BPF met a PC in no known mapping */
	uint64_t rescans_same;	   /* of those, finding the same mappings (the next backs off) */
	uint64_t procs_dropped;	   /* processes left to frame pointers: no room in BPF (total) */
	uint64_t mappings_dropped; /* executable mappings beyond TP_MAX_PROC_MAPPINGS (total) */
	uint64_t build_ns;	   /* time spent building tables (total) */
	uint64_t builds;	   /* tables built (or tried: no CFI, unreadable) (total) */
	uint64_t idle_evicted;	   /* idle objects freed for room or past the idle cap (total) */
	uint64_t max_processes;	   /* the cap in force (--unwind-max-processes) */
	uint64_t layout_tables;	   /* static layouts given tables (set_layout) (total) */
	uint64_t layout_pins;	   /* static layouts whose tables' objects are kept for BPF now */
};

/* Returns an unwinder with nothing loaded, or NULL with errno set (EINVAL: no ops or rows,
 * zero limits). */
struct unwinder *unwinder__new(const struct unwinder_opts *opts);
/* Drops every process and table through the ops, then frees. NULL allowed. */
void unwinder__free(struct unwinder *u);

/* Process (pid, start_ns) is sampled: read its maps and give BPF its tables and mappings.
 * A process already known with the same start_ns is left alone (0). Returns 0, or a negative
 * errno: -ESRCH and the like when its maps cannot be read, -E2BIG when BPF has no room for
 * another process. */
int unwinder__add_process(struct unwinder *u, uint32_t pid, uint64_t start_ns);
/* unwinder__add_process for a process made from its static executable's layout lay. With
 * lay->tables_set, BPF made its entry at its exec from the layout's tables: it is taken over
 * (dropped when it cannot be: no room). Else the process's entry, relative to lay's start_code
 * and vDSO (struct tp_layout_table), becomes the layout's tables (set_layout): the executable's
 * next processes get their entry at their exec, and wake nobody. Only for an entry of the
 * executable's mappings and the vDSO above them, read from the image lay describes. The objects
 * those tables use are kept (pinned) while BPF may build entries from them: until another
 * layout takes their slot (256, by file) or none of the file's processes came for a minute,
 * when BPF's tables go first, and the references at the end of the next round. Returns as
 * unwinder__add_process. */
int unwinder__add_layout_process(struct unwinder *u, uint32_t pid, uint64_t start_ns,
				 const struct unwind_layout *lay);
/* The end of a drain's unwinder work (unwind_queue__run): pins taken out a round ago let their
 * objects go, and pins unused for a minute are taken out (looked for at most once a second). */
void unwinder__end_round(struct unwinder *u);
/* BPF met a PC of (pid, start_ns) in no known mapping (dlopen, a new JIT region, libraries
 * mapped after the maps were read): read the maps again, the process's first time at once,
 * then at most once per rescan_min_ns. A rescan that finds the same mappings hands BPF nothing
 * and doubles that wait for the process's next, up to 16 times (a broken frame chain's garbage
 * PC, which comes back); one that finds a change resets it. sure: no garbage (the walk's first
 * PC, the registers', was in no mapping; the recheck after an exec): rescan_min_ns only. Returns
 * 1 when the maps were read, 0 when rate-limited, or a negative errno. An unknown process is
 * added. */
int unwinder__rescan(struct unwinder *u, uint32_t pid, uint64_t start_ns, bool sure);
/* The process exec'd or exited: drop it from BPF and release its objects (idle when it was the
 * last process mapping them). bpf_dropped_ns (CLOCK_MONOTONIC; 0: none) is the time of the
 * exec or exit event at which BPF dropped the process itself (bpf/profile.bpf.c notify()):
 * mappings handed to BPF before it need no delete. */
void unwinder__forget_process(struct unwinder *u, uint32_t pid, uint64_t bpf_dropped_ns);
/* Forgets processes that no longer exist (their exit notification was lost): kill(pid, 0)
 * fails with ESRCH, or, with a fake proc_root, PROC_ROOT/PID is gone. Returns how many. */
int unwinder__prune(struct unwinder *u);
void unwinder__stats(const struct unwinder *u, struct unwinder_stats *st);

#endif
