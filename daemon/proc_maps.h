/* SPDX-License-Identifier: GPL-2.0-only */
/* Internal to the symbolizer: parsing /proc/PID/maps text and reading /proc files whole. */
#ifndef TAILPROF_PROC_MAPS_H
#define TAILPROF_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct mmap_records;

/* One executable mapping of a process, as /proc/PID/maps lists it. */
struct proc_mapping {
	uint64_t start; /* first address */
	uint64_t end;	/* one past the last address */
	uint64_t pgoff; /* file offset of start, in bytes */
	uint64_t inode; /* 0 for anonymous and special mappings */
	uint32_t dev_major;
	uint32_t dev_minor;
	bool deleted; /* the path ended in " (deleted)", which was removed from path */
	char *path;   /* owned; "" for anonymous memory, "[vdso]" etc. for special ones */
};

/* The executable mappings of one process, sorted by start. */
struct proc_maps {
	struct proc_mapping *v;
	size_t nr;
};

/* True for a mapping backed by a file we can open (inode != 0 and an absolute path). */
bool proc_mapping__is_file(const struct proc_mapping *m);
/* True when m maps the file with device dev (makedev() of the maps' major:minor) and inode ino
 * (0: no file: false). */
bool proc_mapping__of(const struct proc_mapping *m, uint64_t dev, uint64_t ino);

/* Parses len bytes of maps text (need not be NUL-terminated) into *out, keeping only the
 * executable mappings, sorted by start. Lines that do not parse are skipped. Paths may contain
 * spaces; a trailing " (deleted)" sets ->deleted. On success *out owns its arrays (free with
 * proc_maps__clear()); *out is left empty on error. Returns the number of mappings kept, or
 * -ENOMEM. */
int proc_maps__parse(const char *text, size_t len, struct proc_maps *out);

/* Frees what *m owns and leaves it empty. NULL allowed. */
void proc_maps__clear(struct proc_maps *m);
/* Copies src's mappings into *dst (empty; its paths its own). Returns 0 or -ENOMEM (*dst
 * empty). */
int proc_maps__copy(const struct proc_maps *src, struct proc_maps *dst);

/* The mapping containing addr (start <= addr < end) or NULL. */
const struct proc_mapping *proc_maps__find(const struct proc_maps *m, uint64_t addr);

/* Reads the whole file at path (procfs files included: their size is not known in advance) into
 * a malloc'ed, NUL-terminated buffer. On success *buf (owned by the caller) and *len (bytes,
 * without the NUL) are set. Returns 0, -EFBIG past max_bytes, -ENOMEM, or the negative errno of
 * open/read (-ENOENT, -ESRCH for a process that exited, -EACCES...). */
int proc_read_file(const char *path, size_t max_bytes, char **buf, size_t *len);

/* proc_read_file() of a regular file that may be rewritten while read (a JIT's perf map): path
 * opens the file that fd is open on, and *st is fd's fstat from before. A read counts only when
 * fd's fstat after it has the same size, mtime and ctime and the size is what was read; otherwise
 * the text may be torn (the start of one version and the end of another, whose lines can join into
 * a line that looks whole), *st takes the new fstat, *torn is incremented, and the file is read
 * again, at most tries reads in all. A file that keeps growing (appended to under every read)
 * gives, from its second torn read on, the bytes it held before that read when both torn reads
 * agree on them, up to their last newline. Same returns as proc_read_file(), and -EAGAIN when
 * no read could be taken (nothing in *buf). */
int proc_read_file_whole_version(const char *path, int fd, size_t max_bytes, int tries,
				 struct stat *st, char **buf, size_t *len, uint64_t *torn);

/* proc_read_file() in one read(2), for procfs files that one seq_file show writes whole
 * (single_open files: /proc/PID/cgroup, comm, status; fs/seq_file.c copies such a record whole
 * when the buffer holds it) and for regular files: a read shorter than max_bytes + 1 is the
 * whole file, so the read that returns 0 is saved. Same returns. */
