// SPDX-License-Identifier: GPL-2.0-only
/* The Prometheus text of /metrics (exposition format 0.0.4): the collector's, symbolizer's,
 * unwinder's, scheduler programs' and GC tracking's figures, and those the stages, spikes and
 * feature modules render themselves. */
#include "query_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroups.h"
#include "collector.h"
#include "feature_table.h"
#include "gc.h"
#include "gc_probes.h"
#include "resource_limits.h"
#include "loader.h"
#include "mmap_records.h"
#include "proc_maps.h"
#include "push.h"
#include "python.h"
#include "snapshots.h"
#include "source_lines.h"
#include "spikes.h"
#include "stages.h"
#include "sysinfo.h"
#include "textbuf.h"

/* One line per CPU that was ever sampled: its received or its expected samples. */
static void put_per_cpu(struct text *t, struct collector *c, const char *name, bool expected)
{
	for (uint32_t cpu = 0; cpu < collector__nr_cpus(c); cpu++) {
		uint64_t r, e;

		if (collector__cpu_totals(c, cpu, &r, &e))
			text_put(t, "%s{cpu=\"%u\"} %" PRIu64 "\n", name, cpu, expected ? e : r);
	}
}

/* GC totals over the windows held (per runtime), and the GC probes' own figures. */
static void put_gc_metrics(struct text *t, const struct query_ctx *ctx)
{
	struct window_ring *r = collector__ring(ctx->collector);
	struct gc_totals tot[TP_GC_RUNTIME_NR] = {0};
	struct loader_prog_stats progs[16];
	struct gc_stats gs;
	size_t np;
	static const char *const metric_names[TP_GCM_NR] = {
	    [TP_GCM_HITS] = "hits",	      [TP_GCM_EVENTS_LOST] = "events_lost",
	    [TP_GCM_UNMATCHED] = "unmatched", [TP_GCM_OPEN_FULL] = "open_full",
	    [TP_GCM_ABANDONED] = "abandoned",
	};

	for (size_t i = 0; i < window_ring__count(r); i++) {
		const struct window *w = window_ring__get(r, i);

		for (size_t k = 0; w->gc && k < w->gc->nr; k++)
			if (w->gc->v[k].runtime < TP_GC_RUNTIME_NR)
				gc_totals__add(&tot[w->gc->v[k].runtime], &w->gc->v[k]);
	}
	gc__stats(ctx->gc, &gs);
	text_metric(t, "tailprof_gc_pauses_total", "counter",
		    "GC pauses (JVM and CPython collections, Go stop-the-world), by runtime.");
	for (unsigned rt = 1; rt < TP_GC_RUNTIME_NR; rt++)
		text_put(t, "tailprof_gc_pauses_total{runtime=\"%s\"} %" PRIu64 "\n",
			 gc_runtime_name(rt), gs.pauses[rt]);
	text_metric(t, "tailprof_gc_pause_seconds_total", "counter",
		    "Time in GC pauses, by runtime.");
	for (unsigned rt = 1; rt < TP_GC_RUNTIME_NR; rt++)
		text_put(t, "tailprof_gc_pause_seconds_total{runtime=\"%s\"} %.9f\n",
			 gc_runtime_name(rt), gs.pause_ns[rt] / 1e9);
	text_metric(t, "tailprof_gc_max_pause_seconds", "gauge",
		    "Longest GC pause in the windows held, by runtime.");
	for (unsigned rt = 1; rt < TP_GC_RUNTIME_NR; rt++)
		text_put(t, "tailprof_gc_max_pause_seconds{runtime=\"%s\"} %.9f\n",
			 gc_runtime_name(rt), tot[rt].max_pause_ns / 1e9);
	text_metric(t, "tailprof_gc_probes_attached", "gauge",
		    "GC probes attached now (USDT and uprobes, the dlopen uretprobe included).");
	text_put(t, "tailprof_gc_probes_attached %d\n", gs.probes_attached);
	text_metric(t, "tailprof_gc_attaches_total", "counter",
		    "Objects GC probes were attached to.");
	text_put(t, "tailprof_gc_attaches_total %" PRIu64 "\n", gs.attaches);
	text_metric(t, "tailprof_gc_detaches_total", "counter",
		    "Objects GC probes were detached from (no process used them any more).");
	text_put(t, "tailprof_gc_detaches_total %" PRIu64 "\n", gs.detaches);
	text_metric(t, "tailprof_gc_scans_total", "counter", "Process maps read for GC discovery.");
	text_put(t, "tailprof_gc_scans_total %" PRIu64 "\n", gs.scans);
	text_metric(t, "tailprof_gc_exec_scans_skipped_total", "counter",
		    "Execs whose maps were not read at once: the executable was classified before "
		    "(a runtime is recorded by its identity; the libraries are looked at 300 ms "
		    "later).");
	text_put(t, "tailprof_gc_exec_scans_skipped_total %" PRIu64 "\n", gs.exec_scans_skipped);
	text_metric(t, "tailprof_gc_later_looks_shared_total", "counter",
		    "Looks at a new image's libraries 300 ms after its exec made in the maps the "
		    "symbolizer had read after its dynamic loader's work, with no read of their "
		    "own.");
	text_put(t, "tailprof_gc_later_looks_shared_total %" PRIu64 "\n", gs.later_looks_shared);
	text_metric(t, "tailprof_gc_bpf_total", "counter",
		    "GC program counters: probe hits, events lost (ring buffer full), ends without "
		    "a begin, phases not timed (map full), begins whose end was missed.");
	for (int m = 0; m < TP_GCM_NR; m++)
		text_put(t, "tailprof_gc_bpf_total{counter=\"%s\"} %" PRIu64 "\n", metric_names[m],
			 gs.metrics[m]);
	text_metric(t, "tailprof_gc_late_total", "counter",
		    "GC events older than every window held (not kept).");
	text_put(t, "tailprof_gc_late_total %" PRIu64 "\n", gs.late);
	np = ctx->gc_probes ? gc_probes__prog_stats(ctx->gc_probes, progs, 16) : 0;
	text_metric(t, "tailprof_gc_bpf_run_time_seconds_total", "counter",
		    "Run time of each GC BPF program (BPF_ENABLE_STATS; 0 with --bpf-stats=off).");
	for (size_t i = 0; i < np; i++)
		text_put(t, "tailprof_gc_bpf_run_time_seconds_total{program=\"%s\"} %.9f\n",
			 progs[i].name, progs[i].run_time_ns / 1e9);
	text_metric(t, "tailprof_gc_bpf_run_count_total", "counter",
		    "Runs of each GC BPF program (0 with --bpf-stats=off).");
	for (size_t i = 0; i < np; i++)
		text_put(t, "tailprof_gc_bpf_run_count_total{program=\"%s\"} %" PRIu64 "\n",
			 progs[i].name, progs[i].run_cnt);
}

