#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Cost of Python frames in the CPU sampler, side by side in one run: perf_sample's BPF time on
the samples of one tests/workloads/py_features.py process (TAILPROF_BENCH_PID: the program times
that process's samples from its first clock read to its end, and the Python walk inside that),
with --python-frames=on and =off, the workload's Python stack 4 frames deep and 4 + DEPTH; at 99
and 999 Hz, runs alternated so that the host's drift hits both. Per Python frame: the walk's
time difference between the two depths over their frame difference. The table unwinder's
native walk is in both columns. Prints figures, asserts nothing.

Usage (root): tests/bench/python.py [SECONDS_PER_RUN] [RUNS] [DEPTH]"""
import os
import subprocess
import sys
import time

from common import ROOT, Daemon, median

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 10
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
DEPTH = int(sys.argv[3]) if len(sys.argv) > 3 else 40
PYTHON = os.environ.get("TAILPROF_BENCH_PYTHON", "/usr/bin/python3.11")
WORKLOAD = os.path.join(ROOT, "tests", "workloads", "py_features.py")


def cost(m):
    return (m.get('tailprof_bench_pid_ns_total{part="sample"}', 0),
            m.get('tailprof_bench_pid_ns_total{part="python"}', 0),
            m.get('tailprof_bench_pid_samples_total{part="samples"}', 0),
            m.get('tailprof_bench_pid_samples_total{part="python_frames"}', 0))


def run(freq, on, depth):
    """(ns per sample, ns of the Python walk per sample, Python frames per sample)"""
    w = subprocess.Popen([PYTHON, WORKLOAD, str(SECONDS + 8), str(depth)])
    os.environ["TAILPROF_BENCH_PID"] = str(w.pid)
    try:
        d = Daemon("--frequency", str(freq), "--python-frames", "on" if on else "off")
    finally:
        del os.environ["TAILPROF_BENCH_PID"]
    time.sleep(3)  # found, its unwind tables loaded, its code objects read
    a = cost(d.metrics())
    time.sleep(SECONDS)
    b = cost(d.metrics())
    d.stop()
    w.kill()
    w.wait()
    n = max(b[2] - a[2], 1)
    return (b[0] - a[0]) / n, (b[1] - a[1]) / n, (b[3] - a[3]) / n


def main():
    print("perf_sample BPF ns per sample of one Python process (median of %d runs of %.0f s), "
          "%s" % (RUNS, SECONDS, PYTHON))
    for freq in (99, 999):
        res = {(depth, on): [] for depth in (0, DEPTH) for on in (False, True)}
        for _ in range(RUNS):
            for depth in (0, DEPTH):
                for on in (False, True):
                    res[(depth, on)].append(run(freq, on, depth))
        walk = {}
        for depth in (0, DEPTH):
            off = median([r[0] for r in res[(depth, False)]])
            on = median([r[0] for r in res[(depth, True)]])
            walk[depth] = (median([r[1] for r in res[(depth, True)]]),
                           median([r[2] for r in res[(depth, True)]]))
            print("  %4d Hz, %2.0f Python frames: off %6.0f ns, on %6.0f ns (+%.0f); the walk "
                  "%.0f ns" % (freq, walk[depth][1], off, on, on - off, walk[depth][0]))
        if walk[DEPTH][1] > walk[0][1]:
            print("  %4d Hz: %.0f ns per Python frame, %.0f ns to find the thread state and "
                  "start" % (freq, (walk[DEPTH][0] - walk[0][0]) / (walk[DEPTH][1] - walk[0][1]),
                             walk[0][0] - walk[0][1] * (walk[DEPTH][0] - walk[0][0]) /
                             (walk[DEPTH][1] - walk[0][1])))


if __name__ == "__main__":
    main()
