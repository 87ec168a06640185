#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Integration tests of tailprofd: real BPF as root, workloads with known answers.

Usage: test_daemon.py BUILD_DIR. Outside CI, exits 77 (skip) when not root or BPF cannot load;
with CI=true that is a failure."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from pprof_decode import Profile  # noqa: E402
import daemon  # noqa: E402
from runner import require_bpf, run_tests, start_daemons  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
DAEMON = os.path.join(BUILD, "daemon", "tailprofd")
CLI = os.path.join(BUILD, "cli", "tailprof")
WL = os.path.join(BUILD, "tests", "workloads")
FREQ = 997


class Daemon(daemon.Daemon):
    def __init__(self, *args, env=None):
        super().__init__(DAEMON, *args, env=env)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def start_workload(name, *args):
    p = subprocess.Popen([os.path.join(WL, name)] + [str(a) for a in args],
                         stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    return p, pid


def names(sample):
    return [f["function"] for f in sample["frames"]]


def wait_drained(d=None):
    """Waits until what ran before the call is queryable: at most 1 s after a sample was taken
    when the daemon keeps up; with d, also until d's newest window ends (its last drain) after
    the call, for a daemon slowed by other work on the machine."""
    since = time.time_ns()
    time.sleep(1.5)
    deadline = time.time() + 30
    while d and max(w["end_unix_ns"] for w in d.json("/api/v1/windows?last=1m")["windows"]) \
            < since:
        assert time.time() < deadline, "no drain in 30 s"
        time.sleep(0.2)


# ---- tests (each takes the shared daemon) ----

def test_hot_function_75_percent_with_call_chain(d):
    p, pid = start_workload("tp_hotcold", 4)
    p.wait()
    wait_drained()
    prof, _ = d.profile("pid=%d&last=2m" % pid)  # after the process exited
    hot = sum(s["values"][0] for s in prof.samples if "hot_function" in names(s))
    cold = sum(s["values"][0] for s in prof.samples if "cold_function" in names(s))
    assert hot + cold > 0.8 * FREQ * 4 * 0.8, ("too few samples", hot, cold)
    share = 100.0 * hot / (hot + cold)
    print("  hot_function share %.1f%% of %d samples" % (share, hot + cold))
    assert 70 <= share <= 80, share
    chained = 0
    for s in prof.samples:
        n = names(s)
        if "hot_function" in n:
            i = n.index("hot_function")
            if n[i + 1:i + 3] == ["run_rounds", "main"]:
                chained += s["values"][0]
    assert chained >= 0.95 * hot, ("call chain hot_function <- run_rounds <- main", chained, hot)
    # kernel frames come before user frames, never after
    for s in prof.samples:
        kinds = ["k" if f["mapping"] == "[kernel.kallsyms]" else "u" for f in s["frames"]
                 if f["mapping"]]
        assert "".join(kinds).find("uk") < 0, names(s)
    # the mapping of the workload carries its file name and build ID
    maps = [m for m in prof.mappings.values() if m["filename"].endswith("/tp_hotcold")]
    assert len(maps) == 1 and len(maps[0]["build_id"]) == 40 and maps[0]["has_functions"], maps


def test_short_lived_processes(d):
    pids = []
    for _ in range(5):
        p, pid = start_workload("tp_short", 0.2)
        p.wait()
        pids.append(pid)
    wait_drained()
    prof, _ = d.profile("last=2m")
    for pid in pids:
        mine = [s for s in prof.samples if s["labels"].get("pid") == str(pid)]
        total = sum(s["values"][0] for s in mine)
        named = sum(s["values"][0] for s in mine if "short_lived_spin" in names(s))
        print("  pid %d: %d samples, %d in short_lived_spin" % (pid, total, named))
        assert total >= 0.2 * FREQ * 0.5, (pid, total)
        assert named >= 0.9 * total, (pid, named, total)
        # a sample or two may come from the forked child before its exec (comm python3)
        assert all(s["labels"]["comm"] == "tp_short" for s in mine if "short_lived_spin" in names(s))


def test_forked_children_without_exec(d):
    """Children that live a few ms and never exec are named from their parent's maps, which
    are theirs until they exec: their own maps are never read (only a child still running its
    parent's image 300 ms on would be). A child young at its samples (its thread ran less than
    5 sampling periods) is not even made known; an older one is deferred."""
    reads = 'tailprof_maps_reads_total{source="file"}'
    m0 = d.metrics()
    p, pid = start_workload("tp_forker", 300, 2)
    out = p.communicate()[0]
    wait_drained(d)
    m1 = d.metrics()
    # The known answer is the CPU time the children spent in child_work, as they measured it.
    # The kernel's fork, exit and page faults around it cost what they cost on that kernel and
    # machine, so their share of all samples is no answer: 36-40% on Linux 6.18.44 in this VM
    # alone (43% by perf's count), over half while other tests load its 2 CPUs.
    expected = int(out.split("child_work_cpu_ns ")[1]) * FREQ / 1e9
    prof, _ = d.profile("comm=tp_forker&last=2m")
    total = prof.total()
    named = sum(s["values"][0] for s in prof.samples if "child_work" in names(s))
    lost = sum(s["values"][0] for s in prof.samples
               if "child_work" not in names(s) and any(f["function"] == "[unknown]" and
                                                       f["mapping"] is None for f in s["frames"]))
    children = len({s["labels"]["pid"] for s in prof.samples}) - 1
    deferred = m1["tailprof_forks_deferred_total"] - m0["tailprof_forks_deferred_total"]
    young = m1["tailprof_young_samples_total"] - m0["tailprof_young_samples_total"]
    print("  %d children: %d samples in child_work, %.0f from its CPU time (%d samples in all), "
          "%d with unresolved user frames; %d children named from their parent's maps, %d "
          "young samples, %d maps reads" % (children, named, expected, total, lost, deferred,
                                            young, m1[reads] - m0[reads]))
    assert children >= 200, children
    # each child either deferred, or sampled only while young (at least one sample each)
    assert deferred + young >= 0.9 * children, (deferred, young, children)
    # the parent's, and whatever else runs on the machine meanwhile: not one per child (11-13
    # here alone; 49 in a fresh-clone CI run, where 28 forks more than the test's were seen)
    assert m1[reads] - m0[reads] <= 0.25 * children, (m0[reads], m1[reads])
    # sampling on this VM's cpu-clock puts 0.94-1.05 of a CPU time's samples where it was spent,
    # and 1.11 was seen once (601 of 541) in a fresh-clone CI run: with some 540 samples the
    # count alone varies by 4% (one standard deviation)
    assert 0.85 * expected <= named <= 1.15 * expected, (named, expected)
    assert lost <= 0.05 * total, (lost, total)


def run_counted(d, name, n, seconds, keys):
    """Runs n workloads name for seconds each at once and waits until they are drained: their
    pids, and how much each metric of keys grew meanwhile."""
    m0 = d.metrics()
    procs = [start_workload(name, seconds) for _ in range(n)]
    for p, _ in procs:
        p.wait()
    wait_drained(d)
    m1 = d.metrics()
    return [pid for _, pid in procs], [m1.get(k, 0) - m0.get(k, 0) for k in keys]


def assert_hotcold_whole(d, pid, seconds):
    """The profile of a tp_hotcold that ran for seconds is whole: enough samples, hot_function
    75% of them (65-85), under run_rounds <- main."""
    prof, _ = d.profile("pid=%d&last=2m" % pid)
    hot = sum(s["values"][0] for s in prof.samples if "hot_function" in names(s))
    cold = sum(s["values"][0] for s in prof.samples if "cold_function" in names(s))
    chained = sum(s["values"][0] for s in prof.samples if "hot_function" in names(s) and
                  names(s)[names(s).index("hot_function") + 1:][:2] == ["run_rounds", "main"])
    assert hot + cold > 0.5 * FREQ * seconds * 0.5, ("too few samples", pid, hot, cold)
    assert 65 <= 100.0 * hot / (hot + cold) <= 85, (pid, hot, cold)
    assert chained >= 0.95 * hot, (pid, chained, hot)


def test_exec_rechecks_skipped_after_loader(d):
    """A process whose maps were read after it ran code that runs only after its dynamic
    loader's work (its executable's, a library's) has every library the loader maps at start in
    them: the look 300 ms after its exec (the symbolizer's,
    the unwinder's, Python's and GC discovery's) reads nothing again, GC discovery's look being
    made in the symbolizer's maps. Its profile is whole all the same: hot_function 75% of
    tp_hotcold's samples, under run_rounds <- main."""
    pids, (by_sample, by_set, skipped, reread, shared) = run_counted(
        d, "tp_hotcold", 4, 1.5, ['tailprof_processes_loaded_total{by="sample"}',
                                  'tailprof_processes_loaded_total{by="known_set"}',
                                  'tailprof_exec_rechecks_total{result="skipped"}',
                                  'tailprof_exec_rechecks_total{result="read"}',
                                  "tailprof_gc_later_looks_shared_total"])
    # maps read before such a sample that hold what an earlier tp_hotcold held once loaded are
    # loaded by that set (which of the two depends on when the first read came)
    loaded = by_sample + by_set
    print("  4 processes: %d loaded by a sample after their loader's work, %d by a known set, "
          "rechecks %d skipped and %d read, %d GC looks in the symbolizer's maps" % (
              by_sample, by_set, skipped, reread, shared))
    # other processes on the machine may add to each count, never take from it
    assert loaded >= 4 and skipped >= 4 and shared >= 4, (loaded, skipped, shared)
    for pid in pids:
        assert_hotcold_whole(d, pid, 1.5)


def test_static_layout_no_read(d):
    """A static executable's layout is recorded from the maps of its first process (all its code
    its executable's); the processes exec'd from it afterwards are given maps made from it at
    their exec, with no read of their own; the unwind tables of the first of those become the
    layout's, and BPF sets the next ones' tables at their exec, which then wake nobody. Their
    profiles are whole all the same: hot_function 75% of tp_hotcold_static's samples, under
    run_rounds <- main."""
    run_counted(d, "tp_hotcold_static", 1, 0.5, [])
    assert d.metrics().get("tailprof_static_layouts", 0) >= 1
    _, (tables,) = run_counted(d, "tp_hotcold_static", 1, 0.5,
                               ["tailprof_unwind_layout_tables_total"])
    pids, (made, missing, at_exec, reads) = run_counted(
        d, "tp_hotcold_static", 3, 1.5,
        ['tailprof_processes_from_layout_total{result="made"}',
         'tailprof_processes_from_layout_total{result="missing"}',
         "tailprof_processes_tables_at_exec_total",
         'tailprof_maps_reads_total{source="file"}'])
    print("  the second process gave the layout its tables (%d); 3 processes after it: %d made "
          "from the layout, %d missing, %d with their tables set at exec; %d maps files read "
          "meanwhile (by any process)" % (tables, made, missing, at_exec, reads))
    assert tables >= 1, tables
    assert made >= 3 and missing == 0, (made, missing)
    assert at_exec >= 3, at_exec
    for pid in pids:
        assert_hotcold_whole(d, pid, 1.5)


def test_exec_keeps_pid_each_half_named(d):
    p, pid = start_workload("tp_exec_a", 1, os.path.join(WL, "tp_exec_b"), 1)
    p.wait()
    wait_drained()
    prof, _ = d.profile("pid=%d&last=2m" % pid)
    before = [s for s in prof.samples if "before_exec_spin" in names(s)]
    after = [s for s in prof.samples if "after_exec_spin" in names(s)]
    nb, na = sum(s["values"][0] for s in before), sum(s["values"][0] for s in after)
    print("  before exec %d samples, after exec %d" % (nb, na))
    assert nb >= 0.5 * FREQ and na >= 0.5 * FREQ, (nb, na)
    assert all(s["labels"]["comm"] == "tp_exec_a" for s in before)
    assert all(s["labels"]["comm"] == "tp_exec_b" for s in after)
    for s in after:
        assert not any(f["mapping"] and f["mapping"].endswith("/tp_exec_a") for f in s["frames"])
    for s in before:
        assert not any(f["mapping"] and f["mapping"].endswith("/tp_exec_b") for f in s["frames"])


def test_syscall_heavy_kernel_names(d):
    p, pid = start_workload("tp_syscalls", 2)
    p.wait()
    wait_drained()
    prof, _ = d.profile("pid=%d&last=2m" % pid)
    total = prof.total()
    kernel = 0
    for s in prof.samples:
        n = names(s)
        if "do_syscall_64" in n and "syscall_loop" in n:
            assert n.index("do_syscall_64") < n.index("syscall_loop"), n
            kernel += s["values"][0]
    kfuncs = {f["function"] for s in prof.samples for f in s["frames"]
              if f["mapping"] == "[kernel.kallsyms]"}
    print("  %d of %d samples in syscalls; kernel functions include %s" %
          (kernel, total, sorted(kfuncs & {"read_zero", "vfs_read", "ksys_read",
                                           "do_syscall_64"})))
    assert kernel >= 0.5 * total, (kernel, total)
    assert {"read_zero", "vfs_read", "do_syscall_64"} <= kfuncs, kfuncs


def test_go_tool_pprof_debug_endpoint(d):
    p, pid = start_workload("tp_hotcold", 4)
    env = dict(os.environ, HOME=tempfile.mkdtemp(), PPROF_TMPDIR=tempfile.mkdtemp())
    t0 = time.time()
    r = run(["go", "tool", "pprof", "-raw", "-symbolize=none",
             d.url + "/debug/pprof/profile?seconds=2"], env=env, timeout=60)
    elapsed = time.time() - t0
    p.wait()
    assert r.returncode == 0, r.stderr
    assert "hot_function" in r.stdout, r.stdout[:2000]
    assert 2 <= elapsed < 6, elapsed
    # exactly that interval: about 2 s of the workload's samples, not a whole window's worth
    status, headers, body = d.get("/debug/pprof/profile?seconds=1")
    assert status == 200
    prof = Profile(body)
    assert 0.9e9 <= prof.duration_nanos <= 1.6e9, prof.duration_nanos
    cpus = os.cpu_count()
    assert prof.total() <= FREQ * cpus * 1.6, prof.total()


def test_go_tool_pprof_accepts_stored_profile(d):
    p, pid = start_workload("tp_hotcold", 2)
    p.wait()
    wait_drained()
    status, headers, body = d.get("/api/v1/profile?last=1m")
    assert status == 200
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "cpu.pb.gz")
    with open(path, "wb") as f:
        f.write(body)
    env = dict(os.environ, HOME=tmp, PPROF_TMPDIR=tmp)
    # the profile is every process's: -top keeps every node, however busy the rest of the
    # machine (by default it drops those under 0.5%)
    for flag in ("-raw", "-top", "-traces"):
        extra = ["-nodefraction=0"] if flag == "-top" else []
        r = run(["go", "tool", "pprof", flag, "-symbolize=none"] + extra + [path], env=env,
                timeout=60)
        assert r.returncode == 0, (flag, r.stderr)
        assert "hot_function" in r.stdout, (flag, r.stdout[:1000])
        assert "unsymbolizable" not in r.stderr.lower() and "warning" not in r.stderr.lower(), \
            r.stderr
    r = run(["go", "tool", "pprof", "-proto", "-symbolize=none", "-output",
             os.path.join(tmp, "rt.pb.gz"), path], env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(tmp, "rt.pb.gz"), "rb") as f:
        rt = Profile(f.read())
    orig = Profile(body)
    assert rt.total() == orig.total() and rt.total(1) == orig.total(1)
    assert orig.total() == int(headers["X-Tailprof-Samples"])
    assert orig.sample_types == [("samples", "count"), ("cpu", "nanoseconds")]
    assert orig.period_type == ("cpu", "nanoseconds") and orig.period == 10**9 // FREQ
    assert orig.strings[0] == "" and len(set(orig.strings)) == len(orig.strings)
    for s in orig.samples:
        assert len(s["values"]) == 2 and any(s["values"])
        assert s["values"][1] == s["values"][0] * orig.period
        assert {"pid", "tid", "comm", "thread"} <= set(s["labels"])
        assert s["labels"]["pid"] != "0" and s["labels"]["comm"] != "swapper/0"
    joined = "\n".join(orig.comments)
    for key in ("host:", "kernel:", "tailprofd:", "%d Hz" % FREQ, "windows:"):
        assert key in joined, (key, joined)


