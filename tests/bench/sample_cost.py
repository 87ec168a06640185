#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The BPF cost of a CPU sample, two builds side by side: tailprofd binaries A and B (a baseline
build and this one) run alternately, ROUNDS times each, at FREQ Hz on the same load: tp_hotcold
on every CPU ("busy"), plus always_on.py's process churn ("churn"), or a Python service on every
CPU ("python": tests/workloads/py_features.py with its Python stack 44 frames deep, in
Debian's python3.11 or $TAILPROF_BENCH_PYTHON). Each run prints perf_sample's ns a sample (BPF
statistics), every program's run time and tailprofd's CPU as shares of one CPU, and with the
Python load the Python walk's ns a sample of the first process (timed by BPF:
TAILPROF_BENCH_PID); then the medians and B/A, and those of each program that takes at least
0.01% of a CPU (a change to the scheduler programs shows there: sched_switch against sys_exit,
say). Asserts nothing. What always_on.py cannot show for a change: it measures one build at a
time, and this VM drifts by more than most changes move.

Usage (root): tests/bench/sample_cost.py DAEMON_A DAEMON_B [FREQ] [SECONDS] [ROUNDS]
[busy|churn|python] (defaults 99, 8, 4, churn)"""
import os
import subprocess
import sys
import tempfile

from always_on import alternate, churn_kinds, side_run
from common import ROOT, bpf_names, bpf_prog, bpf_run_s, median

PYTHON = os.environ.get("TAILPROF_BENCH_PYTHON", "/usr/bin/python3.11")
PY_WALK = 'tailprof_bench_pid_ns_total{part="python"}'
PY_SAMPLES = 'tailprof_bench_pid_samples_total{part="samples"}'


def python_load():
    """py_features.py, 40 frames below its 4 (44 in all), on every CPU; the first one's samples
    are timed (TAILPROF_BENCH_PID, read by each tailprofd started after this)."""
    wl = os.path.join(ROOT, "tests", "workloads", "py_features.py")
    procs = [subprocess.Popen([PYTHON, wl, "100000", "40"]) for _ in range(os.cpu_count())]
    os.environ["TAILPROF_BENCH_PID"] = str(procs[0].pid)
    return procs


def run(binary, freq, seconds, programs):
    r = side_run(binary, freq, programs, seconds)
    m0, m1 = r["m0"], r["m1"]
    (st0, sn0), (st, sn) = bpf_prog(m0, "perf_sample"), bpf_prog(m1, "perf_sample")
    return {"sample_ns": 1e9 * (st - st0) / max(sn - sn0, 1),
            "bpf_pct": 100 * (bpf_run_s(m1) - bpf_run_s(m0)) / r["span"],
            "daemon_pct": 100 * r["cpu"] / r["span"],
            "python_ns": (m1.get(PY_WALK, 0) - m0.get(PY_WALK, 0)) /
            max(m1.get(PY_SAMPLES, 0) - m0.get(PY_SAMPLES, 0), 1),
            "programs": {n: 100 * (bpf_prog(m1, n)[0] - bpf_prog(m0, n)[0]) / r["span"]
                         for n in bpf_names(m1)}}


def main():
    if os.geteuid() != 0 or len(sys.argv) < 3:
        sys.exit(__doc__)
    a, b = sys.argv[1], sys.argv[2]
    given = [conv(v) for conv, v in zip((int, float, int, str), sys.argv[3:7])]
    freq, seconds, rounds, load = given + [99, 8.0, 4, "churn"][len(given):]
    if load not in ("busy", "churn", "python") or freq <= 0 or seconds <= 0 or rounds <= 0:
        sys.exit(__doc__)
    programs = list(churn_kinds(tempfile.mkdtemp()).values()) if load == "churn" else []
    res = alternate(a, b, rounds, lambda binary: run(binary, freq, seconds, programs),
                    lambda binary, r: print(
                        "  %s: perf_sample %.0f ns a sample, BPF %.3f%%, daemon %.3f%%%s" % (
                            binary, r["sample_ns"], r["bpf_pct"], r["daemon_pct"],
                            ", Python walk %.0f ns" % r["python_ns"] if load == "python"
                            else "")),
                    python_load if load == "python" else None)
    print("%s, %d Hz, %d rounds of %.0f s, medians:" % (load, freq, rounds, seconds))
    keys = [("sample_ns", "perf_sample ns a sample"), ("bpf_pct", "BPF % of one CPU"),
            ("daemon_pct", "daemon % of one CPU")]
    if load == "python":
        keys.insert(1, ("python_ns", "Python walk ns a sample"))
    for key, what in keys:
        ma = median([r[key] for r in res[a]])
        mb = median([r[key] for r in res[b]])
        print("  %-24s A %.3f  B %.3f  (B/A %.2f)" % (what, ma, mb, mb / ma if ma else 0))
    print("  BPF % of one CPU by program:")
    names = sorted({n for r in res[a] + res[b] for n in r["programs"]})
    for n in names:
        ma = median([r["programs"].get(n, 0) for r in res[a]])
        mb = median([r["programs"].get(n, 0) for r in res[b]])
        if max(ma, mb) >= 0.01:
            print("    %-22s A %.3f  B %.3f  (B/A %.2f)" % (n, ma, mb, mb / ma if ma else 0))


if __name__ == "__main__":
    main()
