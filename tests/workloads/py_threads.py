# SPDX-License-Identifier: GPL-2.0-only
"""Many threads, one busy: N idle threads wait on an Event while the main thread spins in
main_spin for SECONDS. The main thread's samples must show main_spin or no Python frames at all,
never an idle thread's idle_wait (more threads than the BPF search looks at).
Usage: py_threads.py N SECONDS [COMM]: COMM (up to 15 bytes) names the process, so that a test
can find it by comm (in a PID namespace its pid is not the host's)."""
import ctypes
import sys
import threading
import time


def idle_wait(ev):
    ev.wait()


def main_spin(until):
    x = 0
    while time.monotonic() < until:
        x += 1
    return x


n, seconds = int(sys.argv[1]), float(sys.argv[2])
if len(sys.argv) > 3:
    ctypes.CDLL(None).prctl(15, sys.argv[3].encode(), 0, 0, 0)  # PR_SET_NAME
ev = threading.Event()
threads = [threading.Thread(target=idle_wait, args=(ev,)) for _ in range(n)]
for t in threads:
    t.start()
main_spin(time.monotonic() + seconds)
ev.set()
for t in threads:
    t.join()
