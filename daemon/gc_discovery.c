// SPDX-License-Identifier: GPL-2.0-only
/* Recognising GC runtimes in ELF objects: SystemTap SDT notes (HotSpot, CPython), Go build info
 * and runtime symbols. Note layout: the SystemTap wiki's "UserSpaceProbeImplementation" (three
 * address-sized words, then provider, name and argument strings). */
#include "gc_discovery.h"

#include "elf_symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NT_STAPSDT 3

const char *gc_runtime_name(unsigned runtime)
{
	switch (runtime) {
	case TP_GC_JVM:
		return "jvm";
	case TP_GC_PYTHON:
		return "python";
	case TP_GC_GO:
		return "go";
	}
	return "unknown";
}

const char *gc_method_name(unsigned method)
{
	static const char *const names[] = {
	    [GC_METHOD_NONE] = "none",
	    [GC_METHOD_USDT] = "usdt",
	    [GC_METHOD_UPROBE] = "uprobe",
	};

	return method < sizeof(names) / sizeof(names[0]) ? names[method] : "none";
}

const char *gc_kind_name(unsigned kind)
{
	switch (kind) {
	case TP_GC_PAUSE:
		return "pause";
	case TP_GC_COLLECTION:
		return "collection";
	case TP_GC_SAFEPOINT:
		return "safepoint";
	}
	return "unknown";
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static bool python_name(const char *name)
{
	return !fnmatch("python3*", name, 0) || !fnmatch("libpython3*.so*", name, 0);
}

bool gc_discovery__candidate(const char *path, bool is_exe)
{
	const char *name = base_name(path);

	return is_exe || !strcmp(name, "libjvm.so") || !fnmatch("libpython3*.so*", name, 0);
}

/* The probes we look for, as bits. */
enum {
	SDT_JVM_GC_BEGIN = 1 << 0,
	SDT_JVM_GC_END = 1 << 1,
	SDT_JVM_SP_BEGIN = 1 << 2,
	SDT_JVM_SP_END = 1 << 3,
	SDT_PY_GC_START = 1 << 4,
	SDT_PY_GC_DONE = 1 << 5,
};

static unsigned sdt_bit(const char *provider, const char *name)
{
	static const struct {
		const char *provider, *name;
		unsigned bit;
	} known[] = {
	    {"hotspot", "gc__begin", SDT_JVM_GC_BEGIN},
	    {"hotspot", "gc__end", SDT_JVM_GC_END},
	    {"hs_private", "safepoint__begin", SDT_JVM_SP_BEGIN},
	    {"hs_private", "safepoint__end", SDT_JVM_SP_END},
	    {"python", "gc__start", SDT_PY_GC_START},
	    {"python", "gc__done", SDT_PY_GC_DONE},
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(provider, known[i].provider) && !strcmp(name, known[i].name))
			return known[i].bit;
	return 0;
}

static unsigned read_sdt_notes(Elf_Scn *scn, bool is64)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t off = 0, name_off, desc_off, words = 3 * (is64 ? 8 : 4);
	unsigned bits = 0;
	GElf_Nhdr nh;

	if (!data)
		return 0;
	while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *desc = (const char *)data->d_buf + desc_off, *prov, *name;
		size_t plen;

		if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 ||
		    memcmp((const char *)data->d_buf + name_off, "stapsdt", 8) ||
		    nh.n_descsz <= words)
			continue;
		prov = desc + words;
		plen = strnlen(prov, nh.n_descsz - words);
		if (words + plen + 1 >= nh.n_descsz)
			continue;
		name = prov + plen + 1;
		if (strnlen(name, nh.n_descsz - words - plen - 1) == nh.n_descsz - words - plen - 1)
			continue;
		bits |= sdt_bit(prov, name);
	}
	return bits;
}

/* Go 1.18+ build info: a 32-byte header ("\xff Go buildinf:", pointer size, flags) and, with
 * flag 2, the version as a varint-prefixed string (src/debug/buildinfo). Older layouts point
 * at the string instead: the version then stays "". */
static void read_go_version(Elf_Scn *scn, char *out, size_t len)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const unsigned char *p;
	uint64_t n = 0;
	size_t i, shift = 0;

	if (!data || data->d_size < 33)
		return;
	p = data->d_buf;
	if (memcmp(p, "\xff Go buildinf:", 14) || !(p[15] & 2))
		return;
	for (i = 32; i < data->d_size && i < 42; i++) {
		n |= (uint64_t)(p[i] & 0x7f) << shift;
		shift += 7;
		if (!(p[i] & 0x80))
			break;
	}
	i++;
	if (i >= data->d_size || n == 0 || n > data->d_size - i)
		return;
	snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), (const char *)p + i);
}

static const char *const go_names[] = {GC_GO_RESET, GC_GO_STOP_WORLD, GC_GO_MARK_TERM,
				       GC_GO_START_WORLD};

static bool go_function(const char *name, const GElf_Sym *sym, void *ctx)
{
	unsigned *found = ctx;

	if (strncmp(name, "runtime.", 8))
		return false;
	for (int k = 0; k < 4; k++)
		if (!strcmp(name, go_names[k]))
			*found |= 1u << k;
	return false;
}

