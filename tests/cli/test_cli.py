#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Tests the tailprof CLI end to end against a fake tailprofd (stdlib only, no root)."""
import gzip
import http.server
import json
import datetime
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

STATUS = {
    "version": "0.1.0", "hostname": "h", "kernel": "6.1.0", "pid": 123,
    "started": "2026-11-29T21:00:00.000Z", "started_unix_ns": 1795986000000000000,
    "uptime_ns": 300000000000, "listen": "127.0.0.1:7077", "frequency_hz": 99,
    "window_ns": 10000000000, "retention_ns": 3600000000000, "windows": 12,
    "max_windows": 360, "cpus_online": 2, "healthy": True, "probes_attached": 4,
    "samples": 5940, "idle_samples": 17, "expected_samples": 5950, "drops": 3,
    "objects": 41, "processes": 7, "some_future_key": {"nested": [1, 2]},
    "gc": {"enabled": True, "probes_attached": 1, "objects": [
        {"runtime": "python", "path": "/usr/bin/python3.11", "state": "attached",
         "processes": 2, "probes": 2, "method": "usdt", "version": "3.11"},
        {"runtime": "python", "path": "/opt/py/lib/libpython3.11.so.1.0", "state": "attached",
         "processes": 1, "probes": 2, "method": "uprobe", "version": "3.11"},
        {"runtime": "go", "path": "/srv/app", "state": "unsupported", "processes": 1,
         "probes": 0, "method": "none", "reason": "stripped Go binary"},
        {"runtime": "jvm", "path": "/old/libjvm.so", "state": "attached", "processes": 1,
         "probes": 4}]},
    "features": {
        "cpu_sampling": {"enabled": True, "variant": "perf_event/cpu-clock", "reason": ""},
        "eh_frame_unwinding": {"enabled": False, "variant": "frame_pointers",
                               "reason": "--unwind=fp"},
        "offcpu": {"enabled": False, "variant": "",
                   "reason": "the verifier rejected sched_switch: R1 pointer ^= pointer "
                             "prohibited; tailprofd --check prints more"},
        "task_work": {"enabled": True, "variant": "sys_exit",
                      "reason": "forced off by TAILPROF_FEATURES_OFF (tests)"},
        "a_future_feature": {"enabled": True, "variant": "x", "reason": ""}},
}
GC = {"events": [
    {"pid": 41, "tid": 41, "comm": "python3.11", "runtime": "python", "kind": "pause",
     "start": "2026-11-29T21:00:01.000Z", "start_unix_ns": 1795986001000000000,
     "duration_ns": 1500000, "generation": 2, "collected": 9},
    {"pid": 42, "tid": 43, "comm": "java", "runtime": "jvm", "kind": "pause",
     "start": "2026-11-29T21:00:02.000Z", "start_unix_ns": 1795986002000000000,
     "duration_ns": 4000000, "full": True},
    {"pid": 44, "tid": 44, "comm": "app", "runtime": "go", "kind": "pause",
     "start": "2026-11-29T21:00:03.000Z", "start_unix_ns": 1795986003000000000,
     "duration_ns": 80000, "cause": "mark_termination"}],
    "windows": [], "totals": {"pauses": 3, "pause_ns": 5580000, "max_pause_ns": 4000000},
    "enabled": True}
GC_BODY = json.dumps(GC, indent=2).encode()
WINDOWS = {"windows": [
    {"start": "2026-11-29T21:00:00.000Z", "end": "2026-11-29T21:00:10.000Z",
     "start_unix_ns": 1795986000000000000, "end_unix_ns": 1795986010000000000,
     "current": False, "samples": 1980, "idle_samples": 5, "expected_samples": 1980,
     "received_samples": 1980, "drops": {"total": 2, "ringbuf_full": 2, "kernel_stack": 0,
                                         "user_stack": 0},
     "distinct_stacks": 314, "processes": 9, "cpus": [{"cpu": 0, "expected_samples": 990,
                                                      "received_samples": 990}],
     "offcpu": {"samples": 40, "blocked_ns": 2500000000, "short_by_process": []},
     "runq": {"count": 900, "p50_ns": 4000, "p95_ns": 90000, "p99_ns": 4000000,
              "max_ns": 9000000, "top": []},
     "future": "ignored"},
    # The current window: no end yet, no stacks count (shown as '-').
    {"start": "2026-11-29T21:00:10.000Z", "start_unix_ns": 1795986010000000000,
     "current": True, "samples": 4242, "idle_samples": 1, "expected_samples": 4300,
     "drops": {"total": 0}, "processes": 3},
]}
STAGE = {"stage": "compute", "count": 400, "p50_ns": 2981888, "p90_ns": 3047424,
         "p95_ns": 4161536, "p99_ns": 33030144, "max_ns": 33100000, "sum_ns": 1, "low_sample": False}
STAGES = {"stages": [STAGE, dict(STAGE, stage="io", count=7, low_sample=True)],
          "windows": [{"start": "2026-11-29T21:00:00.000Z", "end": "2026-11-29T21:00:10.000Z",
                       "current": False, "stages": [STAGE]}]}
STAGES_BODY = json.dumps(STAGES, indent=2).encode()
STATUS_STAGES = dict(STATUS, stages=[
    {"stage": "compute", "probe": "function compute in /srv/app", "attached": True, "hits": 900,
     "hits_per_second": 90.0, "ns_per_hit": 1700, "bpf_run_time_ns": 1530000,
     "cpu_percent": 0.015},
    {"stage": "hot", "probe": "function hot in /srv/app", "attached": True, "hits": 9000000,
     "hits_per_second": 900000.0, "ns_per_hit": 330, "bpf_run_time_ns": 2970000000,
     "cpu_percent": 29.7},
    {"stage": "gone", "probe": "function gone in /srv/app", "attached": False,
     "error": "cannot read /srv/app: No such file or directory", "count": 0}])
# Pretty-printed on purpose, without a final newline: --json must not reformat a byte.
STATUS_BODY = json.dumps(STATUS, indent=3).encode()
WINDOWS_BODY = json.dumps(WINDOWS, indent=1, sort_keys=True).encode()
PROFILE_BODY = gzip.compress(b"\x0a\x04fake pprof bytes" * 64, mtime=0)
PROFILE_HEADERS = {
    "X-Tailprof-Samples": "1234",
    "X-Tailprof-Start-Unix-Ns": "1795986000000000000",
    "X-Tailprof-End-Unix-Ns": "1795986300000000000",
    "X-Tailprof-Windows": "30",
}

# Spikes, oldest first: two of compute, a level shift of io still open, a mark of no stage.
T0 = 1795986000000000000  # 2026-11-29T21:00:00Z
S = 1000000000


def rfc(ns):
    return (f"2026-11-29T21:{(ns - T0) // S // 60:02d}:{(ns - T0) // S % 60:02d}."
            f"{(ns - T0) % S // 1000000:03d}Z")


def spike(sid, stage, start_s, end_s, **kw):
    d = {"id": sid, "stage": stage, "kind": "spike", "start": rfc(T0 + start_s * S),
         "end": rfc(T0 + end_s * S), "start_unix_ns": T0 + start_s * S,
         "end_unix_ns": T0 + end_s * S, "open": False, "windows": (end_s - start_s) // 10,
         "p95_ns": 41200000, "baseline_p95_ns": 10100000, "peak_p95_ns": 55100000,
         "request_count": 1234, "pattern": "random", "source": "detected", "pinned": True,
         "causes": []}
    d.update(kw)
    return d


SPIKE_1 = spike("s-1", "compute", 0, 30, pattern="periodic", period_ns=8000000000,
                period_spread_ns=200000000, a_future_key={"x": 1}, causes=[
                    {"kind": "runq", "share": 0.62, "summary": "compute threads waited for a "
                     "CPU: run-queue p95 4.1ms against 80us", "runq_p95_ns": 4100000,
                     "baseline_runq_p95_ns": 80000, "waits": 1200},
                    {"kind": "gc", "share": 0.2, "summary": "3 Go GC pauses overlapped slow "
                     "requests", "pause_ns": 5000000, "pauses": 3, "runtime": "go"}])
SPIKE_IO = spike("io.2", "io", 60, 180, kind="level_shift", open=True, p95_ns=90000000,
                 baseline_p95_ns=30000000, summary="io's p95 moved from 30ms to 90ms and "
                 "stayed", causes=[{"kind": "offcpu", "share": 0.8, "summary": "blocked in "
                                    "read", "offcpu_ns": 800000000}])
SPIKE_4 = spike("s-4", "compute", 200, 220, causes=[{"kind": "cpu", "share": 0.5,
                                                      "summary": "more CPU per request"}])
SPIKE_MARK = spike("m_3", "", 300, 320, source="mark", pattern="unknown", reason="deploy 42",
                   p95_ns=12000000, baseline_p95_ns=0)
SPIKES = [SPIKE_1, SPIKE_IO, SPIKE_4, SPIKE_MARK]
EVIDENCE = {"runq": {"p95_ns": 4100000, "baseline_p95_ns": 80000, "waits": 1200},
            "top_waiters": [{"pid": 41, "comm": "app", "wait_ns": 90000000},
                            {"pid": 7, "comm": "kworker/0:1", "wait_ns": 2000000}],
            "windows_unix_ns": [T0, T0 + 10 * S], "gc": {"pauses": 3, "by_runtime": {
                "go": {"pause_ns": 5000000, "max_pause_ns": 2500000}}},
            "sampled_share": 0.25, "note": "a later daemon's figure"}
REQUESTS = [
    {"id": "r-9", "stage": "compute", "pid": 42, "tid": 43, "start": rfc(T0 + 12 * S),
     "start_unix_ns": T0 + 12 * S, "duration_ns": 120000000, "request_id": "req-abc",
     "cpu_ns": 20000000, "runq_ns": 80000000, "offcpu_ns": 20000000, "accounting": "exact"},
    {"id": "r-7", "stage": "compute", "pid": 42, "tid": 44, "start": rfc(T0 + 15 * S),
     "start_unix_ns": T0 + 15 * S, "duration_ns": 61500000, "request_id": "",
     "cpu_ns": 30000000, "runq_ns": 1500000, "offcpu_ns": 30000000, "accounting": "sampled"}]
SPIKE_DETAIL = {s["id"]: dict(s, evidence=EVIDENCE if s is SPIKE_1 else {},
                              requests=REQUESTS if s is SPIKE_1 else []) for s in SPIKES}
