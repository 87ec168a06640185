# SPDX-License-Identifier: GPL-2.0-only
"""Whether this kernel lets a tp_btf/sched_switch program schedule a BPF task work, found apart
from tailprofd: a program of a few instructions that does only that, built with clang against the
build's vmlinux.h and loaded with bpftool. The tests' oracle for tailprofd's task_work variant.
6.18 has the kfunc; 6.18.44-fc-v1272's verifier refuses it in any program that cannot sleep."""
import os
import re
import subprocess
import tempfile

SOURCE = r"""
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map,
					      int (*cb)(struct bpf_map *, void *, void *),
					      void *aux__prog) __ksym __weak;

struct held {
	struct bpf_task_work tw;
	__u64 v;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct held);
} held SEC(".maps");

static int returned(struct bpf_map *map, void *key, void *value)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(probe_tw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 k = 0;
	struct held *h = bpf_map_lookup_elem(&held, &k);

	if (h)
		bpf_task_work_schedule_resume_impl(next, &h->tw, &held, returned, 0);
	return 0;
}
"""

# why, where the kernel lacks the kfunc (nothing was loaded)
NO_KFUNC = "no kfunc"

_cached = None


def kernel_has_task_work_kfunc():
    with open("/proc/kallsyms") as f:
        return any(line.rstrip().endswith(" bpf_task_work_schedule_resume_impl") for line in f)


def task_work_verdict(build):
    """(accepted, why): accepted True when the kernel loads the probe; False with the verifier's
    last line that is not a statistic or a wrapper, or with NO_KFUNC where the kernel lacks
    bpf_task_work_schedule_resume_impl. build: the meson build directory (its bpf/vmlinux.h).
    Raises when the probe cannot be built: the toolchain is the build's own."""
    global _cached
    if _cached is not None:
        return _cached
    if not kernel_has_task_work_kfunc():
        _cached = (False, NO_KFUNC)
        return _cached
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe_tw.bpf.c")
        obj = os.path.join(tmp, "probe_tw.bpf.o")
        with open(src, "w") as f:
            f.write(SOURCE)
        multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True,
                                   text=True).stdout.strip()
        cmd = ["clang", "-target", "bpf", "-D__TARGET_ARCH_x86", "-g", "-O2",
               "-I", os.path.join(os.path.abspath(build), "bpf")]
        if multiarch:
            cmd += ["-I", "/usr/include/" + multiarch]
        subprocess.run(cmd + ["-c", src, "-o", obj], check=True, capture_output=True, text=True)
        pin = "/sys/fs/bpf/tailprof_test_probe_tw_%d" % os.getpid()
        r = subprocess.run(["bpftool", "-d", "prog", "loadall", obj, pin], capture_output=True,
                           text=True)
        subprocess.run(["rm", "-rf", pin])
    if r.returncode == 0:
        _cached = (True, "")
        return _cached
    why, in_log = "", False
    for line in (r.stderr + r.stdout).splitlines():
        line = re.sub(r"^libbpf: ", "", line).strip()
        if "BEGIN PROG LOAD LOG" in line:
            in_log, why = True, ""
        elif "END PROG LOAD LOG" in line:
            in_log = False
        elif in_log and line and not line.startswith(
                ("processed ", "verification time", "stack depth")) and \
                "failed callback verification" not in line:
            why = line
    assert why, "bpftool failed without a verifier log: " + r.stderr[-2000:]
    _cached = (False, why)
    return _cached
