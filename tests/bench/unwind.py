#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The table unwinder's figures (root):
1. BPF cost per sample with unwind tables against frame pointers, same workloads, one run:
   tp_qsort (no frame pointers: libc's qsort) and tp_hotcold (frame pointers), one per CPU.
   Target: tables at most 2x frame pointers.
2. Memory of the unwind tables of the 50 largest executable ELF objects on this machine.
3. Agreement with perf record --call-graph dwarf + perf script (libdw) on tp_qsort at the same
   time: the share of tailprof's distinct user stacks, weighted by samples, that perf has with
   the same frame sequence. Target: >= 95%.

Usage: tests/bench/unwind.py [SECONDS_PER_RUN]"""
import bisect
import collections
import os
import subprocess
import sys
import tempfile
import time

from common import Daemon, bpf_prog, build_dir, median, workload

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 10
FREQ = 999
KERNEL = "[kernel.kallsyms]"
ROOTS = ["/usr/bin", "/usr/sbin", "/usr/lib", "/usr/libexec", "/usr/local", "/opt"]


def bpf_per_sample(d):
    return bpf_prog(d.metrics(), "perf_sample")


def cost(mode, name, *args):
    """(ns per perf_sample run, user frames per sample of the workload) with --unwind=mode
    while one `name` per CPU runs."""
    procs = [workload(name, *args) for _ in range(os.cpu_count())]
    try:
        d = Daemon("--frequency", str(FREQ), "--unwind=" + mode)
        time.sleep(2)  # tables of what runs are built at the first drains
        a = bpf_per_sample(d)
        time.sleep(SECONDS)
        b = bpf_per_sample(d)
        prof, _ = d.profile("comm=%s&last=1m" % name)
        d.stop()
    finally:
        for p in procs:
            p.kill()
            p.wait()
    frames = sum(s["values"][0] * len([f for f in s["frames"] if f["mapping"] != KERNEL])
                 for s in prof.samples)
    return (b[0] - a[0]) / max(b[1] - a[1], 1) * 1e9, frames / max(prof.total(), 1)


def bench_cost():
    names = os.environ.get("TAILPROF_BENCH_WORKLOADS", "tp_hotcold,tp_qsort").split(",")
    for name, args in [(n, (100000,)) for n in names]:
        fp, dw = [], []
        for _ in range(3):  # alternate, so that drifting load hits both alike
            fp.append(cost("fp", name, *args))
            dw.append(cost("dwarf", name, *args))
        f_ns, f_fr = median([x[0] for x in fp]), median([x[1] for x in fp])
        d_ns, d_fr = median([x[0] for x in dw]), median([x[1] for x in dw])
        print("cost, %s x %d CPUs, %d Hz, median of 3 x %gs: frame pointers %.0f ns/sample "
              "(%.1f user frames), tables %.0f ns/sample (%.1f user frames): %.2fx" %
              (name, os.cpu_count(), FREQ, SECONDS, f_ns, f_fr, d_ns, d_fr, d_ns / f_ns))
        sys.stdout.flush()


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def bench_memory():
    files = {}
    for root in ROOTS:
        for dirpath, _, names in os.walk(root):
            if "/debug" in dirpath:
                continue  # separate debug files are not mapped
            for n in names:
                p = os.path.join(dirpath, n)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                if os.path.islink(p) or not os.path.isfile(p) or st.st_size < 4096:
                    continue
                key = (st.st_dev, st.st_ino)
                if key not in files:
                    files[key] = (st.st_size, p)
    elfs = [f for f in sorted(files.values(), reverse=True) if is_elf(f[1])]
    # executable objects: executables and shared libraries (ET_EXEC/ET_DYN), not .o or .a
    chosen = []
    for size, p in elfs:
        with open(p, "rb") as f:
            hdr = f.read(18)
        if hdr[16] in (2, 3):
            chosen.append((size, p))
        if len(chosen) == 50:
            break
    out = subprocess.run([os.path.join(build_dir(), "tests", "bench", "tp_unwind_rows")] +
                         [p for _, p in chosen], stdout=subprocess.PIPE, text=True).stdout
    rows = total_ms = 0
    tables = []
    for line in out.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[0].isdigit():
            rows += int(parts[0])
            total_ms += float(parts[4])
            tables.append((int(parts[1]), parts[5]))
    size = sum(s for s, _ in chosen)
    print("memory, the 50 largest executable ELF objects here (%.0f MB of files, %d with CFI): "
          "%d rows = %.1f MB of BPF memory (%.2f%% of the files), built in %.1f s" %
          (size / 1e6, len(tables), rows, rows * 8 / 1e6, 100.0 * rows * 8 / size,
           total_ms / 1e3))
    for b, p in sorted(tables, reverse=True)[:5]:
        print("  %8.2f MB  %s" % (b / 1e6, p))
    sys.stdout.flush()


def perf_stacks(data, pid):
    """pid's user stacks from perf script: ({(frames...): samples}, symbols) with frames as
    (dso, address), return addresses as perf prints them (minus 1), and symbols
    {dso: {start: name}} from perf's sym+off."""
    out = subprocess.run(["perf", "script", "--no-inline", "-i", data, "--pid", str(pid)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    stacks = collections.Counter()
    symbols = collections.defaultdict(dict)
    for block in out.split("\n\n"):
        lines = block.strip().splitlines()
        frames = []
        for ln in lines[1:]:
            parts = ln.split()
            dso = parts[-1].strip("()")
            if dso == KERNEL or dso.startswith("[kernel") or len(parts) < 3:
                continue
            dso, addr = os.path.basename(dso), int(parts[0], 16)
            sym = parts[1]
            if "+0x" in sym:
                name, off = sym.rsplit("+0x", 1)
                symbols[dso][addr - int(off, 16)] = name
            frames.append((dso, addr))
        if frames:
            stacks[tuple(frames)] += 1
    return stacks, symbols


def our_stacks(prof, minus=1):
    """tailprof's user stacks of prof in the same form as perf_stacks(), with callers' return
    addresses less minus (1: as older perf prints them; perf 6.x on 6.18 prints them as they
    are)."""
    stacks = collections.Counter()
    for s in prof.samples:
        fr = [f for f in s["frames"] if f["mapping"] != KERNEL]
        key = []
        for i, f in enumerate(fr):
            if f["function"] == "[truncated]":
                key.append(("[truncated]", 0))
                continue
            key.append((os.path.basename(f["mapping"] or "?"),
                        f["address"] - (minus if i else 0)))
        if key:
            stacks[tuple(key)] += s["values"][0]
    return stacks


def by_function(stacks, symbols):
    """The same stacks with each frame named by the function (perf's symbol) holding it."""
    starts = {dso: sorted(v) for dso, v in symbols.items()}
    out = collections.Counter()
    for k, w in stacks.items():
        key = []
        for dso, addr in k:
            st = starts.get(dso, [])
            i = bisect.bisect_right(st, addr) - 1
            key.append((dso, symbols[dso][st[i]] if i >= 0 else "%#x" % addr))
        out[tuple(key)] += w
    return out


def share_found(ours, perf):
    total = sum(ours.values())
    return 100.0 * sum(w for k, w in ours.items() if k in perf) / max(total, 1)


def bench_agreement():
    d = Daemon("--frequency", str(FREQ))
    tmp = tempfile.mkdtemp()
    data = os.path.join(tmp, "perf.data")
    try:
        time.sleep(2)
        p = subprocess.Popen([os.path.join(build_dir(), "tests", "workloads", "tp_qsort"),
                              str(SECONDS + 2)], stdout=subprocess.PIPE, text=True)
        pid = int(p.stdout.readline())
        time.sleep(0.5)
        r = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(FREQ),
                            "--call-graph", "dwarf", "-p", str(pid), "-o", data, "--", "sleep",
                            str(SECONDS)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
        if not os.path.exists(data):
            sys.exit("perf record failed (%d): %s" % (r.returncode, r.stderr))
        p.wait()
        time.sleep(1.5)
        prof, _ = d.profile("pid=%d&last=5m" % pid)
    finally:
        d.stop()
    perf, symbols = perf_stacks(data, pid)
    # whichever way this perf prints return addresses
    ours = max((our_stacks(prof, m) for m in (1, 0)), key=lambda o: share_found(o, perf))
    f_perf, f_ours = by_function(perf, symbols), by_function(ours, symbols)
    print("agreement with perf --call-graph dwarf (libdw) on tp_qsort, both at %d Hz for %gs: "
          "%.1f%% of tailprof's %d samples have a stack perf has, frame by frame as functions "
          "(%d of %d distinct stacks); as exact addresses %.1f%% (perf: %d samples, %d distinct)"
          % (FREQ, SECONDS, share_found(f_ours, f_perf), sum(ours.values()),
             sum(1 for k in f_ours if k in f_perf), len(f_ours), share_found(ours, perf),
             sum(perf.values()), len(perf)))
    missing = sorted(((w, k) for k, w in f_ours.items() if k not in f_perf), reverse=True)[:3]
    for w, k in missing:
        print("  not in perf (%d samples): %s" % (w, " <- ".join(f[1] for f in k)[:300]))
    sys.stdout.flush()


def main():
    if os.geteuid() != 0:
        sys.exit("unwind.py: run as root")
    what = os.environ.get("TAILPROF_BENCH", "cost,memory,agreement").split(",")
    # memory last: reading every large file evicts the page cache the others use
    if "agreement" in what:
        bench_agreement()
    if "cost" in what:
        bench_cost()
    if "memory" in what:
        bench_memory()


if __name__ == "__main__":
    main()
