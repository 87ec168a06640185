/* SPDX-License-Identifier: GPL-2.0-only */
/* What the symbolizer's files share (symbolizer.c: the process table, maps, resolving;
 * sym_process.c: process identity and labels; sym_objects.c: the objects of mappings, opened
 * and their debug files found).
 * Not a contract for other modules: symbolizer.h is. */
#ifndef TAILPROF_SYMBOLIZER_INTERNAL_H
#define TAILPROF_SYMBOLIZER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "elf_object.h"
#include "kallsyms.h"
#include "proc_maps.h"
#include "symbolizer.h"

/* The object of one mapping, opened when an address first falls into it. */
struct mapping_obj {
	struct object *obj; /* a reference; NULL for non-file mappings or until opened */
	bool opened;
};

struct process {
	struct process *hnext;
	struct process *lru_prev, *lru_next; /* most recently used first */
	uint32_t pid;
	uint64_t start_ns;
	/* identity beyond the pid, read with the first maps */
	bool info_read;
	bool status_read; /* uid, euid and info.ns_pid */
	struct process_info info;
	uint32_t uid, euid;
	/* JIT symbols from the process's perf map: an object of absolute addresses, replaced
	 * (windows keep the old one) when the file grows */
	struct object *jit;
	bool jit_seen;	   /* jit_size and jit_mtime_ns describe the file last looked at */
	bool jit_refused;  /* counted once in perf_map_rejected */
	uint64_t jit_size; /* of that file */
	int64_t jit_mtime_ns;
	uint64_t jit_checked_ns; /* CLOCK_MONOTONIC of the last look */
	uint64_t jit_read_ns;	 /* of the last read */
	bool readable;		 /* maps read and the process verified */
	bool loaded;		 /* symbolizer__loaded */
	bool reread_untold;	 /* loaded by a read after the first that found changes (note_leaf),
				  * not yet told (symbolizer__take_loaded_reread) */
	uint64_t exe_dev, exe_ino;	 /* its executable's, from its exec record; 0: unknown */
	uint64_t entry_ip;		 /* and its entry point there (exec_identity) */
	uint64_t start_code, vdso;	 /* where its executable's code and its vDSO begin
					  * (exec_identity); 0: unknown */
	uint64_t exe_size;		 /* its executable's size (exec_identity) */
	bool from_layout;		 /* maps made from its executable's static_layout */
	uint64_t loader_dev, loader_ino; /* the file mapped at entry_ip, its dynamic loader (the
					  * executable when it has none); 0: unknown */
	int err;			 /* why not, when !readable */
	uint64_t last_read_ns;		 /* CLOCK_MONOTONIC of the last maps read attempt */
	uint64_t maps_read_ns;		 /* of the one that read maps */
	uint32_t backoff;		 /* reads in a row that found the same mappings (up to
					  * REREAD_BACKOFF_MAX): a reread for an address past the leaf
					  * waits RESCAN_INTERVAL_NS << backoff */
	struct proc_maps maps;
	struct mapping_obj *mobjs; /* parallel to maps.v */
};

/* A recent fork: the child's maps are its parent's until it execs. */
struct fork_link {
	uint32_t child, parent;
	uint64_t child_start, parent_start;
	/* the child's cgroups, PID namespace and executable's name at its fork (exec_identity's
	 * fields; 0, "": unknown), its identity until it execs */
	uint64_t cgroup_id, cgroup_v1_id;
	uint32_t pid_ns, ns_pid;
	char name[PROCESS_NAME_LEN];
};

/* Forks remembered, a cache indexed by child pid: a newer fork overwrites an older one. */
#define FORK_LINKS 4096

/* The labels of a process that exited, for its last samples, or of one its exec or fork record
 * told all of (symbolizer_info_told) seen with no struct process; indexed by pid like forks,
 * dropped at its exec. */
struct exited {
	uint32_t pid;
	uint64_t start_ns;
	struct process_info info;
};
#define EXITED 1024