/* Which of the Go probe functions .symtab defines: bits 0..3 in GC_GO_* order. */
static unsigned go_functions(Elf *elf, Elf_Scn *symtab)
{
	unsigned found = 0;

	elf_each_function(elf, symtab, go_function, &found);
	return found;
}

/* Whether the dynamic section names a libpython as needed (the probes are in the library). */
static bool needs_libpython(Elf *elf, Elf_Scn *dynamic)
{
	Elf_Data *data = elf_getdata(dynamic, NULL);
	GElf_Shdr sh;

	if (!data || !gelf_getshdr(dynamic, &sh) || !sh.sh_entsize)
		return false;
	for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
		GElf_Dyn dyn;
		const char *lib;

		if (!gelf_getdyn(data, i, &dyn) || dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag != DT_NEEDED)
			continue;
		lib = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
		if (lib && !strncmp(lib, "libpython3", 10))
			return true;
	}
	return false;
}

/* File offset of a virtual address: through the section that holds it. */
static int vaddr_to_offset(Elf *elf, uint64_t addr, uint64_t *off)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (addr >= sh.sh_addr && addr < sh.sh_addr + sh.sh_size) {
			*off = addr - sh.sh_addr + sh.sh_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* CPythons whose gc_collect_main(tstate, generation, ...) returns collected + uncollectable,
 * as gc__done gives them (Modules/gcmodule.c), checked against their source and tested. Another
 * version is a row here once it is. */
static const char *const py_collect_versions[] = {"3.11"};

/* "3.11" from python3.11, libpython3.11.so.1.0, python3.11d; "" when the name has no X.Y. */
static void python_version(const char *name, char *out, size_t len)
{
	const char *p = name + (strncmp(name, "lib", 3) ? 0 : 3) + strlen("python");
	size_t n = 0;

	out[0] = 0;
	if (p[n] < '0' || p[n] > '9')
		return;
	while (p[n] >= '0' && p[n] <= '9')
		n++;
	if (p[n++] != '.' || p[n] < '0' || p[n] > '9')
		return;
	while (p[n] >= '0' && p[n] <= '9')
		n++;
	if (n < len)
		snprintf(out, len, "%.*s", (int)n, p);
}

/* What the symbol tables say of GC_PY_COLLECT. */
struct py_collect {
	uint64_t addr;	/* the function's address (the last entry seen); 0: none */
	int entries;	/* functions by that name (or an LTO-private rename of it) */
	char clone[80]; /* the first clone that may take other arguments; "" */
};

static bool py_collect_symbol(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct py_collect *pc = ctx;
	size_t n = strlen(GC_PY_COLLECT);
	const char *suffix = name + n;

	if (strncmp(name, GC_PY_COLLECT, n) || (*suffix && *suffix != '.'))
		return false;
	/* hot/cold splitting: code jumped to from the function, never an entry */
	if (!strncmp(suffix, ".cold", 5) && (!suffix[5] || suffix[5] == '.'))
		return false;
	/* the function itself: its own name, an LTO-private or local alias of it */
	if (!*suffix || !strncmp(suffix, ".lto_priv.", 10) || !strcmp(suffix, ".localalias")) {
		if (sym->st_value != pc->addr) {
			pc->entries++;
			pc->addr = sym->st_value;
		}
		return false;
	}
	/* .constprop, .isra, .part and the like: arguments dropped or moved, or a tail only */
	if (!pc->clone[0])
		snprintf(pc->clone, sizeof(pc->clone), "%s", name);
	return false;
}

/* A CPython without the USDT probes: probed by uprobes on GC_PY_COLLECT when its symbols and
 * its version allow, else the reason. */
static void python_by_uprobe(Elf *elf, Elf_Scn *symtab, Elf_Scn *dynsym, const char *name,
			     struct gc_object_info *out)
{
	static const char no_usdt[] = "no USDT probes python:gc__start/gc__done in";
	struct py_collect pc = {0};
	bool known = false;

	elf_each_function(elf, dynsym, py_collect_symbol, &pc);
	elf_each_function(elf, symtab, py_collect_symbol, &pc);
	for (size_t i = 0; i < sizeof(py_collect_versions) / sizeof(py_collect_versions[0]); i++)
		known |= !strcmp(out->version, py_collect_versions[i]);
	if (pc.clone[0])
		snprintf(out->reason, sizeof(out->reason),
			 "%s %s, and its collector is compiled as %s, a clone whose arguments may "
			 "differ from the source's",
			 no_usdt, name, pc.clone);
	else if (pc.entries > 1)
		snprintf(out->reason, sizeof(out->reason),
			 "%s %s, and its symbols have %d functions %s", no_usdt, name, pc.entries,
			 GC_PY_COLLECT);
	else if (!pc.entries && !symtab)
		snprintf(out->reason, sizeof(out->reason),
			 "%s %s (CPython built without --with-dtrace), and no symbol table to find "
			 "%s in (stripped)",
			 no_usdt, name, GC_PY_COLLECT);
	else if (!pc.entries)
		snprintf(out->reason, sizeof(out->reason),
			 "%s %s (CPython built without --with-dtrace), and no function %s in its "
			 "symbols (inlined)",
			 no_usdt, name, GC_PY_COLLECT);
	else if (!known)
		snprintf(out->reason, sizeof(out->reason),
			 "%s %s, and %s's arguments are known for CPython 3.11 only (%s%s)",
			 no_usdt, name, GC_PY_COLLECT, out->version[0] ? "this is " : "",
			 out->version[0] ? out->version : "its name does not say its version");
	else if (vaddr_to_offset(elf, pc.addr, &out->collect_offset))
		snprintf(out->reason, sizeof(out->reason), "%s %s, and %s is in no loaded section",
			 no_usdt, name, GC_PY_COLLECT);
	else {
		out->supported = true;
		out->method = GC_METHOD_UPROBE;
	}
}

int gc_discovery__classify(const char *path, const char *name, struct gc_object_info *out)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL, *buildinfo = NULL, *dynamic = NULL;
	bool go_note = false, is64;
	unsigned sdt = 0;
	size_t shstrndx;
	Elf *elf;
	int fd, err = 0;

	memset(out, 0, sizeof(*out));
	name = base_name(name ? name : path);
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx)) {
		err = -ENOEXEC;
		goto out;
	}
	is64 = gelf_getclass(elf) == ELFCLASS64;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *sname;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname)
			continue;
		if (sh.sh_type == SHT_NOTE && !strcmp(sname, ".note.stapsdt"))
			sdt |= read_sdt_notes(scn, is64);
		else if (!strcmp(sname, ".note.go.buildid"))
			go_note = true;
		else if (!strcmp(sname, ".go.buildinfo"))
			buildinfo = scn;
		else if (sh.sh_type == SHT_SYMTAB)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
		else if (sh.sh_type == SHT_DYNAMIC)
			dynamic = scn;
	}

	if ((sdt & (SDT_PY_GC_START | SDT_PY_GC_DONE)) == (SDT_PY_GC_START | SDT_PY_GC_DONE)) {
		out->runtime = TP_GC_PYTHON;
		out->supported = true;
		out->method = GC_METHOD_USDT;
		if (python_name(name))
			python_version(name, out->version, sizeof(out->version));
	} else if ((sdt & (SDT_JVM_GC_BEGIN | SDT_JVM_GC_END)) ==
		   (SDT_JVM_GC_BEGIN | SDT_JVM_GC_END)) {
		out->runtime = TP_GC_JVM;
		out->supported = true;
		out->method = GC_METHOD_USDT;
		out->safepoints = (sdt & (SDT_JVM_SP_BEGIN | SDT_JVM_SP_END)) ==
				  (SDT_JVM_SP_BEGIN | SDT_JVM_SP_END);
	} else if (!strcmp(name, "libjvm.so")) {
		out->runtime = TP_GC_JVM;
		snprintf(out->reason, sizeof(out->reason),
			 "no USDT probes hotspot:gc__begin/gc__end in %s (a JVM built without "
			 "DTrace probes)",
			 name);
	} else if (buildinfo || go_note) {
		unsigned fns;

		out->runtime = TP_GC_GO;
		if (buildinfo)
			read_go_version(buildinfo, out->version, sizeof(out->version));
		if (!symtab) {
			snprintf(out->reason, sizeof(out->reason),
				 "stripped Go binary: no symbol table to find the runtime's GC "
				 "functions in");
		} else if ((fns = go_functions(elf, symtab)) != 0xf) {
			int k = 0;

			while (fns & (1u << k))
				k++;
			snprintf(out->reason, sizeof(out->reason),
				 "Go runtime %s has no function %s (supported: Go 1.19; others "
				 "with the same four runtime functions)",
				 out->version[0] ? out->version : "of unknown version",
				 go_names[k]);
		} else {
			out->supported = true;
			out->method = GC_METHOD_UPROBE;
		}
	} else if (python_name(name) && !(dynamic && needs_libpython(elf, dynamic))) {
		out->runtime = TP_GC_PYTHON;
		python_version(name, out->version, sizeof(out->version));
		python_by_uprobe(elf, symtab, dynsym, name, out);
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

struct func_lookup {
	const char *name;
	uint64_t addr;
};

static bool func_named(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct func_lookup *fl = ctx;

	if (strcmp(name, fl->name))
		return false;
	fl->addr = sym->st_value;
	return true;
}

int gc_discovery__func_offset(const char *path, const char *name, uint64_t *offset)
{
	struct func_lookup fl = {.name = name};
	int fd, err = -ENOENT;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	for (int pass = 0; pass < 2 && !fl.addr; pass++) {
		unsigned want = pass ? SHT_SYMTAB : SHT_DYNSYM;

		scn = NULL;
		while (!fl.addr && (scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == want)
				elf_each_function(elf, scn, func_named, &fl);
		}
	}
	if (fl.addr)
		err = vaddr_to_offset(elf, fl.addr, offset);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}
