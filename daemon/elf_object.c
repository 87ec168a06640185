// SPDX-License-Identifier: GPL-2.0-only
/* Objects: ELF files (read with libelf/gelf) and their compact function symbol tables. */
#include "elf_object.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sorted.h"
#include "source_lines.h"
#include "unwind_table.h"

/* --- symbol tables --- */

#define NAME_NONE   UINT32_MAX
#define NAME_WANTED (UINT32_MAX - 1)

struct raw_sym {
	uint64_t start;
	uint64_t end;
	const char *name;
	uint32_t rank;
	uint32_t out; /* offset of the copied name; NAME_NONE, NAME_WANTED before the copy */
	uint16_t tag;
};

/* Symbols are at most 4 GiB long (span lengths are 32-bit); a wrapped end is cut there too. */
static uint64_t clamp_end(uint64_t start, uint64_t end)
{
	if (end >= start && end - start <= UINT32_MAX)
		return end;
	return UINT64_MAX - start < UINT32_MAX ? UINT64_MAX : start + UINT32_MAX;
}

int symtab_builder__add(struct symtab_builder *b, uint64_t start, uint64_t end, const char *name,
			uint32_t rank, uint16_t tag)
{
	if (b->nr == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 256;
		struct raw_sym *n;

		if (ncap > SIZE_MAX / sizeof(*n))
			return -ENOMEM;
		n = realloc(b->syms, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->syms = n;
		b->cap = ncap;
	}
	end = clamp_end(start, end);
	b->syms[b->nr++] = (struct raw_sym){
	    .start = start,
	    .end = end,
	    .name = name,
	    .rank = rank,
	    .out = NAME_NONE,
	    .tag = tag,
	};
	return 0;
}

void symtab_builder__clear(struct symtab_builder *b)
{
	free(b->syms);
	b->syms = NULL;
	b->nr = b->cap = 0;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Start ascending; for equal starts the outer (longer) symbol first, then the preferred name. */
static int cmp_raw_sym(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;
	size_t ux, uy;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	if (x->rank >> 8 != y->rank >> 8)
		return x->rank >> 8 < y->rank >> 8 ? -1 : 1;
	ux = leading_underscores(x->name);
	uy = leading_underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Emits [from, to) owned by raw symbol idx; spans hold the raw index in ->name until the names
 * are copied. Adjacent pieces of the same symbol are merged. */
static void emit_span(struct sym_span *spans, size_t *nr, const struct raw_sym *syms, size_t idx,
		      uint64_t from, uint64_t to)
{
	struct sym_span *last = *nr ? &spans[*nr - 1] : NULL;

	if (to <= from)
		return;
	if (last && last->name == idx && last->start + last->len == from) {
		last->len += to - from;
		return;
	}
	spans[(*nr)++] = (struct sym_span){
	    .start = from,
	    .sym_start = syms[idx].start,
	    .len = to - from,
	    .name = idx,
	};
}

/* Flattens sorted, deduplicated symbols into disjoint spans where the innermost symbol (the one
 * that started last among those still open) owns each byte: a sweep over starts with a stack of
 * open symbols. Each span ends either at a new symbol's start or at a symbol's end, so there are
 * at most 2 * nr spans. Returns the number of spans. */
static size_t flatten(const struct raw_sym *syms, size_t nr, size_t *stack, struct sym_span *spans)
{
	size_t depth = 0, nr_spans = 0;
	uint64_t cur = 0;

	for (size_t i = 0; i <= nr; i++) {
		uint64_t pos = i < nr ? syms[i].start : UINT64_MAX;

		while (depth && cur < pos) {
			const struct raw_sym *top = &syms[stack[depth - 1]];
			uint64_t to;

			if (top->end <= cur) {
				depth--;
				continue;
			}
			to = top->end < pos ? top->end : pos;
			emit_span(spans, &nr_spans, syms, stack[depth - 1], cur, to);
			cur = to;
			if (top->end <= cur)
				depth--;
		}
		if (i == nr)
			break;
		stack[depth++] = i;
		cur = pos;
	}
	return nr_spans;
}

int symtab_builder__finish(struct symtab_builder *b, enum symtab_mode mode, uint32_t last_len,
			   bool with_tags, struct symtab *out)
{
	struct raw_sym *syms = b->syms;
	size_t nr = b->nr, kept = 0, nr_spans, names_bytes = 0;
	size_t tag_bytes = with_tags ? sizeof(uint16_t) : 0;
	struct sym_span *spans = NULL;
	size_t *stack = NULL;
	char *names = NULL;
	int err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!nr) {
		symtab_builder__clear(b);
		return 0;
	}
	if (mode == SYMTAB_TO_NEXT) {
		/* Extents are not known yet: order by start and preference only. */
		for (size_t i = 0; i < nr; i++)
			syms[i].end = syms[i].start;
	}
	qsort(syms, nr, sizeof(*syms), cmp_raw_sym);
	for (size_t i = 0; i < nr; i++) {
		if (kept && syms[kept - 1].start == syms[i].start &&
		    (mode == SYMTAB_TO_NEXT || syms[kept - 1].end == syms[i].end))
			continue;
		syms[kept++] = syms[i];
	}
	nr = kept;
	if (mode == SYMTAB_TO_NEXT) {
		for (size_t i = 0; i < nr; i++) {
			uint64_t next = syms[i].start + last_len;

			/* Across a change of tag (kernel: from one module to another), the gap
			 * between them is nobody's: cap the symbol as if it were the last. */
			if (i + 1 < nr && (syms[i + 1].tag == syms[i].tag ||
					   syms[i + 1].start - syms[i].start < last_len))
				next = syms[i + 1].start;

			syms[i].end = clamp_end(syms[i].start, next);
		}
	}

	if (nr > SIZE_MAX / (2 * sizeof(*spans)) || nr > UINT32_MAX)
		goto out;
	spans = malloc(2 * nr * sizeof(*spans));
	stack = malloc(nr * sizeof(*stack));
	if (!spans || !stack)
		goto out;
	nr_spans = flatten(syms, nr, stack, spans);

	/* Copy only the names that own a span, once each, cut at SYMBOL_NAME_MAX bytes. */
	for (size_t i = 0; i < nr_spans; i++) {
		struct raw_sym *s = &syms[spans[i].name];

		if (s->out == NAME_WANTED)
			continue;
		s->out = NAME_WANTED;
		names_bytes += strnlen(s->name, SYMBOL_NAME_MAX) + 1 + tag_bytes;
		if (names_bytes >= NAME_WANTED)
			goto out;
	}
	names = malloc(names_bytes ? names_bytes : 1);
	if (!names)
		goto out;
	names_bytes = 0;
	for (size_t i = 0; i < nr_spans; i++) {
		struct raw_sym *s = &syms[spans[i].name];

		if (s->out == NAME_WANTED) {
			size_t len = strnlen(s->name, SYMBOL_NAME_MAX);

			memcpy(names + names_bytes, s->name, len);
			if (len == SYMBOL_NAME_MAX)
				memcpy(names + names_bytes + len - 3, "...", 3);
			names[names_bytes + len++] = 0;
			if (with_tags)
				memcpy(names + names_bytes + len, &s->tag, tag_bytes);
			s->out = names_bytes;
			names_bytes += len + tag_bytes;
		}
		spans[i].name = s->out;
	}
	if (nr_spans < 2 * nr) {
		struct sym_span *shrunk = realloc(spans, nr_spans * sizeof(*spans));

		if (shrunk || !nr_spans)
			spans = shrunk;
	}
	out->spans = spans;
	out->nr_spans = nr_spans;
	out->names = names;
	out->names_bytes = names_bytes;
	spans = NULL;
	names = NULL;
	err = 0;
out:
	free(spans);
	free(stack);
	free(names);
	symtab_builder__clear(b);
	return err;
}

const struct sym_span *symtab__find(const struct symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nr_spans;
	const struct sym_span *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->spans[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &t->spans[lo - 1];
	return addr - s->start < s->len ? s : NULL;
}

void symtab__clear(struct symtab *t)
{
	free(t->spans);
	free(t->names);
	memset(t, 0, sizeof(*t));
}

/* --- objects --- */

struct object *object__new(const char *path)
{
	struct object *obj = sym_xcalloc(1, sizeof(*obj));
	const char *slash;

	obj->refcnt = 1;
	obj->path = sym_xstrdup(path);
	slash = strrchr(obj->path, '/');
	obj->name = slash && slash[1] ? slash + 1 : obj->path;
	return obj;
}

const char *object__path(const struct object *obj)
{
	return obj->path;
}

const char *object__name(const struct object *obj)
{
	return obj->name;
}

const char *object__build_id(const struct object *obj)
{
	return obj->build_id;
}

bool object__is_kernel(const struct object *obj)
{
	return obj->is_kernel;
}

void object__range(const struct object *obj, uint64_t *start, uint64_t *limit,
		   uint64_t *file_offset)
{
	if (start)
		*start = obj->range_start;
	if (limit)
		*limit = obj->range_limit;
	if (file_offset)
		*file_offset = obj->range_offset;
}

const char *object__lookup(const struct object *obj, uint64_t addr, uint64_t *sym_start)
{
	const struct sym_span *s = symtab__find(&obj->symtab, addr);

	if (!s)
		return NULL;
	if (sym_start)
		*sym_start = s->sym_start;
	return obj->symtab.names + s->name;
}

bool object__in_symbol(struct object *obj, uint64_t addr, const char *name)
{
	const struct symtab *t = &obj->symtab;
	const char *found;

	if (!obj->span_name) {
		obj->span_name = name;
		obj->nr_name_spans = 0;
		for (size_t i = 0; i < t->nr_spans; i++) {
			const struct sym_span *s = &t->spans[i];

			if (strcmp(t->names + s->name, name))
				continue;
			if (obj->nr_name_spans < NAME_SPANS) {
				obj->name_spans[obj->nr_name_spans][0] = s->start;
				obj->name_spans[obj->nr_name_spans][1] = s->len;
			}
			obj->nr_name_spans++;
		}
	}
	if (obj->span_name == name || !strcmp(obj->span_name, name)) {
		for (uint32_t i = 0; i < obj->nr_name_spans && i < NAME_SPANS; i++)
			if (addr - obj->name_spans[i][0] < obj->name_spans[i][1])
				return true;
		if (obj->nr_name_spans <= NAME_SPANS)
			return false;
	}
	found = object__lookup(obj, addr, NULL);
	return found && !strcmp(found, name);
}

const char *object__kernel_module(const struct object *obj, uint64_t addr)
{
	const struct sym_span *s;
	const char *name;
	uint16_t idx;

	if (!obj->is_kernel || !obj->nr_modules)
		return NULL;
	s = symtab__find(&obj->symtab, addr);
	if (!s)
		return NULL;
	name = obj->symtab.names + s->name;
	memcpy(&idx, name + strlen(name) + 1, sizeof(idx));
	return idx && idx <= obj->nr_modules ? obj->modules[idx - 1] : NULL;
}

bool object__fde_start(const struct object *obj, uint64_t addr, uint64_t *start)
{
	size_t lo = sorted__upper_bound(obj->fdes, obj->nr_fdes, sizeof(*obj->fdes),
					offsetof(struct fde_span, start), addr);

	/* FDEs may overlap (the unwind table clips them): the nearest few below are tried */
	for (size_t i = lo, tries = 0; i > 0 && tries < 4; i--, tries++) {
		const struct fde_span *f = &obj->fdes[i - 1];

		if (addr - f->start < f->len) {
			*start = f->start;
			return true;
		}
	}
	return false;
}

const char *object__anon_name(const struct object *obj, uint64_t addr, char *buf, size_t len)
{
	uint64_t start;

	if (!object__fde_start(obj, addr, &start))
		start = addr;
	snprintf(buf, len, "%s+0x%" PRIx64, obj->name, start);
	return buf;
}

struct object *object__get(struct object *obj)
{
	if (obj)
		obj->refcnt++;
	return obj;
}

static size_t devino_bucket(uint64_t dev, uint64_t inode)
{
	uint64_t h = (dev * 0x9e3779b97f4a7c15ULL) ^ inode;

	h *= 0xff51afd7ed558ccdULL;
	return (h >> 32) % OBJECT_CACHE_BUCKETS;
}

static void object_cache__unlink(struct object *obj)
{
	struct object_cache *c = obj->cache;

	if (obj->findable) {
		struct object **pp = &c->buckets[devino_bucket(obj->dev, obj->inode)];

		while (*pp && *pp != obj)
			pp = &(*pp)->hnext;
		if (*pp)
			*pp = obj->hnext;
	}
	if (obj->prev)
		obj->prev->next = obj->next;
	else
		c->all = obj->next;
	if (obj->next)
		obj->next->prev = obj->prev;
	c->nr--;
	c->jit_bytes -= obj->jit_bytes;
	obj->cache = NULL;
	obj->hnext = obj->prev = obj->next = NULL;
	obj->findable = false;
}

void object__put(struct object *obj)
{
	if (!obj || --obj->refcnt > 0)
		return;
	if (obj->cache)
		object_cache__unlink(obj);
	source_lines__forget(obj);
	symtab__clear(&obj->symtab);
	free(obj->fdes);
	for (int i = 0; i < DWARF_PATHS; i++)
		free(obj->dwarf.paths[i]);
	for (size_t i = 0; i < obj->nr_modules; i++)
		free(obj->modules[i]);
	free(obj->modules);
	free(obj->segs);
	free(obj->path);
	free(obj);
}

uint64_t object__file_to_vaddr(const struct object *obj, uint64_t file_offset)
{
	const struct elf_segment *any = NULL, *lowest_exec = NULL;

	for (size_t i = 0; i < obj->nr_segs; i++) {
		const struct elf_segment *g = &obj->segs[i];

		if (g->exec && (!lowest_exec || g->vaddr < lowest_exec->vaddr))
			lowest_exec = g;
		if (file_offset < g->offset || file_offset - g->offset >= g->filesz)
			continue;
		if (g->exec)
			return file_offset - g->offset + g->vaddr;
		if (!any)
			any = g;
	}
	if (any)
		return file_offset - any->offset + any->vaddr;
	if (lowest_exec)
		return file_offset - lowest_exec->offset + lowest_exec->vaddr;
	return file_offset;
}

/* --- ELF files --- */

int open_regular_file(const char *path, struct stat *st)
{
	char self[64];
	int pfd, fd;

	/* O_PATH opens nothing: a device or FIFO that a process put on our way (a symbolic link
	 * in its root) is looked at, never opened. The regular file is then reopened through
	 * /proc/self/fd, which names that very inode (no race with a rename). */
	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, st) || !S_ISREG(st->st_mode)) {
		close(pfd);
		return -EINVAL;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	fd = fd < 0 ? -errno : fd;
	close(pfd);
	return fd;
}

static bool find_build_id_note(Elf_Data *d, char *out)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while ((next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const unsigned char *desc = (const unsigned char *)d->d_buf + desc_off;

		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && nh.n_descsz > 0 &&
		    !memcmp((const char *)d->d_buf + name_off, "GNU", 4)) {
			size_t n =
			    nh.n_descsz < BUILD_ID_MAX_BYTES ? nh.n_descsz : BUILD_ID_MAX_BYTES;

			for (size_t i = 0; i < n; i++)
				snprintf(out + 2 * i, 3, "%02x", desc[i]);
			return true;
		}
		off = next;
	}
	return false;
}

static void read_build_id(struct elf_file *ef)
{
	Elf *elf = ef->elf;
	Elf_Scn *scn = NULL;
	size_t phnum;

	ef->build_id[0] = '\0';
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && find_build_id_note(d, ef->build_id))
			return;
	}
	/* No section headers (or no note section): the PT_NOTE segments. */
	if (elf_getphdrnum(elf, &phnum))
		return;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d && find_build_id_note(d, ef->build_id))
			return;
	}
}

