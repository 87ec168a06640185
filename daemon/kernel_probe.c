// SPDX-License-Identifier: GPL-2.0-only
/* Kernel probes: libbpf's program, map and helper probes, BTF type lookups, sysfs files. */
#include "kernel_probe.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

/* Linux versions in the reasons below: where each piece first appeared (docs/kernels.md). */
struct helper_need {
	enum bpf_func_id id;
	const char *name;
	const char *since;
};

/* The first helper of needs[0..n) that programs of type `type` cannot call: 0, or -ENOTSUP after
 * naming it and its Linux version in why. */
static int probe_helpers(enum bpf_prog_type type, const char *kind, const struct helper_need *needs,
			 size_t n, char *why, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		if (libbpf_probe_bpf_helper(type, needs[i].id, NULL) != 1) {
			snprintf(why, len,
				 "the kernel lacks the BPF helper %s for %s programs (Linux %s)",
				 needs[i].name, kind, needs[i].since);
			return -ENOTSUP;
		}
	}
	return 0;
}

/* The kernel's BTF, parsed once for all the probes (some 37 ms each time on this machine kind,
 * several MB) and freed by kernel_probe__release(). NULL without BTF. */
static struct btf *vmlinux_btf;

static struct btf *vmlinux(void)
{
	if (!vmlinux_btf)
		vmlinux_btf = btf__load_vmlinux_btf();
	return vmlinux_btf;
}

void kernel_probe__release(void)
{
	btf__free(vmlinux_btf);
	vmlinux_btf = NULL;
}

/* Whether the kernel's BTF has a type `name` of kind `kind`: 1, 0, or -errno without BTF. */
static int vmlinux_has(const char *name, int kind)
{
	struct btf *btf = vmlinux();

	if (!btf)
		return -errno;
	return btf__find_by_name_kind(btf, name, kind) > 0;
}

/* Whether the kernel's struct `name` has a member `member`. */
static bool struct_has(const char *name, const char *member)
{
	struct btf *btf = vmlinux();
	const struct btf_type *t;
	const struct btf_member *m;
	bool has = false;
	int id;

	if (!btf)
		return false;
	id = btf__find_by_name_kind(btf, name, BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	m = t ? btf_members(t) : NULL;
	for (int i = 0; t && i < btf_vlen(t) && !has; i++)
		has = !strcmp(btf__name_by_offset(btf, m[i].name_off), member);
	return has;
}

/* Whether struct task_struct has a member `member` (CONFIG_SCHED_INFO gives it sched_info). */
static bool task_struct_has(const char *member)
{
	return struct_has("task_struct", member);
}

int kernel_probe__sampler(char *why, size_t len)
{
	static const struct helper_need helpers[] = {
	    {BPF_FUNC_get_stack, "bpf_get_stack", "4.18"},
	    {BPF_FUNC_ringbuf_output, "bpf_ringbuf_output", "5.8"},
	    {BPF_FUNC_ringbuf_query, "bpf_ringbuf_query", "5.8"},
	    {BPF_FUNC_get_current_task, "bpf_get_current_task", "4.8"},
	    {BPF_FUNC_ktime_get_ns, "bpf_ktime_get_ns", "4.1"},
	    {BPF_FUNC_get_current_task_btf, "bpf_get_current_task_btf", "5.11"},
	    /* the exec event's identity of the process */
	    {BPF_FUNC_get_current_cgroup_id, "bpf_get_current_cgroup_id", "4.18"},
	    {BPF_FUNC_get_current_comm, "bpf_get_current_comm", "4.2"},
	    {BPF_FUNC_probe_read_kernel_str, "bpf_probe_read_kernel_str", "5.5"},
	};

	if (access("/sys/kernel/btf/vmlinux", R_OK))
		snprintf(
		    why, len,
		    "the kernel has no BTF (/sys/kernel/btf/vmlinux): tailprofd needs a kernel "
		    "built with CONFIG_DEBUG_INFO_BTF=y");
	else if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL) != 1)
		snprintf(why, len,
			 "the kernel cannot load BPF perf_event programs (CONFIG_BPF_EVENTS=y)");
	else if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 1)
		snprintf(why, len, "the kernel has no BPF ring buffer (Linux 5.8)");
	else if (vmlinux_has("btf_trace_sched_process_exec", BTF_KIND_TYPEDEF) != 1)
		snprintf(why, len,
			 "the kernel has no BTF-typed tracepoints (tp_btf, Linux 5.5) for "
			 "sched_process_exec");
	else if (!probe_helpers(BPF_PROG_TYPE_PERF_EVENT, "perf_event", helpers,
				sizeof(helpers) / sizeof(helpers[0]), why, len))
		return 0;
	return -ENOTSUP;
}

int kernel_probe__uprobes(bool stage_helpers, char *why, size_t len)
{
	static const struct helper_need helpers[] = {
	    {BPF_FUNC_task_storage_get, "bpf_task_storage_get", "5.11"},
	    {BPF_FUNC_get_current_task_btf, "bpf_get_current_task_btf", "5.11"},
	};

	if (access("/sys/bus/event_source/devices/uprobe/type", R_OK)) {
		snprintf(
		    why, len,
		    "the kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe, Linux "
		    "4.17 with CONFIG_UPROBE_EVENTS=y)");
		return -ENOTSUP;
	}
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL) != 1) {
		snprintf(why, len,
			 "the kernel cannot load BPF uprobe programs (CONFIG_BPF_EVENTS=y)");
		return -ENOTSUP;
	}
	return stage_helpers ? probe_helpers(BPF_PROG_TYPE_KPROBE, "uprobe", helpers,
					     sizeof(helpers) / sizeof(helpers[0]), why, len)
			     : 0;
}

