/* SPDX-License-Identifier: GPL-2.0-only */
/* What this kernel has for tailprofd's BPF objects, asked through libbpf's probes, the kernel's
 * BTF and sysfs, before anything is loaded. Each check that can fail writes a sentence naming
 * the first missing piece and the Linux version (or kernel option) that brings it, for the
 * features report; docs/kernels.md lists them. */
#ifndef TAILPROF_KERNEL_PROBE_H
#define TAILPROF_KERNEL_PROBE_H

#include <stdbool.h>
#include <stddef.h>

/* What CPU sampling (bpf/profile.bpf.c) needs: BTF, perf_event programs, the ring buffer,
 * tp_btf for the process tracepoints and the helpers it calls. 0, or -ENOTSUP after writing
 * into why (len bytes) the first missing piece. */
int kernel_probe__sampler(char *why, size_t len);
/* What the table unwinder needs in perf_event programs: bpf_loop (Linux 5.17) and
 * bpf_task_pt_regs (5.15). 0 or -ENOTSUP with why. */
int kernel_probe__unwind_tables(char *why, size_t len);
/* What the CPython frame walker (bpf/lib/python.bpf.h) needs: bpf_loop (Linux 5.17). 0 or
 * -ENOTSUP with why. */
int kernel_probe__python_frames(char *why, size_t len);
/* What the scheduler programs (bpf/sched.bpf.c) need beyond the sampler: tp_btf/sched_switch,
 * task storage, per-task scheduler statistics (CONFIG_SCHED_INFO) and the helpers they call
 * (bpf_map_lookup_percpu_elem: Linux 5.19). 0 or -ENOTSUP with why. */
int kernel_probe__sched(char *why, size_t len);
/* Whether the kernel has the kfunc bpf_task_work_schedule_resume (Linux 6.18), from its BTF. */
bool kernel_probe__task_work(void);
/* Whether the kernel loads an fexit program on schedule() (BPF trampolines: a tiny program is
 * loaded and closed, not attached). 0, or -ENOTSUP with why. */
int kernel_probe__fexit_schedule(char *why, size_t len);
/* What uprobe programs need (the stage and GC objects): the uprobe PMU and programs of kprobe
 * type; with stage_helpers also the helpers the stage programs call. 0 or -ENOTSUP with why. */
int kernel_probe__uprobes(bool stage_helpers, char *why, size_t len);
/* Whether the uprobe PMU takes a ref_ctr_offset (Linux 4.20): the kernel then sets the
 * semaphores of USDT probes attached by path in every process that maps the file. 0 or
 * -ENOTSUP with why. */
int kernel_probe__uprobe_ref_ctr(char *why, size_t len);
/* What exact span accounting in the stage programs needs (bpf/stage.bpf.c, sched_now): per-task
 * scheduler statistics (CONFIG_SCHED_INFO) and the running task's run queue through
 * sched_entity.cfs_rq and cfs_rq.rq (CONFIG_FAIR_GROUP_SCHED). 0, or -ENOTSUP with why. */
int kernel_probe__request_accounting(char *why, size_t len);
/* Frees the kernel's BTF that the probes parse once and keep (several MB): call when the objects
 * are loaded. A later probe parses it again. */
void kernel_probe__release(void);

#endif
