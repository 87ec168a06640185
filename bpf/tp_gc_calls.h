/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The open collector calls of one thread, for a GC pause timed by an entry uprobe and a return
 * uretprobe on one function (CPython's gc_collect_main): pure C, used by bpf/gc.bpf.c and by the
 * host's unit tests.
 *
 * Calls are paired by the stack pointer, as the kernel pairs its own uretprobe instances: at
 * entry SP points at the return address; when that call returns, SP is the entry's SP + 8 (x86-64;
 * any positive step works). So at a new entry, a call recorded with an SP at or below the
 * current one cannot be an enclosing call: its return was missed (a uretprobe the kernel could
 * not install) and it is dropped. At a return, the calls recorded below the current SP are the
 * returning one (the highest of them) and, above it, deeper calls whose returns were missed. A
 * nested call therefore pairs with its own return, and a missed return never leaves a call open
 * for longer than the next call or return of the same thread. */
#ifndef TAILPROF_TP_GC_CALLS_H
#define TAILPROF_TP_GC_CALLS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Calls open at once on one thread that are timed; a power of two (the index mask). CPython
 * 3.11 does not nest collections (gcstate->collecting), so one is the norm. */
#define TP_GC_CALL_DEPTH 4
#define TP_GC_CALL_MASK	 (TP_GC_CALL_DEPTH - 1)

/* calls[] index i, masked so that every verifier sees it bounded. In BPF the compiler must not
 * know i's range, or it drops the mask after an earlier check on another register copy, where
 * the verifier does not follow ("unbounded memory access" on 6.18 already). */
static inline __u32 tp_gc_call_slot(__u32 i)
{
#ifdef __bpf__
	asm volatile("" : "+r"(i));
#endif
	return i & TP_GC_CALL_MASK;
}

struct tp_gc_call {
	__u64 start_ns; /* CLOCK_MONOTONIC at entry */
	__u64 sp;	/* user stack pointer at entry */
	__s64 arg;	/* read at entry (CPython: the generation) */
};

/* gc_calls' value: one thread's open calls, outermost first. */
struct tp_gc_calls {
	__u64 born_ns; /* the thread's start time: tells a thread id reused after an exit */
	__u32 depth;   /* calls[0 .. depth) are open; <= TP_GC_CALL_DEPTH */
	__u32 pad;
	struct tp_gc_call calls[TP_GC_CALL_DEPTH];
};
_Static_assert(sizeof(struct tp_gc_calls) == 16 + 24 * TP_GC_CALL_DEPTH, "tp_gc_calls layout");
_Static_assert((TP_GC_CALL_DEPTH & TP_GC_CALL_MASK) == 0, "TP_GC_CALL_DEPTH: a power of two");

/* Records a call entered with stack pointer sp. Returns the number of calls dropped first
 * (returns missed: >= 0), or -1 when TP_GC_CALL_DEPTH calls are open (this one is not timed;
 * its return then pairs with nothing). */
static inline int tp_gc_calls_enter(struct tp_gc_calls *c, __u64 sp, __u64 start_ns, __s64 arg)
{
	int dropped = 0;

	for (int i = 0; i < TP_GC_CALL_DEPTH; i++) {
		if (c->depth == 0 || c->depth > TP_GC_CALL_DEPTH)
			break;
		if (c->calls[tp_gc_call_slot(c->depth - 1)].sp > sp)
			break; /* an enclosing call */
		c->depth--;
		dropped++;
	}
	if (c->depth >= TP_GC_CALL_DEPTH)
		return -1;
	c->calls[tp_gc_call_slot(c->depth)] = (struct tp_gc_call){
	    .start_ns = start_ns,
	    .sp = sp,
	    .arg = arg,
	};
	c->depth++;
	return dropped;
}

/* Closes the call returning with stack pointer sp into *out. Returns how many calls it closed:
 * 0 when none was open below sp (a return without its entry), 1 for the returning call, more
 * when deeper calls' returns were missed (those are dropped; *out is the returning call). */
static inline int tp_gc_calls_leave(struct tp_gc_calls *c, __u64 sp, struct tp_gc_call *out)
{
	int closed = 0;

	for (int i = 0; i < TP_GC_CALL_DEPTH; i++) {
		if (c->depth == 0 || c->depth > TP_GC_CALL_DEPTH)
			break;
		if (c->calls[tp_gc_call_slot(c->depth - 1)].sp >= sp)
			break; /* an enclosing call */
		*out = c->calls[tp_gc_call_slot(c->depth - 1)];
		c->depth--;
		closed++;
	}
	return closed;
}

#endif
