// SPDX-License-Identifier: GPL-2.0-only
/* The kernel object: text symbols of /proc/kallsyms and the build ID of /sys/kernel/notes. */
#include "kallsyms.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elf_object.h"
#include "log.h"
#include "proc_maps.h"

#define KALLSYMS_MAX_BYTES (512u << 20)
#define NOTES_MAX_BYTES	   (64u << 10)
/* The last symbol of the kernel or of a module has no next one to end it: give it a page. */
#define KALLSYMS_LAST_LEN 4096

/* /sys/kernel/notes: the kernel's ELF notes, back to back (4-byte aligned Elf32_Nhdr layout,
 * which is also the 64-bit one). */
static void read_kernel_build_id(const char *path, char *out)
{
	size_t len, off = 0;
	char *buf;

	out[0] = '\0';
	if (!path || proc_read_file(path, NOTES_MAX_BYTES, &buf, &len))
		return;
	while (len - off >= sizeof(Elf32_Nhdr)) {
		Elf32_Nhdr nh;
		size_t name_off, desc_off, next;

		memcpy(&nh, buf + off, sizeof(nh));
		name_off = off + sizeof(nh);
		desc_off = name_off + ((nh.n_namesz + 3ul) & ~3ul);
		next = desc_off + ((nh.n_descsz + 3ul) & ~3ul);
		if (desc_off > len || next > len || nh.n_descsz > len)
			break;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(buf + name_off, "GNU", 4) && nh.n_descsz) {
			size_t n =
			    nh.n_descsz < BUILD_ID_MAX_BYTES ? nh.n_descsz : BUILD_ID_MAX_BYTES;

			for (size_t i = 0; i < n; i++)
				snprintf(out + 2 * i, 3, "%02x", (unsigned char)buf[desc_off + i]);
			break;
		}
		off = next;
	}
	free(buf);
}

static int type_rank(char type)
{
	switch (type) {
	case 'T':
		return 0;
	case 'W':
		return 1;
	case 't':
		return 2;
	case 'w':
		return 3;
	default:
		return -1;
	}
}

/* Sets *tag to the index + 1 of module name in obj->modules, adding it when new (0 past 65535
 * modules). Returns 0 or -ENOMEM. */
