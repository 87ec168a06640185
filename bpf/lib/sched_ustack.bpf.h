/* SPDX-License-Identifier: GPL-2.0-only */
/* The user stack of a thread (sched.bpf.c): from the user stack cache where every stack word its
 * walk read reads the same again, else walked with the unwind tables (or frame pointers) and
 * cached. Included by sched.bpf.c only, after sched_kstack.bpf.h. */
#ifndef TAILPROF_SCHED_USTACK_BPF_H
#define TAILPROF_SCHED_USTACK_BPF_H

/* The user stack cache, the same idea for the user stacks taken at sys_exit: a walk is kept with
 * the registers it started from and every stack word it read (tp_unwind_log), keyed by process
 * and registers. Where the process's tables are unchanged (tp_proc_mappings.gen) and every word
 * reads the same again, the walk would go the same way: its frames are taken from the cache.
 * Threads that block in the same place again and again (a worker's wait) take the cheap path. */
#define TP_USTACK_FRAMES  32 /* longer walks are not cached */
#define TP_USTACK_ENTRIES 512

struct tp_ustack {
	__u32 seq;
	__u32 pid;
	__u64 start_ns;
	__u64 pc, sp, bp;
	__u32 gen;
	__u32 nr;	/* frames; 0: empty */
	__u32 used_fp;	/* the walk's tp_unwind_result */
	__u32 nr_words; /* of the log */
	/* the words lie in [span_lo, span_lo + span_len), 8-byte aligned from span_lo, so one read
	 * checks them all; span_len 0: read one by one */
	__u64 span_lo;
	__u32 span_len;
	__u32 pad;
	__u64 frames[TP_USTACK_FRAMES];
	__u64 addr[TP_UNWIND_LOG_WORDS];
	__u64 val[TP_UNWIND_LOG_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_USTACK_ENTRIES);
	__type(key, __u32);
	__type(value, struct tp_ustack);
} ustack_cache SEC(".maps");

#define TP_USTACK_SPAN 4096 /* bytes, a power of two: one verifying read takes less */

/* ustack_scratch: the log of a walk, and the copy of the span a verification reads. Entry
 * TP_USCRATCH_SWITCH for sched_switch, TP_USCRATCH_RETURN for the return paths (sys_exit, the
 * task work: preemptible, and a switch may walk a stack meanwhile on the same CPU). */
struct tp_ustack_scratch {
	struct tp_unwind_log log;
	__u64 span[TP_USTACK_SPAN / 8];
	__u64 frames[TP_MAX_STACK_DEPTH]; /* the walk's output */
	__u64 py[2 * TP_PY_MAX_FRAMES];	  /* current_python_stack's: struct tp_py_frame pairs */
	__u16 nr_py;			  /* and their number */
	__u16 py_pad;
	__u32 flags; /* and its TP_SAMPLE_* */
	/* rec_ok: the walk can be verified again, from these registers and tables, by the words
	 * in log (their span: [rec_span_lo, rec_span_lo + rec_span_len)) */
	__u32 rec_ok;
	__u64 rec_pc, rec_sp, rec_bp, rec_span_lo, rec_start_ns;
	__u64 rec_epoch; /* unwind_epoch, read before the process's tables were */
	__u32 rec_span_len, rec_gen;
	struct tp_unwind_result res; /* the walk's (here, not on the BPF stack: see capture()) */
	struct tp_unwind_walk walk;  /* and its values (see struct tp_unwind_walk) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct tp_ustack_scratch);
} ustack_scratch SEC(".maps");

#define TP_USCRATCH_SWITCH 0
#define TP_USCRATCH_RETURN 1

/* The frames of cached walk u into out when it is the walk of (procs, pid, pc, sp, bp) and every
 * word it read reads the same again. Returns frames, 0: not usable. */
static __always_inline __u32 ustack_cached(struct tp_ustack *u, struct tp_proc_mappings *procs,
					   __u32 pid, __u64 pc, __u64 sp, __u64 bp, __u64 *out,
					   struct tp_ustack_scratch *sc)
{
	__u32 seq = u->seq, nr, nw, i, len;

