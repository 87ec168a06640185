#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Bounded resources (docs/configuration.md, "Bounded tables"): one tailprofd with tiny [limits]
caps, a 1 s window and 10 s of retention, a known workload (tp_hotcold: 75% of its time in
hot_function) started first, then a churn of short processes, each at a stack depth of its own
(tp_deep_fp), until the tables are full.

- the tables fill: stacks and tasks refuse new entries (stacks go in by function in the spare
  eighth of the cap, then are dropped: stack_table_full; tasks: task_table_full),
  known processes and the symbolizer's processes evict; each table's entries stay within its cap
  in the status's limits and in /metrics, and their counters rose;
- the profile of tp_hotcold pulled afterwards is still right: hot_function about 75%;
- connections past [limits] http_connections are closed at accept and counted;
- marks past [spikes] write_rate get 429, Alertmanager deliveries (their own bucket) 503, both
  with Retry-After;
  the pins stay within the pin budget, the oldest released;
- snapshot saves past [snapshots] max_count get 507, past save_rate 429 with Retry-After; the
  counters of both rose.

Usage: test_limits.py BUILD_DIR. Outside CI, exits 77 (skip) when not root or BPF cannot load;
with CI=true that is a failure."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import daemon  # noqa: E402
from runner import require_bpf, run_tests, start_daemons  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
DAEMON = os.path.join(BUILD, "daemon", "tailprofd")
WL = os.path.join(BUILD, "tests", "workloads")
TMP = tempfile.mkdtemp(prefix="tailprof-limits-")
CAPS = {"stacks": 100, "tasks": 150, "known_processes": 30, "processes": 20}
HTTP_CONNECTIONS = 4
PIN_BUDGET = 4
SNAPSHOTS = 3
CONFIG = """[limits]
stacks = %(stacks)d
tasks = %(tasks)d
known_processes = %(known_processes)d
processes = %(processes)d
http_connections = %(http)d

[spikes]
pin_budget = %(pins)d

[snapshots]
max_count = %(snaps)d
save_rate = 1
""" % dict(CAPS, http=HTTP_CONNECTIONS, pins=PIN_BUDGET, snaps=SNAPSHOTS)

hotcold = None


def make():
    global hotcold
    conf = os.path.join(TMP, "tailprofd.conf")
    with open(conf, "w") as f:
        f.write(CONFIG)
    # the known answer first: its task and stacks are interned before the tables are full
    hotcold = subprocess.Popen([os.path.join(WL, "tp_hotcold"), "120"], stdout=subprocess.PIPE)
    hotcold.pid_seen = int(hotcold.stdout.readline())
    try:
        d = daemon.Daemon(DAEMON, "--config", conf, "--window", "1s", "--retention", "10s",
                          "--state-dir", os.path.join(TMP, "state"),
                          "--socket", os.path.join(TMP, "api.sock"), wait_s=60)
    except RuntimeError:
        cleanup()
        raise
    time.sleep(3)
    churn(d)
    return [d]


def full(d):
    lim = limits(d)
    return (lim["stacks"]["refused"] and lim["tasks"]["refused"] and
            lim["known_processes"]["evicted"] and lim["processes"]["evicted"] and
            d.metrics()['tailprof_drops_total{reason="stack_table_full"}'])


def churn(d):
    """Processes 4 at a time, each spinning 30 ms at the bottom of a depth of its own (new tasks,
    processes and stacks: each of its samples a new stack), in batches of 40 until every capped
    table has refused or evicted, or 45 s: however busy the host, the churn fills them. Beside
    them, more sleeping processes than known_processes' cap: known from their first block on
    (an exited process is forgotten, so only live ones fill that table)."""
    deep = os.path.join(WL, "tp_deep_fp")
    depth, deadline = 3, time.time() + 45
    sleepers = [subprocess.Popen(["sleep", "60"]) for _ in range(CAPS["known_processes"] + 5)]
    try:
        while time.time() < deadline and not full(d):
            for _ in range(10):
                running = [subprocess.Popen([deep, "0.03", str(depth + i)],
                                            stdout=subprocess.DEVNULL) for i in range(4)]
                depth += 4
                for p in running:
                    p.wait()
    finally:
        for p in sleepers:
            p.kill()
            p.wait()
    print("  churn: %d processes, %d sleeping" % (depth - 3, len(sleepers)))


def limits(d):
    return d.json("/api/v1/status")["limits"]


def test_tables_capped(d):
    lim = limits(d)
    m = d.metrics()
    for table, cap in CAPS.items():
        row = lim[table]
        assert row["cap"] == cap, (table, row)
        assert row["entries"] <= cap, (table, row)
        assert m['tailprof_table_capacity{table="%s"}' % table] == cap, table
        assert m['tailprof_table_entries{table="%s"}' % table] <= cap, table
    # stacks and tasks refuse (the samples counted as drops); processes evict
    for table in ("stacks", "tasks"):
        assert lim[table]["rule"] == "refuse_new" and lim[table]["refused"] > 0, lim[table]
        assert m['tailprof_table_refused_total{table="%s"}' % table] > 0, table
    # a stack refused went in by function, in the spare eighth; past the cap, samples dropped
    assert m["tailprof_folded_stacks_total"] > 0
    assert m['tailprof_drops_total{reason="stack_table_full"}'] > 0
    assert m['tailprof_drops_total{reason="task_table_full"}'] > 0
    for table in ("known_processes", "processes"):
        assert lim[table]["evicted"] > 0, lim[table]
        assert m['tailprof_table_evictions_total{table="%s"}' % table] > 0, table
    print("  limits: " + json.dumps({t: lim[t] for t in CAPS}))


