#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Soak (issue 21): tailprofd at 999 Hz with a state directory for MINUTES (default 60) under
process churn (2,000 short processes a minute), threads created and ended, stages with a 4 s burst
every 2 minutes (spikes fire and are written), a Python and a Java runtime collecting garbage,
off-CPU load, and a client pulling profiles every 10 s and timing every API call.

The ring holds 10 minutes (--retention 10m, 60 windows of 10 s): full at 10 minutes, so that
memory after that is the daemon's steady state, not a ring still filling (with the default hour
it grows for the whole hour), and --pin-budget 12 keeps the pins to what the default budget is
to the default ring. The first ten windows' figures are taken once they closed, before
the ring lets them go.

Every INTERVAL seconds (default 10) it records the daemon's RSS and CPU time, the status counters
and the load average; every minute it prints a progress line. At the end: RSS at 10 minutes
(or a sixth of the run when shorter) and at the end and the change in %, the largest RSS, the
API's latencies (p50, p99, max; all calls, and the profile pulls), per-window completeness of
the first and the last ten closed windows (samples + idle + ringbuf_full against received,
received against expected, drops by reason), windows where that sum does not hold, and every
counter that shows loss. Targets (not asserted): RSS within 5% after the first 10 minutes, no
unexplained loss, the last windows as complete as the first, API p99 under 100 ms.

Usage (root): tests/bench/soak.py [MINUTES=60] [INTERVAL=10] [OUT_DIR]
OUT_DIR (optional) gets samples.csv (one row per interval) and summary.json."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from common import ROOT, build_dir, daemon, median

MINUTES = float(sys.argv[1]) if len(sys.argv) > 1 else 60
INTERVAL = float(sys.argv[2]) if len(sys.argv) > 2 else 10
OUT = sys.argv[3] if len(sys.argv) > 3 else None
CHURN_PER_MIN = 2000
RETENTION = "10m"
# The default pin budget (64) against the default ring (360 windows), scaled to this ring's 60:
# with 64, spikes every 2 minutes (3 windows each) fill the budget only after 40 minutes, and the
# windows pinned past the ring would grow memory for most of the hour, bounded but not steady.
PIN_BUDGET = 12
JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
PYTHON = "/usr/bin/python3.11"  # Debian's: USDT python:gc__start/done
WL = os.path.join(build_dir(), "tests", "workloads")

# The Python runtime: a thread started every 100 ms that allocates, collects and sleeps (threads
# created and ended, GC pauses, off-CPU time), for the given seconds.
PY_LOAD = r"""
import gc, sys, threading, time
end = time.time() + float(sys.argv[1])
def worker():
    junk = [[i] * 20 for i in range(5000)]
    for j in range(len(junk) - 1):
        junk[j].append(junk[j + 1])  # cycles for the collector
    gc.collect()
    time.sleep(0.05)
while time.time() < end:
    threading.Thread(target=worker).start()
    time.sleep(0.1)
"""


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else 0


def proc_rss_cpu(pid):
    """(RSS bytes, user + system CPU seconds) of pid."""
    with open("/proc/%d/status" % pid) as f:
        rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Churn(threading.Thread):
    """CHURN_PER_MIN short processes a minute (/bin/true and sh -c in turn), paced evenly."""

    def __init__(self, stop):
        super().__init__(daemon=True)
        self.stop, self.started = stop, 0

    def run(self):
        period, nxt = 60.0 / CHURN_PER_MIN, time.time()
        while not self.stop.is_set():
            argv = ["/bin/true"] if self.started % 2 else ["/bin/sh", "-c", "exit 0"]
            subprocess.run(argv)
            self.started += 1
            nxt += period
            delay = nxt - time.time()
            if delay > 0:
                time.sleep(delay)
            elif delay < -5:
                nxt = time.time()  # fell behind (a busy machine): do not burst to catch up


class Client(threading.Thread):
    """Every 10 s: the last 10 s of CPU and off-CPU profiles, status, windows, stages, spikes
    and /metrics, each call timed into calls[(path, seconds, status, monotonic start)]."""

    PATHS = ["/api/v1/profile?last=10s", "/api/v1/profile?type=offcpu&last=10s",
             "/api/v1/status", "/api/v1/windows?last=1m", "/api/v1/stages?last=1m",
             "/api/v1/spikes", "/metrics"]

    def __init__(self, d, stop):
        super().__init__(daemon=True)
        self.d, self.stop, self.calls = d, stop, []

    def run(self):
        while not self.stop.wait(10):
            for path in self.PATHS:
                t0 = time.monotonic()
                try:
                    status, _, _ = self.d.get(path, timeout=60)
                except OSError:
                    status = 0
                self.calls.append((path, time.monotonic() - t0, status, t0))


