/* SPDX-License-Identifier: GPL-2.0-only */
/* CPython support: finds the interpreters of processes (their _PyRuntime) and tells the BPF frame
 * walker about them (loader py_procs, py_offsets), then turns the frames it sends (code object
 * address, instruction offset) into qualified name, file and line, read from the live process at
 * drain time (process_vm_readv) and interned for good, so frames outlive their process.
 *
 * A Python frame in a struct stack is (obj, addr): obj the synthetic object of the interpreter
 * (python__is_object() true; one per interpreter file, its pprof mapping), addr the id of an
 * interned (qualified name, file, first line, line) for python__line().
 *
 * Threading: everything but python__line() and python__is_object() runs on the drain thread;
 * those two are safe from any thread (the interned table only grows; entries never change). */
#ifndef TAILPROF_PYTHON_H
#define TAILPROF_PYTHON_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolizer.h"
#include "tailprof.h"

struct loader;

/* Why a process with a CPython in it gets no Python frames (tailprof_python_unsupported_total
 * reasons). */
enum python_unsupported {
	PY_UNSUP_VERSION,    /* "version": an interpreter version without an offset table */
	PY_UNSUP_NO_RUNTIME, /* "no_runtime_symbol": no _PyRuntime in .dynsym or .symtab */
	PY_UNSUP_UNREADABLE, /* "unreadable": its ELF file could not be read */
	PY_UNSUP_MAP_FULL,   /* "map_full": py_procs had no room */
	PY_UNSUP_NR,
};
extern const char *const python_unsupported_names[PY_UNSUP_NR];

struct python_stats {
	uint64_t processes;		   /* processes given to the walker now */
	uint64_t unsupported[PY_UNSUP_NR]; /* processes refused, since start */
	uint64_t frames;		   /* Python frames resolved */
	uint64_t code_reads;		   /* code objects read from processes */
	uint64_t code_read_failed;	   /* ... that could not be read (process gone) */
	uint64_t code_checks;	  /* cached code objects checked again (drain ticks, new stacks) */
	uint64_t code_image_hits; /* frames whose code object, built into the interpreter file,
				   * was known from this or another process of that file */
	uint64_t incomplete;	  /* frames dropped: still in their prologue */
	uint64_t not_code;   /* frames dropped: their code pointer is no code object (torn read) */
	uint64_t new_stacks; /* samples whose stack was new to BPF (TP_SAMPLE_PY_NEW: woke us) */
	uint64_t image_stacks; /* of those, stacks wholly in an interpreter file's image, named and
				* given to py_seen for every process of that file */
	uint64_t lines;	       /* interned (function, line) entries */
	uint64_t symbol_reads; /* interpreter files whose symbols were read (once per file) */
	uint64_t symbol_stats; /* stat()s of an interpreter file that check the symbols cached */
	uint64_t exes;	       /* interpreter executables the exec program knows (py_exes) */
	uint64_t from_exec; /* processes given to the walker at their exec, by their executable */
	uint64_t from_exec_rewritten; /* of those, written again: tailprofd's own entry, written
				       * after the exec, was deleted at its record */
};

/* What an exec record told of the new image (python__note_exec). */
struct python_exec {
	uint64_t exe_dev;    /* the executable's device, makedev() of /proc/PID/maps' major:minor */
	uint32_t exe_kdev;   /* the same, the kernel's dev_t (tp_exec.exe_dev) */
	uint64_t exe_ino;    /* its inode number; 0: unknown */
	uint64_t start_code; /* mm->start_code (tp_exec.start_code); 0: unknown */
	bool walker_set;     /* TP_EXEC_PY_SET: the exec program gave it to the walker */
};

struct python_opts {
	struct loader *loader; /* NULL: discovery only (tests); no BPF maps are written */
	const char *proc_root; /* default "/proc" */
};

/* Returns the module, or NULL with errno set. Writes the offset tables into py_offsets when the
 * loader walks Python frames. */
struct python *python__new(const struct python_opts *opts);
/* Forgets the processes (removing them from py_procs); interned lines stay. NULL allowed. */
void python__free(struct python *p);

/* Looks for a CPython in process (pid, start_ns): its executable or a mapped libpython3.*.so with
 * a _PyRuntime symbol. A supported one is given to the BPF walker. Returns 1 when the process's
 * frames will be walked, 0 when it has no (supported) CPython, or a negative errno when its maps
 * cannot be read (-ESRCH: gone). Unsupported interpreters are counted by reason. */
