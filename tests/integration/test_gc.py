#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Integration tests of GC pauses: real runtimes (CPython 3.11 with USDT probes and without,
OpenJDK 17, Go), each checked against its own account of its collections (gc.callbacks,
-Xlog:gc, GODEBUG=gctrace=1), and a stand-in whose collector nests calls.

Usage: test_gc.py BUILD_DIR. Outside CI, exits 77 (skip) when not root, BPF cannot load, or a
runtime is missing; with CI=true that is a failure."""
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import daemon  # noqa: E402
from daemon import wait_for  # noqa: E402
from runner import require_bpf, run_tests, skip, start_daemons  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "gc")
DAEMON = os.path.join(BUILD, "daemon", "tailprofd")
CLI = os.path.join(BUILD, "cli", "tailprof")
WL = os.path.join(BUILD, "tests", "workloads")
FIXTURES = os.path.join(BUILD, "tests", "fixtures")
PYTHON = "/usr/bin/python3.11"
# a CPython 3.11 without USDT probes (pyenv's build, --enable-shared): probed by uprobes on
# gc_collect_main in its libpython's .symtab
PYENV_PYTHON = os.environ.get("TAILPROF_TEST_PYENV_PYTHON",
                              "/root/.pyenv/versions/3.11.7/bin/python3.11")
JDK = "/usr/lib/jvm/java-17-openjdk-amd64"
TMP = tempfile.mkdtemp(prefix="tailprof_gc_")


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def gc_objects(d):
    return d.json("/api/v1/status")["gc"]["objects"]


def gc_object(d, path):
    for o in gc_objects(d):
        if o["path"] == path:
            return o
    return None


def wait_attached(d, path, processes=1):
    return wait_for("%s attached" % path,
                    lambda: (lambda o: o if o and o["state"] == "attached" and
                             o["processes"] >= processes else None)(gc_object(d, path)))


def events(d, pid, query="last=5m"):
    return d.json("/api/v1/gc?%s&pid=%d" % (query, pid))["events"]


def wait_drained():
    time.sleep(1.5)  # events are in the windows at the next drain (<= 500 ms), plus margin


def copy_python(name):
    """A copy of python3.11 (its own inode: an object no other process maps)."""
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "python3.11")
    shutil.copy2(PYTHON, path)
    return path


PY_SCRIPT = r"""
import gc, json, sys, time
print(__import__("os").getpid(), flush=True)
sys.stdin.readline()
counts = {}
counting = False
def hook(phase, info):
    if counting and phase == "start":
        counts[info["generation"]] = counts.get(info["generation"], 0) + 1
gc.callbacks.append(hook)
time.sleep(0.2)
mark1 = time.time_ns()
counting = True
for i in range(50):
    gc.collect(i % 3)
class Node:
    pass
junk = []
for i in range(60000):          # allocation-driven collections of generations 0 and 1 (and 2)
    a, b = Node(), Node()
    a.other, b.other = b, a     # a cycle: only the collector frees it
    junk.append(a)
    if len(junk) > 500:
        junk = []
counting = False
mark2 = time.time_ns()
time.sleep(0.2)
print(json.dumps({"mark1": mark1, "mark2": mark2, "counts": counts}), flush=True)
if len(sys.argv) > 1:            # then spend about a second in the collector (gc=1 samples)
    keep = [[Node() for _ in range(10)] for _ in range(30000)]
    t0 = time.time()
    n = 0
    while time.time() - t0 < float(sys.argv[1]):
        gc.collect()
        n += 1
    print(n, flush=True)
