/* SPDX-License-Identifier: GPL-2.0-only */
/* Unwind tables: an ELF object's call frame information (.eh_frame, or .debug_frame when that is
 * all there is) turned into the sorted rows the BPF walker binary-searches (struct tp_unwind_row
 * in tailprof.h). Pure: reads one ELF file, no /proc, no BPF. x86-64 only.
 *
 * The CFI is read with libdw: FDEs are listed with dwarf_next_cfi and each address range is
 * evaluated with dwarf_cfi_addrframe, dwarf_frame_info, dwarf_frame_cfa and dwarf_frame_register
 * (libdw has no row iterator). A row says where the CFA is (RSP or RBP plus an offset; the PLT
 * pattern; a signal trampoline), that the return address is at CFA - 8, and where the caller's
 * RBP was saved. Rules that rows cannot express become TP_CFA_UNSUPPORTED rows, where the walk
 * stops; addresses that no FDE covers become TP_CFA_NONE rows, walked by frame pointer. In a Go
 * program with a symbol table, the runtime's stack tops (goexit, mstart, mcall, systemstack...)
 * are TP_CFA_END rows: the walk ends where Go's own traceback does. */
#ifndef TAILPROF_UNWIND_TABLE_H
#define TAILPROF_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "tailprof.h"

#define UNWIND_MAX_SEGMENTS 16

/* A PT_LOAD segment, to turn a mapping's file offset into link-time addresses. */
struct unwind_segment {
	uint64_t vaddr;
	uint64_t offset;
	uint64_t filesz;
	int exec;
};

struct unwind_table {
	struct tp_unwind_row *rows; /* sorted by pc; malloc'ed, owned */
	size_t nr_rows;
	size_t nr_fdes;	       /* FDEs read */
	size_t nr_unsupported; /* rows marked TP_CFA_UNSUPPORTED */
	int from_debug_frame;  /* 1: the rows come from .debug_frame (no .eh_frame) */
	struct unwind_segment segs[UNWIND_MAX_SEGMENTS]; /* the first PT_LOAD segments */
	size_t nr_segs;
};

/* Builds the table of the ELF file open in fd (not taken over). On success *out owns its rows
 * (free with unwind_table__clear()). Returns 0; -ENOENT when the object has no CFI at all (the
 * walker then uses frame pointers in it), -ENOEXEC for a file that is not a readable ELF object
 * or CFI that libdw rejects, -E2BIG when code lies at or above 4 GiB (rows hold 32-bit PCs), or
 * -ENOMEM. *out is left empty on error. */
int unwind_table__build_fd(int fd, struct unwind_table *out);

/* The extent of one FDE: link-time addresses [start, end). */
struct unwind_fde {
	uint64_t start, end;
};

struct Elf;

/* The FDEs of elf's .eh_frame (else .debug_frame, decompressed in elf's memory): the function
 * extents the unwind table is built from, for naming code that no symbol covers. Sorted by start;
 * FDEs whose CIE or pointer encoding is not understood are left out. *out is malloc'd (the
 * caller frees it), *nr its length. Returns 0, -ENOENT when there is no CFI, -ENOEXEC or
 * -ENOMEM (*out NULL). */
int unwind_table__fdes(struct Elf *elf, struct unwind_fde **out, size_t *nr);

/* Frees the rows and leaves t empty. NULL allowed. */
void unwind_table__clear(struct unwind_table *t);

/* The row in effect at link-time address pc (the last row whose pc <= pc), or NULL when pc lies
 * below the first row. The same search the BPF walker does. */
const struct tp_unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t pc);

/* The load bias of a mapping of t's object at address start with file offset pgoff (both from
 * /proc/PID/maps): link-time address = address - bias. Uses the PT_LOAD segment holding pgoff,
 * executable ones first. Returns 0, or -ENOENT when no segment holds pgoff. */
int unwind_table__bias(const struct unwind_table *t, uint64_t start, uint64_t pgoff,
		       uint64_t *bias);

/* Bytes of BPF map memory a table of nr_rows rows takes (values plus the kernel's array
 * overhead, approximated). */
uint64_t unwind_table__bpf_bytes(size_t nr_rows);

#endif
