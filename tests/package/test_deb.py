#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The Debian package: builds it (packaging/build-deb.sh, lintian clean of errors), installs it
with dpkg without starting the service, runs tailprofd --version and tailprof --help, checks the
unit with systemd-analyze verify, starts the installed tailprofd with the unit's capability
bounding set (setpriv) and checks /proc/PID/status for the documented set, then purges it and
checks that nothing is left.

Usage: test_deb.py SOURCE_DIR BUILD_DIR. Outside CI, exits 77 (skip) when not root or a tool is
missing; with CI=true that is a failure."""
import grp
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from caps import KEPT, caps_of, status_caps, unit_setpriv  # noqa: E402

SRC, BUILD = sys.argv[1], sys.argv[2]
CI = os.environ.get("CI") == "true"
UNIT = "/lib/systemd/system/tailprofd.service"
POLICY = "/usr/sbin/policy-rc.d"
# the set tailprofd keeps (docs/deployment.md); CAP_SYS_ADMIN too where the kernel's uprobe PMU
# asks for it


def skip(why):
    if CI:
        sys.exit("FAIL: " + why + " (CI=true: no skips)")
    print("SKIP: " + why)
    sys.exit(77)


def run(*cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit("FAIL: %s exited %d:\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r.stdout


def installed():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "tailprof"], capture_output=True,
                       text=True)
    return "installed" in r.stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_caps():
    """The installed daemon under the unit's bounding and ambient sets."""
    port = free_port()
    state = tempfile.mkdtemp(prefix="tailprof_pkg_")
    log = tempfile.TemporaryFile()
    sock = os.path.join(state, "api.sock")
    # the unit's SupplementaryGroups= too: the socket's group comes from it
    groups = re.search(r"^SupplementaryGroups=(.*)$", open(UNIT).read(), re.M).group(1)
    p = subprocess.Popen(["setpriv", "--groups", groups.replace(" ", ",")] + unit_setpriv(UNIT) +
                         ["/usr/sbin/tailprofd", "--listen", "127.0.0.1:%d" % port,
                          "--state-dir", state, "--socket", sock], stdout=log,
                         stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 90
        while True:
            if p.poll() is not None or time.time() > deadline:
                log.seek(0)
                sys.exit("FAIL: tailprofd did not become healthy:\n" + log.read().decode())
            try:
                if urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port,
                                          timeout=2).status == 200:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        eff, prm, amb, inh = status_caps(p.pid)
        got = caps_of(prm)
        if eff != prm or amb or inh:
            sys.exit("FAIL: CapEff %x CapPrm %x CapAmb %x CapInh %x" % (eff, prm, amb, inh))
        if got not in (KEPT, KEPT | {"sys_admin"}):
            sys.exit("FAIL: capabilities after start-up %s, want %s (+ sys_admin where uprobes "
                     "need it)" % (sorted(got), sorted(KEPT)))
        log.seek(0)
        out = log.read().decode()
        kept = re.search(r"capabilities kept: (\S+)", out).group(1).split(",")
        if {c[4:] for c in kept} != got:
            sys.exit("FAIL: the log says %s, /proc says %s" % (kept, sorted(got)))
        print("ok   capabilities after start-up: %s" % ",".join(sorted(got)))
        st = os.lstat(sock)
        if (st.st_mode & 0o7777, st.st_gid) != (0o660, grp.getgrnam("tailprof").gr_gid):
            sys.exit("FAIL: the socket has mode %o gid %d, want 0660 and group tailprof" %
                     (st.st_mode & 0o7777, st.st_gid))
        print("ok   the API socket under the unit's settings: mode 0660, group tailprof")
    finally:
        p.terminate()
        p.wait(timeout=30)
        shutil.rmtree(state, ignore_errors=True)


def main():
    if os.geteuid() != 0:
        skip("not root: dpkg -i needs it")
    for tool in ("dpkg-buildpackage", "dh", "lintian", "systemd-analyze", "setpriv"):
        if not shutil.which(tool):
            skip(tool + " is missing (packaging/setup.sh test installs it)")
    if installed():
        skip("a tailprof package is installed already: not touching it")
    t0 = time.time()
    out = tempfile.mkdtemp(prefix="tailprof_deb_")
    deb = run(os.path.join(SRC, "packaging", "build-deb.sh"), out).strip().splitlines()[-1]
    print("ok   built %s (lintian: no errors) in %.0f s" % (os.path.basename(deb), time.time() - t0))

    # no service start: no systemd here as PID 1, and policy-rc.d says no where there is one
    own_policy = not os.path.exists(POLICY)
    if own_policy:
        with open(POLICY, "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
        os.chmod(POLICY, 0o755)
    try:
        run("dpkg", "-i", deb, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        files = [l for l in run("dpkg", "-L", "tailprof").splitlines() if l.strip()]
        for f in ("/usr/sbin/tailprofd", "/usr/bin/tailprof", UNIT, "/etc/tailprof/tailprofd.conf",
                  "/usr/share/man/man8/tailprofd.8.gz", "/usr/share/man/man1/tailprof.1.gz",
                  "/usr/share/bash-completion/completions/tailprof"):
            if f not in files:
                sys.exit("FAIL: %s is not in the package" % f)
        if "/etc/tailprof/tailprofd.conf" not in run("dpkg-query", "-W", "-f=${Conffiles}",
                                                     "tailprof"):
            sys.exit("FAIL: the configuration is not a conffile")
        run("getent", "group", "tailprof")
        version = run("/usr/sbin/tailprofd", "--version")
        if "0." not in version:
            sys.exit("FAIL: tailprofd --version: " + version)
        if "Subcommands" not in run("/usr/bin/tailprof", "--help"):
            sys.exit("FAIL: tailprof --help")
        run("systemd-analyze", "verify", UNIT)
        print("ok   installed; tailprofd --version, tailprof --help, systemd-analyze verify")
        check_caps()
    finally:
        if installed() or subprocess.run(["dpkg", "-s", "tailprof"],
                                         capture_output=True).returncode == 0:
            run("dpkg", "-P", "tailprof")
        if own_policy:
            os.unlink(POLICY)
        shutil.rmtree(out, ignore_errors=True)
    left = [f for f in files if os.path.exists(f) and not os.path.isdir(f)]
    left += [d for d in ("/etc/tailprof", "/var/lib/tailprof") if os.path.exists(d)]
    left += [d for d in files if os.path.isdir(d) and "tailprof" in d]
    if left:
        sys.exit("FAIL: left after purge: %s" % left)
    if subprocess.run(["getent", "group", "tailprof"], capture_output=True).returncode == 0:
        sys.exit("FAIL: the tailprof group is left after purge")
    print("ok   purged: nothing left (%d paths checked); %.0f s in all" % (len(files),
                                                                         time.time() - t0))


main()