def test_totals_equal_window_counters(d):
    # Keep every CPU busy: on an idle CPU the kernel defers the cpu-clock timer (perf sees the
    # same), so only busy CPUs must deliver frequency x time samples.
    # The windows asked for lie wholly inside the time the spinners run (an idle tail would
    # defer the timer), and closed at least a second ago: they no longer change.
    spinners = [start_workload("tp_hotcold", 7)[0] for _ in range(os.cpu_count())]
    time.sleep(6)
    now = time.time()
    frm, to = int(now) - 5, int(now) - 2
    w = d.json("/api/v1/windows?from=%d&to=%d" % (frm, to))["windows"]
    prof, headers = d.profile("from=%d&to=%d" % (frm, to))
    for p in spinners:
        p.wait()
    assert w and not any(x["current"] for x in w)
    assert prof.total() == sum(x["samples"] for x in w), (prof.total(), sum(x["samples"] for x in w))
    assert int(headers["X-Tailprof-Windows"]) == len(w)
    # every CPU: samples received match the frequency; drops are reported, not hidden
    closed = w[1:]  # the first window may have started before the daemon
    exp = sum(c["expected_samples"] for x in closed for c in x["cpus"])
    got = sum(c["received_samples"] for x in closed for c in x["cpus"])
    print("  %d windows: received %d of %d expected samples" % (len(closed), got, exp))
    assert abs(got - exp) <= 0.03 * exp + 5, (got, exp)
    for x in closed:
        assert x["received_samples"] == sum(c["received_samples"] for c in x["cpus"])
        # BPF counts and stacks are both placed by the sample's timestamp: they agree exactly
        assert x["samples"] + x["idle_samples"] + x["drops"]["ringbuf_full"] == \
            x["received_samples"], x
        assert "total" in x["drops"] and "ringbuf_full" in x["drops"]
        assert x["processes"] >= 1 and x["distinct_stacks"] >= 1