int kernel_probe__uprobe_ref_ctr(char *why, size_t len)
{
	if (access("/sys/bus/event_source/devices/uprobe/type", F_OK)) {
		snprintf(why, len, "the kernel has no uprobe PMU");
		return -ENOTSUP;
	}
	if (access("/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset", F_OK)) {
		snprintf(
		    why, len,
		    "the uprobe PMU takes no ref_ctr_offset (Linux 4.20): USDT probes behind a "
		    "semaphore never fire");
		return -ENOTSUP;
	}
	return 0;
}

int kernel_probe__sched(char *why, size_t len)
{
	/* tp_btf programs get the helpers of raw tracepoints: probed through those */
	static const struct helper_need helpers[] = {
	    {BPF_FUNC_task_storage_get, "bpf_task_storage_get", "5.11"},
	    {BPF_FUNC_get_current_task_btf, "bpf_get_current_task_btf", "5.11"},
	    {BPF_FUNC_get_task_stack, "bpf_get_task_stack", "5.9"},
	    {BPF_FUNC_task_pt_regs, "bpf_task_pt_regs", "5.15"},
	    {BPF_FUNC_map_lookup_percpu_elem, "bpf_map_lookup_percpu_elem", "5.19"},
	};

	if (vmlinux_has("btf_trace_sched_switch", BTF_KIND_TYPEDEF) != 1) {
		snprintf(why, len, "the kernel has no tp_btf/sched_switch (Linux 5.5)");
		return -ENOTSUP;
	}
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) != 1) {
		snprintf(why, len, "the kernel has no BPF task storage (Linux 5.11)");
		return -ENOTSUP;
	}
	if (!task_struct_has("sched_info")) {
		snprintf(why, len,
			 "the kernel keeps no scheduler statistics per task (CONFIG_SCHED_INFO: "
			 "CONFIG_SCHEDSTATS or CONFIG_TASK_DELAY_ACCT)");
		return -ENOTSUP;
	}
	return probe_helpers(BPF_PROG_TYPE_RAW_TRACEPOINT, "tracing", helpers,
			     sizeof(helpers) / sizeof(helpers[0]), why, len);
}

bool kernel_probe__task_work(void)
{
	return vmlinux_has("bpf_task_work_schedule_resume_impl", BTF_KIND_FUNC) == 1;
}

int kernel_probe__fexit_schedule(char *why, size_t len)
{
	const struct bpf_insn ret0[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	struct btf *btf = vmlinux();
	int id, fd;

	if (!btf) {
		snprintf(why, len, "the kernel has no BTF (%s)", strerror(errno));
		return -ENOTSUP;
	}
	id = btf__find_by_name_kind(btf, "schedule", BTF_KIND_FUNC);
	if (id <= 0) {
		snprintf(why, len, "the kernel's BTF has no function schedule");
		return -ENOTSUP;
	}
	/* refused before anything is verified by a kernel without BPF trampolines (ENOTSUPP:
	 * no CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS) and by this machine kind's 6.18, which has
	 * them (EPERM, with its tracefs closed to root too: a policy of that kernel's, cause not
	 * known) */
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", ret0, 2,
			   &(struct bpf_prog_load_opts){.sz = sizeof(struct bpf_prog_load_opts),
							.expected_attach_type = BPF_TRACE_FEXIT,
							.attach_btf_id = (__u32)id});
	if (fd < 0) {
		int err = errno;

		snprintf(why, len,
			 "the kernel refuses fexit programs on schedule() (%s: no BPF trampolines, "
			 "or a policy against them)",
			 err == 524 ? "ENOTSUPP" : strerror(err));
		return -ENOTSUP;
	}
	close(fd);
	return 0;
}

int kernel_probe__unwind_tables(char *why, size_t len)
{
	static const struct helper_need helpers[] = {
	    {BPF_FUNC_loop, "bpf_loop", "5.17"},
	    {BPF_FUNC_task_pt_regs, "bpf_task_pt_regs", "5.15"},
	};

	return probe_helpers(BPF_PROG_TYPE_PERF_EVENT, "perf_event", helpers,
			     sizeof(helpers) / sizeof(helpers[0]), why, len);
}

int kernel_probe__python_frames(char *why, size_t len)
{
	static const struct helper_need helpers[] = {
	    {BPF_FUNC_loop, "bpf_loop", "5.17"},
	};

	return probe_helpers(BPF_PROG_TYPE_PERF_EVENT, "perf_event", helpers,
			     sizeof(helpers) / sizeof(helpers[0]), why, len);
}

int kernel_probe__request_accounting(char *why, size_t len)
{
	if (!task_struct_has("sched_info")) {
		snprintf(why, len,
			 "the kernel keeps no scheduler statistics per task (CONFIG_SCHED_INFO): "
			 "spans are accounted from samples");
		return -ENOTSUP;
	}
	if (!struct_has("sched_entity", "cfs_rq") || !struct_has("cfs_rq", "rq")) {
		snprintf(why, len,
			 "a task's run queue is not reachable from it (sched_entity.cfs_rq, "
			 "CONFIG_FAIR_GROUP_SCHED): spans are accounted from samples");
		return -ENOTSUP;
	}
	return 0;
}
