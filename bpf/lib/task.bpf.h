/* SPDX-License-Identifier: GPL-2.0-only */
/* What the sampler and the scheduler programs read of a trusted task pointer (tp_btf arguments,
 * bpf_get_current_task_btf()): plain loads, which the verifier guards (a faulting one reads 0),
 * not a bpf_probe_read_kernel() call a field as BPF_CORE_READ() makes. Included by profile.bpf.c
 * and sched.bpf.c. */
#ifndef TAILPROF_TASK_BPF_H
#define TAILPROF_TASK_BPF_H

/* The start of task's process (its group leader's start_boottime, ns): with the pid, what
 * identifies the process (tp_event_hdr.start_ns). */
static __always_inline __u64 process_start_ns(struct task_struct *task)
{
	return task->group_leader->start_boottime;
}

/* The comm of task's process into comm (TP_COMM_LEN bytes, NUL-padded as the kernel keeps it). */
static __always_inline void process_comm(char *comm, struct task_struct *task)
{
	_Static_assert(TP_COMM_LEN == 16 && sizeof(task->comm) == 16, "comm is two words");

	((__u64 *)comm)[0] = *(__u64 *)&task->group_leader->comm[0];
	((__u64 *)comm)[1] = *(__u64 *)&task->group_leader->comm[8];
}

#endif
