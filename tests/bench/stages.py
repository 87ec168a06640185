#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Cost of stage probes: per stage call (uprobe + uretprobe), from BPF statistics, next to
libbpf-tools' funclatency on the same function in the same run (both attached at once); the
wall-clock time each adds to a call; and what labelling CPU samples with their stage adds to the
sampler (its stage lookup timed inside perf_sample, clock reads subtracted, for threads inside
and outside a stage).
Prints figures; targets (not asserted): ours <= 1.2x funclatency's BPF time per call, labelling
<= 150 ns per sample.

Usage (root): tests/bench/stages.py [SECONDS_PER_RUN] [RUNS]"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from common import Daemon, build_dir, median

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 4
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
BENCH = os.path.join(build_dir(), "tests", "workloads", "tp_stage_bench")
FUNCLATENCY = shutil.which("funclatency") or shutil.which("funclatency-bpfcc")
TMP = tempfile.mkdtemp(prefix="tp_bench_stages.")


def config(name, function):
    path = os.path.join(TMP, name + ".conf")
    with open(path, "w") as f:
        if function:
            f.write("[stage %s]\nbinary = %s\nfunction = %s\n" % (function, BENCH, function))
    return path


def bench(*args):
    """Runs the bench workload; returns ns per call."""
    out = subprocess.run([BENCH, str(SECONDS)] + list(args), stdout=subprocess.PIPE, text=True,
                         check=True).stdout.split()
    return int(out[0]), float(out[1])


def stage_stats(d, name):
    for s in d.json("/api/v1/status")["stages"]:
        if s["stage"] == name:
            return s["hits"], s["bpf_run_time_ns"]
    raise RuntimeError("no stage %s" % name)


def prog_stats(pid):
    """(run_cnt, run_time_ns) summed over the BPF programs process pid holds."""
    cnt = ns = 0
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                ids = [int(l.split()[1]) for l in f if l.startswith("prog_id:")]
        except OSError:
            continue
        for i in ids:
            info = json.loads(subprocess.run(["bpftool", "prog", "show", "id", str(i), "--json"],
                                             stdout=subprocess.PIPE, text=True).stdout)
            cnt += info.get("run_cnt", 0)
            ns += info.get("run_time_ns", 0)
    return cnt, ns


def start_funclatency():
    p = subprocess.Popen([FUNCLATENCY, "%s:bench_stage" % BENCH], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    time.sleep(1.5)  # attached once it has loaded its programs
    return p


def per_call():
    """ns per stage call: our BPF programs, funclatency's, both attached to bench_stage."""
    base = median([bench()[1] for _ in range(RUNS)])
    ours_bpf, fl_bpf, ours_wall, fl_wall = [], [], [], []
    d = Daemon("--config", config("bench", "bench_stage"))
    try:
        for _ in range(RUNS):
            # ours alone: wall-clock added per call
            ours_wall.append(bench()[1] - base)
            if FUNCLATENCY:
                # both at once, the same calls: BPF time per call of each
                fl = start_funclatency()
                h0, t0 = stage_stats(d, "bench_stage")
                c0, n0 = prog_stats(fl.pid)
                bench()
                h1, t1 = stage_stats(d, "bench_stage")
                c1, n1 = prog_stats(fl.pid)
                fl.send_signal(signal.SIGINT)
                fl.wait(timeout=10)
                ours_bpf.append((t1 - t0) / max(h1 - h0, 1))
                # funclatency runs two programs per call, entry and return: runs / 2 calls
                fl_bpf.append((n1 - n0) / max((c1 - c0) / 2, 1))
            else:
                h0, t0 = stage_stats(d, "bench_stage")
                bench()
                h1, t1 = stage_stats(d, "bench_stage")
                ours_bpf.append((t1 - t0) / max(h1 - h0, 1))
    finally:
        d.stop()
    if FUNCLATENCY:
        # funclatency alone (BPF stats need not be on for wall-clock time)
        for _ in range(RUNS):
            fl = start_funclatency()
            fl_wall.append(bench()[1] - base)
            fl.send_signal(signal.SIGINT)
            fl.wait(timeout=10)
    print("stage call (uprobe + uretprobe) on a %.0f ns function, median of %d x %gs:" %
          (base, RUNS, SECONDS))
    print("  BPF run time per call: tailprofd %.0f ns" % median(ours_bpf), end="")
    if FUNCLATENCY:
        print(", funclatency %.0f ns (same calls, same run): ratio %.2fx (target <= 1.2x)" %
              (median(fl_bpf), median(ours_bpf) / median(fl_bpf)))
        print("  wall-clock added per call: tailprofd %.0f ns, funclatency %.0f ns: ratio %.2fx" %
              (median(ours_wall), median(fl_wall), median(ours_wall) / median(fl_wall)))
    else:
        print("\n  wall-clock added per call: tailprofd %.0f ns (funclatency not installed: "
              "apt-get install libbpf-tools)" % median(ours_wall))


def label_ns(d, seconds):
    """ns the sampler's stage lookup took per sample over seconds, its timing clock reads
    subtracted (TAILPROF_BENCH_LABEL_COST makes perf_sample time that code)."""
    def get():
        m = d.metrics()
        return (m['tailprof_bench_stage_label_ns_total{part="lookup"}'],
                m['tailprof_bench_stage_label_ns_total{part="clock"}'],
                m["tailprof_bench_stage_label_samples_total"])
    a = get()
    time.sleep(seconds)
    b = get()
    return ((b[0] - a[0]) - (b[1] - a[1])) / max(b[2] - a[2], 1)


def labelling():
    """What the stage label costs perf_sample: its lookup timed inside the program, with the
    sampled threads inside a stage (the lookup finds their stage stack) and running the same
    code outside any stage (it finds none)."""
    inside, outside = [], []
    os.environ["TAILPROF_BENCH_LABEL_COST"] = "1"
    try:
        d = Daemon("--frequency", "999", "--config", config("busy", "busy_stage"))
    finally:
        del os.environ["TAILPROF_BENCH_LABEL_COST"]
    try:
        for _ in range(RUNS):
            for mode, out in (("busy", inside), ("spin", outside)):
                busy = [subprocess.Popen([BENCH, "100000", mode], stdout=subprocess.DEVNULL)
                        for _ in range(os.cpu_count())]
                try:
                    time.sleep(0.5)
                    out.append(label_ns(d, SECONDS))
                finally:
                    for p in busy:
                        p.kill()
                        p.wait()
    finally:
        d.stop()
    print("CPU sample labelling, 999 Hz, %d CPUs busy, median of %d x %gs: the stage lookup "
          "adds %.0f ns per sample of a thread in a stage, %.0f ns outside any stage "
          "(target <= 150)" % (os.cpu_count(), RUNS, SECONDS, median(inside), median(outside)))


def main():
    if os.geteuid() != 0:
        sys.exit("stages.py: run as root")
    try:
        per_call()
        sys.stdout.flush()
        labelling()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
