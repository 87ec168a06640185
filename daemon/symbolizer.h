/* SPDX-License-Identifier: GPL-2.0-only */
/* The symbolizer: turns (process, addresses) into frames of (object, address) and names them.
 *
 * Objects are ELF files (and the kernel) with their symbol tables, cached per object, never per
 * process, and kept alive by references: a window that holds a stack holds its objects, so a
 * process that exited or a binary that was replaced still symbolizes later. Frames are resolved
 * when the daemon learns of them (drain time), while /proc/PID/maps still exists.
 *
 * Threading: every function here is called from one thread (the drain loop), except the
 * read-only object accessors (path, name, build_id, is_kernel, range, lookup), which query threads
 * call on objects that windows keep alive, concurrently with the drain thread. */
#ifndef TAILPROF_SYMBOLIZER_H
#define TAILPROF_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct object;

/* One resolved frame. For a user frame `obj` is the ELF object and `addr` the link-time virtual
 * address inside it (what `addr2line -e OBJECT ADDR` takes). For a kernel frame `obj` is the
 * kernel object and `addr` the kernel address. `obj` NULL: the address could not be tied to any
 * object (anonymous memory, or the process vanished before its maps were read); `addr` is then
 * the raw address. */
struct frame {
	struct object *obj;
	uint64_t addr;
};

/* --- objects: read-only accessors, safe from any thread that holds a reference --- */

/* Path of the object as the process mapped it (e.g. /usr/lib/x86_64-linux-gnu/libc.so.6), or
 * "[kernel.kallsyms]". Never NULL. */
const char *object__path(const struct object *obj);
/* Last path component of object__path(). Never NULL. */
const char *object__name(const struct object *obj);
/* GNU build ID as lowercase hex, "" when the object has none. Never NULL. */
const char *object__build_id(const struct object *obj);
bool object__is_kernel(const struct object *obj);
/* The executable part of the object in the address space of struct frame.addr: [*start, *limit)
 * and the file offset that *start corresponds to (for pprof's Mapping). */
void object__range(const struct object *obj, uint64_t *start, uint64_t *limit,
		   uint64_t *file_offset);
/* Name of the function whose symbol contains addr (value <= addr < value + size for ELF; up to
 * the next symbol for kallsyms), or NULL: no guessing from the nearest symbol below. The string
 * lives as long as the object. *sym_start (may be NULL) receives the symbol's start. */
const char *object__lookup(const struct object *obj, uint64_t addr, uint64_t *sym_start);
/* Whether addr (a struct frame address) is in a symbol of obj named name (as object__lookup()
 * names it). The first call scans the whole symbol table (some 20,000 symbols in a CPython
 * binary) and the object keeps that name's extents: later calls with the same name cost a compare
 * or two. Drain thread only (it writes the object). One name per object is kept, the first asked
 * (name must outlive the object: a literal), so callers pass the same name always (another is
 * answered by a symbol lookup each time). */
bool object__in_symbol(struct object *obj, uint64_t addr, const char *name);
/* The start of the unwind-table function extent (an .eh_frame FDE, else a .debug_frame one) that
 * holds addr, when symbols do not cover that extent whole: true and *start, else false (a symbol
 * names addr, or no FDE holds it). For code that object__lookup() cannot name: a static function
 * of a stripped object, a vDSO helper without a symbol. */
bool object__fde_start(const struct object *obj, uint64_t addr, uint64_t *start);
/* The name of a frame at addr that no symbol names, one per function and never a neighbour's:
 * "NAME+0xSTART" (NAME object__name(), START the start of the FDE holding addr, in hex), else
 * "NAME+0xADDR". Written into buf (len bytes, cut to fit); returns buf. */
const char *object__anon_name(const struct object *obj, uint64_t addr, char *buf, size_t len);
/* For the kernel object: the module (e.g. "nf_tables", "bpf") of the symbol containing addr, or
 * NULL for the core kernel, an unknown address, or a non-kernel object. object__lookup() names
 * module functions without their module. The string lives as long as the object. */
const char *object__kernel_module(const struct object *obj, uint64_t addr);
/* Reference counting; object__put(NULL) is a no-op. The last put frees the object and drops it
 * from the symbolizer's cache. Called only from the drain thread (or under the caller's exclusive
 * lock): query threads only read objects that windows keep alive. */
