// SPDX-License-Identifier: GPL-2.0-only
/* Unwind tables from .eh_frame/.debug_frame through libdw's CFI reader. */
#include "unwind_table.h"

#include "elf_symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* DWARF register numbers of x86-64 (System V psABI, figure 3.36). */
#define DWREG_RBP 6
#define DWREG_RSP 7
#define DWREG_RA  16

/* Layout of the rt_sigframe the kernel pushes (arch/x86/include/asm/sigframe.h): at
 * __restore_rt, RSP points at the ucontext, whose mcontext starts 40 bytes in; __restore_rt's
 * own CFI says the same (CFA = *(RSP + 160), RIP at RSP + 168). The BPF walker uses these. */
#define SIGFRAME_RSP_OFF 160

struct cie_info {
	uint64_t offset;
	uint8_t fde_enc; /* DW_EH_PE_* of initial_location and address_range */
	bool ok;	 /* the augmentation was understood */
};

struct builder {
	struct tp_unwind_row *rows;
	size_t nr, cap;
	bool too_high;
};

/* ---- FDE listing ---- */

static size_t enc_size(uint8_t enc, bool is64)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		return is64 ? 8 : 4;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		return 2;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	default:
		return 0; /* LEB128 and unknown formats: not used for FDE addresses in practice */
	}
}

/* Reads a pointer encoded with enc at p (bounded by end); field_addr is the link-time address of
 * p, for pcrel. apply false: the raw value (an FDE's address_range). Returns false for encodings
 * not handled. */
static bool read_encoded(const uint8_t *p, const uint8_t *end, uint8_t enc, bool is64,
			 uint64_t field_addr, bool apply, uint64_t *out)
{
	size_t n = enc_size(enc, is64);
	uint64_t v = 0;

	if (!n || (size_t)(end - p) < n)
		return false;
	memcpy(&v, p, n); /* little endian: x86-64 only */
	switch (enc & 0x0f) {
	case DW_EH_PE_sdata2:
		v = (uint64_t)(int64_t)(int16_t)v;
		break;
	case DW_EH_PE_sdata4:
		v = (uint64_t)(int64_t)(int32_t)v;
		break;
	case DW_EH_PE_absptr:
		if (!is64)
			v = (uint32_t)v;
		break;
	}
	if (!apply) {
		*out = v;
		return true;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		v += field_addr;
		break;
	default:
		return false;
	}
	*out = v;
	return true;
}

