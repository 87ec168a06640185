/* SPDX-License-Identifier: GPL-2.0-only */
/* The kernel stack of a blocked thread (sched.bpf.c): from the kernel stack cache where the same
 * return addresses are still in their places on its stack, else walked (bpf_get_task_stack) and
 * cached. Included by sched.bpf.c only, after sched_send.bpf.h. */
#ifndef TAILPROF_SCHED_KSTACK_BPF_H
#define TAILPROF_SCHED_KSTACK_BPF_H

/* The kernel stack cache. A blocked thread's kernel stack is a chain of return addresses at
 * places on its stack that the call path fixes; bpf_get_task_stack finds them with the ORC
 * unwinder, 2-3 us a stack when its tables are cold (as they are at scheduler time). So each walk
 * is kept with where on the stack (offset from the saved stack pointer) it found each address,
 * keyed by the stack's depth and the syscall, in a direct-mapped array. A later block with the
 * same key re-reads those places: when every return address is still there, the unwinder (which
 * reads its next frame from where the previous one's return address says) would walk the same
 * frames, and the stack is taken from the cache. Anything else is walked again and replaces the
 * entry. An entry is written under a sequence count (odd while written), so a reader on another
 * CPU never takes half of one. */
#define TP_KSTACK_FRAMES   32	 /* stacks with more frames are always walked */
#define TP_KSTACK_BYTES	   4096	 /* and those whose frames lie deeper */
#define TP_KSTACK_ENTRIES  4096	 /* a power of two; 1.3 MiB */
#define TP_THREAD_SIZE_MIN 16384 /* x86-64's THREAD_SIZE (KASAN doubles it) */

struct tp_kstack {
	__u32 seq;
	__u32 depth; /* the saved stack pointer's offset from the stack's base (task->stack) */
	__s32 syscall_nr;
	__u32 nr;		     /* 0: empty */
	__u16 off[TP_KSTACK_FRAMES]; /* byte offsets from the saved stack pointer */
	__u64 ip[TP_KSTACK_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_KSTACK_ENTRIES);
	__type(key, __u32);
	__type(value, struct tp_kstack);
} kstack_cache SEC(".maps");

/* kstack_scratch: a copy of the top TP_KSTACK_BYTES of a blocked thread's stack, and the entry
 * being built (too big for the BPF stack). */
struct tp_kstack_scratch {
	__u64 words[TP_KSTACK_BYTES / 8];
	struct tp_kstack k;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_kstack_scratch);
} kstack_scratch SEC(".maps");

static __always_inline __u32 mix64(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull; /* MurmurHash3's 64-bit finaliser */
	x ^= x >> 33;
	return (__u32)x;
}

/* Scanning a copied kernel stack for the return addresses of a walk, in a bpf_loop callback
 * (unrolled, 512 words would be too many verifier states). */
struct tp_kstack_scan {
	struct tp_kstack_scratch *sc;
	__u64 *out; /* the walk, leaf first */
	__u32 nr;   /* addresses found so far */
	__u32 want; /* frames in out */
};

static long kstack_scan_step(__u32 w, void *ctx)
{
	struct tp_kstack_scan *s = ctx;
	__u32 f = s->nr;

	if (f >= s->want || f >= TP_KSTACK_FRAMES)
		return 1;
	if (s->sc->words[w & (TP_KSTACK_BYTES / 8 - 1)] == s->out[f & (TP_KSTACK_FRAMES - 1)]) {
		s->sc->k.off[f & (TP_KSTACK_FRAMES - 1)] = w * 8;
		s->sc->k.ip[f & (TP_KSTACK_FRAMES - 1)] = s->out[f & (TP_KSTACK_FRAMES - 1)];
		s->nr = f + 1;
	}
	return 0;
}

