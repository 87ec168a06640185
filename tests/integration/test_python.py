#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Integration tests of Python frames: tests/workloads/py_features.py (3 ms in compute_features,
1 ms in serialize per round) under Debian's /usr/bin/python3.11 and pyenv's 3.11.7, 3.12.1 and
3.13.0, profiled at 999 Hz; the pulled CPU profile (decoded, not grepped) must give
compute_features 75% +- 5 points of the two, the Python chain to <module> with the files, first
lines and lines of the source (found in its text), and math.sin's native frames leafward of
compute_features. Off-CPU: a thread's sleeps under fetch_from_store. A 300 ms process named after
it exits. BPF marks a process known and forgets it and its interpreter at its exit, for good. A
stack wholly in the interpreter's image wakes tailprofd in the first process of that file only.
With --unwind=fp (stacks cut where frame pointers end) the Python frames are all there, and so are
a forked worker's from its first samples.

Usage: test_python.py BUILD_DIR. Outside CI, exits 77 (skip) when not root, BPF cannot load, or
no interpreter is there; with CI=true that is a failure."""
import collections
import glob
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import daemon  # noqa: E402
from runner import require_bpf, run_tests, skip, start_daemons  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
DAEMON = os.path.join(BUILD, "daemon", "tailprofd")
WORKLOAD = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "workloads", "py_features.py"))
PYTHONS = {
    "debian": "/usr/bin/python3.11",
    "pyenv": (sorted(glob.glob("/root/.pyenv/versions/3.11.*/bin/python3.11")) or [None])[-1],
    "pyenv312": (sorted(glob.glob("/root/.pyenv/versions/3.12.*/bin/python3.12")) or [None])[-1],
    "pyenv313": (sorted(glob.glob("/root/.pyenv/versions/3.13.*/bin/python3.13")) or [None])[-1],
}


def source_lines():
    """Line numbers (1-based) found in the workload's text: each def, and the marked lines."""
    with open(WORKLOAD) as f:
        text = f.read().splitlines()

    def find(pred):
        hits = [i + 1 for i, line in enumerate(text) if pred(line)]
        assert len(hits) == 1, hits
        return hits[0]
    return {
        "def compute_features": find(lambda s: s.startswith("def compute_features(")),
        "def serialize": find(lambda s: s.startswith("def serialize(")),
        "def handle": find(lambda s: s.startswith("def handle(")),
        "compute": find(lambda s: s.rstrip().endswith("# compute line")),
        "serialize": find(lambda s: s.rstrip().endswith("# serialize line")),
        "call compute": find(lambda s: s.startswith("    compute_features(")),
        "call serialize": find(lambda s: s.startswith("    serialize(")),
        "call handle": find(lambda s: s.startswith("    handle()")),
    }


def python_frames(sample):
    return [f for f in sample["frames"] if (f["mapping"] or "").startswith("[python] ")]


