#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The BPF cost of a CPU sample, two builds side by side: tailprofd binaries A and B (a baseline
build and this one) run alternately, ROUNDS times each, at FREQ Hz on the same load: tp_hotcold
on every CPU ("busy"), plus always_on.py's process churn ("churn"). Each run prints perf_sample's
ns a sample (BPF statistics), every program's run time and tailprofd's CPU as shares of one CPU;
then the medians and B/A. Asserts nothing. What always_on.py cannot show for a change: it
measures one build at a time, and this VM drifts by more than most changes move.

Usage (root): tests/bench/sample_cost.py DAEMON_A DAEMON_B [FREQ] [SECONDS] [ROUNDS] [busy|churn]
(defaults 99, 8, 4, churn)"""
import os
import sys
import tempfile
import time

from always_on import Churn, go_program, proc_cpu
from common import build_dir, median, workload
import daemon as daemon_lib  # tests/lib, on the path common.py sets


def bpf_programs(m):
    """program -> (run time s, runs) from tailprofd's metrics m."""
    out = {}
    for k, v in m.items():
        if k.startswith("tailprof_bpf_run_time_seconds_total{"):
            name = k.split('"')[1]
            out[name] = (v, m.get(k.replace("run_time_seconds", "run_count"), 0))
    return out


def run(binary, freq, seconds, programs):
    d = daemon_lib.Daemon(binary, *(["--frequency", str(freq)] if freq != 99 else []))
    churn = None
    try:
        time.sleep(3)
        churn = Churn(programs) if programs else None
        time.sleep(2)  # the programs' objects known: steady state
        m0, c0, t0 = d.metrics(), proc_cpu(d.proc.pid), time.time()
        time.sleep(seconds)
        m1, c1, t1 = d.metrics(), proc_cpu(d.proc.pid), time.time()
    finally:
        if churn:
            churn.stop()
        d.stop()
    b0, b1 = bpf_programs(m0), bpf_programs(m1)
    bpf_s = sum(t - b0.get(p, (0, 0))[0] for p, (t, _) in b1.items())
    st, sn = b1.get("perf_sample", (0, 0))
    st0, sn0 = b0.get("perf_sample", (0, 0))
    return {"sample_ns": 1e9 * (st - st0) / max(sn - sn0, 1),
            "bpf_pct": 100 * bpf_s / (t1 - t0),
            "daemon_pct": 100 * (c1 - c0) / (t1 - t0)}


def main():
    if os.geteuid() != 0 or len(sys.argv) < 3:
        sys.exit(__doc__)
    a, b = sys.argv[1], sys.argv[2]
    freq = int(sys.argv[3]) if len(sys.argv) > 3 else 99
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 8
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 4
    load = sys.argv[6] if len(sys.argv) > 6 else "churn"
    if load not in ("busy", "churn") or freq <= 0 or seconds <= 0 or rounds <= 0:
        sys.exit(__doc__)
    programs = []
    if load == "churn":
        programs = [["/bin/true"],
                    [os.path.join(build_dir(), "tests", "workloads", "tp_short"), "0.002"],
                    ["/usr/bin/python3.11", "-c", "pass"]]
        gobin = go_program(tempfile.mkdtemp())
        if gobin:
            programs.append([gobin, "1"])
    spinners = [workload("tp_hotcold", 100000) for _ in range(os.cpu_count())]
    res = {a: [], b: []}
    try:
        for _ in range(rounds):
            for binary in (a, b):
                r = run(binary, freq, seconds, programs)
                res[binary].append(r)
                print("  %s: perf_sample %.0f ns a sample, BPF %.3f%%, daemon %.3f%%" % (
                    binary, r["sample_ns"], r["bpf_pct"], r["daemon_pct"]), flush=True)
    finally:
        for p in spinners:
            p.kill()
    print("%s, %d Hz, %d rounds of %.0f s, medians:" % (load, freq, rounds, seconds))
    for key, what in (("sample_ns", "perf_sample ns a sample"), ("bpf_pct", "BPF % of one CPU"),
                      ("daemon_pct", "daemon % of one CPU")):
        ma = median([r[key] for r in res[a]])
        mb = median([r[key] for r in res[b]])
        print("  %-24s A %.3f  B %.3f  (B/A %.2f)" % (what, ma, mb, mb / ma if ma else 0))


if __name__ == "__main__":
    main()
