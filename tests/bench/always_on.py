#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The always-on bill (issue 19): what tailprofd costs at its defaults, all-in (the daemon's CPU
time plus the BPF run time of every program it loaded, from BPF_ENABLE_STATS), in three
scenarios, each alternated run by run with the same load without tailprofd and with perf
record -g + perf script:

- idle: nothing but the machine's own background;
- churn: every CPU busy (tp_hotcold spinners) and 50 process starts a second, a mix of short C
  programs (/bin/true, a 2 ms tp_short), Python (python3.11 -c pass) and Go (a built gcloop
  doing one GC), at the defaults (99 Hz);
- churn at 999 Hz (.eh_frame unwinding, as by default).

Also busy without churn at 99 Hz, so that the daemon's CPU per process started is the
difference over the processes started. Prints per scenario (medians of RUNS runs): daemon CPU,
BPF time per program, ns per sample, daemon us and /proc/PID/maps reads per process, all-in % of
one CPU, the spinners' CPU time lost against the run without tailprofd, and perf's CPU. Targets (not asserted):
churn all-in <= 0.2% at 99 Hz and <= 1% at 999 Hz; <= 100 us of daemon CPU per process.

Usage (root): tests/bench/always_on.py [SECONDS_PER_RUN] [RUNS] [SCENARIOS]
SCENARIOS: comma-separated subset of idle,busy,churn,churn999 (default all)."""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from common import ROOT, Daemon, build_dir, daemon, median, workload

SECONDS = 20  # per run (argv[1])
RUNS = 3  # per scenario and kind (argv[2])
SCENARIOS = ["idle", "busy", "churn", "churn999"]  # argv[3]
RATE = 50  # process starts a second
PY_SHARE = 0.25  # the churn's share of Python processes (main() sets it)
SETTLE = 3  # seconds after tailprofd is healthy before measuring
CLK = os.sysconf("SC_CLK_TCK")
MAPS_READS = 'tailprof_maps_reads_total{source="file"}'  # /proc/PID/maps opened and read
FROM_EXEC = "tailprof_python_processes_from_exec_total"  # Python processes walked from exec


def go_program(tmp):
    """A built gcloop (one GC and exit), or None without a Go toolchain."""
    if not shutil.which("go"):
        return None
    out = os.path.join(tmp, "gcloop")
    r = subprocess.run(["go", "build", "-o", out,
                        os.path.join(ROOT, "tests", "workloads", "gc", "gcloop.go")],
                       env=dict(os.environ, GOCACHE=os.path.join(tmp, "gocache"),
                                GO111MODULE="off", CGO_ENABLED="0"),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out if r.returncode == 0 else None


def churn_kinds(tmp):
    """The churn's kinds of process by name (true, short, python and, with a Go toolchain, go),
    each the command that starts one; tmp: where the Go program is built."""
    kinds = {"true": ["/bin/true"],
             "short": [os.path.join(build_dir(), "tests", "workloads", "tp_short"), "0.002"],
             "python": ["/usr/bin/python3.11", "-c", "pass"]}
    gobin = go_program(tmp)
    if gobin:
        kinds["go"] = [gobin, "1"]
    return kinds


class Churn:
    """Starts the programs round-robin at RATE a second in a thread until stopped."""

    def __init__(self, programs):
        self.programs = programs
        self.started = 0
        self.stop_flag = False
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        procs = []
        t0 = time.time()
        while not self.stop_flag:
            procs.append(subprocess.Popen(self.programs[self.started % len(self.programs)],
                                          stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
            self.started += 1
            procs = [p for p in procs if p.poll() is None]
            delay = t0 + self.started / RATE - time.time()
            if delay > 0:
                time.sleep(delay)
        for p in procs:
            p.wait()

    def stop(self):
        self.stop_flag = True
        self.thread.join()


def is_python(argv):
    """Whether the program of argv (a list) is a Python interpreter."""
    return os.path.basename(argv[0]).startswith("python")


def register_interpreters(d, programs):
    """Makes daemon d know the churn's Python interpreters (each new process of one walked from
    its exec), as it does on any host within seconds of a Python process that lives long enough
    for its maps to be read: without that, each short-lived Python process costs less and gets
    no Python frames, and runs of the same build differed 4x (28 against 130 us a process).
    For each Python program of programs (argv lists): one process of it that sleeps a second
    (its block makes tailprofd read its maps), then one that does nothing, until tailprofd walks
    such a one from its exec (tailprof_python_processes_from_exec_total grows); three tries.
    Returns whether it does for all of them."""
    ok = True
    for exe in sorted({p[0] for p in programs if is_python(p)}):
        for _ in range(3):
            subprocess.run([exe, "-c", "import time; time.sleep(1)"])
            before = d.metrics().get(FROM_EXEC, 0)
            subprocess.run([exe, "-c", "pass"])
            deadline = time.time() + 2
            while time.time() < deadline and d.metrics().get(FROM_EXEC, 0) <= before:
                time.sleep(0.1)
            if d.metrics().get(FROM_EXEC, 0) > before:
                break
        else:
            print("%s: tailprofd does not walk %s's processes from their exec: they are measured "
                  "without their Python frames" % (os.path.basename(sys.argv[0]), exe))
            ok = False
    return ok


def proc_cpu(pid):
    """CPU seconds of process pid, its threads included, from their schedstat (ns, unlike the
    10 ms ticks of /proc/PID/stat). Threads that exited are in the process's stat only: both
    are read, the larger wins."""
    ns = 0
    task_dir = "/proc/%d/task" % pid
    for tid in os.listdir(task_dir):
        try:
            with open(os.path.join(task_dir, tid, "schedstat")) as f:
                ns += int(f.read().split()[0])
        except OSError:
            pass
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return max(ns / 1e9, (int(fields[11]) + int(fields[12])) / CLK)


def side_run(binary, freq, programs, seconds):
    """One run of a side-by-side comparison: tailprofd binary at its defaults but freq Hz, with
    Churn(programs) (none if programs is empty) once it is up, measured for seconds after a
    settling 2 s. Returns a dict: its metrics before and after (m0, m1), its CPU seconds over the
    span (cpu), the span in seconds (span) and the processes the churn started in it (starts)."""
    d = daemon.Daemon(binary, *(["--frequency", str(freq)] if freq != 99 else []))
    churn = None
    try:
        time.sleep(3)
        register_interpreters(d, programs or [])
        churn = Churn(programs) if programs else None
        time.sleep(2)  # the programs' objects known: steady state
        m0, c0, s0, t0 = d.metrics(), proc_cpu(d.proc.pid), churn.started if churn else 0, \
            time.time()
        time.sleep(seconds)
        m1, c1, s1, t1 = d.metrics(), proc_cpu(d.proc.pid), churn.started if churn else 0, \
            time.time()
    finally:
        if churn:
            churn.stop()
        d.stop()
    return {"m0": m0, "m1": m1, "cpu": c1 - c0, "span": t1 - t0, "starts": s1 - s0}


def alternate(a, b, rounds, one_run, show, load=None):
    """Side by side: one_run(binary) for tailprofd binaries a and b alternately, rounds times
    each, with tp_hotcold on every CPU (or the processes load(), if given, starts: a list of
    Popen, killed at the end); show(binary, result) prints each result as it comes.
    Returns {binary: [results]}."""
    spinners = load() if load else [workload("tp_hotcold", 100000) for _ in range(os.cpu_count())]
    res = {a: [], b: []}
    try:
        for _ in range(rounds):
            for binary in (a, b):
                r = one_run(binary)
                res[binary].append(r)
                show(binary, r)
                sys.stdout.flush()
    finally:
        for p in spinners:
            p.kill()
    return res


def bpf_progs(pid):
    """{program id: (run_time_ns, run_cnt)} of the BPF programs process pid holds open, from
    their fdinfo (BPF_ENABLE_STATS is on while tailprofd runs)."""
    progs = {}
    fd_dir = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fd_dir):
        try:
            with open(os.path.join(fd_dir, fd)) as f:
                info = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            continue
        if "prog_id" in info and "run_time_ns" in info:
            progs[int(info["prog_id"])] = (int(info["run_time_ns"]), int(info["run_cnt"]))
    return progs


def prog_names():
    """{program id: name} from bpftool."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    return {p["id"]: p.get("name", str(p["id"])) for p in json.loads(out or "[]")}


