// SPDX-License-Identifier: GPL-2.0-only
/* CPU sampling: a perf_event program on cpu-clock that sends stacks to user space, plus process
 * exec/exit/fork notifications so user space can resolve user addresses before a process goes
 * away. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "tailprof.h"
#include "lib/task.bpf.h"
#include "lib/unwind.bpf.h"
#include "lib/shared_maps.bpf.h"
#include "lib/gc_open.bpf.h"
#include "lib/python.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load. */
const volatile __u64 wakeup_bytes = 1 << 20; /* wake user space once this much data is waiting */
const volatile __u64 slot_ns = 500000000;    /* the drain period: one set of counters each */
const volatile __u32 unwind_tables_on = 0;   /* 1: walk user stacks with unwind_rows */
const volatile __u32 python_on = 0;	     /* 1: walk Python frames of processes in py_procs */
/* the v1 name=systemd hierarchy's id (cgroup_root.hierarchy_id, from tailprofd's own cgroup
 * file) on hybrid layouts: exec records carry the process's cgroup there; 0: none */
const volatile __u32 cgroup_v1_hierarchy = 0;
/* Benchmark only (tests/bench/stages.py): time the stage lookup of every sample into
 * label_cost[0] (ns), two back-to-back clock reads into label_cost[1] (the clock's own cost, to
 * subtract) and count the samples in label_cost[2]. Off: the verifier drops that code. */
const volatile __u32 time_stage_label = 0;
__u64 label_cost[3];
/* Benchmark only (tests/bench/python.py): for the samples of process bench_pid, the program's
 * time from its first clock read to the end into bench_cost[0] (ns) and their count into
 * bench_cost[1]; the Python walk's time into bench_cost[2] and its frames into bench_cost[3].
 * 0: off, and the verifier drops that code. */
const volatile __u32 bench_pid = 0;
__u64 bench_cost[4];

/* Set by tailprofd (loader__set_young) while the kernel's mmap records give it new processes'
 * maps even after they exit (daemon/mmap_records.c): an unknown process that started at
 * young_since_ns or later (CLOCK_BOOTTIME ns, task->start_boottime; the records know it from its
 * fork) is young at a sample while the sampled thread has run less than young_ns (some 5
 * samples' worth). Such a sample wakes nobody for the process being new, is flagged
 * TP_SAMPLE_YOUNG and does not mark it known: it waits for the next drain, and most such
 * processes are gone by then, named from the records, never read. Blocks are not deferred
 * (sched.bpf.c): a new process's first block still has its unwind tables loaded while it waits.
 * young_ns 0: every unknown process wakes user space. */
__u64 young_ns = 0;
__u64 young_since_ns = 0;

/* events: samples and process notifications, in order, to the drain loop. Written by the programs
 * here, read by tailprofd. Size set by the loader (--ringbuf-size). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/* counters: event counts per CPU and drain period (layout in tailprof.h). Written here with
 * atomic adds, taken by tailprofd with atomic exchanges; sized by the loader to
 * nr_cpus * TP_COUNTER_SLOTS * TP_M_NR. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* 1 once a new process found no room in live_procs: user space cannot take a pid's absence
 * there for the end of a process forked since the load any more */
