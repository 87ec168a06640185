// SPDX-License-Identifier: GPL-2.0-only
/* Source lines and inline chains of addresses from DWARF, through libdw. */
#include "dwarf_lines.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "hashmap.h"
#include "sorted.h"

/* Nesting of DIEs followed down to an address (namespaces, classes, functions, blocks). */
#define DIE_DEPTH_MAX 64

/* Debug sections whose bytes libdw's strings may point into, at most (a file has about 10). */
#define STRING_SECTIONS_MAX 32

/* Children not listed yet (struct pc_range). */
#define NOT_BUILT UINT32_MAX

/* An address range of a compile unit, an out-of-line function in one, or a subroutine inlined
 * in one. A function's and an inlined subroutine's children are the ranges of the subroutines
 * inlined directly in it (through lexical blocks): the unit's inlined[first .. first + nr),
 * sorted by lo, listed the first time an address falls in it. */
struct pc_range {
	uint64_t lo, hi;
	Dwarf_Off die; /* offset of the DIE (of a CU: its index in units) */
	uint32_t first, nr;
};

/* A compile unit, with the ranges of its functions once an address fell into it, and of the
 * subroutines inlined in those functions that addresses fell into: looking an address up is then
 * binary searches down a tree, not walks over DIEs (100 us per address in CPython's eval loop,
 * with its thousands of inlined subroutines). */
struct unit {
	Dwarf_Off die;
	struct pc_range *funcs; /* sorted by lo */
	size_t nr_funcs;
	struct pc_range *inlined;
	size_t nr_inlined, cap_inlined;
	size_t nr_rows; /* of its line table, which libdw parsed when an address fell into it */
	bool indexed;
};

/* A source path that needed cleaning, keyed by libdw's string (stable while the reader is). */
struct clean_path {
	const char *raw;
	char *clean;
};

struct dwarf_lines {
	int fd;		     /* our duplicate: libelf reads through it */
	uint64_t heap_bytes; /* of debug sections held in memory */
	Elf *elf;
	Dwarf *dw;
	struct pc_range *ranges; /* of the CUs, sorted by lo; die: index in units */
	size_t nr_ranges;
	struct unit *units;
	size_t nr_units;
	struct clean_path *paths;
	size_t nr_paths, cap_paths;
	struct hashmap path_index;
	/* the debug sections' bytes as libelf holds them for libdw: terminated() checks strings */
	struct {
		uintptr_t start;
		size_t len;
	} sections[STRING_SECTIONS_MAX];
	size_t nr_sections;
};

/* ---- opening ---- */

static bool is_debug_section(const char *name)
{
	return !strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8);
}

/* Checks that elf has .debug_info and .debug_line and that its debug sections, decompressed,
 * stay under the limit when they are to be read (not mapped): *heap_bytes, what libdw will hold
 * in memory of them. Returns 0 or -ENOENT, -EFBIG. */
static int check_sections(Elf *elf, bool mapped, uint64_t *heap_bytes)
{
	bool info = false, line = false;
	uint64_t total = 0;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || !is_debug_section(name))
			continue;
		info = info || !strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info");
		line = line || !strcmp(name, ".debug_line") || !strcmp(name, ".zdebug_line");
		/* a compressed section is decompressed into memory, mapped or not */
		if ((sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch))
			total += ch.ch_size;
		else if (!mapped)
			total += sh.sh_size;
	}
	*heap_bytes = total;
	if (!info || !line)
		return -ENOENT;
	return total > DWARF_READ_MAX_BYTES ? -EFBIG : 0;
}

/* Notes where elf's debug sections lie in memory, as libdw read them (elf_getdata gives the
 * buffers dwarf_begin_elf read, decompressed ones included). */
static void note_sections(struct dwarf_lines *dl)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(dl->elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(dl->elf, scn)) && dl->nr_sections < STRING_SECTIONS_MAX) {
		const char *name;
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(dl->elf, shstrndx, sh.sh_name);
		if (!name || !is_debug_section(name))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || !d->d_size)
			continue;
		dl->sections[dl->nr_sections].start = (uintptr_t)d->d_buf;
		dl->sections[dl->nr_sections++].len = d->d_size;
	}
}

/* libdw's string s, or NULL when it runs to the end of the debug section it lies in without a
 * NUL: libdw (0.188) hands out such strings from a malformed file (a name at the end of
 * .debug_line or .debug_str), and reading one reads past the section's buffer, into names
 * that profiles would then show. Found by tests/fuzz/fuzz_dwarf_lines.c (corpus/dwarf_lines/
 * unterminated-path). Strings outside the sections (libdw's own, joined paths) are whole. */
