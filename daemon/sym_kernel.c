// SPDX-License-Identifier: GPL-2.0-only
/* The symbolizer's kernel side: the kernel object from kallsyms, and the BPF trampolines whose
 * frames are left out of kernel stacks (symbolizer_opts.hide_trampolines). */
#include "symbolizer_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kallsyms.h"
#include "log.h"
#include "sysinfo.h"

/* Blocked stacks' leaves in none of the trampolines known: read them again at most this often */
#define TRAMPOLINES_REREAD_NS (60 * 1000000000ull)

/* Takes the BPF trampolines read from kallsyms (their frames are left out of kernel stacks): n
 * of them in r (malloc'd), or n a negative errno: a failed read keeps those read before, said
 * once. */
static void set_trampolines(struct symbolizer *s, int n, struct kernel_range *r)
{
	s->trampolines_read_ns = sysinfo__mono_ns();
	s->trampoline_misses = s->trampoline_hits = 0;
	s->stats.trampoline_reads++;
	if (n < 0) {
		if (s->stats.trampoline_reads == 1)
			pr_warn("cannot read BPF trampolines from %s: %s: their frames stay in "
				"kernel stacks",
				s->kallsyms_path, strerror(-n));
		return;
	}
	free(s->trampolines);
	s->trampolines = r;
	s->nr_trampolines = (size_t)n;
	pr_debug("%d BPF trampolines in %s: their frames are left out of kernel stacks", n,
		 s->kallsyms_path);
}

/* The BPF trampolines, read from kallsyms now. */
static void read_trampolines(struct symbolizer *s)
{
	struct kernel_range *r;
	int n = kallsyms__trampolines(s->kallsyms_path, &r);

	set_trampolines(s, n, r);
}

/* Whether kernel address addr is in one of the trampolines read (a binary search). */
static bool in_trampoline(const struct symbolizer *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nr_trampolines;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < s->trampolines[mid].start)
			hi = mid;
		else if (addr >= s->trampolines[mid].end)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

void symbolizer_load_kernel(struct symbolizer *s, const struct symbolizer_opts *opts)
{
	const char *notes = opts->kernel_notes ? opts->kernel_notes : "/sys/kernel/notes";
	struct kernel_range *r = NULL;
	int n = 0;

	s->kallsyms_path = sym_xstrdup(opts->kallsyms ? opts->kallsyms : "/proc/kallsyms");
	s->hide_trampolines = opts->hide_trampolines;
	/* the symbols and the trampolines from one read (some 40 ms each) */
	s->kernel = kallsyms__load_with_trampolines(s->kallsyms_path, notes,
						    s->hide_trampolines ? &r : NULL, &n);
	if (s->hide_trampolines)
		set_trampolines(s, n, r);
}

uint32_t symbolizer__resolve_kernel(struct symbolizer *s, const uint64_t *addrs, uint32_t n,
				    bool blocked, struct frame *out)
{
	uint32_t o = 0;

	symbolizer_release_stale(s);
	/* A rebuilt trampoline makes nearly every blocked leaf miss; a wait that bypasses
	 * schedule() (PI futexes) misses now and then, and must not cost a read a minute. */
	if (s->hide_trampolines && blocked && n) {
		if (in_trampoline(s, addrs[0]))
			s->trampoline_hits++;
		else if (++s->trampoline_misses >= 16 &&
			 s->trampoline_misses > s->trampoline_hits &&
			 sysinfo__mono_ns() - s->trampolines_read_ns >= TRAMPOLINES_REREAD_NS)
			read_trampolines(s);
	}
	for (uint32_t i = 0; i < n; i++) {
		if (s->hide_trampolines && in_trampoline(s, addrs[i])) {
			s->stats.trampoline_frames++;
			continue;
		}
		out[o++] = (struct frame){.obj = s->kernel, .addr = addrs[i]};
	}
	return o;
}