def check_interpreter(d, python):
    if not python or not os.access(python, os.X_OK):
        skip("no interpreter at %s" % python)
    lines = source_lines()
    w = subprocess.Popen([python, WORKLOAD, "6"])
    assert w.wait(timeout=60) == 0
    time.sleep(2.5)  # the last window closes, the last drain is in
    # the process has exited: its frames were named while it ran
    prof, _ = d.profile("last=30s&pid=%d" % w.pid)
    own = {"compute_features": 0, "serialize": 0}
    chains = {}
    native_below = 0
    for s in prof.samples:
        # from the workload's innermost frame out: json.dumps runs Python code of its own
        py = [f for f in python_frames(s) if f["file"] == WORKLOAD]
        if not py or py[0]["function"] not in own:
            continue
        v = s["values"][0]
        own[py[0]["function"]] += v
        chain = tuple((f["function"], f["file"], f["start_line"], f["line"]) for f in py)
        chains[chain] = chains.get(chain, 0) + v
        leafward = s["frames"][:s["frames"].index(py[0])]
        if py[0]["function"] == "compute_features" and any(
                "sin" in (f["function"] or "") for f in leafward):
            native_below += v
    total = own["compute_features"] + own["serialize"]
    assert total >= 500, (own, "too few samples")
    share = 100.0 * own["compute_features"] / total
    print("  %s: compute_features %.1f%% of %d samples, math.sin native frames in %d" % (
        python, share, total, native_below))
    assert 70 <= share <= 80, share
    assert native_below > 0.1 * own["compute_features"], native_below
    want_compute = (
        ("compute_features", WORKLOAD, lines["def compute_features"], lines["compute"]),
        ("handle", WORKLOAD, lines["def handle"], lines["call compute"]),
        ("<module>", WORKLOAD, 1, lines["call handle"]),
    )
    want_serialize = (
        ("serialize", WORKLOAD, lines["def serialize"], lines["serialize"]),
        ("handle", WORKLOAD, lines["def handle"], lines["call serialize"]),
        ("<module>", WORKLOAD, 1, lines["call handle"]),
    )
    best = sorted(chains.items(), key=lambda kv: -kv[1])
    assert best[0][0] == want_compute, best[:3]
    assert want_serialize in chains, best[:5]
    # go tool pprof with its defaults (C++ name simplification on) keeps <module> its name
    _, _, body = d.get("/api/v1/profile?last=30s&pid=%d" % w.pid)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "tp_python_%d.pb.gz" % w.pid)
    with open(path, "wb") as f:
        f.write(body)
    try:
        r = subprocess.run(["go", "tool", "pprof", "-traces", path], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ, PPROF_TMPDIR="/tmp"))
    finally:
        os.unlink(path)
    assert r.returncode == 0, r.stderr
    assert "<module>" in r.stdout and "compute_features" in r.stdout, r.stdout[:3000]


def test_offcpu_sleep_under_fetch_from_store(d):
    python = PYTHONS["debian"]
    if not os.access(python, os.X_OK):
        skip("no interpreter at %s" % python)
    wl = os.path.join(os.path.dirname(WORKLOAD), "py_offcpu.py")
    # a first run loads the interpreter's unwind tables: the checked run's first blocks then
    # have their callers (as for a long-lived service)
    subprocess.run([python, wl, "1"], timeout=60, check=True)
    w = subprocess.Popen([python, wl, "4"])
    assert w.wait(timeout=60) == 0
    time.sleep(2.5)
    prof, _ = d.profile("type=offcpu&last=30s&pid=%d" % w.pid)
    slept = under = 0
    for s in prof.samples:
        names = [f["function"] for f in s["frames"]]
        # the fetcher thread (Python 3.11 does not name threads for the kernel)
        if s["labels"].get("tid") == str(w.pid) or "hrtimer_nanosleep" not in names:
            continue
        slept += s["values"][1]
        py = python_frames(s)
        if py and py[0]["function"] == "fetch_from_store" and py[0]["file"] == wl and \
                [f["function"] for f in py[1:3]] == ["fetcher", "Thread.run"]:
            under += s["values"][1]
    print("  off-CPU: %.2f s of sleeps, %.0f%% under fetch_from_store" % (
        slept / 1e9, 100.0 * under / max(slept, 1)))
    assert slept > 2e9, slept
    assert under >= 0.9 * slept, (under, slept)