/* The kernel stack of the current thread, which blocks now in syscall nr: e's, where each of its
 * return addresses is in its place (struct tp_early_stacks). sp: the stack pointer the switch
 * will save (from switch_sp_from_ctx); depth: its offset from the stack's base (task->stack).
 * Returns 1 (verified) or 0. One copy of the stack from sp up (the thread is current: most of
 * it is in this CPU's caches), then plain loads.
 *
 * Everything from sp + sizeof(struct inactive_task_frame) up is the blocking call path's and
 * stays as it is until the thread runs again; below it, __switch_to_asm writes its frame at the
 * switch: the saved registers and the return address into __schedule (the same for every
 * switched-out thread, and not in the walk: bpf_get_task_stack leaves out the scheduler's own
 * functions). A stack with a return address below that is not verified here.
 *
 * A global function: the verifier checks it once. */
__noinline int early_kernel_stack(struct tp_early_stacks *e, __u64 sp, __u64 depth, __s64 nr)
{
	__u32 n, i, skip = bpf_core_type_size(struct inactive_task_frame), outer = 0, zero = 0;
	struct tp_kstack_scratch *sc = bpf_map_lookup_elem(&kstack_scratch, &zero);
	__u64 end, off;

	if (!e || !sc || skip >= 256 || skip & 7 || depth + skip >= TP_THREAD_SIZE_MIN)
		return 0;
	n = e->k_nr;
	if (!n || n > TP_EARLY_KFRAMES || e->k_syscall != (__s32)nr)
		return 0;
	/* one copy, from sp + skip up to the stack's top (or TP_KSTACK_BYTES from sp): words[w]
	 * is the word at sp + 8 * w */
	end = TP_THREAD_SIZE_MIN - depth;
	if (end > TP_KSTACK_BYTES)
		end = TP_KSTACK_BYTES;
	barrier_var(end);
	if (end <= skip || end - skip > TP_KSTACK_BYTES - 256 ||
	    bpf_probe_read_kernel(&sc->words[skip / 8], end - skip, (void *)(sp + skip)))
		return 0;
	for (i = 0; i < TP_EARLY_KFRAMES; i++) {
		struct tp_early_kframe *f = &e->k[i];

		if (i >= n)
			break;
		/* where it was from sp; else, once and for the rest, from the base */
		off = f->off;
		if (!outer && off >= skip && off + 8 <= end &&
		    sc->words[(off / 8) & (TP_KSTACK_BYTES / 8 - 1)] == f->ip)
			continue;
		off = (__u64)f->boff - depth;
		if (f->boff < depth + skip || off + 8 > end ||
		    sc->words[(off / 8) & (TP_KSTACK_BYTES / 8 - 1)] != f->ip)
			return 0;
		outer = 1;
	}
	return 1;
}

/* The kernel stack of blocked thread t into out[TP_MAX_STACK_DEPTH] (leaf first): its own copy e
 * where its switch-out verified it (early & TP_EARLY_KERNEL), else from kstack_cache when
 * verified, else walked (and the walk cached), then learnt into e (NULL: none). Sets *from_e to 1
 * where out is e's copy. Returns frames, or -1. */
static __always_inline long kernel_stack(struct task_struct *t, struct tp_sched_task *st,
					 __u32 early, __s64 syscall_nr, __u64 *out,
					 struct tp_early_stacks *e, __u32 *from_e)
{
	__u64 ksp = t->thread.sp, base = task_stack_base(t), len;
	struct tp_kstack_scan scan = {.out = out};
	struct tp_kstack_scratch *sc;
	__u32 zero = 0, depth = 0, idx, nr, seq, i, ok;
	struct tp_kstack *k = NULL;
	const __u16 *offs;
	long n;

