#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Integration tests of p95 spikes with known injected ones: the pipeline workload with a
one-second burst of a slow compute path every 8 s (detected, periodic, its profile against the
baseline's), the same bursts as GC pauses (the top cause is GC), a level shift, Alertmanager
deliveries and marks, and a restart with --state-dir.

Usage: test_spikes.py BUILD_DIR. Outside CI, exits 77 (skip) when not root or BPF cannot load;
with CI=true that is a failure. TAILPROF_TEST=name runs the tests whose name contains it."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import daemon  # noqa: E402
import pipeline_log  # noqa: E402
from pprof_decode import Profile  # noqa: E402
from runner import require_bpf, run_tests  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
DAEMON = os.path.join(BUILD, "daemon", "tailprofd")
CLI = os.path.join(BUILD, "cli", "tailprof")
WL = os.path.join(BUILD, "tests", "workloads")
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures")
TMP = tempfile.mkdtemp(prefix="tp_spikes.")
SEC = 1_000_000_000


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def config(binary, name):
    path = os.path.join(TMP, name + ".conf")
    with open(path, "w") as f:
        f.write("".join("[stage %s]\nbinary = %s\nfunction = %s\n\n" % (s, binary, s)
                        for s in ("fetch", "compute", "serialize")))
    return path


def start(binary, name, *args):
    return daemon.Daemon(DAEMON, "--window", "1s", "--retention", "10m", "--config",
                         config(binary, name), *args)


def pipeline(binary, seconds, env):
    """Runs the pipeline for seconds with the spike mode env; returns its start (Unix ns)."""
    log = os.path.join(TMP, "pipeline.log")
    subprocess.run([binary, str(seconds), log], stdout=subprocess.DEVNULL, check=True,
                   env=dict(os.environ, **env), timeout=seconds + 60)
    with open(log) as f:
        first = f.readline().split()
    assert first[:2] == ["#", "start"], first
    return int(first[2])


def logged(stage):
    """The last pipeline run's requests of stage as it logged them: [(start Unix ns, ns around
    the call)] (pipeline_log.read)."""
    start, rows = pipeline_log.read(os.path.join(TMP, "pipeline.log"))
    return [(start + t, around) for t, s, _, around in rows if s == stage]


def p95(values):
    return pipeline_log.nearest_rank(values, 950)


def truly_slow(rows, s, quiet):
    """Whether the requests of rows that started in spike s's time had a p95 over 1.5 times
    the median p95 of the one-second slices of quiet ((lo, hi) pairs): the workload's own
    clock says that those windows were slow (in CI a busy host once made compute's 3 ms spin
    take 7 ms, p95, for two seconds)."""
    base = sorted(p95([d for t, d in rows if lo <= t < hi]) for lo, hi in quiet)
    got = p95([d for t, d in rows if s["start_unix_ns"] <= t < s["end_unix_ns"]])
    return bool(base) and got > 1.5 * base[len(base) // 2]


def spikes(d, query="last=10m"):
    return d.json("/api/v1/spikes?" + query)["spikes"]


def wait_closed(d, stage):
    """Waits (up to 5 s) until no spike of stage is open: the windows after the load closed."""
    for _ in range(50):
        if not any(s["open"] for s in spikes(d, "stage=" + stage)):
            return
        time.sleep(0.1)


def overlaps(s, lo, hi):
    return s["start_unix_ns"] < hi and s["end_unix_ns"] > lo


def leaf_share(p, name):
    total = p.total()
    return sum(s["values"][0] for s in p.samples
               if any(f["function"] == name for f in s["frames"][:3])) / max(total, 1)


def test_periodic_bursts_detected_and_pulled():
    state = os.path.join(TMP, "state")
    binary = os.path.join(WL, "tp_pipeline")
    d = start(binary, "bursts", "--state-dir", state, "--frequency", "499")
    try:
        t0 = pipeline(binary, 48, {"TP_BURST_EVERY": "8"})
        time.sleep(2.5)
        wait_closed(d, "compute")
        got = spikes(d, "stage=compute")
        bursts = [(t0 + (8 * k - 1) * SEC, t0 + 8 * k * SEC) for k in range(1, 7)]
        hit = [[s for s in got if overlaps(s, lo, hi)] for lo, hi in bursts]
        # every burst from the third on (the baseline needs 5 windows first)
        for k in range(2, 6):
            assert len(hit[k]) == 1, (k, bursts[k], [(s["id"], s["start"]) for s in got])
        window_count = (bursts[-1][1] - t0) // SEC
        # a spike outside the bursts is false unless the workload's own clock saw one
        rows = logged("compute")
        quiet = [(lo, lo + SEC) for lo in range(t0, bursts[-1][1], SEC)
                 if not any(b0 - SEC < lo < b1 for b0, b1 in bursts)]
        other = [s for s in got if not any(overlaps(s, lo, hi) for lo, hi in bursts)]
        false = [s for s in other if not truly_slow(rows, s, quiet)]
        if other:
            print("  %d spikes outside the bursts, %d of them slow by the workload's clock" %
                  (len(other), len(other) - len(false)))
        assert len(false) <= max(1, window_count // 30), false
        for k in range(2, 6):
            s = hit[k][0]
            assert s["kind"] == "spike" and s["source"] == "detected", s
            assert s["pattern"] == "periodic", s
            assert abs(s["period_ns"] - 8 * SEC) <= 0.8 * SEC, s
            # 3 ms of compute against 18 ms in the burst
            assert s["p95_ns"] > 2 * s["baseline_p95_ns"], s
            assert s["request_count"] >= 20, s
            assert s["pinned"], s
            assert truly_slow(rows, s, quiet), s  # the log's times agree with the windows'
        s = hit[5][0]
        m = d.metrics()
        assert m['tailprof_spikes_total{stage="compute",source="detected"}'] >= 4, m
        assert 0.002 < m['tailprof_stage_baseline_p95_seconds{stage="compute"}'] < 0.009, m
        assert m['tailprof_spike_active{stage="compute"}'] == 0, m
        # the spike's profile covers its windows; the baseline the same length of time
        status, h, body = d.get("/api/v1/profile?spike=%s&type=cpu" % s["id"])
        assert status == 200, body
        assert int(h["X-Tailprof-Windows"]) == s["windows"], (h, s)
        assert int(h["X-Tailprof-Start-Unix-Ns"]) == s["start_unix_ns"], (h, s)
        status, hb, base = d.get("/api/v1/profile?spike=%s&type=cpu&baseline=1" % s["id"])
        assert status == 200, base
        assert int(hb["X-Tailprof-Windows"]) == s["windows"], hb
        assert int(hb["X-Tailprof-End-Unix-Ns"]) <= s["start_unix_ns"], (hb, s)
        # shares within the stage's samples: other processes on the machine dilute the whole
        # profile's
        _, _, body = d.get("/api/v1/profile?spike=%s&type=cpu&stage=compute" % s["id"])
        _, _, base = d.get("/api/v1/profile?spike=%s&type=cpu&stage=compute&baseline=1" % s["id"])
        spike_share = leaf_share(Profile(body), "compute_burst_path")
        base_share = leaf_share(Profile(base), "compute_burst_path")
        assert spike_share >= 3 * base_share and spike_share > 0.1, (spike_share, base_share)
        # the CLI: list, pull with a baseline, and pprof's diff shows what grew
        out = run([CLI, "--server", d.url, "spikes", "--stage", "compute"])
        assert out.returncode == 0 and s["id"] in out.stdout, out
        sp, bp = os.path.join(TMP, "spike.pb.gz"), os.path.join(TMP, "base.pb.gz")
        out = run([CLI, "--server", d.url, "pull", "--spike", "latest", "--stage", "compute",
                   "-o", sp, "--baseline", bp])
        assert out.returncode == 0, out
        top = run(["go", "tool", "pprof", "-top", "-diff_base", bp, sp])
        assert top.returncode == 0, top
        grew = [ln for ln in top.stdout.splitlines() if ln.strip().endswith("compute_burst_path")]
        assert grew and not grew[0].split()[0].startswith("-"), top.stdout
        # the explanation: on-CPU (the burst spins) or what the accounting calls it, with
        # the requests listed
        # the four bursts' explanations, three of which must name the burst's spin: once in CI
        # a baseline's slow requests had as much CPU as the burst's (18.04 ms against 17.94),
        # in the minute when a 0.3 ms request of test_requests took 136 ms by its thread's CPU
        # clock (a stall of the VM counts as CPU time of whatever it stopped)
        explained = 0
        for k in range(2, 6):
            one = d.json("/api/v1/spikes/" + hit[k][0]["id"])
            assert one["id"] == hit[k][0]["id"] and one["requests"], one
            assert len(one["causes"]) == 4, one["causes"]
            assert one["evidence"]["spike_windows"], one["evidence"]
            for r in one["requests"]:
                assert r["cpu_ns"] + r["runq_ns"] + r["offcpu_ns"] == r["duration_ns"], r
            top = one["causes"][0]
            print("  burst %d: %s" % (k, "; ".join(c["summary"] for c in one["causes"][:2])))
            explained += top["kind"] == "cpu" and top["share"] > 0.3
        assert explained >= 3, explained
        out = run([CLI, "--server", d.url, "explain", s["id"]])
        assert out.returncode == 0 and "compute" in out.stdout, out
    finally:
        d.stop()
    # a restart: the spikes come back from the state directory, with their profiles
    files = sorted(os.listdir(os.path.join(state, "spikes")))
    assert len(files) >= 4, files
    with open(os.path.join(state, "spikes", files[0]), "r+b") as f:
        f.truncate(100)  # cut short: reported and skipped
    d = start(binary, "bursts", "--state-dir", state)
    try:
        back = spikes(d)
        ids = [x["id"] for x in back]
        assert s["id"] in ids and files[0].split(".")[0] not in ids, (ids, files)
        assert all(x["stored"] for x in back), back
        again = [x for x in back if x["id"] == s["id"]][0]
        assert again["p95_ns"] == s["p95_ns"] and again["pattern"] == "periodic", again
        status, h, body = d.get("/api/v1/profile?spike=%s&type=cpu" % s["id"])
        assert status == 200 and h.get("X-Tailprof-Stored") == "1", (status, h)
        path = os.path.join(TMP, "stored.pb.gz")
        with open(path, "wb") as f:
            f.write(body)
        top = run(["go", "tool", "pprof", "-top", path])
        assert top.returncode == 0 and "compute_burst_path" in top.stdout, top
        assert "corrupt" in d.output() or "truncated" in d.output(), d.output()
    finally:
        d.stop()


def test_gc_bursts_top_cause_gc():
    binary = os.path.join(WL, "tp_pipeline_gc")
    d = start(binary, "gc", "--frequency", "199")
    try:
        pipeline(binary, 26, {"TP_BURST_EVERY": "6"})
        time.sleep(2.5)
        wait_closed(d, "compute")
        got = [s for s in spikes(d, "stage=compute") if s["request_count"] >= 20]
        assert len(got) >= 2, got
        for s in got[-2:]:
            top = s["causes"][0]
            assert top["kind"] == "gc", s["causes"]
            assert top["pauses"] >= 1 and top["pause_total_ns"] >= 10_000_000, top
            assert top["pause_max_ns"] >= 14_000_000, top
    finally:
        d.stop()


def test_cpu_hogs_top_cause_runq():
    binary = os.path.join(WL, "tp_pipeline")
    d = start(binary, "hogs", "--frequency", "499")
    try:
        # spike modes without a burst of its own (no every-20th slow path): a shift never reached
        p = subprocess.Popen([binary, "30", os.path.join(TMP, "hogs.log")],
                             stdout=subprocess.DEVNULL, env=dict(os.environ, TP_SHIFT_AT="1000"))
        time.sleep(9)
        first_hogs = time.time_ns()
        for _ in range(3):  # three CPU hogs on two CPUs for 2 s, every 6 s
            hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(3)]
            time.sleep(2)
            for h in hogs:
                h.kill()
                h.wait()
            time.sleep(4)
        p.wait(timeout=60)
        time.sleep(2.5)
        # the first burst's spike: its baseline is the quiet time before the hogs (a later
        # one's may hold windows of the burst before it, as slow in the run queue). Which stage
        # the hogs slow past k (2) times its p95 depends on the scheduler: with long time slices
        # (CFS) compute's 3 ms spin waits behind a hog's slice; with EEVDF's short ones compute
        # reaches about 2.0 times only (6.1 ms against 3.0), while fetch's wake-up after its
        # 2 ms sleep waits in the run queue (5.3 ms against 2.1). Compute first when both.
        got = sorted((s for st in ("compute", "fetch") for s in spikes(d, "stage=" + st)
                      if s["request_count"] >= 20 and s["end_unix_ns"] > first_hogs),
                     key=lambda s: (s["start_unix_ns"], s["stage"] != "compute"))
        assert got, spikes(d)
        s = d.json("/api/v1/spikes/" + got[0]["id"])
        top = s["causes"][0]
        assert top["kind"] == "runq", s["causes"]
        # the CPUs that the requests ran on, from their samples: a spinning compute has them; a
        # sleeping fetch is hardly ever sampled (0: the neighbours come from every CPU)
        assert top["neighbour_cpus"] >= 1 or s["stage"] == "fetch", (s["stage"], top)
        # by program (neighbours are processes): the hogs together weigh most, beside
        # whatever else the machine runs
        by_name = {}
        for n in top["neighbours"]:
            by_name[n["process"]] = by_name.get(n["process"], 0) + n["share"]
        hogs = by_name.get("yes", 0)
        assert hogs > 0.3 and hogs == max(by_name.values()), top
        assert top["neighbours"][0]["policy"] in ("SCHED_OTHER", "unknown (exited)"), top
    finally:
        d.stop()


def test_level_shift_then_detection_goes_on():
    binary = os.path.join(WL, "tp_pipeline")
    d = start(binary, "shift", "--spike-baseline-windows", "10")
    try:
        t0 = pipeline(binary, 33, {"TP_SHIFT_AT": "12", "TP_BURST_EVERY": "30",
                                   "TP_BURST_LEN": "1.5"})
        time.sleep(2.5)
        got = spikes(d, "stage=compute")
        shifts = [s for s in got if s["kind"] == "level_shift"]
        assert len(shifts) == 1, got
        sh = shifts[0]
        assert not sh["open"] and sh["windows"] == 5, sh
        assert abs(sh["start_unix_ns"] - (t0 + 12 * SEC)) <= 2 * SEC, (sh, t0)
        assert 2_500_000 <= sh["baseline_p95_ns"] <= 4_500_000, sh
        assert 8_000_000 <= sh["level_after_ns"] <= 11_000_000, sh
        assert "and stayed" in sh["summary"], sh
        # the burst at 28.5-30 s against the new level (9 ms): a spike again
        later = [s for s in got if s["kind"] == "spike" and s["start_unix_ns"] > sh["end_unix_ns"]
                 and overlaps(s, t0 + 28 * SEC, t0 + 30 * SEC)]
        assert later, got
        assert 8_000_000 <= later[0]["baseline_p95_ns"] <= 11_000_000, later[0]
        m = d.metrics()
        assert 0.008 <= m['tailprof_stage_baseline_p95_seconds{stage="compute"}'] <= 0.011, m
    finally:
        d.stop()


def post(d, path, body, ctype="application/json"):
    req = urllib.request.Request(d.url + path, data=body, method="POST",
                                 headers={"Content-Type": ctype})
    try:
        r = urllib.request.urlopen(req, timeout=10)
        return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_alertmanager_and_marks():
    binary = os.path.join(WL, "tp_pipeline")
    d = start(binary, "alerts")
    try:
        time.sleep(6)
        with open(os.path.join(FIXTURES, "alertmanager_v4.json")) as f:
            payload = json.load(f)
        now = time.time()
        firing = [a for a in payload["alerts"] if a["status"] == "firing"][0]
        firing["startsAt"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now - 3)) + ".5Z"
        payload["alerts"] = [firing]
        body = json.dumps(payload).encode()
        assert post(d, "/api/v1/alertmanager", body)[0] == 200
        time.sleep(2.2)
        alerts = [s for s in spikes(d) if s["source"] == "alertmanager"]
        assert len(alerts) == 1 and alerts[0]["open"] and alerts[0]["pinned"], alerts
        a = alerts[0]
        # the windows from startsAt minus the lookback (2 windows) on
        start_at = int((now - 3) * SEC) // SEC * SEC
        assert abs(a["start_unix_ns"] - (start_at - 1_500_000_000)) <= 1_600_000_000, (a, now)
        assert post(d, "/api/v1/alertmanager", body)[0] == 200  # a repeat changes nothing
        status, err = post(d, "/api/v1/alertmanager", b'{"version": "4", "alerts": [{}]}')
        assert status == 400 and "alerts[0]" in err["error"], err
        time.sleep(1.2)
        assert len([s for s in spikes(d) if s["source"] == "alertmanager"]) == 1
        m = d.metrics()
        assert m['tailprof_spike_alerts_total{result="repeat"}'] == 1, m
        # resolved: the episode closes
        firing["status"] = "resolved"
        firing["endsAt"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))
        assert post(d, "/api/v1/alertmanager", json.dumps(payload).encode())[0] == 200
        time.sleep(3.2)
        a = [s for s in spikes(d) if s["source"] == "alertmanager"][0]
        assert not a["open"] and a["windows"] >= 3, a
        # the write endpoints take their fields in the body, not the query
        status, err = post(d, "/api/v1/marks?stage=compute", b"{}")
        assert status == 400 and "body" in err["error"], err
        # a mark from the CLI
        out = run([CLI, "--server", d.url, "mark", "--reason", "deploy 42"])
        assert out.returncode == 0, out
        mark_id = out.stdout.strip()
        time.sleep(3.2)
        marks = [s for s in spikes(d) if s["id"] == mark_id]
        assert marks and marks[0]["source"] == "mark" and marks[0]["reason"] == "deploy 42", \
            spikes(d)
        assert marks[0]["windows"] == 3 and not marks[0]["open"], marks
    finally:
        d.stop()


if __name__ == "__main__":
    require_bpf()
    try:
        run_tests([test_periodic_bursts_detected_and_pulled, test_gc_bursts_top_cause_gc,
                   test_cpu_hogs_top_cause_runq, test_level_shift_then_detection_goes_on,
                   test_alertmanager_and_marks], [])
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