def test_short_lived_named(d):
    """A 300 ms Python process is named after it exits: its new stacks woke the daemon
    (TP_SAMPLE_PY_NEW), which read their code objects while the process lived."""
    python = PYTHONS["debian"]
    if not os.access(python, os.X_OK):
        skip("no interpreter at %s" % python)
    pids = []
    m0 = d.metrics()
    for _ in range(3):
        w = subprocess.Popen([python, WORKLOAD, "0.3"])
        assert w.wait(timeout=60) == 0
        pids.append(w.pid)
    time.sleep(2.5)
    # Debian's interpreter is its executable's own code: once one process of it was read (the
    # first here, or an earlier test's), the exec program gives the next to the walker itself
    from_exec = d.metrics().get("tailprof_python_processes_from_exec_total", 0) - \
        m0.get("tailprof_python_processes_from_exec_total", 0)
    assert from_exec >= 2, from_exec
    named = unnamed = 0
    # where every sample went: the innermost frame of the workload's file, or the innermost
    # Python frame, or "native" (no Python frames)
    where = collections.Counter()
    for pid in pids:
        prof, _ = d.profile("last=30s&pid=%d" % pid)
        for s in prof.samples:
            py = python_frames(s)
            v = s["values"][0]
            if not py:
                where["native"] += v
                continue
            if any((f["function"] or "").startswith("[python code") for f in py):
                unnamed += v
                continue
            named += v
            mine = [f for f in py if f["file"] == WORKLOAD]
            where[mine[0]["function"] if mine else "other:" + py[0]["function"]] += v
    own = {f: where[f] for f in ("compute_features", "serialize")}
    total = own["compute_features"] + own["serialize"]
    print("  3 runs of 0.3 s: %d samples with Python frames named, %d with a code object "
          "unread; compute_features %.1f%% of %d" % (
              named, unnamed, 100.0 * own["compute_features"] / max(total, 1), total))
    assert total >= 400, own
    assert unnamed <= 0.02 * (named + unnamed), (named, unnamed)
    assert 65 <= 100.0 * own["compute_features"] / total <= 85, where.most_common(12)
    # the script's functions take addresses its start-up imports freed (their `<module>` code
    # objects): a cached name must not outlive its object, or serialize's samples show up as
    # handle's (its frame dropped as not code) or with a `<module>` under handle (38 and 56 of
    # some 900 samples in one run in five before new stacks rechecked their code objects).
    # handle's own samples (random.uniform's) are a few.
    assert where["handle"] <= 0.02 * total, where.most_common(12)
    m = d.metrics()
    assert m["tailprof_python_frames_total"] >= named, m["tailprof_python_frames_total"]
    for name in ("tailprof_python_processes", 'tailprof_python_unsupported_total{reason="version"}',
                 'tailprof_python_dropped_frames_total{reason="not_code"}',
                 "tailprof_python_code_read_failures_total"):
        assert name in m, name


def bpf_map_values(name):
    """{pid: value} of the BPF map called name (keyed by pid)."""
    return {e["key"]: e["value"] for e in daemon.bpf_map_dump(name)}


def test_bpf_marks_and_forgets_the_process(d):
    """BPF keeps which processes woke tailprofd (known_procs, pid -> start time) and which run a
    CPython (py_procs): a Python process started while tailprofd is stopped is in known_procs all
    the same (the sample that wakes the daemon marks it: no bpf() call of tailprofd per
    process), then in py_procs once tailprofd runs and finds its interpreter; and in neither
    once its parent's wait returns, with tailprofd stopped again (the sampler's exit program
    deletes both)."""
    python = PYTHONS["debian"]
    if not os.access(python, os.X_OK):
        skip("no interpreter at %s" % python)
    os.kill(d.proc.pid, signal.SIGSTOP)
    w = subprocess.Popen([python, WORKLOAD, "20"])
    try:
        known = daemon.wait_for("pid %d in known_procs" % w.pid,
                                lambda: bpf_map_values("known_procs").get(w.pid), timeout=15)
        with open("/proc/%d/stat" % w.pid) as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        # start_boottime in ns; /proc shows it in clock ticks (proc(5), field 22)
        assert known // (10**9 // os.sysconf("SC_CLK_TCK")) == ticks, (known, ticks)
        os.kill(d.proc.pid, signal.SIGCONT)
        daemon.wait_for("pid %d in py_procs" % w.pid, lambda: w.pid in bpf_map_values("py_procs"),
                        timeout=15)
        os.kill(d.proc.pid, signal.SIGSTOP)
        w.kill()
        w.wait()
        known_procs, py_procs = bpf_map_values("known_procs"), bpf_map_values("py_procs")
        print("  pid %d: known (start %d ns) while tailprofd was stopped; gone from known_procs "
              "(%d entries) and py_procs (%d) at its exit" % (w.pid, known, len(known_procs),
                                                               len(py_procs)))
        assert w.pid not in known_procs, known_procs
        assert w.pid not in py_procs, py_procs
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
        if w.poll() is None:
            w.kill()
            w.wait()


