/* SPDX-License-Identifier: GPL-2.0-only */
/* Internal to the symbolizer: the kernel object, read from /proc/kallsyms. */
#ifndef TAILPROF_KALLSYMS_H
#define TAILPROF_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct object;

/* Returns the kernel object "[kernel.kallsyms]" with one reference: the text symbols (types t T w
 * W, module symbols included) of the kallsyms file at path, each covering up to the next symbol;
 * the last symbol of the core kernel or of a module (the next one is in another module, or there
 * is none) covers at most 4 KiB, so the gaps between modules stay unnamed. Names have no module;
 * object__kernel_module() gives it. The build ID comes from the notes file at notes_path (NULL
 * allowed; "" when unreadable).
 * An unreadable file, or one whose addresses are all 0 (kptr_restrict), gives an object with no
 * symbols (logged once as a warning). Aborts only when a fixed-size allocation fails. */
struct object *kallsyms__load(const char *path, const char *notes_path);

/* A range of kernel addresses, [start, end). */
struct kernel_range {
	uint64_t start, end;
};

/* BPF trampolines kallsyms__trampolines() keeps at most: the newest (1 MiB of ranges) */
#define KALLSYMS_TRAMPOLINES_MAX 65536

/* The BPF trampolines in the kallsyms file at path, read now: symbols "bpf_trampoline_KEY" of
 * module [bpf] (kernel/bpf/trampoline.c names each after its key; an fexit program's return
 * address into one is on the kernel stack of every thread blocked in the function it traces).
 * Each range runs to the next symbol, at most 4 KiB (an image is at most a page). *out gets a
 * malloc'd array (free() it; NULL when none), lowest first, each start once; past
 * KALLSYMS_TRAMPOLINES_MAX the newest are kept. Returns how many, or a negative errno when the
 * file cannot be read or memory runs out. */
int kallsyms__trampolines(const char *path, struct kernel_range **out);
/* kallsyms__load() and kallsyms__trampolines() from one read of the file: *trampolines and *nr
 * get what kallsyms__trampolines() gives (*nr a negative errno when the file cannot be read). */
struct object *kallsyms__load_with_trampolines(const char *path, const char *notes_path,
					       struct kernel_range **trampolines, int *nr);

#endif
