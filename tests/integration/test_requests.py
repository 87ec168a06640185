#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Integration tests of the slowest requests one by one: each slow span's accounting (exact from
the stage programs, or estimated from samples) and its own profile, GET
/api/v1/profile?request=ID, against tp_request, whose slow requests block 30 ms in nanosleep
under wait_backend and then take 20 ms of the thread's CPU time under compute_answer.

Usage: test_requests.py BUILD_DIR. Outside CI, exits 77 (skip) when not root or BPF cannot load;
with CI=true that is a failure. TAILPROF_TEST=name runs the tests whose name contains it."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import daemon  # noqa: E402
from pprof_decode import Profile  # noqa: E402
from runner import require_bpf, run_tests, start_daemons  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
DAEMON = os.path.join(BUILD, "daemon", "tailprofd")
WORKLOAD = os.path.join(BUILD, "tests", "workloads", "tp_request")
FREQ = 997
SLEEP_NS, SPIN_NS = 30e6, 20e6
TMP = tempfile.mkdtemp(prefix="tp_requests.")


class Daemon(daemon.Daemon):
    def __init__(self, *args, env=None):
        config = os.path.join(TMP, "requests.ini")
        with open(config, "w") as f:
            f.write("[stage request]\nbinary = %s\nfunction = handle_request\n" % WORKLOAD)
        saved = os.environ.get("TAILPROF_FEATURES_OFF")
        if env:
            os.environ["TAILPROF_FEATURES_OFF"] = env
        try:
            super().__init__(DAEMON, "--frequency", str(FREQ), "--window", "1s", "--retention",
                             "5m", "--config", config, *args)
        finally:
            if env and saved is None:
                del os.environ["TAILPROF_FEATURES_OFF"]
            elif env:
                os.environ["TAILPROF_FEATURES_OFF"] = saved


LOG = os.path.join(TMP, "requests.log")