SPIKE_PROFILE = gzip.compress(b"spike windows" * 50, mtime=0)
BASELINE_PROFILE = gzip.compress(b"baseline windows" * 50, mtime=0)
REQUEST_PROFILE = gzip.compress(b"one request" * 50, mtime=0)
SPIKE_HEADERS = {"X-Tailprof-Samples": "500", "X-Tailprof-Windows": "3",
                 "X-Tailprof-Start-Unix-Ns": str(T0),
                 "X-Tailprof-End-Unix-Ns": str(T0 + 30 * S)}
BASELINE_HEADERS = {"X-Tailprof-Samples": "2000", "X-Tailprof-Windows": "12",
                    "X-Tailprof-Start-Unix-Ns": str(T0 - 120 * S),
                    "X-Tailprof-End-Unix-Ns": str(T0)}


# A compare report as docs/compare.md describes it: compute's p95 regressed by 8% while its p99
# improved; a function's share regressed; io has too few windows and no p99 at all.
def m_ns(before, after, verdict, p, n=(30, 30), spread=0.02, **kw):
    diff = after - before
    d = {"before_ns": before, "after_ns": after, "diff_ns": diff,
         "ci_low_ns": int(min(diff * 0.625, diff * 1.375)),
         "ci_high_ns": int(max(diff * 0.625, diff * 1.375)),
         "before_spread_ns": int(before * spread), "after_spread_ns": int(after * spread),
         "p_value": p, "verdict": verdict, "n_before": n[0], "n_after": n[1]}
    d.update(kw)
    return d


def m_unit(unit, before, after, verdict, p, n=(30, 30), spread=0.02, **kw):
    diff = after - before
    d = {"before": before, "after": after, "diff": diff,
         "ci_low": min(diff * 0.625, diff * 1.375), "ci_high": max(diff * 0.625, diff * 1.375),
         "before_spread": before * spread,
         "after_spread": after * spread, "unit": unit, "p_value": p, "verdict": verdict,
         "n_before": n[0], "n_after": n[1]}
    d.update(kw)
    return d


def cmp_side(**kw):
    d = {"from": "2026-11-29T21:00:00.000Z", "to": "2026-11-29T21:05:00.000Z",
         "from_unix_ns": T0, "to_unix_ns": T0 + 300 * S, "windows": 30, "requests": 24000,
         "frequency_hz": 99, "window_ns": 10 * S, "host": "h", "kernel": "6.1.0",
         "version": "0.1.0"}
    d.update(kw)
    return d


COMPARE = {
    "conditions": {
        "before": cmp_side(snapshot="base-1"),
        "after": cmp_side(**{"from": "2026-11-29T22:00:00.000Z", "to": "2026-11-29T22:05:00.000Z",
                             "from_unix_ns": T0 + 3600 * S, "to_unix_ns": T0 + 3900 * S,
                             "requests": 29000, "host": "h2"}),
        "load_differs": True, "load_note": "the request rate differs by 21% (80.0/s before, "
        "96.7/s after); latency may follow load, not the change",
        "notes": ["different hosts: h before, h2 after"],
        "method": {"resamples": 2000, "seed": 1, "confidence": 0.95, "block_windows": {"before": 3, "after": 3},
                   "alpha": 0.05, "min_effect_pct": 2, "test": "block bootstrap, BH-adjusted"},
        "a_later_key": [1, 2, 3]},
    "stages": [
        {"stage": "compute",
         "p50": m_ns(2981888, 3010000, "inconclusive", 0.21, windows_needed=48),
         "p95": m_ns(4000000, 4320000, "regressed", 0.0004),
         "p99": m_ns(33030144, 20000000, "improved", 0.002),
         "mean": m_ns(3100000, 3120000, "unchanged", 0.4),
         "rate": m_unit("1/s", 80.0, 96.7, "improved", 0.001),
         "cpu": m_ns(1500000, 1510000, "unchanged", 0.6),
         "future_metric": {"x": 1}},
        {"stage": "io",
         "p50": m_ns(900000, 950000, "inconclusive", 0.5, n=(4, 30),
                     reason="fewer than 6 windows on a side"),
         "p95": m_ns(2000000, 2100000, "inconclusive", 0.4, n=(4, 30),
                     reason="fewer than 6 windows on a side"),
         "mean": m_ns(1000000, 1000000, "unchanged", 0.9, n=(4, 30))}],
    "cpu": m_unit("samples/s", 180.0, 182.0, "unchanged", 0.5),
    "offcpu": m_unit("ns/s", 250000000, 150000000, "improved", 0.003),
    "runq": m_ns(4000000, 4100000, "unchanged", 0.7),
    "gc": {"total": m_unit("ns/s", 1200000, 1150000, "unchanged", 0.8),
           "max": m_ns(2500000, 2400000, "unchanged", 0.9)},
    "drops": m_unit("1/s", 0, 0, "unchanged", 1.0),
    "functions": [
        dict(m_unit("share", 0.030, 0.055, "regressed", 0.001), function="json_dumps"),
        dict(m_unit("share", 0.40, 0.30, "improved", 0.002), function="hot"),
        dict(m_unit("share", 0.10, 0.101, "unchanged", 0.8), function="parse")],
    "regressions": ["stages.compute.p95", "functions.json_dumps"],
}
COMPARE_BODY = json.dumps(COMPARE, indent=2).encode()
# The same, but only a function regressed (served for before_snapshot=fn-only).
COMPARE_FN_ONLY = json.loads(COMPARE_BODY)
COMPARE_FN_ONLY["stages"][0]["p95"]["verdict"] = "unchanged"
COMPARE_FN_ONLY["regressions"] = ["functions.json_dumps"]
SNAPSHOT = {"name": "base-1", "saved": "2026-11-29T21:06:00.000Z",
            "saved_unix_ns": T0 + 360 * S, "from_unix_ns": T0, "to_unix_ns": T0 + 1800 * S,
            "windows": 180, "bytes": 1572864}
COMPARE_KEYS = {"before_from", "before_to", "after_from", "after_to", "before_snapshot",
                "after_snapshot", "stage", "min_effect", "alpha", "seed"}


# pprof files written by hand (profile.proto's field numbers, no protobuf package needed).
def pb_varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7f, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb_int(num, v):
    return pb_varint(num << 3) + pb_varint(v & (2 ** 64 - 1))


def pb_bytes(num, b):
    return pb_varint(num << 3 | 2) + pb_varint(len(b)) + b


def pb_packed(num, vals):
    return pb_bytes(num, b"".join(pb_varint(v & (2 ** 64 - 1)) for v in vals))


def pprof(stacks, id_base=1):
    """A profile of two sample types (samples/count first, then cpu/nanoseconds with other
    weights, so a reader of the wrong type fails) from stacks: [(frames, count)], each frame a
    function name or a tuple of names inlined into one location (callee first), leaf first."""
    strings, functions, locations = [""], {}, {}

    def sid(s):
        if s not in strings:
            strings.append(s)
        return strings.index(s)

    def fid(name):
        return functions.setdefault(name, id_base * 10 + len(functions))

    def lid(frame):
        names = frame if isinstance(frame, tuple) else (frame,)
        return locations.setdefault(names, id_base * 100 + len(locations))

    body = b""
    for frames, count in stacks:
        body += pb_bytes(2, pb_packed(1, [lid(f) for f in frames]) +
                         pb_packed(2, [count, 1000000 * (100 - count)]))
    for names, loc in locations.items():
        lines = b"".join(pb_bytes(4, pb_int(1, fid(n)) + pb_int(2, 7)) for n in names)
        body += pb_bytes(4, pb_int(1, loc) + pb_int(3, 0x401000 + loc) + lines)
    for name, f in functions.items():
        body += pb_bytes(5, pb_int(1, f) + pb_int(2, sid(name)))
    types = (pb_bytes(1, pb_int(1, sid("samples")) + pb_int(2, sid("count"))) +
             pb_bytes(1, pb_int(1, sid("cpu")) + pb_int(2, sid("nanoseconds"))))
    return types + body + b"".join(pb_bytes(6, x.encode()) for x in strings)


# 'hot' is inlined into 'main' (one location, callee first): the leaf is hot, not main.
PPROF_BEFORE = pprof([([("hot", "main"), "start"], 60), (["cold", "main", "start"], 20),
                      ([("hot", "main"), "start"], 15), (["cold", "start"], 5)])
PPROF_AFTER = pprof([([("hot", "main"), "start"], 50), (["cold", "main", "start"], 25),
                     (["json_dumps", "main", "start"], 25)], id_base=7)

