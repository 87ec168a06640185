# SPDX-License-Identifier: GPL-2.0-only
"""A Python service with a known answer: each round spends 3 ms (wall clock, busy) in
compute_features and 1 ms in serialize, so a CPU profile gives compute_features 75% of the two.
Each round's length is scaled by a random factor (0.5 to 1.5, the 3:1 split kept): rounds of one
fixed length lock in step with a 99 Hz sampling timer under emulation, where the matrix saw 51% to
98% from run to run. Their C calls (math.sin, json.dumps) stay between the Python frames.
Usage: py_features.py SECONDS [DEPTH]: DEPTH (default 0) more Python frames under handle (for benchmarks)."""
import json
import math
import random
import sys
import time


def compute_features(until):
    x = 0.0
    while time.perf_counter() < until:
        for i in range(20):
            x += math.sin(i)  # compute line
    return x


def serialize(until):
    s = ""
    while time.perf_counter() < until:
        s = json.dumps({"a": [1, 2, 3], "b": "x"})  # serialize line
    return s


def handle():
    scale = random.uniform(0.5, 1.5)
    compute_features(time.perf_counter() + 0.003 * scale)
    serialize(time.perf_counter() + 0.001 * scale)


def nest(depth, end):
    if depth > 0:
        return nest(depth - 1, end)
    while time.monotonic() < end:
        handle()


end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 5)
if len(sys.argv) > 2:
    nest(int(sys.argv[2]), end)
while time.monotonic() < end:
    handle()
