# SPDX-License-Identifier: GPL-2.0-only
"""Whether this kernel lets a tp_btf/sched_switch program schedule a BPF task work, and whether it
loads an fexit program on schedule(), found apart from tailprofd: programs of a few instructions
that do only that, built with clang against the build's vmlinux.h and loaded with bpftool. The
tests' oracle for tailprofd's task_work variant (task_work, else fexit_schedule, else sys_exit).
6.18 has the kfunc; 6.18.44-fc-v1272's verifier refuses it in any program that cannot sleep, and
that kernel (locked down) refuses fexit programs; Debian's 6.1 and 6.12 load them."""
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

FEXIT_SOURCE = r"""
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("fexit/schedule")
int BPF_PROG(probe_fexit)
{
	return 0;
}
"""

# why, where the kernel lacks the kfunc (nothing was loaded)
NO_KFUNC = "no kfunc"

_cached = None


def kernel_has_task_work_kfunc():
    with open("/proc/kallsyms") as f:
        return any(line.rstrip().endswith(" bpf_task_work_schedule_resume_impl") for line in f)


def load_probe(build, name, source):
    """bpftool's CompletedProcess for loading source (a BPF C file) built against the build's
    vmlinux.h; pinned under /sys/fs/bpf for the load alone."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, name + ".bpf.c")
        obj = os.path.join(tmp, name + ".bpf.o")
        with open(src, "w") as f:
            f.write(source)
        multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True,
                                   text=True).stdout.strip()
        cmd = ["clang", "-target", "bpf", "-D__TARGET_ARCH_x86", "-g", "-O2",
               "-I", os.path.join(os.path.abspath(build), "bpf")]
        if multiarch:
            cmd += ["-I", "/usr/include/" + multiarch]
        subprocess.run(cmd + ["-c", src, "-o", obj], check=True, capture_output=True, text=True)
        pin = "/sys/fs/bpf/tailprof_test_%s_%d" % (name, os.getpid())
        r = subprocess.run(["bpftool", "-d", "prog", "loadall", obj, pin], capture_output=True,
                           text=True)
        subprocess.run(["rm", "-rf", pin])
    return r


_fexit = None


def fexit_verdict(build):
    """True when the kernel loads an fexit program on schedule() (BPF trampolines, and no
    lockdown that refuses them)."""
    global _fexit
    if _fexit is None:
        _fexit = load_probe(build, "probe_fexit", FEXIT_SOURCE).returncode == 0
    return _fexit


def expected_return(build):
    """The variant of tailprofd's task_work capability on this kernel: task_work, else
    fexit_schedule, else sys_exit."""
    if task_work_verdict(build)[0]:
        return "task_work"
    return "fexit_schedule" if fexit_verdict(build) else "sys_exit"


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
    r = load_probe(build, "probe_tw", SOURCE)
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