static const char *terminated(const struct dwarf_lines *dl, const char *s)
{
	uintptr_t p = (uintptr_t)s;

	for (size_t i = 0; s && i < dl->nr_sections; i++) {
		uintptr_t start = dl->sections[i].start, end = start + dl->sections[i].len;

		if (p >= start && p < end)
			return memchr(s, 0, end - p) ? s : NULL;
	}
	return s;
}

/* The range of v[0..nr) (sorted by lo) that holds addr, or NULL. Ranges should not overlap;
 * where they do (code the linker folded), a few earlier ones are tried. */
static const struct pc_range *find_range(const struct pc_range *v, size_t nr, uint64_t addr)
{
	size_t lo = sorted__upper_bound(v, nr, sizeof(*v), offsetof(struct pc_range, lo), addr);

	for (size_t i = lo, tries = 0; i > 0 && tries < 8; i--, tries++)
		if (addr < v[i - 1].hi)
			return &v[i - 1];
	return NULL;
}

static int cmp_range(const void *a, const void *b)
{
	const struct pc_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Appends [lo, hi) of DIE die to *v (capacity *cap). Returns 0 or -ENOMEM. */
static int add_range(struct pc_range **v, size_t *nr, size_t *cap, uint64_t lo, uint64_t hi,
		     Dwarf_Off die)
{
	if (array__grow((void **)v, cap, *nr + 1, sizeof(**v)))
		return -ENOMEM;
	(*v)[(*nr)++] = (struct pc_range){.lo = lo, .hi = hi, .die = die, .nr = NOT_BUILT};
	return 0;
}

/* Adds the code ranges of die to *v; *any tells whether there was one. Returns 0 or -ENOMEM. */
static int add_die_ranges(Dwarf_Die *die, Dwarf_Off key, struct pc_range **v, size_t *nr,
			  size_t *cap, bool *any)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		/* 0: code the linker dropped (GNU ld's tombstone); hi <= lo: lld's */
		if (!lo || hi <= lo)
			continue;
		if (add_range(v, nr, cap, lo, hi, key))
			return -ENOMEM;
		*any = true;
	}
	return 0;
}

/* Indexes the address ranges of every compile unit. Returns 0 or -ENOMEM. */
static int index_units(struct dwarf_lines *dl)
{
	size_t cap = 0, cap_units = 0;
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie;
	uint8_t type;

	while (dwarf_get_units(dl->dw, cu, &next, NULL, &type, &cudie, NULL) == 0) {
		bool any = false;

		cu = next;
		if (type != DW_UT_compile || dwarf_tag(&cudie) != DW_TAG_compile_unit)
			continue;
		if (add_die_ranges(&cudie, dl->nr_units, &dl->ranges, &dl->nr_ranges, &cap, &any))
			return -ENOMEM;
		if (!any)
			continue;
		if (ARRAY_GROW(dl->units, cap_units, dl->nr_units + 1))
			return -ENOMEM;
		dl->units[dl->nr_units++] = (struct unit){.die = dwarf_dieoffset(&cudie)};
	}
	qsort(dl->ranges, dl->nr_ranges, sizeof(*dl->ranges), cmp_range);
	return 0;
}

/* Whether DIEs of tag may hold functions below them without code ranges of their own. */
static bool holds_functions(int tag)
{
	switch (tag) {
	case DW_TAG_namespace:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_module:
		return true;
	default:
		return false;
	}
}

/* Appends to *v (*nr of *cap) the ranges of the DIEs of tag want below parent, found through
 * the DIEs whose tags through() accepts. Returns 0 or -ENOMEM. */
static int collect_ranges(Dwarf_Die *parent, int want, bool (*through)(int tag),
			  struct pc_range **v, size_t *nr, size_t *cap, int depth)
{
	Dwarf_Die child;
	bool any;

	if (depth >= DIE_DEPTH_MAX || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child), err = 0;

		if (tag == want)
			err = add_die_ranges(&child, dwarf_dieoffset(&child), v, nr, cap, &any);
		else if (through(tag))
			err = collect_ranges(&child, want, through, v, nr, cap, depth + 1);
		if (err)
			return err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* The CU DIE whose ranges hold addr, and its unit. */
static struct unit *find_unit(struct dwarf_lines *dl, uint64_t addr, Dwarf_Die *cudie)
{
	const struct pc_range *r = find_range(dl->ranges, dl->nr_ranges, addr);
	struct unit *u;

