#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""tailprofd inside the sandbox of packaging/systemd/tailprofd.service, reproduced without
systemd as PID 1: a mount namespace (unshare --mount) where every file system is read-only but
/proc, /sys, /dev and the state directory (ProtectSystem=strict; ProtectHome=read-only makes
/home read-only too, which strict already does), and the unit's capability bounding and ambient
sets (setpriv). Checks that it runs there with the documented capabilities, writes its state
directory, and still names a binary under /home and a JIT's perf map in a process's /tmp.

Usage: test_sandbox.py BUILD_DIR. Outside CI, exits 77 (skip) when not root or BPF cannot load;
with CI=true that is a failure."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from caps import KEPT, caps_of, status_caps, unit_setpriv  # noqa: E402
import daemon  # noqa: E402
from runner import require_bpf, run_tests, start_daemons  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
UNIT = os.path.join(ROOT, "packaging", "systemd", "tailprofd.service")
DAEMON = os.path.join(BUILD, "daemon", "tailprofd")
WL = os.path.join(BUILD, "tests", "workloads")
FREQ = 997
HOME_DIR = "/home/tailprof-sandbox-%d" % os.getpid()
STATE = "/var/tmp/tailprof-sandbox-state-%d" % os.getpid()
RUN_DIR = "/run/tailprof"  # the unit's RuntimeDirectory=, where the default --socket lives
made_run_dir = []


def unit_setting(key):
    m = re.search(r"^%s=(.*)$" % key, open(UNIT).read(), re.M)
    assert m, "%s is not in %s" % (key, UNIT)
    return m.group(1).split()


class SandboxedDaemon(daemon.Daemon):
    """tailprofd under the unit's file-system protections and capabilities."""

    def __init__(self, *args):
        assert unit_setting("ProtectSystem") == ["strict"]
        assert unit_setting("ProtectHome") == ["read-only"]
        # Each top-level directory of the root read-only (recursively bound, then its top mount
        # remounted read-only), but the API file systems; then the state directory writable.
        script = (
            "set -e; mount --make-rprivate /; "
            "for d in /*; do case $d in /proc|/sys|/dev) continue;; esac; "
            "[ -d \"$d\" ] && [ ! -L \"$d\" ] || continue; "
            "mount --rbind \"$d\" \"$d\"; mount -o remount,bind,ro \"$d\"; done; "
            "mount --bind {state} {state}; mount -o remount,bind,rw {state}; "
            # RuntimeDirectory=tailprof: a writable /run/tailprof of the sandbox's own
            "mount -t tmpfs -o mode=0755 tailprof-run {run}; "
            "exec {setpriv} \"$@\""
        ).format(state=STATE, run=RUN_DIR, setpriv=" ".join(unit_setpriv(UNIT)))
        assert unit_setting("RuntimeDirectory") == [os.path.basename(RUN_DIR)]
        os.makedirs(STATE, exist_ok=True)
        if not os.path.isdir(RUN_DIR):
            os.mkdir(RUN_DIR)  # the mount point; the sandbox mounts its own directory there
            made_run_dir.append(RUN_DIR)
        # daemon.Daemon runs BINARY --listen ADDR ARGS: BINARY is a script that builds the
        # sandbox and runs tailprofd in it with those arguments
        self.wrapper = os.path.join(STATE, "sandboxed-tailprofd")
        with open(self.wrapper, "w") as f:
            f.write("#!/bin/sh\nexec unshare --mount -- sh -c '%s' sh %s \"$@\" --state-dir %s\n"
                    % (script, DAEMON, STATE))
        os.chmod(self.wrapper, 0o755)
        super().__init__(self.wrapper, *args, default_socket=True)


def daemon_pid(d):
    """The pid of tailprofd itself (unshare and sh exec into it: the same process)."""
    with open("/proc/%d/comm" % d.proc.pid) as f:
        assert f.read().strip() == "tailprofd"
    return d.proc.pid


def names(sample):
    return [f["function"] for f in sample["frames"]]


def wait_drained(d):
    since = time.time_ns()
    time.sleep(1.5)
    deadline = time.time() + 30
    while max(w["end_unix_ns"] for w in d.json("/api/v1/windows?last=1m")["windows"]) < since:
        assert time.time() < deadline, "no drain in 30 s"
        time.sleep(0.2)


