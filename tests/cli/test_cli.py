#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Tests the tailprof CLI end to end against a fake tailprofd (stdlib only, no root)."""
import gzip
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
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


class FakeDaemon(http.server.BaseHTTPRequestHandler):
    requests = []
    with_stages = False
    without_features = False

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
        elif url.path == "/api/v1/profile":
            if q.get("type") != ["cpu"]:
                self.reply(400, b'{"error": "type: \'%s\' is not supported (allowed: cpu)"}'
                           % q.get("type", [""])[0].encode())
            else:
                self.reply(200, PROFILE_BODY, "application/octet-stream", PROFILE_HEADERS)
        else:
            self.reply(404, b'{"error": "no such path"}')


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
