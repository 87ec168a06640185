// SPDX-License-Identifier: GPL-2.0-only
/* Stages: entry/exit probes (uprobe + uretprobe, or USDT begin/end) that keep a per-thread stack
 * of active stages, time each stage into per-period log-linear histograms, and send slow spans
 * to user space. One object is loaded per configured stage (its programs' BPF run time is that
 * stage's cost); every instance shares the maps of the first one. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "tailprof.h"
#include "lib/label_sources.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load: the drain period (one histogram slot each). */
const volatile __u64 slot_ns = 500000000;
/* Set by the loader before load: 1 to measure each slow span's CPU and run-queue time
 * (TP_ACCT_EXACT), when the kernel has what sched_now() reads (kernel_probe.h). */
const volatile __u32 exact_accounting = 0;

/* stage_stacks: task -> the stages the thread is in (tailprof.h). Written by the programs here,
 * read by perf_sample (profile.bpf.c, same map through reuse). Task storage: it goes away with
 * the thread, so a thread that dies inside a stage leaks nothing. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tp_stage_stack);
} stage_stacks SEC(".maps");

/* stage_hist: per drain period slot and stage, the latency histogram of the stages that ended
 * then. Written here (atomic adds), taken by tailprofd (atomic exchanges) through mmap. Sized
 * TP_STAGE_SLOTS * TP_MAX_STAGES (2.5 MB). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, TP_STAGE_SLOTS *TP_MAX_STAGES);
	__type(key, __u32);
	__type(value, struct tp_stage_hist);
} stage_hist SEC(".maps");

/* stage_slow_ns: stage -> slow-span threshold in ns (0: send none). Written by tailprofd (the
 * previous window's p95), read here. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_MAX_STAGES);
	__type(key, __u32);
	__type(value, __u64);
} stage_slow_ns SEC(".maps");

/* stage_names: stage name (NUL-padded) -> id, for stages that applications name (stage.h).
 * Written here (new names) and by tailprofd (configured names, so both share one id); read by
 * both. One entry per possible id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TP_MAX_STAGES);
	__type(key, char[TP_STAGE_NAME_LEN]);
	__type(value, __u32);
} stage_names SEC(".maps");

/* stage_next_id: [0] the next id for a new application stage name. Set to TP_FIRST_DYN_STAGE by
 * tailprofd, bumped here. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} stage_next_id SEC(".maps");

/* stage_metrics: error counters (enum tp_stage_metric). Written here, read by tailprofd. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TP_SM_NR);
	__type(key, __u32);
	__type(value, __u64);
} stage_metrics SEC(".maps");

/* spans: slow spans (struct tp_span) to tailprofd, read at each drain. Its size bounds the spans
 * per drain period: 256 KB is 6553 spans. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} spans SEC(".maps");

static __always_inline void bump(__u32 metric)
{
	__u64 *v = bpf_map_lookup_elem(&stage_metrics, &metric);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* Reads of the current thread's scheduler accounting that sched_now() tries for a consistent
 * one (another CPU may update this run queue's clock, a preemption the thread's runtime). */
#define SCHED_NOW_TRIES 3

/* The current thread's CPU time and run-queue wait so far: *run_delay its sched_info.run_delay
 * (complete while it runs: sched_info_arrive adds each wait when it gets a CPU), *runtime its
 * se.sum_exec_runtime plus the part of the current slice that update_curr() has not added yet.
 * The kernel's task_sched_runtime() takes that part as rq->clock_task - se.exec_start after
 * updating the run queue's clock; without its lock, rq->clock_task is as old as the last tick or
 * switch on this CPU (4 ms at HZ=250). Both of the run queue's clocks advance together at each
 * update (clock_task by the same delta minus IRQ and steal time), and rq->clock is
 * sched_clock_cpu(), one clock for every CPU, so the time since that update is
 * ktime - rq->clock up to a constant (the offset between CLOCK_MONOTONIC and sched_clock):
 *   runtime = sum_exec_runtime + (clock_task - exec_start) + (ktime - clock)
 * is the CPU time so far plus that constant, the same on every CPU: the difference of two reads
 * (entry and exit, on any CPUs) is the CPU time between them; IRQ and steal time since each
 * read's last clock update count as CPU time. The run queue is the running thread's own CPU's,
 * through se.cfs_rq->rq (CONFIG_FAIR_GROUP_SCHED): the per-CPU variable runqueues would need
 * CONFIG_KALLSYMS_ALL, which kernels (this machine kind's) lack. Returns false when this kernel
 * or the loader said no (exact_accounting), or no consistent read was had. */