def start_requests(seconds):
    p = subprocess.Popen([WORKLOAD, str(seconds), LOG], stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


def logged_requests():
    """The requests as tp_request measured them: (start Unix ns, duration ns, thread CPU ns,
    thread run-queue ns or -1, slow), around handle_request. Fast ones too: a fast request that
    a stall of the VM stretched past 45 ms is a slow span, and its truth is its own clocks."""
    out = []
    with open(LOG) as f:
        for line in f:
            _, slow, dur, cpu, start, runq = map(int, line.split())
            out.append((start, dur, cpu, runq, bool(slow)))
    return out


def truth_of(span, logged):
    """The logged request that span is (started within 2 ms of it, nearest in start and
    duration: a fast request starts a fraction of a ms before a slow one), or None."""
    best = min(logged, key=lambda r: abs(r[0] - span["start_unix_ns"]) +
               abs(r[1] - span["duration_ns"]))
    return best if abs(best[0] - span["start_unix_ns"]) < 2e6 else None


def sleep_of(t):
    """The sleep of logged request t: a slow one's (or an unmatched span's) 30 ms, a fast one's
    none."""
    return SLEEP_NS if t is None or t[4] else 0


def off_truths(t):
    """The off-CPU times a span of logged request t may hold: its sleep, or more where the
    thread's own account (duration - its CPU clock - its sched_info.run_delay, both the
    kernel's) says so; or that account where it says less, because the kernel counted part of
    the sleep as run-queue wait (a sleeping thread migrated while its dequeue was delayed, Linux
    6.12 and later: docs/kernels.md). The account alone is not the truth: its run_delay is read
    just outside the request's clocks, so a wait there makes it too small."""
    if not t or t[3] < 0:
        return [sleep_of(t)]
    own = t[1] - t[2] - t[3]
    return [max(sleep_of(t), own), own]


def off_error(s, t):
    """How far span s's off-CPU time is from the nearest of logged request t's off_truths, as a
    share of at least the 30 ms sleep (a fast request's truth is about 0)."""
    return min(abs(s["offcpu_ns"] - v) / max(v, SLEEP_NS) for v in off_truths(t))


def slow_spans(d, pid):
    """The slow requests' spans of process pid (the fast ones may be spans too: the threshold is
    the previous window's p95), newest first."""
    spans = d.json("/api/v1/spans?stage=request&last=5m")["spans"]
    slow = [s for s in spans if s["pid"] == pid and s["duration_ns"] >= 45e6]
    return sorted(slow, key=lambda s: -s["start_unix_ns"])


def check_sum(s):
    assert s["cpu_ns"] + s["runq_ns"] + s["offcpu_ns"] == s["duration_ns"], s
    assert min(s["cpu_ns"], s["runq_ns"], s["offcpu_ns"]) >= 0, s


def within(value, expect, tolerance):
    return abs(value - expect) <= tolerance * expect


def exact_checks(d, label, seconds=6):
    p, pid = start_requests(seconds)
    p.wait()
    spans = slow_spans(d, pid)
    assert len(spans) >= 12, spans
    logged = logged_requests()
    for s in spans:
        check_sum(s)
        assert s["accounting"] == "exact", s
    # Against the thread's own CPU clock around each request: the spin is 20 ms of it, but now
    # and then a request takes a few ms more (22.96 ms by that clock once, 22.95 measured), so
    # each span is held to that clock and most of them to 20 ms.
    truths = [(s, truth_of(s, logged)) for s in spans]
    assert sum(t is not None for _, t in truths) >= 0.9 * len(spans), "unmatched spans"
    vs_log = max(abs(s["cpu_ns"] - t[2]) / max(t[2], SPIN_NS) for s, t in truths if t)
    # Off-CPU is the 30 ms sleep, or more where the thread's own account (off_truths) says so:
    # on a VM a timer fires late now and then, and a hypervisor's steal while the thread runs is
    # neither its CPU time nor its run-queue wait (5.6 ms more in CI once); or that account where
    # the kernel counted part of the sleep as run-queue wait (46.5 ms of run_delay in a request
    # with a 30 ms sleep once in CI, on 6.18.44). The span holds what the kernel says; most
    # spans must still show the 30 ms (below).
    bad = [s for s, t in truths if off_error(s, t) > 0.1 or
           (t and abs(s["cpu_ns"] - t[2]) > 0.1 * SPIN_NS) or
           (not t and not within(s["cpu_ns"], SPIN_NS, 0.1))]
    near = [s for s in spans if within(s["cpu_ns"], SPIN_NS, 0.1)]
    assert len(near) >= 0.9 * len(spans), "%d of %d within 10%% of 20 ms" % (len(near),
                                                                             len(spans))
    # and the known answer: most slow requests' off-CPU is their 30 ms sleep (or more where the
    # thread's own account says so: the first of off_truths)
    slept = [(s, t) for s, t in truths if t and t[4]]
    near_sleep = [s for s, t in slept if within(s["offcpu_ns"], off_truths(t)[0], 0.1)]
    # those whose run_delay holds part of the sleep (docs/kernels.md): counted, not failed
    as_runq = [s for s, t in slept if s not in near_sleep and off_error(s, t) <= 0.1]
    cpu_err = max(abs(s["cpu_ns"] - SPIN_NS) / SPIN_NS for s in spans)
    off_err = max(off_error(s, t) for s, t in truths)
    stolen = [t[1] - t[2] - t[3] - sleep_of(t) for _, t in truths if t and t[3] >= 0]
    runq = sorted(s["runq_ns"] for s in spans)
    print("  %s: %d slow spans, largest error cpu %.2f%% (against the thread's clock %.2f%%), "
          "off-CPU %.2f%%, run-queue median %.2f ms max %.2f ms; the thread's own off-CPU "
          "beyond the sleep at most %.2f ms; sleeps counted as run-queue wait by the kernel %d" % (
              label, len(spans), 100 * cpu_err, 100 * vs_log, 100 * off_err,
              runq[len(runq) // 2] / 1e6, runq[-1] / 1e6, max(stolen or [0]) / 1e6,
              len(as_runq)))
    for s in bad:
        t = truth_of(s, logged)
        print("  outside 10%%: cpu %.3f ms (thread clock %s), run queue %.3f ms (thread %s), "
              "off-CPU %.3f ms of %.3f ms" % (
                  s["cpu_ns"] / 1e6, "%.3f ms" % (t[2] / 1e6) if t else "?",
                  s["runq_ns"] / 1e6, "%.3f ms" % (t[3] / 1e6) if t and t[3] >= 0 else "?",
                  s["offcpu_ns"] / 1e6, s["duration_ns"] / 1e6))
    assert not bad, bad
    assert len(near_sleep) >= 0.9 * len(slept), "%d of %d slow requests' spans within 10%% of " \
        "their sleep" % (len(near_sleep), len(slept))
    return runq


def test_exact_accounting_of_slow_spans(d):
    exact_checks(d, "idle machine")


def test_exact_accounting_with_both_cpus_busy(d):
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    try:
        runq = exact_checks(d, "2 CPUs busy", 10)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    # the CPU part waits for a CPU now: the wait is run-queue time, not CPU or blocked time
    assert runq[len(runq) // 2] >= 1e6, runq


def newest_profile(d, pid, query=""):
    """(span, profile) of the newest slow span of pid whose profile is still kept."""
    for s in slow_spans(d, pid)[:3]:
        status, headers, body = d.get("/api/v1/profile?request=%s%s" % (s["id"], query))
        if status == 404:
            continue  # its window just went past the previous one
        assert status == 200, (status, body)
        assert headers["Content-Type"] == "application/octet-stream", headers
        assert int(headers["X-Tailprof-Samples"]) > 0, headers
        return s, Profile(body), body
    raise AssertionError("no profile of %s" % slow_spans(d, pid)[:3])


def value_under(prof, function, index):
    return sum(s["values"][index] for s in prof.samples
               if any(f["function"] == function for f in s["frames"]))


def test_request_profile_holds_its_functions(d):
    p, pid = start_requests(8)
    try:
        time.sleep(5)
        span, prof, body = newest_profile(d, pid)
        cpu_i, off_i = prof.sample_types.index(("cpu", "nanoseconds")), \
            prof.sample_types.index(("off_cpu", "nanoseconds"))
        assert prof.sample_types[-1] == ("wall", "nanoseconds"), prof.sample_types
        assert all(s["labels"]["tid"] == str(span["tid"]) for s in prof.samples), prof.samples
        spin, nap = value_under(prof, "compute_answer", cpu_i), \
            value_under(prof, "wait_backend", off_i)
        # 20 ms at 997 Hz is about 20 samples: a loose bound; the block is measured
        assert 10e6 <= spin <= 30e6, (spin, span)
        assert within(nap, SLEEP_NS, 0.1), (nap, span)
        # a sample may catch the nanosleep call on its way in or out, no more than a few
        assert value_under(prof, "compute_answer", off_i) == 0
        assert value_under(prof, "wait_backend", cpu_i) <= 0.1 * nap, prof.samples
        assert prof.total(off_i) <= span["duration_ns"], (prof.total(off_i), span)
        _, cpu_only, _ = newest_profile(d, pid, "&type=cpu")
        assert cpu_only.sample_types == [("samples", "count"), ("cpu", "nanoseconds")]
        assert value_under(cpu_only, "compute_answer", 1) >= 10e6
        _, off_only, _ = newest_profile(d, pid, "&type=offcpu")
        assert off_only.sample_types == [("events", "count"), ("off_cpu", "nanoseconds")]
        assert value_under(off_only, "compute_answer", 1) == 0
        path = os.path.join(TMP, "request.pb.gz")
        with open(path, "wb") as f:
            f.write(body)
        env = dict(os.environ, HOME=TMP, PPROF_TMPDIR=TMP)
        r = subprocess.run(["go", "tool", "pprof", "-top", "-symbolize=none", path], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        assert "compute_answer" in r.stdout and "wait_backend" in r.stdout, r.stdout
    finally:
        p.kill()
        p.wait()


def test_unknown_and_bad_request_ids(d):
    status, _, body = d.get("/api/v1/profile?request=1-1")
    assert status == 404 and b"'1-1'" in body and b"pinned" in body and b"previous" in body, body
    for bad in ("abc", "", "1-", "01-5", "1-2-3", "x" * 70, "1-99999999999999999999999"):
        status, _, body = d.get("/api/v1/profile?request=" + bad)
        assert status == 400 and b"request" in body, (bad, status, body)
    status, _, body = d.get("/api/v1/profile?request=1-1&last=1m")
    assert status == 400 and b"last" in body, body
    status, _, body = d.get("/api/v1/profile?request=1-1&type=nope")
    assert status == 400 and b"type" in body, body


def test_sampled_accounting_without_the_kernel_pieces(d, sampled):
    f = sampled.json("/api/v1/status")["features"]["request_accounting"]
    assert f["enabled"] and f["variant"] == "sampled", f
    p, pid = start_requests(6)
    p.wait()
    time.sleep(1.2)  # the last windows closed: their spans carry their estimate
    spans = slow_spans(sampled, pid)
    assert len(spans) >= 20, spans
    for s in spans:
        check_sum(s)
        assert s["accounting"] == "sampled", s
    # every estimate within bounds is too strict for samples; their median is not
    cpu = sorted(s["cpu_ns"] for s in spans)[len(spans) // 2]
    off = sorted(s["offcpu_ns"] for s in spans)[len(spans) // 2]
    print("  sampled: %d spans, median cpu %.2f ms, off-CPU %.2f ms" %
          (len(spans), cpu / 1e6, off / 1e6))
    assert within(cpu, SPIN_NS, 0.25), cpu
    assert within(off, SLEEP_NS, 0.1), off


def main():
    require_bpf()
    d = start_daemons(lambda: Daemon())
    f = d.json("/api/v1/status")["features"]["request_accounting"]
    assert f["enabled"] and f["variant"] == "sum_exec_runtime", f
    sampled = start_daemons(lambda: Daemon(env="request_accounting"))
    tests = [test_exact_accounting_of_slow_spans, test_exact_accounting_with_both_cpus_busy,
             test_request_profile_holds_its_functions, test_unknown_and_bad_request_ids,
             test_sampled_accounting_without_the_kernel_pieces]
    run_tests(tests, [d, sampled], cleanup=lambda: shutil.rmtree(TMP, ignore_errors=True))


if __name__ == "__main__":
    main()
