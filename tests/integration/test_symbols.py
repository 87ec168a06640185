#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Integration tests of symbolization on real hosts: separate debug files, executables replaced
while they run, mount and PID namespaces, the vDSO, JIT perf maps, callers after a noreturn call,
demangling, process and thread names, source lines from DWARF, frames without a symbol named
by their unwind table's function extent, the main binary as a profile's first mapping. Real BPF
as root, workloads with known answers.

Usage: test_symbols.py BUILD_DIR. Outside CI, exits 77 (skip) when not root or BPF cannot load;
with CI=true that is a failure."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from runner import require_bpf, run_tests, start_daemons  # noqa: E402
from test_daemon import (BUILD, WL, Daemon, names, run,  # noqa: E402
                         start_workload, wait_drained)

FREQ = 997
WL_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads")


def build_id(path):
    out = run(["readelf", "-n", path]).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    assert m, out
    return m.group(1)


def of_pid(prof, pid):
    ss = [s for s in prof.samples if s["labels"]["pid"] == str(pid)]
    assert ss, "no samples of process %d" % pid
    return ss


def share(samples, pred):
    total = sum(s["values"][0] for s in samples)
    return sum(s["values"][0] for s in samples if pred(s)) / total


def run_workload(name, *args):
    p, pid = start_workload(name, *args)
    p.wait()
    wait_drained()
    return pid


def source_line(path, text):
    """The line number of the only line of source file path that contains text."""
    with open(path) as f:
        found = [i + 1 for i, line in enumerate(f) if text in line]
    assert len(found) == 1, (path, text, found)
    return found[0]


def function_body(path, signature):
    """(first, last) line numbers of the C function whose definition line holds signature: from
    that line to the brace that closes its body."""
    first = source_line(path, signature)
    with open(path) as f:
        lines = f.read().split("\n")
    depth, opened = 0, False
    for i in range(first - 1, len(lines)):
        depth += lines[i].count("{") - lines[i].count("}")
        opened = opened or "{" in lines[i]
        if opened and depth == 0:
            return first, i + 1
    raise AssertionError("no end of %s in %s" % (signature, path))