__u32 live_procs_full;
/* live_procs: tgid -> start_ns of the processes forked since tailprofd loaded, from their fork
 * until their exit (before the kernel can give the pid to another). User space checks that a
 * maps read was of the process it was for against it, instead of reading /proc/PID/stat. When
 * full, a new process is not added (live_procs_full) and user space reads /proc for it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, __u64);
} live_procs SEC(".maps");

/* py_exes: CPython interpreter executables tailprofd found in a process exec'd from one
 * (daemon/python.c): a new image of one gets its py_procs entry at its exec. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct tp_file_key);
	__type(value, struct tp_py_exe);
} py_exes SEC(".maps");

/* static_layouts: static executables whose layout tailprofd recorded (symbolizer.h,
 * symbolizer_opts.layout_known): a process exec'd from one is named from that layout, without a
 * read of its maps; with the layout's unwind tables once tailprofd has made them (struct
 * tp_layout_table, unwinder.h), it gets its unwind_procs entry at its exec. Written by tailprofd
 * only. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	/* an update frees the old value after an RCU grace period: an exec program that looked
	 * it up copies it whole (a preallocated element is reused at the next update) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, TP_STATIC_LAYOUTS);
	__type(key, struct tp_file_key);
	__type(value, struct tp_layout_table);
} static_layouts SEC(".maps");

/* layout_scratch: the unwind_procs entry the exec program builds from a layout's tables, per
 * CPU (tracepoints run with preemption off: the program does not nest in itself on a CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_proc_mappings);
} layout_scratch SEC(".maps");

/* walk_scratch: the values of a user-stack walk (struct tp_unwind_walk), per CPU: perf_sample
 * does not nest in itself. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_unwind_walk);
} walk_scratch SEC(".maps");

/* scratch: one tp_sample per CPU, too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tp_sample);
} scratch SEC(".maps");

static __always_inline void count(__u64 ts, __u32 metric)
{
	__u32 idx = ((bpf_get_smp_processor_id() * TP_COUNTER_SLOTS) +
		     (__u32)((ts / slot_ns) % TP_COUNTER_SLOTS)) *
			TP_M_NR +
		    metric;
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* Walks the user stack of the current task with its process's unwind tables into s->addrs[nk ..].
 * Returns the number of frames, or -1 when the process has no tables (yet): frame pointers then.
 * *by_user_space: the tables are ones tailprofd wrote (not the exec program's from a static
 * layout), so it has read the process's maps: the process is known. */
static __always_inline long user_stack_tables(struct tp_sample *s, long nk, __u64 ts,
					      bool *by_user_space)
{
	struct tp_unwind_result res = {};
	struct tp_proc_mappings *procs;
	struct tp_unwind_walk *w;
	struct pt_regs *regs;
	__u32 zero = 0;

	if (!unwind_tables_on)
		return -1;
	w = bpf_map_lookup_elem(&walk_scratch, &zero);
	if (!w)
		return -1;
	procs = bpf_map_lookup_elem(&unwind_procs, &s->hdr.pid);
	if (!procs || procs->start_ns != s->hdr.start_ns)
		return -1;
	/* the user registers, also when the sample interrupted the kernel */
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!regs)
		return -1;
	if (nk < 0 || nk > TP_MAX_STACK_DEPTH)
		return -1;
	*by_user_space = !(procs->gen & TP_GEN_FROM_LAYOUT);
	tp_unwind_user(procs, regs->ip, regs->sp, regs->bp, &s->addrs[nk], &res, NULL, 1, w, 1);
	s->flags |= TP_SAMPLE_UNWIND_TABLES;
	count(ts, TP_M_UNWIND_STACKS);
	if (res.used_fp)
		count(ts, TP_M_UNWIND_FP_STACKS);
	if (res.reason == TP_UNWIND_TRUNCATED)
		s->flags |= TP_SAMPLE_USTACK_TRUNCATED;
	if (res.reason == TP_UNWIND_NO_MAPPING)
		s->flags |= TP_SAMPLE_UNWIND_RESCAN;
	switch (res.reason) {
	case TP_UNWIND_UNSUPPORTED:
		count(ts, TP_M_UNWIND_UNSUPPORTED);
		break;
	case TP_UNWIND_NO_MAPPING:
		count(ts, TP_M_UNWIND_NO_MAPPING);
		break;
	case TP_UNWIND_READ_FAILED:
		count(ts, TP_M_UNWIND_READ_FAILED);
		break;
	case TP_UNWIND_BAD_FRAME:
		count(ts, TP_M_UNWIND_BAD_FRAME);
		break;
	}
	return res.nr;
}

/* Whether the sample in ctx interrupted user mode: the low two bits of the interrupted code
 * segment (the kernel's user_mode()). x86-64's user-space struct pt_regs (uapi asm/ptrace.h),
 * which bpf_perf_event_data's regs is, has cs at word 17; perf_event programs read their context
 * 8 bytes at a time, and since Linux 6.9 the kernel's own pt_regs names a 2-byte cs in a union
 * (FRED), so the word is read by its fixed offset, not by vmlinux.h's field. */
static __always_inline bool tp_sample_in_user_mode(struct bpf_perf_event_data *ctx)
{
	return *(volatile __u64 *)((char *)ctx + 17 * sizeof(__u64)) & 3;
}

