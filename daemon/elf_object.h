/* SPDX-License-Identifier: GPL-2.0-only */
/* Internal to the symbolizer: struct object, its compact symbol table, the object cache, and
 * reading ELF files into objects. */
#ifndef TAILPROF_ELF_OBJECT_H
#define TAILPROF_ELF_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "symbolizer.h"

/* Allocation policy (STYLE.md): small fixed-size allocations abort on failure, through these.
 * Anything sized by outside input (maps files, ELF tables) is checked and returns -ENOMEM. */
static inline void *sym_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p) {
		fputs("tailprof: out of memory\n", stderr);
		abort();
	}
	return p;
}

static inline char *sym_xstrdup(const char *s)
{
	size_t len = strlen(s) + 1;

	return memcpy(sym_xcalloc(1, len), s, len);
}

/* One piece of the symbol table: addresses [start, start + len) belong to the symbol that starts
 * at sym_start and whose name is at names + name. Nested symbols are flattened at load time (the
 * innermost symbol owns each byte), so spans never overlap and lookup is one binary search.
 * 24 bytes per span; a table has at most 2 spans per symbol, usually 1. */
struct sym_span {
	uint64_t start;
	uint64_t sym_start;
	uint32_t len;
	uint32_t name;
};

struct symtab {
	struct sym_span *spans; /* sorted by start, disjoint */
	size_t nr_spans;
	char *names; /* one blob of NUL-terminated names */
	size_t names_bytes;
};

/* Longest symbol name kept, in bytes: longer ones (a JIT's perf map, generated code) are cut to
 * this and end in "...". */
#define SYMBOL_NAME_MAX 4096

/* Collects symbols before they become a symtab. Names are borrowed until finish(). */
struct symtab_builder {
	struct raw_sym *syms;
	size_t nr;
	size_t cap;
};

enum symtab_mode {
	SYMTAB_SIZED,	/* ELF: each symbol covers [start, end) */
	SYMTAB_TO_NEXT, /* kallsyms: each symbol covers up to the next symbol's start; the last
			 * one, and one followed by a symbol of another tag, at most last_len */
};

/* Adds a symbol [start, end) (end ignored for SYMTAB_TO_NEXT; a symbol longer than 4 GiB is cut
 * there). rank chooses among symbols with the same extent, lower wins: first rank >> 8 (ELF:
 * .symtab, then .dynsym, then versioned names like f@@VER), then fewer leading underscores, then
 * rank & 0xff (ELF: global, weak, local; kallsyms: T, W, t, w), then name order. tag: stored after
 * the name when finish() is asked to (kernel module index). name is borrowed until
 * symtab_builder__finish(). Returns 0 or -ENOMEM. */
int symtab_builder__add(struct symtab_builder *b, uint64_t start, uint64_t end, const char *name,
			uint32_t rank, uint16_t tag);
/* Sorts, drops duplicates, flattens nesting and copies the names (each followed by its 2-byte tag
 * when with_tags) into *out (owned by the caller, free with symtab__clear()). For SYMTAB_TO_NEXT
 * the last symbol covers last_len bytes. Clears the builder in all cases. Returns 0 or -ENOMEM
 * (*out then empty). */
int symtab_builder__finish(struct symtab_builder *b, enum symtab_mode mode, uint32_t last_len,
			   bool with_tags, struct symtab *out);
void symtab_builder__clear(struct symtab_builder *b);
/* The span containing addr, or NULL. */
const struct sym_span *symtab__find(const struct symtab *t, uint64_t addr);
void symtab__clear(struct symtab *t);

/* A PT_LOAD segment. */
struct elf_segment {
	uint64_t vaddr;
	uint64_t memsz;
	uint64_t offset;
	uint64_t filesz;
	bool exec;
};

struct object_cache;

#define BUILD_ID_MAX_BYTES 64

/* A function extent from the unwind table (an .eh_frame FDE) that symbols do not cover whole:
 * [start, start + len). */