	if (!r)
		return NULL;
	u = &dl->units[r->die];
	if (!dwarf_offdie(dl->dw, u->die, cudie))
		return NULL;
	if (!u->indexed) {
		Dwarf_Lines *lines;
		size_t cap = 0;

		if (dwarf_getsrclines(cudie, &lines, &u->nr_rows))
			u->nr_rows = 0;
		/* out-of-line functions, also in namespaces and classes; on ENOMEM the unit stays
		 * unindexed: lines without functions, tried again */
		if (collect_ranges(cudie, DW_TAG_subprogram, holds_functions, &u->funcs,
				   &u->nr_funcs, &cap, 0)) {
			free(u->funcs);
			u->funcs = NULL;
			u->nr_funcs = 0;
			return u;
		}
		qsort(u->funcs, u->nr_funcs, sizeof(*u->funcs), cmp_range);
		u->indexed = true;
	}
	return u;
}

struct dwarf_lines *dwarf_lines__open(int fd)
{
	struct dwarf_lines *dl;
	struct stat st;
	bool mapped;
	int err;

	if (fstat(fd, &st))
		return NULL;
	/* a file that only root can change cannot be truncated under the mapping by a user */
	mapped = st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOEXEC;
		return NULL;
	}
	dl = calloc(1, sizeof(*dl));
	if (!dl) {
		errno = ENOMEM;
		return NULL;
	}
	dl->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	err = -errno;
	if (dl->fd < 0)
		goto fail;
	dl->elf = elf_begin(dl->fd, mapped ? ELF_C_READ_MMAP : ELF_C_READ, NULL);
	err = -ENOEXEC;
	if (!dl->elf || elf_kind(dl->elf) != ELF_K_ELF)
		goto fail;
	err = check_sections(dl->elf, mapped, &dl->heap_bytes);
	if (err)
		goto fail;
	dl->dw = dwarf_begin_elf(dl->elf, DWARF_C_READ, NULL);
	err = -ENOEXEC;
	if (!dl->dw)
		goto fail;
	note_sections(dl);
	err = index_units(dl);
	if (err)
		goto fail;
	return dl;
fail:
	dwarf_lines__close(dl);
	errno = -err;
	return NULL;
}

void dwarf_lines__close(struct dwarf_lines *dl)
{
	if (!dl)
		return;
	if (dl->dw)
		dwarf_end(dl->dw);
	if (dl->elf)
		elf_end(dl->elf);
	if (dl->fd >= 0)
		close(dl->fd);
	for (size_t i = 0; i < dl->nr_paths; i++)
		free(dl->paths[i].clean);
	free(dl->paths);
	hashmap__clear(&dl->path_index);
	for (size_t i = 0; i < dl->nr_units; i++) {
		free(dl->units[i].funcs);
		free(dl->units[i].inlined);
	}
	free(dl->units);
	free(dl->ranges);
	free(dl);
}

size_t dwarf_lines__nr_units(const struct dwarf_lines *dl)
{
	return dl->nr_units;
}

uint64_t dwarf_lines__heap_bytes(const struct dwarf_lines *dl)
{
	uint64_t bytes = dl->heap_bytes + dl->nr_ranges * sizeof(struct pc_range) +
			 dl->cap_paths * sizeof(struct clean_path) +
			 dl->nr_units * sizeof(struct unit) + dl->path_index.cap * 8;

	for (size_t i = 0; i < dl->nr_units; i++) {
		const struct unit *u = &dl->units[i];

		/* libdw's rows take 13 to 24 bytes each (measured: CPython's, tailprofd's) */
		bytes += (u->nr_funcs + u->cap_inlined) * sizeof(struct pc_range) + u->nr_rows * 24;
	}
	return bytes;
}

/* ---- paths ---- */

/* Removes "." components, empty ones and "dir/.." pairs from path p, in place (lexically, as Go's
 * filepath.Clean: the build's "/src/build/../lib/x.c" reads "/src/lib/x.c"). A ".." that has
 * nothing to cancel stays in a relative path and goes at the root of an absolute one. */