def loss_counters(m):
    """The counters of /metrics that say something was lost, with their values (non-zero)."""
    words = ("drop", "lost", "failed", "error", "evicted", "corrupt", "unpinned", "released")
    return {k: v for k, v in m.items() if v and any(w in k for w in words) and
            not k.startswith("tailprof_bench")}


def completeness(ws):
    """Sums over windows: samples, idle, ringbuf_full, received, expected, drops by reason."""
    out = {"windows": len(ws)}
    for k in ("samples", "idle_samples", "received_samples", "expected_samples"):
        out[k] = sum(w[k] for w in ws)
    out["drops"] = {}
    for w in ws:
        for k, v in w["drops"].items():
            out["drops"][k] = out["drops"].get(k, 0) + v
    rec = out["received_samples"]
    out["stored_of_received"] = (out["samples"] + out["idle_samples"] +
                                 out["drops"].get("ringbuf_full", 0)) / rec if rec else 0
    out["received_of_expected"] = rec / out["expected_samples"] if out["expected_samples"] else 0
    out["offcpu_samples"] = sum(w["offcpu"]["samples"] for w in ws)
    out["runq_count"] = sum(w["runq"]["count"] for w in ws)
    return out


def start_workloads(tmp, seconds, stop):
    procs = []
    conf = os.path.join(tmp, "stages.conf")
    pipeline = os.path.join(WL, "tp_pipeline")
    with open(conf, "w") as f:
        f.write("".join("[stage %s]\nbinary = %s\nfunction = %s\n\n" % (s, pipeline, s)
                        for s in ("fetch", "compute", "serialize")))
    # the last 4 s of every 2 minutes: enough of a 10 s window's requests to lift its p95
    env = dict(os.environ, TP_BURST_EVERY="120", TP_BURST_LEN="4")
    procs.append(subprocess.Popen([pipeline, str(seconds), os.path.join(tmp, "pipeline.log")],
                                  stdout=subprocess.DEVNULL, env=env))
    procs.append(subprocess.Popen([PYTHON, "-c", PY_LOAD, str(seconds)]))
    procs.append(subprocess.Popen([os.path.join(WL, "tp_offcpu"), str(seconds)],
                                  stdout=subprocess.DEVNULL))
    java_dir = os.path.join(tmp, "java")
    os.makedirs(java_dir)
    subprocess.run([os.path.join(JDK, "bin", "javac"), "-d", java_dir,
                    os.path.join(ROOT, "tests", "workloads", "gc", "GcLoop.java")], check=True)
    # GcLoop: 20,000 objects and a System.gc() about every 30 ms; rounds enough for the run
    procs.append(subprocess.Popen([os.path.join(JDK, "bin", "java"), "-Xmx64m", "-cp",
                                   java_dir, "GcLoop", str(int(seconds * 40))],
                                  stdout=subprocess.DEVNULL))
    churn = Churn(stop)
    churn.start()
    return procs, churn