static bool parse_cie(const Dwarf_CIE *cie, bool eh_frame, bool is64, struct cie_info *ci)
{
	const char *aug = cie->augmentation;
	const uint8_t *d = cie->augmentation_data;
	size_t i = 0, left = cie->augmentation_data_size;

	ci->fde_enc = DW_EH_PE_absptr;
	ci->ok = true;
	if (!eh_frame || !aug || aug[0] != 'z')
		return aug == NULL || aug[0] == 0 || !eh_frame;
	for (aug++; *aug; aug++) {
		switch (*aug) {
		case 'R':
			if (i >= left)
				return false;
			ci->fde_enc = d[i++];
			break;
		case 'P': {
			uint8_t penc;
			size_t n;

			if (i >= left)
				return false;
			penc = d[i++];
			n = enc_size(penc, is64);
			if (!n || (penc & DW_EH_PE_aligned) || i + n > left)
				return false;
			i += n;
			break;
		}
		case 'L':
			i++;
			break;
		case 'S':
		case 'B':
			break;
		default:
			return false;
		}
	}
	return true;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct unwind_fde *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static const struct cie_info *find_cie(const struct cie_info *cies, size_t nr, uint64_t offset)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) { /* CIEs are recorded in section order */
		size_t mid = lo + (hi - lo) / 2;

		if (cies[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nr && cies[lo].offset == offset ? &cies[lo] : NULL;
}

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t nc;
	void *n;

	if (need <= *cap)
		return true;
	nc = *cap ? *cap * 2 : 64;
	if (nc < need)
		nc = need;
	if (nc > SIZE_MAX / size)
		return false;
	n = realloc(*p, nc * size);
	if (!n)
		return false;
	*p = n;
	*cap = nc;
	return true;
}

/* Lists the FDEs of data (the CFI section at link-time address sh_addr) into *out, sorted by
 * start. FDEs whose CIE or encoding is not understood are skipped. Returns 0 or -ENOMEM. */
static int list_fdes(Elf *elf, Elf_Data *data, bool eh_frame, uint64_t sh_addr,
		     struct unwind_fde **out, size_t *nr_out)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	bool is64 = ident && ident[EI_CLASS] == ELFCLASS64;
	struct cie_info *cies = NULL;
	struct unwind_fde *fdes = NULL;
	size_t nr_cies = 0, cap_cies = 0, nr = 0, cap = 0;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;

	*out = NULL;
	*nr_out = 0;
	if (!ident)
		return -ENOEXEC;
	while (off != (Dwarf_Off)-1 && dwarf_next_cfi(ident, data, eh_frame, off, &next, &e) == 0) {
		Dwarf_Off here = off;

		off = next;
		if (e.CIE_id == DW_CIE_ID_64) {
			if (!grow((void **)&cies, &cap_cies, nr_cies + 1, sizeof(*cies)))
				goto nomem;
			cies[nr_cies].offset = here;
			cies[nr_cies].ok = parse_cie(&e.cie, eh_frame, is64, &cies[nr_cies]);
			nr_cies++;
		} else {
			const struct cie_info *ci = find_cie(cies, nr_cies, e.fde.CIE_pointer);
			const uint8_t *p = e.fde.start, *end = e.fde.end;
			uint8_t enc = ci ? ci->fde_enc : DW_EH_PE_absptr;
			uint64_t lo, len;
			size_t n;

			if (!ci || !ci->ok)
				continue;
			n = enc_size(enc, is64);
			if (!read_encoded(p, end, enc, is64,
					  sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf),
					  true, &lo) ||
			    !read_encoded(p + n, end, enc, is64, 0, false, &len))
				continue;
			if (!len || lo + len < lo)
				continue;
			if (!grow((void **)&fdes, &cap, nr + 1, sizeof(*fdes)))
				goto nomem;
			fdes[nr++] = (struct unwind_fde){.start = lo, .end = lo + len};
		}
	}
	free(cies);
	qsort(fdes, nr, sizeof(*fdes), cmp_fde);
	*out = fdes;
	*nr_out = nr;
	return 0;
nomem:
	free(cies);
	free(fdes);
	return -ENOMEM;
}

/* ---- rows ---- */

static bool row_same(const struct tp_unwind_row *a, const struct tp_unwind_row *b)
{
	return a->cfa_type == b->cfa_type && a->cfa_off8 == b->cfa_off8 &&
	       a->rbp_off8 == b->rbp_off8;
}

/* Appends row r at pc (pcs come in ascending order), merging it into the previous row when the
 * rules are the same. */
static int emit(struct builder *b, uint64_t pc, struct tp_unwind_row r)
{
	if (pc > UINT32_MAX) {
		b->too_high = true;
		return -E2BIG;
	}
	r.pc = pc;
	if (b->nr) {
		struct tp_unwind_row *last = &b->rows[b->nr - 1];

		if (last->pc == pc) { /* the earlier row was empty */
			*last = r;
			if (b->nr >= 2 && row_same(&b->rows[b->nr - 2], last))
				b->nr--;
			return 0;
		}
		if (row_same(last, &r))
			return 0;
	}
	if (!grow((void **)&b->rows, &b->cap, b->nr + 1, sizeof(*b->rows)))
		return -ENOMEM;
	b->rows[b->nr++] = r;
	return 0;
}

/* Offset N of a register saved at CFA + N: libdw writes the rule as DW_OP_call_frame_cfa,
 * optionally followed by DW_OP_plus_uconst N (N two's complement when negative) or
 * DW_OP_consts N, DW_OP_plus. */
static bool cfa_relative(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	if (nops == 3 && ops[1].atom == DW_OP_consts && ops[2].atom == DW_OP_plus) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* The PLT pattern gcc/binutils emit for .plt (and .plt.sec/.plt.got with lit10):
 * DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litT; DW_OP_ge; DW_OP_lit3;
 * DW_OP_shl; DW_OP_plus: CFA = RSP + 8 + ((RIP & 15) >= T) * 8. Returns T, or 0. */
static unsigned plt_threshold(const Dwarf_Op *ops, size_t nops)
{
	if (nops != 9 || ops[0].atom != DW_OP_breg7 || ops[0].number != 8 ||
	    ops[1].atom != DW_OP_breg16 || ops[1].number != 0 || ops[2].atom != DW_OP_lit15 ||
	    ops[3].atom != DW_OP_and || ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit31 ||
	    ops[5].atom != DW_OP_ge || ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl ||
	    ops[8].atom != DW_OP_plus)
		return 0;
	return ops[4].atom - DW_OP_lit0;
}

/* A register plus an offset: libdw writes a DW_CFA_def_cfa rule as DW_OP_bregx REG OFF. */
static bool base_reg(const Dwarf_Op *op, unsigned *reg, int64_t *off)
{
	if (op->atom == DW_OP_bregx) {
		*reg = op->number;
		*off = (int64_t)op->number2;
		return true;
	}
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return true;
	}
	return false;
}

