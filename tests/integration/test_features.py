#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Integration tests of the features report: `tailprofd --check`, the status's `features`,
tailprof_feature_enabled on /metrics, the start-up log, and TAILPROF_FEATURES_OFF's fallbacks
(task_work -> sys_exit with off-CPU stacks still there; offcpu off with CPU sampling still
there). Real BPF as root; what depends on the kernel is read from the kernel.

Usage: test_features.py BUILD_DIR. Outside CI, exits 77 (skip) when not root or BPF cannot load;
with CI=true that is a failure."""
import json
import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from runner import require_bpf, run_tests, start_daemons  # noqa: E402
from task_work_probe import (NO_KFUNC, expected_return, fexit_verdict,  # noqa: E402
                             task_work_verdict)
from test_daemon import (BUILD, DAEMON, Daemon, bpf_prog_ids, names, run,  # noqa: E402
                         start_workload, wait_drained)

FREQ = 199
FEATURES = ["cpu_sampling", "eh_frame_unwinding", "offcpu", "runq_latency", "task_work", "stages",
            "usdt_semaphores", "gc", "bpf_stats", "request_accounting", "python_frames",
            "mmap_records"]
FORCED = "forced off by TAILPROF_FEATURES_OFF (tests)"
# on every kernel from Debian 12's 6.1 on, and here
ALWAYS_ON = {"cpu_sampling": "perf_event/cpu-clock", "eh_frame_unwinding": "bpf_loop",
             "offcpu": "tp_btf/sched_switch", "runq_latency": "tp_btf/sched_switch",
             "stages": "uprobe", "bpf_stats": "BPF_ENABLE_STATS",
             "request_accounting": "sum_exec_runtime", "python_frames": "bpf_loop",
             "mmap_records": "perf_event/dummy"}


def check_task_work_fallback(reason):
    """The task_work capability's reason on a fallback: the missing kfunc, or, where the kernel
    has it and refuses it in a switch program (task_work_probe says so apart from tailprofd),
    the verifier's own words; then, on sys_exit, why fexit/schedule did not load; and what runs
    instead."""
    accepted, why = task_work_verdict(BUILD)
    assert not accepted, reason
    if why == NO_KFUNC:
        assert "bpf_task_work_schedule_resume" in reason and "6.18" in reason, reason
    else:
        assert reason.startswith("the verifier rejected sched_switch_tw: " + why), (reason, why)
    if fexit_verdict(BUILD):
        assert "instead a program on the return from schedule() (fexit/schedule)" in reason, \
            reason
    else:
        assert "the kernel refuses fexit programs on schedule()" in reason, reason
        assert "raw_tp/sys_exit" in reason, reason


def has_ref_ctr():
    return os.path.exists("/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset")


def check_table(text):
    """{name: (state, variant, reason)} of --check's table: its header, then one line per
    capability in the documented order."""
    lines = text.splitlines()
    assert lines[0].startswith("tailprofd ") and " --check on Linux " + os.uname().release \
        in lines[0], lines[0]
    assert lines[1].split() == ["FEATURE", "STATE", "VARIANT", "REASON"], lines[1]
    rows = {}
    for line in lines[2:2 + len(FEATURES)]:
        name, state, variant, reason = line.split(None, 3)
        rows[name] = (state, variant, reason)
    assert list(rows) == FEATURES, lines
    return rows


def prog_names(pid):
    """Names of the BPF programs process pid holds."""
    out = []
    for i in bpf_prog_ids(pid):
        r = run(["bpftool", "-j", "prog", "show", "id", str(i)])
        if r.returncode == 0:
            out.append(json.loads(r.stdout).get("name", ""))
    return out


def own_daemon(env, *args):
    os.environ.update(env)
    try:
        return Daemon("--frequency", str(FREQ), "--window", "1s", "--retention", "10m", *args)
    finally:
        for k in env:
            del os.environ[k]


# ---- tests ----

def test_check_loads_everything_and_does_not_listen():
    # its listen address taken: --check must not try to listen on it
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run([DAEMON, "--check", "--listen", "127.0.0.1:%d" % port], timeout=60)
    print("  " + r.stdout.replace("\n", "\n  "))
    assert r.returncode == 0, (r.stdout, r.stderr)
    rows = check_table(r.stdout)
    for name, variant in ALWAYS_ON.items():
        assert rows[name][:2] == ("on", variant), (name, rows[name])
        assert rows[name][2] == "-", (name, rows[name])
    tw_ok, tw_why = task_work_verdict(BUILD)
    assert rows["task_work"][:2] == ("on", expected_return(BUILD)), rows
    if not tw_ok:
        check_task_work_fallback(rows["task_work"][2])
    assert rows["usdt_semaphores"][0] == ("on" if has_ref_ctr() else "off"), rows
    assert rows["gc"] == ("on", "usdt+uprobe", "-"), rows
    if tw_ok or tw_why == NO_KFUNC:
        assert r.stdout.rstrip().endswith("every object loaded"), r.stdout
    else:
        # the refused variant's log is printed (with its fallback's where that was refused
        # too: "programs sched_switch_tw, then sched_return"), and the fallback that runs does
        # not fail the check
        assert re.search(r"sched_bpf, programs? sched_switch_tw[^\n]* \(task_work\): the "
                         r"verifier rejected (it|each)", r.stdout), r.stdout
        assert r.stdout.rstrip().endswith("its fallback does the same job"), r.stdout


def test_check_follows_flags_and_the_test_switch():
    env = dict(os.environ, TAILPROF_FEATURES_OFF="offcpu,bpf_stats")
    r = run([DAEMON, "--check", "--gc", "off", "--unwind=fp"], env=env, timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)
    rows = check_table(r.stdout)
    assert rows["gc"] == ("off", "-", "--gc off"), rows
    assert rows["eh_frame_unwinding"] == ("off", "frame_pointers", "--unwind=fp"), rows
    assert rows["offcpu"] == ("off", "-", FORCED), rows
    assert rows["runq_latency"] == ("off", "-", FORCED), rows
    assert rows["task_work"] == ("off", "-", "off-CPU capture is off"), rows
    assert rows["bpf_stats"] == ("off", "-", FORCED), rows
    assert rows["cpu_sampling"][0] == "on" and rows["stages"][0] == "on", rows
    assert rows["python_frames"][0] == "on", rows
    r = run([DAEMON, "--check", "--python-frames=off"], timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert check_table(r.stdout)["python_frames"] == ("off", "-", "--python-frames=off"), r.stdout
    env["TAILPROF_FEATURES_OFF"] = "python_frames"
    r = run([DAEMON, "--check"], env=env, timeout=60)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert check_table(r.stdout)["python_frames"] == ("off", "-", FORCED), r.stdout
    # a name that cannot be forced off is a usage error that names it
    env["TAILPROF_FEATURES_OFF"] = "offcpu,cpu_sampling"
    r = run([DAEMON, "--check"], env=env, timeout=60)
    assert r.returncode == 2 and "'cpu_sampling' cannot be forced off" in r.stderr, r
    assert r.stdout == "", r.stdout


def test_status_features(d):
    st = d.json("/api/v1/status")
    f = st["features"]
    assert list(f) == FEATURES, list(f)
    for name, v in f.items():
        assert sorted(v) == ["enabled", "reason", "variant"], (name, v)
        assert isinstance(v["enabled"], bool), (name, v)
        assert isinstance(v["variant"], str) and isinstance(v["reason"], str), (name, v)
    for name, variant in ALWAYS_ON.items():
        assert f[name] == {"enabled": True, "variant": variant, "reason": ""}, (name, f[name])
    tw = f["task_work"]
    if task_work_verdict(BUILD)[0]:
        assert tw == {"enabled": True, "variant": "task_work", "reason": ""}, tw
    else:
        assert tw["enabled"] and tw["variant"] == expected_return(BUILD), tw
        check_task_work_fallback(tw["reason"])
    assert f["usdt_semaphores"]["enabled"] == has_ref_ctr(), f["usdt_semaphores"]
    assert f["gc"] == {"enabled": True, "variant": "usdt+uprobe", "reason": ""}, f["gc"]
    # the keys from before the report agree with it
    assert st["sched"] is True and st["offcpu_return"] == tw["variant"], st
    assert st["gc"]["enabled"] is True, st["gc"]


def test_metrics_and_log_say_the_same(d):
    f = d.json("/api/v1/status")["features"]
    lines = [l for l in d.get("/metrics")[2].decode().splitlines()
             if l.startswith("tailprof_feature_enabled")]
    assert lines == ['tailprof_feature_enabled{feature="%s"} %d' % (n, f[n]["enabled"])
                     for n in FEATURES], lines
    # one start-up line per capability, none a warning on this kernel
    out = d.output()
    for n in FEATURES:
        mine = [l for l in out.splitlines() if l.startswith("tailprofd: feature %s: " % n)]
        assert len(mine) == 1, (n, out[-3000:])
        want = "tailprofd: feature %s: %s%s" % (n, "on" if f[n]["enabled"] else "off",
                                                ", " + f[n]["variant"] if f[n]["variant"] else "")
        assert mine[0].startswith(want), (mine, want)
    assert "warning: feature" not in out, out[-3000:]


def test_task_work_forced_off_falls_back_to_sys_exit():
    d = own_daemon({"TAILPROF_FEATURES_OFF": "task_work"})
    try:
        st = d.json("/api/v1/status")
        assert st["features"]["task_work"] == {"enabled": True, "variant": "sys_exit",
                                               "reason": FORCED}, st["features"]
        assert st["offcpu_return"] == "sys_exit", st
        assert "sys_exit" in prog_names(d.proc.pid), prog_names(d.proc.pid)
        assert st["features"]["offcpu"]["enabled"], st["features"]
        # asked for: said at info, not as a warning
        assert "tailprofd: feature task_work: on, sys_exit: " + FORCED in d.output(), \
            d.output()
        # a first run builds the unwind tables of libc and the workload in this new daemon (its
        # first blocks would be walked before they are: test_sched's first-block test covers
        # that); the measured run is about the fallback's stacks
        p, _ = start_workload("tp_offcpu", 1)
        p.communicate()
        m0 = d.metrics()
        p, pid = start_workload("tp_offcpu", 3)
        measured = {}
        for line in p.stdout:
            name, tid, ns = line.split()
            measured[name] = (int(tid), int(ns))
        p.wait()
        wait_drained()
        prof, _ = d.profile("type=offcpu&last=1m&pid=%d" % pid)
        tid, ns = measured["nap"]
        nap = [s for s in prof.samples if int(s["labels"]["tid"]) == tid]
        got = sum(s["values"][1] for s in nap)
        print("  nap tid %d: off-CPU %.3f s, blocked %.3f s" % (tid, got / 1e9, ns / 1e9))
        assert abs(got - ns) <= 0.1 * ns, (got, ns)
        # where it slept: the kernel's nanosleep under the thread's own functions
        named = sum(s["values"][1] for s in nap if "hrtimer_nanosleep" in names(s) and
                    "nap_here" in names(s) and "napper" in names(s))
        print("  %.1f%% of it under nap_here <- napper" % (100.0 * named / max(got, 1)))
        # the leaf alone, marked cut: walked before the process's tables were loaded
        early = sum(s["values"][1] for s in nap if names(s)[-1] == "[truncated]" and
                    "nap_here" not in names(s))
        assert named >= 0.9 * got, "%.1f%% named, %.1f%% before its tables: %s" % (
            100.0 * named / max(got, 1), 100.0 * early / max(got, 1), [names(s) for s in nap[:3]])
        # blocks whose stack was not taken at switch-out got it from sys_exit, none from a
        # task work
        m1 = d.metrics()
        path = 'tailprof_offcpu_user_stack_path_total{path="%s"}'
        assert m1[path % "sys_exit"] > m0[path % "sys_exit"], m1
        assert m1[path % "task_work"] == 0, m1
    finally:
        d.stop()


def test_offcpu_forced_off_keeps_cpu_sampling():
    d = own_daemon({"TAILPROF_FEATURES_OFF": "offcpu"})
    try:
        st = d.json("/api/v1/status")
        f = st["features"]
        for n in ("offcpu", "runq_latency"):
            assert f[n] == {"enabled": False, "variant": "", "reason": FORCED}, f
        assert not f["task_work"]["enabled"], f
        assert f["cpu_sampling"]["enabled"] and f["eh_frame_unwinding"]["enabled"], f
        assert st["sched"] is False and st["offcpu_return"] == "none", st
        progs = prog_names(d.proc.pid)
        assert "perf_sample" in progs and "sched_switch" not in progs, progs
        m = d.metrics()
        assert m['tailprof_feature_enabled{feature="offcpu"}'] == 0, m
        assert m['tailprof_feature_enabled{feature="cpu_sampling"}'] == 1, m
        p, pid = start_workload("tp_hotcold", 2)
        p.wait()
        wait_drained()
        prof, _ = d.profile("pid=%d&last=2m" % pid)
        hot = sum(s["values"][0] for s in prof.samples if "hot_function" in names(s))
        print("  %d CPU samples, %d in hot_function" % (prof.total(), hot))
        assert hot >= 0.5 * FREQ * 2 * 0.75, (hot, prof.total())
        # the workload slept too (its exit's waits): no off-CPU samples while that is off
        prof, _ = d.profile("type=offcpu&last=1m")
        assert prof.samples == [], [names(s) for s in prof.samples[:3]]
        assert "warning: feature offcpu" not in d.output(), d.output()
    finally:
        d.stop()


def test_mmap_records_forced_off_reads_proc():
    """Without the mmap records a new process's maps are read from /proc, and its samples are
    named as well; with them (the shared daemon) the same program's maps come from the
    records."""
    d = own_daemon({"TAILPROF_FEATURES_OFF": "mmap_records"})
    try:
        f = d.json("/api/v1/status")["features"]
        assert f["mmap_records"] == {"enabled": False, "variant": "proc_maps",
                                     "reason": FORCED}, f
        m0 = d.metrics()
        assert 'tailprof_maps_reads_total{source="records"}' not in m0, m0
        p, pid = start_workload("tp_hotcold", 1)
        p.wait()
        wait_drained()
        m1 = d.metrics()
        reads = m1['tailprof_maps_reads_total{source="file"}'] - \
            m0['tailprof_maps_reads_total{source="file"}']
        prof, _ = d.profile("pid=%d&last=2m" % pid)
        hot = sum(s["values"][0] for s in prof.samples if "hot_function" in names(s))
        print("  %d maps reads from /proc; %d of %d samples in hot_function" % (
            reads, hot, prof.total()))
        assert reads >= 1, (m0, m1)
        assert hot >= 0.5 * FREQ * 0.75, (hot, prof.total())
    finally:
        d.stop()


def stats_fds(pid):
    """tailprofd's BPF_ENABLE_STATS handles: the anonymous inodes that hold statistics on."""
    fds = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:bpf-stats":
                fds.append(fd)
        except OSError:
            pass
    return fds