def test_self_samples_labelled(d):
    # make the daemon itself busy: encode profiles back to back
    for _ in range(30):
        d.get("/api/v1/profile?last=10m")
    wait_drained()
    prof, _ = d.profile("last=1m")
    mine = [s for s in prof.samples if s["labels"]["pid"] == str(d.proc.pid)]
    others = [s for s in prof.samples if s["labels"]["pid"] != str(d.proc.pid)]
    print("  %d samples of tailprofd itself" % sum(s["values"][0] for s in mine))
    assert mine, "no samples of tailprofd while it encoded 30 profiles"
    assert all(s["labels"].get("tailprofd") == "self" for s in mine)
    assert not any("tailprofd" in s["labels"] for s in others)


def test_http_errors_and_metrics(d):
    for path, param in (("/api/v1/profile?last=abc", "last"), ("/api/v1/profile?pid=x", "pid"),
                        ("/api/v1/profile?type=heap", "type"), ("/api/v1/profile?bogus=1", "bogus"),
                        ("/api/v1/windows?from=yesterday", "from"),
                        ("/api/v1/profile?last=5m&from=1", "last"),
                        ("/api/v1/profile?last", "last"), ("/api/v1/profile?pid=1&pid=2", "pid"),
                        ("/api/v1/windows?last=%FF", "last"),
                        ("/api/v1/profile?type=cpu%00x", "type"),
                        ("/api/v1/profile?from=9999-12-31T23:59:59Z", "from"),
                        ("/api/v1/profile?comm=a_name_of_20_chars__", "comm"),
                        ("/debug/pprof/profile?seconds=1&bogus=1", "bogus"),
                        ("/debug/pprof/profile?seconds=0", "seconds")):
        status, headers, body = d.get(path)
        assert status == 400, (path, status)
        assert json.loads(body)["error"].startswith(param + ":"), (path, body)
    status, _, body = d.get("/nope")
    assert status == 404 and "error" in json.loads(body)
    status, _, body = d.get("/metrics")
    text = body.decode()
    for name in ("tailprof_samples_total", "tailprof_expected_samples_total{cpu=\"0\"}",
                 "tailprof_received_samples_total{cpu=\"0\"}",
                 "tailprof_drops_total{reason=\"ringbuf_full\"}", "tailprof_windows ",
                 "tailprof_resident_memory_bytes", "tailprof_bpf_run_time_seconds_total{program=\"perf_sample\"}"):
        assert name in text, name
    run_time = [float(l.split()[-1]) for l in text.splitlines()
                if l.startswith("tailprof_bpf_run_time_seconds_total{program=\"perf_sample\"}")]
    assert run_time and run_time[0] > 0, "BPF stats not enabled"
    st = d.json("/api/v1/status")
    assert st["healthy"] and st["frequency_hz"] == FREQ and st["cpus_online"] == os.cpu_count()


