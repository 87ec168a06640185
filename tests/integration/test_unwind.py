#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Integration tests of the table unwinder (.eh_frame in BPF): real BPF as root, workloads built
without frame pointers, Debian's libc and python3.11.

Usage: test_unwind.py BUILD_DIR. Outside CI, exits 77 (skip) when not root or BPF cannot load;
with CI=true that is a failure. TAILPROF_TEST=name runs the tests whose name contains it."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import daemon  # noqa: E402
from runner import require_bpf, run_tests, skip, start_daemons  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
DAEMON = os.path.join(BUILD, "daemon", "tailprofd")
WL = os.path.join(BUILD, "tests", "workloads")
GO_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "gc")
FREQ = 997
PYTHON = "/usr/bin/python3.11"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
KERNEL = "[kernel.kallsyms]"


class Daemon(daemon.Daemon):
    def __init__(self, *args):
        super().__init__(DAEMON, *args)


def start(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


def run_workload(d, name, *args, with_pid=False):
    """Runs workload name to its end and returns the profile of its pid (with_pid: and the
    pid)."""
    p, pid = start([os.path.join(WL, name)] + [str(a) for a in args])
    p.wait()
    time.sleep(1.5)  # a sample is queryable at most 1 s after it was taken
    prof = d.profile("pid=%d&last=2m" % pid)[0]
    return (prof, pid) if with_pid else prof


def rescans_of(d, pid):
    """The unwinder's rescans of process pid (tailprofd -v logs each; its counter is every
    process's, and other programs may start meanwhile)."""
    return d.output().count("process %d's maps read again" % pid)


def user_frames(sample):
    return [f for f in sample["frames"] if f["mapping"] != KERNEL]


def names(frames):
    return [f["function"] for f in frames]


def in_order(seq, wanted):
    """True when the items of wanted appear in seq in this order (not necessarily adjacent)."""
    i = 0
    for x in seq:
        if i < len(wanted) and x == wanted[i]:
            i += 1
    return i == len(wanted)


def show_misses(prof, good, n=3):
    """Prints the n heaviest stacks for which good(sample) is false, for failure reports."""
    miss = {}
    for s in prof.samples:
        if not good(s):
            k = " <- ".join(f["function"] or hex(f["address"]) for f in user_frames(s))
            miss[k] = miss.get(k, 0) + s["values"][0]
    for k, v in sorted(miss.items(), key=lambda kv: -kv[1])[:n]:
        print("    miss %d: %s" % (v, k[:300]))


def libc_symbol_range(name):
    """[start, end) of a local libc function, read from libc's debug file (libc6-dbg), or None
    when there is none: Debian's libc.so.6 itself has only .dynsym."""
    notes = subprocess.run(["readelf", "-n", LIBC], stdout=subprocess.PIPE, text=True).stdout
    bid = [ln.split()[-1] for ln in notes.splitlines() if "Build ID" in ln]
    if not bid:
        return None
    path = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[0][:2], bid[0][2:])
    if not os.path.exists(path):
        return None
    out = subprocess.run(["nm", "-S", path], stdout=subprocess.PIPE, text=True).stdout
    for ln in out.splitlines():
        parts = ln.split()
        if len(parts) == 4 and parts[3] == name:
            start = int(parts[0], 16)
            return start, start + int(parts[1], 16)
    return None


# ---- tests ----

def test_qsort_comparator_chain_through_libc(d):
    """by_key runs inside libc's qsort; the workload and libc have no frame pointers."""
    prof = run_workload(d, "tp_qsort", 4)
    total = chained = 0
    for s in prof.samples:
        fr = user_frames(s)
        n = names(fr)
        if not n or n[0] != "by_key":
            continue
        total += s["values"][0]
        if "sort_all" not in n:
            continue
        i = n.index("sort_all")
        libc_between = any(f["mapping"] == LIBC for f in fr[1:i])
        if libc_between and in_order(n[i:], ["sort_all", "run_rounds", "main"]):
            chained += s["values"][0]
    print("  %d of %d samples in by_key carry by_key <- libc <- sort_all <- run_rounds <- main"
          % (chained, total))
    assert total > 0.5 * FREQ * 4 * 0.5, ("too few samples in by_key", total)
    assert chained >= 0.9 * total, (chained, total)


