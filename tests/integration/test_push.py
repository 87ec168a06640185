#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Push to a central store (docs/push.md): tailprofd with --window 1s pushes to a receiver
started here (Python's http.server), which keeps every request; each body is checked with
`go tool pprof -raw`, each query for name, from and until.

- every window arrives once, in order, CPU and off-CPU under their own names, the labels the
  config drops gone;
- the receiver stops for 15 s and comes back: the queued windows arrive, none lost, none twice;
- with a queue of 2 windows and the receiver down for 8 s, the queue stays at its cap and the
  oldest profiles are dropped and counted;
- a receiver answering 400 gets each profile once (no retries), counted as dropped;
- SIGTERM with the receiver down: the queue goes to the state directory and is sent after the
  restart.

Usage: test_push.py BUILD_DIR. Outside CI, exits 77 (skip) when not root or BPF cannot load;
with CI=true that is a failure."""
import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from pprof_decode import Profile  # noqa: E402
import daemon  # noqa: E402
from runner import require_bpf, run_tests, skip, start_daemons  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
DAEMON = os.path.join(BUILD, "daemon", "tailprofd")
HOST = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())
TMP = tempfile.mkdtemp(prefix="tailprof-push-")
GO = shutil.which("go")


class Receiver:
    """A Pyroscope-like /ingest on 127.0.0.1:port answering `status` (and a two-line body for
    errors); requests keeps (name, from, until, format, content type, authorization, body)."""

    def __init__(self, port=0, status=200, delay=0):
        self.requests = []
        self.status = status
        self.delay = delay
        self.port = port
        self.server = None
        self.start()

    def start(self):
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                u = urllib.parse.urlsplit(self.path)
                q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                rec.requests.append({
                    "path": u.path, "query": q, "name": q.get("name", [""])[0],
                    "from": int(q["from"][0]), "until": int(q["until"][0]),
                    "format": q.get("format", [""])[0],
                    "type": self.headers.get("Content-Type"),
                    "auth": self.headers.get("Authorization"), "body": body})
                time.sleep(rec.delay)
                msg = b"" if rec.status < 300 else b"bad profile: test says no\nsecond line\n"
                try:
                    self.send_response(rec.status)
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # tailprofd gave up (the stop's 2 s)

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def of(self, kind):
        return [r for r in self.requests if r["name"].startswith("tailprof.%s{" % kind)]


class Daemon(daemon.Daemon):
    def __init__(self, *args):
        super().__init__(DAEMON, *args)


def config(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def pprof_raw(body):
    """`go tool pprof -raw` of body: its output (it must parse)."""
    with tempfile.NamedTemporaryFile(dir=TMP, suffix=".pb.gz") as f:
        f.write(body)
        f.flush()
        r = subprocess.run([GO, "tool", "pprof", "-raw", f.name], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ, HOME=TMP))
    assert r.returncode == 0 and "PeriodType" in r.stdout, (r.returncode, r.stderr[-500:])
    return r.stdout


def check_requests(reqs, kind, labels):
    """Every request of kind: the query's name, from, until and format; the body is a pprof
    that go tool pprof reads, of the right sample type."""
    for r in reqs:
        assert r["path"] == "/ingest", r["path"]
        assert r["name"].startswith("tailprof.%s{host=%s%s" % (kind, HOST, labels)), r["name"]
        assert r["name"].endswith("}"), r["name"]
        assert r["format"] == "pprof" and r["type"] == "application/octet-stream", r
        assert r["until"] > r["from"] > 1700000000, r
        out = pprof_raw(r["body"])
        assert ("cpu/nanoseconds" if kind == "cpu" else "off_cpu/nanoseconds") in out, out[:300]


def check_sequence(reqs, what):
    """Windows of 1 s: each from once, in order, each until the next from (none missing)."""
    froms = [r["from"] for r in reqs]
    assert len(froms) == len(set(froms)), (what, "sent twice", froms)
    assert froms == sorted(froms), (what, "out of order", froms)
    for a, b in zip(reqs, reqs[1:]):
        assert a["until"] == b["from"], (what, "a window is missing", a["from"], b["from"])
    return froms


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while not cond():
        assert time.time() < deadline, what
        time.sleep(0.2)


def spin(seconds):
    """A busy process, so that CPU profiles have samples."""
    return subprocess.Popen([sys.executable, "-c",
                             "import time\nt=time.time()+%f\nwhile time.time()<t: pass" %
                             seconds])


# ---- tests ----

def test_every_window_once_in_order_with_labels_dropped():
    rec = Receiver()
    cfg = config("drop.conf", "[push]\nurl = %s/\napp = tailprof\nlabels = env=test\n"
                 "drop_labels = tid,pid\ntoken_file = %s\n" %
                 (rec.url, config("token", "s3cret\n")))
    d = Daemon("--window", "1s", "--retention", "2m", "--config", cfg)
    try:
        w = spin(5)
        w.wait()
        time.sleep(1.5)
        m = d.metrics()
    finally:
        d.stop()
        rec.stop()
    cpu, off = rec.of("cpu"), rec.of("offcpu")
    assert len(cpu) + len(off) == len(rec.requests), [r["name"] for r in rec.requests]
    print("  %d cpu and %d offcpu profiles" % (len(cpu), len(off)))
    assert len(cpu) >= 5 and abs(len(cpu) - len(off)) <= 1, (len(cpu), len(off))
    check_requests(cpu, "cpu", ",env=test")
    check_requests(off, "offcpu", ",env=test")
    assert check_sequence(cpu, "cpu")[:len(off)] == check_sequence(off, "offcpu")[:len(cpu)]
    assert all(r["auth"] == "Bearer s3cret" for r in rec.requests)
    samples = 0
    for r in cpu:
        p = Profile(r["body"])
        for s in p.samples:
            assert "pid" not in s["labels"] and "tid" not in s["labels"], s["labels"]
            assert "comm" in s["labels"], s["labels"]
            samples += s["values"][0]
    assert samples > 100, samples
    assert m["tailprof_push_sent_total"] >= 10, m
    assert m["tailprof_push_retries_total"] == 0, m
    assert m['tailprof_push_dropped_total{reason="queue_full"}'] == 0, m
    assert "tailprof_push_last_success_timestamp_seconds" in m
    assert "tailprof_push_queue_length" in m


def test_receiver_down_15s_nothing_lost_nothing_twice():
    rec = Receiver()
    d = Daemon("--window", "1s", "--retention", "2m", "--push-url", rec.url)
    try:
        wait_for(lambda: len(rec.of("cpu")) >= 3, 20, "no window pushed in 20 s")
        rec.stop()
        down = time.time()
        time.sleep(15)
        rec.start()
        up = time.time()
        # everything that closed while it was down arrives (back-off: at most 30 s later)
        wait_for(lambda: rec.of("cpu") and rec.of("cpu")[-1]["until"] >= int(up) + 1, 45,
                 "the queue was not sent within 45 s of the receiver's return")
        time.sleep(1.5)
        m = d.metrics()
    finally:
        d.stop()
        rec.stop()
    cpu, off = rec.of("cpu"), rec.of("offcpu")
    froms = check_sequence(cpu, "cpu")
    check_sequence(off, "offcpu")
    assert any(down <= f <= up - 2 for f in froms), ("no window of the outage", froms, down, up)
    check_requests(cpu, "cpu", "")
    check_requests(off, "offcpu", "")
    print("  %d windows, %d retries" % (len(cpu), m["tailprof_push_retries_total"]))
    assert m["tailprof_push_retries_total"] >= 1, m
    assert sum(v for k, v in m.items() if k.startswith("tailprof_push_dropped_total")) == 0, m


def test_queue_full_drops_the_oldest():
    """queue_windows = 2 (4 profiles) and the store down for 8 windows: the queue stays at its
    cap, the oldest profiles are dropped and counted, and the newest are sent on its return."""
    rec = Receiver()
    cfg = config("small-queue.conf", "[push]\nurl = %s/\nqueue_windows = 2\n" % rec.url)
    d = Daemon("--window", "1s", "--retention", "2m", "--config", cfg)
    try:
        wait_for(lambda: len(rec.of("cpu")) >= 2, 20, "no window pushed in 20 s")
        rec.stop()
        down = time.time()
        lengths = []
        for _ in range(16):
            time.sleep(0.5)
            lengths.append(d.metrics()["tailprof_push_queue_length"])
        rec.start()
        up = time.time()
        wait_for(lambda: rec.of("cpu") and rec.of("cpu")[-1]["from"] >= int(up), 45,
                 "nothing sent within 45 s of the receiver's return")
        m_end = d.metrics()
    finally:
        d.stop()
        rec.stop()
    froms = [r["from"] for r in rec.of("cpu")]
    assert froms == sorted(froms) and len(froms) == len(set(froms)), froms
    before = [f for f in froms if f < down]
    after = [f for f in froms if f >= down]
    missing = after[0] - before[-1] - 1  # windows of 1 s never sent
    dropped = m_end['tailprof_push_dropped_total{reason="queue_full"}']
    print("  queue length at most %d while down; %d windows not sent, %d profiles dropped for "
          "queue_full" % (max(lengths), missing, dropped))
    assert max(lengths) <= 4, lengths
    # the outage's oldest windows went, the newest were sent: a gap of 8 s or more
    assert missing >= 6, (froms, down, up)
    # every window not sent is counted: a CPU and an off-CPU profile each (the last window
    # before the stop may have gone without its off-CPU one)
    assert abs(dropped - 2 * missing) <= 1, (dropped, missing, froms)
    assert m_end["tailprof_push_queue_length"] <= 4, m_end


def test_400_is_not_retried():
    rec = Receiver(status=400)
    d = Daemon("--window", "1s", "--retention", "2m", "--push-url", rec.url)
    try:
        time.sleep(6)
        m = d.metrics()
    finally:
        d.stop()
        rec.stop()
    keys = [(r["name"], r["from"]) for r in rec.requests]
    assert len(keys) >= 8 and len(keys) == len(set(keys)), keys
    assert m["tailprof_push_retries_total"] == 0, m
    assert m['tailprof_push_dropped_total{reason="rejected"}'] >= len(keys) - 2, (m, len(keys))
    assert "400 bad profile: test says no" in d.output(), d.output()[-2000:]
    assert "second line" not in d.output()


def test_sigterm_keeps_the_queue_in_the_state_directory():
    state = os.path.join(TMP, "state")
    rec = Receiver()
    port = rec.port
    rec.stop()
    d = Daemon("--window", "1s", "--retention", "2m", "--push-url", rec.url,
               "--state-dir", state)
    time.sleep(4)
    t0 = time.time()
    assert d.stop() == 0
    took = time.time() - t0
    spooled = sorted(os.listdir(os.path.join(state, "push")))
    print("  stopped in %.1f s, %d profiles kept" % (took, len(spooled)))
    assert len(spooled) >= 4, spooled
    rec = Receiver(port=port)
    d = Daemon("--window", "1s", "--retention", "2m", "--push-url", rec.url,
               "--state-dir", state)
    try:
        wait_for(lambda: len(rec.of("cpu")) >= len(spooled) // 2 + 2, 20,
                 "the kept profiles were not sent")
    finally:
        d.stop()
        rec.stop()
    cpu, off = rec.of("cpu"), rec.of("offcpu")
    check_requests(cpu, "cpu", "")
    check_requests(off, "offcpu", "")
    froms = [r["from"] for r in cpu]
    assert len(froms) == len(set(froms)) and froms == sorted(froms), froms
    assert froms[0] < t0, ("the kept windows came first", froms, t0)


def test_a_hanging_store_holds_the_stop_2s_at_most():
    state = os.path.join(TMP, "state-hang")
    rec = Receiver(delay=25)
    d = Daemon("--window", "1s", "--retention", "2m", "--push-url", rec.url,
               "--state-dir", state)
    try:
        wait_for(lambda: rec.requests, 10, "no request in 10 s")
        t0 = time.time()
        assert d.stop() == 0
        took = time.time() - t0
    finally:
        rec.stop()
    spooled = os.listdir(os.path.join(state, "push"))
    print("  stopped in %.1f s with a request hanging, %d profiles kept" % (took, len(spooled)))
    # the 2 s flush, and the kernel freeing the BPF objects (two to four seconds)
    assert took < 9, took
    assert len(spooled) >= 1, spooled


def test_bad_options():
    for args, what in ((["--push-url", "ftp://x"], "--push-url"),):
        r = subprocess.run([DAEMON] + args, capture_output=True, text=True)
        assert r.returncode == 2 and what in r.stderr, r
    cfg = config("bad.conf", "[push]\nurl = http://127.0.0.1:1\nkeep_labels = pid\n"
                 "drop_labels = tid\n")
    r = subprocess.run([DAEMON, "--config", cfg], capture_output=True, text=True)
    assert r.returncode == 2 and "exclude" in r.stderr, r
    cfg = config("bad2.conf", "[push]\nlabels = host=x\n")
    r = subprocess.run([DAEMON, "--config", cfg], capture_output=True, text=True)
    assert r.returncode == 2 and "host" in r.stderr, r


def main():
    require_bpf()
    if not GO:
        skip("go is not installed (go tool pprof checks the bodies)")
    # a daemon that starts is the check that BPF loads here
    start_daemons(lambda: Daemon("--window", "1s")).stop()
    tests = [test_bad_options, test_every_window_once_in_order_with_labels_dropped,
             test_400_is_not_retried, test_sigterm_keeps_the_queue_in_the_state_directory,
             test_a_hanging_store_holds_the_stop_2s_at_most,
             test_receiver_down_15s_nothing_lost_nothing_twice, test_queue_full_drops_the_oldest]
    run_tests(tests, [], cleanup=lambda: shutil.rmtree(TMP, ignore_errors=True))


if __name__ == "__main__":
    main()
