#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Scheduler benchmark (root). Prints figures; targets (not asserted): at most 300 ns on average
per context switch that is not captured; all-in at most 1% of one CPU at 20,000 blocking
switches per second of which 10% pass --offcpu-min.

1. Handler cost from BPF statistics (BPF_ENABLE_STATS run time / run count): sched_switch with
   short blocks only (ping-pong), and with captured blocks only (2 ms sleeps); sched_return
   (fexit/schedule) runs on kernels without bpf_task_work that have BPF trampolines, sys_exit
   on those that have neither (or with TAILPROF_SCHED_RETURN=sys_exit set).
2. All-in (BPF programs + the daemon's own CPU) at about 20,000 and 100,000 blocking switches a
   second, 10% of them captured, with CPU sampling at 1 Hz so that it does not count.
   Empty programs on the same hooks (tp_hook_floor) run in the same interval: their cost at
   our programs' run counts is the floor of any design on these hooks with BPF stats on.
3. Run-queue latency next to libbpf-tools' runqlat on the same load (3 CPU-bound processes pinned
   to CPU 1) in the same interval: the share of events in each power-of-two bucket (of those with
   at least 5% of the events), ours against runqlat's; target: within 5 points.

Usage: tests/bench/sched.py [SECONDS] [RUNS]"""
import os
import re
import subprocess
import sys
import time

from common import Daemon, bpf_prog, median, workload

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 8
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
SCHED_PROGS = ("sched_switch", "sched_return", "sys_exit",
               "sched_thread_exit")


def hook_floor(seconds):
    """Empty programs on the same hooks (tp_hook_floor), attached for seconds: a Popen whose
    output is {program: (run_time_ns, run_count)}."""
    return subprocess.Popen([os.path.join(build_dir(), "tests", "bench", "tp_hook_floor"),
                             "%.3f" % seconds], stdout=subprocess.PIPE, text=True)


def floor_of(p):
    out = {}
    for line in p.communicate()[0].splitlines():
        name, ns, cnt = line.split()
        out[name] = (int(ns), int(cnt))
    return out


def measure(d, args):
    w = workload("tp_switches", SECONDS + 1.5, *args)
    time.sleep(0.5)
    fl = hook_floor(SECONDS)
    a = d.metrics()
    t0 = time.time()
    time.sleep(SECONDS)
    b = d.metrics()
    elapsed = time.time() - t0
    w.wait()
    floor = floor_of(fl)
    out = {"elapsed": elapsed,
           "switches_per_s": (b["tailprof_context_switches_total"] -
                              a["tailprof_context_switches_total"]) / elapsed,
           "captured_per_s": (b["tailprof_offcpu_samples_total"] -
                              a["tailprof_offcpu_samples_total"]) / elapsed,
           "daemon_s": b["tailprof_cpu_seconds_total"] - a["tailprof_cpu_seconds_total"]}
    bpf = 0
    for name in SCHED_PROGS:
        ta, ca = bpf_prog(a, name)
        tb, cb = bpf_prog(b, name)
        out[name + "_ns"] = (tb - ta) / max(cb - ca, 1) * 1e9
        out[name + "_per_s"] = (cb - ca) / elapsed
        bpf += tb - ta
    for path in ("switch_out", "task_work", "fexit_schedule", "sys_exit"):
        key = 'tailprof_offcpu_user_stack_path_total{path="%s"}' % path
        out["path_" + path + "_per_s"] = (b.get(key, 0) - a.get(key, 0)) / elapsed
    out["bpf_pct"] = 100 * bpf / elapsed
    out["daemon_pct"] = 100 * out["daemon_s"] / elapsed
    out["all_in_pct"] = out["bpf_pct"] + out["daemon_pct"]
    # what empty programs cost at the same hook runs: the floor of any design on these hooks
    fl = 0
    for ours, empty in (("sched_switch", "floor_sched_switch"), ("sys_exit", "floor_sys_exit")):
        ns, cnt = floor.get(empty, (0, 0))
        out[ours + "_floor_ns"] = ns / max(cnt, 1)
        fl += out[ours + "_floor_ns"] * out[ours + "_per_s"] / 1e9
    out["floor_pct"] = 100 * fl
    return out


def runqlat_buckets(text):
    """{k: count} of runqlat's usecs histogram, bucket k = [2^k, 2^(k+1)) us (k=0: 0..1)."""
    out = {}
    for lo, hi, n in re.findall(r"^\s*(\d+) -> (\d+)\s*: (\d+)", text, re.M):
        k = 0 if int(lo) == 0 else int(lo).bit_length() - 1
        out[k] = out.get(k, 0) + int(n)
    return out