struct object *object__get(struct object *obj);
void object__put(struct object *obj);

/* --- the symbolizer --- */

struct symbolizer_opts {
	const char *proc_root;	  /* default "/proc" */
	const char *kallsyms;	  /* default "/proc/kallsyms" */
	const char *kernel_notes; /* kernel build ID; default "/sys/kernel/notes" */
	/* Leave frames in BPF trampolines out of kernel stacks: with tailprofd's fexit/schedule
	 * (loader__return_path) one is on the kernel stack of every thread blocked in schedule().
	 */
	bool hide_trampolines;
	/* Where separate debug files live, searched in order (copied); NULL/0: "/usr/lib/debug".
	 * For an object without .symtab: DIR/.build-id/NN/REST.debug for its build ID, then its
	 * .gnu_debuglink name next to the object, in .debug/ beside it, and under DIR + the
	 * object's directory (GDB's and Debian's layout); then its MiniDebugInfo. */
	const char *const *debug_dirs;
	size_t nr_debug_dirs;
	/* Caps (0: default). Processes whose maps are cached (default 8192): past it the least
	 * recently used process is dropped (its maps are read again if it is sampled again).
	 * Objects (default 4096): past it the least recently used processes that alone keep an
	 * object are dropped, freeing it; objects that windows reference are never evicted. */
	uint32_t max_processes;
	uint32_t max_objects;
	/* Where the start time (boot-time ns) of the process that has a pid now comes from before
	 * /proc/PID/stat is read (loader__live_start): 0, or a negative errno when it does not
	 * know the pid (then the stat file is read). NULL: always the stat file. */
	int (*live_start)(void *ctx, uint32_t pid, uint64_t *start_ns);
	/* The boot time (ns) from which that source has every process until it exits
	 * (loader__live_since), 0: none. A process started later that it does not have is gone,
	 * with no /proc read. NULL: none. */
	uint64_t (*live_since)(void *ctx);
	void *live_ctx;
	/* The kernfs id of cgroup path in the v2 hierarchy (v1 false) or the v1 name=systemd one,
	 * 0 or a negative errno (cgroups__id_of): a cgroup path read for a process is remembered
	 * for the cgroups it exec'd in only when it names them. NULL: never remembered. */
	int (*cgroup_id)(void *ctx, bool v1, const char *path, uint64_t *id);
	void *cgroup_ctx;
	/* Told when the layout of a static executable (dev: the kernel's dev_t, major << 20 |
	 * minor; ino) is recorded (known) or dropped (loader__static_layout): processes exec'd from
	 * it are then named from it (symbolizer__note_exec, exec_identity.layout_known). NULL: no
	 * layout is recorded. */
	int (*layout_known)(void *ctx, uint32_t dev, uint64_t ino, bool known);
	void *layout_ctx;
};

/* What the symbolizer knows of a process beyond its pid, from /proc when its maps were first
 * read. */
#define PROCESS_NAME_LEN 64
struct process_info {
	char name[PROCESS_NAME_LEN]; /* the executable's file name (/proc/PID/exe, cut to 63 bytes),
				      * else argv[0]'s last component; "" when unknown */
	uint32_t ns_pid;	     /* the pid in the process's own PID namespace, 0 when that is
				      * the daemon's namespace or unknown */
	uint32_t cgroup;	     /* its cgroup (cgroups.h id), 0: the root or unknown */
};

