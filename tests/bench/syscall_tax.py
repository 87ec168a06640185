#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The per-syscall tax: what one system call costs a program with tailprofd running, against
the same call without it. All-in (always_on.py) counts the run time of tailprofd's BPF programs;
this counts what the program pays around them too. A program on a syscall tracepoint
(raw_tp/sys_exit: on kernels with neither the task work nor BPF trampolines for fexit/schedule,
tailprofd's way to take off-CPU user stacks on the way back to user space) sends every syscall
of every thread through the kernel's slow exit path; BPF statistics add two clock reads to every run of every BPF program on the host.

Each round runs tp_bench_syscalls (getppid() COUNT times, pinned to the last CPU, the median of
5 runs) in four setups, in turn: no tailprofd; tailprofd at its defaults; with --bpf-stats=off;
with the scheduler programs forced off (TAILPROF_FEATURES_OFF=offcpu: no sched_switch, no
sys_exit). Prints each setup's median ns per call and, paired within each round, its difference
from no tailprofd, with what that costs a host at 10,000 and 100,000 syscalls a second (as a
share of one CPU). Asserts nothing. Refuses to start while another tailprofd runs or
kernel.bpf_stats_enabled is on (either would be in every setup); a SIGINT or SIGTERM stops the
tailprofd it started.

Usage (root): tests/bench/syscall_tax.py [ROUNDS] [COUNT]  (default 5 rounds, 1,000,000 calls)"""
import os
import signal
import statistics
import subprocess
import sys
import time

from common import build_dir, daemon

# name, tailprofd's environment (None: no tailprofd) and flags
SETUPS = [("none", None, []), ("defaults", {}, []), ("bpf-stats off", {}, ["--bpf-stats=off"]),
          ("no offcpu", {"TAILPROF_FEATURES_OFF": "offcpu"}, [])]
SETTLE = 2  # seconds after tailprofd is healthy


def calls_ns(count):
    """Median ns per getppid() of 5 runs of tp_bench_syscalls on the last CPU."""
    cpu = str(os.cpu_count() - 1)
    exe = os.path.join(build_dir(), "tests", "bench", "tp_bench_syscalls")
    runs = [float(subprocess.check_output(["taskset", "-c", cpu, exe, str(count)]))
            for _ in range(5)]
    return statistics.median(runs)


def others():
    """Why the figures would be wrong now, or None: another tailprofd (its sys_exit program taxes
    the runs without tailprofd too), or BPF statistics held on by someone else (then they are on
    in every setup)."""
    mine = os.getpid()
    pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != mine]
    for p in pids:
        try:
            with open("/proc/%s/comm" % p) as f:
                if f.read().strip() == "tailprofd":
                    return "another tailprofd runs (pid %s): stop it first" % p
        except OSError:
            pass
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled") as f:
            if f.read().strip() != "0":
                return "kernel.bpf_stats_enabled is on: set it to 0 first"
    except OSError:
        pass
    return None


def run(tailprofd, rounds, count):
    ns = {name: [] for name, _, _ in SETUPS}
    returns = set()
    for r in range(rounds):
        # alternate the order, so that a drift of the host does not favour one setup
        order = SETUPS if r % 2 == 0 else SETUPS[::-1]
        for name, env, args in order:
            d = daemon.Daemon(tailprofd, *args, env=env) if env is not None else None
            try:
                if d:
                    time.sleep(SETTLE)
                    if name == "defaults":
                        returns.add(d.json("/api/v1/status")["offcpu_return"])
                ns[name].append(calls_ns(count))
            finally:
                if d:
                    d.stop()
        print("round %d: %s" % (r + 1, ", ".join("%s %.0f ns" % (n, ns[n][-1])
                                                 for n, _, _ in SETUPS)))
        sys.stdout.flush()
    print("\ntailprofd's off-CPU user stacks on the way back to user space: %s"
          % ", ".join(sorted(returns)))
    print("%-13s %12s %14s %24s" % ("setup", "ns a call", "tax (paired)", "at 10k / 100k calls/s"))
    for name, _, _ in SETUPS:
        tax = statistics.median(a - b for a, b in zip(ns[name], ns["none"]))
        cost = "" if name == "none" else "%.2f%% / %.2f%%" % (tax * 1e4 / 1e7, tax * 1e5 / 1e7)
        print("%-13s %12.1f %14s %24s" % (name, statistics.median(ns[name]),
                                          "" if name == "none" else "%+.1f" % tax, cost))


def main():
    try:
        rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
        count = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000
    except ValueError:
        rounds = count = 0
    if rounds < 1 or count < 1 or len(sys.argv) > 3:
        sys.exit("usage: syscall_tax.py [ROUNDS] [COUNT]: whole numbers of at least 1 "
                 "(default 5 rounds of 1000000 calls)")
    if os.geteuid() != 0:
        sys.exit("syscall_tax.py: run it as root (it starts tailprofd)")
    tailprofd = os.path.join(build_dir(), "daemon", "tailprofd")
    for path in (tailprofd, os.path.join(build_dir(), "tests", "bench", "tp_bench_syscalls")):
        if not os.access(path, os.X_OK):
            sys.exit("syscall_tax.py: no %s: build first (packaging/setup.sh build), or point "
                     "TAILPROF_BUILD_DIR at the build" % path)
    why = others()
    if why:
        sys.exit("syscall_tax.py: %s" % why)
    # a SIGTERM stops the tailprofd of the moment too (run()'s finally), as Ctrl-C does
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        run(tailprofd, rounds, count)
    except KeyboardInterrupt:
        sys.exit("syscall_tax.py: interrupted")
    except (subprocess.CalledProcessError, RuntimeError) as e:
        sys.exit("syscall_tax.py: %s" % e)

if __name__ == "__main__":
    main()