static bool libelf_init(void)
{
	static bool ready;

	if (!ready && elf_version(EV_CURRENT) != EV_NONE)
		ready = true;
	return ready;
}

/* Checks the ELF that ef->elf holds and reads its build ID and whether it has a .symtab. */
static int elf_file__check(struct elf_file *ef)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr ehdr;
	size_t shstrndx;
	int dwarf = 0;

	if (!ef->elf || elf_kind(ef->elf) != ELF_K_ELF || !gelf_getehdr(ef->elf, &ehdr)) {
		elf_file__close(ef);
		return -ENOEXEC;
	}
	/* libelf takes section headers past the end of the file for none: a truncated file. */
	if (ehdr.e_shoff &&
	    (ehdr.e_shoff >= ef->size_bytes ||
	     (uint64_t)ehdr.e_shnum * ehdr.e_shentsize > ef->size_bytes - ehdr.e_shoff)) {
		elf_file__close(ef);
		return -ENOEXEC;
	}
	read_build_id(ef);
	if (elf_getshdrstrndx(ef->elf, &shstrndx))
		shstrndx = SHN_UNDEF;
	while ((scn = elf_nextscn(ef->elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			ef->has_symtab = true;
		name = shstrndx != SHN_UNDEF && sh.sh_type == SHT_PROGBITS
			   ? elf_strptr(ef->elf, shstrndx, sh.sh_name)
			   : NULL;
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			dwarf |= 1;
		if (name && (!strcmp(name, ".debug_line") || !strcmp(name, ".zdebug_line")))
			dwarf |= 2;
	}
	ef->has_dwarf = dwarf == 3;
	return 0;
}

int elf_file__open(struct elf_file *ef, int fd)
{
	struct stat st;

	memset(ef, 0, sizeof(*ef));
	if (!libelf_init())
		return -ENOEXEC;
	/* ELF_C_READ reads what it needs with pread: a file truncated under us gives errors, not
	 * SIGBUS as a mapping would. */
	if (fstat(fd, &st))
		return -errno;
	ef->size_bytes = st.st_size;
	ef->elf = elf_begin(fd, ELF_C_READ, NULL);
	return elf_file__check(ef);
}

int elf_file__open_mem(struct elf_file *ef, void *buf, size_t size, bool own)
{
	memset(ef, 0, sizeof(*ef));
	if (own)
		ef->owned = buf;
	if (!libelf_init()) {
		elf_file__close(ef);
		return -ENOEXEC;
	}
	ef->size_bytes = size;
	ef->elf = elf_memory(buf, size);
	return elf_file__check(ef);
}

void elf_file__close(struct elf_file *ef)
{
	if (ef->elf)
		elf_end(ef->elf);
	ef->elf = NULL;
	free(ef->owned);
	ef->owned = NULL;
}

/* The data of the first section called name, or NULL. */
static Elf_Data *section_data(struct elf_file *ef, const char *name, GElf_Shdr *shp)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(ef->elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(ef->elf, scn))) {
		const char *n;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(ef->elf, shstrndx, sh.sh_name);
		if (!n || strcmp(n, name))
			continue;
		if (sh.sh_offset > ef->size_bytes || sh.sh_size > ef->size_bytes - sh.sh_offset)
			return NULL; /* truncated */
		if (shp)
			*shp = sh;
		return elf_getdata(scn, NULL);
	}
	return NULL;
}