static void clean_path_in_place(char *p)
{
	bool abs = *p == '/';
	char *in = p + abs, *out = p + abs;
	size_t floor = abs; /* bytes of output that a ".." cannot take back */

	for (bool last = !*in; !last;) {
		char *slash = strchr(in, '/');
		size_t len = slash ? (size_t)(slash - in) : strlen(in);

		/* decided before writing: the output may overwrite the terminator */
		last = !slash || !slash[1];

		if (len == 2 && in[0] == '.' && in[1] == '.') {
			if ((size_t)(out - p) > floor) {
				out--; /* the '/' after the last component */
				while ((size_t)(out - p) > floor && out[-1] != '/')
					out--;
			} else if (!abs) {
				memcpy(out, "../", 3);
				out += 3;
				floor = out - p;
			}
		} else if (len && !(len == 1 && in[0] == '.')) {
			memmove(out, in, len);
			out += len;
			*out++ = '/';
		}
		in += len + 1;
	}
	if ((size_t)(out - p) > (size_t)abs)
		out--; /* the trailing '/' */
	if (out == p)
		*out++ = '.';
	*out = 0;
}

static bool needs_cleaning(const char *p)
{
	return strstr(p, "/./") || strstr(p, "/../") || strstr(p, "//") || !strncmp(p, "./", 2) ||
	       !strncmp(p, "../", 3);
}

static bool path_eq(const void *ctx, uint32_t i)
{
	const struct dwarf_lines *dl = ((const void *const *)ctx)[0];

	return dl->paths[i].raw == ((const void *const *)ctx)[1];
}

/* The path of source file raw (libdw's string) of the CU cudie: relative ones joined to the CU's
 * DW_AT_comp_dir (libdw leaves the files of DWARF 5's directory 0 relative, addr2line does not),
 * then cleaned. Kept per raw pointer, which libdw keeps per CU. raw itself on ENOMEM. */
static const char *source_path(struct dwarf_lines *dl, Dwarf_Die *cudie, const char *raw)
{
	const void *ctx[2] = {dl, raw};
	const char *dir = NULL;
	Dwarf_Attribute attr;
	size_t len;
	uint64_t h;
	uint32_t i;
	char *c;

	raw = terminated(dl, raw);
	if (!raw || (raw[0] == '/' && !needs_cleaning(raw)))
		return raw;
	h = hashmap__hash_ptr(raw);
	if (hashmap__find(&dl->path_index, h, path_eq, ctx, &i))
		return dl->paths[i].clean;
	if (raw[0] != '/' && dwarf_attr(cudie, DW_AT_comp_dir, &attr))
		dir = terminated(dl, dwarf_formstring(&attr));
	if (ARRAY_GROW(dl->paths, dl->cap_paths, dl->nr_paths + 1))
		return raw;
	len = (dir ? strlen(dir) + 1 : 0) + strlen(raw) + 1;
	c = malloc(len);
	if (!c)
		return raw;
	snprintf(c, len, "%s%s%s", dir ? dir : "", dir ? "/" : "", raw);
	clean_path_in_place(c);
	if (hashmap__insert(&dl->path_index, h, dl->nr_paths)) {
		free(c);
		return raw;
	}
	dl->paths[dl->nr_paths++] = (struct clean_path){.raw = raw, .clean = c};
	return c;
}

/* ---- lookup ---- */

static bool is_lexical_block(int tag)
{
	return tag == DW_TAG_lexical_block;
}

/* Lists the children of r, a range of DIE die: the ranges of all the subroutines inlined in die
 * (another range of die, a piece of a subroutine inlined in several, lists the same). Returns 0
 * or -ENOMEM. */
static int list_children(struct unit *u, struct pc_range *r, Dwarf_Die *die)
{
	size_t first = u->nr_inlined;

	/* the subroutines inlined directly in die, also in its lexical blocks */
	if (first >= UINT32_MAX / 2 ||
	    collect_ranges(die, DW_TAG_inlined_subroutine, is_lexical_block, &u->inlined,
			   &u->nr_inlined, &u->cap_inlined, 0)) {
		u->nr_inlined = first;
		return -ENOMEM;
	}
	if (u->nr_inlined > first) /* inlined may be NULL (none yet): qsort's array must not be */
		qsort(u->inlined + first, u->nr_inlined - first, sizeof(*u->inlined), cmp_range);
	r->first = first;
	r->nr = u->nr_inlined - first;
	return 0;
}

/* Walks down from function range u->funcs[fn] (of DIE chain[0]) through the inlined subroutines
 * holding pc: chain[*n..] gets them, outermost first; past max the deepest replaces the last. */