def test_concurrent_requests(d):
    # a long /debug/pprof/profile must not block other requests, and a client that hangs up
    # frees its request at once
    import threading
    hung = [subprocess.Popen(["curl", "-s", "-m", "1", "-o", "/dev/null",
                              d.url + "/debug/pprof/profile?seconds=3600"]) for _ in range(20)]
    for c in hung:
        c.wait()
    time.sleep(1)
    threads = len(os.listdir("/proc/%d/task" % d.proc.pid))
    assert threads < 8, "%d threads: requests of clients that hung up still wait" % threads
    res = {}
    t = threading.Thread(target=lambda: res.setdefault("p", d.get("/debug/pprof/profile?seconds=3")))
    t.start()
    time.sleep(0.3)
    t0 = time.time()
    status, _, _ = d.get("/api/v1/status")
    assert status == 200 and time.time() - t0 < 1, time.time() - t0
    t.join()
    assert res["p"][0] == 200


def test_cpu_hotplug(d):
    """A CPU taken offline stops counting expected samples; when it comes back it is sampled
    again (this VM kind supports CPU hotplug as root)."""
    if os.cpu_count() < 2:
        print("  single CPU: nothing to take offline")
        return
    online = "/sys/devices/system/cpu/cpu1/online"
    with open(online, "w") as f:
        f.write("0")
    try:
        time.sleep(2.2)
    finally:
        with open(online, "w") as f:
            f.write("1")
    time.sleep(1.2)  # the next drain attaches to it
    p = subprocess.Popen(["taskset", "-c", "1", os.path.join(WL, "tp_hotcold"), "3"],
                         stdout=subprocess.DEVNULL)
    p.wait()
    wait_drained()
    w = d.json("/api/v1/windows?last=9s")["windows"]
    cpu1 = [next((c for c in x["cpus"] if c["cpu"] == 1), None) for x in w]
    offline = [x for x, c in zip(w, cpu1) if c is None or c["expected_samples"] == 0]
    busy = [c for c in cpu1 if c and c["expected_samples"] >= FREQ * 0.95 and
            c["received_samples"] >= FREQ * 0.95]
    print("  cpu 1 absent from %d windows, fully sampled again in %d" % (len(offline), len(busy)))
    assert offline, [x["cpus"] for x in w]
    assert len(busy) >= 2, [x["cpus"] for x in w]
    assert "cpu 1 came online" in d.output(), d.output()


