/* SPDX-License-Identifier: GPL-2.0-only */
/* Capture of a long block at switch-in (sched.bpf.c): its sample built and sent at once when its
 * stacks came from switch-out, else held (in this CPU's offcpu_slot, in `pending`, or with a task
 * work) until its user stack is taken on the thread's way back to user space. Included by
 * sched.bpf.c only, after sched_switch_out.bpf.h. */
#ifndef TAILPROF_SCHED_CAPTURE_BPF_H
#define TAILPROF_SCHED_CAPTURE_BPF_H

/* Sends tw_pending entry w of thread tid (st: its state, or NULL) and deletes it, which cancels
 * its task work where that has not run. */
static __always_inline void release_tw(struct tp_tw_pending *w, __u32 tid, struct tp_sched_task *st)
{
	send(&w->s, st);
	if (!bpf_map_delete_elem(&tw_pending, &tid))
		__sync_fetch_and_add(&nr_pending, -1);
}

/* The task work of a tw_pending entry: its thread, current, is on its way back to user space.
 * It runs preemptible, with only migration disabled, and BPF guards it against no recursion: a
 * thread preempted in the middle of its walk may let another thread's task work run on this CPU,
 * whose walk would overwrite the scratch the first one is using. So one walk at a time per CPU
 * (sched_cpu's return_busy, taken by compare-and-swap); the other sample goes without its user
 * stack (TP_SCH_RETURN_BUSY). */
static int tw_returned(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct tp_tw_pending *w = value;
	__u32 tid = *(__u32 *)key, zero = 0;
	struct tp_sched_task *st;
	struct tp_sched_cpu *c;
	struct pt_regs *regs;

	st = bpf_task_storage_get(&sched_tasks, t, 0, 0);
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	c = bpf_map_lookup_elem(&sched_cpu, &zero);
	if (st)
		st->pending = 0;
	/* tid is the key: the thread's pid then, its leader's now if it has exec'd meanwhile
	 * (finish_user_stack then sees execve) */
	if (st && regs && c && !__sync_val_compare_and_swap(&c->return_busy, 0, 1)) {
		finish_user_stack(&w->s, t, st, regs->orig_ax);
		barrier();
		c->return_busy = 0;
	} else {
		if (st && regs && c)
			bump(TP_SCH_RETURN_BUSY);
		no_user_stack(&w->s);
	}
	release_tw(w, tid, st);
	return 0;
}

/* Holds the sample of tw_scratch entry w (kernel stack filled) of thread tid (task t) in
 * tw_pending with a task work that takes the user stack on t's way back to user space. Returns 0,
 * or -1 when it could not (no room, no task work). */
static __always_inline int hold_task_work(struct tp_tw_build *w, __u32 tid, struct task_struct *t)
{
	struct tp_tw_pending *e;

	if (!bpf_ksym_exists_tp(bpf_task_work_schedule_resume_impl))
		return -1;
	if (bpf_map_update_elem(&tw_pending, &tid, w, BPF_NOEXIST)) {
		bump(TP_SCH_PENDING_FULL);
		return -1;
	}
	e = bpf_map_lookup_elem(&tw_pending, &tid);
	if (!e)
		return -1;
	if (bpf_task_work_schedule_resume_impl(t, &e->tw, &tw_pending, tw_returned, NULL)) {
		bpf_map_delete_elem(&tw_pending, &tid);
		return -1;
	}
	return 0;
}

/* Holds sample o (kernel stack filled) of thread tid in `pending` until its syscall returns.
 * Returns 0, or -1 when it does not fit (no room, or a kernel stack too deep). */