def test_capabilities_and_read_only_root(d):
    eff, prm, amb, inh = status_caps(daemon_pid(d))
    got = caps_of(prm)
    print("  capabilities after start-up: %s" % ",".join(sorted(got)))
    assert eff == prm and not amb and not inh, (hex(eff), hex(prm), hex(amb), hex(inh))
    assert got in (KEPT, KEPT | {"sys_admin"}), sorted(got)
    # the sandbox is real: its root is read-only where the daemon looks
    mounts = open("/proc/%d/mountinfo" % daemon_pid(d)).read()
    ro = lambda path: any(l.split()[4] == path and "ro" in l.split()[5].split(",")
                          for l in mounts.splitlines())
    assert ro("/usr") and ro("/home") and ro("/tmp"), "not read-only in the sandbox"
    assert not ro(STATE), "the state directory must stay writable"


def test_state_directory_written(d):
    # a snapshot needs closed windows with samples (422 until then): run after the workloads
    deadline = time.time() + 30
    while True:
        req = urllib.request.Request(d.url + "/api/v1/snapshots?name=sandbox&last=1m",
                                     method="POST", data=b"")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                assert r.status in (200, 201), r.status
                break
        except urllib.error.HTTPError as e:
            body = e.read()
            assert e.code == 422 and time.time() < deadline, (e.code, body)
            time.sleep(1)
    files = [os.path.join(dp, f)[len(STATE):] for dp, _, fs in os.walk(STATE) for f in fs]
    print("  state directory holds %s" % sorted(files))
    assert any("sandbox" in f for f in files), files


def test_binary_under_home_and_jit_perf_map(d):
    os.makedirs(HOME_DIR, exist_ok=True)
    app = os.path.join(HOME_DIR, "tp_hotcold")
    shutil.copy(os.path.join(WL, "tp_hotcold"), app)
    hot = subprocess.Popen([app, "2"], stdout=subprocess.PIPE, text=True)
    jit = subprocess.Popen([os.path.join(WL, "tp_jit"), "1.5", "1.5"], stdout=subprocess.PIPE,
                           text=True)
    hot_pid, jit_pid = int(hot.stdout.readline()), int(jit.stdout.readline())
    hot.wait()
    jit.wait()
    wait_drained(d)
    prof, _ = d.profile("last=1m&pid=%d" % hot_pid)
    ss = prof.samples
    named = sum(s["values"][0] for s in ss if "hot_function" in names(s))
    maps = {f["mapping"] for s in ss for f in s["frames"] if f["function"] == "hot_function"}
    print("  /home binary: hot_function in %d of %d samples, mapping %s" % (
        named, prof.total(), sorted(maps)))
    assert prof.total() > 0 and named >= 0.6 * prof.total(), (named, prof.total())
    assert maps == {app}, maps
    prof, _ = d.profile("last=1m&pid=%d" % jit_pid)
    ss = prof.samples
    leaf = sum(s["values"][0] for s in ss if names(s)[0] in ("jit_first_name", "jit_second_name"))
    print("  JIT leaf named from its perf map in %d of %d samples" % (leaf, prof.total()))
    assert prof.total() > 0 and leaf >= 0.5 * prof.total(), (leaf, prof.total())
    assert {f["mapping"] for s in ss for f in s["frames"]
            if f["function"].startswith("jit_")} == {"/tmp/perf-%d.map" % jit_pid}


def test_socket_in_the_runtime_directory(d):
    # the sandbox's /run/tailprof, reached from outside through the daemon's root
    sock = "/proc/%d/root%s/tailprofd.sock" % (daemon_pid(d), RUN_DIR)
    r = subprocess.run([os.path.join(BUILD, "cli", "tailprof"), "--server", "unix:" + sock,
                        "status", "--json"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert json.loads(r.stdout)["pid"] == daemon_pid(d)
    assert "and unix:%s/tailprofd.sock" % RUN_DIR in d.output(), d.output()[-2000:]
    print("  the API on %s/tailprofd.sock inside the sandbox" % RUN_DIR)


def cleanup():
    shutil.rmtree(HOME_DIR, ignore_errors=True)
    shutil.rmtree(STATE, ignore_errors=True)
    for path in made_run_dir:
        try:
            os.rmdir(path)
        except OSError:
            pass


def main():
    require_bpf()
    for tool in ("unshare", "setpriv"):
        assert shutil.which(tool), "%s is missing (util-linux)" % tool
    d = start_daemons(lambda: SandboxedDaemon("--frequency", str(FREQ), "--window", "1s"))
    run_tests([test_capabilities_and_read_only_root, test_binary_under_home_and_jit_perf_map,
               test_state_directory_written, test_socket_in_the_runtime_directory], [d], cleanup)


if __name__ == "__main__":
    main()