	/* verified at its switch-out, where the thread switched with the stack pointer that was
	 * foreseen (or switch_sp_from_ctx is wrong) */
	if ((early & TP_EARLY_KERNEL) && e) {
		nr = e->k_nr;
		if (ksp != st->early_ksp) {
			switch_sp_from_ctx = 0;
			bump(TP_SCH_KSTACK_EARLY_MISSED);
		} else if (nr <= TP_EARLY_KFRAMES) {
			for (i = 0; i < TP_EARLY_KFRAMES; i++) {
				if (i >= nr)
					break;
				out[i] = e->k[i].ip;
			}
			bump(TP_SCH_KSTACK_EARLY);
			*from_e = 1;
			return nr;
		}
	}
	sc = bpf_map_lookup_elem(&kstack_scratch, &zero);
	/* the stack is THREAD_SIZE bytes from base, at least 16 KiB on x86-64; the depth is
	 * measured from base, which pins it as well as from the top */
	if (!sc || ksp <= base || ksp - base >= TP_THREAD_SIZE_MIN)
		goto walk;
	depth = (__u32)(ksp - base);
	idx = mix64(((__u64)depth << 32) | (__u32)syscall_nr) & (TP_KSTACK_ENTRIES - 1);
	k = bpf_map_lookup_elem(&kstack_cache, &idx);
	if (!k)
		goto walk;
	seq = k->seq;
	barrier();
	nr = k->nr;
	if ((seq & 1) || k->depth != depth || k->syscall_nr != (__s32)syscall_nr || !nr ||
	    nr > TP_KSTACK_FRAMES)
		goto walk;
	/* One copy of the stack down to the outermost cached return address, then plain loads:
	 * where indirect calls go through retpolines and every return through the SRSO return
	 * thunk (this machine kind), a helper call or a bpf_loop step costs more than the cache
	 * lines. (A bpf_rdonly_cast load per return address costs more still: some 50 ns each
	 * here, warm.) Offsets ascend (leaf first), so the last one is the outermost. */
	len = (__u64)k->off[(nr - 1) & (TP_KSTACK_FRAMES - 1)] + 8;
	if (len > TP_KSTACK_BYTES || bpf_probe_read_kernel(sc->words, len, (void *)ksp))
		goto walk;
	ok = 1;
	for (i = 0; i < TP_KSTACK_FRAMES; i++) {
		__u64 v;

		if (i >= nr)
			break;
		v = sc->words[(k->off[i] / 8) & (TP_KSTACK_BYTES / 8 - 1)];
		if (v != k->ip[i]) {
			ok = 0;
			break;
		}
		out[i] = v;
	}
	barrier();
	if (ok && k->seq == seq) {
		bump(TP_SCH_KSTACK_CACHED);
		offs = k->off;
		n = nr;
		goto learn;
	}
walk:
	bump(TP_SCH_KSTACK_WALKED);
	n = bpf_get_task_stack(t, out, TP_MAX_STACK_DEPTH * 8, 0);
	if (n <= 0)
		return n < 0 ? -1 : 0;
	n /= 8;
	if (!sc || !k || !depth || n > TP_KSTACK_FRAMES)
		return n;
	/* where each return address is on the stack, in order, leaf (lowest address) first */
	len = TP_THREAD_SIZE_MIN - depth;
	if (len > TP_KSTACK_BYTES)
		len = TP_KSTACK_BYTES;
	if (bpf_probe_read_kernel(sc->words, len, (void *)ksp))
		return n;
	scan.sc = sc;
	scan.want = n;
	bpf_loop(len / 8, kstack_scan_step, &scan, 0);
	if (scan.nr != n)
		return n;
	/* replace the entry: seq odd while it is written */
	seq = k->seq | 1;
	k->seq = seq;
	barrier();
	k->depth = depth;
	k->syscall_nr = (__s32)syscall_nr;
	k->nr = n;
	__builtin_memcpy(k->off, sc->k.off, sizeof(k->off));
	__builtin_memcpy(k->ip, sc->k.ip, sizeof(k->ip));
	barrier();
	k->seq = seq + 1;
	offs = sc->k.off;
	seq = 0; /* this CPU's own walk: nothing to check again */
learn:
	/* the thread's own copy, for its next block at the same user registers: verified at its
	 * switch-out (early_kernel_stack) */
	if (e && n <= TP_EARLY_KFRAMES) {
		for (i = 0; i < TP_EARLY_KFRAMES; i++) {
			if (i >= n)
				break;
			e->k[i].ip = out[i];
			e->k[i].off = offs[i];
			e->k[i].boff = (__u16)(depth + offs[i]);
		}
		barrier();
		/* from the shared entry: still the one verified (a walk replacing it meanwhile
		 * would have left other places: then no copy) */
		e->k_nr = !seq || (k && k->seq == seq) ? n : 0;
		e->k_syscall = (__s32)syscall_nr;
		e->sent_ns = 0; /* k changed */
		*from_e = n && e->k_nr == n;
	}
	return n;
}

#endif