/* The table unwinder: what BPF counted, and what user space holds. */
static void put_unwind_metrics(struct text *t, const struct collector_status *st)
{
	static const struct {
		enum tp_metric m;
		const char *name, *help;
	} bpf[] = {
	    {TP_M_UNWIND_STACKS, "tailprof_unwind_stacks_total",
	     "User stacks walked with unwind tables."},
	    {TP_M_UNWIND_FP_STACKS, "tailprof_unwind_fp_stacks_total",
	     "User stacks walked with unwind tables that took frame-pointer steps (code "
	     "without unwind information)."},
	};
	static const struct {
		enum tp_metric m;
		const char *reason;
	} stops[] = {
	    {TP_M_UNWIND_UNSUPPORTED, "unsupported_rule"},
	    {TP_M_UNWIND_NO_MAPPING, "no_mapping"},
	    {TP_M_UNWIND_READ_FAILED, "read_failed"},
	    {TP_M_UNWIND_BAD_FRAME, "bad_frame"},
	};
	const struct unwinder_stats *u = &st->unwind;

	for (size_t i = 0; i < sizeof(bpf) / sizeof(bpf[0]); i++) {
		text_metric(t, bpf[i].name, "counter", bpf[i].help);
		text_put(t, "%s %" PRIu64 "\n", bpf[i].name,
			 st->unwind_bpf[bpf[i].m - TP_M_UNWIND_STACKS]);
	}
	text_metric(
	    t, "tailprof_unwind_stops_total", "counter",
	    "Table walks that ended early, by reason (the rest reached the outermost frame or "
	    "were truncated).");
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		text_put(t, "tailprof_unwind_stops_total{reason=\"%s\"} %" PRIu64 "\n",
			 stops[i].reason, st->unwind_bpf[stops[i].m - TP_M_UNWIND_STACKS]);
	text_metric(t, "tailprof_unwind_processes", "gauge",
		    "Processes with unwind mappings in BPF.");
	text_put(t, "tailprof_unwind_processes %" PRIu64 "\n", u->processes);
	text_metric(t, "tailprof_unwind_tables", "gauge",
		    "Unwind tables (one per object) in BPF, idle objects' included.");
	text_put(t, "tailprof_unwind_tables %" PRIu64 "\n", u->tables);
	text_metric(t, "tailprof_unwind_table_rows", "gauge", "Rows of the unwind tables in BPF.");
	text_put(t, "tailprof_unwind_table_rows %" PRIu64 "\n", u->table_rows);
	text_metric(t, "tailprof_unwind_table_bytes", "gauge",
		    "BPF memory of the unwind tables' rows (8 bytes a row).");
	text_put(t, "tailprof_unwind_table_bytes %" PRIu64 "\n",
		 u->table_rows * sizeof(struct tp_unwind_row));
	text_metric(t, "tailprof_unwind_capacity_bytes", "gauge",
		    "BPF memory reserved for unwind tables (--unwind-memory).");
	text_put(t, "tailprof_unwind_capacity_bytes %" PRIu64 "\n",
		 u->capacity_rows * sizeof(struct tp_unwind_row));
	text_metric(t, "tailprof_unwind_objects_without_table_total", "counter",
		    "Objects walked by frame pointers instead, by reason.");
	text_put(
	    t, "tailprof_unwind_objects_without_table_total{reason=\"over_budget\"} %" PRIu64 "\n",
	    u->over_budget);
	text_put(t, "tailprof_unwind_objects_without_table_total{reason=\"no_cfi\"} %" PRIu64 "\n",
		 u->no_cfi);
	text_put(t,
		 "tailprof_unwind_objects_without_table_total{reason=\"unreadable\"} %" PRIu64 "\n",
		 u->failed);
	text_metric(t, "tailprof_unwind_rescans_total", "counter",
		    "Maps re-read because BPF met a PC in no known mapping (dlopen, JIT).");
	text_put(t, "tailprof_unwind_rescans_total %" PRIu64 "\n", u->rescans);
	text_metric(
	    t, "tailprof_unwind_rescans_unchanged_total", "counter",
	    "Maps re-read for a PC in no known mapping that found the same mappings: a broken "
	    "frame chain's garbage. That process's next rescan waits twice as long (up to "
	    "16 times).");
	text_put(t, "tailprof_unwind_rescans_unchanged_total %" PRIu64 "\n", u->rescans_same);
	text_metric(t, "tailprof_unwind_processes_dropped_total", "counter",
		    "Processes left to frame pointers: --unwind-max-processes reached.");
	text_put(t, "tailprof_unwind_processes_dropped_total %" PRIu64 "\n", u->procs_dropped);
	text_metric(t, "tailprof_unwind_build_seconds_total", "counter",
		    "Time spent building unwind tables.");
	text_put(t, "tailprof_unwind_build_seconds_total %.6f\n", u->build_ns / 1e9);
	text_metric(t, "tailprof_unwind_table_builds_total", "counter",
		    "Unwind tables built (once per object while it stays known).");
	text_put(t, "tailprof_unwind_table_builds_total %" PRIu64 "\n", u->builds);
	text_metric(t, "tailprof_unwind_idle_objects", "gauge",
		    "Objects no known process maps, kept with their tables for the next one.");
	text_put(t, "tailprof_unwind_idle_objects %" PRIu64 "\n", u->idle_objects);
	text_metric(t, "tailprof_unwind_idle_evicted_total", "counter",
		    "Idle objects freed for a new table's room or past the cap of 1024.");
	text_put(t, "tailprof_unwind_idle_evicted_total %" PRIu64 "\n", u->idle_evicted);
	text_metric(t, "tailprof_unwind_layout_tables_total", "counter",
		    "Static executables' layouts given the unwind tables of a process made from "
		    "them: their next processes get theirs at exec.");
	text_put(t, "tailprof_unwind_layout_tables_total %" PRIu64 "\n", u->layout_tables);
	text_metric(t, "tailprof_unwind_layout_tables", "gauge",
		    "Static executables' layouts whose unwind tables BPF has now (their objects "
		    "kept; at most 256, each let go after a minute without a process).");
	text_put(t, "tailprof_unwind_layout_tables %" PRIu64 "\n", u->layout_pins);
}

