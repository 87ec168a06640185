/* SPDX-License-Identifier: GPL-2.0-only */
/* Switch-out bookkeeping (sched.bpf.c): the syscall and registers a thread blocks at, its user
 * stack taken on its way back, its process told to tailprofd (TP_EV_SEEN), the stacks taken early
 * at switch-out where its block is predicted long and their verification, and a sample's user
 * stack finished or marked missing. Included by sched.bpf.c only, after sched_ustack.bpf.h. */
#ifndef TAILPROF_SCHED_SWITCH_OUT_BPF_H
#define TAILPROF_SCHED_SWITCH_OUT_BPF_H

/* The syscall a thread blocks in, from regs, its user registers at its entry to the kernel: a
 * syscall while orig_ax is a number (the entry of an exception or interrupt leaves -1 there) and
 * ax still holds the -ENOSYS the syscall entry puts there (a block after the syscall has set its
 * result, on the way out, is not in it); otherwise -1. */
static __always_inline __s64 blocked_syscall(struct pt_regs *regs)
{
	__s64 nr = regs->orig_ax;

	return nr >= 0 && (__s64)regs->ax == -38 /* -ENOSYS */ ? nr : -1;
}

/* The syscall a thread blocks in (blocked_syscall), and its user registers then (for the
 * prediction), into st. */
static __always_inline void read_block_regs(struct tp_sched_task *st, struct pt_regs *regs)
{
	st->syscall_nr = blocked_syscall(regs);
	st->block_ip = regs->ip;
	st->block_sp = regs->sp;
}

/* The user stack of the current thread, from the user registers it entered the kernel with,
 * into ustack_scratch entry key (frames, flags): with unwind tables where its process has them,
 * else (tables_only 0) by frame pointers. Returns frames (0: none).
 *
 * A global function: the verifier checks it once, not once per caller (sched_switch at a
 * blocking switch-out, fexit/schedule or sys_exit, the task work), which together would pass
 * its limit. */
__noinline int current_user_stack(__u32 key, __u32 tables_only)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
	struct tp_ustack_scratch *sc = bpf_map_lookup_elem(&ustack_scratch, &key);
	struct tp_proc_mappings *procs = NULL;
	__u32 pid = t->tgid, flags = 0;
	long n;

	if (!regs || !sc)
		return 0;
	sc->flags = 0;
	sc->rec_ok = 0;
	if (unwind_tables_on) {
		sc->rec_epoch = tp_unwind_epoch();
		procs = bpf_map_lookup_elem(&unwind_procs, &pid);
	}
	if (procs && procs->start_ns == process_start_ns(t)) {
		flags |= TP_SAMPLE_UNWIND_TABLES;
		n = user_stack(procs, pid, regs->ip, regs->sp, regs->bp, sc->frames, &flags, sc,
			       key == TP_USCRATCH_SWITCH);
	} else if (tables_only) {
		return 0;
	} else {
		/* With unwind tables on, the process's are not loaded yet (a new process, for its
		 * first tenths of a second): a frame-pointer walk through code built without frame
		 * pointers would skip callers and make up edges, which a long block weighs
		 * heavily. The leaf only, marked cut. */
		n = bpf_get_task_stack(t, sc->frames, unwind_tables_on ? 8 : sizeof(sc->frames),
				       BPF_F_USER_STACK);
		if (n < 0) {
			flags |= TP_SAMPLE_USTACK_FAILED;
			n = 0;
		}
		n /= 8;
		if (n >= TP_MAX_STACK_DEPTH || (n && unwind_tables_on))
			flags |= TP_SAMPLE_USTACK_TRUNCATED;
	}
	sc->flags = flags;
	return n > TP_MAX_STACK_DEPTH ? TP_MAX_STACK_DEPTH : n;
}

/* The Python frames of the current thread into ustack_scratch entry key (py, nr_py), when its
 * process runs a Python tailprofd gave to py_procs. Returns TP_SAMPLE_PY_* flags (PY_NEW: the
 * record must wake user space). A global function, verified once; its BPF stack (the walk's
 * state) is not its callers'. */
__noinline int current_python_stack(__u32 key)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tp_ustack_scratch *sc = bpf_map_lookup_elem(&ustack_scratch, &key);
	enum tp_py_result r;
	__u32 flags = 0;

	if (!sc)
		return 0;
	sc->nr_py = 0;
	if (!python_on)
		return 0;
	r = tp_py_walk(t->tgid, process_start_ns(t), tp_py_current_tid(), sc->py, &sc->nr_py,
		       &flags);
	if (r == TP_PY_FAILED)
		flags |= TP_SAMPLE_PY_FAILED;
	else if (r == TP_PY_TRUNCATED)
		flags |= TP_SAMPLE_PY_TRUNCATED;
	return flags;
}