def test_bpf_stats_off_by_flag(d):
    """--bpf-stats=off: tailprofd holds no statistics handle (the shared daemon holds one), says
    so at info, and profiles as before; a value other than on or off stops it at once. The
    config's [daemon] bpf_stats does the same, and the flag wins over it."""
    assert len(stats_fds(d.proc.pid)) == 1, stats_fds(d.proc.pid)
    r = run([DAEMON, "--bpf-stats=maybe"], timeout=10)
    assert r.returncode == 2 and "--bpf-stats 'maybe': give on or off" in r.stderr, r
    # the config key, bad and good, and the flag over it (--check: nothing attached)
    conf = os.path.join(BUILD, "test_features_bpf_stats.conf")
    for value, flags, want in (("maybe", [], None), ("off", [], "off"),
                               ("off", ["--bpf-stats=on"], "on")):
        with open(conf, "w") as f:
            f.write("[daemon]\nbpf_stats = %s\n" % value)
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            r = run([DAEMON, "--check", "-c", conf, "--socket", "none", "--listen",
                     "127.0.0.1:%d" % busy.getsockname()[1]] + flags, timeout=60)
        if want is None:
            assert r.returncode == 2 and "%s:2: bpf_stats 'maybe': give on or off" % conf \
                in r.stderr, r
        else:
            assert r.returncode == 0, r
            assert check_table(r.stdout)["bpf_stats"][0] == want, (value, flags, r.stdout)
    os.unlink(conf)
    off = own_daemon({}, "--bpf-stats=off")
    try:
        f = off.json("/api/v1/status")["features"]
        assert f["bpf_stats"] == {"enabled": False, "variant": "",
                                  "reason": "--bpf-stats=off (or [daemon] bpf_stats = off): the "
                                            "self-overhead figures read 0 unless another "
                                            "process holds BPF statistics on"}, f
        assert stats_fds(off.proc.pid) == [], stats_fds(off.proc.pid)
        m = off.metrics()
        assert m['tailprof_feature_enabled{feature="bpf_stats"}'] == 0, m
        out = off.output()
        assert "tailprofd: feature bpf_stats: off: --bpf-stats=off" in out, out[-3000:]
        assert "warning: feature bpf_stats" not in out, out[-3000:]
        p, pid = start_workload("tp_hotcold", 1)
        p.wait()
        wait_drained()
        prof, _ = off.profile("pid=%d&last=2m" % pid)
        hot = sum(s["values"][0] for s in prof.samples if "hot_function" in names(s))
        print("  %d of %d samples in hot_function without BPF statistics" % (hot, prof.total()))
        assert hot >= 0.5 * FREQ * 0.75, (hot, prof.total())
    finally:
        off.stop()


def main():
    require_bpf()
    d = start_daemons(lambda: Daemon("--frequency", str(FREQ), "--window", "1s",
                                     "--retention", "10m"))
    tests = [test_status_features, test_metrics_and_log_say_the_same,
             test_check_loads_everything_and_does_not_listen,
             test_check_follows_flags_and_the_test_switch,
             test_task_work_forced_off_falls_back_to_sys_exit,
             test_offcpu_forced_off_keeps_cpu_sampling,
             test_mmap_records_forced_off_reads_proc, test_bpf_stats_off_by_flag]
    run_tests(tests, [d])


if __name__ == "__main__":
    main()