def test_exited_processes_stay_forgotten(d):
    """Processes that free 512 MiB as they exit have samples after their exit event (where the
    kernel runs the exit tracepoint before exit_mm, as 6.18 does): none of them is marked known
    again in BPF (known_procs), where an entry would stay until its pid came back."""
    python = PYTHONS["debian"]
    if not os.access(python, os.X_OK):
        skip("no interpreter at %s" % python)
    known = lambda: d.json("/api/v1/status")["limits"]["known_processes"]["entries"]  # noqa: E731
    before = known()
    pids = []
    for _ in range(20):
        w = subprocess.Popen([python, "-c", "x = b'a' * (512 << 20)"])
        assert w.wait(timeout=60) == 0
        pids.append(w.pid)
    time.sleep(1.5)
    stale = [p for p in pids if p in bpf_map_values("known_procs")]
    # tailprofd's own count is printed only: kernel threads sampled meanwhile join it
    print("  20 exits: known processes %d -> %d; in known_procs after their exit: %s" % (
        before, known(), stale))
    assert not stale, stale


def test_frame_pointer_walk_keeps_python_frames():
    """With --unwind=fp, Debian's python3.11 (built without frame pointers) gives user stacks cut
    at their first address in no mapping; the Python frames sent after all the user frames must
    still be found there. compute_features keeps its 75% of the two functions, and nearly every
    sample of the process has its Python frames (a quarter lost them, as "not code", when they
    were looked for after the kept frames only)."""
    python = PYTHONS["debian"]
    if not os.access(python, os.X_OK):
        skip("no interpreter at %s" % python)
    dfp = daemon.Daemon(DAEMON, "-F", "999", "--window", "1s", "--unwind=fp")
    try:
        w = subprocess.Popen([python, WORKLOAD, "3"])
        assert w.wait(timeout=60) == 0
        time.sleep(2.5)
        prof, _ = dfp.profile("last=30s&pid=%d" % w.pid)
        m = dfp.metrics()
    finally:
        dfp.stop()
    own = {"compute_features": 0, "serialize": 0}
    with_py = total = 0
    for s in prof.samples:
        v = s["values"][0]
        total += v
        py = python_frames(s)
        with_py += v if py else 0
        mine = [f for f in py if f["file"] == WORKLOAD]
        if mine and mine[0]["function"] in own:
            own[mine[0]["function"]] += v
    part = own["compute_features"] + own["serialize"]
    dropped = m['tailprof_python_dropped_frames_total{reason="not_code"}']
    print("  --unwind=fp: %d of %d samples with Python frames, compute_features %.1f%% of %d, "
          "%d frames dropped as not code, %d stacks cut" % (
              with_py, total, 100.0 * own["compute_features"] / max(part, 1), part, dropped,
              m["tailprof_cut_stacks_total"]))
    assert total >= 1500, total
    assert with_py >= 0.93 * total, (with_py, total)
    assert 70 <= 100.0 * own["compute_features"] / part <= 80, own
    assert dropped <= 0.02 * m["tailprof_python_frames_total"], dropped


# A parent that forks a child which runs Python for a second and never execs (a worker).
FORKED_WORKER = ("import os, sys, time\n"
                 "def child_spin(until):\n"
                 "    x = 0\n"
                 "    while time.time() < until:\n"
                 "        x += 1\n"
                 "pid = os.fork()\n"
                 "if pid == 0:\n"
                 "    child_spin(time.time() + 1.0)\n"
                 "    os._exit(0)\n"
                 "print(pid, flush=True)\n"
                 "os.waitpid(pid, 0)\n")