def test_python_native_stack(d):
    """A pure-Python loop in Debian's python3.11 (no frame pointers): the native stack reaches
    Py_BytesMain and __libc_start_call_main through _PyEval_EvalFrameDefault."""
    start_call_main = libc_symbol_range("__libc_start_call_main")
    code = ("import os, time\nprint(os.getpid(), flush=True)\nend = time.time() + 4\nx = 0\n"
            "while time.time() < end:\n    for i in range(1000):\n        x += i * i\n")
    p, pid = start([PYTHON, "-c", code])
    p.wait()
    time.sleep(1.5)
    prof = d.profile("pid=%d&last=2m" % pid)[0]

    def is_start_call_main(f):
        if f["function"] == "__libc_start_call_main":
            return True
        return (start_call_main is not None and f["mapping"] == LIBC and
                start_call_main[0] <= f["address"] < start_call_main[1])

    total = good = 0
    for s in prof.samples:
        fr = user_frames(s)
        n = names(fr)
        total += s["values"][0]
        if "_PyEval_EvalFrameDefault" not in n or "Py_BytesMain" not in n:
            continue
        i = n.index("_PyEval_EvalFrameDefault")
        j = n.index("Py_BytesMain")
        if i < j and any(is_start_call_main(f) for f in fr[j + 1:]):
            good += s["values"][0]
    print("  %d of %d samples: _PyEval_EvalFrameDefault ... Py_BytesMain <- "
          "__libc_start_call_main" % (good, total))
    assert total > 0.5 * FREQ * 4 * 0.5, ("too few samples", total)
    assert good >= 0.9 * total, (good, total)


def check_truncated(prof, what):
    deep = [s for s in prof.samples if "deep_spin" in names(user_frames(s))]
    total = sum(s["values"][0] for s in deep)
    def is_cut(s):
        n = names(user_frames(s))
        return n[-1] == "[truncated]" and n[0] == "deep_spin" and len(n) == 128
    def before_tables(s):
        # a new process's first tenths of a second, before its unwind tables are in BPF: the
        # leaf alone, cut (docs/sampling-and-unwinding.md)
        return names(user_frames(s)) == ["deep_spin", "[unknown]"]
    cut = sum(s["values"][0] for s in deep if is_cut(s))
    early = sum(s["values"][0] for s in deep if before_tables(s))
    print("  %s: %d of %d samples in deep_spin end in [truncated] after 127 frames (%d before "
          "its tables)" % (what, cut, total, early))
    if cut < 0.95 * (total - early):
        show_misses(prof, lambda s: is_cut(s) or before_tables(s) or
                    "deep_spin" not in names(user_frames(s)))
    assert total > 0.5 * FREQ * 3 * 0.5, (what, "too few samples", total)
    assert early <= 0.1 * total, (what, "too long without tables", early, total)
    assert cut >= 0.95 * (total - early), (what, cut, total, early)


def test_deep_stacks_truncated_explicitly(d):
    """A recursion 200 deep: both walkers end the stack in [truncated] after 127 frames; 100
    deep, the table walker reaches main."""
    check_truncated(run_workload(d, "tp_deep", 3, 200), "tables, no frame pointers")
    prof = run_workload(d, "tp_deep", 3, 100)
    deep = [s for s in prof.samples if "deep_spin" in names(user_frames(s))]
    total = sum(s["values"][0] for s in deep)
    full = sum(s["values"][0] for s in deep
               if names(user_frames(s))[:1] == ["deep_spin"] and
               names(user_frames(s)).count("recurse") == 100 and
               "main" in names(user_frames(s)) and
               "[truncated]" not in names(user_frames(s)))
    print("  tables, 100 deep: %d of %d samples reach main through 100 recurse frames"
          % (full, total))
    if full < 0.9 * total:
        show_misses(prof, lambda s: names(user_frames(s)).count("recurse") == 100)
    assert full >= 0.9 * total and total > 0, (full, total)
    fp = Daemon("--frequency", str(FREQ), "--window", "1s", "--unwind=fp")
    try:
        time.sleep(1)
        check_truncated(run_workload(fp, "tp_deep_fp", 3, 200), "frame pointers")
    finally:
        fp.stop()