/* A recent exec's identity (symbolizer__note_exec); indexed by pid like forks. */
struct exec_note {
	uint32_t pid;
	uint64_t start_ns;
	struct exec_identity id;
};
#define EXEC_NOTES 1024

/* The code files a process of an executable mapped once its dynamic loader's work was done
 * (note_leaf): their number and an order-free hash of their (dev, ino). A later process of the
 * executable whose first maps read already holds that set needs no read after the loader's work.
 * Direct-mapped by the executable's (dev, ino): a colliding executable replaces the other. */
struct loaded_set {
	uint64_t exe_dev, exe_ino; /* makedev() form; exe_ino 0: empty */
	uint64_t hash;
	uint32_t nr;
};
#define LOADED_SETS 256

/* Cgroup v2 ids (kernfs node ids, never reused while the system runs) with the path read for
 * them from a process's cgroup file: a direct-mapped cache, a colliding id replaces the other. */
struct cgroup_id_path {
	uint64_t kernfs_id; /* the v2 cgroup's; 0: empty */
	uint64_t v1_id;	    /* the name=systemd cgroup's (hybrid layouts); 0: none */
	uint32_t cgroup;    /* cgroups.h id */
};
#define CGROUP_ID_PATHS 1024

/* The layout of a static executable, taken from the maps of a process that ran it (all its code
 * its executable's): the executable's mappings relative to the process's start_code (the same in
 * every process of the file: a static-PIE's bias moves both), and its vDSO's size. A process
 * exec'd from it later is given these maps instead of reading its own (symbolizer__note_exec).
 * Direct-mapped by (dev, ino): a colliding executable replaces the other. */
#define STATIC_LAYOUTS	256 /* = TP_STATIC_LAYOUTS, BPF's table of them */
#define LAYOUT_MAPPINGS 4
struct static_layout {
	uint64_t dev, ino; /* makedev() form; ino 0: empty */
	uint64_t size;	   /* the file's size then: one rewritten in place since is another */
	uint32_t nr;
	struct {
		uint64_t start, end, pgoff; /* start and end relative to start_code (mod 2^64) */
	} v[LAYOUT_MAPPINGS];
	char *path;	     /* the executable's, as the maps named it */
	uint64_t vdso_size;  /* 0: no vDSO */
	struct object *vdso; /* a reference, once a process of the file opened its vDSO */
};

struct symbolizer {
	char *proc_root;
	char root_pid_ns[64];	   /* the ns/pid link of the proc mount's PID namespace, or empty */
	uint32_t root_pid_ns_inum; /* its inode number, parsed from it; 0: unknown */
	bool root_pid_ns_read;
	char **debug_dirs;
	size_t nr_debug_dirs;
	uint32_t max_processes, max_objects;
	size_t objects_floor; /* objects after the last scan that could not get under the cap */
	struct process *lru_head, *lru_tail;
	uint64_t ns_per_tick;
	int (*live_start)(void *ctx, uint32_t pid, uint64_t *start_ns);
	uint64_t (*live_since)(void *ctx);
	void *live_ctx;
	int (*cgroup_id)(void *ctx, bool v1, const char *path, uint64_t *id);
	void *cgroup_ctx;
	struct object *kernel;
	/* BPF trampolines whose frames are left out (hide_trampolines), lowest first: each
	 * function that fentry/fexit programs trace has one */
	bool hide_trampolines;
	char *kallsyms_path;
	struct kernel_range *trampolines;
	size_t nr_trampolines;
	uint32_t trampoline_misses;   /* blocked stacks' leaves in none since they were read */
	uint32_t trampoline_hits;     /* and in one */
	uint64_t trampolines_read_ns; /* CLOCK_MONOTONIC of that read */
	struct object_cache objects;
	struct process **procs;
	size_t nr_buckets;
	size_t nr_procs;    /* entries, unreadable ones included */
	size_t nr_readable; /* entries with maps */
	/* Mappings replaced by a rescan: their objects may back frames of the current call, so they
	 * are released at the start of the next call (frames are borrowed until then). */
	struct proc_maps stale_maps;
	struct mapping_obj *stale_mobjs;
	struct object *stale_jit;
	struct symbolizer_stats stats;
	struct fork_link forks[FORK_LINKS];
	struct exited exited[EXITED];
	struct exec_note execs[EXEC_NOTES];
	struct cgroup_id_path cgroup_paths[CGROUP_ID_PATHS];
	struct loaded_set loaded_sets[LOADED_SETS];
	int (*layout_known)(void *ctx, uint32_t dev, uint64_t ino, bool known);
	void *layout_ctx;
	struct static_layout layouts[STATIC_LAYOUTS];
};