struct symbolizer_stats {
	uint64_t objects;	   /* objects cached now */
	uint64_t processes;	   /* processes whose maps are cached now */
	uint64_t maps_reads;	   /* /proc/PID/maps reads, rescans included */
	uint64_t maps_failed;	   /* reads that failed (process gone, pid reused) */
	uint64_t elf_failed;	   /* objects whose ELF could not be read (named by path+offset): */
	uint64_t elf_unopenable;   /* of those, the file could not be opened (process gone, other
				    * namespace, no longer the mapped file) */
	uint64_t elf_malformed;	   /* of those, the file was not an ELF object we could read */
	uint64_t debug_rejected;   /* separate debug files found but refused: not ELF, no .symtab,
				    * another build ID or CRC, or unreadable when loaded */
	uint64_t unresolved;	   /* user frames in no known mapping */
	uint64_t fork_fallbacks;   /* samples of a vanished child resolved with its parent's maps */
	uint64_t fork_borrowed;	   /* samples of a forked child (not exec'd, maps never read)
				    * resolved with its parent's maps, no read of its own */
	uint64_t loaded_by_sample; /* processes whose maps were read after a sample in code that
				    * runs after their dynamic loader's work (symbolizer__loaded) */
	uint64_t loaded_by_set;	   /* processes whose maps, read before such a sample, already
				    * held the code files an earlier process of their executable
				    * mapped once loaded: not read again */
	uint64_t loaded_static;	   /* processes with no code mapped but their executable's */
	uint64_t from_layout;	   /* of those, processes whose maps were made from their static
				    * executable's layout at their exec, never read */
	uint64_t layouts_missing;  /* execs BPF took for known layouts that the symbolizer no
				    * longer had (their processes are read as any other) */
	uint64_t layouts;	   /* static executables' layouts recorded now */
	uint64_t rereads_saved;	   /* maps rereads not made: the address in no executable mapping
				    * lay in a mapped object's data (symbolizer__in_object_data) */
	uint64_t debug_files;	   /* objects whose symbols came from a separate debug file */
	uint64_t minidebuginfo;	   /* objects whose symbols came from MiniDebugInfo */
	uint64_t perf_map_reads;   /* JIT perf maps read (first read and each growth) */
	uint64_t perf_map_rejected; /* perf maps refused: link, wrong owner, not a file, too big */
	uint64_t perf_map_torn_reads;	 /* perf map reads torn by a rewrite, read again */
	uint64_t perf_map_lines_skipped; /* lines of perf maps read that were not START SIZE NAME
					  * (or past the entries kept) */
	uint64_t evicted_processes;	 /* cached processes dropped for the caps */
	uint64_t evicted_objects;	 /* objects freed because an evicted process held the last
					  * reference */
	uint64_t processes_held;	 /* processes cached now, those without maps included */
	uint64_t identities_from_exec;	 /* processes whose identity came from their exec event
					  * (symbolizer__note_exec) rather than from /proc */
	uint64_t trampoline_frames;	 /* kernel frames left out: in BPF trampolines */
	uint64_t trampoline_reads;	 /* times the trampolines were read from kallsyms */
	uint64_t identities_from_fork;	 /* forked children sampled before their exec whose
					  * identity came from their fork event */
	uint64_t cgroup_reads_saved;	 /* of those, whose cgroup path was known for their v2
					  * cgroup id (no /proc/PID/cgroup read) */
	uint64_t identity_checks[3];	 /* whether a pid is still a process, by live_start [0],
					  * by /proc/PID/stat [1] or by the mmap records [2] */
	uint64_t max_processes, max_objects; /* the caps in force */
};

/* Returns a symbolizer (kallsyms read now) or NULL with errno set. opts may be NULL. */
struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);
/* Frees the caches; objects still referenced elsewhere stay valid. NULL allowed. */
void symbolizer__free(struct symbolizer *s);

/* Resolves n user addresses (leaf first) of process pid into out[0..n). start_ns identifies the
 * process with pid (tp_event_hdr.start_ns, boot-time ns): maps are read at the first call for a
 * (pid, start_ns) and cached; an address outside every cached mapping triggers one rescan,
 * rate-limited, except for a leaf (code the thread was running, so mapped when it ran) outside
 * maps read before ts_ns, when the stack was taken (CLOCK_MONOTONIC; 0: unknown): those maps are
 * read again at once. Frames are borrowed: the objects stay valid until the next call into the
 * symbolizer; take references (object__get) to keep them. Returns the number of frames, from the
 * leaf, before the first address in no executable mapping (n when all are in one; beyond that a
 * frame-pointer walk went astray), or a negative errno when the process could not be read at
 * all (out is then filled with unresolved frames). */
int symbolizer__resolve_user(struct symbolizer *s, uint32_t pid, uint64_t start_ns, uint64_t ts_ns,
			     const uint64_t *addrs, uint32_t n, struct frame *out);