def test_signal_frame(d):
    """A signal handler's stack continues through libc's __restore_rt and the kernel's signal
    frame into the interrupted code."""
    prof = run_workload(d, "tp_signal", 3)
    spin = [s for s in prof.samples if names(user_frames(s))[:1] == ["handler_spin"]]
    total = sum(s["values"][0] for s in spin)
    good = sum(s["values"][0] for s in spin
               if in_order(names(user_frames(s)), ["handler_spin", "on_signal", "interrupted",
                                                   "main"]))
    print("  %d of %d samples in handler_spin carry on_signal <- [signal frame] <- interrupted "
          "<- main" % (good, total))
    if good < 0.99 * total:
        show_misses(prof, lambda s: "interrupted" in names(user_frames(s)))
    assert total > 0.5 * FREQ * 3 * 0.5, ("too few samples", total)
    assert good >= 0.9 * total, (good, total)


def test_dlopen_picked_up(d):
    """A library dlopen'ed after the process was first seen: a PC in no known mapping makes
    user space rescan the maps, and the library's frames unwind within a drain period."""
    plugin = os.path.join(WL, "libtp_plugin.so")
    prof, pid = run_workload(d, "tp_dlopen_late", 1, 2, plugin, with_pid=True)
    rescans = rescans_of(d, pid)
    spin = [s for s in prof.samples if names(user_frames(s))[:1] == ["plugin_spin"]]
    total = sum(s["values"][0] for s in spin)
    chained = sum(s["values"][0] for s in spin
                  if in_order(names(user_frames(s)), ["plugin_spin", "run_plugin", "main"]))
    print("  %d of %d samples in plugin_spin carry run_plugin <- main; %d rescans"
          % (chained, total, rescans))
    assert total > 0.5 * FREQ * 2 * 0.5, ("too few samples", total)
    assert chained >= 0.9 * total, (chained, total)
    assert rescans >= 1, rescans


def test_dlopen_picked_up_off_cpu():
    """The same for a thread that only blocks there: an off-CPU walk that meets a PC in no
    known mapping makes user space rescan too, so the plugin's frames appear within a drain
    period or two of the dlopen. CPU sampling at 1 Hz, so that no CPU sample does it (at 199 Hz
    one sometimes lands in the sleeps' few microseconds on a CPU)."""
    plugin = os.path.join(WL, "libtp_plugin.so")
    d = Daemon("--frequency", "1", "--window", "1s")
    try:
        p, pid = start([os.path.join(WL, "tp_dlopen_late"), "1", "3", plugin, "nap"])
        p.wait()
        time.sleep(1.5)
        prof = d.profile("type=offcpu&pid=%d&last=2m" % pid)[0]
    finally:
        d.stop()
    naps = [s for s in prof.samples if "hrtimer_nanosleep" in names(s["frames"])]
    total = sum(s["values"][1] for s in naps)
    chained = sum(s["values"][1] for s in naps
                  if in_order(names(user_frames(s)), ["plugin_nap", "run_plugin", "main"]))
    print("  %.2f of %.2f s asleep in the plugin carry plugin_nap <- run_plugin <- main"
          % (chained / 1e9, total / 1e9))
    assert total >= 0.9 * 3e9, ("too little sleep seen", total)
    # the first sleeps come before the rescan: at most 1 s of 3
    assert chained >= 2e9, (chained, total, [names(user_frames(s)) for s in naps[:3]])


GO_STACK_TOPS = ("runtime.goexit", "runtime.mstart", "runtime.rt0_go", "runtime.mcall",
                 "runtime.systemstack", "runtime.morestack", "runtime.asmcgocall")