/* The row for one frame state. */
static struct tp_unwind_row frame_row(Dwarf_Frame *frame, bool signal)
{
	struct tp_unwind_row r = {.cfa_type = TP_CFA_UNSUPPORTED};
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int64_t off;
	unsigned thr, reg;

	if (dwarf_frame_cfa(frame, &ops, &nops) || nops == 0)
		return r;
	if (signal || (nops == 2 && ops[0].atom == DW_OP_breg7 &&
		       ops[0].number == SIGFRAME_RSP_OFF && ops[1].atom == DW_OP_deref)) {
		r.cfa_type = TP_CFA_SIGNAL;
		return r;
	}
	if (nops == 1 && base_reg(&ops[0], &reg, &off) && (reg == DWREG_RSP || reg == DWREG_RBP)) {
		if (off < 0 || off % 8 || off / 8 > UINT16_MAX)
			return r;
		r.cfa_type = reg == DWREG_RSP ? TP_CFA_RSP : TP_CFA_RBP;
		r.cfa_off8 = off / 8;
	} else if ((thr = plt_threshold(ops, nops))) {
		r.cfa_type = TP_CFA_PLT;
		r.cfa_off8 = thr;
	} else {
		return r;
	}

	/* the return address: at CFA - 8, or undefined in the outermost frame */
	if (dwarf_frame_register(frame, DWREG_RA, mem, &ops, &nops)) {
		r.cfa_type = TP_CFA_UNSUPPORTED;
		return r;
	}
	if (nops == 0 && ops == mem) {
		r = (struct tp_unwind_row){.cfa_type = TP_CFA_END};
		return r;
	}
	if (!cfa_relative(ops, nops, &off) || off != -8) {
		r = (struct tp_unwind_row){.cfa_type = TP_CFA_UNSUPPORTED};
		return r;
	}

	/* the caller's RBP: unchanged, saved at CFA + N, or lost */
	if (dwarf_frame_register(frame, DWREG_RBP, mem, &ops, &nops) == 0 && nops == 0)
		r.rbp_off8 = 0;
	else if (cfa_relative(ops, nops, &off) && off < 0 && off % 8 == 0 && off / 8 >= -127)
		r.rbp_off8 = off / 8;
	else
		r.rbp_off8 = TP_RBP_LOST;
	return r;
}

/* Rows of the FDE covering [lo, hi). */
static int fde_rows(Dwarf_CFI *cfi, struct builder *b, uint64_t lo, uint64_t hi)
{
	uint64_t pc = lo;
	int err;

	while (pc < hi) {
		Dwarf_Frame *frame = NULL;
		Dwarf_Addr start, end;
		bool signal = false;
		struct tp_unwind_row r;

		if (dwarf_cfi_addrframe(cfi, pc, &frame)) {
			/* libdw cannot evaluate this FDE: the walk stops in it */
			return emit(b, pc, (struct tp_unwind_row){.cfa_type = TP_CFA_UNSUPPORTED});
		}
		dwarf_frame_info(frame, &start, &end, &signal);
		r = frame_row(frame, signal);
		free(frame);
		err = emit(b, pc, r);
		if (err)
			return err;
		if (end <= pc)
			break;
		pc = end;
	}
	return 0;
}

static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *shdr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, shdr) || shdr->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, shdr->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

static void read_segments(Elf *elf, struct unwind_table *out)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum))
		return;
	for (size_t i = 0; i < phnum && out->nr_segs < UNWIND_MAX_SEGMENTS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		out->segs[out->nr_segs++] = (struct unwind_segment){
		    .vaddr = ph.p_vaddr,
		    .offset = ph.p_offset,
		    .filesz = ph.p_filesz,
		    .exec = !!(ph.p_flags & PF_X),
		};
	}
}

