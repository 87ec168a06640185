# SPDX-License-Identifier: GPL-2.0-only
"""What the tests that hold tailprofd's figures to tp_pipeline's own need: its log
(tests/workloads/pipeline.c) and the nearest rank tailprofd uses for a percentile."""


def nearest_rank(values, permille):
    """The nearest-rank percentile of values (permille 950: p95), 0 for none: the value at rank
    ceil(count * permille / 1000), at least 1, in integers as tailprofd ranks
    (histogram__rank, daemon/histogram.c)."""
    v = sorted(values)
    return v[max(1, -(-len(v) * permille // 1000)) - 1] if v else 0


def read(path):
    """(start, rows) of a tp_pipeline log written in a spike or before-and-after mode: start,
    the "# start" line's Unix ns (CLOCK_REALTIME when serving began); rows, each call in order as
    (offset ns from start, stage, inside ns, around ns). Requests run back to back, so a call
    starts at start plus the around time of every call before it (the logging between calls,
    some microseconds each, is left out)."""
    rows, t = [], 0
    with open(path) as f:
        first = f.readline().split()
        assert first[:2] == ["#", "start"], first
        for line in f:
            _, stage, inside, around = line.split()[:4]
            rows.append((t, stage, int(inside), int(around)))
            t += int(around)
    return int(first[2]), rows