def spinners_cpu(spinners):
    return sum(proc_cpu(p.pid) for p in spinners)


def measure(spinners, churn_programs, run, freq):
    """One run of SECONDS: run(...) is "tailprofd", "none" or "perf". Returns a dict."""
    d = None
    tmp = None
    if run == "tailprofd":
        d = Daemon(*(["--frequency", str(freq)] if freq != 99 else []))
        time.sleep(SETTLE)
        register_interpreters(d, churn_programs or [])
    churn = Churn(churn_programs) if churn_programs else None
    if churn:
        time.sleep(1)
    if run == "perf":
        tmp = tempfile.mkdtemp()
        data = os.path.join(tmp, "perf.data")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        perf = subprocess.Popen(["perf", "record", "-F", str(freq), "-a", "-g", "-o", data],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s0 = spinners_cpu(spinners)
    started0 = churn.started if churn else 0
    if d:
        c0, b0 = proc_cpu(d.proc.pid), bpf_progs(d.proc.pid)
        m0 = d.metrics()
    t0 = time.time()
    time.sleep(SECONDS)
    elapsed = time.time() - t0
    res = {"spinners_pct": 100 * (spinners_cpu(spinners) - s0) / elapsed,
           "starts": (churn.started - started0) if churn else 0}
    if d:
        c1, b1 = proc_cpu(d.proc.pid), bpf_progs(d.proc.pid)
        m1 = d.metrics()
        res["maps_reads"] = m1.get(MAPS_READS, 0) - m0.get(MAPS_READS, 0)
        res["from_exec"] = m1.get(FROM_EXEC, 0) - m0.get(FROM_EXEC, 0)
        res["daemon_pct"] = 100 * (c1 - c0) / elapsed
        names = prog_names()
        res["progs"] = {}
        for k in b1:
            t, n = res["progs"].get(names.get(k, str(k)), (0, 0))
            res["progs"][names.get(k, str(k))] = (t + b1[k][0] - b0.get(k, (0, 0))[0],
                                                  n + b1[k][1] - b0.get(k, (0, 0))[1])
        res["bpf_pct"] = 100 * sum(v[0] for v in res["progs"].values()) / 1e9 / elapsed
        res["all_in_pct"] = res["daemon_pct"] + res["bpf_pct"]
        res["daemon_s"] = c1 - c0
        res["elapsed"] = elapsed
    if churn:
        churn.stop()
    if run == "perf":
        perf.send_signal(2)
        perf.wait()
        subprocess.run(["perf", "script", "-i", data], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        res["perf_pct"] = 100 * ((after.ru_utime - before.ru_utime) +
                                 (after.ru_stime - before.ru_stime)) / elapsed
        shutil.rmtree(tmp)
    if d:
        d.stop()
    return res


def main():
    global SECONDS, RUNS, SCENARIOS, PY_SHARE
    if os.geteuid() != 0:
        sys.exit("always_on.py: run as root")
    if len(sys.argv) > 1:
        SECONDS = float(sys.argv[1])
    if len(sys.argv) > 2:
        RUNS = int(sys.argv[2])
    if len(sys.argv) > 3:
        SCENARIOS = sys.argv[3].split(",")
    tmp = tempfile.mkdtemp()
    programs = list(churn_kinds(tmp).values())
    PY_SHARE = sum(is_python(p) for p in programs) / len(programs)
    print("always_on: %d CPUs, %d runs of %.0f s per scenario, %d process starts/s of %s" % (
        os.cpu_count(), RUNS, SECONDS, RATE, ", ".join(os.path.basename(p[0])
                                                       for p in programs)))
    sys.stdout.flush()
    results = {}
    try:
        for sc in SCENARIOS:
            busy = sc != "idle"
            churn = programs if sc.startswith("churn") else None
            freq = 999 if sc == "churn999" else 99
            kinds = ["tailprofd", "none"] + (["perf"] if churn else [])
            if sc == "busy":
                kinds = ["tailprofd"]
            spinners = [workload("tp_hotcold", 100000) for _ in range(os.cpu_count())] \
                if busy else []
            runs = {k: [] for k in kinds}
            try:
                for _ in range(RUNS):
                    for k in kinds:
                        runs[k].append(measure(spinners, churn, k, freq))
            finally:
                for p in spinners:
                    p.kill()
                    p.wait()
            results[sc] = runs
            report(sc, freq, runs, results)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(sc, freq, runs, results):
    ours = runs["tailprofd"]
    med = {k: median([r[k] for r in ours]) for k in ("daemon_pct", "bpf_pct", "all_in_pct")}
    line = "%-9s %3d Hz: all-in %.3f%% of one CPU (daemon %.3f%% + BPF %.3f%%)" % (
        sc, freq, med["all_in_pct"], med["daemon_pct"], med["bpf_pct"])
    if "none" in runs:
        lost = median([r["spinners_pct"] for r in runs["none"]]) - \
            median([r["spinners_pct"] for r in ours])
        line += "; spinners lost %.2f%%" % lost if runs["none"][0]["spinners_pct"] else ""
    if "perf" in runs:
        line += "; perf record -g + perf script %.3f%%" % median(
            [r["perf_pct"] for r in runs["perf"]])
    starts = median([r["starts"] for r in ours])
    if starts:
        line += "; %.0f process starts/s" % (starts / SECONDS)
    if sc.startswith("churn") and "busy" in results:
        busy = median([r["daemon_s"] / r["elapsed"] for r in results["busy"]["tailprofd"]])
        churn = median([r["daemon_s"] / r["elapsed"] for r in ours])
        line += "; daemon %.0f us and %.2f maps reads per process started" % (
            1e6 * (churn - busy) / max(starts / SECONDS, 1),
            median([r["maps_reads"] for r in ours]) / max(starts, 1))
        line += "; Python processes walked from exec %.0f%%" % (
            100 * median([r["from_exec"] for r in ours]) / max(starts * PY_SHARE, 1))
    print(line)
    names = sorted({k for r in ours for k in r["progs"]})
    for n in names:
        t = median([r["progs"].get(n, (0, 0))[0] for r in ours])
        c = median([r["progs"].get(n, (0, 0))[1] for r in ours])
        if c:
            print("    %-24s %9.0f runs/s %8.0f ns/run %.3f%%" % (
                n, c / SECONDS, t / c, 100 * t / 1e9 / SECONDS))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