def test_cli_against_daemon(d):
    r = run([CLI, "--server", d.url, "status"])
    assert r.returncode == 0 and "tailprofd" in r.stdout, r
    r = run([CLI, "windows", "--last", "30s", "--server", d.url, "--json"])
    assert r.returncode == 0 and json.loads(r.stdout)["windows"], r
    out = os.path.join(tempfile.mkdtemp(), "cpu.pb.gz")
    r = run([CLI, "--server", d.url, "pull", "--last", "1m", "-o", out])
    assert r.returncode == 0, r
    with open(out, "rb") as f:
        prof = Profile(f.read())
    assert ("%d samples" % prof.total()) in r.stderr + r.stdout, (r.stderr, prof.total())


# ---- start-up failures (own daemons) ----

def make_cgroup(name):
    """A cgroup named name in the hierarchy /proc/PID/cgroup reports first for us: cgroup v2
    (/sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid layouts), else v1's name=systemd.
    Returns its directory."""
    for base in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd"):
        if base != "/sys/fs/cgroup/systemd" and \
                not os.path.exists(os.path.join(base, "cgroup.controllers")):
            continue
        if base == "/sys/fs/cgroup/systemd" and not os.path.isdir(base):
            continue
        path = os.path.join(base, name)
        os.makedirs(path, exist_ok=True)
        return path
    raise AssertionError("no cgroup v2 nor name=systemd hierarchy mounted")


