/* SPDX-License-Identifier: GPL-2.0-only */
/* Run-queue accounting and the clocks (sched.bpf.c): the counters, each CPU's rq clock and its
 * offset from bpf_ktime_get_ns, the per-process counts of a drain period (sched_ptab, else
 * sched_procs), and the run-queue wait a switch-in adds. Included by sched.bpf.c only, after
 * sched_state.bpf.h. */
#ifndef TAILPROF_SCHED_RUNQ_BPF_H
#define TAILPROF_SCHED_RUNQ_BPF_H

/* Counts one of metric (enum tp_sched_metric) on this CPU. An atomic add, though the counter is
 * per CPU: the task work's callback runs preemptible, so a program that runs on this CPU while
 * it is preempted (the next sched_switch) could interleave with a plain increment. */
static __always_inline void bump(__u32 metric)
{
	__u64 *v = bpf_map_lookup_elem(&sched_metrics, &metric);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* Takes CLOCK_MONOTONIC time mono, read at rq clock clk, into this CPU's state: the offset
 * between the clocks and the drain period. */
static __always_inline void sched_cpu_clock(struct tp_sched_cpu *c, __u64 mono, __u64 clk)
{
	__s64 d = (__s64)(mono - clk);

	if (mono >= c->period_end) {
		c->off_prev = c->period_end ? c->off_cur : d;
		c->off_cur = d;
		c->period = mono / slot_ns;
		c->period_end = (c->period + 1) * slot_ns;
	}
	if (d < c->off_cur)
		c->off_cur = d;
	c->period_end_rq = c->period_end - (__u64)c->off_cur;
}

/* The rq clock now as CLOCK_MONOTONIC gives it (never before clk). */
static __always_inline __u64 rq_now(struct tp_sched_cpu *c, __u64 mono, __u64 clk)
{
	__u64 now = mono - (__u64)(c->off_prev < c->off_cur ? c->off_prev : c->off_cur);

	return now > clk ? now : clk;
}

/* A new sched_procs entry's value: in .rodata, not on the BPF stack (see capture()). */
static const struct tp_sched_proc zero_proc;

/* The counts of process pid in this CPU's drain period: its sched_ptab entry, or sched_procs
 * when the entries it may use hold other processes. NULL: no room anywhere (counted). */
static __always_inline struct tp_sched_proc *proc_slot(__u32 pid, __u64 period, __u32 cpu)
{
	__u32 base = (cpu * TP_SCHED_SLOTS + (__u32)(period % TP_SCHED_SLOTS)) * TP_SCHED_PTAB;
	__u32 h = (pid * 2654435761u) >> (32 - 7); /* Knuth's multiplicative hash, 7 bits */
	struct tp_sched_key key = {.pid = pid, .slot = (__u32)period, .cpu = cpu};
	struct tp_sched_proc *v;

	_Static_assert(TP_SCHED_PTAB == 1 << 7, "proc_slot hashes to 7 bits");
	for (__u32 i = 0; i < TP_SCHED_PTAB_PROBES; i++) {
		__u32 idx = base + ((h + i) & (TP_SCHED_PTAB - 1));
		struct tp_sched_pentry *e = bpf_map_lookup_elem(&sched_ptab, &idx);

		if (!e)
			break;
		if (e->pid == pid && e->slot == (__u32)period)
			return &e->v;
		if (e->slot != (__u32)period && !e->v.runq_count && !e->v.short_count) {
			/* free, or of an older period whose counts tailprofd has taken */
			e->pid = pid;
			e->slot = (__u32)period;
			e->v.runq_ns = e->v.runq_max_ns = e->v.short_ns = 0;
			return &e->v;
		}
	}
	v = bpf_map_lookup_elem(&sched_procs, &key);
	if (v)
		return v;
	if (!bpf_map_update_elem(&sched_procs, &key, &zero_proc, BPF_NOEXIST))
		__sync_fetch_and_add(&sched_procs_added, 1);
	else if (!bpf_map_lookup_elem(&sched_procs, &key)) {
		bump(TP_SCH_PROCS_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&sched_procs, &key);
}

/* A run-queue wait of lat ns ended now: into this CPU's histogram of the period, and p's counts.
 * Plain adds: the histogram and p are this CPU's own (p's key has the CPU), and tailprofd takes a
 * period only once it has ended, so nothing else writes them meanwhile. */
static __always_inline void runq_done(struct tp_sched_proc *p, __u64 lat, __u64 period, __u32 cpu)
{
	__u32 idx = cpu * TP_SCHED_SLOTS + (__u32)(period % TP_SCHED_SLOTS);
	struct tp_runq_hist *h = bpf_map_lookup_elem(&runq_hist, &idx);
	__u32 b = tp_hist_bucket(lat);

	if (h) {
		h->count++;
		h->sum_ns += lat;
		if (lat > h->max_ns)
			h->max_ns = lat;
		if (b < TP_HIST_BUCKETS)
			h->buckets[b]++;
	}
	if (p) {
		p->runq_count++;
		p->runq_ns += lat;
		if (lat > p->runq_max_ns)
			p->runq_max_ns = lat;
	}
}

/* The part of a wait since lq that sched_info_arrive counts at rq clock clk. */
static __always_inline __u64 runq_here(__u64 lq, __u64 clk)
{
	return lq && clk > lq ? clk - lq : 0;
}

#endif