static __always_inline bool sched_now(__u64 *runtime, __u64 *run_delay)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct rq *rq;
	__u64 sum, start, clk, clk_task, now;

	if (!exact_accounting || !bpf_core_field_exists(t->sched_info.run_delay) ||
	    !bpf_core_field_exists(t->se.cfs_rq))
		return false;
	rq = BPF_CORE_READ(t, se.cfs_rq, rq);
	if (!rq)
		return false;
	for (int i = 0; i < SCHED_NOW_TRIES; i++) {
		sum = BPF_CORE_READ(t, se.sum_exec_runtime);
		start = BPF_CORE_READ(t, se.exec_start);
		clk = BPF_CORE_READ(rq, clock);
		clk_task = BPF_CORE_READ(rq, clock_task);
		now = bpf_ktime_get_ns();
		*run_delay = BPF_CORE_READ(t, sched_info.run_delay);
		/* the same again: nothing moved while we read */
		if (BPF_CORE_READ(rq, clock) == clk && BPF_CORE_READ(t, se.exec_start) == start &&
		    BPF_CORE_READ(t, se.sum_exec_runtime) == sum) {
			/* modulo 2^64: only differences of two reads are meaningful */
			*runtime = sum + (clk_task - start) + (now - clk);
			return true;
		}
	}
	return false;
}

static __always_inline void stage_enter(__u32 stage, __u64 request_id)
{
	struct tp_stage_stack *st;
	__u32 d;

	if (!stage || stage >= TP_MAX_STAGES)
		return;
	st = bpf_task_storage_get(&stage_stacks, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		bump(TP_SM_NO_STORAGE);
		return;
	}
	tp_label_mark(TP_LABEL_STAGE);
	d = st->depth;
	if (d < TP_STAGE_DEPTH) {
		struct tp_stage_frame *f = &st->frames[d & (TP_STAGE_DEPTH - 1)];

		f->stage = stage;
		f->request_id = request_id;
		f->start_ns = bpf_ktime_get_ns();
		f->accounting = sched_now(&f->runtime_ns, &f->run_delay_ns);
	} else {
		bump(TP_SM_TOO_DEEP);
	}
	st->depth = d + 1;
}

static __always_inline void record(__u32 stage, __u64 now, const struct tp_stage_frame *f)
{
	__u64 dur = now - f->start_ns, *slow, old, runtime, run_delay;
	__u32 idx = (__u32)((now / slot_ns) % TP_STAGE_SLOTS) * TP_MAX_STAGES + stage, b;
	struct tp_stage_hist *h = bpf_map_lookup_elem(&stage_hist, &idx);
	struct tp_span *sp;

	if (h) {
		b = tp_hist_bucket(dur);
		if (b > TP_HIST_OVERFLOW)
			b = TP_HIST_OVERFLOW;
		__sync_fetch_and_add(&h->buckets[b], 1);
		__sync_fetch_and_add(&h->sum_ns, dur);
		/* a bounded compare-and-swap loop: another CPU may raise max meanwhile */
		for (int i = 0; i < 4; i++) {
			old = h->max_ns;
			if (dur <= old || __sync_val_compare_and_swap(&h->max_ns, old, dur) == old)
				break;
		}
		/* the count last: tailprofd skips a slot whose count is 0 */
		__sync_fetch_and_add(&h->count, 1);
	}
	slow = bpf_map_lookup_elem(&stage_slow_ns, &stage);
	if (!slow || !*slow || dur <= *slow)
		return;
	sp = bpf_ringbuf_reserve(&spans, sizeof(*sp), 0);
	if (!sp) {
		bump(TP_SM_SPANS_LOST);
		return;
	}
	{
		__u64 pid_tgid = bpf_get_current_pid_tgid();

		sp->pid = pid_tgid >> 32;
		sp->tid = (__u32)pid_tgid;
	}
	sp->start_ns = f->start_ns;
	sp->duration_ns = dur;
	sp->request_id = f->request_id;
	sp->stage = stage;
	sp->accounting = TP_ACCT_NONE;
	sp->cpu_ns = 0;
	sp->runq_ns = 0;
	if (f->accounting && sched_now(&runtime, &run_delay)) {
		__u64 cpu = runtime - f->runtime_ns, runq = run_delay - f->run_delay_ns;

		/* the reads' errors (microseconds) must not make the parts exceed the whole */
		if ((__s64)cpu < 0)
			cpu = 0;
		if (cpu > dur)
			cpu = dur;
		if ((__s64)runq < 0)
			runq = 0;
		if (runq > dur - cpu)
			runq = dur - cpu;
		sp->cpu_ns = cpu;
		sp->runq_ns = runq;
		sp->accounting = TP_ACCT_EXACT;
	}
	/* no wakeup: spans are read at the next drain */
	bpf_ringbuf_submit(sp, BPF_RB_NO_WAKEUP);
}