static __always_inline int hold(struct tp_sample *o, __u32 tid)
{
	__u32 key = TP_SCRATCH_HOLD, nk = o->nr_kernel;
	struct tp_sample *sc;
	struct tp_pending *pd;

	if (nk > TP_PENDING_KFRAMES)
		return -1;
	/* built in a scratch sample's tail, and copied by the update */
	sc = bpf_map_lookup_elem(&off_scratch, &key);
	if (!sc)
		return -1;
	pd = (struct tp_pending *)&sc->addrs[TP_MAX_STACK_DEPTH];
	pd->ts_ns = o->hdr.ts_ns;
	pd->start_ns = o->hdr.start_ns;
	pd->blocked_ns = o->blocked_ns;
	pd->pid = o->hdr.pid;
	pd->cpu = o->cpu;
	pd->flags = o->flags;
	pd->stage = o->stage;
	pd->nr_kernel = nk;
	pd->pad = 0;
	__builtin_memcpy(pd->kaddrs, o->addrs, sizeof(pd->kaddrs));
	if (bpf_map_update_elem(&pending, &tid, pd, BPF_ANY)) {
		bump(TP_SCH_PENDING_FULL);
		return -1;
	}
	return 0;
}

/* Sends o now, without a user stack (st as send() takes it). */
static __always_inline void send_no_user(struct tp_sample *o, struct task_struct *t,
					 struct tp_sched_task *st)
{
	o->nr_user = 0;
	o->flags |= t->mm ? TP_SAMPLE_NO_USER_STACK : TP_SAMPLE_KERNEL_THREAD;
	send(o, st);
}

/* This CPU's offcpu_slot, free for a new capture: a block it still holds (its thread was
 * preempted or migrated before its syscall returned) moves to `pending`. NULL: not free. */
static __always_inline struct tp_offcpu_slot *free_slot(void)
{
	__u32 zero = 0, old;
	struct tp_offcpu_slot *sl = bpf_map_lookup_elem(&offcpu_slot, &zero);
	int held;

	if (!sl)
		return NULL;
	old = sl->tid;
	if (!old)
		return sl;
	if (old == TP_SLOT_BUSY)
		return NULL; /* another CPU is taking it out */
	/* Copied to `pending` before the slot is claimed: its thread, returning on another CPU,
	 * either claims the slot first (and this copy is deleted) or finds the copy there. */
	held = !hold(&sl->s, old);
	if (__sync_val_compare_and_swap(&sl->tid, old, TP_SLOT_BUSY) != old) {
		if (held)
			bpf_map_delete_elem(&pending, &old);
		return NULL;
	}
	if (!held) { /* no room: sent with its kernel stack at least */
		no_user_stack(&sl->s);
		send(&sl->s, NULL);
		__sync_fetch_and_add(&nr_pending, -1);
	}
	barrier();
	sl->tid = 0;
	return sl;
}

/* A block of next that ended at mono (CLOCK_MONOTONIC) after blocked_ns: captured with its kernel
 * stack, and held (in this CPU's offcpu_slot, else in `pending`, or with a task work where
 * task_work, a constant) until the thread is back at its syscall's return. early: what its
 * switch-out took (TP_EARLY_*). This CPU's sched_cpu is looked up here (capture() and
 * capture_tw() take at most five arguments). */