"""


# ---- tests ----

def test_python_matches_gc_callbacks(d):
    """A CPython started after the daemon: between two marks, its events per generation equal
    what gc.callbacks saw; samples taken in gc.collect() carry gc=1."""
    py = copy_python("py_callbacks")
    script = os.path.join(TMP, "gc_callbacks.py")
    with open(script, "w") as f:
        f.write(PY_SCRIPT)
    p = subprocess.Popen([py, script, "1.0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    pid = int(p.stdout.readline())
    o = wait_attached(d, py)
    assert o["runtime"] == "python" and o["probes"] == 2 and o["method"] == "usdt", o
    p.stdin.write("go\n")
    p.stdin.flush()
    account = json.loads(p.stdout.readline())
    rounds = int(p.stdout.readline())
    p.wait()
    wait_drained()
    evs = events(d, pid)
    assert all(e["runtime"] == "python" and e["kind"] == "pause" for e in evs), evs[:3]
    between = collections.Counter(e["generation"] for e in evs
                                  if account["mark1"] <= e["start_unix_ns"] <= account["mark2"])
    want = {int(k): v for k, v in account["counts"].items()}
    print("  callbacks %s, daemon %s (%d events in all, start-up ones included)"
          % (dict(sorted(want.items())), dict(sorted(between.items())), len(evs)))
    assert sum(want.values()) > 50, want  # the 50 gc.collect() and allocation-driven ones
    assert want.get(0, 0) > 17, want  # allocation-driven generation-0 collections happened
    if dict(between) != want:
        # tell lost events from a wall-clock step (events shifted across a mark): the probes'
        # counters, and the events nearest each mark, in ms from it
        bpf = {k: v for k, v in d.metrics().items()
               if k.startswith(("tailprof_gc_bpf_total", "tailprof_gc_late_total"))}
        for m in ("mark1", "mark2"):
            near = sorted(evs, key=lambda e: abs(e["start_unix_ns"] - account[m]))[:8]
            print("  near %s: %s" % (m, sorted(
                ("%+.3f ms" % ((e["start_unix_ns"] - account[m]) / 1e6), e["generation"])
                for e in near)))
        print("  GC counters: %s" % bpf)
    assert dict(between) == want, (dict(between), want)
    # the collector's own run: samples labelled gc=1
    prof, _ = d.profile("pid=%d&last=5m" % pid)
    in_gc = sum(s["values"][0] for s in prof.samples if s["labels"].get("gc") == "1")
    total = sum(s["values"][0] for s in prof.samples)
    print("  %d of %d samples labelled gc=1 (%d full collections)" % (in_gc, total, rounds))
    assert in_gc > 0.5 * total, (in_gc, total)
    # the process exited: its object detaches
    o = wait_for("detach", lambda: (lambda o: o if o["state"] == "detached" else None)(
        gc_object(d, py)), timeout=5)
    assert o["processes"] == 0 and o["probes"] == 0, o


PYENV_SCRIPT = r"""
import gc, json, sys, time
print(__import__("os").getpid(), flush=True)
sys.stdin.readline()
gc.disable()                    # no allocation-driven collections: only the ones made here
pauses, began = [], [0]
def hook(phase, info):
    if phase == "start":
        began[0] = time.perf_counter_ns()
    else:
        pauses.append({"generation": info["generation"],
                       "ns": time.perf_counter_ns() - began[0],
                       "collected": info["collected"], "uncollectable": info["uncollectable"]})
class Node:
    pass
keep = [[Node() for _ in range(10)] for _ in range(5000)]   # long-lived: older generations scan more
time.sleep(0.2)
mark1 = time.time_ns()
gc.callbacks.append(hook)
for i in range(int(sys.argv[1])):
    junk = []
    for k in range(20000 + 4000 * (i % 5)):   # cycles only the collector frees: 5 ms pauses or more
        a, b = Node(), Node()
        a.other, b.other = b, a
        junk.append(a)
    del junk
    gc.collect(i % 3)
gc.callbacks.remove(hook)
mark2 = time.time_ns()
time.sleep(0.2)
print(json.dumps({"mark1": mark1, "mark2": mark2, "pauses": pauses}), flush=True)
t0 = time.time()                # then about a second in the collector (gc=1 samples)
while time.time() - t0 < 1.0:
    gc.collect()