class FakeDaemon(http.server.BaseHTTPRequestHandler):
    requests = []
    posts = []  # (path, parsed JSON body) of each POST
    with_stages = False
    without_features = False
    no_spikes = False
    marks_503 = False
    state_dir = True
    snapshots = []

    def log_message(self, *args):
        pass

    def reply(self, code, body, ctype="application/json", headers=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        FakeDaemon.requests.append(self.path)
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        if url.path == "/api/v1/status" and FakeDaemon.without_features:
            self.reply(200, json.dumps({k: v for k, v in STATUS.items()
                                        if k != "features"}).encode())
        elif url.path == "/api/v1/status" and FakeDaemon.with_stages:
            self.reply(200, json.dumps(STATUS_STAGES).encode())
        elif url.path == "/api/v1/status":
            self.reply(200, STATUS_BODY)
        elif url.path == "/api/v1/stages":
            self.reply(200, STAGES_BODY)
        elif url.path == "/api/v1/windows":
            self.reply(200, WINDOWS_BODY)
        elif url.path == "/api/v1/gc":
            self.reply(200, GC_BODY)
        elif url.path == "/api/v1/spikes":
            spikes = [] if FakeDaemon.no_spikes else SPIKES
            if "stage" in q:
                spikes = [s for s in spikes if s["stage"] == q["stage"][0]]
            self.reply(200, json.dumps({"spikes": spikes}, indent=2).encode())
        elif url.path.startswith("/api/v1/spikes/"):
            sid = url.path[len("/api/v1/spikes/"):]
            if sid in SPIKE_DETAIL:
                self.reply(200, json.dumps(SPIKE_DETAIL[sid], indent=1).encode())
            else:
                self.reply(404, b'{"error": "spike: \'%s\' is not held (see /api/v1/spikes)"}'
                           % sid.encode())
        elif url.path == "/api/v1/profile" and "request" in q:
            self.reply(200, REQUEST_PROFILE, "application/octet-stream",
                       {"X-Tailprof-Samples": "7"})
        elif url.path == "/api/v1/profile" and "spike" in q:
            if q["spike"] == ["no-base"] and "baseline" in q:
                self.reply(500, b'{"error": "baseline: no ordinary windows held"}')
            elif "baseline" in q:
                self.reply(200, BASELINE_PROFILE, "application/octet-stream", BASELINE_HEADERS)
            else:
                self.reply(200, SPIKE_PROFILE, "application/octet-stream", SPIKE_HEADERS)
        elif url.path == "/api/v1/compare":
            bad = sorted(set(q) - COMPARE_KEYS)
            sides = [("before_snapshot" in q) != ("before_from" in q and "before_to" in q),
                     ("after_snapshot" in q) != ("after_from" in q and "after_to" in q)]
            if bad or not all(sides):
                self.reply(400, b'{"error": "compare: give each side a range or a snapshot"}')
            elif q.get("before_snapshot") == ["fn-only"]:
                self.reply(200, json.dumps(COMPARE_FN_ONLY).encode())
            else:
                self.reply(200, COMPARE_BODY)
        elif url.path == "/api/v1/snapshots":
            self.reply(200, json.dumps({"snapshots": FakeDaemon.snapshots, "max_count": 32,
                                        "max_bytes": 268435456}).encode())
        elif url.path == "/api/v1/profile" and q.get("comm", [""])[0].startswith("nosuch"):
            self.reply(200, PROFILE_BODY, "application/octet-stream",
                       dict(PROFILE_HEADERS, **{"X-Tailprof-Samples": "0"}))
        elif url.path == "/api/v1/profile":
            if q.get("type") != ["cpu"]:
                self.reply(400, b'{"error": "type: \'%s\' is not supported (allowed: cpu)"}'
                           % q.get("type", [""])[0].encode())
            else:
                self.reply(200, PROFILE_BODY, "application/octet-stream", PROFILE_HEADERS)
        else:
            self.reply(404, b'{"error": "no such path"}')

    def do_POST(self):
        FakeDaemon.requests.append(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            doc = json.loads(body)
        except ValueError:
            doc = body
        FakeDaemon.posts.append((self.path, self.headers.get("Content-Type"), doc))
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        if url.path == "/api/v1/snapshots":
            if not FakeDaemon.state_dir:
                self.reply(409, b'{"error": "no state directory: start tailprofd with '
                           b'--state-dir DIR"}')
            elif (any(x["name"] == q["name"][0] for x in FakeDaemon.snapshots) and
                  q.get("replace") != ["1"]):
                self.reply(409, b'{"error": "name: a snapshot of that name exists"}')
            else:
                snap = dict(SNAPSHOT, name=q["name"][0])
                FakeDaemon.snapshots = [x for x in FakeDaemon.snapshots
                                        if x["name"] != snap["name"]] + [snap]
                self.reply(201, json.dumps(snap).encode())
        elif self.path != "/api/v1/marks":
            self.reply(404, b'{"error": "no such path"}')
        elif FakeDaemon.marks_503:
            self.reply(503, b'{"error": "marks: too many marks (at most 10 a minute); try '
                       b'again later"}')
        elif isinstance(doc, dict) and doc.get("stage") == "nope":
            self.reply(400, b'{"error": "stage: \'nope\' is not a stage (known: compute, io)"}')
        else:
            self.reply(200, b'{"id": "m-77"}')

    def do_DELETE(self):
        FakeDaemon.requests.append(self.path)
        name = self.path[len("/api/v1/snapshots/"):]
        if not self.path.startswith("/api/v1/snapshots/"):
            self.reply(404, b'{"error": "no such path"}')
        elif not any(x["name"] == name for x in FakeDaemon.snapshots):
            self.reply(404, b'{"error": "snapshot: \'%s\' does not exist"}' % name.encode())
        else:
            FakeDaemon.snapshots = [x for x in FakeDaemon.snapshots if x["name"] != name]
            self.reply(200, json.dumps({"removed": name}).encode())


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Runner:
    def __init__(self, exe, server):
        self.exe, self.server = exe, server
        self.passed, self.failed = 0, 0

    def run(self, *args, env=None):
        e = {k: v for k, v in os.environ.items() if k != "TAILPROF_SERVER"}
        e.update(env or {})
        FakeDaemon.requests.clear()
        FakeDaemon.posts.clear()
        p = subprocess.run([self.exe, *args], capture_output=True, env=e, timeout=30)
        return p.returncode, p.stdout, p.stderr.decode(errors="replace")

    def case(self, name, fn):
        try:
            fn()
        except AssertionError as e:
            self.failed += 1
            print(f"FAIL {name}: {e}")
            return
        self.passed += 1
        print(f"ok   {name}")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    exe = sys.argv[1]
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeDaemon)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    t = Runner(exe, url)
    tmp = tempfile.mkdtemp(prefix="tailprof-cli-test-")

    def status_text():
        rc, out, err = t.run("--server", url, "status")
        check(rc == 0, f"rc {rc}, stderr {err}")
        text = out.decode()
        check("tailprofd 0.1.0 on h (kernel 6.1.0), pid 123, up 5m0s" in text, text)
        check("99 Hz on 2 CPUs" in text and "12 of 360 (10s each" in text, text)
        check(FakeDaemon.requests == ["/api/v1/status"], FakeDaemon.requests)
        # each GC object says how it is probed ("-": not probed, or a daemon that does not say)
        gc = [ln.split() for ln in text.splitlines()
              if ln.split()[:1] in (["python"], ["go"], ["jvm"])]
        check([g[:5] for g in gc] == [
            ["python", "attached", "usdt", "2", "processes"],
            ["python", "attached", "uprobe", "1", "processes"],
            ["go", "unsupported", "-", "1", "processes"],
            ["jvm", "attached", "-", "1", "processes"]], gc)

    def status_features():
        rc, out, err = t.run("--server", url, "status")
        check(rc == 0, f"rc {rc}, stderr {err}")
        lines = out.decode().splitlines()
        i = lines.index("  features:")
        check(lines[i + 1].split() == ["NAME", "STATE", "VARIANT", "REASON"], lines[i + 1])
        rows = [l.split(None, 3) for l in lines[i + 2:i + 7]]
        # every capability the daemon reports, in its order, a later one's too
        check(rows == [
            ["cpu_sampling", "on", "perf_event/cpu-clock", "-"],
            ["eh_frame_unwinding", "off", "frame_pointers", "--unwind=fp"],
            ["offcpu", "off", "-", "the verifier rejected sched_switch: R1 pointer ^= pointer "
             "prohibited; tailprofd --check prints more"],
            ["task_work", "on", "sys_exit", "forced off by TAILPROF_FEATURES_OFF (tests)"],
            ["a_future_feature", "on", "x", "-"]], rows)
        # the off-CPU line says why it is off
        check("  off-CPU:    off (the verifier rejected sched_switch: R1" in out.decode(),
              out.decode())
        # a daemon from before the features report: no table, the old off-CPU line
        FakeDaemon.without_features = True
        try:
            rc, out, err = t.run("--server", url, "status")
        finally:
            FakeDaemon.without_features = False
        check(rc == 0 and "features:" not in out.decode(), out.decode())
        check("off-CPU:    off (the scheduler programs did not load)" in out.decode(),
              out.decode())

    def status_gc():
        rc, out, err = t.run("--server", url, "status")
        text = out.decode()
        # counted in the singular and the plural as the numbers are
        check(rc == 0 and "gc:         1 probe attached\n" in text, text)
        check("2 CPUs, 4 probes attached\n" in text, text)
        check("python attached" in " ".join(text.split()), text)
        check("unsupported" in text and "/srv/app: stripped Go binary" in text, text)

    def gc_text():
        rc, out, err = t.run("gc", "--server", url, "--last", "10m")
        check(rc == 0, f"rc {rc}, stderr {err}")
        lines = out.decode().splitlines()
        check(lines[0].split() == ["START", "PID", "COMM", "RUNTIME", "KIND", "DURATION",
                                   "DETAIL"], lines[0])
        check(lines[1].split() == ["2026-11-29T21:00:01.000Z", "41", "python3.11", "python",
                                   "pause", "1.500ms", "generation", "2"], lines[1])
        check(lines[2].split()[-2:] == ["4.000ms", "full"], lines[2])
        check(lines[3].split()[-2:] == ["80us", "mark_termination"], lines[3])
        check(lines[3].split()[-1] == "mark_termination", lines[3])
        check(lines[4] == "3 pauses, 5.580ms in all, longest 4.000ms", lines[4])
        check(FakeDaemon.requests == ["/api/v1/gc?last=10m"], FakeDaemon.requests)

    def gc_json():
        rc, out, err = t.run("--server", url, "gc", "--json", "--from", "1795986000")
        check(rc == 0 and out == GC_BODY, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/gc?from=1795986000"], FakeDaemon.requests)
        rc, _, err = t.run("--server", url, "gc", "--last", "5x")
        check(rc == 2 and "--last" in err, f"rc {rc}, {err}")

    def status_json():
        rc, out, err = t.run("status", "--json", "--server", url)
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(out == STATUS_BODY, "stdout differs from the body")

    def windows_text():
        rc, out, err = t.run("windows", "--server", url, "--last", "10m")
        check(rc == 0, f"rc {rc}, stderr {err}")
        lines = out.decode().splitlines()
        check(lines[0].split() == ["START", "DURATION", "SAMPLES", "IDLE", "EXPECTED", "DROPS",
                                   "STACKS", "PROCS", "OFFCPU", "RUNQ_P99"], lines[0])
        check(lines[1].split() == ["2026-11-29T21:00:00.000Z", "10s", "1980", "5", "1980", "2",
                                   "314", "9", "2.500s", "4ms"], lines[1])
        # a daemon without the scheduler programs: no offcpu or runq ('-')
        check(lines[2].split() == ["*", "2026-11-29T21:00:10.000Z", "-", "4242", "1", "4300",
                                   "0", "-", "3", "-", "-"], lines[2])
        check(FakeDaemon.requests == ["/api/v1/windows?last=10m"], FakeDaemon.requests)

    def windows_json_range():
        rc, out, err = t.run("--server", url, "windows", "--json", "--from",
                             "2026-11-29T21:00:00+01:00", "--to", "1795986300")
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(out == WINDOWS_BODY, "stdout differs from the body")
        want = "/api/v1/windows?from=2026-11-29T21%3A00%3A00%2B01%3A00&to=1795986300"
        check(FakeDaemon.requests == [want], FakeDaemon.requests)

    def server_from_env():
        rc, out, err = t.run("status", "--json", env={"TAILPROF_SERVER": url})
        check(rc == 0 and out == STATUS_BODY, f"rc {rc}, stderr {err}")
        rc, _, err = t.run("status", "--server", url,
                           env={"TAILPROF_SERVER": f"http://127.0.0.1:{closed_port()}"})
        check(rc == 0, f"--server must win over TAILPROF_SERVER: rc {rc}, {err}")

    def pull_file():
        path = os.path.join(tmp, "cpu.pb.gz")
        rc, out, err = t.run("pull", "--server", url, "--pid", "42", "--comm", "my app/1",
                             "-o", path)
        check(rc == 0, f"rc {rc}, stderr {err}")
        with open(path, "rb") as f:
            check(f.read() == PROFILE_BODY, "file differs from the body")
        check(out == b"", f"stdout not empty: {out!r}")
        want = (f"wrote {path}: 1234 samples, 2026-11-29T21:00:00.000Z to "
                f"2026-11-29T21:05:00.000Z (5m0s, 30 windows)\n")
        check(err == want, f"summary {err!r}")
        check(FakeDaemon.requests == ["/api/v1/profile?type=cpu&last=5m&pid=42&comm=my%20app"
                                      "%2F1"], FakeDaemon.requests)
        check(sorted(os.listdir(tmp)) == ["cpu.pb.gz"], os.listdir(tmp))

    def pull_nothing_matched():
        # a filter that matched nothing: the (empty) profile is written, exit 0, and a hint
        path = os.path.join(tmp, "none.pb.gz")
        rc, out, err = t.run("pull", "--server", url, "--comm", "nosuchproc", "--last", "2m",
                             "-o", path)
        check(rc == 0, f"rc {rc}, stderr {err}")
        lines = err.splitlines()
        check(lines[0].startswith(f"wrote {path}: 0 samples"), lines)
        check(lines[1] == "tailprof pull: no sample in that range matched --comm nosuchproc. "
              "Check the name with `ps -eo pid,comm`, or widen the range (this one: --last 2m).",
              lines)
        os.unlink(path)
        # values echoed as shell words, control characters as '?'; the range as given
        rc, _, err = t.run("pull", "--server", url, "--comm", "nosuch $(id)\n`x`", "--stage",
                           "s", "--from", "1795986000", "-o", path)
        check(rc == 0 and "matched --comm 'nosuch $(id)?`x`' --stage s. Check the name with "
              "`ps -eo pid,comm`, or widen the range (this one: --from 1795986000).\n" in err,
              f"rc {rc}, {err!r}")
        os.unlink(path)
        # samples, or no filter: no hint
        rc, _, err = t.run("pull", "--server", url, "--comm", "my app/1", "-o", path)
        check(rc == 0 and "no sample" not in err, f"rc {rc}, {err!r}")
        os.unlink(path)

    def pull_stdout():
        rc, out, err = t.run("--server", url, "pull", "--last", "90s", "-o", "-")
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(out == PROFILE_BODY, "stdout differs from the body")
        check("1234 samples" in err, err)
        check(FakeDaemon.requests == ["/api/v1/profile?type=cpu&last=90s"], FakeDaemon.requests)

    def pull_write_through():
        # a device or a symlink is written through, never replaced by a renamed file
        rc, _, err = t.run("--server", url, "pull", "-o", "/dev/null")
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(os.path.exists("/dev/null") and not os.path.isfile("/dev/null"),
              "/dev/null was replaced")
        d = tempfile.mkdtemp()
        target, link = os.path.join(d, "target.pb.gz"), os.path.join(d, "link.pb.gz")
        open(target, "wb").close()
        os.symlink(target, link)
        rc, _, err = t.run("--server", url, "pull", "-o", link)
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(os.path.islink(link), "the symlink was replaced")
        with open(target, "rb") as f:
            check(f.read() == PROFILE_BODY, "the symlink's target did not get the body")
        check(sorted(os.listdir(d)) == ["link.pb.gz", "target.pb.gz"], os.listdir(d))

    def pull_server_error():
        path = os.path.join(tmp, "wall.pb.gz")
        rc, out, err = t.run("pull", "--server", url, "--type", "wall", "-o", path)
        check(rc == 1, f"rc {rc}")
        check("tailprof: server error (400): type: 'wall' is not supported" in err, err)
        check(not os.path.exists(path), "a file was left")
        check(sorted(os.listdir(tmp)) == ["cpu.pb.gz"], f"leftovers {os.listdir(tmp)}")
        # An existing file is left as it was.
        keep = os.path.join(tmp, "cpu.pb.gz")
        rc, _, _ = t.run("pull", "--server", url, "--type", "offcpu", "-o", keep)
        with open(keep, "rb") as f:
            check(rc == 1 and f.read() == PROFILE_BODY, "existing file changed")

    def daemon_down():
        down = f"http://127.0.0.1:{closed_port()}"
        for args in (["status"], ["windows"], ["pull", "-o", os.path.join(tmp, "x.pb.gz")]):
            rc, out, err = t.run("--server", down, *args)
            check(rc == 1, f"{args}: rc {rc}")
            check(f"cannot reach tailprofd at {down}: Connection refused" in err, err)
            check("is tailprofd running?" in err, err)
        check(not os.path.exists(os.path.join(tmp, "x.pb.gz")), "a file was left")

    def bad_flags():
        for args, needle in (
                (["frob"], "unknown subcommand 'frob'"),
                (["--frob", "status"], "unknown option '--frob'"),
                (["status", "--frob"], "unknown option '--frob' for status"),
                (["windows", "extra"], "unexpected argument 'extra'"),
                (["pull", "-o"], "-o needs a value"),
                (["pull", "--last"], "--last needs a value"),
                (["status", "--server"], "--server needs a value"),
                (["status", "--json=yes"], "--json takes no value"),
                (["pull", "--type", "heap", "-o", "x"], "allowed: cpu, offcpu, wall"),
                (["pull", "--type", "cpu", "--type", "wall", "-o", "x"],
                 "--type given twice; give it once"),
                (["pull", "--pid", "x1", "-o", "x"], "--pid: 'x1' is not a process ID"),
                (["pull", "--last", "5m"], "pull needs -o FILE"),
                ([], "Usage: tailprof")):
            rc, out, err = t.run("--server", url, *args)
            check(rc == 2, f"{args}: rc {rc}")
            check(needle in err, f"{args}: {err!r}")
        check(FakeDaemon.requests == [], f"usage errors sent requests {FakeDaemon.requests}")

    def bad_durations_and_times():
        for args, needle in (
                (["windows", "--last", "5x"], "--last: '5x' is not a positive duration"),
                (["pull", "--last", "ten", "-o", "x"], "--last: 'ten' is not a positive duration"),
                (["windows", "--last", "0s"], "--last: '0s' is not a positive duration"),
                (["windows", "--from", "yesterday"], "--from: 'yesterday' is not a time"),
                (["pull", "--to", "2026-13-01T00:00:00Z", "-o", "x"], "--to: '2026-13"),
                (["windows", "--from", "20", "--to", "10"], "must be before --to")):
            rc, out, err = t.run("--server", url, *args)
            check(rc == 2, f"{args}: rc {rc}")
            check(needle in err, f"{args}: {err!r}")
        check(FakeDaemon.requests == [], FakeDaemon.requests)

    def last_with_from():
        for args in (["windows", "--last", "5m", "--from", "1795986000"],
                     ["pull", "--to", "1795986000", "--last", "5m", "-o", "x"]):
            rc, out, err = t.run("--server", url, *args)
            check(rc == 2, f"{args}: rc {rc}")
            check("--last cannot be combined with --from/--to" in err, err)

    def helps():
        for args in (["--help"], ["-h"], ["help"], ["status", "--help"], ["windows", "-h"],
                     ["pull", "--help"], ["help", "pull"], ["pull", "--last", "5m", "-h"]):
            rc, out, err = t.run(*args)
            check(rc == 0, f"{args}: rc {rc}")
            check(out.startswith(b"Usage: tailprof"), f"{args}: {out[:40]!r}")
        rc, out, _ = t.run("pull", "--help")
        check(b"-o, --output FILE" in out and b"--server URL" in out, out)

    def stages_table():
        rc, out, err = t.run("--server", url, "stages", "--last", "1h")
        check(rc == 0, f"rc {rc}, stderr {err}")
        text = out.decode()
        check(FakeDaemon.requests == ["/api/v1/stages?last=1h"], FakeDaemon.requests)
        check("STAGE" in text and "P95" in text and "whole range" in text, text)
        check("compute" in text and "4.162ms" in text and "33.03ms" in text, text)
        check("(low sample)" in text.splitlines()[-2], text)
        rc, out, err = t.run("--server", url, "stages")
        check(FakeDaemon.requests == ["/api/v1/stages?last=10m"], FakeDaemon.requests)
        rc, out, err = t.run("--server", url, "stages", "--json")
        check(rc == 0 and out == STAGES_BODY, "stdout differs from the body")
        rc, out, err = t.run("--server", url, "stages", "--last", "soon")
        check(rc == 2 and "--last" in err, err)

    def status_stages():
        FakeDaemon.with_stages = True
        try:
            rc, out, err = t.run("--server", url, "status")
        finally:
            FakeDaemon.with_stages = False
        text = out.decode()
        check(rc == 0, f"rc {rc}, stderr {err}")
        check("90.0 hits/s, 1700 ns per hit" in text, text)
        check("NOT ATTACHED: cannot read /srv/app" in text, text)
        warn = [l for l in text.splitlines() if "WARNING" in l]
        check(len(warn) == 1 and "more than 1% of a CPU" in warn[0], text)

    def pull_stage():
        out = os.path.join(tmp, "stage.pb.gz")
        rc, _, err = t.run("--server", url, "pull", "--stage", "compute", "-o", out)
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/profile?type=cpu&last=5m&stage=compute"],
              FakeDaemon.requests)
        os.unlink(out)

    def cells(line):
        """A table row's cells: columns are two or more blanks apart."""
        return re.split(r" {2,}", line.strip())

    def spikes_table():
        rc, out, err = t.run("--server", url, "spikes", "--last", "1h")
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/spikes?last=1h"], FakeDaemon.requests)
        lines = out.decode().splitlines()
        check(cells(lines[0]) == ["ID", "STAGE", "START", "WINDOWS", "P95 VS BASELINE",
                                  "PATTERN", "TOP CAUSE", "SOURCE"], lines[0])
        check(cells(lines[1]) == ["s-1", "compute", "2026-11-29T21:00:00.000Z", "3",
                                  "41.2ms vs 10.1ms (4.1x)", "periodic 8s ±200ms", "runq 62%",
                                  "detected"], lines[1])
        # open and a level shift: both marks
        check(cells(lines[2]) == ["*L", "io.2", "io", "2026-11-29T21:01:00.000Z", "12",
                                  "90ms vs 30ms (3.0x)", "random", "offcpu 80%", "detected"],
              lines[2])
        check(cells(lines[3])[:2] == ["s-4", "compute"] and cells(lines[3])[-2:] ==
              ["cpu 50%", "detected"], lines[3])
        # a mark of no stage, no baseline, no causes
        check(cells(lines[4]) == ["m_3", "-", "2026-11-29T21:05:00.000Z", "2", "12ms",
                                  "unknown", "-", "mark"], lines[4])
        # columns line up: ± is one column wide
        check(len({l.index("20") for l in lines[1:5]}) == 1, lines)
        check(lines[1].index("runq") == lines[2].index("offcpu"), lines)
        check("* open: still going" in lines and any(l.startswith("L level shift")
                                                     for l in lines), lines)
        check(not any(l != l.rstrip() for l in lines), "trailing blanks")
        rc, out, err = t.run("--server", url, "spikes", "--stage", "compute", "--from",
                             "1795986000", "--to", "2026-11-29T22:00:00Z")
        check(rc == 0 and "s-4" in out.decode() and "io.2" not in out.decode(), out)
        check(FakeDaemon.requests == ["/api/v1/spikes?stage=compute&from=1795986000&to="
                                      "2026-11-29T22%3A00%3A00Z"], FakeDaemon.requests)

    def spikes_json_and_empty():
        rc, out, err = t.run("--server", url, "spikes", "--json")
        check(rc == 0 and out == json.dumps({"spikes": SPIKES}, indent=2).encode(),
              f"rc {rc}: --json changed the body")
        check(FakeDaemon.requests == ["/api/v1/spikes"], FakeDaemon.requests)
        FakeDaemon.no_spikes = True
        try:
            rc, out, err = t.run("--server", url, "spikes")
            rc2, out2, err2 = t.run("--server", url, "explain", "latest", "--stage", "io")
        finally:
            FakeDaemon.no_spikes = False
        text = out.decode()
        check(rc == 0 and text.startswith("no spikes in this range\n"), text)
        check("tailprof stages" in text and "[spikes]" in text, text)
        check(rc2 == 1 and out2 == b"", f"rc {rc2}")
        check("no spikes held of stage io, so there is no latest" in err2, err2)
        check(FakeDaemon.requests == ["/api/v1/spikes?stage=io"], FakeDaemon.requests)

    def explain_text():
        rc, out, err = t.run("--server", url, "explain", "s-1")
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/spikes/s-1"], FakeDaemon.requests)
        text = out.decode()
        lines = text.splitlines()
        check(lines[0] == "spike s-1: stage compute", lines[0])
        check("  when:     2026-11-29T21:00:00.000Z to 2026-11-29T21:00:30.000Z (30s, 3 windows)"
              in lines, text)
        check("  p95:      41.2ms vs baseline 10.1ms (4.1x), peak 55.1ms, 1234 requests" in lines,
              text)
        check("  pattern:  periodic 8s ±200ms" in lines, text)
        check("  source:   detected, pinned (its windows are kept)" in lines, text)
        # one line per cause, highest share first, with its sentence and figures
        i = lines.index("causes, by share:")
        check(cells(lines[i + 1]) == ["runq", "62%", "compute threads waited for a CPU: run-queue"
                                      " p95 4.1ms against 80us (runq_p95 4.1ms, baseline_runq_p95"
                                      " 80us, waits 1200)"], lines[i + 1])
        check(cells(lines[i + 2]) == ["gc", "20%", "3 Go GC pauses overlapped slow requests "
                                      "(pause 5ms, pauses 3, runtime go)"], lines[i + 2])
        # the evidence, generically: objects, arrays of objects, times, shares, unknown keys
        i = lines.index("evidence:")
        check(lines[i + 1] == "  runq: p95 4.1ms, baseline_p95 80us, waits 1200", lines[i + 1])
        check(lines[i + 2:i + 5] == ["  top_waiters:", "    - pid 41, comm app, wait 90ms",
                                     "    - pid 7, comm kworker/0:1, wait 2ms"], lines[i + 2:])
        check("  windows_unix_ns: 2026-11-29T21:00:00.000Z, 2026-11-29T21:00:10.000Z" in lines,
              text)
        check("      go: pause 5ms, max_pause 2.5ms" in lines, text)
        check("  sampled_share: 25%" in lines and "  note: a later daemon's figure" in lines, text)
        # the slowest requests with their accounting
        i = lines.index("slowest requests (2 of 2 slow spans, over the previous window's p95):")
        check(cells(lines[i + 1]) == ["ID", "PID/TID", "START", "DURATION", "CPU", "RUNQ",
                                      "OFFCPU", "ACCOUNTING", "REQUEST_ID"], lines[i + 1])
        check(cells(lines[i + 2]) == ["r-9", "42/43", "2026-11-29T21:00:12.000Z", "120ms",
                                      "20ms", "80ms", "20ms", "exact", "req-abc"], lines[i + 2])
        check(cells(lines[i + 3]) == ["r-7", "42/44", "2026-11-29T21:00:15.000Z", "61.5ms",
                                      "30ms", "1.5ms", "30ms", "sampled", "-"], lines[i + 3])
        check("tailprof pull --spike s-1 -o spike.pb.gz --baseline base.pb.gz" in text, text)
        check("tailprof pull --request r-9 -o request.pb.gz" in text, text)

    def explain_latest():
        rc, out, err = t.run("--server", url, "explain", "latest")
        check(rc == 0, f"rc {rc}, stderr {err}")
        # the newest of all: a mark of no stage
        check(FakeDaemon.requests == ["/api/v1/spikes", "/api/v1/spikes/m_3"],
              FakeDaemon.requests)
        lines = out.decode().splitlines()
        check(lines[0] == "spike m_3: no stage", lines[0])
        check("  source:   mark, pinned (its windows are kept)" in lines, lines)
        check("  reason:   deploy 42" in lines and "causes: none found" in lines, lines)
        rc, out, err = t.run("--server", url, "explain", "--stage", "compute", "latest",
                             "--json")
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/spikes?stage=compute", "/api/v1/spikes/s-4"],
              FakeDaemon.requests)
        check(out == json.dumps(SPIKE_DETAIL["s-4"], indent=1).encode(), "--json changed it")
        # a level shift that is still open, with its own summary
        rc, out, err = t.run("--server", url, "explain", "latest", "--stage", "io")
        lines = out.decode().splitlines()
        check(rc == 0 and lines[0] == "level shift io.2: stage io, still open", lines)
        check("  summary:  io's p95 moved from 30ms to 90ms and stayed" in lines, lines)

    def explain_errors():
        rc, out, err = t.run("--server", url, "explain", "gone-1")
        check(rc == 1 and out == b"", f"rc {rc}")
        check("tailprof: server error (404): spike: 'gone-1' is not held (see /api/v1/spikes)"
              in err, err)
        for args, needle in (
                (["explain", "a/b"], "'a/b' is not a spike id (1-64 characters of A-Z"),
                (["explain", "x" * 65], "is not a spike id"),
                (["explain"], "explain needs a spike: an id (see tailprof spikes) or latest"),
                (["explain", "s-1", "s-4"], "unexpected argument 's-4'"),
                (["explain", "s-1", "--stage", "io"], "--stage goes with latest"),
                (["spikes", "--last", "5x"], "--last: '5x' is not a positive duration"),
                (["spikes", "--last", "1h", "--from", "1795986000"],
                 "--last cannot be combined with --from/--to")):
            rc, out, err = t.run("--server", url, *args)
            check(rc == 2, f"{args}: rc {rc}")
            check(needle in err, f"{args}: {err!r}")
        check(FakeDaemon.requests == [], FakeDaemon.requests)
        # 64 characters are fine
        rc, _, err = t.run("--server", url, "explain", "x" * 64)
        check(rc == 1 and "(404)" in err, err)

    def pull_spike_baseline():
        d = tempfile.mkdtemp()
        sp, base = os.path.join(d, "spike.pb.gz"), os.path.join(d, "base.pb.gz")
        rc, out, err = t.run("--server", url, "pull", "--spike", "s-1", "--type", "offcpu",
                             "--stage", "compute", "-o", sp, "--baseline", base)
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == [
            "/api/v1/profile?spike=s-1&type=offcpu&stage=compute",
            "/api/v1/profile?spike=s-1&type=offcpu&stage=compute&baseline=1"],
            FakeDaemon.requests)
        with open(sp, "rb") as f:
            check(f.read() == SPIKE_PROFILE, "the spike file differs from the body")
        with open(base, "rb") as f:
            check(f.read() == BASELINE_PROFILE, "the baseline file differs from the body")
        check(sorted(os.listdir(d)) == ["base.pb.gz", "spike.pb.gz"], os.listdir(d))
        check(out == b"", out)
        check(err.splitlines() == [
            f"wrote {sp} (spike s-1): 500 samples, 2026-11-29T21:00:00.000Z to "
            "2026-11-29T21:00:30.000Z (30s, 3 windows)",
            f"wrote {base} (baseline of spike s-1): 2000 samples, 2026-11-29T20:58:00.000Z to "
            "2026-11-29T21:00:00.000Z (2m0s, 12 windows)",
            f"compare: go tool pprof -top -diff_base {base} {sp}"], err)
        # latest of a stage, type cpu by default; no --baseline: one file, one hint
        os.unlink(base)
        rc, out, err = t.run("--server", url, "pull", "--spike", "latest", "--stage", "compute",
                             "-o", sp)
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/spikes?stage=compute",
                                      "/api/v1/profile?spike=s-4&type=cpu&stage=compute"],
              FakeDaemon.requests)
        check(f"wrote {sp} (spike s-4): 500 samples" in err and
              f"look: go tool pprof -top {sp}" in err, err)
        check(sorted(os.listdir(d)) == ["spike.pb.gz"], os.listdir(d))
        # the latest of all, to stdout
        rc, out, err = t.run("--server", url, "pull", "--spike", "latest", "-o", "-")
        check(rc == 0 and out == SPIKE_PROFILE, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/spikes", "/api/v1/profile?spike=m_3&type=cpu"],
              FakeDaemon.requests)
        os.unlink(sp)
        os.rmdir(d)

    def pull_spike_fails_whole():
        # the baseline fails after the spike came: neither file is written, nothing is left
        d = tempfile.mkdtemp()
        sp, base = os.path.join(d, "spike.pb.gz"), os.path.join(d, "base.pb.gz")
        with open(sp, "wb") as f:
            f.write(b"older profile")
        rc, out, err = t.run("--server", url, "pull", "--spike", "no-base", "-o", sp,
                             "--baseline", base)
        check(rc == 1, f"rc {rc}")
        check("tailprof: server error (500): baseline: no ordinary windows held" in err, err)
        check(sorted(os.listdir(d)) == ["spike.pb.gz"], os.listdir(d))
        with open(sp, "rb") as f:
            check(f.read() == b"older profile", "the existing file changed")
        os.unlink(sp)
        os.rmdir(d)

    def pull_request():
        d = tempfile.mkdtemp()
        path = os.path.join(d, "req.pb.gz")
        rc, out, err = t.run("--server", url, "pull", "--request", "r-9", "-o", path)
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/profile?request=r-9"], FakeDaemon.requests)
        with open(path, "rb") as f:
            check(f.read() == REQUEST_PROFILE, "the file differs from the body")
        check(err == f"wrote {path} (request r-9): 7 samples\n", err)
        rc, out, err = t.run("--server", url, "pull", "--request", "r-7", "--type", "wall",
                             "-o", path)
        check(rc == 0 and FakeDaemon.requests == ["/api/v1/profile?request=r-7&type=wall"],
              FakeDaemon.requests)
        os.unlink(path)
        os.rmdir(d)

    def pull_spike_usage():
        for args, needle in (
                (["--spike", "s-1", "--last", "5m"],
                 "--spike cannot be combined with --last/--from/--to"),
                (["--from", "1795986000", "--spike", "s-1"],
                 "--spike cannot be combined with --last/--from/--to"),
                (["--request", "r-9", "--to", "1795986000"],
                 "--request cannot be combined with --last/--from/--to"),
                (["--spike", "s-1", "--request", "r-9"],
                 "--spike and --request cannot be combined"),
                (["--spike", "s-1", "--pid", "42"], "--spike cannot be combined with --pid"),
                (["--request", "r-9", "--stage", "compute"],
                 "--request cannot be combined with --stage"),
                (["--baseline", "b.pb.gz", "--last", "5m"], "--baseline goes with --spike"),
                (["--spike", "s 1"], "--spike: 's 1' is not a spike id"),
                (["--request", "r/9"], "--request: 'r/9' is not a request id"),
                (["--spike", "s-1", "--baseline", "-"], "--baseline needs a file name"),
                (["--spike", "s-1", "--baseline", "x"], "--baseline and -o name the same file"),
                (["--spike", "s-1", "--type", "heap"], "allowed: cpu, offcpu, wall")):
            rc, out, err = t.run("--server", url, "pull", "-o", "x", *args)
            check(rc == 2, f"{args}: rc {rc}")
            check(needle in err, f"{args}: {err!r}")
        check(FakeDaemon.requests == [], FakeDaemon.requests)
        check(not os.path.exists("x"), "a file was written")

    def mark_post():
        rc, out, err = t.run("--server", url, "mark", "--stage", "compute", "--reason",
                             "deploy 42 \"blue\"", "--time", "2026-11-29T22:00:05+01:00",
                             "--before", "30s", "--after", "1m")
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(out == b"m-77\n", out)
        check("tailprof explain m-77" in err, err)
        check(FakeDaemon.posts == [("/api/v1/marks", "application/json", {
            "time": "2026-11-29T21:00:05.000Z", "reason": "deploy 42 \"blue\"",
            "stage": "compute", "before": "30s", "after": "1m"})], FakeDaemon.posts)
        # defaults: now, no stage, no before/after; Unix seconds too
        before = time.time()
        rc, out, err = t.run("--server", url, "mark")
        check(rc == 0 and out == b"m-77\n", f"rc {rc}, stderr {err}")
        body = FakeDaemon.posts[0][2]
        check(sorted(body) == ["reason", "time"] and body["reason"] == "", body)
        when = datetime.datetime.strptime(body["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
        check(before - 1 <= when <= time.time() + 1, f"time {body['time']} is not now")
        rc, out, err = t.run("--server", url, "mark", "--time", "1795986005.5", "--json")
        check(rc == 0 and out == b'{"id": "m-77"}', out)
        check(FakeDaemon.posts[0][2]["time"] == "2026-11-29T21:00:05.500Z", FakeDaemon.posts)

    def mark_errors():
        FakeDaemon.marks_503 = True
        try:
            rc, out, err = t.run("--server", url, "mark", "--reason", "x")
        finally:
            FakeDaemon.marks_503 = False
        check(rc == 1 and out == b"", f"rc {rc}")
        check("tailprof: server error (503): marks: too many marks (at most 10 a minute)" in err,
              err)
        check("try again in a few seconds" in err, err)
        rc, out, err = t.run("--server", url, "mark", "--stage", "nope")
        check(rc == 1 and "server error (400): stage: 'nope' is not a stage (known: compute, "
              "io)" in err, err)
        for args, needle in (
                (["--before", "5x"], "--before: '5x' is not a duration (use e.g. 500ms"),
                (["--after", "soon"], "--after: 'soon' is not a duration"),
                (["--time", "yesterday"], "--time: 'yesterday' is not a time"),
                (["now"], "unexpected argument 'now'")):
            rc, out, err = t.run("--server", url, "mark", *args)
            check(rc == 2, f"{args}: rc {rc}")
            check(needle in err, f"{args}: {err!r}")
        check(FakeDaemon.posts == [], FakeDaemon.posts)

    def spikes_daemon_down():
        down = f"http://127.0.0.1:{closed_port()}"
        for args in (["spikes"], ["explain", "latest"], ["explain", "s-1"], ["mark"],
                     ["pull", "--spike", "s-1", "-o", os.path.join(tmp, "y.pb.gz")]):
            rc, out, err = t.run("--server", down, *args)
            check(rc == 1, f"{args}: rc {rc}")
            check(f"cannot reach tailprofd at {down}: Connection refused" in err, err)
            check("start it with: sudo packaging/setup.sh run" in err, err)
        check(not os.path.exists(os.path.join(tmp, "y.pb.gz")), "a file was left")

    def spikes_helps():
        rc, out, _ = t.run("--help")
        text = out.decode()
        for cmd in ("spikes", "explain", "mark"):
            check(f"\n  {cmd} " in text, text)
            rc, out, _ = t.run(cmd, "--help")
            check(rc == 0 and out.startswith(f"Usage: tailprof {cmd}".encode()), out[:40])
            check(b"--server URL" in out, out)
        rc, out, _ = t.run("pull", "--help")
        for opt in (b"--spike ID", b"--baseline FILE", b"--request ID", b"-diff_base"):
            check(opt in out, opt)
        rc, out, _ = t.run("help", "explain")
        check(rc == 0 and b"latest" in out and b"--stage NAME" in out, out)

    def compare_table():
        rc, out, err = t.run("--server", url, "compare", "--before", "snap:base-1", "--after",
                             "2026-11-29T22:00:00+01:00..1795990200")
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/compare?before_snapshot=base-1&after_from="
                                      "2026-11-29T22%3A00%3A00%2B01%3A00&after_to=1795990200"],
              FakeDaemon.requests)
        lines = out.decode().splitlines()
        # the conditions of both sides, the load note and the notes, the method
        check(lines[0] == "before:  snapshot base-1, 2026-11-29T21:00:00.000Z to "
              "2026-11-29T21:05:00.000Z: 30 windows of 10s, 24000 requests", lines[0])
        check(lines[1].split() == ["99", "Hz,", "host", "h,", "kernel", "6.1.0,", "tailprofd",
                                   "0.1.0"], lines[1])
        check(lines[2].startswith("after:   2026-11-29T22:00:00.000Z to ") and
              lines[2].endswith("29000 requests") and "host h2," in lines[3], lines[2:4])
        check(lines[4].startswith("load:    the request rate differs by 21%"), lines[4])
        check(lines[5] == "note:    different hosts: h before, h2 after", lines[5])
        check(lines[6] == "method:  2000 cluster-bootstrap resamples of windows in blocks of 3+3, "
              "seed 1; block bootstrap, BH-adjusted", lines[6])
        check(lines[7] == "         95% intervals, alpha 0.05 (false discovery rate), minimum "
              "effect 2%", lines[7])
        # what regressed comes first, resolved, although compute's p99 improved
        reg = lines.index("regressions (2):")
        stage = next(i for i, l in enumerate(lines) if l.startswith("STAGE"))
        check(reg < stage, lines)
        check(cells(lines[reg + 1]) == ["REGRESSED", "BEFORE", "AFTER", "CHANGE", "VERDICT"],
              lines[reg + 1])
        check(cells(lines[reg + 2]) == ["compute p95", "4.00ms ± 2%", "4.32ms ± 2%",
                                        "+8.0% [+5.0%, +11.0%]", "regressed (p<0.001 n=30+30)"],
              lines[reg + 2])
        check(cells(lines[reg + 3])[:3] == ["function json_dumps", "3.00%", "5.50%"] and
              cells(lines[reg + 3])[3].startswith("+2.50pp ["), lines[reg + 3])
        rows = {(c[0] if len(c) == 6 else prev) + " " + c[-5]: c[-4:]
                for prev, c in stage_rows(lines[stage + 1:])}
        check(rows["compute p50"] == ["2.98ms ± 2%", "3.01ms ± 2%", "~",
                                      "inconclusive (needs 48 windows a side; p=0.210 "
                                      "n=30+30)"], rows["compute p50"])
        check(rows["compute p99"][2:] == ["-39.4% [-54.2%, -24.7%]",
                                          "improved (p=0.002 n=30+30)"], rows["compute p99"])
        check(rows["compute rate"][:2] == ["80.0/s ± 2%", "96.7/s ± 2%"], rows["compute rate"])
        check(rows["io p50"] == ["900µs ± 2%", "950µs ± 2%", "~", "inconclusive (fewer than 6 "
                                 "windows on a side; p=0.500 n=4+30)"], rows["io p50"])
        # io has no p99: dashes, no crash
        check(rows["io p99"] == ["-", "-", "-", "-"], rows["io p99"])
        # columns line up: ± is one column wide
        p95 = [l for l in lines if "4.32ms ± 2%" in l]
        check(len({l.index("4.32ms") - l.count("±") for l in p95[1:]}) == 1, p95)
        total = next(i for i, l in enumerate(lines) if l.startswith("TOTAL"))
        check(cells(lines[total + 2]) == ["offcpu", "250ms/s ± 2%", "150ms/s ± 2%",
                                          "-40.0% [-55.0%, -25.0%]",
                                          "improved (p=0.003 n=30+30)"], lines[total + 2])
        check([cells(l)[0] for l in lines[total + 1:total + 7]] ==
              ["cpu", "offcpu", "runq", "gc total", "gc max", "drops"], lines[total:total + 7])
        fn = next(i for i, l in enumerate(lines) if l.startswith("FUNCTION"))
        check(cells(lines[fn + 1]) == ["json_dumps", "3.00% → 5.50%",
                                       "+2.50pp [+1.56pp, +3.44pp]",
                                       "regressed (p=0.001 n=30+30)"], lines[fn + 1])
        check(cells(lines[fn + 2])[:2] == ["hot", "40.0% → 30.0%"], lines[fn + 2])
        check(err == "", err)

    def stage_rows(lines):
        """The rows of the stage table up to its end, each with the stage it belongs to."""
        prev = None
        for line in lines:
            if not line.strip():
                if prev is None:
                    break
                continue
            if line.startswith("TOTAL") or line.startswith("FUNCTION"):
                break
            c = cells(line)
            if len(c) == 6:
                prev = c[0]
            yield prev, c

    def compare_json_and_query():
        rc, out, err = t.run("--server", url, "compare", "--json", "--before",
                             "1795986000..1795986300.5", "--after", "snap:after.1", "--stage",
                             "compute", "--min-effect", "2.5", "--alpha", "0.01", "--seed", "7")
        check(rc == 0 and out == COMPARE_BODY, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/compare?before_from=1795986000&before_to="
                                      "1795986300.5&after_snapshot=after.1&stage=compute&"
                                      "min_effect=2.5&alpha=0.01&seed=7"], FakeDaemon.requests)
        # --json with the gate: the body still unchanged, and the exit status
        rc, out, err = t.run("--server", url, "compare", "--json", "--before", "snap:a",
                             "--after", "snap:b", "--fail-on-regression", "5")
        check(rc == 1 and out == COMPARE_BODY, f"rc {rc}, stderr {err}")

    def compare_gate():
        base = ["--server", url, "compare", "--before", "snap:base-1", "--after", "snap:b"]
        # p95 regressed by 8%: over 5%, not over 10% (nor 8.5%)
        rc, out, err = t.run(*base, "--fail-on-regression", "5")
        check(rc == 1 and "regressions (2):" in out.decode(), f"rc {rc}, stderr {err}")
        check(err.splitlines() == ["tailprof: regression gate: stage compute p95 regressed by "
                                   "+8.0% [+5.0%, +11.0%] (4.00ms ± 2% → 4.32ms ± 2%), over "
                                   "--fail-on-regression 5%"], err)
        for pct in ("10", "8.5"):
            rc, out, err = t.run(*base, "--fail-on-regression", pct)
            check(rc == 0 and err == "", f"{pct}: rc {rc}, stderr {err}")
        # only a function regressed: it counts with --gate-functions only
        fn_only = ["--server", url, "compare", "--before", "snap:fn-only", "--after", "snap:b",
                   "--fail-on-regression", "10"]
        rc, out, err = t.run(*fn_only)
        check(rc == 0 and err == "", f"rc {rc}, stderr {err}")
        rc, out, err = t.run(*fn_only, "--gate-functions")
        check(rc == 1 and "function json_dumps regressed by +2.50pp" in err, f"rc {rc}, {err}")
        check("stage compute" not in err, err)
        # without the gate, a regression does not change the exit status
        rc, out, err = t.run(*base)
        check(rc == 0, f"rc {rc}, stderr {err}")

    def usage_errors(prefix, cases):
        """Each of cases, (args, needle), exits 2 with needle on stderr and sends nothing."""
        for args, needle in cases:
            rc, out, err = t.run("--server", url, *prefix, *args)
            check(rc == 2, f"{args}: rc {rc}")
            check(needle in err and f"Try 'tailprof {' '.join(prefix)}" in err,
                  f"{args}: {err!r}")
            check(FakeDaemon.requests == [], f"{args}: {FakeDaemon.requests}")

    def compare_usage():
        usage_errors(["compare"], (
                (["--before", "yesterday", "--after", "snap:b"],
                 "--before: 'yesterday' is neither a range FROM..TO nor snap:NAME"),
                (["--before", "snap:a", "--after", "1795986000.."],
                 "--after: '1795986000..' needs both ends: FROM..TO"),
                (["--before", "1795986000..soon", "--after", "snap:b"],
                 "--before: TO 'soon' is not a time"),
                (["--before", "2026-13-01T00:00:00Z..1795986000", "--after", "snap:b"],
                 "--before: FROM '2026-13-01T00:00:00Z' is not a time"),
                (["--before", "20..10", "--after", "snap:b"],
                 "--before: FROM (20) must be before TO (10)"),
                (["--before", "snap:a/b", "--after", "snap:b"],
                 "--before: 'a/b' is not a snapshot name"),
                (["--before", "snap:..", "--after", "snap:b"], "is not a snapshot name"),
                (["--before", "snap:a"], "compare needs --before and --after"),
                ([], "compare needs --before and --after"),
                (["--before", "snap:a", "--after", "snap:b", "--fail-on-regression", "-5"],
                 "--fail-on-regression: '-5' is not a percentage"),
                (["--before", "snap:a", "--after", "snap:b", "--fail-on-regression", "inf"],
                 "is not a percentage"),
                (["--before", "snap:a", "--after", "snap:b", "--min-effect", "2%"],
                 "--min-effect: '2%' is not a percentage"),
                (["--before", "snap:a", "--after", "snap:b", "--alpha", "1.5"],
                 "--alpha: '1.5' is not a false discovery rate"),
                (["--before", "snap:a", "--after", "snap:b", "--alpha", "0.7"],
                 "--alpha: '0.7' is not a false discovery rate"),
                (["--before", "snap:a", "--after", "snap:b", "--min-effect", "200"],
                 "--min-effect: '200' is not a percentage from 0 to 100"),
                (["--before", "snap:a", "--after", "snap:b", "--seed", "9223372036854775808"],
                 "is not a seed"),
                (["--before", "snap:a", "--after", "snap:b", "--seed", "x"],
                 "--seed: 'x' is not a seed"),
                (["--before", "snap:a", "--after", "snap:b", "--gate-functions"],
                 "--gate-functions goes with --fail-on-regression"),
                (["--before", "snap:a", "--after", "snap:b", "--top", "5"],
                 "--top goes with --before-profile"),
                (["--before-profile", "a", "--before", "snap:a"], "cannot be combined"),
                (["--before-profile", "a"], "--before-profile needs --after-profile"),
                (["--before-profile", "a", "--after-profile", "b", "--fail-on-regression", "5"],
                 "need windows"),
                (["--before-profile", "a", "--after-profile", "b", "--top", "0"],
                 "--top: '0' is not a count")))

    def compare_errors():
        down = f"http://127.0.0.1:{closed_port()}"
        rc, out, err = t.run("--server", down, "compare", "--before", "snap:a", "--after",
                             "snap:b", "--fail-on-regression", "5")
        check(rc == 1 and f"cannot reach tailprofd at {down}" in err, f"rc {rc}, {err}")
        rc, out, err = t.run("--server", down, "snapshot", "list")
        check(rc == 1 and f"cannot reach tailprofd at {down}" in err, f"rc {rc}, {err}")

    def snapshot_cmds():
        FakeDaemon.snapshots = [dict(SNAPSHOT)]
        rc, out, err = t.run("--server", url, "snapshot", "list")
        check(rc == 0 and FakeDaemon.requests == ["/api/v1/snapshots"], f"rc {rc}, {err}")
        lines = out.decode().splitlines()
        check(cells(lines[0]) == ["NAME", "SAVED", "RANGE", "WINDOWS", "BYTES"], lines[0])
        check(cells(lines[1]) == ["base-1", "2026-11-29T21:06:00.000Z",
                                  "2026-11-29T21:00:00.000Z, 30m0s", "180", "1.5 MiB"], lines[1])
        check(lines[2] == "snapshots: 1 of at most 32, 1.5 MiB of at most 256.0 MiB", lines[2])
        rc, out, err = t.run("--server", url, "snapshot", "save", "load-test.2", "--from",
                             "2026-11-29T21:00:00Z", "--to", "1795987800")
        check(rc == 0, f"rc {rc}, stderr {err}")
        check(FakeDaemon.requests == ["/api/v1/snapshots?name=load-test.2&from=2026-11-29T21%3A"
                                      "00%3A00Z&to=1795987800"], FakeDaemon.requests)
        check(out == b"saved snapshot load-test.2: 180 windows, 2026-11-29T21:00:00.000Z, "
              b"30m0s, 1.5 MiB\n", out)
        check("tailprof compare --before snap:load-test.2" in err, err)
        rc, out, err = t.run("--server", url, "snapshot", "save", "x", "--last", "30m", "--json")
        check(rc == 0 and json.loads(out)["name"] == "x", f"rc {rc}, {out}")
        check(FakeDaemon.requests == ["/api/v1/snapshots?name=x&last=30m"], FakeDaemon.requests)
        rc, out, err = t.run("--server", url, "snapshot", "list", "--json")
        check(rc == 0 and [x["name"] for x in json.loads(out)["snapshots"]] ==
              ["base-1", "load-test.2", "x"], out)
        # a name taken: the server's message, exit 1
        rc, out, err = t.run("--server", url, "snapshot", "save", "x")
        check(rc == 1 and "server error (409): name: a snapshot of that name exists" in err, err)
        rc, out, err = t.run("--server", url, "snapshot", "save", "x", "--replace")
        check(rc == 0 and FakeDaemon.requests == ["/api/v1/snapshots?name=x&replace=1"],
              (rc, err, FakeDaemon.requests))
        rc, out, err = t.run("--server", url, "snapshot", "rm", "load-test.2")
        check(rc == 0 and out == b"removed snapshot load-test.2\n", f"rc {rc}, {err}")
        check(FakeDaemon.requests == ["/api/v1/snapshots/load-test.2"], FakeDaemon.requests)
        rc, out, err = t.run("--server", url, "snapshot", "rm", "load-test.2")
        check(rc == 1 and "server error (404): snapshot: 'load-test.2' does not exist" in err,
              err)
        rc, out, err = t.run("--server", url, "snapshot", "rm", "x", "--json")
        check(rc == 0 and json.loads(out) == {"removed": "x"}, out)
        FakeDaemon.snapshots = []
        rc, out, err = t.run("--server", url, "snapshot", "list")
        check(rc == 0 and out.startswith(b"no snapshots"), out)

    def snapshot_errors():
        FakeDaemon.state_dir = False
        try:
            rc, out, err = t.run("--server", url, "snapshot", "save", "base", "--last", "30m")
        finally:
            FakeDaemon.state_dir = True
        check(rc == 1 and out == b"", f"rc {rc}")
        check("tailprof: server error (409): no state directory: start tailprofd with "
              "--state-dir DIR" in err, err)
        usage_errors(["snapshot"], (
                (["save", "a/b"], "'a/b' is not a snapshot name (1-64 characters"),
                (["save", ".."], "'..' is not a snapshot name"),
                (["save", "."], "'.' is not a snapshot name"),
                (["save", "x" * 65], "is not a snapshot name"),
                (["rm", "a b"], "'a b' is not a snapshot name"),
                (["save"], "snapshot save needs the NAME of a snapshot"),
                (["rm"], "snapshot rm needs the NAME of a snapshot"),
                (["save", "a", "b"], "unexpected argument 'b'"),
                (["save", "a", "--last", "5x"], "--last: '5x' is not a positive duration"),
                (["save", "a", "--last", "5m", "--from", "1795986000"],
                 "--last cannot be combined"),
                (["list", "extra"], "unexpected argument 'extra'"),
                (["frob"], "unknown action 'frob' for snapshot"),
                ([], "snapshot needs an action: save, list or rm")))

    def compare_profiles():
        d = tempfile.mkdtemp()
        before, after = os.path.join(d, "before.pb.gz"), os.path.join(d, "after.pb")
        with open(before, "wb") as f:
            f.write(gzip.compress(PPROF_BEFORE))
        with open(after, "wb") as f:
            f.write(PPROF_AFTER)
        rc, out, err = t.run("compare", "--before-profile", before, "--after-profile", after)
        check(rc == 0, f"rc {rc}, stderr {err}")
        lines = out.decode().splitlines()
        check(lines[0] == f"before: {before}: samples/count, total 100", lines[0])
        head = lines.index("FUNCTION    BEFORE   AFTER    CHANGE")
        # the leaf of an inlined location is its first line (hot), not its caller (main)
        check([cells(l) for l in lines[head + 1:head + 4]] == [
            ["hot", "75.00%", "50.00%", "-25.00pp"], ["json_dumps", "0.00%", "25.00%", "+25.00pp"],
            ["cold", "25.00%", "25.00%", "+0.00pp"]], lines)
        check("no intervals and no verdicts" in out.decode(), out)
        check(FakeDaemon.requests == [], FakeDaemon.requests)
        rc, out, err = t.run("compare", "--before-profile", before, "--after-profile", after,
                             "--json", "--top", "2")
        doc = json.loads(out)
        check(rc == 0 and doc["before_profile"] == before and doc["after_profile"] == after, doc)
        check(doc["sample_type"] == "samples/count" and "no verdicts" in doc["note"], doc)
        check(doc["functions"] == [
            {"function": "hot", "before_share": 0.75, "after_share": 0.5, "diff": -0.25},
            {"function": "json_dumps", "before_share": 0.0, "after_share": 0.25, "diff": 0.25}],
            doc["functions"])
        for name, data, needle in (
                ("truncated.pb.gz", gzip.compress(PPROF_BEFORE)[:40], "truncated"),
                ("garbage.pb.gz", b"\xde\xad\xbe\xef this is not a profile" * 3,
                 "not a pprof profile"),
                ("text.pb.gz", gzip.compress(b"\x0a\x04fake pprof bytes"),
                 "is not a pprof profile"),
                ("cut.pb", PPROF_AFTER[:-5], "not a pprof profile"),
                ("corrupt.pb.gz", b"\x1f\x8b\x09" + gzip.compress(PPROF_BEFORE)[3:],
                 "not valid gzip data (unknown compression method)"),
                ("empty.pb", b"", "no sample types"),
                ("diff.pb", pprof([(["hot", "main"], 100), (["cold", "main"], -90)]),
                 "negative value (-90): a diff profile?")):
            path = os.path.join(d, name)
            with open(path, "wb") as f:
                f.write(data)
            rc, out, err = t.run("compare", "--before-profile", before, "--after-profile", path)
            check(rc == 1 and out == b"", f"{name}: rc {rc}")
            check(err.startswith(f"tailprof: {path}: ") and needle in err, f"{name}: {err!r}")
            os.unlink(path)
        missing = os.path.join(d, "missing.pb.gz")
        rc, out, err = t.run("compare", "--before-profile", missing, "--after-profile", after)
        check(rc == 1 and f"cannot open {missing}: No such file or directory" in err, err)
        os.unlink(before)
        os.unlink(after)
        os.rmdir(d)

    def compare_helps():
        rc, out, _ = t.run("--help")
        for cmd in ("compare", "snapshot"):
            check(f"\n  {cmd} " in out.decode(), out)
        for args in (["compare", "--help"], ["help", "compare"], ["snapshot", "--help"],
                     ["snapshot", "save", "--help"], ["snapshot", "list", "-h"]):
            rc, out, _ = t.run(*args)
            want = ("Usage: tailprof " + (args[1] if args[0] == "help" else args[0])).encode()
            check(rc == 0 and out.startswith(want), f"{args}: {out[:40]!r}")
            check(b"--server URL" in out, out)
        rc, out, _ = t.run("compare", "--help")
        for opt in (b"--fail-on-regression PCT", b"--gate-functions", b"--before-profile FILE",
                    b"--top N", b"snap:NAME", b"--min-effect PCT", b"--alpha A", b"--seed N"):
            check(opt in out, opt)

    t.case("compare prints conditions, regressions first, stages, totals, functions",
           compare_table)
    t.case("compare --json passes the body; the query carries every option", compare_json_and_query)
    t.case("compare --fail-on-regression: 8% over 5 exits 1, under 10 exits 0; functions with "
           "--gate-functions only", compare_gate)
    t.case("compare: bad sides and options exit 2 before any request", compare_usage)
    t.case("compare and snapshot with the daemon down exit 1", compare_errors)
    t.case("snapshot save, list and rm", snapshot_cmds)
    t.case("snapshot: 409 without a state directory exits 1; bad names exit 2", snapshot_errors)
    t.case("compare --before-profile/--after-profile: shares by leaf; bad files exit 1",
           compare_profiles)
    t.case("--help lists compare and snapshot and their options", compare_helps)
    t.case("spikes prints a table: p95 vs baseline, pattern, cause, marks", spikes_table)
    t.case("spikes --json passes the body; an empty list says where to look", spikes_json_and_empty)
    t.case("explain prints the header, causes, evidence and requests", explain_text)
    t.case("explain latest resolves client-side, with and without --stage", explain_latest)
    t.case("explain: 404 exits 1, bad ids and flags exit 2", explain_errors)
    t.case("pull --spike --baseline writes both files and the diff hint", pull_spike_baseline)
    t.case("pull --spike --baseline failing writes neither file", pull_spike_fails_whole)
    t.case("pull --request writes the request's profile", pull_request)
    t.case("pull --spike/--request usage errors exit 2", pull_spike_usage)
    t.case("mark POSTs the JSON and prints the id", mark_post)
    t.case("mark: 503 and 400 exit 1, bad flags exit 2", mark_errors)
    t.case("spikes, explain, mark and pull --spike with the daemon down", spikes_daemon_down)
    t.case("--help lists spikes, explain, mark and pull's new flags", spikes_helps)
    t.case("stages prints per-window and whole-range rows; --json; bad --last", stages_table)
    t.case("status shows stage hit rates, failures and the 1% warning", status_stages)
    t.case("pull --stage sends stage=", pull_stage)
    t.case("status prints readable text", status_text)
    t.case("status --json prints the body byte for byte (--server after)", status_json)
    t.case("status lists GC objects and unsupported runtimes", status_gc)
    t.case("status prints the features table; the off-CPU line says why", status_features)
    t.case("gc prints a table of events and the totals", gc_text)
    t.case("gc --json prints the body; a bad --last exits 2", gc_json)
    t.case("windows prints a table, current marked, missing as -", windows_text)
    t.case("windows --json with --from/--to sends the escaped originals", windows_json_range)
    t.case("TAILPROF_SERVER is used, --server wins over it", server_from_env)
    t.case("pull writes the body atomically and prints one summary", pull_file)
    t.case("pull says when a filter matched no sample", pull_nothing_matched)
    t.case("pull -o - writes the body to stdout only", pull_stdout)
    t.case("pull -o DEVICE or SYMLINK writes through it", pull_write_through)
    t.case("pull with a server 400 exits 1 and leaves no file", pull_server_error)
    t.case("daemon down exits 1 and says so", daemon_down)
    t.case("bad flags exit 2 and name the flag", bad_flags)
    t.case("bad durations and times exit 2", bad_durations_and_times)
    t.case("--last with --from/--to exits 2", last_with_from)
    t.case("--help exits 0 everywhere", helps)
    srv.shutdown()
    for name in os.listdir(tmp):
        os.unlink(os.path.join(tmp, name))
    os.rmdir(tmp)
    print(f"{t.passed} passed, {t.failed} failed")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