def test_forked_worker_has_python_frames_at_once(d):
    """A forked child that never execs is named from its parent's maps for its first 300 ms
    (its own are not read yet): its parent's interpreter is walked in it from its first
    samples all the same, so nearly all of its second of child_spin has the Python frames."""
    python = PYTHONS["debian"]
    if not os.access(python, os.X_OK):
        skip("no interpreter at %s" % python)
    deferred = "tailprof_forks_deferred_total"
    # the interpreter's unwind tables first (a new file's take some 40 ms to build, and the
    # Python discovery of the drain waits for them)
    subprocess.run([python, "-c", "pass"], check=True, timeout=60)
    time.sleep(1)
    m0 = d.metrics()
    r = subprocess.run([python, "-c", FORKED_WORKER], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    child = int(r.stdout.split()[0])
    time.sleep(2.5)
    prof, _ = d.profile("last=30s&pid=%d" % child)
    spin = total = 0
    for s in prof.samples:
        total += s["values"][0]
        if any(f["function"] == "child_spin" for f in python_frames(s)):
            spin += s["values"][0]
    m1 = d.metrics()
    print("  forked worker: %d of %d samples under child_spin; forked children named from "
          "their parent's maps: %d" % (spin, total, m1[deferred] - m0[deferred]))
    assert m1[deferred] - m0[deferred] >= 1, (m0[deferred], m1[deferred])
    assert total >= 800, total
    assert spin >= 0.95 * total, (spin, total)


# A thread that runs genericpath.commonprefix straight from C for some seconds (a Python loop
# over 100 million characters): its only Python frame is in 3.11's deep-frozen genericpath, built
# into the interpreter file's image. The main thread sleeps.
IMAGE_ONLY = ("import _thread, posixpath, time\n"
              "x = 'a' * 100000000\n"
              "_thread.start_new_thread(posixpath.commonprefix, ([x, x],))\n"
              "time.sleep(60)\n")


def prefix_samples(d, pid):
    """Samples of process pid whose innermost Python frame is <frozen genericpath>'s
    commonprefix."""
    prof, _ = d.profile("last=30s&pid=%d" % pid)
    n = 0
    for s in prof.samples:
        py = python_frames(s)
        if py and py[0]["function"] == "commonprefix" and py[0]["file"] == "<frozen genericpath>":
            n += s["values"][0]
    return n


def test_image_stacks_wake_once(d):
    """A Python stack wholly in the interpreter file's image wakes tailprofd in the first process
    that runs it, which names its frames and adds it to py_seen by the file; in later processes
    of that file (started while tailprofd is stopped) it wakes nobody, and is named all the same.
    Their start-ups' image stacks are walked too (the exec program gives them to the walker from
    the first's executable) and marked for the file at most once each, after which the later
    processes, running that stack alone, mark nothing. A key that BPF and tailprofd computed
    differently would wake (and mark) it every 2 ms of each process."""
    python = PYTHONS["debian"]
    if not os.access(python, os.X_OK):
        skip("no interpreter at %s" % python)
    new, image = "tailprof_python_new_stacks_total", "tailprof_python_image_stacks_total"
    procs = []
    try:
        m0 = d.metrics()
        first = subprocess.Popen([python, "-c", IMAGE_ONLY])
        procs.append(first)
        time.sleep(2)
        m1 = d.metrics()
        first.kill()
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            later = [subprocess.Popen([python, "-c", IMAGE_ONLY]) for _ in range(3)]
            procs += later
            time.sleep(1)
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
        time.sleep(1.5)
        m2 = d.metrics()
        time.sleep(1)
        m3 = d.metrics()
        for w in later:
            w.kill()
        time.sleep(1)
        prefix = [prefix_samples(d, w.pid) for w in procs]
    finally:
        for w in procs:
            if w.poll() is None:
                w.kill()
            w.wait()
    print("  first process: %d new Python stacks, %d of them image stacks marked seen; 3 later "
          "processes: %d new, %d marked (their start-ups), then %d marked in 1 s of "
          "commonprefix; samples in commonprefix: %s" % (
              m1[new] - m0[new], m1[image] - m0[image], m2[new] - m1[new],
              m2[image] - m1[image], m3[image] - m2[image], prefix))
    assert m1[image] - m0[image] >= 1, (m0, m1)
    assert all(n >= 300 for n in prefix), prefix
    # The later processes' commonprefix stack is in py_seen already: none of their samples is
    # new (tailprofd would mark the stack again at each). New stacks are printed only: the test
    # runner, a Python itself, has new stacks of its own as it starts them.
    assert m3[image] - m2[image] == 0, (m2[image], m3[image])
    # their start-ups' stacks, once each for the file: a few, not one per 2 ms of 3 processes
    assert m2[image] - m1[image] < 100, (m1[image], m2[image])


def main_thread_frames(d, query, tid=None):
    """(samples of the process's main thread naming main_spin, naming idle_wait, with no Python
    frames) in the CPU profile of query."""
    prof, _ = d.profile(query)
    spin = idle = none = 0
    for s in prof.samples:
        if tid is not None and s["labels"].get("tid") != str(tid):
            continue
        if tid is None and s["labels"].get("tid") != s["labels"].get("pid"):
            continue
        names = [f["function"] for f in python_frames(s)]
        v = s["values"][0]
        if "main_spin" in names:
            spin += v
        elif "idle_wait" in names:
            idle += v
        elif not names:
            none += v
    return spin, idle, none


def test_many_threads_never_another_threads_frames(d):
    """300 idle threads listed before the busy main thread: past the search's bound the main
    thread gets native frames only (counted), never an idle thread's idle_wait; 100 threads are
    all searched."""
    python = PYTHONS["debian"]
    if not os.access(python, os.X_OK):
        skip("no interpreter at %s" % python)
    wl = os.path.join(os.path.dirname(WORKLOAD), "py_threads.py")
    res = {}
    for n in (100, 300):
        before = d.metrics()["tailprof_python_stack_failures_total"]
        w = subprocess.Popen([python, wl, str(n), "3"])
        assert w.wait(timeout=60) == 0
        time.sleep(2.5)
        res[n] = main_thread_frames(d, "last=30s&pid=%d" % w.pid, w.pid) + (
            d.metrics()["tailprof_python_stack_failures_total"] - before,)
    print("  main thread (main_spin, idle_wait, no Python frames, stack failures): 100 threads "
          "%s, 300 threads %s" % (res[100], res[300]))
    assert res[100][0] >= 1000 and res[100][1] == 0, res[100]
    assert res[300][1] == 0, res[300]
    assert res[300][0] + res[300][2] >= 1000 and res[300][3] >= 0.5 * res[300][2], res[300]


def test_pid_namespace(d):
    """A CPython in a PID namespace of its own (as in a container): its threads are found by
    the tid it sees (native_thread_id), not the host's."""
    python = PYTHONS["debian"]
    if not os.access(python, os.X_OK):
        skip("no interpreter at %s" % python)
    wl = os.path.join(os.path.dirname(WORKLOAD), "py_threads.py")
    r = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", python, wl, "2", "3",
                        "tp_pyns"], timeout=60)
    assert r.returncode == 0, r
    time.sleep(2.5)
    spin, idle, none = main_thread_frames(d, "last=30s&comm=tp_pyns")
    print("  PID namespace: main_spin in %d samples, idle_wait %d, no Python frames %d" % (
        spin, idle, none))
    assert spin >= 1000 and idle == 0 and none <= 0.05 * spin, (spin, idle, none)


def make():
    require_bpf()
    return [daemon.Daemon(DAEMON, "-F", "999", "--window", "1s")]


def test_debian_python(d):
    check_interpreter(d, PYTHONS["debian"])


def test_pyenv_python(d):
    check_interpreter(d, PYTHONS["pyenv"])


def test_pyenv312_python(d):
    """3.12: entry frames are the eval loop's own (owner FRAME_OWNED_BY_CSTACK), dropped."""
    check_interpreter(d, PYTHONS["pyenv312"])


def test_pyenv313_python(d):
    """3.13: no cframe, f_executable and instr_ptr."""
    check_interpreter(d, PYTHONS["pyenv313"])


if __name__ == "__main__":
    run_tests([test_debian_python, test_pyenv_python, test_pyenv312_python, test_pyenv313_python,
               test_offcpu_sleep_under_fetch_from_store, test_short_lived_named,
               test_bpf_marks_and_forgets_the_process, test_exited_processes_stay_forgotten,
               test_image_stacks_wake_once, test_frame_pointer_walk_keeps_python_frames,
               test_forked_worker_has_python_frames_at_once,
               test_many_threads_never_another_threads_frames, test_pid_namespace],
              start_daemons(make))
