# SPDX-License-Identifier: GPL-2.0-only
"""Off-CPU known answer for Python frames: a thread sleeps 20 ms in fetch_from_store per round
(time.sleep releases the GIL) while the main thread spins holding it. The off-CPU profile must
put the sleeps under fetch_from_store. Usage: py_offcpu.py SECONDS."""
import sys
import threading
import time


def fetch_from_store(n):
    time.sleep(0.020)  # sleep line
    return n


def fetcher(end):
    n = 0
    while time.monotonic() < end:
        n = fetch_from_store(n + 1)


def spin(end):
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 5)
t = threading.Thread(target=fetcher, args=(end,), name="fetcher")
t.start()
spin(end)
t.join()