struct fde_span {
	uint64_t start;
	uint64_t len;
};

/* Where an object's DWARF is, for source lines read lazily by query threads (source_lines.c):
 * paths to try in order (NULL-terminated; the first that opens the very file recorded here
 * wins), and that file's identity. */
#define DWARF_PATHS 3
struct dwarf_location {
	char *paths[DWARF_PATHS];
	uint64_t dev;
	uint64_t inode;
	int64_t mtime_ns;
	uint64_t size_bytes;
};

struct line_cache;

#define NAME_SPANS 2

struct object {
	int refcnt;
	/* Cache membership; cache is NULL once the symbolizer is gone. */
	struct object_cache *cache;
	struct object *hnext;	    /* (dev, inode) hash chain, findable objects only */
	struct object *prev, *next; /* every object of the cache */
	bool findable;		    /* in the (dev, inode) hash and build-id search */

	/* Identity of the file: the mapping's dev and inode, the opened file's mtime and size. */
	uint64_t dev;
	uint64_t inode;
	int64_t mtime_ns;
	uint64_t size_bytes;
	uint64_t checked_ns; /* CLOCK_MONOTONIC ns when a file's stat last matched that identity */

	char *path;
	const char *name; /* points into path */
	char build_id[2 * BUILD_ID_MAX_BYTES + 1];
	bool is_kernel;
	bool is_python;	 /* a Python interpreter's synthetic object (python.h): addresses are line
			    ids */
	bool elf_failed; /* frames are then in file-offset space unless segments were read */

	struct elf_segment *segs;
	size_t nr_segs;
	uint64_t range_start, range_limit, range_offset;

	struct symtab symtab;
	/* object__in_symbol()'s name and that name's extents (start, length), found at its first
	 * call; those past NAME_SPANS are looked up each time. Drain thread only. */
	const char *span_name;
	uint32_t nr_name_spans;
	uint64_t name_spans[NAME_SPANS][2];
	size_t jit_bytes; /* JIT objects (perf maps): bytes of the table, counted in the cache */

	/* FDEs that symbols leave (partly) uncovered, sorted by start: object__anon_name() */
	struct fde_span *fdes;
	size_t nr_fdes;

	/* Source lines: where the DWARF is (no paths: none), set before the object is shared and
	 * read-only after; the cache of lines looked up, under source_lines.c's lock. */
	struct dwarf_location dwarf;
	struct line_cache *lines;

	/* Kernel only: module names. In a kernel symtab every name is followed, after its NUL, by a
	 * 2-byte module index (0: core kernel, i: modules[i - 1]). */
	char **modules;
	size_t nr_modules;
};

/* A new object for path with one reference, no symbols, no segments. Aborts on allocation
 * failure (fixed size; path is at most PATH_MAX). */
struct object *object__new(const char *path);
/* Translates a file offset into the object's link-time address space (see struct frame): through
 * the PT_LOAD holding it (executable segments preferred), else the lowest executable segment,
 * else the offset itself (no segments: unreadable ELF). */
uint64_t object__file_to_vaddr(const struct object *obj, uint64_t file_offset);

/* Opens path read-only if it is a regular file: a device or FIFO in the way (a symbolic link a
 * process put there) is looked at through O_PATH, never opened. Returns an fd (*st filled) or a
 * negative errno (-EINVAL: not a regular file). */
int open_regular_file(const char *path, struct stat *st);

/* An ELF file being read (libelf), from a file descriptor or from memory. */
struct elf_file {
	struct Elf *elf;
	uint64_t size_bytes; /* of the file: tables past its end mean a truncated file */
	char build_id[2 * BUILD_ID_MAX_BYTES + 1]; /* "" when absent */
	bool has_symtab;			   /* a .symtab section (not only .dynsym) */
	bool has_dwarf;				   /* .debug_info and .debug_line sections */
	void *owned;				   /* memory image freed by elf_file__close */
};

