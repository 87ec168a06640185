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
    "gc": {"enabled": True, "probes_attached": 3, "objects": [
        {"runtime": "python", "path": "/usr/bin/python3.11", "state": "attached",
         "processes": 2, "probes": 2},
        {"runtime": "go", "path": "/srv/app", "state": "unsupported", "processes": 1,
         "probes": 0, "reason": "stripped Go binary"}]},
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


class FakeDaemon(http.server.BaseHTTPRequestHandler):
    requests = []
    posts = []  # (path, parsed JSON body) of each POST
    with_stages = False
    without_features = False
    no_spikes = False
    marks_503 = False

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
        if self.path != "/api/v1/marks":
            self.reply(404, b'{"error": "no such path"}')
        elif FakeDaemon.marks_503:
            self.reply(503, b'{"error": "marks: too many marks (at most 10 a minute); try '
                       b'again later"}')
        elif isinstance(doc, dict) and doc.get("stage") == "nope":
            self.reply(400, b'{"error": "stage: \'nope\' is not a stage (known: compute, io)"}')
        else:
            self.reply(200, b'{"id": "m-77"}')


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
        check(rc == 0 and "gc:" in text and "3 probes attached" in text, text)
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
        i = lines.index("slowest requests (2 of 2):")
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
            check("start it with: sudo tailprofd" in err, err)
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