static __always_inline void stage_exit(__u32 stage)
{
	__u64 now = bpf_ktime_get_ns();
	struct tp_stage_stack *st;
	struct tp_stage_frame f;
	__u32 d;
	int i, found = -1;

	if (!stage || stage >= TP_MAX_STAGES)
		return;
	st = bpf_task_storage_get(&stage_stacks, bpf_get_current_task_btf(), 0, 0);
	if (!st || !st->depth) {
		bump(TP_SM_UNMATCHED);
		return;
	}
	d = st->depth;
	if (d > TP_STAGE_DEPTH) {
		st->depth = d - 1; /* an untimed inner stage */
		return;
	}
	/* The innermost frame of this stage: with uprobes it is the top one; an application's
	 * USDT end may skip inner stages it never ended (they are dropped). */
	for (i = TP_STAGE_DEPTH - 1; i >= 0; i--) {
		if ((__u32)i < d && st->frames[i].stage == stage) {
			found = i;
			break;
		}
	}
	if (found < 0) {
		bump(TP_SM_UNMATCHED);
		return;
	}
	f = st->frames[found & (TP_STAGE_DEPTH - 1)];
	st->depth = found;
	record(stage, now, &f);
}

/* ---- configured stages: the stage id is the attach cookie ---- */

SEC("uprobe")
int uprobe_stage_enter(struct pt_regs *ctx)
{
	stage_enter((__u32)bpf_get_attach_cookie(ctx), 0);
	return 0;
}

SEC("uretprobe")
int uretprobe_stage_exit(struct pt_regs *ctx)
{
	stage_exit((__u32)bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("usdt")
int usdt_stage_begin(struct pt_regs *ctx)
{
	long req = 0;

	/* a first argument, if the probe has one, is taken as the request id */
	if (bpf_usdt_arg_cnt(ctx) > 0)
		bpf_usdt_arg(ctx, 0, &req);
	stage_enter((__u32)bpf_usdt_cookie(ctx), (__u64)req);
	return 0;
}

SEC("usdt")
int usdt_stage_end(struct pt_regs *ctx)
{
	stage_exit((__u32)bpf_usdt_cookie(ctx));
	return 0;
}

/* ---- applications' own stages (include/tailprof/stage.h): named by the first argument ---- */

static __always_inline __u32 stage_id_of(const char *uname)
{
	char name[TP_STAGE_NAME_LEN] = {};
	__u32 zero = 0, *id, *next, nid;

	if (bpf_probe_read_user_str(name, sizeof(name), uname) <= 1) {
		bump(TP_SM_NAME_UNREADABLE);
		return 0;
	}
	id = bpf_map_lookup_elem(&stage_names, name);
	if (id)
		return *id;
	next = bpf_map_lookup_elem(&stage_next_id, &zero);
	if (!next || *next >= TP_MAX_STAGES) {
		bump(TP_SM_NAMES_FULL);
		return 0;
	}
	nid = __sync_fetch_and_add(next, 1);
	if (nid >= TP_MAX_STAGES) {
		bump(TP_SM_NAMES_FULL);
		return 0;
	}
	/* another CPU may have named it first: then its id wins and nid stays unused */
	if (bpf_map_update_elem(&stage_names, name, &nid, BPF_NOEXIST)) {
		id = bpf_map_lookup_elem(&stage_names, name);
		return id ? *id : 0;
	}
	return nid;
}

SEC("usdt")
int BPF_USDT(usdt_app_begin, const char *name, __u64 request_id)
{
	stage_enter(stage_id_of(name), request_id);
	return 0;
}

SEC("usdt")
int BPF_USDT(usdt_app_end, const char *name, __u64 request_id)
{
	stage_exit(stage_id_of(name));
	return 0;
}