/* Opens the ELF in fd (not taken over: the caller closes fd after elf_file__close) and reads its
 * build ID. Returns 0, or -ENOEXEC when fd is not a readable ELF file. */
int elf_file__open(struct elf_file *ef, int fd);
/* Opens the ELF image buf[0..size) (e.g. a vDSO read from a process, a decompressed
 * MiniDebugInfo). With own, buf (malloc'd) is freed by elf_file__close, also on failure; else it
 * must outlive the elf_file. Returns 0 or -ENOEXEC. */
int elf_file__open_mem(struct elf_file *ef, void *buf, size_t size, bool own);
/* Reads the PT_LOAD segments, the executable range and the function symbols of .symtab and
 * .dynsym into obj (which must have none yet), adding the .symtab functions of each of
 * extra[0..nr_extra) (separate debug files, MiniDebugInfo: same link-time addresses; NULL entries
 * skipped), ranked like the object's own .symtab; then, when none of them has a .symtab (only
 * exported functions are named), the FDEs of ef's unwind table that the symbols do not cover
 * (an object without CFI has none). An extra file whose .symtab cannot be read is left out (the
 * object is named without it). nr_extra <= 32. Returns 0, or the number (> 0) of extra files
 * left out; -ENOEXEC for malformed tables of ef itself (obj then has no symbols, maybe
 * segments) or -ENOMEM. */
int elf_file__load(struct elf_file *ef, struct elf_file *const *extra, size_t nr_extra,
		   struct object *obj);
/* The .gnu_debuglink of ef: the debug file's name (NUL-terminated, no '/' allowed) into
 * name[0..len) and its CRC-32 (zlib's crc32 of the whole file, as binutils computes it).
 * Returns 0, -ENOENT when there is none, -ENOEXEC when it is malformed. */
int elf_file__debuglink(struct elf_file *ef, char *name, size_t len, uint32_t *crc);
/* The MiniDebugInfo of ef (section .gnu_debugdata: an xz-compressed ELF holding a .symtab, as
 * Fedora's and GDB's "mini debuginfo" defines it), decompressed and opened into *out (owning its
 * buffer). At most max_bytes are decompressed. Returns 0, -ENOENT when there is none, -ENOEXEC
 * when it does not decompress into an ELF file, -EFBIG past max_bytes, or -ENOMEM. */
int elf_file__minidebuginfo(struct elf_file *ef, struct elf_file *out, size_t max_bytes);
void elf_file__close(struct elf_file *ef);

/* The symbolizer's weak cache of objects: objects unlink themselves on their last put. */
#define OBJECT_CACHE_BUCKETS 1024
struct object_cache {
	struct object *buckets[OBJECT_CACHE_BUCKETS];
	struct object *all;
	size_t nr;
	uint64_t jit_bytes; /* sum of jit_bytes of the objects in the cache */
};

/* Adds obj (not referenced by the cache) to c; findable objects can be found again by
 * (dev, inode) and build ID. */
void object_cache__add(struct object_cache *c, struct object *obj, bool findable);
/* A findable object of c for (dev, inode) whose mtime and size match st (st NULL: not checked),
 * or NULL. No reference is taken. */
/* A findable object of c for (dev, inode) whose file was checked (checked_ns) at or after since_ns
 * (CLOCK_MONOTONIC ns), the most recently checked one; or NULL. No reference is taken. */
struct object *object_cache__find_checked(struct object_cache *c, uint64_t dev, uint64_t inode,
					  uint64_t since_ns);
struct object *object_cache__find_file(struct object_cache *c, uint64_t dev, uint64_t inode,
				       const struct stat *st);
/* A findable object of c with this (non-empty) build ID whose ELF was read, or NULL. No reference
 * is taken. */
struct object *object_cache__find_build_id(struct object_cache *c, const char *build_id);
/* Unlinks every object from c (they live on through their references). */
void object_cache__detach_all(struct object_cache *c);

#endif