def main():
    if os.geteuid() != 0:
        sys.exit("soak.py: run as root")
    tmp = tempfile.mkdtemp(prefix="tp_soak.")
    seconds = MINUTES * 60
    stop = threading.Event()
    conf = os.path.join(tmp, "stages.conf")  # start_workloads writes it
    procs, churn = [], None
    d = None
    rows = []
    try:
        procs, churn = start_workloads(tmp, seconds + 120, stop)
        d = daemon.Daemon(os.path.join(build_dir(), "daemon", "tailprofd"), "--frequency", "999",
                          "--config", conf, "--state-dir", os.path.join(tmp, "state"),
                          "--retention", RETENTION, "--pin-budget", str(PIN_BUDGET),
                          wait_s=120)
        client = Client(d, stop)
        client.start()
        t0 = time.monotonic()
        churn0 = churn.started
        print("soak: %g min at 999 Hz, sampling every %g s; tailprofd pid %d; %s" %
              (MINUTES, INTERVAL, d.proc.pid, time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                            time.gmtime())), flush=True)
        next_progress = 60
        first10 = None
        while time.monotonic() - t0 < seconds:
            time.sleep(INTERVAL - (time.monotonic() - t0) % INTERVAL)
            if d.proc.poll() is not None:
                raise RuntimeError("tailprofd exited: " + d.output()[-3000:])
            rss, cpu = proc_rss_cpu(d.proc.pid)
            st = d.json("/api/v1/status")
            row = {"t": round(time.monotonic() - t0, 1), "rss": rss, "cpu_s": cpu,
                   "load1": os.getloadavg()[0], "samples": st["samples"],
                   "idle_samples": st["idle_samples"], "received": st["received_samples"],
                   "expected": st["expected_samples"], "drops": st["drops"],
                   "stacks": st["stacks"], "processes": st["processes"],
                   "objects": st["objects"], "windows": st["windows"],
                   "spikes": st.get("spikes", {}).get("spikes", 0),
                   "pinned": st.get("spikes", {}).get("pinned_windows", 0),
                   "churn": churn.started - churn0}
            rows.append(row)
            if first10 is None:
                ws = [w for w in d.json("/api/v1/windows")["windows"] if not w["current"]]
                if len(ws) >= 11:  # the first is cut at the start
                    first10 = completeness(ws[1:11])
            if row["t"] >= next_progress:
                next_progress += 60
                lat = [c[1] for c in client.calls]
                print("t=%5.0fs rss=%.1fMB cpu=%.2f%% load=%.1f windows=%d samples=%d "
                      "received=%d drops=%d stacks=%d procs=%d spikes=%d pinned=%d churn=%d "
                      "api_p99=%.0fms api_max=%.0fms" %
                      (row["t"], rss / 1e6, 100 * cpu / row["t"], row["load1"],
                       row["windows"], row["samples"], row["received"], row["drops"],
                       row["stacks"], row["processes"], row["spikes"], row["pinned"], row["churn"],
                       1e3 * percentile(lat, 99), 1e3 * max(lat or [0])), flush=True)
        stop.set()
        client.join(timeout=120)
        summary = summarize(d, rows, client.calls, churn.started - churn0, first10, t0)
        print(json.dumps(summary, indent=1))
        if OUT:
            os.makedirs(OUT, exist_ok=True)
            with open(os.path.join(OUT, "summary.json"), "w") as f:
                json.dump(summary, f, indent=1)
            with open(os.path.join(OUT, "samples.csv"), "w") as f:
                keys = list(rows[0])
                f.write(",".join(keys) + "\n")
                for r in rows:
                    f.write(",".join(str(r[k]) for k in keys) + "\n")
    finally:
        stop.set()
        for p in procs:
            p.kill()
            p.wait()
        if d and d.proc.poll() is None:
            print("tailprofd stopped: exit %d" % d.stop())
        shutil.rmtree(tmp, ignore_errors=True)


def summarize(d, rows, calls, churn, first10, t0):
    ten = min(600, rows[-1]["t"] / 6)
    at10 = next(r for r in rows if r["t"] >= ten)
    end = rows[-1]
    ws = [w for w in d.json("/api/v1/windows")["windows"] if not w["current"]]
    bad = [w["start"] for w in ws if w["samples"] + w["idle_samples"] +
           w["drops"]["ringbuf_full"] != w["received_samples"]]
    lat = [c[1] for c in calls]
    prof = [c[1] for c in calls if c[0].startswith("/api/v1/profile")]
    m = d.metrics()
    return {
        "minutes": end["t"] / 60,
        "rss_mb_at": {"t_s": at10["t"], "mb": at10["rss"] / 1e6},
        "rss_mb_end": end["rss"] / 1e6,
        "rss_change_pct": 100 * (end["rss"] - at10["rss"]) / at10["rss"],
        "rss_mb_max_after": max(r["rss"] for r in rows if r["t"] >= at10["t"]) / 1e6,
        "rss_mb_max": max(r["rss"] for r in rows) / 1e6,
        "daemon_cpu_pct": 100 * (end["cpu_s"] - rows[0]["cpu_s"]) / (end["t"] - rows[0]["t"]),
        "load1_mean": sum(r["load1"] for r in rows) / len(rows),
        "load1_max": max(r["load1"] for r in rows),
        "churn_processes": churn,
        "churn_per_min": churn / (end["t"] / 60),
        "api_calls": len(calls),
        "api_failed": sum(1 for c in calls if c[2] != 200),
        "api_ms": {"p50": 1e3 * median(lat) if lat else 0, "p99": 1e3 * percentile(lat, 99),
                   "max": 1e3 * max(lat or [0])},
        "profile_ms": {"p50": 1e3 * median(prof) if prof else 0,
                       "p99": 1e3 * percentile(prof, 99), "max": 1e3 * max(prof or [0])},
        "slowest_calls": [{"t_s": round(c[3] - t0, 1), "path": c[0], "ms": round(1e3 * c[1], 1)}
                          for c in sorted(calls, key=lambda c: -c[1])[:10]],
        "windows_closed": len(ws),
        "windows_first10": first10,
        "windows_last10": completeness(ws[-10:]),
        "windows_breaking_invariant (held)": bad,
        "stacks_end": end["stacks"], "processes_end": end["processes"],
        "objects_end": end["objects"], "spikes_end": end["spikes"],
        "loss_counters": loss_counters(m),
    }


if __name__ == "__main__":
    main()