def test_go_system_stacks_no_rescans(d):
    """A Go program that collects every 20 ms blocks in its runtime on system stacks. Their
    walks end at the functions where Go's own traceback stops (runtime.mcall, mstart...), whose
    CFI gives no caller (mcall's gives runtime.g0's address, in the binary's .bss): no
    "[unknown]" root frame, and no walk cut in no mapping that would wake tailprofd to read the
    maps again (before: some 500 in 6 s, each found in the binary's data and saved). Rescans for
    other garbage (a runtime function's CFI leading into the Go heap) that find nothing new back
    off."""
    tmp = tempfile.mkdtemp(prefix="tailprof_unwind_")
    exe = os.path.join(tmp, "gcloop")
    try:
        r = subprocess.run(["go", "build", "-o", exe, os.path.join(GO_SRC, "gcloop.go")],
                           env=dict(os.environ, GOCACHE=os.path.join(BUILD, "tests", "gocache"),
                                    GO111MODULE="off", CGO_ENABLED="0"),
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        m0 = d.metrics()
        p, pid = start([exe, "250"])
        p.wait()
        time.sleep(1.5)
        m1 = d.metrics()
        prof = d.profile("type=offcpu&pid=%d&last=2m" % pid)[0]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def delta(k):
        return m1.get(k, 0) - m0.get(k, 0)
    rescans = rescans_of(d, pid)
    unchanged = delta("tailprof_unwind_rescans_unchanged_total")
    saved = {k: delta('tailprof_maps_rereads_saved_total{module="%s"}' % k)
             for k in ("unwinder", "symbolizer")}
    blocked = sum(s["values"][1] for s in prof.samples)
    roots = {}
    for s in prof.samples:
        u = names(user_frames(s))
        roots[u[-1] if u else ""] = roots.get(u[-1] if u else "", 0) + s["values"][1]
    print("  %.2f s off-CPU in %d stacks; %d rescans of it (%d of every process's found nothing "
          "new), rereads saved %s"
          % (blocked / 1e9, len(prof.samples), rescans, unchanged, saved))
    print("  outermost user frames: %s" % sorted(roots.items(), key=lambda x: -x[1])[:6])
    assert blocked >= 1e9, ("too little off-CPU time seen", blocked)
    # the walks end at the runtime's stack tops, as its own traceback does
    tops = sum(v for k, v in roots.items() if k.split(".abi0")[0] in GO_STACK_TOPS)
    assert tops >= 0.9 * blocked, roots
    assert saved["unwinder"] <= 5, saved
    # before: one every 250 ms while it ran (some 6 s: 24); now the first at once, then the
    # garbage that is not in the binary's data backs them off (0.25, 0.5, 1, 2, 4 s)
    assert rescans <= 12, rescans


def test_fp_flag_and_metrics(d):
    """--unwind=fp walks by frame pointers only (the qsort chain breaks in libc); the default
    daemon reports its tables and walks on /metrics."""
    m = d.metrics()
    print("  tables %d (%d rows, %d bytes), %d stacks walked, %d with frame-pointer steps"
          % (m["tailprof_unwind_tables"], m["tailprof_unwind_table_rows"],
             m["tailprof_unwind_table_bytes"], m["tailprof_unwind_stacks_total"],
             m["tailprof_unwind_fp_stacks_total"]))
    assert m["tailprof_unwind_tables"] > 0 and m["tailprof_unwind_table_bytes"] > 0, m
    assert m["tailprof_unwind_stacks_total"] > 0, m
    fp = Daemon("--frequency", str(FREQ), "--window", "1s", "--unwind=fp")
    try:
        time.sleep(1)
        prof = run_workload(fp, "tp_qsort", 2)
        total = sum(s["values"][0] for s in prof.samples
                    if names(user_frames(s))[:1] == ["by_key"])
        chained = sum(s["values"][0] for s in prof.samples
                      if names(user_frames(s))[:1] == ["by_key"] and
                      "main" in names(user_frames(s)))
        fm = fp.metrics()
        print("  --unwind=fp: %d of %d samples in by_key reach main" % (chained, total))
        assert fm["tailprof_unwind_stacks_total"] == 0 and fm["tailprof_unwind_tables"] == 0
        assert total > 0 and chained < 0.5 * total, (chained, total)
    finally:
        fp.stop()


def main():
    require_bpf()
    if not os.path.exists(PYTHON) or not glob.glob(LIBC):
        skip("needs Debian's %s and %s" % (PYTHON, LIBC))
    # -v: the unwinder logs each process's rescans (test_go_system_stacks_no_rescans)
    d = start_daemons(lambda: Daemon("--frequency", str(FREQ), "--window", "1s",
                                           "--retention", "10m", "-v"))
    time.sleep(2)  # tables of the processes already running are built at the first drains
    tests = [test_qsort_comparator_chain_through_libc, test_python_native_stack,
             test_deep_stacks_truncated_explicitly, test_signal_frame, test_dlopen_picked_up,
             test_dlopen_picked_up_off_cpu, test_go_system_stacks_no_rescans,
             test_fp_flag_and_metrics]
    run_tests(tests, [d])


if __name__ == "__main__":
    main()
