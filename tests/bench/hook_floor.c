// SPDX-License-Identifier: GPL-2.0-only
/* Attaches empty programs to tp_btf/sched_switch and raw_tp/sys_exit (bpf/floor.bpf.c) for
 * SECONDS and prints their BPF_ENABLE_STATS run time and count: the cost any program on those
 * hooks pays, measured next to tailprofd's in tests/bench/sched.py.
 * Usage: tp_hook_floor SECONDS (root). Prints "PROGRAM RUN_TIME_NS RUN_COUNT" lines. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "floor.skel.h"

static void print_stats(struct bpf_program *p)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
		return;
	printf("%s %llu %llu\n", bpf_program__name(p), (unsigned long long)info.run_time_ns,
	       (unsigned long long)info.run_cnt);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 0;
	struct floor_bpf *skel;
	int stats;

	if (seconds <= 0) {
		fprintf(stderr, "usage: tp_hook_floor SECONDS\n");
		return 2;
	}
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	skel = floor_bpf__open_and_load();
	if (stats < 0 || !skel || floor_bpf__attach(skel)) {
		fprintf(stderr,
			"tp_hook_floor: cannot load or attach the empty programs (root?)\n");
		return 1;
	}
	usleep((useconds_t)(seconds * 1e6));
	print_stats(skel->progs.floor_sched_switch);
	print_stats(skel->progs.floor_sys_exit);
	floor_bpf__destroy(skel);
	close(stats);
	return 0;
}