static void inline_chain(struct dwarf_lines *dl, struct unit *u, size_t fn, uint64_t pc,
			 Dwarf_Die *chain, size_t *n, size_t max)
{
	struct pc_range *f = &u->funcs[fn];
	Dwarf_Die die = chain[0];
	uint32_t first, nr;

	if (f->nr == NOT_BUILT && list_children(u, f, &die))
		return;
	first = f->first;
	nr = f->nr;
	for (int depth = 0; depth < DIE_DEPTH_MAX; depth++) {
		const struct pc_range *child = find_range(u->inlined + first, nr, pc);
		struct pc_range r;
		size_t at;

		if (!child || !dwarf_offdie(dl->dw, child->die, &die))
			return;
		if (*n == max)
			(*n)--;
		chain[(*n)++] = die;
		/* listing children appends to u->inlined, which may move */
		at = child - u->inlined;
		r = u->inlined[at];
		if (r.nr == NOT_BUILT) {
			if (list_children(u, &r, &die))
				return;
			u->inlined[at] = r;
		}
		first = r.first;
		nr = r.nr;
	}
}

static const char *attr_string(const struct dwarf_lines *dl, Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attr;

	return dwarf_attr_integrate(die, name, &attr) ? terminated(dl, dwarf_formstring(&attr))
						      : NULL;
}

/* Name, linkage name and declaration line (when declared in out->file) of function die. */
static void describe_function(struct dwarf_lines *dl, Dwarf_Die *cudie, Dwarf_Die *die,
			      struct dwarf_line *out)
{
	const char *decl;
	int line;

	out->name = attr_string(dl, die, DW_AT_name);
	out->linkage_name = attr_string(dl, die, DW_AT_linkage_name);
	if (!out->linkage_name)
		out->linkage_name = attr_string(dl, die, DW_AT_MIPS_linkage_name);
	out->decl_line = 0;
	decl = source_path(dl, cudie, dwarf_decl_file(die));
	if (decl && out->file && !strcmp(decl, out->file) && !dwarf_decl_line(die, &line) &&
	    line > 0)
		out->decl_line = line;
}

/* The call site of inlined subroutine die: file (from the CU's file table) and line. */
static void call_site(struct dwarf_lines *dl, Dwarf_Die *cudie, Dwarf_Die *die, const char **file,
		      uint32_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word w;
	size_t nfiles;

	*file = NULL;
	*line = 0;
	if (dwarf_attr(die, DW_AT_call_file, &attr) && !dwarf_formudata(&attr, &w) &&
	    !dwarf_getsrcfiles(cudie, &files, &nfiles) && w < nfiles)
		*file = source_path(dl, cudie, dwarf_filesrc(files, w, NULL, NULL));
	if (dwarf_attr(die, DW_AT_call_line, &attr) && !dwarf_formudata(&attr, &w) &&
	    w <= UINT32_MAX)
		*line = (uint32_t)w;
}

size_t dwarf_lines__lookup(struct dwarf_lines *dl, uint64_t addr, struct dwarf_line *out,
			   size_t max)
{
	Dwarf_Die cudie, chain[DWARF_LINES_MAX];
	const struct pc_range *fn;
	size_t depth = 0, n = 0;
	const char *file;
	struct unit *u;
	Dwarf_Line *row;
	Dwarf_Addr at;
	uint32_t line;
	int lineno;

	if (!max || !(u = find_unit(dl, addr, &cudie)))
		return 0;
	row = dwarf_getsrc_die(&cudie, addr);
	if (!row || dwarf_lineaddr(row, &at) || at > addr || dwarf_lineno(row, &lineno))
		return 0;
	if (max > DWARF_LINES_MAX)
		max = DWARF_LINES_MAX;
	fn = find_range(u->funcs, u->nr_funcs, addr);
	if (fn && dwarf_offdie(dl->dw, fn->die, &chain[0])) {
		depth = 1;
		inline_chain(dl, u, fn - u->funcs, addr, chain, &depth, DWARF_LINES_MAX);
	}
	file = source_path(dl, &cudie, dwarf_linesrc(row, NULL, NULL));
	line = lineno > 0 ? (uint32_t)lineno : 0;
	if (!depth) {
		/* code without a function DIE (assembly): the line alone */
		out[0] = (struct dwarf_line){.file = file, .line = line};
		return 1;
	}
	/* innermost first, each level at the line where it called (inlined) the one before;
	 * past max, the innermost max - 1 levels and the outermost function */
	for (size_t i = depth; i-- > 0 && n < max;) {
		if (n == max - 1 && i > 0) {
			call_site(dl, &cudie, &chain[1], &file, &line);
			i = 0;
		}
		out[n] = (struct dwarf_line){.file = file, .line = line};
		describe_function(dl, &cudie, &chain[i], &out[n]);
		n++;
		if (i > 0)
			call_site(dl, &cudie, &chain[i], &file, &line);
	}
	return n;
}
