#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Memory of the per-sample records that request profiles take (window.h): tailprofd at 999 Hz
with both CPUs busy (two tp_hotcold), for each window length the records held and their heap
bytes, sampled every second after the ring has filled its first windows; the records are kept
for the current and the previous window only (no pins here), so the figure is bounded by two
windows' samples whatever the retention. Target (not asserted): a few MB at the default 10 s
windows.

Usage (root): tests/bench/records.py [SECONDS_PER_WINDOW_LENGTH=35]"""
import os
import sys
import time

from common import Daemon, workload

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 35


def measure(window):
    d = Daemon("--frequency", "999", "--window", window, "--retention", "1h")
    procs = [workload("tp_hotcold", SECONDS + 5) for _ in range(2)]
    try:
        time.sleep(5)  # the first windows
        peak_bytes = peak_records = 0
        seen = []
        t_end = time.time() + SECONDS - 5
        while time.time() < t_end:
            m = d.metrics()
            peak_bytes = max(peak_bytes, m["tailprof_record_bytes"])
            peak_records = max(peak_records, m["tailprof_records"])
            seen.append(m["tailprof_record_bytes"])
            time.sleep(1)
        m = d.metrics()
        print("window %s: %d windows held, samples %d; records held: peak %d (%.0f bytes each "
              "incl. spare capacity), record memory peak %.2f MB, mean %.2f MB; all windows "
              "%.2f MB" % (window, m["tailprof_windows"], m["tailprof_samples_total"],
                           peak_records, peak_bytes / max(peak_records, 1), peak_bytes / 2**20,
                           sum(seen) / len(seen) / 2**20, m["tailprof_window_bytes"] / 2**20))
    finally:
        for p in procs:
            p.kill()
        d.stop()


def main():
    if os.geteuid() != 0:
        sys.exit("records.py: run as root")
    for window in ("1s", "10s"):
        measure(window)


if __name__ == "__main__":
    main()