def test_container_labels_and_filter(d):
    """A process in a cgroup named as Docker names a container's gets the cgroup path and the
    container ID as labels, container= keeps its samples alone, and the windows list it."""
    cid = "%064x" % int.from_bytes(os.urandom(32), "big")
    cg = make_cgroup("docker-%s.scope" % cid)
    try:
        wrapper = "echo $$ > %s/cgroup.procs && exec %s 3" % (cg, os.path.join(WL, "tp_hotcold"))
        p = subprocess.Popen(["sh", "-c", wrapper], stdout=subprocess.PIPE, text=True)
        pid = int(p.stdout.readline())
        other, opid = start_workload("tp_hotcold", 3)
        ru = os.wait4(p.pid, 0)[2]
        p.returncode = 0
        other.wait()
        # the known answer: the samples its own CPU time stands for
        expected = (ru.ru_utime + ru.ru_stime) * FREQ
        wait_drained(d)
        prof, _ = d.profile("last=2m&container=%s" % cid[:12])
        pids = {s["labels"]["pid"] for s in prof.samples}
        total = prof.total()
        print("  %d samples with container=%s... (%.0f from its CPU time), pids %s" % (
            total, cid[:12], expected, sorted(pids)))
        assert pids == {str(pid)}, (pids, pid, opid)
        assert 0.85 * expected <= total <= 1.1 * expected, (total, expected)
        for s in prof.samples:
            assert s["labels"]["container_id"] == cid, s["labels"]
            assert s["labels"]["cgroup"].endswith("/docker-%s.scope" % cid), s["labels"]
        # the other process is in no such cgroup: no container label
        prof, _ = d.profile("last=2m&pid=%d" % opid)
        assert prof.total() > 0 and all("container_id" not in s["labels"] for s in prof.samples)
        ws = d.json("/api/v1/windows?last=2m")["windows"]
        seen = sum(c["samples"] for w in ws for c in w["containers"]
                   if c.get("container_id") == cid)
        assert seen == total, (seen, total)
        # a bad container= is refused, naming the fix
        status, _, body = d.get("/api/v1/profile?last=1m&container=xyz")
        assert status == 400 and b"at least their first 12" in body, (status, body)
        # the CLI passes --container through
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "c.pb.gz")
            r = run([CLI, "--server", d.url, "pull", "--last", "2m",
                     "--container", cid, "-o", out])
            assert r.returncode == 0, r.stderr
            with open(out, "rb") as f:
                assert Profile(f.read()).total() == total
    finally:
        os.rmdir(cg)