def ours_buckets(a, b):
    """The same buckets from the difference of our Prometheus histograms (le = 2^k us)."""
    def cum(m, k):
        key = 'tailprof_runq_latency_seconds_bucket{le="%.9g"}' % ((1000 << k) / 1e9)
        return m.get(key, 0)
    out = {}
    prev = 0
    for k in range(0, 23):
        c = cum(b, k + 1) - cum(a, k + 1) if k < 22 else \
            b['tailprof_runq_latency_seconds_bucket{le="+Inf"}'] - \
            a['tailprof_runq_latency_seconds_bucket{le="+Inf"}']
        out[k] = c - prev
        prev = c
    return out


def compare_runqlat(d):
    hogs = [subprocess.Popen(["taskset", "-c", "1", "tests/workloads/tp_hotcold",
                              str(SECONDS + 2)], cwd=build_dir(), stdout=subprocess.DEVNULL)
            for _ in range(3)]
    time.sleep(1)
    rq = subprocess.Popen(["runqlat", str(int(SECONDS)), "1"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)  # runqlat's own start-up (loading its BPF) before its interval
    a = d.metrics()
    text = rq.communicate()[0]
    b = d.metrics()
    for h in hogs:
        h.wait()
    theirs, ours = runqlat_buckets(text), ours_buckets(a, b)
    nt, no = sum(theirs.values()), sum(ours.values())
    worst = 0
    rows = []
    for k in sorted(set(theirs) | set(ours)):
        st, so = theirs.get(k, 0) / max(nt, 1), ours.get(k, 0) / max(no, 1)
        if st >= 0.05 or so >= 0.05:
            worst = max(worst, abs(st - so))
            rows.append("    %6d-%-6d us  runqlat %5.1f%%  tailprof %5.1f%%" %
                        (1 << k if k else 0, (2 << k) - 1, 100 * st, 100 * so))
    return nt, no, worst, rows


def build_dir():
    from common import build_dir as b
    return b()


def main():
    d = Daemon("--frequency", "1")
    time.sleep(2)
    results = {}
    # pairs, rounds per ms per pair, 2 ms sleepers: 2 blocks per round plus a pacing sleep
    loads = {"short only": ("1", "20", "0"), "captured only": ("0", "0", "8"),
             "20k/s, 10% captured": ("1", "9", "4"), "100k/s, 10% captured": ("3", "15", "20")}
    for _ in range(RUNS):
        for name, args in loads.items():
            results.setdefault(name, []).append(measure(d, args))
    print("scheduler handlers (BPF stats; median of %d runs of %.0f s; floor: empty programs "
          "on the same hooks in the same interval)" % (RUNS, SECONDS))
    for name, rs in results.items():
        med = {k: median([r[k] for r in rs]) for k in rs[0]}
        print("  %-22s %8.0f switches/s %6.0f captured/s  sched_switch %5.0f ns (floor %2.0f)  "
              "sched_return %4.0f ns (%6.0f/s)  sys_exit %4.0f ns (floor %2.0f, %6.0f/s)  "
              "all-in %.2f%% (BPF %.2f%% + daemon %.2f%%; floor %.2f%%)" %
              (name, med["switches_per_s"], med["captured_per_s"], med["sched_switch_ns"],
               med["sched_switch_floor_ns"], med["sched_return_ns"], med["sched_return_per_s"],
               med["sys_exit_ns"], med["sys_exit_floor_ns"], med["sys_exit_per_s"],
               med["all_in_pct"], med["bpf_pct"], med["daemon_pct"], med["floor_pct"]))
        print("  %-22s all-in per run: %s; user stacks taken at switch-out %.0f/s, by a task "
              "work %.0f/s, at the return from schedule() %.0f/s, at sys_exit %.0f/s" %
              ("", " ".join("%.2f%%" % r["all_in_pct"] for r in rs),
               med["path_switch_out_per_s"], med["path_task_work_per_s"],
               med["path_fexit_schedule_per_s"], med["path_sys_exit_per_s"]))
    nt, no, worst, rows = compare_runqlat(d)
    print("run-queue latency with 3 hogs on CPU 1, %.0f s: runqlat %d events, tailprof %d" %
          (SECONDS, nt, no))
    for r in rows:
        print(r)
    print("  largest difference in a bucket with >= 5%% of events: %.1f points (target <= 5)" %
          (100 * worst))
    d.stop()


if __name__ == "__main__":
    main()