/* The user stack of the current thread (back on its way to user space) into o, after its kernel
 * frames, and its Python frames after those. */
static __always_inline void take_user_stack(struct tp_sample *o)
{
	__u32 key = TP_USCRATCH_RETURN, nk = o->nr_kernel, n = current_user_stack(key, 0);
	struct tp_ustack_scratch *sc = bpf_map_lookup_elem(&ustack_scratch, &key);

	o->nr_user = 0;
	if (!sc)
		return;
	o->flags |= sc->flags;
	n = n < TP_MAX_STACK_DEPTH ? n : TP_MAX_STACK_DEPTH;
	barrier_var(n);
	nk = nk < TP_MAX_STACK_DEPTH ? nk : TP_MAX_STACK_DEPTH;
	barrier_var(nk);
	if (n > 0 && !bpf_probe_read_kernel(&o->addrs[nk], n * 8, sc->frames))
		o->nr_user = n;
	o->nr_python = 0;
	if (python_on) {
		__u32 npy, at;

		o->flags |= current_python_stack(key);
		npy = sc->nr_py;
		npy = npy < TP_PY_MAX_FRAMES ? npy : TP_PY_MAX_FRAMES;
		barrier_var(npy);
		at = nk + o->nr_user;
		at = at < 2 * TP_MAX_STACK_DEPTH ? at : 2 * TP_MAX_STACK_DEPTH;
		barrier_var(at);
		if (npy > 0 && !bpf_probe_read_kernel(&o->addrs[at], npy * 16, sc->py))
			o->nr_python = npy;
	}
}

/* Tells tailprofd at once (TP_EV_SEEN, waking it) of the process of prev, which blocks now, when
 * it does not know it yet: it then loads the process's unwind tables while the thread waits, so
 * that even a new process's first long block gets its whole user stack on its way back. Once
 * per thread and image (st->known_mm: a thread that blocked in a syscall before it exec'd must
 * tell of its new image too); the caller tests that with one compare. */
static __always_inline void note_process(struct task_struct *prev, struct tp_sched_task *st)
{
	__u64 start = process_start_ns(prev);
	struct tp_event_hdr ev;
	__u32 pid = prev->tgid;
	struct pt_regs *regs;
	__u64 *known;
	__s64 nr;

	known = bpf_map_lookup_elem(&known_procs, &pid);
	if (known && *known == start) {
		st->known_start = start;
		st->known_mm = (__u64)prev->mm;
		return;
	}
	/* Only a block in a syscall other than an exec: a new process blocks in page faults
	 * while the kernel and the dynamic loader map it, and maps read then would lack its
	 * libraries (its later blocks in them would keep only their leaf). Nor a thread that exits
	 * (its last switch, after its process's exit event): its maps are going. */
	if (prev->flags & TP_PF_EXITING)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (!regs)
		return;
	nr = blocked_syscall(regs);
	if (nr < 0 || nr == TP_NR_EXECVE || nr == TP_NR_EXECVEAT)
		return;
	/* told: from now on as if known (its samples need not wake tailprofd again) */
	st->known_start = start;
	st->known_mm = (__u64)prev->mm;
	ev.kind = TP_EV_SEEN;
	ev.pid = pid;
	ev.ts_ns = 0;
	ev.start_ns = start;
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), BPF_RB_FORCE_WAKEUP))
		bump(TP_SCH_RINGBUF_FULL);
	else
		tp_mark_known(pid, start);
}

/* Whether the user stack of the current thread (of process pid, with user registers ip, sp and bp)
 * is e's again: its registers are those e's walk started from, its process's unwind tables
 * unchanged, and every word the walk read reads the same (one read of their span, then plain
 * loads). Returns 1 or 0. A global function: verified once. */