/* Go's functions where a stack ends, or where it continues on another stack: the runtime's own
 * traceback stops at them (runtime/traceback.go: TOPFRAME goexit, mstart and rt0_go; the SPWRITE
 * functions that move to the g0 stack). Their CFI gives no caller's return address (at the bottom
 * of a system stack, mcall's slot holds runtime.g0's address), so the walk ends in them. */
static const char *const go_stack_tops[] = {
    "runtime.goexit",	   "runtime.mstart",	"runtime.rt0_go",     "runtime.mcall",
    "runtime.systemstack", "runtime.morestack", "runtime.asmcgocall",
};

#define GO_STACK_TOPS (sizeof(go_stack_tops) / sizeof(go_stack_tops[0]))
/* room for both ABIs of each (asmcgocall has two) */
#define GO_STACK_TOP_EXTENTS (2 * GO_STACK_TOPS)

struct go_tops {
	struct unwind_fde *top; /* GO_STACK_TOP_EXTENTS of them */
	size_t n;
};

/* elf_each_function's callback: keeps the extent of a go_stack_tops function (name or
 * name.abi0: assembly functions carry their ABI since Go 1.17). */
static bool go_stack_top(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct go_tops *g = ctx;

	if (!sym->st_size || strncmp(name, "runtime.", 8))
		return false;
	for (size_t k = 0; k < GO_STACK_TOPS; k++) {
		size_t len = strlen(go_stack_tops[k]);

		if (!strncmp(name, go_stack_tops[k], len) &&
		    (!name[len] || !strcmp(name + len, ".abi0"))) {
			g->top[g->n++] =
			    (struct unwind_fde){sym->st_value, sym->st_value + sym->st_size};
			break;
		}
	}
	return g->n == GO_STACK_TOP_EXTENTS;
}

/* The extents of elf's go_stack_tops functions, from its symbol table, into top[] (at most
 * GO_STACK_TOP_EXTENTS). Returns how many: 0 for an object that is not a Go program (no
 * .gopclntab) or has no symbol table (built with -ldflags=-s). */
static size_t go_stack_top_extents(Elf *elf, struct unwind_fde *top)
{
	struct go_tops g = {.top = top};
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	if (!find_section(elf, ".gopclntab", &shdr))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB) {
			elf_each_function(elf, scn, go_stack_top, &g);
			break;
		}
	}
	return g.n;
}

/* Whether [lo, hi) overlaps one of top[0..n). */
static bool overlaps_top(const struct unwind_fde *top, size_t n, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < n; i++)
		if (lo < top[i].end && top[i].start < hi)
			return true;
	return false;
}

/* The CFI of elf: .eh_frame, else .debug_frame (decompressed). On success *data is the
 * section's data, *sh_addr its link-time address, *eh whether it is .eh_frame, and *cfi (may be
 * NULL when not wanted) libdw's reader of it, to free with end_cfi(). Returns 0, -ENOENT when
 * there is no CFI, or -ENOEXEC. */