def test_profile_still_right(d):
    pid = hotcold.pid_seen
    prof, _ = d.profile("last=10s&pid=%d" % pid)
    stacks = [(s["values"][0], [f["function"] for f in s["frames"]]) for s in prof.samples]
    total = sum(v for v, _ in stacks)
    hot = sum(v for v, fr in stacks if "hot_function" in fr)
    cold = sum(v for v, fr in stacks if "cold_function" in fr)
    print("  tp_hotcold: %d samples, hot %d, cold %d" % (total, hot, cold))
    assert total >= 40, total
    assert hot + cold >= 0.9 * total, (hot, cold, total)
    assert 0.6 <= hot / (hot + cold) <= 0.9, (hot, cold)


def test_http_connections(d):
    m0 = d.metrics()['tailprof_table_refused_total{table="http_connections"}']
    socks = []
    for _ in range(HTTP_CONNECTIONS + 3):
        s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
        socks.append(s)
        time.sleep(0.05)
    closed = 0
    for s in socks:
        s.settimeout(1)
        try:
            closed += s.recv(1) == b""
        except ConnectionResetError:
            closed += 1
        except socket.timeout:
            pass
    # TCP's slots held by clients that send nothing: the unix socket has its own, and serves
    u = socket.socket(socket.AF_UNIX)
    u.settimeout(10)
    u.connect(os.path.join(TMP, "api.sock"))
    u.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    answer = b""
    while True:
        chunk = u.recv(4096)
        if not chunk:
            break
        answer += chunk
    u.close()
    print("  the socket with TCP full: %r" % answer.split(b"\r\n")[0])
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"ok\n"), answer
    for s in socks:
        s.close()
    time.sleep(0.5)
    m = d.metrics()
    print("  connections: %d of %d closed at accept" % (closed, len(socks)))
    assert closed >= 3, closed
    assert m['tailprof_table_refused_total{table="http_connections"}'] - m0 >= 3, m
    assert m['tailprof_table_capacity{table="http_connections"}'] == HTTP_CONNECTIONS


def post(d, path, body=b"{}"):
    req = urllib.request.Request(d.url + path, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        r = urllib.request.urlopen(req, timeout=30)
        return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def test_marks_rate_and_pins(d):
    got = [post(d, "/api/v1/marks", b'{"before": "2s", "after": "1s"}') for _ in range(24)]
    codes = [c for c, _, _ in got]
    # a burst of 20 (write_rate 60 a minute: one more a second comes back while posting)
    assert 20 <= codes.count(200) <= 22 and codes.count(429) >= 2, codes
    status, headers, body = next(g for g in got if g[0] != 200)
    assert status == 429 and int(headers["Retry-After"]) >= 1, (status, headers)
    assert "too many write requests" in body["error"], body
    # Alertmanager has a bucket of its own: its deliveries still go, then 503
    got = [post(d, "/api/v1/alertmanager", b'{"version": "4", "alerts": []}')
           for _ in range(24)]
    codes = [c for c, _, _ in got]
    assert 20 <= codes.count(200) <= 22 and codes.count(503) >= 2, codes
    status, headers, body = next(g for g in got if g[0] != 200)
    assert status == 503 and int(headers["Retry-After"]) >= 1, (status, body)
    # the marks pin at the next window closes (later on a busy host)
    deadline = time.time() + 30
    while time.time() < deadline and not limits(d)["pinned_windows"]["evicted"]:
        time.sleep(1)
    m = d.metrics()
    assert m['tailprof_http_rejected_total{route="/api/v1/marks",reason="rate"}'] >= 3, m
    assert m['tailprof_http_rejected_total{route="/api/v1/alertmanager",reason="rate"}'] >= 2
    pins = limits(d)["pinned_windows"]
    print("  pins: " + json.dumps(pins))
    assert pins["cap"] == PIN_BUDGET and 0 < pins["entries"] <= PIN_BUDGET, pins
    assert pins["evicted"] > 0, pins


def test_snapshots_bounded(d):
    got = [post(d, "/api/v1/snapshots?name=s%d&last=5s" % i, b"") for i in range(7)]
    codes = [c for c, _, _ in got]
    print("  snapshot saves: %s" % codes)
    # a burst of 5 saves: 3 stored, 2 past max_count; then the rate
    assert codes[:5] == [201] * SNAPSHOTS + [507] * (5 - SNAPSHOTS), got
    assert codes[5:] == [429, 429], got
    assert int(got[6][1]["Retry-After"]) >= 1 and "save_rate" in got[6][2]["error"], got[6]
    snaps = limits(d)["snapshots"]
    assert snaps["entries"] == SNAPSHOTS and snaps["cap"] == SNAPSHOTS, snaps
    assert snaps["refused"] == 5 - SNAPSHOTS, snaps
    m = d.metrics()
    assert m['tailprof_http_rejected_total{route="/api/v1/snapshots",reason="rate"}'] == 2, m


def cleanup():
    if hotcold:
        hotcold.kill()
        hotcold.wait()
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    require_bpf()
    run_tests([test_tables_capped, test_profile_still_right, test_http_connections,
               test_marks_rate_and_pins, test_snapshots_bounded],
              start_daemons(make), cleanup)