/* Prometheus le bounds of the run-queue histogram: 2^k microseconds, k = 0 .. 22 (1 us to 4.2 s),
 * the power-of-two buckets runqlat prints (there in integer microseconds, [2^k, 2^(k+1))). */
#define RUNQ_LE_MAX_LOG2_US 22

/* A counter with one label: n values, each the count of scheduler metric metrics[i] (TP_SCH_*)
 * under label="labels[i]". */
static void put_sched_counter(struct text *t, const struct collector_status *st, const char *name,
			      const char *help, const char *label, size_t n,
			      const char *const labels[], const int metrics[])
{
	text_metric(t, name, "counter", help);
	for (size_t i = 0; i < n; i++)
		text_put(t, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, labels[i],
			 metrics[i] < 0 ? 0 : st->sched_metrics[metrics[i]]);
}

static void put_sched_metrics(struct text *t, const struct query_ctx *ctx,
			      const struct collector_status *st)
{
	static const char *const reasons[TP_SCH_NR] = {
	    [TP_SCH_NO_STORAGE] = "no_storage",		  [TP_SCH_PENDING_FULL] = "pending_full",
	    [TP_SCH_SYSCALL_CHANGED] = "syscall_changed", [TP_SCH_RINGBUF_FULL] = "ringbuf_full",
	    [TP_SCH_PROCS_FULL] = "procs_full",		  [TP_SCH_STALE_BLOCK] = "stale_block",
	    [TP_SCH_RETURN_BUSY] = "return_busy",
	};
	static const char *const sources[] = {"cache", "switch_out", "walk"};
	const uint64_t *b = collector__runq_buckets(ctx->collector);
	struct loader_prog_stats progs[16];
	size_t nr = ctx->loader ? loader__prog_stats(ctx->loader, progs, 16) : 0;
	bool fexit;

	text_metric(t, "tailprof_context_switches_total", "counter",
		    "Context switches seen (runs of the sched_switch program; 0 with "
		    "--bpf-stats=off).");
	for (size_t p = 0; p < nr; p++)
		if (!strcmp(progs[p].name, "sched_switch"))
			text_put(t, "tailprof_context_switches_total %" PRIu64 "\n",
				 progs[p].run_cnt);
	uint64_t cum = 0;
	uint32_t i = 0;

	text_metric(t, "tailprof_offcpu_samples_total", "counter",
		    "Blocks at least --offcpu-min long, stored with their stacks.");
	text_put(t, "tailprof_offcpu_samples_total %" PRIu64 "\n", st->offcpu_samples);
	text_metric(t, "tailprof_offcpu_seconds_total", "counter",
		    "Blocked time of the blocks stored with their stacks.");
	text_put(t, "tailprof_offcpu_seconds_total %.9f\n", st->offcpu_ns / 1e9);
	text_metric(t, "tailprof_short_blocks_total", "counter",
		    "Blocks shorter than --offcpu-min (counted per process, no stacks).");
	text_put(t, "tailprof_short_blocks_total %" PRIu64 "\n", st->short_blocks);
	text_metric(t, "tailprof_short_blocks_seconds_total", "counter",
		    "Blocked time of the blocks shorter than --offcpu-min.");
	text_put(t, "tailprof_short_blocks_seconds_total %.9f\n", st->short_blocked_ns / 1e9);
	text_metric(t, "tailprof_sched_drops_total", "counter",
		    "Scheduler events not recorded in full, by reason.");
	for (int r = 0; r < TP_SCH_NR; r++)
		if (reasons[r])
			text_put(t, "tailprof_sched_drops_total{reason=\"%s\"} %" PRIu64 "\n",
				 reasons[r], st->sched_metrics[r]);
	put_sched_counter(
	    t, st, "tailprof_offcpu_kernel_stacks_total",
	    "Kernel stacks of captured blocks, by source: cache (return addresses "
	    "verified in place at switch-in), switch_out (the thread's own last one, "
	    "verified where it blocked) or walk (bpf_get_task_stack).",
	    "source", 3, sources,
	    (const int[]){TP_SCH_KSTACK_CACHED, TP_SCH_KSTACK_EARLY, TP_SCH_KSTACK_WALKED});
	put_sched_counter(
	    t, st, "tailprof_offcpu_user_stacks_total",
	    "User stacks of captured blocks walked with unwind tables, by source: cache "
	    "(every word the walk read reads the same), switch_out (the thread's own "
	    "last one, verified so where it blocked) or walk.",
	    "source", 3, sources,
	    (const int[]){TP_SCH_USTACK_CACHED, TP_SCH_USTACK_EARLY, TP_SCH_USTACK_WALKED});
	/* (BPF counts the blocks held for the return from schedule() or the syscall as one) */
	fexit = loader__fexit_schedule(ctx->loader);
	put_sched_counter(
	    t, st, "tailprof_offcpu_user_stack_path_total",
	    "Captured blocks of user threads, by where their user stack was taken: at switch-out "
	    "(predicted: the thread's last captured block had the same registers), by a task "
	    "work, on the return from schedule() (fexit_schedule) or from the syscall (sys_exit) "
	    "on the thread's way back to user space.",
	    "path", 4,
	    (const char *const[]){"switch_out", "task_work", "fexit_schedule", "sys_exit"},
	    (const int[]){TP_SCH_EARLY_USTACK, TP_SCH_TASK_WORK, fexit ? TP_SCH_SYS_EXIT : -1,
			  fexit ? -1 : TP_SCH_SYS_EXIT});
	text_metric(t, "tailprof_offcpu_early_stacks_wasted_total", "counter",
		    "User stacks taken at switch-out for blocks that turned out shorter than "
		    "--offcpu-min (mispredicted).");
	text_put(t, "tailprof_offcpu_early_stacks_wasted_total %" PRIu64 "\n",
		 st->sched_metrics[TP_SCH_EARLY_WASTED]);
	text_metric(
	    t, "tailprof_offcpu_repeats_total", "counter",
	    "Captured blocks sent without frames: both stacks verified where the thread blocked "
	    "as those of its last sample, which tailprofd kept.");
	text_put(t, "tailprof_offcpu_repeats_total %" PRIu64 "\n",
		 st->sched_metrics[TP_SCH_REPEAT]);
	put_sched_counter(
	    t, st, "tailprof_offcpu_blocked_again_total",
	    "Blocks in a syscall whose earlier captured block still waits for its user "
	    "stack, by kernel path: same (one wait: added to that sample) or other (a "
	    "page fault in the copy out, say: a sample of its own, without user stack).",
	    "kernel_path", 2, (const char *const[]){"same", "other"},
	    (const int[]){TP_SCH_AGAIN_SAME, TP_SCH_AGAIN_OTHER});
	text_metric(
	    t, "tailprof_offcpu_switch_sp_mispredicted_total", "counter",
	    "Kernel stacks verified at switch-out and not used: the switch saved another stack "
	    "pointer than foreseen (the kernel stack is then taken at switch-in).");
	text_put(t, "tailprof_offcpu_switch_sp_mispredicted_total %" PRIu64 "\n",
		 st->sched_metrics[TP_SCH_KSTACK_EARLY_MISSED]);
	text_metric(t, "tailprof_runq_latency_seconds", "histogram",
		    "Time runnable threads waited for a CPU (wake-up or preemption to running).");
	for (int k = 0; k <= RUNQ_LE_MAX_LOG2_US; k++) {
		uint64_t le_ns = 1000ull << k;

		/* a log-linear bucket counts as its midpoint (within 1.6%, tp_hist.h) */
		for (; i < TP_HIST_OVERFLOW && tp_hist_value(i) <= le_ns; i++)
			cum += b[i];
		text_put(t, "tailprof_runq_latency_seconds_bucket{le=\"%.9g\"} %" PRIu64 "\n",
			 le_ns / 1e9, cum);
	}
	text_put(t, "tailprof_runq_latency_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n",
		 st->runq_count);
	text_put(t, "tailprof_runq_latency_seconds_sum %.9f\n", st->runq_sum_ns / 1e9);
	text_put(t, "tailprof_runq_latency_seconds_count %" PRIu64 "\n", st->runq_count);
}

