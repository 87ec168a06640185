// SPDX-License-Identifier: GPL-2.0-only
/* Empty programs on the scheduler programs' hooks, for tests/bench/sched.py: what any BPF program
 * there costs (the tracepoint's dispatch and BPF_ENABLE_STATS' own clock reads), measured side by
 * side with tailprofd's. Not loaded by tailprofd. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_sched_switch)
{
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(floor_sys_exit)
{
	return 0;
}