int elf_file__debuglink(struct elf_file *ef, char *name, size_t len, uint32_t *crc)
{
	Elf_Data *d = section_data(ef, ".gnu_debuglink", NULL);
	const char *p;
	size_t n, off;

	if (!d)
		return -ENOENT;
	p = d->d_buf;
	n = strnlen(p, d->d_size);
	/* the name, NUL, padding to 4 bytes, then the CRC (binutils' layout) */
	off = (n + 4) & ~(size_t)3;
	if (!n || n == d->d_size || off + 4 > d->d_size || n >= len || memchr(p, '/', n))
		return -ENOEXEC;
	memcpy(name, p, n + 1);
	memcpy(crc, p + off, sizeof(*crc));
	if (elf_getident(ef->elf, NULL)[EI_DATA] != ELFDATA2LSB)
		*crc = __builtin_bswap32(*crc);
	return 0;
}

int elf_file__minidebuginfo(struct elf_file *ef, struct elf_file *out, size_t max_bytes)
{
	Elf_Data *d = section_data(ef, ".gnu_debugdata", NULL);
	lzma_stream strm = LZMA_STREAM_INIT;
	size_t cap = 1u << 20;
	uint8_t *buf = NULL;
	lzma_ret ret;

	memset(out, 0, sizeof(*out));
	if (!d)
		return -ENOENT;
	if (lzma_stream_decoder(&strm, UINT64_MAX, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = d->d_buf;
	strm.avail_in = d->d_size;
	do {
		uint8_t *nb;

		if (cap > max_bytes)
			cap = max_bytes;
		nb = realloc(buf, cap);
		if (!nb) {
			ret = LZMA_MEM_ERROR;
			break;
		}
		buf = nb;
		strm.next_out = buf + strm.total_out;
		strm.avail_out = cap - strm.total_out;
		ret = lzma_code(&strm, LZMA_FINISH);
		if (ret == LZMA_OK || ret == LZMA_BUF_ERROR) {
			if (cap == max_bytes) {
				ret = LZMA_MEMLIMIT_ERROR;
				break;
			}
			cap *= 2;
			ret = LZMA_OK;
		}
	} while (ret == LZMA_OK);
	if (ret != LZMA_STREAM_END) {
		lzma_end(&strm);
		free(buf);
		return ret == LZMA_MEM_ERROR	    ? -ENOMEM
		       : ret == LZMA_MEMLIMIT_ERROR ? -EFBIG
						    : -ENOEXEC;
	}
	lzma_end(&strm);
	return elf_file__open_mem(out, buf, strm.total_out, true);
}

static int read_segments(struct elf_file *ef, struct object *obj)
{
	size_t phnum, nr = 0;
	bool have_exec = false;

	if (elf_getphdrnum(ef->elf, &phnum))
		return -ENOEXEC;
	if (!phnum)
		return 0;
	obj->segs = calloc(phnum, sizeof(*obj->segs));
	if (!obj->segs)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		struct elf_segment *g = &obj->segs[nr];
		GElf_Phdr ph;

		if (!gelf_getphdr(ef->elf, i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > ef->size_bytes || ph.p_filesz > ef->size_bytes - ph.p_offset)
			return -ENOEXEC; /* truncated */
		g->vaddr = ph.p_vaddr;
		g->memsz = ph.p_memsz;
		g->offset = ph.p_offset;
		g->filesz = ph.p_filesz;
		g->exec = ph.p_flags & PF_X;
		nr++;
		if (!g->exec)
			continue;
		if (!have_exec || g->vaddr < obj->range_start) {
			obj->range_start = g->vaddr;
			obj->range_offset = g->offset;
		}
		if (!have_exec || g->vaddr + g->memsz > obj->range_limit)
			obj->range_limit = g->vaddr + g->memsz;
		have_exec = true;
	}
	obj->nr_segs = nr;
	return 0;
}

/* Ranks of symbols with the same extent: exported (global, weak) names before local ones
 * (__libc_start_main, not the debug file's local __libc_start_main_alias_1); then .symtab names
 * before .dynsym ones, and versioned .symtab names (clock_gettime@@GLIBC_2.17, as libc's debug
 * file has them) after both; then (after fewer leading underscores: getpid rather than
 * __getpid) global, weak, local. */
static uint32_t sym_rank(bool dynsym, unsigned char bind, const char *name)
{
	uint32_t r = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
	uint32_t class = strchr(name, '@') ? 2 : dynsym ? 1 : 0;

	return ((r == 2 ? 4 : 0) + class) << 8 | r;
}

static int read_symtab(struct elf_file *ef, Elf_Scn *scn, const GElf_Shdr *sh,
		       struct symtab_builder *b)
{
	size_t entsize = gelf_fsize(ef->elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Data *d = elf_getdata(scn, NULL);
	bool dynsym = sh->sh_type == SHT_DYNSYM;
	size_t n;

	if (!d || !entsize)
		return -ENOEXEC;
	n = d->d_size / entsize;
	for (size_t i = 0; i < n; i++) {
		unsigned char type;
		const char *name;
		GElf_Sym sym;
		int err;

		if (!gelf_getsym(d, i, &sym))
			return -ENOEXEC;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !sym.st_size ||
		    sym.st_shndx == SHN_UNDEF ||
		    (sym.st_shndx >= SHN_LORESERVE && sym.st_shndx != SHN_XINDEX))
			continue;
		name = elf_strptr(ef->elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		err = symtab_builder__add(b, sym.st_value, sym.st_value + sym.st_size, name,
					  sym_rank(dynsym, GELF_ST_BIND(sym.st_info), name), 0);
		if (err)
			return err;
	}
	return 0;
}

/* Adds the function symbols of ef's sections of type want (SHT_SYMTAB, SHT_DYNSYM; 0: both). */
static int add_symbols(struct elf_file *ef, uint32_t want, struct symtab_builder *b)
{
	Elf_Scn *scn = NULL;
	size_t shnum;
	int err;

	if (elf_getshdrnum(ef->elf, &shnum))
		return -ENOEXEC;
	while ((scn = elf_nextscn(ef->elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		if (want && sh.sh_type != want)
			continue;
		err = read_symtab(ef, scn, &sh, b);
		if (err)
			return err;
	}
	return 0;
}

/* Whether the symbols of t cover [lo, hi) whole. */
static bool symbols_cover(const struct symtab *t, uint64_t lo, uint64_t hi)
{
	const struct sym_span *s = symtab__find(t, lo), *end = t->spans + t->nr_spans;

	while (s) {
		uint64_t to = s->start + s->len;

		if (to >= hi)
			return true;
		if (++s == end || s->start != to)
			return false;
	}
	return false;
}

/* Keeps the FDEs of ef that obj's symbols leave (partly) uncovered: the extents of code that
 * frames would otherwise name address by address. No CFI, or CFI that cannot be listed: none.
 * Returns 0 or -ENOMEM. */
static int read_fdes(struct elf_file *ef, struct object *obj)
{
	struct unwind_fde *fdes;
	size_t nr, kept = 0;
	int err;

	err = unwind_table__fdes(ef->elf, &fdes, &nr);
	if (err)
		return err == -ENOMEM ? err : 0;
	for (size_t i = 0; i < nr; i++)
		if (!symbols_cover(&obj->symtab, fdes[i].start, fdes[i].end))
			kept++;
	if (kept) {
		obj->fdes = calloc(kept, sizeof(*obj->fdes));
		if (!obj->fdes) {
			free(fdes);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < nr; i++)
		if (!symbols_cover(&obj->symtab, fdes[i].start, fdes[i].end))
			obj->fdes[obj->nr_fdes++] = (struct fde_span){
			    .start = fdes[i].start,
			    .len = fdes[i].end - fdes[i].start,
			};
	free(fdes);
	return 0;
}

int elf_file__load(struct elf_file *ef, struct elf_file *const *extra, size_t nr_extra,
		   struct object *obj)
{
	struct symtab_builder b = {};
	bool local_names = ef->has_symtab;
	uint32_t left_out = 0; /* bit i: extra[i] left out */
	int err, nr_left_out = 0;

	memcpy(obj->build_id, ef->build_id, sizeof(obj->build_id));
	err = read_segments(ef, obj);
	if (err) {
		free(obj->segs);
		obj->segs = NULL;
		obj->nr_segs = 0;
		obj->range_start = obj->range_limit = obj->range_offset = 0;
		return err;
	}
	if (nr_extra > 32)
		return -EINVAL;
again:
	err = add_symbols(ef, 0, &b);
	for (size_t i = 0; !err && i < nr_extra; i++) {
		if (!extra[i] || !extra[i]->elf || (left_out & (1u << i)))
			continue;
		err = add_symbols(extra[i], SHT_SYMTAB, &b);
		if (err == -ENOEXEC) {
			/* the extra file is bad, not the object: named again without it */
			symtab_builder__clear(&b);
			left_out |= 1u << i;
			nr_left_out++;
			goto again;
		}
	}
	if (err) {
		symtab_builder__clear(&b);
		return err;
	}
	/* Names are borrowed from libelf: finish before elf_end. */
	err = symtab_builder__finish(&b, SYMTAB_SIZED, 0, false, &obj->symtab);
	if (err)
		return err;
	/* A .symtab (the object's own, a debug file's, MiniDebugInfo's) names local functions
	 * too: FDEs are wanted where only exported functions have names (listing them takes
	 * 70-120 ms for libLLVM-15's 98,256, 1.4 ms for Debian's python3.11's 9,810). */
	for (size_t i = 0; i < nr_extra; i++)
		local_names = local_names || (extra[i] && extra[i]->elf && extra[i]->has_symtab &&
					      !(left_out & (1u << i)));
	err = local_names ? 0 : read_fdes(ef, obj);
	return err ? err : nr_left_out;
}

/* --- the cache --- */

void object_cache__add(struct object_cache *c, struct object *obj, bool findable)
{
	obj->cache = c;
	obj->findable = findable;
	obj->prev = NULL;
	obj->next = c->all;
	if (c->all)
		c->all->prev = obj;
	c->all = obj;
	c->nr++;
	if (findable) {
		struct object **head = &c->buckets[devino_bucket(obj->dev, obj->inode)];

		obj->hnext = *head;
		*head = obj;
	}
}

struct object *object_cache__find_file(struct object_cache *c, uint64_t dev, uint64_t inode,
				       const struct stat *st)
{
	for (struct object *o = c->buckets[devino_bucket(dev, inode)]; o; o = o->hnext) {
		if (o->dev != dev || o->inode != inode)
			continue;
		if (st && (o->mtime_ns !=
			       (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec ||
			   o->size_bytes != (uint64_t)st->st_size))
			continue;
		return o;
	}
	return NULL;
}

struct object *object_cache__find_checked(struct object_cache *c, uint64_t dev, uint64_t inode,
					  uint64_t since_ns)
{
	struct object *best = NULL;

	for (struct object *o = c->buckets[devino_bucket(dev, inode)]; o; o = o->hnext)
		if (o->dev == dev && o->inode == inode && o->checked_ns >= since_ns &&
		    (!best || o->checked_ns > best->checked_ns))
			best = o;
	return best;
}

struct object *object_cache__find_build_id(struct object_cache *c, const char *build_id)
{
	if (!build_id[0])
		return NULL;
	for (struct object *o = c->all; o; o = o->next)
		if (o->findable && !o->elf_failed && !strcmp(o->build_id, build_id))
			return o;
	return NULL;
}

void object_cache__detach_all(struct object_cache *c)
{
	struct object *o = c->all;

	while (o) {
		struct object *next = o->next;

		o->cache = NULL;
		o->findable = false;
		o->hnext = o->prev = o->next = NULL;
		o = next;
	}
	memset(c, 0, sizeof(*c));
}