static void put_source_lines_metrics(struct text *t)
{
	struct source_lines_stats sl;

	source_lines__stats(&sl);
	const struct {
		const char *name, *type, *help;
		uint64_t value;
	} m[] = {
	    {"tailprof_source_lines_bytes", "gauge",
	     "Heap bytes of the source lines cached for profiles (DWARF, all objects).", sl.bytes},
	    {"tailprof_source_lines_objects", "gauge", "Objects with source lines cached.",
	     sl.objects},
	    {"tailprof_dwarf_reads_total", "counter",
	     "DWARF files opened by profile queries to read source lines.", sl.dwarf_reads},
	    {"tailprof_dwarf_read_failures_total", "counter",
	     "Objects whose DWARF could not be read any more (file gone or replaced): no source "
	     "lines.",
	     sl.dwarf_failures},
	    {"tailprof_source_lines_evictions_total", "counter",
	     "Objects' source line caches dropped for the memory budget.", sl.evicted_objects},
	    {"tailprof_source_lines_deferred_total", "counter",
	     "Frames a profile left without source lines: its time for reading DWARF was spent "
	     "(later profiles read on).",
	     sl.deferred},
	};

	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		text_metric(t, m[i].name, m[i].type, m[i].help);
		text_put(t, "%s %" PRIu64 "\n", m[i].name, m[i].value);
	}
}