static __always_inline void capture_block(struct task_struct *next, struct tp_sched_task *st,
					  __u64 blocked_ns, __u64 mono, __u32 early,
					  const bool task_work)
{
	__u32 key = TP_SCRATCH_SWITCH, zero = 0, tid = next->pid, cpu = bpf_get_smp_processor_id();
	struct tp_sched_cpu *c = bpf_map_lookup_elem(&sched_cpu, &zero);
	struct tp_offcpu_slot *sl = NULL;
	struct tp_pending *again_pd = NULL;
	struct tp_sample *again = NULL;
	struct tp_tw_pending *w = NULL;
	struct tp_tw_build *b = NULL;
	__u32 twice = 0, from_e = 0;
	struct tp_early_stacks *e;
	struct tp_sample *o;
	bool user;
	long n;

	if (st->pending) {
		/* blocked again in the syscall whose captured block waits for its user stack (kept
		 * under the tid it had then: in an exec it may have taken its leader's pid since):
		 * its kernel stack decides, below */
		__u32 key_tid = st->key_tid;

		if (task_work) {
			w = bpf_map_lookup_elem(&tw_pending, &key_tid);
			if (w)
				again = &w->s;
		}
		if (!again && st->slot_cpu != TP_NO_SLOT) {
			sl = bpf_map_lookup_percpu_elem(&offcpu_slot, &zero, st->slot_cpu);
			if (sl && sl->tid == key_tid)
				again = &sl->s;
		}
		if (!again)
			again_pd = bpf_map_lookup_elem(&pending, &key_tid);
		if (again || again_pd)
			twice = 1;
		else
			st->pending = 0;
	}
	barrier_var(twice); /* a flag: the verifier forbids or-ing the two pointers */
	/* its registers, unless its switch-out read them (predicted), or it blocks again in the
	 * syscall of a waiting sample (whose return is checked against st->syscall_nr) */
	if (!(early & TP_EARLY_REGS) && !twice) {
		struct pt_regs *regs = next->mm ? (struct pt_regs *)bpf_task_pt_regs(next) : NULL;

		st->syscall_nr = -1;
		if (regs)
			read_block_regs(st, regs);
	}
	/* a user thread back to user space from this syscall (not an io_uring or vhost worker,
	 * which never returns there, nor a block outside a syscall, a page fault, nor a thread
	 * that exits: from Linux 6.16 sched_process_exit fires before exit_mm(), so a block there
	 * (its mmap lock, say) ends after its exit took what was pending, and a capture held for
	 * a return that never comes would stay in `pending` for good) */
	user = next->mm &&
	       !(next->flags & (TP_PF_IO_WORKER | TP_PF_USER_WORKER | TP_PF_EXITING)) &&
	       st->syscall_nr >= 0;
	/* the sample is built where it waits: the tw_pending entry in the making, this CPU's
	 * offcpu_slot (fexit/schedule, sys_exit), or, when it is sent from here, a scratch */
	if (twice) {
		user = false;
		o = bpf_map_lookup_elem(&off_scratch, &key);
	} else if (task_work) {
		b = bpf_map_lookup_elem(&tw_scratch, &zero);
		o = b ? &b->s : NULL;
	} else {
		if (user && !early)
			sl = free_slot();
		o = sl ? &sl->s : bpf_map_lookup_elem(&off_scratch, &key);
	}
	if (!o)
		return;
	if (!twice)
		bump(TP_SCH_CAPTURED);
	o->hdr.kind = TP_EV_OFFCPU;
	o->hdr.pid = next->tgid;
	o->hdr.ts_ns = mono; /* the window: where it woke */
	o->hdr.start_ns = process_start_ns(next);
	o->tid = tid;
	o->cpu = cpu;
	o->flags = 0;
	o->pad = 0;
	o->nr_python = 0;
	o->nr_user = 0;
	o->blocked_ns = blocked_ns;
	/* the labels of the stage and GC pause it blocked in */
	o->stage = tp_stage_of(next);
	if (tp_in_gc(o->hdr.pid))
		o->flags |= TP_SAMPLE_IN_GC;
	comms(o, next);
	if (!switch_sp_from_ctx)
		learn_switch_sp(next, st);
	/* a user thread's stacks taken at switch-out, and its copy of this kernel stack (for the
	 * next block at the same user registers) */
	e = user ? bpf_task_storage_get(&sched_early, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE)
		 : NULL;
	/* Both stacks verified where it blocked as those of its last sample, sent less than a
	 * drain period ago: a repeat, without frames (tailprofd keeps that sample's stacks). */
	if (e && (early & TP_EARLY_KERNEL) && (early & TP_EARLY_AGAIN) && e->sent_ns &&
	    mono - e->sent_ns < slot_ns && next->thread.sp == st->early_ksp) {
		o->nr_kernel = 0;
		o->flags |= TP_SAMPLE_REPEAT | e->flags;
		bump(TP_SCH_KSTACK_EARLY);
		bump(TP_SCH_EARLY_USTACK);
		bump(TP_SCH_REPEAT);
		send(o, st);
		return;
	}
	n = kernel_stack(next, st, early, st->syscall_nr, o->addrs, e, &from_e);
	if (n < 0) {
		o->flags |= TP_SAMPLE_KSTACK_FAILED;
		n = 0;
	}
	if (n > TP_MAX_STACK_DEPTH)
		n = TP_MAX_STACK_DEPTH;
	o->nr_kernel = n;
	/* Blocked again before its syscall returned: on the same kernel path (a wait woken
	 * early, say) it is the same wait, one sample; on another (the copy out faulting, say) a
	 * block of its own, sent now with its kernel stack: the user stack, the syscall's, goes
	 * with the waiting sample. */
	if (twice) {
		if (again ? same_kstack(again->addrs, again->nr_kernel, o->addrs, n)
			  : same_pending_kstack(again_pd, o)) {
			bump(TP_SCH_AGAIN_SAME);
			if (again) {
				again->blocked_ns += blocked_ns;
				again->hdr.ts_ns = mono;
			} else {
				again_pd->blocked_ns += blocked_ns;
				again_pd->ts_ns = mono;
			}
		} else {
			bump(TP_SCH_CAPTURED);
			bump(TP_SCH_AGAIN_OTHER);
			send_no_user(o, next, st);
		}
		return;
	}
	if (!user) {
		send_no_user(o, next, st);
		return;
	}
	/* its user stack taken at switch-out: sent whole */
	if ((early & TP_EARLY_USER) && !put_early_user_stack(o, e)) {
		bump(TP_SCH_EARLY_USTACK);
		/* both stacks are its own copies: its next blocks there may be repeats of it */
		if (from_e)
			o->flags |= TP_SAMPLE_REPEATABLE;
		e->sent_ns = !send(o, st) && from_e ? mono : 0;
		return;
	}
	/* not predicted: its next block here is taken at switch-out; the user stack of this one
	 * on the thread's way back to user space */
	st->long_ip = st->block_ip;
	st->long_sp = st->block_sp;
	if (task_work) {
		if (!b || hold_task_work(b, tid, next)) {
			send_no_user(o, next, st);
			return;
		}
		bump(TP_SCH_TASK_WORK);
		__sync_fetch_and_add(&nr_pending, 1);
		st->pending = 1;
		st->key_tid = tid;
		return;
	}
	bump(TP_SCH_SYS_EXIT);
	if (sl) {
		barrier();
		sl->tid = tid;
		st->slot_cpu = cpu;
	} else if (!hold(o, tid)) {
		st->slot_cpu = TP_NO_SLOT;
	} else {
		send_no_user(o, next, st);
		return;
	}
	__sync_fetch_and_add(&nr_pending, 1);
	st->pending = 1;
	st->key_tid = tid;
	if (c) {
		c->pending_tid = tid;
		c->pending_regs = (__u64)bpf_task_pt_regs(next);
		c->pending_task = (__u64)next;
	}
}