def test_startup_errors():
    r = run([DAEMON, "--frequency", "0"])
    assert r.returncode == 2 and "1 to 10000" in r.stderr, r
    r = run([DAEMON, "--window", "5x"])
    assert r.returncode == 2 and "--window" in r.stderr, r
    r = run([DAEMON, "--listen", "127.0.0.1:99999"])
    assert r.returncode == 2 and "1 to 65535" in r.stderr, r
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run([DAEMON, "--listen", "127.0.0.1:%d" % port], timeout=20)
        assert r.returncode == 1 and "in use" in r.stderr, r
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", DAEMON], timeout=20)
    assert r.returncode == 1 and "root" in r.stderr, r


def bpf_prog_ids(pid):
    """IDs of the BPF programs whose file descriptors process pid holds."""
    ids = set()
    fdinfo = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def test_sigterm_detaches(d):
    ids = bpf_prog_ids(d.proc.pid)
    assert len(ids) >= 3, ids  # perf_sample, sched_process_exec, sched_process_exit
    rc = d.stop()
    assert rc == 0, d.output()
    time.sleep(0.5)  # the kernel frees programs once their last reference goes
    left = [i for i in ids if run(["bpftool", "prog", "show", "id", str(i)]).returncode == 0]
    assert not left, "BPF programs %s still loaded after tailprofd exited" % left


def main():
    require_bpf()
    d = start_daemons(lambda: Daemon("--frequency", str(FREQ), "--window", "1s",
                                           "--retention", "10m"))
    tests = [test_hot_function_75_percent_with_call_chain, test_short_lived_processes,
             test_forked_children_without_exec, test_exec_rechecks_skipped_after_loader,
             test_static_layout_no_read,
             test_exec_keeps_pid_each_half_named, test_syscall_heavy_kernel_names,
             test_go_tool_pprof_debug_endpoint, test_go_tool_pprof_accepts_stored_profile,
             test_totals_equal_window_counters, test_self_samples_labelled,
             test_http_errors_and_metrics, test_concurrent_requests, test_cpu_hotplug,
             test_cli_against_daemon, test_container_labels_and_filter]
    run_tests(tests + [test_sigterm_detaches, test_startup_errors], [d])


if __name__ == "__main__":
    main()
