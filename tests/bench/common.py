# SPDX-License-Identifier: GPL-2.0-only
"""Shared helpers of the benchmarks: start tailprofd and workloads."""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import daemon  # noqa: E402


def build_dir():
    return os.environ.get("TAILPROF_BUILD_DIR", os.path.join(ROOT, "build"))


class Daemon(daemon.Daemon):
    def __init__(self, *args):
        super().__init__(os.path.join(build_dir(), "daemon", "tailprofd"), *args)


def workload(name, *args):
    return subprocess.Popen([os.path.join(build_dir(), "tests", "workloads", name)] +
                            [str(a) for a in args], stdout=subprocess.DEVNULL)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


BPF_RUN_TIME = "tailprof_bpf_run_time_seconds_total"


def bpf_prog(m, name):
    """(run time in s, runs) of tailprofd's BPF program name, from its metrics m (BPF
    statistics); (0, 0) for a program it did not load."""
    return (m.get('%s{program="%s"}' % (BPF_RUN_TIME, name), 0),
            m.get('tailprof_bpf_run_count_total{program="%s"}' % name, 0))


def bpf_names(m):
    """The names of the BPF programs tailprofd loaded, from its metrics m."""
    return [k.split('"')[1] for k in m if k.startswith(BPF_RUN_TIME + "{")]


def bpf_run_s(m):
    """The run time in s of every BPF program tailprofd loaded, from its metrics m."""
    return sum(v for k, v in m.items() if k.startswith(BPF_RUN_TIME))