/* capture_block() in a function of its own (not inlined). The BPF stack frames of a program and
 * of the functions it calls (bpf_loop callbacks included) add up along each call chain, each
 * rounded up to 32 bytes, and Linux 6.1 and 6.12 allow 512 (from 6.13 tracing programs get a
 * private stack, which hid this): inlined, capture made sched_switch's frame 320 bytes, and
 * with current_user_stack's 232 the chain was 576. Apart, the longest chains are sched_switch
 * (128) -> current_user_stack (224) -> tp_unwind_step (64) -> tp_unwind_row_step (32) = 448 and
 * sched_switch -> capture (256) -> kstack_scan_step (32) = 416. Without task works: sched_switch's.
 */
static __noinline void capture(struct task_struct *next, struct tp_sched_task *st, __u64 blocked_ns,
			       __u64 mono, __u32 early)
{
	capture_block(next, st, blocked_ns, mono, early, false);
}

/* The same with task works: sched_switch_tw's. Kept apart because the task work's callback
 * (tw_returned, which walks the user stack) counts as a call in the stack-depth check of
 * kernels without the kfunc: no kernel before 6.18 ever sees this code. */
static __noinline void capture_tw(struct task_struct *next, struct tp_sched_task *st,
				  __u64 blocked_ns, __u64 mono, __u32 early)
{
	capture_block(next, st, blocked_ns, mono, early, true);
}

#endif