static int open_cfi(Elf *elf, Elf_Data **data, uint64_t *sh_addr, bool *eh, Dwarf **dw,
		    Dwarf_CFI **cfi)
{
	GElf_Shdr shdr;
	Elf_Scn *scn;

	*dw = NULL;
	if (cfi)
		*cfi = NULL;
	*eh = true;
	scn = find_section(elf, ".eh_frame", &shdr);
	if (scn && shdr.sh_size > 4) {
		if (cfi)
			*cfi = dwarf_getcfi_elf(elf);
	} else {
		*eh = false;
		scn = find_section(elf, ".debug_frame", &shdr);
		if (!scn)
			return -ENOENT;
		if ((shdr.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			return -ENOEXEC;
		gelf_getshdr(scn, &shdr);
		if (cfi) {
			*dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
			*cfi = *dw ? dwarf_getcfi(*dw) : NULL;
		}
	}
	*data = elf_getdata(scn, NULL);
	*sh_addr = shdr.sh_addr;
	if ((cfi && !*cfi) || !*data || !(*data)->d_buf)
		return -ENOEXEC;
	return 0;
}

static void end_cfi(Dwarf *dw, Dwarf_CFI *cfi)
{
	if (dw)
		dwarf_end(dw); /* ends its CFI too */
	else if (cfi)
		dwarf_cfi_end(cfi);
}

static int build(Elf *elf, struct unwind_table *out)
{
	struct builder b = {0};
	struct unwind_fde *fdes = NULL, tops[GO_STACK_TOP_EXTENTS];
	size_t nr_fdes = 0, nr_tops = 0;
	Dwarf *dw = NULL;
	Dwarf_CFI *cfi = NULL;
	Elf_Data *data;
	GElf_Ehdr ehdr;
	uint64_t sh_addr;
	bool eh;
	int err;

	if (!gelf_getehdr(elf, &ehdr) || ehdr.e_machine != EM_X86_64)
		return -ENOEXEC;
	read_segments(elf, out);
	err = open_cfi(elf, &data, &sh_addr, &eh, &dw, &cfi);
	if (err)
		goto out;
	err = list_fdes(elf, data, eh, sh_addr, &fdes, &nr_fdes);
	if (err)
		goto out;
	if (!nr_fdes) {
		err = -ENOENT;
		goto out;
	}
	/* Go's stack tops end the walk, whether an FDE covers them or not: as extents of their own
	 * among the FDEs (not counted as FDEs read) */
	nr_tops = go_stack_top_extents(elf, tops);
	if (nr_tops) {
		struct unwind_fde *all = realloc(fdes, (nr_fdes + nr_tops) * sizeof(*all));

		if (!all) {
			err = -ENOMEM;
			goto out;
		}
		fdes = all;
		memcpy(fdes + nr_fdes, tops, nr_tops * sizeof(*tops));
		nr_fdes += nr_tops;
		qsort(fdes, nr_fdes, sizeof(*fdes), cmp_fde);
	}
	for (size_t i = 0; i < nr_fdes; i++) {
		uint64_t hi = fdes[i].end;

		/* an FDE overlapping the next one ends where it starts */
		if (i + 1 < nr_fdes && fdes[i + 1].start < hi)
			hi = fdes[i + 1].start;
		if (hi <= fdes[i].start)
			continue;
		if (overlaps_top(tops, nr_tops, fdes[i].start, hi))
			err =
			    emit(&b, fdes[i].start, (struct tp_unwind_row){.cfa_type = TP_CFA_END});
		else
			err = fde_rows(cfi, &b, fdes[i].start, hi);
		if (err)
			goto out;
		if (i + 1 == nr_fdes || fdes[i + 1].start > hi) {
			err = emit(&b, hi, (struct tp_unwind_row){.cfa_type = TP_CFA_NONE});
			if (err)
				goto out;
		}
	}
	out->rows = b.rows;
	out->nr_rows = b.nr;
	out->nr_fdes = nr_fdes - nr_tops;
	out->from_debug_frame = !eh;
	for (size_t i = 0; i < b.nr; i++)
		out->nr_unsupported += b.rows[i].cfa_type == TP_CFA_UNSUPPORTED;
	b.rows = NULL;
	err = 0;
out:
	free(b.rows);
	free(fdes);
	end_cfi(dw, cfi);
	return err;
}

int unwind_table__fdes(Elf *elf, struct unwind_fde **out, size_t *nr)
{
	Elf_Data *data;
	uint64_t sh_addr;
	Dwarf *dw;
	bool eh;
	int err;

	*out = NULL;
	*nr = 0;
	err = open_cfi(elf, &data, &sh_addr, &eh, &dw, NULL);
	if (err)
		return err;
	return list_fdes(elf, data, eh, sh_addr, out, nr);
}

int unwind_table__build_fd(int fd, struct unwind_table *out)
{
	Elf *elf;
	int err;

	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF)
		err = -ENOEXEC;
	else
		err = build(elf, out);
	elf_end(elf);
	if (err)
		memset(out, 0, sizeof(*out));
	return err;
}

void unwind_table__clear(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

const struct tp_unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nr_rows;

	if (pc > UINT32_MAX)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

int unwind_table__bias(const struct unwind_table *t, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	for (int want_exec = 1; want_exec >= 0; want_exec--) {
		for (size_t i = 0; i < t->nr_segs; i++) {
			const struct unwind_segment *g = &t->segs[i];
			uint64_t first = g->offset & ~(uint64_t)4095;

			if (g->exec != want_exec || pgoff < first || pgoff >= g->offset + g->filesz)
				continue;
			/* p_vaddr - p_offset is the same for every byte of the segment */
			*bias = start - (g->vaddr + pgoff - g->offset);
			return 0;
		}
	}
	return -ENOENT;
}

uint64_t unwind_table__bpf_bytes(size_t nr_rows)
{
	/* an array map: its values, rounded up to 8 bytes each, plus about a page of struct
	 * bpf_array and map bookkeeping */
	return (uint64_t)nr_rows * sizeof(struct tp_unwind_row) + 4096;
}