"""


def test_pyenv_matches_gc_callbacks(d):
    """A CPython 3.11 without USDT probes (pyenv's, shared libpython): its libpython is probed by
    uprobes on gc_collect_main, and the status says so. Between two marks, every pause its
    gc.callbacks saw is one event, in order: the same generation, collected + uncollectable,
    the duration within 10%; samples taken in gc.collect() carry gc=1."""
    libpython = os.path.realpath(os.path.join(os.path.dirname(PYENV_PYTHON), "..", "lib",
                                              "libpython3.11.so.1.0"))
    script = os.path.join(TMP, "pyenv_callbacks.py")
    with open(script, "w") as f:
        f.write(PYENV_SCRIPT)
    rounds = 60
    # real-time priority: other work on the machine must not preempt it between a callback and
    # the collector (seen: 8 ms more in the callbacks' account than in the collector's own run)
    p = subprocess.Popen(["chrt", "--fifo", "1", PYENV_PYTHON, script, str(rounds)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    o = wait_attached(d, libpython)
    assert o["runtime"] == "python" and o["method"] == "uprobe" and o["probes"] == 2, o
    assert o["version"] == "3.11" and "reason" not in o, o
    r = run([CLI, "--server", d.url, "status"], timeout=30)
    line = [ln for ln in r.stdout.splitlines() if ln.rstrip().endswith(libpython)]
    assert r.returncode == 0 and line and line[0].split()[:3] == [
        "python", "attached", "uprobe"], r.stdout
    p.stdin.write("go\n")
    p.stdin.flush()
    account = json.loads(p.stdout.readline())
    p.wait()
    wait_drained()
    evs = sorted(events(d, pid), key=lambda e: e["start_unix_ns"])
    assert all(e["runtime"] == "python" and e["kind"] == "pause" for e in evs), evs[:3]
    between = [e for e in evs if account["mark1"] <= e["start_unix_ns"] <= account["mark2"]]
    want = account["pauses"]
    assert len(want) == rounds, len(want)
    assert len(between) == len(want), (len(between), len(want))
    diffs = []
    for e, w in zip(between, want):
        assert e["generation"] == w["generation"], (e, w)
        assert e["collected"] == w["collected"] + w["uncollectable"], (e, w)
        diffs.append((e["duration_ns"] - w["ns"]) / w["ns"])
        assert abs(diffs[-1]) <= 0.1, (e["duration_ns"], w["ns"])
    diffs.sort()
    print("  %d of %d gc.callbacks pauses matched (generations %s), %.2f-%.2f ms; daemon/"
          "callbacks duration %+.2f%% median, %+.2f%% to %+.2f%%" % (
              len(between), len(want), dict(collections.Counter(w["generation"] for w in want)),
              min(w["ns"] for w in want) / 1e6, max(w["ns"] for w in want) / 1e6,
              100 * diffs[len(diffs) // 2], 100 * diffs[0], 100 * diffs[-1]))
    m = d.metrics()
    assert m['tailprof_gc_bpf_run_count_total{program="python_gc_entry"}'] >= rounds, m
    assert m['tailprof_gc_bpf_run_count_total{program="python_gc_return"}'] >= rounds, m
    prof, _ = d.profile("pid=%d&last=5m" % pid)
    in_gc = sum(s["values"][0] for s in prof.samples if s["labels"].get("gc") == "1")
    total = sum(s["values"][0] for s in prof.samples)
    print("  %d of %d samples labelled gc=1" % (in_gc, total))
    assert in_gc > 0.5 * total, (in_gc, total)


def test_uprobe_nested_calls_pair(d):
    """The stand-in without USDT probes, named as a CPython 3.11: every call of its collector
    from the first one seen on is one event with its generation and return value, nested calls
    (one in four) paired with their own returns; each duration between the body's own time and
    its caller's (the same clock), and (all but one in 20, for stalls of the VM) within 10% of
    the caller's."""
    exe = os.path.join(TMP, "pyup", "python3.11")
    os.makedirs(os.path.dirname(exe), exist_ok=True)
    shutil.copy2(os.path.join(WL, "tp_gc_standin_uprobe"), exe)
    p = subprocess.Popen(["chrt", "--fifo", "1", exe, "3"], stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    o = wait_attached(d, exe)
    assert o["method"] == "uprobe" and o["probes"] == 2, o
    out, _ = p.communicate(timeout=30)
    wait_drained()
    made = [tuple(map(int, ln.split())) for ln in out.splitlines() if ln.strip()]
    evs = sorted(events(d, pid), key=lambda e: e["start_unix_ns"])
    assert evs, "no event of %d calls" % len(made)
    # each call returns its own number: the first event says where the daemon came in
    first = [i for i, m in enumerate(made) if m[3] == evs[0]["collected"]]
    assert first, (evs[0], made[:5])
    since = made[first[0]:]
    assert len(evs) == len(since), (len(evs), len(since))
    diffs, far = [], []
    for e, (start, ns, gen, ret, depth, body) in zip(evs, since):
        assert (e["generation"], e["collected"]) == (gen, ret), (e, gen, ret)
        assert body <= e["duration_ns"] <= ns, (e, body, ns)
        diffs.append(abs(e["duration_ns"] - ns) / ns)
        if diffs[-1] > 0.1:
            far.append((e["collected"], e["duration_ns"], ns, body))
    diffs.sort()
    nested = sum(1 for m in since if m[4])
    print("  %d of %d calls (attached after %d), %d nested; duration difference median %.2f%%, "
          "worst %.1f%%; beyond 10%% (collected, probes ns, caller ns, body ns): %s"
          % (len(evs), len(made), len(made) - len(since), nested, 100 * diffs[len(diffs) // 2],
             100 * diffs[-1], far))
    # The caller's clock also counts a stall of the VM between its clock read and the probe
    # (this host reports no steal: CI saw 6.06 ms by the probes, 9.21 ms by the caller, a body
    # of 6 ms). Pairing is proven by body <= probes <= caller for every call; the probes' cost
    # by the median, and by nearly every call within 10%.
    assert diffs[len(diffs) // 2] <= 0.02, diffs
    assert len(far) <= len(diffs) // 20, far
    assert nested >= 3, since
    m = d.metrics()
    assert m['tailprof_gc_bpf_total{counter="abandoned"}'] == 0, m


def test_no_gc_label_outside_pauses(d):
    """A CPU-bound process that never collects has no gc=1 sample."""
    p = subprocess.Popen([os.path.join(WL, "tp_hotcold"), "1"], stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    p.wait()
    wait_drained()
    prof, _ = d.profile("pid=%d&last=5m" % pid)
    assert prof.samples, "no samples"
    assert not [s for s in prof.samples if "gc" in s["labels"]]


def test_short_lived_pythons_leave_no_attachment(d):
    """100 short-lived CPythons of one object: attached while they run, nothing left after."""
    py = copy_python("py_short")
    before = d.json("/api/v1/status")["gc"]["probes_attached"]
    procs, pids = [], set()
    for i in range(100):
        procs.append(subprocess.Popen([py, "-c", "import gc; gc.collect()"]))
        pids.add(procs[-1].pid)
        if len(procs) >= 8:
            procs.pop(0).wait()
    for p in procs:
        p.wait()
    # GC state is made at a process's first phase (a pause seen: its events), and the exits
    # deleted it all
    wait_drained()
    seen = {e["pid"] for e in d.json("/api/v1/gc?last=5m&runtime=python")["events"]} & pids
    assert len(seen) >= 20, "%d of 100 processes' pauses seen" % len(seen)
    left = (bpf_map_pids("gc_pausing") | bpf_map_pids("gc_open")) & pids
    assert not left, sorted(left)
    o = wait_for("detach", lambda: (lambda o: o if o and o["state"] == "detached" else None)(
        gc_object(d, py)), timeout=5)
    assert o["processes"] == 0 and o["probes"] == 0, o
    st = d.json("/api/v1/status")["gc"]
    attached = sum(x["probes"] for x in st["objects"])
    # the daemon's own count agrees with its objects (+1: the dlopen uretprobe)
    assert st["probes_attached"] == attached + 1, st
    m = d.metrics()
    print("  attaches %d, detaches %d; gc probes before %d, after %d" % (
        m["tailprof_gc_attaches_total"], m["tailprof_gc_detaches_total"], before,
        st["probes_attached"]))


PY_COLLECT_FOREVER = r"""
import gc, os
class Node:
    pass
keep = [[Node() for _ in range(10)] for _ in range(40000)]
for ring in keep:               # rings: the collector walks all 400,000 objects each time
    for i in range(9):
        ring[i].next = ring[i + 1]
    ring[9].next = ring[0]
print(os.getpid(), flush=True)
while True:
    gc.collect()
"""


def bpf_map_pids(name, pausing=False):
    """The pids in the keys of every BPF map called name (gc_pausing: the key; gc_open: its
    pid field); pausing: only gc_pausing's entries above 0 (a pause open: a process that has
    opened a phase keeps its entry, 0 between pauses, until it exits or execs)."""
    return {e["key"]["pid"] if isinstance(e["key"], dict) else e["key"]
            for e in daemon.bpf_map_dump(name) if not pausing or e["value"]}


def pausing_count():
    """label_sources' TP_LABEL_GC_PAUSING (entry 2): the processes the BPF programs count as
    in a pause."""
    return {e["key"]: e["value"] for e in daemon.bpf_map_dump("label_sources")}[2]


def test_killed_inside_a_collection_leaves_no_state(d):
    """A CPython killed inside gc.collect(): its pause count (gc_pausing) and open phases
    (gc_open) are gone from BPF when its parent's wait returns, with tailprofd stopped (the
    sampler's exit program deletes them), so a process reusing the pid starts clean."""
    p = subprocess.Popen([PYTHON, "-c", PY_COLLECT_FOREVER], stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    try:
        wait_attached(d, PYTHON)
        # it spends nearly all its time collecting: caught pausing within a few dumps
        wait_for("pid %d pausing in gc_pausing" % pid,
                 lambda: pid in bpf_map_pids("gc_pausing", pausing=True), timeout=10)
        # tailprofd stopped: what is deleted now was deleted by BPF, not read from the ring
        os.kill(d.proc.pid, signal.SIGSTOP)
        p.kill()
        p.wait()
        pausing, open_ = bpf_map_pids("gc_pausing"), bpf_map_pids("gc_open")
        assert pid not in pausing and pid not in open_, (pid, pausing, open_)
        # nor in the count of processes in a pause (label_sources entry 2): back to that of
        # the processes still pausing (other Pythons here may be, for a moment)
        wait_for("the pausing count to match gc_pausing",
                 lambda: pausing_count() == len(bpf_map_pids("gc_pausing", pausing=True)),
                 timeout=5)
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
        if p.poll() is None:
            p.kill()
            p.wait()


def javac(dst):
    r = run([os.path.join(JDK, "bin", "javac"), "-d", dst, os.path.join(SRC, "GcLoop.java")],
            timeout=120)
    assert r.returncode == 0, r.stderr


def test_jvm_matches_xlog_gc(d):
    """A JVM started after the daemon (libjvm.so is found at its dlopen): one pause per GC in
    -Xlog:gc, durations within 20% or 1 ms; a safepoint around each."""
    out = os.path.join(TMP, "java")
    os.makedirs(out, exist_ok=True)
    javac(out)
    log = os.path.join(out, "gc.log")
    p = subprocess.Popen([os.path.join(JDK, "bin", "java"), "-Xlog:gc:file=" + log, "-cp", out,
                          "GcLoop", "20", "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    pid = int(p.stdout.readline())
    # libjvm.so is mapped by the launcher's dlopen, after exec: found then (not by exec)
    libjvm = os.path.realpath(os.path.join(JDK, "lib", "server", "libjvm.so"))
    o = wait_attached(d, libjvm)
    assert o["runtime"] == "jvm" and o["probes"] == 4, o
    p.communicate("go\n", timeout=120)
    assert p.returncode == 0
    wait_drained()
    logged = []
    with open(log) as f:
        for line in f:
            m = re.search(r"GC\((\d+)\) Pause .* ([0-9.]+)ms$", line.strip())
            if m:
                logged.append(float(m.group(2)) * 1e6)
    evs = events(d, pid)
    pauses = [e for e in evs if e["kind"] == "pause"]
    safepoints = [e for e in evs if e["kind"] == "safepoint"]
    print("  -Xlog:gc %d pauses, daemon %d pauses, %d safepoints" % (
        len(logged), len(pauses), len(safepoints)))
    assert len(logged) >= 20, logged
    assert len(pauses) == len(logged), (len(pauses), len(logged))
    worst = 0
    for e, ns in zip(pauses, logged):
        assert e["runtime"] == "jvm" and e["full"] is True, e
        diff = abs(e["duration_ns"] - ns)
        worst = max(worst, diff / ns)
        assert diff <= max(0.2 * ns, 1e6), (e["duration_ns"], ns)
    print("  worst duration difference %.1f%%" % (100 * worst))
    # every GC pause lies inside a safepoint
    for e in pauses:
        assert any(s["start_unix_ns"] <= e["start_unix_ns"] and
                   s["start_unix_ns"] + s["duration_ns"] >= e["start_unix_ns"] + e["duration_ns"]
                   for s in safepoints), e
    o = wait_for("libjvm detach", lambda: (lambda o: o if o and o["state"] == "detached" and
                                           not o["processes"] else None)(gc_object(d, libjvm)),
                 timeout=5)
    assert o["probes"] == 0, o


def go_build(name, *flags):
    out = os.path.join(TMP, name)
    env = dict(os.environ, GOCACHE=os.path.join(BUILD, "tests", "gocache"), GO111MODULE="off",
               CGO_ENABLED="0")
    r = run(["go", "build", "-o", out] + list(flags) + [os.path.join(SRC, "gcloop.go")],
            env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def test_go_matches_gctrace(d):
    """A Go program started after the daemon: one collection per gctrace line, each with its
    two stop-the-world pauses."""
    exe = go_build("gcloop")
    p = subprocess.Popen([exe, "20", "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, GODEBUG="gctrace=1"))
    pid = int(p.stdout.readline())
    o = wait_attached(d, exe)
    assert o["runtime"] == "go" and o["probes"] == 4 and o["version"].startswith("go1."), o
    _, trace = p.communicate("go\n", timeout=60)
    wait_drained()
    lines = [ln for ln in trace.splitlines() if re.match(r"gc \d+ @", ln)]
    evs = events(d, pid)
    kinds = collections.Counter((e["kind"], e.get("cause")) for e in evs)
    print("  gctrace %d cycles; daemon %s" % (len(lines), dict(kinds)))
    assert len(lines) >= 20, trace[-500:]
    assert kinds[("collection", None)] == len(lines), kinds
    assert kinds[("pause", "sweep_termination")] == len(lines), kinds
    assert kinds[("pause", "mark_termination")] == len(lines), kinds
    for e in evs:
        if e["kind"] == "collection":
            inside = [x for x in evs if x["kind"] == "pause" and
                      e["start_unix_ns"] <= x["start_unix_ns"] and
                      x["start_unix_ns"] + x["duration_ns"] <=
                      e["start_unix_ns"] + e["duration_ns"]]
            assert len(inside) >= 2, (e, inside)
    wait_for("go detach", lambda: (lambda o: o if o["state"] == "detached" else None)(
        gc_object(d, exe)), timeout=5)


def test_unsupported_runtimes(d):
    """A stripped Go binary and a libjvm.so without USDT are reported unsupported, once."""
    exe = go_build("gcloop_stripped", "-ldflags=-s -w")
    jvm_dir = os.path.join(TMP, "nousdt")
    os.makedirs(jvm_dir, exist_ok=True)
    libjvm = os.path.join(jvm_dir, "libjvm.so")
    shutil.copy2(os.path.join(FIXTURES, "libgc_fixture_nousdt.so"), libjvm)
    g = subprocess.Popen([exe, "1", "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    j = subprocess.Popen([os.path.join(WL, "tp_gc_dlopen"), libjvm, "3"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    g.stdout.readline()
    j.stdout.readline()
    try:
        def both():
            st = d.json("/api/v1/status")["gc"]
            u = {x["path"]: x for x in st["unsupported"]}
            return st if exe in u and libjvm in u else None
        st = wait_for("unsupported entries", both)
        u = {x["path"]: x for x in st["unsupported"]}
        assert u[exe]["runtime"] == "go" and "stripped" in u[exe]["reason"], u[exe]
        assert u[libjvm]["runtime"] == "jvm" and "gc__begin" in u[libjvm]["reason"], u[libjvm]
        r = run([CLI, "--server", d.url, "status"], timeout=30)
        assert r.returncode == 0 and "unsupported" in r.stdout, r
        assert "stripped" in r.stdout, r.stdout
    finally:
        g.communicate("go\n", timeout=30)
        j.communicate("go\n", timeout=30)
    # said once, not in a loop (three dlopens, exec re-scan)
    out = d.output()
    assert out.count(exe + " ") == 1, out[-2000:]
    assert out.count(libjvm + " ") == 1, out[-2000:]


def test_api_cli_and_metrics(d):
    """/api/v1/gc, /api/v1/windows's gc totals, /metrics and `tailprof gc` agree."""
    py = copy_python("py_api")
    p = subprocess.Popen([py, "-c", "import gc,time\ntime.sleep(0.5)\n"
                          "for i in range(30): gc.collect()\nprint('x')"],
                         stdout=subprocess.PIPE, text=True)
    p.wait()
    wait_drained()
    # one fixed range for both (a sliding last= could drop a window between the two reads)
    rng = "from=%.3f&to=%.3f" % (time.time() - 300, time.time() + 1)
    g = d.json("/api/v1/gc?%s&runtime=python" % rng)
    w = d.json("/api/v1/windows?%s" % rng)["windows"]
    assert g["totals"]["pauses"] == sum(x["pauses"] for x in g["windows"])
    assert sum(x["gc"]["pauses"] for x in w) >= g["totals"]["pauses"] > 0
    per_proc = sum(pp["pauses"] for x in g["windows"] for pp in x["processes"])
    assert per_proc == g["totals"]["pauses"] == len(g["events"]), (per_proc, g["totals"])
    for x in g["windows"]:
        for pp in x["processes"]:
            assert pp["max_pause_ns"] <= pp["pause_ns"]
    for e in g["events"]:
        for k in ("pid", "runtime", "kind", "start_unix_ns", "duration_ns", "start",
                  "generation"):
            assert k in e, (k, e)
    m = d.metrics()
    assert m['tailprof_gc_pauses_total{runtime="python"}'] >= g["totals"]["pauses"]
    assert m['tailprof_gc_pause_seconds_total{runtime="python"}'] > 0
    assert 'tailprof_gc_bpf_run_count_total{program="python_gc_start"}' in m
    r = run([CLI, "--server", d.url, "gc", "--last", "5m"], timeout=30)
    assert r.returncode == 0 and "python" in r.stdout and "pause" in r.stdout, r
    r = run([CLI, "--server", d.url, "gc", "--last", "5m", "--json"], timeout=30)
    assert r.returncode == 0 and "events" in json.loads(r.stdout), r
    r = run([CLI, "--server", d.url, "gc", "--last", "bogus"], timeout=30)
    assert r.returncode == 2, r
    for bad in ("pid=x", "runtime=ruby", "last=1m&last=2m", "nope=1", "last=1m&from=0"):
        status, _, body = d.get("/api/v1/gc?" + bad)
        assert status == 400 and "error" in json.loads(body), (bad, status, body)


def test_gc_off():
    """--gc=off loads no GC program and says so in the status."""
    d = daemon.Daemon(DAEMON, "--gc=off")
    try:
        st = d.json("/api/v1/status")["gc"]
        assert st == {"enabled": False}, st
        g = d.json("/api/v1/gc?last=1m")
        assert g["enabled"] is False and g["events"] == []
    finally:
        assert d.stop() == 0
    r = run([DAEMON, "--gc=maybe"], timeout=20)
    assert r.returncode == 2 and "--gc" in r.stderr, r


def main():
    require_bpf()
    for need in (PYTHON, PYENV_PYTHON, os.path.join(JDK, "bin", "javac")):
        if not os.path.exists(need):
            skip("%s is not installed" % need)
    if not shutil.which("go"):
        skip("go is not installed")
    d = start_daemons(lambda: daemon.Daemon(DAEMON, "--window", "1s",
                                                  "--retention", "10m"))
    tests = [test_python_matches_gc_callbacks, test_pyenv_matches_gc_callbacks,
             test_uprobe_nested_calls_pair, test_no_gc_label_outside_pauses,
             test_short_lived_pythons_leave_no_attachment,
             test_killed_inside_a_collection_leaves_no_state, test_jvm_matches_xlog_gc,
             test_go_matches_gctrace, test_unsupported_runtimes, test_api_cli_and_metrics,
             test_gc_off]
    run_tests(tests, [d], cleanup=lambda: shutil.rmtree(TMP, ignore_errors=True))


if __name__ == "__main__":
    main()