__noinline int user_stack_again(struct tp_early_stacks *e, __u64 ip, __u64 sp, __u64 bp, __u32 pid)
{
	__u32 key = TP_USCRATCH_SWITCH, nw, len, i;
	struct tp_ustack_scratch *sc = bpf_map_lookup_elem(&ustack_scratch, &key);
	struct tp_proc_mappings *procs;
	__u64 epoch;

	if (!e || !sc || !e->u_ok || e->u_pc != ip || e->u_sp != sp || e->u_bp != bp)
		return 0;
	/* its process's tables as they were: unchanged since the epoch they were last found so at
	 * (a lookup less: 0.14 us), else looked up */
	epoch = tp_unwind_epoch();
	if (epoch != e->u_epoch) {
		procs = bpf_map_lookup_elem(&unwind_procs, &pid);
		if (!procs || procs->start_ns != e->u_start_ns || procs->gen != e->u_gen)
			return 0;
		e->u_epoch = epoch;
	}
	nw = e->u_nw;
	len = e->u_span_len & (TP_USTACK_SPAN - 1);
	if (!len || nw > TP_UNWIND_LOG_WORDS ||
	    bpf_probe_read_user(sc->span, len, (void *)e->u_span_lo))
		return 0;
	for (i = 0; i < TP_UNWIND_LOG_WORDS; i++) {
		if (i >= nw)
			break;
		if (sc->span[(e->u_off[i] / 8) & (TP_USTACK_SPAN / 8 - 1)] != e->u_val[i])
			return 0;
	}
	return 1;
}

/* Keeps in e how to verify the walk current_user_stack(TP_USCRATCH_SWITCH, ...) just took (its
 * rec_* and log), or marks e as having none. Returns 1 (kept) or 0. A global function: verified
 * once. */
__noinline int user_stack_keep(struct tp_early_stacks *e)
{
	__u32 key = TP_USCRATCH_SWITCH, nw, i;
	struct tp_ustack_scratch *sc = bpf_map_lookup_elem(&ustack_scratch, &key);
	__u64 off;

	if (!e)
		return 0;
	e->u_ok = 0;
	if (!sc || !sc->rec_ok)
		return 0;
	nw = sc->log.n;
	if (nw > TP_UNWIND_LOG_WORDS || sc->rec_span_len >= TP_USTACK_SPAN)
		return 0;
	for (i = 0; i < TP_UNWIND_LOG_WORDS; i++) {
		if (i >= nw)
			break;
		off = sc->log.addr[i] - sc->rec_span_lo;
		if (off >= sc->rec_span_len)
			return 0;
		e->u_off[i] = (__u16)off;
		e->u_val[i] = sc->log.val[i];
	}
	e->u_nw = nw;
	e->u_pc = sc->rec_pc;
	e->u_sp = sc->rec_sp;
	e->u_bp = sc->rec_bp;
	e->u_span_lo = sc->rec_span_lo;
	e->u_span_len = sc->rec_span_len;
	e->u_start_ns = sc->rec_start_ns;
	e->u_gen = sc->rec_gen;
	e->u_epoch = sc->rec_epoch;
	e->u_ok = 1;
	return 1;
}

/* The stacks of prev (user registers regs), which blocks now in syscall st->syscall_nr and is the
 * current thread, into its sched_early (struct tp_early_stacks): its last captured block had the
 * same user registers, so this one is likely long too. Sets TP_EARLY_KERNEL where its own kernel
 * stack is verified in place, and TP_EARLY_USER where its own user stack is verified again or a new
 * one is walked: not without its process's unwind tables (then it is taken on the way back, when
 * they may be loaded). */
static __always_inline void early_stacks(struct task_struct *prev, struct tp_sched_task *st,
					 struct pt_regs *regs)
{
	__u64 d = switch_sp_from_ctx, sp, base = task_stack_base(prev);
	__u32 key = TP_USCRATCH_SWITCH, n;
	struct tp_ustack_scratch *sc;
	struct tp_early_stacks *e;

	e = bpf_task_storage_get(&sched_early, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!e)
		return;
	/* read back from memory: a scalar now, not the ctx pointer */
	sp = *(volatile __u64 *)&st->out_ctx + d;
	if (d && sp > base && early_kernel_stack(e, sp, sp - base, st->syscall_nr)) {
		st->early_ksp = sp;
		st->early |= TP_EARLY_KERNEL;
	}
	if (!unwind_tables_on)
		return;
	/* a Python process's user stack goes with its Python frames, on the way back */
	if (python_on) {
		__u32 tgid = prev->tgid;

		if (bpf_map_lookup_elem(&py_procs, &tgid))
			return;
	}
	/* the user stack it took last time at this place, where every word that walk read is
	 * unchanged: nothing to copy */
	if (e->nr && user_stack_again(e, regs->ip, regs->sp, regs->bp, prev->tgid)) {
		bump(TP_SCH_USTACK_EARLY);
		st->early |= TP_EARLY_USER | TP_EARLY_AGAIN;
		return;
	}
	e->sent_ns = 0; /* its frames change */
	n = current_user_stack(key, 1);
	sc = bpf_map_lookup_elem(&ustack_scratch, &key);
	/* clamped in its own register: the verifier knows nothing of a global function's result */
	n = n < TP_USTACK_EARLY_FRAMES ? n : TP_USTACK_EARLY_FRAMES;
	barrier_var(n);
	e->nr = 0;
	if (!n || !sc || bpf_probe_read_kernel(e->frames, n * 8, sc->frames))
		return;
	e->nr = n;
	e->flags = sc->flags;
	user_stack_keep(e);
	st->early |= TP_EARLY_USER;
}

