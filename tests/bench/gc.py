#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Cost of GC tracking: BPF time per GC probe hit (BPF_ENABLE_STATS run_time_ns / run_cnt of
each GC program, on CPython, HotSpot and Go workloads), and tailprofd's CPU time for discovery
while processes exec at 50 per second (against the same load with --gc=off). Prints figures.

Usage (root): tests/bench/gc.py [SECONDS] [RUNS]"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from common import ROOT, Daemon, build_dir, median

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 10
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
SRC = os.path.join(ROOT, "tests", "workloads", "gc")
JDK = "/usr/lib/jvm/java-17-openjdk-amd64"


def gc_progs(m):
    out = {}
    for k, v in m.items():
        g = re.match(r'tailprof_gc_bpf_run_(time_seconds|count)_total\{program="(\w+)"\}', k)
        if g:
            out.setdefault(g.group(2), [0, 0])[0 if g.group(1) == "time_seconds" else 1] = v
    return out


def probe_costs(tmp):
    javac = subprocess.run([os.path.join(JDK, "bin", "javac"), "-d", tmp,
                            os.path.join(SRC, "GcLoop.java")])
    gobin = os.path.join(tmp, "gcloop")
    subprocess.run(["go", "build", "-o", gobin, os.path.join(SRC, "gcloop.go")], check=True,
                   env=dict(os.environ, GOCACHE=os.path.join(tmp, "gocache"), GO111MODULE="off",
                            CGO_ENABLED="0"))
    d = Daemon("--gc=auto")
    time.sleep(1)
    before = gc_progs(d.metrics())
    subprocess.run(["/usr/bin/python3.11", "-c",
                    "import gc, time\ntime.sleep(0.5)\nfor i in range(20000): gc.collect(0)"],
                   check=True)  # the sleep: discovery attaches within ~100 ms of exec
    if javac.returncode == 0:
        subprocess.run([os.path.join(JDK, "bin", "java"), "-cp", tmp, "GcLoop", "200"],
                       stdout=subprocess.DEVNULL, check=True)
    g = subprocess.Popen([gobin, "500", "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    time.sleep(0.5)
    g.communicate(b"go\n")
    time.sleep(1)
    after = gc_progs(d.metrics())
    d.stop()
    print("BPF cost per GC probe hit (run_time_ns / run_cnt):")
    print("  %-22s %10s %10s" % ("program", "hits", "ns/hit"))
    for prog in sorted(after):
        t = after[prog][0] - before.get(prog, [0, 0])[0]
        n = after[prog][1] - before.get(prog, [0, 0])[1]
        if n:
            print("  %-22s %10d %10.0f" % (prog, n, t / n * 1e9))


def exec_load(rate, seconds, programs):
    """Starts programs round-robin at rate per second for seconds; returns how many ran."""
    n = 0
    t0 = time.time()
    procs = []
    while time.time() - t0 < seconds:
        procs.append(subprocess.Popen([programs[n % len(programs)]]))
        n += 1
        for p in procs[:]:
            if p.poll() is not None:
                procs.remove(p)
        delay = t0 + n / rate - time.time()
        if delay > 0:
            time.sleep(delay)
    for p in procs:
        p.wait()
    return n


def discovery_cpu(mode, programs):
    d = Daemon("--gc=" + mode)
    time.sleep(1)
    m0 = d.metrics()
    t0 = time.time()
    n = exec_load(50, SECONDS, programs)
    time.sleep(0.6)
    m1 = d.metrics()
    elapsed = time.time() - t0
    d.stop()
    cpu = m1["tailprof_cpu_seconds_total"] - m0["tailprof_cpu_seconds_total"]
    scans = m1.get("tailprof_gc_scans_total", 0) - m0.get("tailprof_gc_scans_total", 0)
    attaches = m1.get("tailprof_gc_attaches_total", 0) - m0.get("tailprof_gc_attaches_total", 0)
    return 100 * cpu / elapsed, n / elapsed, scans, attaches


def main():
    if os.geteuid() != 0:
        print("needs root")
        sys.exit(1)
    tmp = tempfile.mkdtemp()
    try:
        probe_costs(tmp)
        true = shutil.which("true")
        fake_go = os.path.join(build_dir(), "tests", "fixtures", "gc_fixture_go")
        py = os.path.join(tmp, "python3.11")
        shutil.copy2("/usr/bin/python3.11", py)
        loads = [("/bin/true only", [true]),
                 ("half /bin/true, half a (fake) Go program", [true, fake_go])]
        print("\ntailprofd CPU with 50 execs/s (%% of one CPU, median of %d runs of %.0f s):"
              % (RUNS, SECONDS))
        for name, progs in loads:
            res = {}
            for mode in ("off", "auto"):
                runs = [discovery_cpu(mode, progs) for _ in range(RUNS)]
                res[mode] = runs
            off = median([r[0] for r in res["off"]])
            auto = median([r[0] for r in res["auto"]])
            r = res["auto"][0]
            print("  %-42s --gc=off %.2f%%  --gc=auto %.2f%%  discovery +%.2f%%  "
                  "(%.0f execs/s, %d maps reads, %d attaches in the first run)"
                  % (name, off, auto, auto - off, r[1], r[2], r[3]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