char *query__metrics_text(const struct query_ctx *ctx)
{
	struct text t = {.cap = 8192};
	struct collector_status st;
	struct loader_prog_stats progs[32];
	size_t nr_progs = 0;

	t.buf = malloc(t.cap);
	if (!t.buf)
		return NULL;
	t.buf[0] = 0;
	collector__status(ctx->collector, &st);

	text_metric(&t, "tailprof_up", "gauge",
		    "1 once probes are attached and the first drain is done.");
	text_put(&t, "tailprof_up %d\n", st.healthy);
	text_metric(&t, "tailprof_samples_total", "counter",
		    "Samples with stacks stored in windows.");
	text_put(&t, "tailprof_samples_total %" PRIu64 "\n", st.samples);
	text_metric(&t, "tailprof_idle_samples_total", "counter",
		    "Samples of idle CPUs (no stack).");
	text_put(&t, "tailprof_idle_samples_total %" PRIu64 "\n", st.idle_samples);
	text_metric(&t, "tailprof_received_samples_total", "counter",
		    "Samples the BPF program saw, per CPU.");
	put_per_cpu(&t, ctx->collector, "tailprof_received_samples_total", false);
	text_metric(
	    &t, "tailprof_expected_samples_total", "counter",
	    "Samples expected from the frequency and the time each CPU was sampled, per CPU.");
	put_per_cpu(&t, ctx->collector, "tailprof_expected_samples_total", true);
	text_metric(&t, "tailprof_drops_total", "counter", "Samples or stacks lost, by reason.");
	for (int d = 0; d < DROP_NR; d++)
		text_put(&t, "tailprof_drops_total{reason=\"%s\"} %" PRIu64 "\n",
			 window_drop_names[d], st.drops[d]);
	text_metric(&t, "tailprof_windows", "gauge", "Windows held in the ring.");
	text_put(&t, "tailprof_windows %u\n", st.windows);
	text_metric(&t, "tailprof_windows_max", "gauge",
		    "Capacity of the ring (retention / window).");
	text_put(&t, "tailprof_windows_max %u\n", st.max_windows);
	text_metric(&t, "tailprof_cpus_sampled", "gauge", "CPUs with an attached cpu-clock event.");
	text_put(&t, "tailprof_cpus_sampled %d\n", st.cpus_sampled);
	text_metric(&t, "tailprof_stacks", "gauge", "Distinct stacks interned.");
	text_put(&t, "tailprof_stacks %" PRIu64 "\n", st.stacks);
	text_metric(&t, "tailprof_objects", "gauge", "ELF objects with cached symbol tables.");
	text_put(&t, "tailprof_objects %" PRIu64 "\n", st.sym.objects);
	text_metric(&t, "tailprof_processes", "gauge", "Processes with cached memory maps.");
	text_put(&t, "tailprof_processes %" PRIu64 "\n", st.sym.processes);
	{
		uint64_t shared, read, queried;

		proc_maps__read_stats(&shared, &read, &queried);
		text_metric(&t, "tailprof_cgroups_overflow_total", "counter",
			    "Cgroup paths not kept as labels: the table of 16,384 was full.");
		text_put(&t, "tailprof_cgroups_overflow_total %" PRIu64 "\n", cgroups__overflow());
		text_metric(&t, "tailprof_maps_reads_total", "counter",
			    "/proc/PID/maps reads of a drain, from the file or shared with another "
			    "module's read of the same drain.");
		text_put(&t,
			 "tailprof_maps_reads_total{source=\"file\"} %" PRIu64 "\n"
			 "tailprof_maps_reads_total{source=\"shared\"} %" PRIu64 "\n",
			 read, shared);
		if (proc_maps__records()) {
			struct mmap_records_stats rs;
			uint64_t checked, mismatched;

			mmap_records__stats(proc_maps__records(), &rs);
			proc_maps__records_check_stats(&checked, &mismatched);
			text_put(&t, "tailprof_maps_reads_total{source=\"records\"} %" PRIu64 "\n",
				 rs.served);
			text_metric(
			    &t, "tailprof_mmap_records_total", "counter",
			    "perf mmap records of executable mappings taken (new processes' "
			    "maps without a /proc read).");
			text_put(&t, "tailprof_mmap_records_total %" PRIu64 "\n", rs.records);
			text_metric(
			    &t, "tailprof_mmap_records_lost_total", "counter",
			    "perf mmap records the kernel could not write (a full ring): the "
			    "processes' maps were read from /proc again.");
			text_put(&t, "tailprof_mmap_records_lost_total %" PRIu64 "\n", rs.lost);
			text_metric(
			    &t, "tailprof_mmap_records_exited_total", "counter",
			    "Maps the mmap records gave of processes that had exited (samples "
			    "symbolized after their process ended, without a wake-up to read it).");
			text_put(&t, "tailprof_mmap_records_exited_total %" PRIu64 "\n",
				 rs.served_exited);
			text_metric(&t, "tailprof_mmap_records_processes", "gauge",
				    "Processes whose executable mappings the mmap records hold.");
			text_put(&t, "tailprof_mmap_records_processes %" PRIu64 "\n", rs.processes);
			if (checked) {
				text_metric(
				    &t, "tailprof_mmap_records_checked_total", "counter",
				    "Maps given by the records and checked against /proc "
				    "(TAILPROF_MAPS_RECORDS_CHECK=1), and those that missed a "
				    "mapping /proc had.");
				text_put(&t,
					 "tailprof_mmap_records_checked_total{result=\"ok\"} "
					 "%" PRIu64 "\n"
					 "tailprof_mmap_records_checked_total{result=\"mismatch\"} "
					 "%" PRIu64 "\n",
					 checked - mismatched, mismatched);
			}
		}
		text_metric(&t, "tailprof_maps_queried_total", "counter",
			    "Maps reads from the file done with PROCMAP_QUERY (Linux 6.11): the "
			    "executable mappings alone, no text formatted or parsed.");
		text_put(&t, "tailprof_maps_queried_total %" PRIu64 "\n", queried);
	}
	text_metric(&t, "tailprof_unresolved_frames_total", "counter",
		    "User frames in no known mapping.");
	text_put(&t, "tailprof_unresolved_frames_total %" PRIu64 "\n", st.sym.unresolved);
	text_metric(&t, "tailprof_trampoline_frames_total", "counter",
		    "Kernel frames left out of stacks because they are in BPF trampolines (the "
		    "return from schedule() puts one on every blocked thread's kernel stack).");
	text_put(&t, "tailprof_trampoline_frames_total %" PRIu64 "\n", st.sym.trampoline_frames);
	if (st.python) {
		text_metric(&t, "tailprof_python_unsupported_total", "counter",
			    "Processes with a CPython whose frames are not walked, by reason.");
		for (int i = 0; i < PY_UNSUP_NR; i++)
			text_put(&t,
				 "tailprof_python_unsupported_total{reason=\"%s\"} %" PRIu64 "\n",
				 python_unsupported_names[i], st.py.unsupported[i]);
		text_metric(&t, "tailprof_python_processes", "gauge",
			    "Processes whose Python frames are walked.");
		text_put(&t, "tailprof_python_processes %" PRIu64 "\n", st.py.processes);
		text_metric(&t, "tailprof_python_processes_from_exec_total", "counter",
			    "Python processes given to the frame walker at their exec, their "
			    "executable being an interpreter found before (no maps read).");
		text_put(&t, "tailprof_python_processes_from_exec_total %" PRIu64 "\n",
			 st.py.from_exec);
		text_metric(&t, "tailprof_python_interpreter_executables", "gauge",
			    "Interpreter executables the exec program gives its processes' "
			    "interpreter from (at most 64).");
		text_put(&t, "tailprof_python_interpreter_executables %" PRIu64 "\n", st.py.exes);
		text_metric(&t, "tailprof_python_frames_total", "counter",
			    "Python frames resolved to a function, file and line.");
		text_put(&t, "tailprof_python_frames_total %" PRIu64 "\n", st.py.frames);
		text_metric(&t, "tailprof_python_dropped_frames_total", "counter",
			    "Python frames dropped: still in their prologue (incomplete), or read "
			    "while their frame changed (not_code).");
		text_put(&t,
			 "tailprof_python_dropped_frames_total{reason=\"incomplete\"} %" PRIu64 "\n"
			 "tailprof_python_dropped_frames_total{reason=\"not_code\"} %" PRIu64 "\n",
			 st.py.incomplete, st.py.not_code);
		text_metric(&t, "tailprof_python_code_reads_total", "counter",
			    "Code objects read from processes' memory.");
		text_put(&t, "tailprof_python_code_reads_total %" PRIu64 "\n", st.py.code_reads);
		text_metric(&t, "tailprof_python_code_checks_total", "counter",
			    "Cached code objects read again to check they are the same: once per "
			    "drain tick, and for the frames of a stack new to BPF.");
		text_put(&t, "tailprof_python_code_checks_total %" PRIu64 "\n", st.py.code_checks);
		text_metric(&t, "tailprof_python_code_image_hits_total", "counter",
			    "Frames whose code object, built into the interpreter file (3.11 and "
			    "3.12's frozen modules), was known from an earlier read in any process "
			    "of that file.");
		text_put(&t, "tailprof_python_code_image_hits_total %" PRIu64 "\n",
			 st.py.code_image_hits);
		text_metric(
		    &t, "tailprof_python_new_stacks_total", "counter",
		    "Samples whose Python stack was new to BPF and woke tailprofd to read its "
		    "code objects while the process lives.");
		text_put(&t, "tailprof_python_new_stacks_total %" PRIu64 "\n", st.py.new_stacks);
		text_metric(
		    &t, "tailprof_python_image_stacks_total", "counter",
		    "New stacks wholly in an interpreter file's image (3.11 and 3.12's frozen "
		    "modules), named and marked seen for every process of that file.");
		text_put(&t, "tailprof_python_image_stacks_total %" PRIu64 "\n",
			 st.py.image_stacks);
		text_metric(
		    &t, "tailprof_python_code_read_failures_total", "counter",
		    "Code objects that could not be read (process gone): named by address.");
		text_put(&t, "tailprof_python_code_read_failures_total %" PRIu64 "\n",
			 st.py.code_read_failed);
		text_metric(&t, "tailprof_python_stack_failures_total", "counter",
			    "Samples of a Python process whose thread state or frames could not be "
			    "read.");
		text_put(&t, "tailprof_python_stack_failures_total %" PRIu64 "\n", st.py_failed);
		text_metric(&t, "tailprof_python_truncated_stacks_total", "counter",
			    "Samples whose Python stack went past its depth limit.");
		text_put(&t, "tailprof_python_truncated_stacks_total %" PRIu64 "\n",
			 st.py_truncated);
	}
	text_metric(
	    &t, "tailprof_cut_stacks_total", "counter",
	    "User stacks ended at a return address in no executable mapping (broken frame chain).");
	text_put(&t, "tailprof_cut_stacks_total %" PRIu64 "\n", st.cut_stacks);
	text_metric(
	    &t, "tailprof_folded_stacks_total", "counter",
	    "Samples stored with their stack by function (each frame at its function's start): "
	    "the stacks table was full ([limits] stacks).");
	text_put(&t, "tailprof_folded_stacks_total %" PRIu64 "\n", st.folded_stacks);
	text_metric(
	    &t, "tailprof_fork_fallbacks_total", "counter",
	    "Samples of a child gone before its maps were read, resolved with its parent's.");
	text_put(&t, "tailprof_fork_fallbacks_total %" PRIu64 "\n", st.sym.fork_fallbacks);
	text_metric(
	    &t, "tailprof_fork_borrowed_total", "counter",
	    "Samples of a forked child that had not exec'd, resolved with its parent's maps "
	    "before (or instead of) a read of its own.");
	text_put(&t, "tailprof_fork_borrowed_total %" PRIu64 "\n", st.sym.fork_borrowed);
	text_metric(&t, "tailprof_processes_loaded_total", "counter",
		    "Exec'd processes known to have maps read after their dynamic loader's work: "
		    "read after a sample in code that runs only after it (sample: their "
		    "executable's, or any file's but the loader's), read before such a sample but "
		    "holding the code files an earlier process of the executable mapped once "
		    "loaded (known_set: not read again), or with no code mapped but their "
		    "executable's (static).");
	text_put(&t,
		 "tailprof_processes_loaded_total{by=\"sample\"} %" PRIu64 "\n"
		 "tailprof_processes_loaded_total{by=\"known_set\"} %" PRIu64 "\n"
		 "tailprof_processes_loaded_total{by=\"static\"} %" PRIu64 "\n",
		 st.sym.loaded_by_sample, st.sym.loaded_by_set, st.sym.loaded_static);
	text_metric(&t, "tailprof_processes_from_layout_total", "counter",
		    "Processes of a static executable whose layout was recorded: maps made from it "
		    "at their exec, never read (missing: the layout was "
		    "gone by then, and they were read as any other).");
	text_put(&t,
		 "tailprof_processes_from_layout_total{result=\"made\"} %" PRIu64 "\n"
		 "tailprof_processes_from_layout_total{result=\"missing\"} %" PRIu64 "\n",
		 st.sym.from_layout, st.sym.layouts_missing);
	text_metric(&t, "tailprof_processes_tables_at_exec_total", "counter",
		    "Processes of a static executable whose unwind tables BPF set at their exec "
		    "from its layout's: their first sample woke nobody.");
	text_put(&t, "tailprof_processes_tables_at_exec_total %" PRIu64 "\n",
		 st.layout_tables_used);
	text_metric(&t, "tailprof_static_layouts", "gauge",
		    "Static executables whose layout is recorded (at most 256).");
	text_put(&t, "tailprof_static_layouts %" PRIu64 "\n", st.sym.layouts);
	text_metric(&t, "tailprof_wakeups_total", "counter",
		    "Drains between the drain period's ticks: BPF woke tailprofd (a new process "
		    "that is not young, new Python code, a rescan, the ring buffer filling).");
	text_put(&t, "tailprof_wakeups_total %" PRIu64 "\n", st.wakeups);
	text_metric(&t, "tailprof_young_samples_total", "counter",
		    "Samples (CPU and off-CPU) of a new process that was young: they woke nobody "
		    "and waited for the next drain, its maps from the mmap records.");
	text_put(&t, "tailprof_young_samples_total %" PRIu64 "\n", st.young_samples);
	text_metric(
	    &t, "tailprof_forks_deferred_total", "counter",
	    "Forked children (not exec'd) first seen: their maps, unwind tables and CPython "
	    "waited 300 ms, read only if they still ran their parent's image then.");
	text_put(&t, "tailprof_forks_deferred_total %" PRIu64 "\n", st.forks_deferred);
	text_metric(&t, "tailprof_exec_rechecks_total", "counter",
		    "Exec'd processes still running 300 ms after their exec: maps read again "
		    "(read), or not, read after their dynamic loader's work (skipped).");
	text_put(&t,
		 "tailprof_exec_rechecks_total{result=\"read\"} %" PRIu64 "\n"
		 "tailprof_exec_rechecks_total{result=\"skipped\"} %" PRIu64 "\n",
		 st.exec_rechecks[0], st.exec_rechecks[1]);
	text_metric(
	    &t, "tailprof_maps_rereads_saved_total", "counter",
	    "Maps reads not made again for an address at the end of a user stack that lay in "
	    "a mapped object's data, not in new code: a broken frame chain's last word "
	    "(Go's system stacks end so). module: the symbolizer's rereads, the unwinder's "
	    "rescans.");
	text_put(&t, "tailprof_maps_rereads_saved_total{module=\"symbolizer\"} %" PRIu64 "\n",
		 st.sym.rereads_saved);
	text_put(&t, "tailprof_maps_rereads_saved_total{module=\"unwinder\"} %" PRIu64 "\n",
		 st.rescans_saved);
	text_metric(&t, "tailprof_maps_read_failures_total", "counter",
		    "Processes whose /proc/PID/maps could not be read (gone, pid reused).");
	text_put(&t, "tailprof_maps_read_failures_total %" PRIu64 "\n", st.sym.maps_failed);
	put_unwind_metrics(&t, &st);
	text_metric(&t, "tailprof_debug_files_total", "counter",
		    "Objects named from a separate debug file (build ID or .gnu_debuglink).");
	text_put(&t, "tailprof_debug_files_total %" PRIu64 "\n", st.sym.debug_files);
	text_metric(&t, "tailprof_minidebuginfo_total", "counter",
		    "Objects named from their MiniDebugInfo (.gnu_debugdata).");
	text_put(&t, "tailprof_minidebuginfo_total %" PRIu64 "\n", st.sym.minidebuginfo);
	text_metric(&t, "tailprof_debug_files_rejected_total", "counter",
		    "Separate debug files (or MiniDebugInfo) found but not used: not ELF, no "
		    ".symtab, another build ID or CRC, or a .symtab that could not be read.");
	text_put(&t, "tailprof_debug_files_rejected_total %" PRIu64 "\n", st.sym.debug_rejected);
	text_metric(
	    &t, "tailprof_object_read_failures_total", "counter",
	    "Mapped objects whose symbols could not be read (their frames are named by file "
	    "and offset), by reason.");
	text_put(&t,
		 "tailprof_object_read_failures_total{reason=\"unopenable\"} %" PRIu64 "\n"
		 "tailprof_object_read_failures_total{reason=\"malformed\"} %" PRIu64 "\n",
		 st.sym.elf_unopenable, st.sym.elf_malformed);
	text_metric(&t, "tailprof_exec_identities_total", "counter",
		    "Processes whose labels (executable name, PID namespace, cgroup) came from "
		    "their exec event rather than from /proc; counted when their maps are first "
		    "read (a sample or a block).");
	text_put(&t, "tailprof_exec_identities_total %" PRIu64 "\n", st.sym.identities_from_exec);
	text_metric(&t, "tailprof_fork_identities_total", "counter",
		    "Forked children sampled before their exec whose labels (executable name, PID "
		    "namespace, cgroup) came from their fork event rather than from /proc.");
	text_put(&t, "tailprof_fork_identities_total %" PRIu64 "\n", st.sym.identities_from_fork);
	text_metric(
	    &t, "tailprof_cgroup_reads_saved_total", "counter",
	    "Processes whose cgroup path was known from an earlier process exec'd in the same "
	    "cgroups (v2, and v1 name=systemd on hybrid layouts), so /proc/PID/cgroup was not "
	    "read.");
	text_put(&t, "tailprof_cgroup_reads_saved_total %" PRIu64 "\n", st.sym.cgroup_reads_saved);
	text_metric(&t, "tailprof_identity_checks_total", "counter",
		    "Checks, after reading a process's memory maps, that its pid had not passed to "
		    "another process meanwhile: by the mmap records (records: its fork record and "
		    "no exit since), by BPF's table of live processes (bpf) or by /proc/PID/stat "
		    "(proc: processes from before tailprofd started).");
	text_put(&t,
		 "tailprof_identity_checks_total{source=\"bpf\"} %" PRIu64 "\n"
		 "tailprof_identity_checks_total{source=\"proc\"} %" PRIu64 "\n"
		 "tailprof_identity_checks_total{source=\"records\"} %" PRIu64 "\n",
		 st.sym.identity_checks[0], st.sym.identity_checks[1], st.sym.identity_checks[2]);
	text_metric(&t, "tailprof_perf_map_reads_total", "counter",
		    "JIT perf maps (/tmp/perf-PID.map) read, re-reads after growth included.");
	text_put(&t, "tailprof_perf_map_reads_total %" PRIu64 "\n", st.sym.perf_map_reads);
	text_metric(
	    &t, "tailprof_perf_map_rejected_total", "counter",
	    "JIT perf maps refused: a symbolic link, not the process's user, not a regular file, "
	    "or too large.");
	text_put(&t, "tailprof_perf_map_rejected_total %" PRIu64 "\n", st.sym.perf_map_rejected);
	text_metric(&t, "tailprof_perf_map_torn_reads_total", "counter",
		    "Reads of a JIT perf map that changed while read: read again (up to 3 times a "
		    "look); of a map that grows, the part two such reads agree on is taken.");
	text_put(&t, "tailprof_perf_map_torn_reads_total %" PRIu64 "\n",
		 st.sym.perf_map_torn_reads);
	text_metric(&t, "tailprof_perf_map_lines_skipped_total", "counter",
		    "Lines of JIT perf maps read that were not START SIZE NAME (hex, size > 0, no "
		    "wrap), or beyond the entries kept.");
	text_put(&t, "tailprof_perf_map_lines_skipped_total %" PRIu64 "\n",
		 st.sym.perf_map_lines_skipped);
	text_metric(&t, "tailprof_symbol_cache_evictions_total", "counter",
		    "Entries dropped from the symbolizer's caches for their caps, by cache.");
	text_put(&t, "tailprof_symbol_cache_evictions_total{cache=\"processes\"} %" PRIu64 "\n",
		 st.sym.evicted_processes);
	text_put(&t, "tailprof_symbol_cache_evictions_total{cache=\"objects\"} %" PRIu64 "\n",
		 st.sym.evicted_objects);
	put_source_lines_metrics(&t);
	text_put_owned(&t, limits__metrics_text(ctx));
	put_sched_metrics(&t, ctx, &st);
	text_metric(&t, "tailprof_window_bytes", "gauge",
		    "Heap bytes of the windows' sample tables.");
	text_put(&t, "tailprof_window_bytes %" PRIu64 "\n", st.window_bytes);
	text_metric(
	    &t, "tailprof_record_bytes", "gauge",
	    "Heap bytes of the per-sample records request profiles take (within window_bytes).");
	text_put(&t, "tailprof_record_bytes %" PRIu64 "\n", st.record_bytes);
	text_metric(&t, "tailprof_records", "gauge",
		    "Per-sample records held (current and previous window, pinned windows).");
	text_put(&t, "tailprof_records %" PRIu64 "\n", st.records);
	text_metric(&t, "tailprof_interned_bytes", "gauge",
		    "Heap bytes of interned stacks and tasks.");
	text_put(&t, "tailprof_interned_bytes %" PRIu64 "\n", st.interned_bytes);
	text_metric(&t, "tailprof_resident_memory_bytes", "gauge",
		    "Resident set size of tailprofd.");
	text_put(&t, "tailprof_resident_memory_bytes %" PRIu64 "\n", sysinfo__rss_bytes());
	text_metric(&t, "tailprof_cpu_seconds_total", "counter",
		    "User and system CPU time of tailprofd.");
	text_put(&t, "tailprof_cpu_seconds_total %.6f\n", sysinfo__cpu_ns() / 1e9);
	if (ctx->loader)
		nr_progs = loader__prog_stats(ctx->loader, progs, 32);
	text_metric(
	    &t, "tailprof_bpf_run_time_seconds_total", "counter",
	    "Run time of each BPF program (BPF_ENABLE_STATS): the in-kernel self-overhead (0 "
	    "with --bpf-stats=off).");
	for (size_t i = 0; i < nr_progs; i++)
		text_put(&t, "tailprof_bpf_run_time_seconds_total{program=\"%s\"} %.9f\n",
			 progs[i].name, progs[i].run_time_ns / 1e9);
	text_metric(&t, "tailprof_bpf_run_count_total", "counter",
		    "Runs of each BPF program (0 with --bpf-stats=off).");
	for (size_t i = 0; i < nr_progs; i++)
		text_put(&t, "tailprof_bpf_run_count_total{program=\"%s\"} %" PRIu64 "\n",
			 progs[i].name, progs[i].run_cnt);
	if (ctx->gc)
		put_gc_metrics(&t, ctx);
	if (ctx->loader && getenv("TAILPROF_BENCH_PID")) {
		uint64_t v[4];

		loader__bench_cost(ctx->loader, v);
		text_metric(
		    &t, "tailprof_bench_pid_ns_total", "counter",
		    "Benchmark (TAILPROF_BENCH_PID): ns perf_sample spent on that process's "
		    "samples (part=sample), of which in the Python walk (part=python).");
		text_put(&t,
			 "tailprof_bench_pid_ns_total{part=\"sample\"} %" PRIu64 "\n"
			 "tailprof_bench_pid_ns_total{part=\"python\"} %" PRIu64 "\n",
			 v[0], v[2]);
		text_metric(
		    &t, "tailprof_bench_pid_samples_total", "counter",
		    "Benchmark (TAILPROF_BENCH_PID): that process's samples, and their Python "
		    "frames (part=python_frames).");
		text_put(&t,
			 "tailprof_bench_pid_samples_total{part=\"samples\"} %" PRIu64 "\n"
			 "tailprof_bench_pid_samples_total{part=\"python_frames\"} %" PRIu64 "\n",
			 v[1], v[3]);
	}
	if (ctx->loader && getenv("TAILPROF_BENCH_LABEL_COST")) {
		uint64_t ns, clock_ns, samples;

		loader__label_cost(ctx->loader, &ns, &clock_ns, &samples);
		text_metric(
		    &t, "tailprof_bench_stage_label_ns_total", "counter",
		    "Benchmark (TAILPROF_BENCH_LABEL_COST): ns in the sampler's stage lookup "
		    "(part=lookup) and in the clock reads that timed it (part=clock).");
		text_put(&t,
			 "tailprof_bench_stage_label_ns_total{part=\"lookup\"} %" PRIu64 "\n"
			 "tailprof_bench_stage_label_ns_total{part=\"clock\"} %" PRIu64 "\n",
			 ns, clock_ns);
		text_metric(
		    &t, "tailprof_bench_stage_label_samples_total", "counter",
		    "Benchmark (TAILPROF_BENCH_LABEL_COST): samples whose stage lookup was timed.");
		text_put(&t, "tailprof_bench_stage_label_samples_total %" PRIu64 "\n", samples);
	}
	if (ctx->stages)
		text_put_owned(&t, stages__metrics_text(ctx->stages));
	if (ctx->spikes)
		text_put_owned(&t,
			       spikes__metrics_text(ctx->spikes, collector__ring(ctx->collector)));
	if (ctx->snapshots)
		text_put_owned(&t, snapshots__metrics_text(ctx->snapshots));
	if (ctx->features)
		text_put_owned(&t, features__metrics_text(ctx->features));
	if (ctx->push)
		text_put_owned(&t, push__metrics_text(ctx->push));
	return text_finish(&t);
}
