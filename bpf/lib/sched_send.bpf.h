/* SPDX-License-Identifier: GPL-2.0-only */
/* The samples the scheduler programs send (sched.bpf.c): a task's kernel stack base, its names,
 * the off-CPU sample of a pending block, and sending a sample to the events ring buffer.
 * Included by sched.bpf.c only, after sched_runq.bpf.h (and lib/task.bpf.h). */
#ifndef TAILPROF_SCHED_SEND_BPF_H
#define TAILPROF_SCHED_SEND_BPF_H

/* The base of task's kernel stack (task->stack) as a number. Read with a helper, not a plain
 * load: Linux 6.18's verifier types a plain load of that void * as read-only untrusted memory,
 * and then rejects the arithmetic (depth, hashing) done on it ("pointer ^= pointer
 * prohibited"). 0 when the read fails. */
static __always_inline __u64 task_stack_base(struct task_struct *task)
{
	__u64 base = 0;

	bpf_probe_read_kernel(&base, sizeof(base), &task->stack);
	return base;
}

/* The comm of task's process and its own, both TP_COMM_LEN bytes, NUL-padded as the kernel keeps
 * them. */
static __always_inline void comms(struct tp_sample *o, struct task_struct *task)
{
	__u64 *t = (__u64 *)o->thread_comm;

	process_comm(o->comm, task);
	t[0] = *(__u64 *)&task->comm[0];
	t[1] = *(__u64 *)&task->comm[8];
}

/* Sends off-CPU sample o to user space (woken at once for a process it does not know yet, which
 * is then marked known unless the thread exits, for new Python code, for a user stack walk cut at
 * a PC in no mapping it gave BPF (once per process and tables), or when the ring buffer fills).
 * st: the thread's state, where whether user space knows its process is kept (a hash lookup less
 * a sample), or NULL. Returns 0 or -1 (ring buffer full). */
static __always_inline long send(struct tp_sample *o, struct tp_sched_task *st)
{
	__u32 nk = o->nr_kernel, nu = o->nr_user, n;
	__u64 flags = BPF_RB_NO_WAKEUP;
	bool mark = false;

	/* each clamped in its own register, which the verifier then sees bounded */
	nk = nk < TP_MAX_STACK_DEPTH ? nk : TP_MAX_STACK_DEPTH;
	barrier_var(nk);
	nu = nu < TP_MAX_STACK_DEPTH ? nu : TP_MAX_STACK_DEPTH;
	barrier_var(nu);
	n = TP_SAMPLE_HDR_SIZE + (nk + nu) * 8;
	if (python_on) {
		__u32 npy = o->nr_python;

		npy = npy < TP_PY_MAX_FRAMES ? npy : TP_PY_MAX_FRAMES;
		barrier_var(npy);
		n += npy * 16;
	}
	if (!st || st->known_start != o->hdr.start_ns) {
		__u64 *known = bpf_map_lookup_elem(&known_procs, &o->hdr.pid);

		if (known && *known == o->hdr.start_ns) {
			if (st)
				st->known_start = o->hdr.start_ns;
		} else {
			flags = BPF_RB_FORCE_WAKEUP;
			mark = st && !st->exiting;
		}
	}
	if ((o->flags & TP_SAMPLE_PY_NEW) ||
	    bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	/* a walk cut at a PC in no mapping (libraries mapped after user space read the maps): user
	 * space reads them again at once, woken once per process and entry of its tables on this
	 * CPU (a JIT's threads block in code of no mapping all the time) */
	if ((o->flags & TP_SAMPLE_UNWIND_RESCAN) && flags == BPF_RB_NO_WAKEUP) {
		__u32 zero = 0, pid = o->hdr.pid;
		struct tp_sched_cpu *c = bpf_map_lookup_elem(&sched_cpu, &zero);
		struct tp_proc_mappings *pm = bpf_map_lookup_elem(&unwind_procs, &pid);
		__u32 gen = (pm ? pm->gen : 0) + 1;

		if (c && (c->rescan_pid != pid || c->rescan_gen != gen)) {
			c->rescan_pid = pid;
			c->rescan_gen = gen;
			flags = BPF_RB_FORCE_WAKEUP;
		}
	}
	if (bpf_ringbuf_output(&events, o, n, flags)) {
		bump(TP_SCH_RINGBUF_FULL);
		return -1;
	}
	if (mark)
		tp_mark_known(o->hdr.pid, o->hdr.start_ns);
	return 0;
}

/* The off-CPU sample of pending block pd of thread tid (task t, the current one at its return), in
 * o, kernel stack and labels filled; no user stack yet. */
static __always_inline void sample_of(struct tp_sample *o, struct tp_pending *pd, __u32 tid,
				      struct task_struct *t)
{
	__u32 nk = pd->nr_kernel;

	o->hdr.kind = TP_EV_OFFCPU;
	o->hdr.pid = pd->pid;
	o->hdr.ts_ns = pd->ts_ns;
	o->hdr.start_ns = pd->start_ns;
	o->tid = tid;
	o->cpu = pd->cpu;
	o->flags = pd->flags;
	o->stage = pd->stage;
	o->pad = 0;
	o->nr_python = 0;
	o->blocked_ns = pd->blocked_ns;
	o->nr_kernel = nk < TP_PENDING_KFRAMES ? nk : TP_PENDING_KFRAMES;
	o->nr_user = 0;
	__builtin_memcpy(o->addrs, pd->kaddrs, sizeof(pd->kaddrs));
	comms(o, t);
}

#endif
