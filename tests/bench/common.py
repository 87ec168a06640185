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