	barrier();
	nr = u->nr;
	nw = u->nr_words;
	if ((seq & 1) || !nr || nr > TP_USTACK_FRAMES || nw > TP_UNWIND_LOG_WORDS ||
	    u->pid != pid || u->start_ns != procs->start_ns || u->gen != procs->gen ||
	    u->pc != pc || u->sp != sp || u->bp != bp)
		return 0;
	len = u->span_len & (TP_USTACK_SPAN - 1); /* the mask bounds it for the verifier */
	if (len && bpf_probe_read_user(sc->span, len, (void *)u->span_lo))
		return 0;
	/* plain loads from the span's copy, not a bpf_loop callback a word: where indirect calls
	 * go through retpolines and returns through the SRSO thunk, those cost more than the
	 * words */
	for (i = 0; i < TP_UNWIND_LOG_WORDS; i++) {
		__u64 v;

		if (i >= nw)
			break;
		if (len)
			v = sc->span[((u->addr[i] - u->span_lo) / 8) & (TP_USTACK_SPAN / 8 - 1)];
		else if (bpf_probe_read_user(&v, sizeof(v), (void *)u->addr[i]))
			return 0;
		if (v != u->val[i])
			return 0;
	}
	for (i = 0; i < TP_USTACK_FRAMES; i++) {
		if (i >= nr)
			break;
		out[i] = u->frames[i];
	}
	barrier();
	return u->seq == seq ? nr : 0;
}

/* The user stack of the current thread at its syscall's return into out (TP_MAX_STACK_DEPTH
 * slots), walked with the process's unwind tables procs: from ustack_cache when every word the
 * cached walk read still reads the same, else walked (and cached). Returns frames; *flags gets
 * TP_SAMPLE_USTACK_TRUNCATED. */
static __always_inline __u32 user_stack(struct tp_proc_mappings *procs, __u32 pid, __u64 pc,
					__u64 sp, __u64 bp, __u64 *out, __u32 *flags,
					struct tp_ustack_scratch *sc, __u32 rec)
{
	__u32 idx = mix64(sp ^ (pc << 7) ^ ((__u64)pid << 40)) & (TP_USTACK_ENTRIES - 1);
	struct tp_ustack *u = bpf_map_lookup_elem(&ustack_cache, &idx);
	struct tp_unwind_result *res = &sc->res;
	struct tp_unwind_log *log;
	__u32 nr, seq, i, slen;

	if (!u)
		return 0;
	log = &sc->log;
	nr = ustack_cached(u, procs, pid, pc, sp, bp, out, sc);
	if (nr) {
		bump(TP_SCH_USTACK_CACHED);
		/* what verified it, for the caller to keep: copied, then the entry checked to be
		 * the same walk still (another CPU may replace it meanwhile) */
		seq = u->seq;
		barrier();
		if (rec && u->span_len && !(seq & 1)) {
			log->n = u->nr_words;
			for (i = 0; i < TP_UNWIND_LOG_WORDS; i++) {
				if (i >= log->n)
					break;
				log->addr[i] = u->addr[i];
				log->val[i] = u->val[i];
			}
			sc->rec_span_lo = u->span_lo;
			sc->rec_span_len = u->span_len;
			barrier();
			sc->rec_ok = u->seq == seq && u->pid == pid && u->pc == pc && u->sp == sp &&
				     u->bp == bp;
		}
		goto out;
	}
	bump(TP_SCH_USTACK_WALKED);
	tp_unwind_log_reset(log);
	__builtin_memset(res, 0, sizeof(*res));
	tp_unwind_user(procs, pc, sp, bp, out, res, log, 1, &sc->walk, 0);
	if (res->reason == TP_UNWIND_TRUNCATED)
		*flags |= TP_SAMPLE_USTACK_TRUNCATED;
	/* a PC in no mapping of the process's tables (read while it was still being mapped, in
	 * its dynamic loader, say): tailprofd reads its maps again, as for a CPU sample. Without
	 * this a thread that mostly blocks kept its leaf alone until a CPU sample said so */
	if (res->reason == TP_UNWIND_NO_MAPPING)
		*flags |= TP_SAMPLE_UNWIND_RESCAN;
	nr = res->nr > TP_MAX_STACK_DEPTH ? TP_MAX_STACK_DEPTH : res->nr;
	/* cache walks that the words read decide: not those cut by a failed read or an unknown
	 * mapping (they change as the process maps and touches memory) */
	if (log->full || !nr || nr > TP_USTACK_FRAMES ||
	    (res->reason != TP_UNWIND_END && res->reason != TP_UNWIND_BAD_FRAME &&
	     res->reason != TP_UNWIND_UNSUPPORTED))
		return nr;
	slen = !log->unaligned && log->hi > log->lo && log->hi - log->lo < TP_USTACK_SPAN
		   ? (__u32)(log->hi - log->lo)
		   : 0;
	seq = u->seq | 1;
	u->seq = seq;
	barrier();
	u->span_lo = log->lo;
	u->span_len = slen;
	u->pid = pid;
	u->start_ns = procs->start_ns;
	u->gen = procs->gen;
	u->pc = pc;
	u->sp = sp;
	u->bp = bp;
	u->nr = nr;
	u->used_fp = res->used_fp;
	u->nr_words = log->n;
	for (i = 0; i < TP_USTACK_FRAMES; i++) {
		if (i >= nr)
			break;
		u->frames[i] = out[i];
	}
	__builtin_memcpy(u->addr, log->addr, sizeof(u->addr));
	__builtin_memcpy(u->val, log->val, sizeof(u->val));
	barrier();
	u->seq = seq + 1;
	/* this CPU's walk (another may replace the entry already) */
	if (!rec || !slen)
		return nr;
	sc->rec_span_lo = log->lo;
	sc->rec_span_len = slen;
	sc->rec_ok = 1;
out:
	sc->rec_pc = pc;
	sc->rec_sp = sp;
	sc->rec_bp = bp;
	sc->rec_start_ns = procs->start_ns;
	sc->rec_gen = procs->gen;
	return nr;
}

#endif