static int module_tag(struct object *obj, size_t *cap, const char *name, uint16_t *tag)
{
	char **n;

	/* kallsyms lists a module's symbols together: scanning from the last module added finds
	 * it at once; there are a few hundred modules at most. */
	for (size_t i = obj->nr_modules; i-- > 0;) {
		if (!strcmp(obj->modules[i], name)) {
			*tag = i + 1 <= UINT16_MAX ? i + 1 : 0;
			return 0;
		}
	}
	if (obj->nr_modules == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;

		n = realloc(obj->modules, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		obj->modules = n;
		*cap = ncap;
	}
	obj->modules[obj->nr_modules] = strdup(name);
	if (!obj->modules[obj->nr_modules])
		return -ENOMEM;
	obj->nr_modules++;
	*tag = obj->nr_modules <= UINT16_MAX ? obj->nr_modules : 0;
	return 0;
}

/* The fields of the kallsyms line at q, "ADDR TYPE NAME[\t[MODULE]]" (not modified): the address
 * into *addr (ULLONG_MAX past 64 bits) and the type into *type; returns NAME (up to the tab or
 * the line's end), or NULL for a line of another form. */
static char *line_fields(char *q, uint64_t *addr, char *type)
{
	char *name;

	*addr = strtoull(q, &name, 16);
	if (name == q || name[0] != ' ' || !name[1] || name[2] != ' ')
		return NULL;
	*type = name[1];
	return name + 3;
}

/* Parses "ADDR TYPE NAME[\t[MODULE]]" lines of buf (modified in place). Returns 0 or -ENOMEM;
 * *zero counts text symbols at address 0. */
static int parse_kallsyms(char *buf, size_t len, struct object *obj, size_t *zero)
{
	struct symtab_builder b = {};
	char *p = buf, *end = buf + len;
	size_t modules_cap = 0;
	int err;

	while (p < end) {
		char *eol = memchr(p, '\n', end - p), *name, *module, *q;
		uint64_t addr;
		uint16_t tag = 0;
		char type;
		int rank;

		if (eol)
			*eol = '\0';
		q = p;
		p = eol ? eol + 1 : end;
		name = line_fields(q, &addr, &type);
		if (!name)
			continue;
		rank = type_rank(type);
		if (rank < 0 || !*name)
			continue;
		module = strchr(name, '\t');
		if (module) {
			*module++ = '\0';
			if (*module == '[') {
				char *close = strchr(++module, ']');

				if (close)
					*close = '\0';
			}
			if (*module) {
				err = module_tag(obj, &modules_cap, module, &tag);
				if (err)
					goto fail;
			}
		}
		if (!addr) {
			(*zero)++;
			continue;
		}
		err = symtab_builder__add(&b, addr, addr, name, rank, tag);
		if (err)
			goto fail;
	}
	/* Names point into buf: finish before it is freed. */
	return symtab_builder__finish(&b, SYMTAB_TO_NEXT, KALLSYMS_LAST_LEN, true, &obj->symtab);
fail:
	symtab_builder__clear(&b);
	return err;
}

static int trampolines_in(char *buf, size_t len, struct kernel_range **out);

struct object *kallsyms__load(const char *path, const char *notes_path)
{
	return kallsyms__load_with_trampolines(path, notes_path, NULL, NULL);
}

struct object *kallsyms__load_with_trampolines(const char *path, const char *notes_path,
					       struct kernel_range **trampolines, int *nr)
{
	struct object *obj = object__new("[kernel.kallsyms]");
	const struct symtab *t = &obj->symtab;
	size_t len, zero = 0;
	char *buf;
	int err;

	obj->is_kernel = true;
	read_kernel_build_id(notes_path, obj->build_id);
	if (trampolines)
		*trampolines = NULL;
	err = proc_read_file(path, KALLSYMS_MAX_BYTES, &buf, &len);
	if (err) {
		if (trampolines)
			*nr = err;
		pr_warn("cannot read kernel symbols from %s: %s", path, strerror(-err));
		return obj;
	}
	/* before the symbols' parse, which cuts the lines */
	if (trampolines)
		*nr = trampolines_in(buf, len, trampolines);
	err = parse_kallsyms(buf, len, obj, &zero);
	free(buf);
	if (err) {
		pr_warn("cannot read kernel symbols from %s: %s", path, strerror(-err));
		return obj;
	}
	if (!t->nr_spans) {
		if (zero)
			pr_warn("kernel symbol addresses in %s are hidden (kptr_restrict): kernel "
				"frames stay unnamed",
				path);
		else
			pr_warn("no kernel text symbols in %s", path);
		return obj;
	}
	obj->range_start = t->spans[0].start;
	obj->range_limit = t->spans[t->nr_spans - 1].start + t->spans[t->nr_spans - 1].len;
	obj->range_offset = 0;
	pr_debug("read %zu kernel symbols (%zu modules) from %s", t->nr_spans, obj->nr_modules,
		 path);
	return obj;
}

static int range_cmp(const void *a, const void *b)
{
	const struct kernel_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int kallsyms__trampolines(const char *path, struct kernel_range **out)
{
	size_t len;
	char *buf;
	int err, n;

	*out = NULL;
	err = proc_read_file(path, KALLSYMS_MAX_BYTES, &buf, &len);
	if (err)
		return err;
	n = trampolines_in(buf, len, out);
	free(buf);
	return n;
}

/* kallsyms__trampolines() of the file's text in buf (len bytes, not modified). */
static int trampolines_in(char *buf, size_t len, struct kernel_range **out)
{
	static const char prefix[] = "bpf_trampoline_";
	struct kernel_range *r = NULL;
	size_t n = 0, seen = 0, cap = 0, kept;
	char *p, *end = buf + len;

	*out = NULL;
	/* first the trampolines' starts: past KALLSYMS_TRAMPOLINES_MAX the newest (the kernel
	 * lists BPF symbols in the order they were added: the last ones, tailprofd's own among
	 * them, replace the first) */
	for (p = buf; p < end;) {
		char *eol = memchr(p, '\n', end - p), *name, *q = p, type;
		uint64_t addr;

		p = eol ? eol + 1 : end;
		name = line_fields(q, &addr, &type);
		/* (an address past 64 bits reads as ULLONG_MAX: no room for its page) */
		if (!name || !addr || addr > UINT64_MAX - KALLSYMS_LAST_LEN)
			continue;
		if (strncmp(name, prefix, sizeof(prefix) - 1))
			continue;
		q = name + sizeof(prefix) - 1;
		while (q < p && *q >= '0' && *q <= '9')
			q++;
		if (q == name + sizeof(prefix) - 1 || q + 6 > p || memcmp(q, "\t[bpf]", 6))
			continue;
		if (seen == cap && cap < KALLSYMS_TRAMPOLINES_MAX) {
			size_t ncap = cap ? 2 * cap : 16;
			struct kernel_range *nr;

			if (ncap > KALLSYMS_TRAMPOLINES_MAX)
				ncap = KALLSYMS_TRAMPOLINES_MAX;
			nr = realloc(r, ncap * sizeof(*r));
			if (!nr) {
				free(r);
				return -ENOMEM;
			}
			r = nr;
			cap = ncap;
		}
		r[seen++ % KALLSYMS_TRAMPOLINES_MAX] =
		    (struct kernel_range){.start = addr, .end = addr + KALLSYMS_LAST_LEN};
	}
	n = seen < KALLSYMS_TRAMPOLINES_MAX ? seen : KALLSYMS_TRAMPOLINES_MAX;
	/* lowest first, each start once */
	if (n)
		qsort(r, n, sizeof(*r), range_cmp);
	for (size_t i = kept = 0; i < n; i++)
		if (!kept || r[i].start != r[kept - 1].start)
			r[kept++] = r[i];
	n = kept;
	/* each one ends at the nearest symbol above it: for every symbol, the trampoline just
	 * below it (a binary search) */
	for (p = buf; n && p < end;) {
		char *eol = memchr(p, '\n', end - p), *rest, *q = p;
		size_t lo = 0, hi = n;
		uint64_t addr;

		p = eol ? eol + 1 : end;
		addr = strtoull(q, &rest, 16);
		if (rest == q)
			continue;
		while (lo < hi) { /* the first range starting at or above addr */
			size_t mid = lo + (hi - lo) / 2;

			if (r[mid].start < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && addr < r[lo - 1].end)
			r[lo - 1].end = addr;
	}
	*out = r;
	return (int)n;
}