/* Resolves n kernel addresses (leaf first) into out (obj = the kernel object), leaving out those
 * in BPF trampolines where opts.hide_trampolines. blocked: the stack of a thread blocked in
 * schedule() (an off-CPU sample), whose leaf is then the return address into the trampoline of
 * tailprofd's fexit/schedule; leaves in none of the trampolines known, at least 16 and more than
 * those in one, mean that it was rebuilt (another program attached to schedule() or left it),
 * and the trampolines are read again from kallsyms (some 40 ms), at most once a minute. Frames
 * borrowed as above. Returns the frames written. */
uint32_t symbolizer__resolve_kernel(struct symbolizer *s, const uint64_t *addrs, uint32_t n,
				    bool blocked, struct frame *out);
struct exec_identity;
/* Remembers that process (pid, start_ns) was forked by (parent_pid, parent_start_ns): until it
 * execs (symbolizer__forget_process) its maps are the parent's, which are used when its own
 * cannot be read (a child that lived a millisecond, or the last samples of one that exited), and
 * so is its vDSO when its memory cannot be read any more. id (NULL: none) gives its cgroups, PID
 * namespace and executable's name at the fork (its other fields are not used): when it is
 * sampled before it execs, its process_info comes from them, as symbolizer__note_exec's does,
 * rather than from /proc (where it may have exec'd meanwhile). Bounded: recent forks only. */
void symbolizer__note_fork(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			   uint32_t parent_pid, uint64_t parent_start_ns,
			   const struct exec_identity *id);
/* Events were lost (BPF's ring buffer was full): an exec that ended a fork link may be among
 * them, so the identities forks noted are not used from now on (/proc tells instead). */
void symbolizer__forget_fork_identities(struct symbolizer *s);
/* What an exec event (bpf/profile.bpf.c, struct tp_exec) says of the new image's process. */
struct exec_identity {
	uint64_t cgroup_id;	     /* cgroup v2 id (kernfs node id); 0: unknown */
	uint64_t cgroup_v1_id;	     /* its cgroup's kernfs node id in the v1 name=systemd
				      * hierarchy of hybrid layouts; 0: none, unknown */
	uint32_t pid_ns;	     /* inode number of its PID namespace; 0: unknown */
	uint32_t ns_pid;	     /* its pid there */
	char name[PROCESS_NAME_LEN]; /* its executable's file name; "": unknown */
	uint64_t exe_dev;	     /* its executable's device (makedev() of the maps' major:minor)
				      * and inode number; 0: unknown */
	uint64_t exe_ino;
	uint64_t entry_ip;   /* where it began in user space: its dynamic loader's entry point, or
			      * the executable's; 0: unknown */
	uint64_t exe_size;   /* its executable's size, bytes */
	uint64_t start_code; /* where its executable's code begins (mm->start_code); 0: unknown */
	uint64_t vdso;	     /* its vDSO's address; 0: none or unknown */
	/* BPF found its executable static and among the layouts recorded (TP_EXEC_LAYOUT_KNOWN):
	 * its maps are made from that layout, never read */
	bool layout_known;
};
/* Remembers the identity process (pid, start_ns) exec'd with, so that when its maps are first
 * read its process_info comes from it rather than from /proc: the name as is, the PID namespace
 * against the proc mount's, and the cgroup path from the last process read in the same cgroup
 * (only /proc/PID/cgroup of the first one is read). Bounded: recent execs only.
 * With id->layout_known, its maps are made from its static executable's layout now; when they
 * cannot be (no such layout any more, or one of another version of the file, which BPF is told
 * to forget), they are read at its first sample, as any process's. */
void symbolizer__note_exec(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			   const struct exec_identity *id);
/* Where a process made from a static layout runs: its executable (dev in makedev() form, ino),
 * its mm->start_code and its vDSO's address (0: none). */
struct symbolizer_layout {
	uint64_t dev, ino;
	uint64_t start_code, vdso;
};

/* Whether the maps of process (pid, start_ns) were made from its static executable's layout at
 * its exec (exec_identity.layout_known), not read; if so they are handed out to the other
 * modules' proc_maps__load() for the rest of the current round (proc_maps__offer), and *out
 * (when not NULL) says where it runs. */
