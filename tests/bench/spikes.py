#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Spikes: detection and explanation cost per window with 50 stages (tp_bench_spikes, synthetic
windows), and, on a live tailprofd at 999 Hz with the pipeline's bursts every 4 s, the latency of
`tailprof pull --spike latest` (with and without --baseline, whole-window profiles), of
GET /api/v1/spikes and of `tailprof explain latest`. Prints medians of RUNS; asserts nothing.

Usage (root): tests/bench/spikes.py [RUNS]"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

from common import Daemon, build_dir, median

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 7
BUILD = build_dir()
CLI = os.path.join(BUILD, "cli", "tailprof")
PIPELINE = os.path.join(BUILD, "tests", "workloads", "tp_pipeline")
TMP = tempfile.mkdtemp(prefix="tp_bench_spikes.")


def timed(cmd):
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


def main():
    print(subprocess.run([os.path.join(BUILD, "tests", "bench", "tp_bench_spikes")],
                         check=True, stdout=subprocess.PIPE, text=True).stdout, end="")
    conf = os.path.join(TMP, "stages.conf")
    with open(conf, "w") as f:
        f.write("".join("[stage %s]\nbinary = %s\nfunction = %s\n\n" % (s, PIPELINE, s)
                        for s in ("fetch", "compute", "serialize")))
    d = Daemon("--window", "1s", "--frequency", "999", "--config", conf)
    try:
        subprocess.run([PIPELINE, "30", os.path.join(TMP, "log")], check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, TP_BURST_EVERY="4"))
        time.sleep(2.5)
        out = os.path.join(TMP, "s.pb.gz")
        base = os.path.join(TMP, "b.pb.gz")
        srv = ["--server", d.url]
        pull = [timed([CLI] + srv + ["pull", "--spike", "latest", "-o", out])
                for _ in range(RUNS)]
        both = [timed([CLI] + srv + ["pull", "--spike", "latest", "-o", out, "--baseline", base])
                for _ in range(RUNS)]
        lst = []
        for _ in range(RUNS):
            t0 = time.monotonic()
            d.json("/api/v1/spikes")
            lst.append(time.monotonic() - t0)
        explain = [timed([CLI] + srv + ["explain", "latest"]) for _ in range(RUNS)]
        n = len(d.json("/api/v1/spikes")["spikes"])
        print("live tailprofd, 999 Hz, 1 s windows, %d spikes held (medians of %d):" % (n, RUNS))
        print("  tailprof pull --spike latest: %.0f ms; with --baseline: %.0f ms" %
              (median(pull) * 1e3, median(both) * 1e3))
        print("  GET /api/v1/spikes: %.1f ms; tailprof explain latest: %.0f ms" %
              (median(lst) * 1e3, median(explain) * 1e3))
    finally:
        d.stop()
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
