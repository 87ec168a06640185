/* SPDX-License-Identifier: GPL-2.0-only */
/* Source lines of code addresses from an ELF file's DWARF (.debug_line and the DIE tree), read
 * with libdw: the file and line of an address and the functions inlined there, as
 * `addr2line -i` and `perf report --inline` give them. Pure: reads one ELF file, no /proc, no
 * caching beyond the open reader (the per-object cache is source_lines.c's).
 *
 * The CU of an address comes from an index of the CUs' address ranges built at open (not
 * .debug_aranges, which clang does not emit); its line from libdw's line table of that CU
 * (dwarf_getsrc_die); its inline chain from a walk down the CU's DIE tree through the
 * DW_TAG_subprogram, DW_TAG_inlined_subroutine and DW_TAG_lexical_block entries that contain it
 * (dwarf_getscopes is not used: past an inlined subroutine it lists the abstract scopes, not the
 * concrete callers). Not thread-safe: one reader per thread. */
#ifndef TAILPROF_DWARF_LINES_H
#define TAILPROF_DWARF_LINES_H

#include <stddef.h>
#include <stdint.h>

/* Most source lines one address gives (its function and the functions inlined into it, nested):
 * deeper chains keep their innermost DWARF_LINES_MAX - 1 levels and the outermost function. */
#define DWARF_LINES_MAX 32

/* Debug sections held in memory (read from files that are not mapped, or decompressed): past it
 * a file gets no source lines. */
#define DWARF_READ_MAX_BYTES (256ull << 20)

/* One level of an address's inline chain. Strings belong to the reader (valid until
 * dwarf_lines__close) and may be NULL when DWARF lacks them. */
struct dwarf_line {
	const char *name;	  /* DW_AT_name of the function (through abstract origins) */
	const char *linkage_name; /* DW_AT_linkage_name (mangled), NULL for C functions */
	const char *file;	  /* source file of `line`, lexically cleaned ("a/../b" -> "b") */
	uint32_t line;		  /* 0: unknown */
	uint32_t decl_line;	  /* the function's DW_AT_decl_line when it is in `file`, else 0 */
};

struct dwarf_lines;

/* Opens the DWARF of the ELF file in fd (not taken over: the reader keeps a duplicate of it).
 * Files owned by root and writable by no one else are mapped; others are read with pread (a file
 * truncated under a mapping would raise SIGBUS), and then only up to DWARF_READ_MAX_BYTES.
 * Returns the reader, or NULL with errno ENOENT (no DWARF: no .debug_info or .debug_line),
 * ENOEXEC (not a readable ELF file, or DWARF libdw rejects), EFBIG (debug sections larger than
 * the limit, compressed ones counted at their decompressed size) or ENOMEM. */
struct dwarf_lines *dwarf_lines__open(int fd);

/* The source lines of link-time address addr (for a caller's frame: the byte before its return
 * address), innermost first: out[0] is the line of addr itself in the function inlined deepest
 * there, each next one the line in the enclosing function that called (inlined) the previous
 * one, out[n - 1] the line in the out-of-line function that holds them all. At most max (>= 1)
 * entries. Returns n, 0 when DWARF has no line for addr. */
size_t dwarf_lines__lookup(struct dwarf_lines *dl, uint64_t addr, struct dwarf_line *out,
			   size_t max);

/* Number of compilation units with code (the index built at open). */
size_t dwarf_lines__nr_units(const struct dwarf_lines *dl);
/* An estimate of the heap the reader holds: debug sections in memory (read, or decompressed),
 * its indexes, and the line tables libdw parsed for the CUs addresses fell into (which grow as
 * lookups go). */
uint64_t dwarf_lines__heap_bytes(const struct dwarf_lines *dl);

/* Frees the reader and everything libdw read. NULL allowed. */
void dwarf_lines__close(struct dwarf_lines *dl);

#endif