bool symbolizer__offer_layout_maps(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
				   struct symbolizer_layout *out);
/* Whether addr, in no executable mapping of process (pid, start_ns) as its maps were last read,
 * lies in the memory of an object it maps: between the object's lowest segment start and highest
 * segment end (its data, its bss, a gap between its segments), by the bias of a mapping of it.
 * Such an address at the end of a user stack is a stack word that a broken frame chain took for
 * a return address (the bottom of a Go system stack, whose CFI gives runtime.g0's address), not
 * code mapped since: reading the maps again finds nothing new. Only objects that named a frame of
 * the process are looked at. false for an unknown process. */
bool symbolizer__in_object_data(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
				uint64_t addr);
/* Reads and caches the maps of process (pid, start_ns) now, while it lives (its samples may come
 * after it has exited: a new process's first block, say). Returns 0 or a negative errno
 * (-ESRCH: gone, or another process has the pid). */
int symbolizer__note_process(struct symbolizer *s, uint32_t pid, uint64_t start_ns);
/* Reads the maps of process (pid, start_ns) again now, cached or not (they were read before it
 * had mapped its libraries, say); on failure the cached ones stay. Returns 0 or a negative
 * errno (-ESRCH: gone, or another process has the pid). */
int symbolizer__reread_process(struct symbolizer *s, uint32_t pid, uint64_t start_ns);
/* Fills *info for process (pid, start_ns): what was read with its maps, else read now (what its
 * exec record told, else its /proc files while it lives), so that a sample with no user frame
 * is labelled too. Returns 0, or -ESRCH when the process is gone and its exec was not seen, or
 * another process has the pid. */
int symbolizer__process_info(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			     struct process_info *info);
/* True when (pid, start_ns) is a forked child that has not exec'd since (symbolizer__note_fork, its
 * link still there: the last FORK_LINKS forks are remembered); sets its parent's pid and start
 * time then. */
bool symbolizer__fork_parent(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			     uint32_t *parent_pid, uint64_t *parent_start_ns);
/* True when the maps of (pid, start_ns) are cached. */
bool symbolizer__knows(struct symbolizer *s, uint32_t pid, uint64_t start_ns);
/* True when the cached maps of (pid, start_ns) were read after its dynamic loader had mapped the
 * objects it loads at start (the executable's needed libraries, LD_PRELOAD's): a sample whose
 * leaf lay in its executable, or in any file but the loader's (the file mapped at the exec's
 * entry point), came before the read (the loader maps them all before it relocates any, and
 * hands over to the executable after; a later such sample reads maps read before it again, once),
 * or its executable file is all the code it had mapped (no loader: a static executable). Known
 * only for a process whose exec was noted with its executable's identity (symbolizer__note_exec),
 * never for a dynamic loader run as the program (by its file name). What it maps later (dlopen)
 * is read when a sample meets it. */
bool symbolizer__loaded(struct symbolizer *s, uint32_t pid, uint64_t start_ns);
struct proc_maps;
/* A copy of the cached maps of (pid, start_ns) into *out (the caller's to clear): 0, -ESRCH when
 * none are cached, -ENOMEM. */
int symbolizer__copy_maps(struct symbolizer *s, uint32_t pid, uint64_t start_ns,
			  struct proc_maps *out);
/* True once after (pid, start_ns) became loaded (symbolizer__loaded) by a read of its maps, after
 * the first, that found them changed: the modules that looked at the first should look again (the
 * recheck after its exec will not). */
bool symbolizer__take_loaded_reread(struct symbolizer *s, uint32_t pid, uint64_t start_ns);
/* The process exec'd: drop its cached maps (objects live on through references), its fork
 * link and the labels kept from it (its image is its own now). */
void symbolizer__forget_process(struct symbolizer *s, uint32_t pid);
/* The process exited: drop its cached maps, but its process_info stays known (recent exits only)
 * and its fork link stays, for the samples it takes while the kernel tears it down (after the
 * exit tracepoint: exit_mmap; where the tracepoint has a group_dead argument, as on 6.18, all of
 * exit_mm, whose samples still have user stacks). */
void symbolizer__forget_exited(struct symbolizer *s, uint32_t pid);
void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *st);

#endif