def fde_extents(image):
    """[(start, end)] of the FDEs in the .eh_frame of ELF file image, as readelf lists them."""
    out = run(["readelf", "-W", "--debug-dump=frames", image]).stdout
    return [(int(m.group(1), 16), int(m.group(2), 16))
            for m in re.finditer(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", out)]


def symbol_extent(path, name):
    """(start, end) of the sized function symbol name in path's .symtab."""
    for line in run(["readelf", "-W", "--syms", path]).stdout.splitlines():
        col = line.split()
        if len(col) == 8 and col[7] == name and col[3] == "FUNC":
            return int(col[1], 16), int(col[1], 16) + int(col[2])
    raise AssertionError("no symbol %s in %s" % (name, path))


def check_fde_names(frames, prefix, fdes):
    """Frames named prefix+0xSTART are named after the FDE that holds them: START is that FDE's
    start, so all the addresses of one function have one name; an address no FDE holds is named
    by itself (crtstuff's __do_global_dtors_aux has no FDE, and a CI run once sampled it at the
    exit, at its first instruction: its load of a .bss byte, a page fault). Returns how many
    were named by an FDE."""
    seen = 0
    for f in frames:
        if not f["function"].startswith(prefix):
            continue
        start = int(f["function"][len(prefix):], 16)
        holding = [a for a, b in fdes if a <= f["address"] < b]
        if not holding and start == f["address"]:
            continue
        seen += 1
        assert holding == [start], (f, holding)
    return seen


# ---- tests: d has --debug-dir DEBUG_DIR then /usr/lib/debug; bare has an empty debug dir ----

def test_libc_local_functions_from_libc6_dbg(d, bare):
    # Debian's libc has only .dynsym; libc6-dbg's debug file (under /usr/lib/debug/.build-id)
    # names its local functions. Without it the same addresses read libc.so.6+0x..., never the
    # exported function below them.
    pid = run_workload("tp_libc_names", 1.5)
    named = of_pid(d.profile("last=1m&pid=%d" % pid)[0], pid)
    plain = of_pid(bare.profile("last=1m&pid=%d" % pid)[0], pid)
    msort = share(named, lambda s: any(n.startswith("msort_with_tmp") for n in names(s)))
    print("  msort_with_tmp in %.1f%% of samples" % (100 * msort))
    assert msort >= 0.5, msort
    # below main, in libc's own frames (samples in sort_rounds, whose frame chain is intact)
    own = [s for s in named if names(s)[0] == "sort_rounds"]

    def below_main(s):
        fs = names(s)
        return "main" in fs and fs[fs.index("main") + 1:][:1] == ["__libc_start_call_main"]
    assert own and share(own, below_main) >= 0.9, [names(s) for s in own[:3]]
    local = {f["address"] for s in named for f in s["frames"]
             if f["function"].startswith("msort_with_tmp")}
    # without them, libc.so.6+0xSTART of the FDE that holds the address: one name per function
    libc = next(f["mapping"] for s in plain for f in s["frames"]
                if (f["mapping"] or "").endswith("/libc.so.6"))
    seen = [f for s in plain for f in s["frames"] if f["address"] in local]
    assert seen, "the daemon without debug files saw none of msort_with_tmp's addresses"
    assert check_fde_names(seen, "libc.so.6+0x", fde_extents(libc)) == len(seen), \
        {f["function"] for f in seen}


def test_stripped_executable_with_build_id_debug_file(d, bare):
    pid = run_workload("tp_debug_only_stripped", 1.5)
    named = of_pid(d.profile("last=1m&pid=%d" % pid)[0], pid)
    plain = of_pid(bare.profile("last=1m&pid=%d" % pid)[0], pid)
    got = share(named, lambda s: "only_in_debug_file" in names(s))
    print("  only_in_debug_file in %.1f%% of samples" % (100 * got))
    assert got >= 0.9, got
    assert share(plain, lambda s: "only_in_debug_file" in names(s)) == 0
    assert share(plain, lambda s: any(n.startswith("tp_debug_only_stripped+0x")
                                      for n in names(s))) >= 0.9
    exe = os.path.join(WL, "tp_debug_only_stripped")
    assert {f["build_id"] for s in named for f in s["frames"]
            if f["mapping"] == exe} == {build_id(exe)}
    # without a symbol: one name for the whole function, its FDE's start (the symbol's start in
    # the unstripped build)
    start, end = symbol_extent(os.path.join(WL, "tp_debug_only"), "only_in_debug_file")
    frames = [f for s in plain for f in s["frames"] if f["mapping"] == exe]
    assert check_fde_names(frames, "tp_debug_only_stripped+0x", fde_extents(exe)) > 0
    assert {f["function"] for f in frames if start <= f["address"] < end} == \
        {"tp_debug_only_stripped+0x%x" % start}
    # the debug file has the DWARF too: source lines of the stripped executable
    src = os.path.realpath(os.path.join(WL_SRC, "debug_only.c"))
    first, last = function_body(src, "void only_in_debug_file(double seconds)")
    lines = [f for s in named for f in s["frames"] if f["function"] == "only_in_debug_file"]
    assert lines and all(f["file"] == src and first <= f["line"] <= last for f in lines), \
        {(f["file"], f["line"]) for f in lines}


def test_executable_deleted_and_replaced(d):
    tmp = tempfile.mkdtemp(dir=BUILD)
    app = os.path.join(tmp, "app")
    shutil.copy(os.path.join(WL, "tp_build_old"), app)
    old_id = build_id(app)
    p = subprocess.Popen([app, "0.6", "2"], stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    # gone and replaced by another build before the process runs (and is first sampled)
    os.unlink(app)
    shutil.copy(os.path.join(WL, "tp_build_new"), app)
    assert build_id(app) != old_id
    with open("/proc/%d/maps" % pid) as f:
        assert "%s (deleted)" % app in f.read()
    p.wait()
    wait_drained()
    ss = of_pid(d.profile("last=1m&pid=%d" % pid)[0], pid)
    got = share(ss, lambda s: "old_build_spin" in names(s))
    print("  old_build_spin in %.1f%% of samples" % (100 * got))
    assert got >= 0.9, got
    assert share(ss, lambda s: "new_build_spin" in names(s)) == 0
    mains = {(f["mapping"], f["build_id"]) for s in ss for f in s["frames"]
             if f["function"] in ("old_build_spin", "main")}
    assert mains == {(app, old_id)}, mains
    shutil.rmtree(tmp)


def test_mount_and_pid_namespace_with_jit(d):
    # The executable exists only inside the process's mount namespace, its perf map only in its
    # own /tmp, and it is pid 1 of its PID namespace.
    # The program is opened before the namespace's own /tmp hides the build (which may itself
    # lie under /tmp), then copied into that /tmp: a path that does not exist on the host.
    nsdir = "/tmp/tailprof-ns-%d" % os.getpid()
    assert not os.path.exists(nsdir)
    script = ("exec 3<{wl}/tp_jit && mount -t tmpfs tmpfs /tmp && mkdir {d} && "
              "cat <&3 >{d}/nsapp && chmod +x {d}/nsapp && exec 3<&- {d}/nsapp 1.5 1.5"
              ).format(d=nsdir, wl=WL)
    p = subprocess.Popen(["unshare", "--mount", "--pid", "--fork", "--mount-proc",
                          "sh", "-c", script], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "1"  # its pid as it sees it
    assert not os.path.exists(os.path.join(nsdir, "nsapp"))
    p.wait()
    wait_drained()
    prof, _ = d.profile("last=1m&comm=nsapp")
    ss = prof.samples
    assert ss
    pids = {s["labels"]["pid"] for s in ss}
    assert len(pids) == 1 and pids != {"1"}, pids
    assert {s["labels"].get("ns_pid") for s in ss} == {"1"}
    app = os.path.join(nsdir, "nsapp")
    # JIT code sets up no frame: the frame-pointer walk goes from it to run_jit's caller
    assert share(ss, lambda s: "main" in names(s)) >= 0.9
    assert {f["mapping"] for s in ss for f in s["frames"] if f["function"] == "main"} == {app}
    jit = share(ss, lambda s: names(s)[0] in ("jit_first_name", "jit_second_name"))
    print("  JIT leaf named in %.1f%% of samples" % (100 * jit))
    assert jit >= 0.5, jit
    assert {f["mapping"] for s in ss for f in s["frames"]
            if f["function"].startswith("jit_")} == {"/tmp/perf-1.map"}


def test_jit_perf_map_rewritten_entry(d):
    p, pid = start_workload("tp_jit", 3, 5)
    assert p.stdout.readline().strip() == "renamed"
    renamed = time.time()
    p.wait()
    wait_drained()
    ss = of_pid(d.profile("last=1m&pid=%d" % pid)[0], pid)
    first = share(ss, lambda s: names(s)[0] == "jit_first_name")
    second = share(ss, lambda s: names(s)[0] == "jit_second_name")
    print("  leaf jit_first_name %.1f%%, jit_second_name %.1f%%" % (100 * first, 100 * second))
    assert first >= 0.2 and second >= 0.2 and first + second >= 0.6, (first, second)
    # after the rewrite the later entry names the code: a perf map is looked at every 200 ms
    # but read again at most once a second, and a window (1 s) that holds `from` may begin up
    # to a second before it, so from 2 s after the rename on
    late = of_pid(d.profile("from=%d&pid=%d" % (int(renamed) + 4, pid))[0], pid)
    assert share(late, lambda s: names(s)[0] == "jit_first_name") == 0
    assert share(late, lambda s: names(s)[0] == "jit_second_name") >= 0.5
    m = d.metrics()
    assert m["tailprof_perf_map_reads_total"] >= 2, m
    assert m["tailprof_perf_map_rejected_total"] == 0


def vdso_image(pid):
    """(build ID, {name: [(start, end)]}, [(FDE start, end)]) of the vDSO mapped in process pid,
    read from its memory: the sized symbols of its .dynsym by link-time address (what a
    location's address is), names without their version, and its FDEs."""
    with open("/proc/%d/maps" % pid) as f:
        lo, hi = next([int(x, 16) for x in line.split()[0].split("-")] for line in f
                      if line.rstrip().endswith("[vdso]"))
    with open("/proc/%d/mem" % pid, "rb") as f:
        f.seek(lo)
        image = f.read(hi - lo)
    with tempfile.NamedTemporaryFile(dir=BUILD) as tmp:
        tmp.write(image)
        tmp.flush()
        syms = {}
        for line in run(["readelf", "-W", "--dyn-syms", tmp.name]).stdout.splitlines():
            col = line.split()
            if len(col) == 8 and col[0].endswith(":") and col[2].isdigit() and int(col[2]):
                start = int(col[1], 16)
                syms.setdefault(col[7].split("@")[0], []).append((start, start + int(col[2])))
        return build_id(tmp.name), syms, fde_extents(tmp.name)


def test_vdso_leaf(d):
    # The hot code of clock_gettime in the vDSO may be a local helper that no vDSO symbol covers
    # (on 6.18.44 at [vdso]+0x7bd, in 2 of 3 samples): a frame in the vDSO is named by a vDSO
    # symbol that covers its address, or [vdso]+0xSTART after the FDE that holds it (one name
    # for the helper), never by a neighbour. What holds on every kernel is the chain: the
    # vDSO's clock_gettime <- libc's wrapper <- read_clocks.
    p, pid = start_workload("tp_vdso", 3.5)
    started = time.time()
    vdso_id, syms, fdes = vdso_image(pid)
    p.wait()
    wait_drained()
    assert {"clock_gettime", "__vdso_clock_gettime"} & set(syms), syms
    ss = of_pid(d.profile("last=1m&pid=%d" % pid)[0], pid)
    frames = [f for s in ss for f in s["frames"] if f["mapping"] == "[vdso]"]
    assert {f["build_id"] for f in frames} == {vdso_id}
    for f in frames:
        at = f["address"]  # a caller's is already the byte before its return address
        covering = [n for n, spans in syms.items() if any(a <= at < b for a, b in spans)]
        if f["function"].startswith("[vdso]+0x"):
            assert not covering, (f, covering)
        else:
            assert f["function"] in covering, (f, covering)
    # a helper without a symbol is one function: named after the FDE that holds it
    unnamed = check_fde_names(frames, "[vdso]+0x", fdes)
    print("  vDSO frames without a symbol: %d, named by %d FDE(s)" %
          (unnamed, len({f["function"] for f in frames if f["function"].startswith("[vdso]")})))
    leaves = sorted({s["frames"][0]["function"] for s in ss if s["frames"][0]["mapping"] ==
                     "[vdso]"})
    print("  vDSO leaves: %s" % leaves)

    def through_vdso(s):
        fs = s["frames"]
        return any(f["mapping"] == "[vdso]" and
                   f["function"] in ("clock_gettime", "__vdso_clock_gettime") for f in fs)

    def chain(s):
        fs = s["frames"]
        i = next(i for i, f in enumerate(fs) if f["mapping"] == "[vdso]" and
                 f["function"] in ("clock_gettime", "__vdso_clock_gettime"))
        j = next((j for j in range(i + 1, len(fs)) if fs[j]["function"] == "read_clocks"), 0)
        return j and all(f["mapping"].endswith("/libc.so.6") for f in fs[i + 1:j]) and \
            fs[j]["mapping"].endswith("/tp_vdso") and names(s)[j + 1:j + 2] == ["main"]
    got = share(ss, through_vdso)
    print("  through the vDSO's clock_gettime in %.1f%% of samples" % (100 * got))
    assert got >= 0.4, got
    # the chain needs the process's unwind tables (frame pointers skip libc's wrapper's
    # caller): from a second after the start on, a window (1 s) holding `from` may begin a
    # second before it
    late = [s for s in of_pid(d.profile("from=%d&pid=%d" % (int(started) + 3, pid))[0], pid)
            if through_vdso(s)]
    assert late, "no samples through the vDSO from a second after the start on"
    got = share(late, chain)
    print("  of those from 1 s on, the chain to read_clocks in %.1f%%" % (100 * got))
    assert got >= 0.95, (got, [names(s) for s in late if not chain(s)][:5])


def test_source_lines_and_main_mapping(d):
    # tp_hotcold is built -g: its own DWARF gives hot_function's file and line (where its samples
    # are: inside its body), run_rounds's line where it calls hot_function, and the function's
    # first line; the profile of the process lists its executable first
    p, pid = start_workload("tp_hotcold", 1.5)
    p.wait()
    wait_drained()
    prof, _ = d.profile("last=1m&pid=%d" % pid)
    ss = of_pid(prof, pid)
    exe = os.path.join(WL, "tp_hotcold")
    assert prof.mapping_order[0] == exe, prof.mapping_order
    assert prof.raw["mapping"][0]["has_line_numbers"]
    src = os.path.realpath(os.path.join(WL_SRC, "hot_cold.c"))
    first, last = function_body(src, "void hot_function(uint64_t ns)")
    call = source_line(src, "\t\thot_function(3 * part);")
    hot = [(s, i) for s in ss for i, f in enumerate(s["frames"]) if f["function"] == "hot_function"]
    assert share(ss, lambda s: "hot_function" in names(s)) >= 0.5
    for s, i in hot:
        f = s["frames"][i]
        assert f["mapping"] == exe and f["file"] == src, f
        assert first <= f["line"] <= last and f["lines"][-1]["start_line"] == first, \
            (f["lines"], first, last)
        # now_ns() is inlined into it: then it is the first Line, hot_function the last
        assert all(ln["line"] > 0 for ln in f["lines"]), f["lines"]
    callers = [s["frames"][i + 1] for s, i in hot if i + 1 < len(s["frames"])]
    assert callers and all(c["function"] == "run_rounds" and c["line"] == call and
                           c["file"] == src for c in callers), \
        {(c["function"], c["line"]) for c in callers}
    print("  hot_function at %s:%s, called from line %d" %
          (os.path.basename(src), sorted({s["frames"][i]["line"] for s, i in hot}), call))
    # go tool pprof reads the lines as they are
    status, _, body = d.get("/api/v1/profile?last=1m&pid=%d" % pid)
    assert status == 200
    tmp = tempfile.mkdtemp(dir=BUILD)
    path = os.path.join(tmp, "cpu.pb.gz")
    with open(path, "wb") as f:
        f.write(body)
    env = dict(os.environ, HOME=tmp, PPROF_TMPDIR=tmp)
    outs = {}
    for flags in (["-top", "-lines"], ["-traces"], ["-list", "^hot_function$"]):
        r = run(["go", "tool", "pprof"] + flags + [path], env=env, timeout=60)
        assert r.returncode == 0, (flags, r.stderr)
        assert "warning" not in r.stderr.lower() and "failed" not in r.stderr.lower(), \
            (flags, r.stderr)
        outs[flags[0]] = r.stdout
    assert "File: tp_hotcold" in outs["-top"], outs["-top"][:500]
    got = {int(x) for x in re.findall(r"hot_function \S*hot_cold\.c:(\d+)", outs["-top"])}
    assert got and all(first <= x <= last for x in got), (got, outs["-top"][:2000])
    assert "hot_function" in outs["-traces"]
    # -list finds the source by the file name and annotates hot_function's body
    burns = [int(x) for x in re.findall(r"[\d.]+m?s +[\d.]+m?s +(\d+):\tBURN_NS\(ns\);",
                                        outs["-list"])]
    assert any(first <= x <= last for x in burns), outs["-list"][:2000]
    shutil.rmtree(tmp)


def test_caller_after_a_noreturn_call(d):
    # enter_spin ends with its call of spin_then_exit: its return address is past its end
    pid = run_workload("tp_noreturn", 1.5)
    ss = of_pid(d.profile("last=1m&pid=%d" % pid)[0], pid)
    def chain(s):
        fs = names(s)
        i = fs.index("spin_then_exit") if "spin_then_exit" in fs else -1
        return i >= 0 and fs[i + 1:i + 3] == ["enter_spin", "main"]
    got = share(ss, chain)
    print("  spin_then_exit <- enter_spin <- main in %.1f%% of samples" % (100 * got))
    assert got >= 0.8, (got, [names(s)[:4] for s in ss[:5]])


def test_demangled_cxx_and_rust_names(d):
    pid = run_workload("tp_names", 2)
    ss = of_pid(d.profile("last=1m&pid=%d" % pid)[0], pid)
    want = {"(anonymous namespace)::spin_here(int)": "_ZN12_GLOBAL__N_19spin_hereEi",
            "ns::Box<long>::churn(long)": "_ZN2ns3BoxIlE5churnEl",
            "mycrate::scheme::legacy::function":
                "_ZN7mycrate6scheme6legacy8function17hbe6eccdd43e1e80bE",
            "mycrate::scheme::v0::function": "_RNvNtNtCs9ouqcdLKNTu_7mycrate6scheme2v08function"}
    for name, mangled in want.items():
        got = share(ss, lambda s: names(s)[0] == name)
        print("  %s: %.1f%%" % (name, 100 * got))
        assert got >= 0.15, (name, got)
        assert {f["system_name"] for s in ss for f in s["frames"]
                if f["function"] == name} == {mangled}


def test_process_and_thread_names(d):
    m0 = d.metrics()
    pid = run_workload("tp_process_name_longer_than_15", 1.5)
    # (a sample of the forked child before its exec may carry the test's own names, and one
    # taken in the exec itself, after the kernel set the new comm, the old process name)
    ss = [s for s in of_pid(d.profile("last=1m&pid=%d" % pid)[0], pid)
          if s["labels"]["comm"] != "python3" and
          not any("execve" in f["function"] for f in s["frames"])]
    assert {s["labels"]["process"] for s in ss} == {"tp_process_name_longer_than_15"}, \
        {(s["labels"]["process"], s["labels"]["comm"]) for s in ss}
    assert {s["labels"]["comm"] for s in ss} == {"tp_process_name"}  # the kernel's 15 bytes
    # the name came with the exec event (BPF's mm->exe_file), not from /proc/PID/exe, and the
    # maps read was checked against its fork record or BPF's table of live processes, not
    # /proc/PID/stat
    m1 = d.metrics()
    k = "tailprof_exec_identities_total"
    assert m1[k] > m0.get(k, 0), (k, m0.get(k), m1[k])
    checks = ['tailprof_identity_checks_total{source="%s"}' % s for s in ("records", "bpf")]
    assert sum(m1[k] - m0.get(k, 0) for k in checks) > 0, (m0, m1)
    workers = share(ss, lambda s: s["labels"]["thread"] in ("worker-one", "worker-two"))
    assert workers >= 0.95, workers
    threads = {s["labels"]["thread"] for s in ss}
    assert {"worker-one", "worker-two"} <= threads, threads
    assert len({s["labels"]["tid"] for s in ss if s["labels"]["thread"].startswith("worker")}) \
        == 2


def test_mmap_records_match_proc(d, bare):
    """New processes' maps come from the kernel's mmap records, not /proc: short C programs, a
    shell, Pythons importing extension modules, and every process the tests above started
    (bare checks each set of records against the process's /proc/PID/maps). Each executable
    mapping /proc listed was in the records, the same; and a process that exits within a few ms
    is named from them."""
    m0 = bare.metrics()
    procs = [subprocess.Popen(["/bin/sh", "-c", "for i in 1 2 3 4 5; do /bin/true; done"])]
    for mod in ("json", "decimal", "ssl", "sqlite3", "ctypes"):
        procs.append(subprocess.Popen(["/usr/bin/python3.11", "-c", "import %s" % mod]))
    for _ in range(20):
        procs.append(subprocess.Popen([os.path.join(WL, "tp_short"), "0.003"],
                                      stdout=subprocess.DEVNULL))
    for p in procs:
        assert p.wait() == 0
    wait_drained()
    m1 = bare.metrics()
    served = m1['tailprof_maps_reads_total{source="records"}'] - \
        m0['tailprof_maps_reads_total{source="records"}']
    ok = m1['tailprof_mmap_records_checked_total{result="ok"}']
    bad = m1['tailprof_mmap_records_checked_total{result="mismatch"}']
    print("  maps from records: %d in this test, %d checked against /proc in all, %d missed a "
          "mapping; %d records, %d lost" % (served, ok + bad, bad,
                                            m1["tailprof_mmap_records_total"],
                                            m1["tailprof_mmap_records_lost_total"]))
    assert bad == 0, bare.output()[-3000:]
    assert served > 0 and ok > 0, (served, ok)
    assert m1["tailprof_mmap_records_lost_total"] == 0
    assert m1['tailprof_feature_enabled{feature="mmap_records"}'] == 1
    # a 3 ms program's samples are named (its maps by record, read or not while it lived)
    prof, _ = d.profile("last=1m")
    short = [s for s in prof.samples if s["labels"].get("comm") == "tp_short"]
    assert short, "no sample of tp_short"
    assert any(f["function"] == "main" for s in short for f in s["frames"]), short[:3]


def test_young_processes_named_after_exit(d):
    """Processes that live 3 ms (tp_short, some 3 samples each at 997 Hz) are young while their
    thread has run less than 5 sampling periods: their samples wake nobody and wait for the next
    drain, when most of them have exited; they are named from the mmap records all the same,
    short_lived_spin called from main."""
    m0 = d.metrics()
    for _ in range(40):
        subprocess.run([os.path.join(WL, "tp_short"), "0.003"], stdout=subprocess.DEVNULL,
                       check=True)
    wait_drained()
    m1 = d.metrics()
    young = m1["tailprof_young_samples_total"] - m0["tailprof_young_samples_total"]
    exited = m1["tailprof_mmap_records_exited_total"] - m0["tailprof_mmap_records_exited_total"]
    prof, _ = d.profile("last=1m")
    short = [s for s in prof.samples if s["labels"].get("comm") == "tp_short" and
             any(f["function"] == "short_lived_spin" for f in s["frames"])]
    print("  %d young samples, %d processes' maps served after their exit, %d samples in "
          "short_lived_spin" % (young, exited, len(short)))
    assert young >= 1 and exited >= 1, (young, exited)
    assert len(short) >= 20, len(short)
    fns = [[f["function"] for f in s["frames"]] for s in short]
    named = sum(1 for f in fns if f.index("short_lived_spin") + 1 < len(f) and
                f[f.index("short_lived_spin") + 1] == "main")
    assert named >= 0.9 * len(short), fns[:5]


def main():
    require_bpf()
    debug_dir = tempfile.mkdtemp(dir=BUILD)
    empty_dir = tempfile.mkdtemp(dir=BUILD)
    bid = build_id(os.path.join(WL, "tp_debug_only_stripped"))
    os.makedirs(os.path.join(debug_dir, ".build-id", bid[:2]))
    shutil.copy(os.path.join(WL, "tp_debug_only.debug"),
                os.path.join(debug_dir, ".build-id", bid[:2], bid[2:] + ".debug"))
    common = ["--frequency", str(FREQ), "--window", "1s", "--retention", "10m"]
    d, bare = start_daemons(lambda: (
        Daemon(*common, "--debug-dir", debug_dir, "--debug-dir", "/usr/lib/debug"),
        Daemon(*common, "--debug-dir", empty_dir,
               env={"TAILPROF_MAPS_RECORDS_CHECK": "1"})))
    tests = [test_libc_local_functions_from_libc6_dbg,
             test_stripped_executable_with_build_id_debug_file,
             test_executable_deleted_and_replaced, test_mount_and_pid_namespace_with_jit,
             test_jit_perf_map_rewritten_entry, test_vdso_leaf, test_source_lines_and_main_mapping,
             test_caller_after_a_noreturn_call,
             test_demangled_cxx_and_rust_names,
             test_process_and_thread_names, test_mmap_records_match_proc,
             test_young_processes_named_after_exit]
    def cleanup():
        shutil.rmtree(debug_dir)
        os.rmdir(empty_dir)
    run_tests(tests, [d, bare], cleanup=cleanup)


if __name__ == "__main__":
    main()