int python__note_process(struct python *p, uint32_t pid, uint64_t start_ns);
/* Process (pid, start_ns) exec'd (after python__forget_process() of its old image) with x. Where
 * the exec program gave it to the walker (x->walker_set), it is known from then on as the
 * earlier process of its executable that python__note_process() read was, placed at its own
 * start_code, with no maps read (python__note_process() then reads nothing for it). Otherwise x
 * is kept for python__note_process(): where that finds the interpreter in the executable itself,
 * the executable is given to the exec program (loader__python_set_exe) for its next images.
 * Returns 1 when the process is known now, else 0. */
int python__note_exec(struct python *p, uint32_t pid, uint64_t start_ns,
		      const struct python_exec *x);
/* Process (pid, start_ns), forked from (parent_pid, parent_start_ns) and not exec'd since, runs
 * its parent's interpreter at the same addresses: given to the walker as its parent was, with no
 * maps read. Returns 1 when its frames will be walked, 0 when its parent's are not (or py_procs
 * is full), or -ENOMEM. */
int python__note_fork(struct python *p, uint32_t pid, uint64_t start_ns, uint32_t parent_pid,
		      uint64_t parent_start_ns);
/* The process exec'd or exited at event_ns (CLOCK_MONOTONIC, as bpf_ktime_get_ns()): its cached
 * code objects are dropped. BPF deleted its py_procs entry at the event; the entry is deleted
 * here only when tailprofd wrote it at or after event_ns (a process found after it had gone), or
 * always with event_ns 0. */
void python__forget_process(struct python *p, uint32_t pid, uint64_t event_ns);
/* A drain begins. At a tick (the drain period's drain) cached code objects are checked again
 * (once each) before their next use, as code objects are freed and their addresses reused;
 * drains between ticks (woken early by a new process or stack) keep the last tick's checks, so a
 * long-lived Python process's code objects cost one read each per drain period however often
 * other processes wake the drain. */
void python__drain_begin(struct python *p, bool tick);

/* One resolved Python frame. */
struct python_frame {
	struct frame f; /* obj: the interpreter's synthetic object (borrowed), addr: a line id;
			 * obj NULL: no frame, an entry standing for an eval loop C frame whose
			 * Python frames are all incomplete (3.12 on) */
	bool entry;	/* the eval loop's C frame that ran this frame was entered here */
};

/* Resolves the n Python frames in (innermost first) of process (pid, start_ns) into out,
 * dropping incomplete frames (CPython's _PyFrame_IsIncomplete), frames whose code pointer is
 * not a code object (PyCode_Type checked: a frame read mid-update) and, from 3.12, the eval
 * loop's own entry frames (the frame inside one is marked entry; when there is none, an empty
 * entry frame is written, obj NULL). Code objects that cannot be read become
 * "[python code 0x...]" frames. Cached code objects are checked once per drain tick (a changed
 * object at a reused address is read again); new_stack (the sample's TP_SAMPLE_PY_NEW: BPF had
 * not seen this stack) checks those of these frames at once. Returns the number of frames
 * written (<= n), 0 when the process is not one python__note_process() accepted. */
uint32_t python__resolve(struct python *p, uint32_t pid, uint64_t start_ns,
			 const struct tp_py_frame *in, uint32_t n, bool new_stack,
			 struct python_frame *out);

/* True when obj is an interpreter's synthetic object (its frames' addr are line ids). */
bool python__is_object(const struct object *obj);

struct python_line {
	const char *function; /* qualified name (co_qualname), UTF-8 */
	const char *file;     /* co_filename, UTF-8 */
	uint32_t start_line;  /* co_firstlineno */
	uint32_t line;	      /* the line of the instruction; 0: unknown */
};
/* The interned line id (struct frame.addr of a Python frame). Returns false for an unknown id.
 * The strings live as long as the process. Any thread. */
bool python__line(uint64_t id, struct python_line *out);

void python__stats(const struct python *p, struct python_stats *st);

/* --- pure helpers, exposed for tests --- */

/* The py_procs entry of process (pid, start_ns) as tailprofd writes it (or, for one given to the
 * walker at its exec, as the exec program did from py_exes). Returns 0, or -ENOENT when the
 * process is not known. */
int python__walker_entry(struct python *p, uint32_t pid, uint64_t start_ns, struct tp_py_proc *out);

/* The line of the instruction at code unit `units` from CPython's location table (3.11 to 3.13)
 * (co_linetable; format: CPython's Objects/locations.md) of a code object whose first line is
 * first_line. Returns the line, or 0 when the table has no line there (or units < 0: before the
 * first instruction, when first_line is returned). */
uint32_t python__linetable_line(const uint8_t *table, size_t len, int32_t first_line,
				int32_t units);

#endif