/* ---- symbolizer.c ---- */

/* Releases what a rescan replaced (s->stale_*): called at the start of each call that may
 * return frames, when no frame of an earlier call is borrowed any more. */
void symbolizer_release_stale(struct symbolizer *s);

/* ---- sym_kernel.c ---- */

/* Sets s's kallsyms path and kernel object from opts, and, with opts->hide_trampolines, its BPF
 * trampolines, from one read of the file. */
void symbolizer_load_kernel(struct symbolizer *s, const struct symbolizer_opts *opts);

/* ---- sym_process.c ---- */

/* 0 when pid is the process that started at start_ns (boot-time ns), else -ESRCH (gone, or the
 * pid reused) or another negative errno. */
int symbolizer_check_identity(struct symbolizer *s, uint32_t pid, uint64_t start_ns);
/* Reads p's uids and PID-namespace pid from its status file (once; p->status_read). */
void symbolizer_read_status(struct symbolizer *s, struct process *p);
/* The identity p exec'd with (symbolizer__note_exec), or NULL. */
const struct exec_identity *symbolizer_exec_identity_of(struct symbolizer *s,
							const struct process *p);
/* The identity p, a forked child that has not exec'd, has from its fork record
 * (symbolizer__note_fork) into *out: its cgroups, PID namespace and executable's name at the fork;
 * no other executable fields. False when p is no such child or its fork told nothing. */
bool symbolizer_fork_identity_of(struct symbolizer *s, const struct process *p,
				 struct exec_identity *out);
/* p's exec identity (symbolizer_exec_identity_of), else, for a forked child that has not exec'd,
 * its fork record's in *forked (symbolizer_fork_identity_of), returning forked; else NULL. */
const struct exec_identity *symbolizer_record_identity(struct symbolizer *s,
						       const struct process *p,
						       struct exec_identity *forked);
/* Fills p's labels (p->info) and executable identity, from its exec record where it has one;
 * reads /proc only when live (its identity checked). Never fails: what cannot be read stays
 * empty. */
void symbolizer_read_info(struct symbolizer *s, struct process *p, bool live);
/* Whether p's exec record (or, for a forked child that has not exec'd, its fork record) tells
 * all of its labels: its executable's name, its PID namespace and cgroups whose path is known.
 * Then symbolizer_read_info() reads nothing from /proc, live or not, and whether p still runs
 * needs no check. */
bool symbolizer_info_told(struct symbolizer *s, const struct process *p);

/* ---- sym_objects.c ---- */

/* The object of file mapping m of pid, with a reference; never NULL. */
struct object *symbolizer_open_object(struct symbolizer *s, uint32_t pid,
				      const struct proc_mapping *m);
/* The vDSO of pid at mapping m, with a reference, or NULL. */
struct object *symbolizer_open_vdso(struct symbolizer *s, uint32_t pid,
				    const struct proc_mapping *m);
/* The JIT symbols of p from its perf map (/tmp/perf-NSPID.map inside its root), p's object (no
 * reference for the caller): read when first seen and again when the file grew or changed,
 * looked at most every PERF_MAP_CHECK_NS, read again at most every PERF_MAP_REREAD_NS, and not
 * while the JIT tables of all processes (the versions windows hold included) are over
 * JIT_BUDGET_BYTES. NULL when there is none. The replaced object is released at the next call
 * (frames of this call may use it). */
struct object *symbolizer_jit_object(struct symbolizer *s, struct process *p);

#endif
