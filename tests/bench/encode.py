#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Profile encoding benchmark: the time GET /api/v1/profile takes on a realistic mix (the pyenv
CPython running pure-Python code, a C++ program, libc's qsort with its debug file, the C
workloads): the first request (which reads DWARF for source lines, for at most 500 ms), the
median of requests 2 to 4 (which read on where the first stopped) and of the last 3 of 8 (the
caches full), with the size of the profile and its Line entries; then the lines figures of the
largest objects with DWARF here (tp_bench_lines). With a second build directory (an older
commit's), the same for it, side by side.
Usage: tests/bench/encode.py [SECONDS] [OTHER_BUILD_DIR]"""
import os
import subprocess
import sys
import time

from common import Daemon, median

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from pprof_decode import Profile  # noqa: E402

PY = os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11")
PY_WORK = """
import json, math, time
end = time.time() + SECONDS
def features(i):
    return [math.sin(i * k) * math.sqrt(k + 1) for k in range(50)]
while time.time() < end:
    json.dumps({"f": features(int(time.time() * 1000) % 977)})
"""


def run_mix(build, seconds):
    wl = os.path.join(build, "tests", "workloads")
    procs = [subprocess.Popen([os.path.join(wl, name), str(seconds)], stdout=subprocess.DEVNULL)
             for name in ("tp_hotcold", "tp_libc_names", "tp_names", "tp_qsort")]
    if os.path.exists(PY):
        procs.append(subprocess.Popen([PY, "-c", PY_WORK.replace("SECONDS", str(seconds))]))
    for p in procs:
        p.wait()


def measure(build, seconds, rounds=8):
    os.environ["TAILPROF_BUILD_DIR"] = build
    d = Daemon("--frequency", "997", "--window", "1s", "--retention", "10m")
    try:
        run_mix(build, seconds)
        time.sleep(1.5)
        times, body = [], None
        for _ in range(rounds):
            t0 = time.time()
            status, _, body = d.get("/api/v1/profile?last=5m")
            times.append(time.time() - t0)
            assert status == 200, status
        prof = Profile(body)
        lines = sum(len(loc["line"]) for loc in prof.raw["location"])
        withline = sum(1 for loc in prof.raw["location"] if any(ln["line"] for ln in loc["line"]))
        return {"first_ms": times[0] * 1e3, "next_ms": median(times[1:4]) * 1e3,
                "steady_ms": median(times[-3:]) * 1e3,
                "bytes": len(body), "samples": len(prof.samples),
                "locations": len(prof.raw["location"]), "lines": lines, "with_line": withline}
    finally:
        d.stop()


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10
    builds = [os.environ.get("TAILPROF_BUILD_DIR",
                             os.path.join(os.path.dirname(__file__), "..", "..", "build"))]
    if len(sys.argv) > 2:
        builds.append(sys.argv[2])
    builds = [os.path.abspath(b) for b in builds]
    print("%-36s %9s %9s %9s %9s %8s %9s %8s %9s" % (
        "build", "first ms", "next ms", "steady ms", "bytes", "samples", "locations", "lines",
        "w/ line"))
    for b in builds:
        r = measure(b, seconds)
        print("%-36s %9.1f %9.1f %9.1f %9d %8d %9d %8d %9d" % (
            b[-36:], r["first_ms"], r["next_ms"], r["steady_ms"], r["bytes"], r["samples"],
            r["locations"], r["lines"], r["with_line"]))
    tool = os.path.join(builds[0], "tests", "bench", "tp_bench_lines")
    objs = [os.path.join(os.path.dirname(PY), "..", "lib", "libpython3.11.so.1.0"),
            os.path.join(builds[0], "daemon", "tailprofd"), "/usr/lib/x86_64-linux-gnu/libc.so.6"]
    subprocess.run([tool] + [os.path.realpath(o) for o in objs if os.path.exists(o)], check=True)


if __name__ == "__main__":
    main()