/* Learns switch_sp_from_ctx from thread t, switched in after a blocking switch-out whose
 * tracepoint arguments were at st->out_ctx. */
static __always_inline void learn_switch_sp(struct task_struct *t, struct tp_sched_task *st)
{
	__u64 sp = t->thread.sp, a = *(volatile __u64 *)&st->out_ctx;

	/* a few frames apart (bpf_trace_run4, the tracepoint's iterator, __schedule's call of
	 * __switch_to_asm) */
	if (a && sp > a && sp - a < 1024)
		switch_sp_from_ctx = sp - a;
}

/* Fills in o (kernel stack filled) the user stack taken at the switch-out, from e. Returns 0, or
 * -1 when there is none. */
static __always_inline int put_early_user_stack(struct tp_sample *o, struct tp_early_stacks *e)
{
	__u32 nk = o->nr_kernel, nu;

	if (!e)
		return -1;
	nu = e->nr;
	if (!nu || nu > TP_USTACK_EARLY_FRAMES)
		return -1;
	if (nk > TP_MAX_STACK_DEPTH)
		nk = TP_MAX_STACK_DEPTH;
	if (bpf_probe_read_kernel(&o->addrs[nk], nu * 8, e->frames))
		return -1;
	o->nr_user = nu;
	o->flags |= e->flags;
	return 0;
}

/* Whether kernel stacks a (na frames) and b (nb) are the same, where neither failed (0 frames). */
static __always_inline bool same_kstack(const __u64 *a, __u32 na, const __u64 *b, __u32 nb)
{
	if (!na || na != nb)
		return false;
	for (__u32 i = 0; i < TP_MAX_STACK_DEPTH; i++) {
		if (i >= na)
			break;
		if (a[i] != b[i])
			return false;
	}
	return true;
}

/* Whether the kernel stack of waiting block pd is o's (o->nr_kernel frames). Returns 1 or 0.
 * A global function, verified on its own: inlined, clang merged it with same_kstack() on a
 * sample (up to TP_MAX_STACK_DEPTH frames) into one loop, and Linux 6.1's verifier then saw
 * pd's TP_PENDING_KFRAMES-frame array read up to the sample's bound. */
__noinline int same_pending_kstack(struct tp_pending *pd, struct tp_sample *o)
{
	__u32 n, i;

	if (!pd || !o)
		return 0;
	n = pd->nr_kernel;
	if (!n || n != o->nr_kernel || n > TP_PENDING_KFRAMES)
		return 0;
	for (i = 0; i < TP_PENDING_KFRAMES; i++) {
		if (i >= n)
			break;
		if (pd->kaddrs[i] != o->addrs[i])
			return 0;
	}
	return 1;
}

/* Marks o as having no user stack (TP_SAMPLE_NO_USER_STACK). */
static __always_inline void no_user_stack(struct tp_sample *o)
{
	o->flags |= TP_SAMPLE_NO_USER_STACK;
	o->nr_user = 0;
}

/* The user stack of thread t (current, on its way back to user space from syscall nr, which
 * st says it blocked in) into o, or o marked without one. */
static __always_inline void finish_user_stack(struct tp_sample *o, struct task_struct *t,
					      struct tp_sched_task *st, __s64 nr)
{
	if (nr != st->syscall_nr) {
		bump(TP_SCH_SYSCALL_CHANGED);
		no_user_stack(o);
	} else if (nr == TP_NR_EXECVE || nr == TP_NR_EXECVEAT) {
		/* it returns into the new program: the stack it blocked with is gone */
		no_user_stack(o);
	} else {
		take_user_stack(o);
	}
}

#endif