static __always_inline __u64 wakeup_flags(int urgent)
{
	if (urgent || bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

SEC("perf_event")
int perf_sample(struct bpf_perf_event_data *ctx)
{
	__u64 ts = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct task_struct *task;
	struct tp_sample *s;
	__u64 t0 = 0;
	__u32 zero = 0;
	bool unknown, tables_known = false;
	__u64 *known;
	long n, nk = 0, nu = 0;

	count(ts, TP_M_SAMPLES);
	if ((__u32)pid_tgid == 0) {
		count(ts, TP_M_IDLE);
		return 0;
	}
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;

	task = bpf_get_current_task_btf();
	s->hdr.kind = TP_EV_SAMPLE;
	s->hdr.pid = pid_tgid >> 32;
	s->hdr.ts_ns = ts;
	s->hdr.start_ns = process_start_ns(task);
	s->tid = (__u32)pid_tgid;
	s->cpu = bpf_get_smp_processor_id();
	s->flags = 0;
	s->blocked_ns = 0;
	if (tp_in_gc(s->hdr.pid))
		s->flags |= TP_SAMPLE_IN_GC;
	process_comm(s->comm, task);
	bpf_get_current_comm(&s->thread_comm, sizeof(s->thread_comm));
	/* the innermost stage the thread is in (untimed stages past the depth keep the deepest) */
	if (time_stage_label)
		t0 = bpf_ktime_get_ns();
	s->stage = tp_stage_of(task);
	if (time_stage_label) {
		__u64 t1 = bpf_ktime_get_ns(), t2 = bpf_ktime_get_ns();

		__sync_fetch_and_add(&label_cost[0], t1 - t0);
		__sync_fetch_and_add(&label_cost[1], bpf_ktime_get_ns() - t2);
		__sync_fetch_and_add(&label_cost[2], 1);
	}

	/* A sample that interrupted user mode has no kernel stack: bpf_get_stack would find none
	 * (get_perf_callchain walks the kernel only from kernel-mode registers), and cold, as
	 * every sample is at 99 Hz, its own code and buffers cost some 2 us of a 9 us sample. */
	if (!tp_sample_in_user_mode(ctx)) {
		n = bpf_get_stack(ctx, s->addrs, TP_MAX_STACK_DEPTH * 8, 0);
		if (n < 0) {
			s->flags |= TP_SAMPLE_KSTACK_FAILED;
			count(ts, TP_M_KSTACK_FAILED);
		} else {
			nk = n / 8;
		}
	}
	if (nk > TP_MAX_STACK_DEPTH)
		nk = TP_MAX_STACK_DEPTH;

	if (!task->mm) {
		s->flags |= TP_SAMPLE_KERNEL_THREAD;
	} else {
		nu = user_stack_tables(s, nk, ts, &tables_known);
		if (nu < 0) {
			nu = 0;
			n = bpf_get_stack(ctx, &s->addrs[nk], TP_MAX_STACK_DEPTH * 8,
					  BPF_F_USER_STACK);
			if (n < 0) {
				s->flags |= TP_SAMPLE_USTACK_FAILED;
				count(ts, TP_M_USTACK_FAILED);
			} else {
				nu = n / 8;
			}
			/* a frame-pointer walk that filled every slot may go on */
			if (nu >= TP_MAX_STACK_DEPTH)
				s->flags |= TP_SAMPLE_USTACK_TRUNCATED;
		}
		if (nu > TP_MAX_STACK_DEPTH)
			nu = TP_MAX_STACK_DEPTH;
	}
	s->nr_kernel = nk;
	s->nr_user = nu;
	s->nr_python = 0;
	if (python_on && !(s->flags & TP_SAMPLE_KERNEL_THREAD)) {
		__u64 tp = bench_pid && s->hdr.pid == bench_pid ? bpf_ktime_get_ns() : 0;
		enum tp_py_result r = tp_py_walk(s->hdr.pid, s->hdr.start_ns, tp_py_current_tid(),
						 &s->addrs[nk + nu], &s->nr_python, &s->flags);

		if (tp) {
			__sync_fetch_and_add(&bench_cost[2], bpf_ktime_get_ns() - tp);
			__sync_fetch_and_add(&bench_cost[3], s->nr_python);
		}

		if (r == TP_PY_FAILED)
			s->flags |= TP_SAMPLE_PY_FAILED;
		else if (r == TP_PY_TRUNCATED)
			s->flags |= TP_SAMPLE_PY_TRUNCATED;
	}

	/* A new process is read at once (and marked known), but not one whose thread exits now:
	 * its maps are going (exit_mm), and its exit event may have deleted its entry already; nor
	 * a young one (young_ns): its samples wait for the next drain. One whose unwind tables
	 * tailprofd wrote is known without a lookup (a cold one costs 0.5-1 us at 99 Hz): should
	 * tailprofd have dropped it from known_procs (its cap), this sample is read at the next
	 * drain rather than at once. */
	known = tables_known ? NULL : bpf_map_lookup_elem(&known_procs, &s->hdr.pid);
	unknown = !tables_known && (!known || *known != s->hdr.start_ns) &&
		  !(task->flags & TP_PF_EXITING);
	if (unknown && young_ns && s->hdr.start_ns >= young_since_ns &&
	    task->se.sum_exec_runtime < young_ns) {
		unknown = false;
		s->flags |= TP_SAMPLE_YOUNG;
	}
	n = TP_SAMPLE_HDR_SIZE + (nk + nu + 2 * (s->nr_python & 127)) * 8;
	if (n > sizeof(*s))
		n = sizeof(*s);
	/* so are new mappings the unwinder needs and new Python code */
	if (bpf_ringbuf_output(
		&events, s, n,
		wakeup_flags(unknown || (s->flags & (TP_SAMPLE_UNWIND_RESCAN | TP_SAMPLE_PY_NEW)))))
		count(ts, TP_M_RINGBUF_FULL);
	else if (unknown)
		tp_mark_known(s->hdr.pid, s->hdr.start_ns);
	if (bench_pid && s->hdr.pid == bench_pid) {
		__sync_fetch_and_add(&bench_cost[0], bpf_ktime_get_ns() - ts);
		__sync_fetch_and_add(&bench_cost[1], 1);
	}
	return 0;
}

/* Sends ev (size bytes, kind set), an exec or exit record of task's process, after forgetting
 * the process's unwind tables (unless new_tables: an exec that set the new image's), then forgets
 * that user space knows the process, and its Python interpreter. Returns whether the record was
 * sent. */
static __always_inline bool notify(struct task_struct *task, struct tp_event_hdr *ev, __u32 size,
				   bool new_tables)
{
	bool sent = true;

	ev->pid = task->tgid;
	ev->ts_ns = bpf_ktime_get_ns();
	ev->start_ns = process_start_ns(task);
	/* the old image's mappings must not walk the new one's stacks (same pid and start); an
	 * exec's new_tables replaced them already */
	if (unwind_tables_on && !new_tables && bpf_map_lookup_elem(&unwind_procs, &ev->pid)) {
		/* the epoch first (unwind_epoch), and only for a process that has tables */
		tp_unwind_epoch_bump();
		bpf_map_delete_elem(&unwind_procs, &ev->pid);
	}
	/* The event wakes nobody: a forced wake-up costs some 20 us (the self-IPI and the
	 * wake-up), and the new image's first sample or block wakes user space anyway. */
	if (bpf_ringbuf_output(&events, ev, size, wakeup_flags(0))) {
		count(ev->ts_ns, TP_M_EVENT_LOST);
		sent = false;
	}
	/* The GC state of the old image or the dead process, here rather than from user space (a
	 * bpf() call per process, and the pid may be reused before user space hears of the exit).
	 * A process that ever opened a GC phase has a gc_pausing entry (gc.bpf.c), kept with its
	 * gc_open entries until now: one lookup for every other process, and only once any phase
	 * ever opened on the host (gc.bpf.c marks TP_LABEL_GC at the first). No thread of the
	 * process can end a pause meanwhile (the exit program runs for the group's last thread,
	 * the exec program after the exec killed the others), so a plain read of its pause count
	 * decides whether it leaves TP_LABEL_GC_PAUSING's count: no atomic exchange, which the
	 * sampler's kernels need not have (5.12). */
	if (tp_label_seen(TP_LABEL_GC)) {
		__u64 *pausing = bpf_map_lookup_elem(&gc_pausing, &ev->pid);

		if (pausing) {
			tp_gc_open_clear(ev->pid);
			if (*pausing)
				tp_label_add(TP_LABEL_GC_PAUSING, -1);
			bpf_map_delete_elem(&gc_pausing, &ev->pid);
		}
	}
	/* After exec the maps must be read again: the next sample of the new image wakes user
	 * space because the process is no longer known (the samples mark it, in this order, so a
	 * sample of the old image cannot mark the new one). Its interpreter, if it had one, is
	 * the old image's: deleted here rather than by a bpf() call of tailprofd per process. */
	bpf_map_delete_elem(&known_procs, &ev->pid);
	if (python_on)
		bpf_map_delete_elem(&py_procs, &ev->pid);
	return sent;
}

/* Whether the cgrp_cset_link whose cgrp_link is at pos is of hierarchy cgroup_v1_hierarchy: its
 * cgroup into *cg then. pos comes from a helper's read (a plain load cannot go back from a member
 * to its struct), so is read with helpers. */
static __always_inline bool v1_link_of(__u64 pos, struct cgroup **cg)
{
	struct cgrp_cset_link *link =
	    (void *)(pos - bpf_core_field_offset(struct cgrp_cset_link, cgrp_link));

	*cg = BPF_CORE_READ(link, cgrp);
	return BPF_CORE_READ(*cg, root, hierarchy_id) == (int)cgroup_v1_hierarchy;
}

/* The kernfs id of task's cgroup in hierarchy cgroup_v1_hierarchy, 0 when not found: a walk of
 * its css_set's cgrp_links, one struct cgrp_cset_link per hierarchy, linked by its cgrp_link
 * (kernel/cgroup/cgroup-internal.h; a v1 named hierarchy has no controller, so no
 * css_set.subsys[] entry leads there). The list is in the order the hierarchies were mounted,
 * the default one first; the named one is mounted first (systemd) or last (this VM kind's init),
 * so the walk takes a link from each end a step, 4 helper reads a link: here (the default
 * hierarchy and 9 v1 ones, name=systemd the last) it reads 2 links where a walk from the front
 * read 10 (its cold memory, not the helper calls, made the fork program 7 us). The css_set of a
 * task that is running its exec, or of a child not yet woken from its fork, is its own: not
 * freed under us. */
static __always_inline __u64 v1_cgroup_id(struct task_struct *task)
{
	struct css_set *cset = BPF_CORE_READ(task, cgroups);
	__u64 head, front, back;
	struct cgroup *cg;

	if (!cgroup_v1_hierarchy || !cset)
		return 0;
	head = (__u64)&cset->cgrp_links;
	front = (__u64)BPF_CORE_READ(cset, cgrp_links.next);
	back = (__u64)BPF_CORE_READ(cset, cgrp_links.prev);
	/* the kernel's CGROUP_SUBSYS_COUNT hierarchies and the named ones: well under 32 */
	for (int i = 0; i < 16 && front && back && front != head; i++) {
		if (v1_link_of(front, &cg))
			return BPF_CORE_READ(cg, kn, id);
		if (back == front) /* the middle link: every one seen */
			break;
		if (v1_link_of(back, &cg))
			return BPF_CORE_READ(cg, kn, id);
		front = (__u64)BPF_CORE_READ((struct list_head *)front, next);
		if (front == back) /* met: every link seen */
			break;
		back = (__u64)BPF_CORE_READ((struct list_head *)back, prev);
	}
	return 0;
}

/* Task's PID namespace (the inode number its ns/pid link shows) and its pid there. */
static __always_inline void pid_ns_of(struct task_struct *task, __u32 *pid_ns, __u32 *ns_pid)
{
	struct pid *tp = task->thread_pid, *up;
	struct pid_namespace *ns = NULL;
	unsigned int level;

	/* the initial namespace: numbers[0], which plain loads reach on every kernel */
	if (tp->level == 0) {
		*ns_pid = tp->numbers[0].nr;
		*pid_ns = tp->numbers[0].ns->ns.inum;
		return;
	}
	/* a nested one: numbers[] past the length Linux 6.1 declares (numbers[1]), by helpers */
	up = BPF_CORE_READ(task, thread_pid);
	level = BPF_CORE_READ(up, level);
	/* the kernel's MAX_PID_NS_LEVEL is 32 */
	bpf_core_read(ns_pid, sizeof(*ns_pid), &up->numbers[level & 31].nr);
	bpf_core_read(&ns, sizeof(ns), &up->numbers[level & 31].ns);
	*pid_ns = BPF_CORE_READ(ns, ns.inum);
}

/* Builds the unwind_procs entry of process ev (a static image) from its layout's tables t,
 * rebased on its start_code and vDSO (tp_layout_table), into layout_scratch. Returns it, or NULL:
 * no tables, or the vDSO below the executable's last mapping (the entry must stay sorted). */
static __always_inline struct tp_proc_mappings *layout_tables(const struct tp_exec *ev,
							      const struct tp_layout_table *t)
{
	__u32 zero = 0, nr = t->nr, vdso = t->vdso;
	struct tp_proc_mappings *m;

	/* a template of another version of the file (rewritten in place: the same inode) */
	if (!unwind_tables_on || nr == 0 || nr > TP_LAYOUT_MAPPINGS || t->size != ev->exe_size)
		return NULL;
	if (vdso != TP_LAYOUT_NO_VDSO && (vdso != nr - 1 || !ev->vdso))
		return NULL;
	m = bpf_map_lookup_elem(&layout_scratch, &zero);
	if (!m)
		return NULL;
	for (__u32 i = 0; i < TP_LAYOUT_MAPPINGS; i++) {
		__u64 base = i == vdso ? ev->vdso : ev->start_code;

		if (i >= nr)
			break;
		m->m[i] = t->m[i];
		m->m[i].start += base;
		m->m[i].end += base;
		m->m[i].bias += base;
		/* sorted and disjoint, as the walker's search needs */
		if (m->m[i].end <= m->m[i].start || (i && m->m[i].start < m->m[i - 1].end))
			return NULL;
	}
	m->start_ns = ev->hdr.start_ns;
	m->nr = nr;
	return m;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_process_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct tp_exec ev = {.hdr.kind = TP_EV_EXEC};
	const unsigned char *name;
	struct tp_layout_table *layout = NULL;
	struct tp_proc_mappings *tables = NULL;
	struct tp_py_exe *py_exe = NULL;
	struct mm_struct *mm;
	struct pt_regs *regs;
	struct file *exe;

	/* what user space would otherwise read from /proc at the process's first sample */
	ev.cgroup_id = bpf_get_current_cgroup_id();
	ev.cgroup_v1_id = v1_cgroup_id(p);
	pid_ns_of(p, &ev.pid_ns, &ev.ns_pid);
	mm = p->mm;
	exe = mm->exe_file;
	name = exe->f_path.dentry->d_name.name;
	if (name && bpf_probe_read_kernel_str(ev.name, sizeof(ev.name), name) < 0)
		ev.name[0] = 0;
	ev.exe_ino = exe->f_inode->i_ino;
	ev.exe_dev = exe->f_inode->i_sb->s_dev;
	ev.exe_size = exe->f_inode->i_size;
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	/* the exec set the user registers to the entry point (start_thread) before this */
	regs = (struct pt_regs *)bpf_task_pt_regs(p);
	if (regs)
		ev.entry_ip = PT_REGS_IP_CORE(regs);
	ev.start_code = mm->start_code;
	ev.end_code = mm->end_code;
	/* a helper's read: a plain load of a void * is typed memory that arithmetic may not use */
	ev.vdso = (__u64)BPF_CORE_READ(mm, context.vdso);
	/* a static image whose layout tailprofd knows: its maps need no read */
	if (ev.entry_ip && ev.entry_ip >= ev.start_code && ev.entry_ip < ev.end_code) {
		struct tp_file_key k = {.ino = ev.exe_ino, .dev = ev.exe_dev};

		layout = bpf_map_lookup_elem(&static_layouts, &k);
		if (layout) {
			ev.flags |= TP_EXEC_LAYOUT_KNOWN;
			ev.hdr.pid = p->tgid;
			ev.hdr.start_ns = process_start_ns(p);
			tables = layout_tables(&ev, layout);
		}
	}
	/* the new image is in none of the old one's stages (their exits will never run) */
	bpf_task_storage_delete(&stage_stacks, p);
	/* With its layout's tables, its unwind tables are set now, in place of the old image's
	 * (TP_EXEC_TABLES_SET), and once the record is sent it is marked known: its first sample
	 * wakes nobody, and tailprofd takes the entry over at this record (in the ring buffer
	 * before any of its samples; a lost record leaves it unknown: its first sample wakes
	 * tailprofd, which reads it). Without them its first sample wakes tailprofd as any new
	 * process's does, so that its tables are loaded while it runs (a short-lived process's
	 * stacks would otherwise be walked by frame pointers to its end). */
	if (tables) {
		/* the epoch first (unwind_epoch); the entry's gen is the new epoch's, its top bit
		 * set (tailprofd's count from 1): caches of another image's walks never match it */
		tables->gen = TP_GEN_FROM_LAYOUT | (__u32)tp_unwind_epoch_bump();
		if (!bpf_map_update_elem(&unwind_procs, &ev.hdr.pid, tables, BPF_ANY))
			ev.flags |= TP_EXEC_TABLES_SET;
	}
	/* an interpreter executable tailprofd knows: its Python frames from its first sample, not
	 * from the one that has tailprofd find the interpreter in its maps (and wakes it again for
	 * that sample's new Python code) */
	if (python_on && ev.start_code) {
		struct tp_file_key k = {.ino = ev.exe_ino, .dev = ev.exe_dev};

		py_exe = bpf_map_lookup_elem(&py_exes, &k);
		if (py_exe)
			ev.flags |= TP_EXEC_PY_SET;
	}
	if (notify(p, &ev.hdr, sizeof(ev), ev.flags & TP_EXEC_TABLES_SET) &&
	    (ev.flags & TP_EXEC_TABLES_SET))
		tp_mark_known(ev.hdr.pid, ev.hdr.start_ns);
	/* after notify(), which deleted the old image's entry */
	if (py_exe) {
		struct tp_py_proc e = {
		    .start_ns = ev.hdr.start_ns,
		    .runtime = ev.start_code + py_exe->runtime_off,
		    .version = py_exe->version,
		    .image_lo = ev.start_code + py_exe->image_lo_off,
		    .image_hi = ev.start_code + py_exe->image_hi_off,
		    .image_key = py_exe->image_key,
		};

		bpf_map_update_elem(&py_procs, &ev.hdr.pid, &e, BPF_ANY);
	}
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit, struct task_struct *p)
{
	struct tp_event_hdr ev = {.kind = TP_EV_EXIT};

	__u32 pid = p->tgid;

	/* Only when the whole thread group is gone. */
	if (p->signal->live.counter != 0)
		return 0;
	bpf_map_delete_elem(&live_procs, &pid);
	notify(p, &ev, sizeof(ev), false);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_process_fork, struct task_struct *parent, struct task_struct *child)
{
	struct tp_fork ev = {};
	const unsigned char *name;

	/* threads share their process's maps: only new processes matter */
	if (child->pid != child->tgid)
		return 0;
	ev.hdr.kind = TP_EV_FORK;
	ev.hdr.pid = child->tgid;
	ev.hdr.ts_ns = bpf_ktime_get_ns();
	ev.hdr.start_ns = process_start_ns(child);
	ev.parent_pid = parent->tgid;
	ev.parent_start_ns = process_start_ns(parent);
	/* what user space would otherwise read from /proc if the child is sampled before it execs
	 * (it has not run yet: its css_set and pid are its own) */
	ev.cgroup_id = child->cgroups->dfl_cgrp->kn->id;
	ev.cgroup_v1_id = v1_cgroup_id(child);
	pid_ns_of(child, &ev.pid_ns, &ev.ns_pid);
	name = child->mm ? child->mm->exe_file->f_path.dentry->d_name.name : NULL;
	if (name && bpf_probe_read_kernel_str(ev.name, sizeof(ev.name), name) < 0)
		ev.name[0] = 0;
	/* before the child runs: whatever user space reads of the pid later is this process's or a
	 * later one's (no prealloc'd slot free: not added) */
	if (bpf_map_update_elem(&live_procs, &ev.hdr.pid, &ev.hdr.start_ns, BPF_ANY))
		live_procs_full = 1;
	/* no wakeup: it only matters if the child's maps cannot be read when it is sampled */
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), wakeup_flags(0)))
		count(ev.hdr.ts_ns, TP_M_EVENT_LOST);
	return 0;
}