int proc_read_single(const char *path, size_t max_bytes, char **buf, size_t *len);

/* The executable mappings of process PID (PROC_ROOT/PID/maps) into *out, sorted by start, as
 * proc_maps__parse() gives them: by the PROCMAP_QUERY ioctl where the kernel has it (Linux 6.11:
 * only the executable mappings, no text formatted or parsed), else from the text. Shared by the
 * modules that look at a new process in one drain (symbolizer, unwinder, Python and GC
 * discovery): within a round the mappings loaded first are handed out again (a copy), and a
 * process found gone (-ENOENT, -ESRCH) is not looked for again, unless proc_maps__forget() was
 * called for that pid since; outside a round every call loads them.
 * max_bytes bounds the text, and the query's mappings at max_bytes / 64. (The query leaves out
 * x86-64's [vsyscall], the gate page above user space that the text lists last.) Returns the number
 * of mappings (0: none, as for a process that exited or a kernel thread) with *out the caller's to
 * clear, or a negative errno with *out empty: -ENOENT (gone), -EACCES, -EFBIG, -ENOMEM, -EIO (a
 * query answer out of order). Thread-safe. */
int proc_maps__load(const char *proc_root, uint32_t pid, size_t max_bytes, struct proc_maps *out);
/* As proc_maps__load(), for the process of pid that started at start_ns (CLOCK_BOOTTIME ns, as
 * BPF gives it; 0: the live one): where the mmap records (proc_maps__use_records()) know that
 * process they serve its maps, also after it exited, before the round's copy or /proc are
 * asked, and set *known: the maps are that process's, no identity check needed. Returns as
 * proc_maps__load(). */
int proc_maps__load_process(const char *proc_root, uint32_t pid, uint64_t start_ns,
			    size_t max_bytes, struct proc_maps *out, bool *known);
/* Hands maps (copied) out as process pid's under proc_root for the rest of the current round,
 * as if proc_maps__load() had read them: maps known without a read (a static executable's
 * layout). Nothing outside a round or when memory runs out. */
void proc_maps__offer(const char *proc_root, uint32_t pid, const struct proc_maps *maps);
/* A round begins (the drain loop: when a drain begins) and ends (when its work is done): maps
 * read in one round are not handed out in another. */
/* How long after an exec (from the drain that read it) the modules look at the new image's maps
 * again (its libraries are mapped by then): the same delay for all, so that one drain's round
 * reads the maps once for every module (ns). */
#define PROC_MAPS_EXEC_RECHECK_NS (300 * 1000 * 1000ULL)
void proc_maps__begin_round(void);
void proc_maps__end_round(void);
/* The process exec'd or exited: its maps are read again. */
void proc_maps__forget(uint32_t pid);
/* Loads under proc_root are served by r where it knows the process (mmap_records__maps()), the
 * rest from /proc; NULL r: all from /proc. check: each load served by r is checked against the
 * maps file (tests: TAILPROF_MAPS_RECORDS_CHECK=1). Call before the drains start. */
void proc_maps__use_records(struct mmap_records *r, const char *proc_root, bool check);
/* Whether the records under proc_root say pid is the live process that started at start_ns
 * (mmap_records__is_process()); false when they cannot tell. */
bool proc_maps__records_is_process(const char *proc_root, uint32_t pid, uint64_t start_ns);
/* The records given to proc_maps__use_records(), or NULL. */
struct mmap_records *proc_maps__records(void);
/* Since start, with the check on: loads checked, and those whose maps file held a mapping the
 * records did not (counted once the records taken after the read still lack it). */
void proc_maps__records_check_stats(uint64_t *checked, uint64_t *mismatched);
/* Since start: loads served from the round's copy (shared), loads from the file (read), and of
 * those, the ones done by PROCMAP_QUERY (queried). */
void proc_maps__read_stats(uint64_t *shared, uint64_t *read, uint64_t *queried);

#endif
