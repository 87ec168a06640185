#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Daemon memory with a full ring (--window 1s --retention 6m) while 200 processes run, and the
time of GET /api/v1/profile over the whole ring (with the workers stopped, so the figure is the
query's own cost, not the scheduler's). Targets (not asserted): RSS <= 64 MB, profile
<= 200 ms.

Usage (root): tests/bench/memory.py [FILL_SECONDS=370] [PROCESSES=200]"""
import os
import signal
import sys
import time

from common import Daemon, median, workload

FILL = float(sys.argv[1]) if len(sys.argv) > 1 else 370
NPROC = int(sys.argv[2]) if len(sys.argv) > 2 else 200


def main():
    if os.geteuid() != 0:
        sys.exit("memory.py: run as root")
    d = Daemon("--window", "1s", "--retention", "6m")
    procs = [workload("tp_hotcold" if i % 2 else "tp_syscalls", FILL + 60) for i in range(NPROC)]
    try:
        time.sleep(FILL)
        m = d.metrics()
        # time the query itself, not the scheduler: 200 CPU-bound processes on 2 CPUs would
        # leave the daemon a 1/100 share of a CPU
        for p in procs:
            p.send_signal(signal.SIGSTOP)
        times = []
        for _ in range(5):
            t0 = time.time()
            status, _, body = d.get("/api/v1/profile")
            assert status == 200, body
            times.append(time.time() - t0)
        m2 = d.metrics()
        print("ring %d of %d windows, %d processes, %d samples, %d stacks: RSS %.1f MB "
              "(windows %.1f MB, interned %.1f MB); GET /api/v1/profile (all windows, %d KB) "
              "median of 5: %.0f ms; RSS after queries %.1f MB" %
              (m["tailprof_windows"], m["tailprof_windows_max"], NPROC, m["tailprof_samples_total"],
               m["tailprof_stacks"], m["tailprof_resident_memory_bytes"] / 2**20,
               m["tailprof_window_bytes"] / 2**20, m["tailprof_interned_bytes"] / 2**20,
               len(body) // 1024, 1000 * median(times),
               m2["tailprof_resident_memory_bytes"] / 2**20))
    finally:
        for p in procs:
            p.kill()
        d.stop()


if __name__ == "__main__":
    main()
