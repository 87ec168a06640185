# SPDX-License-Identifier: GPL-2.0-only
"""The capabilities tailprofd keeps after start-up (docs/deployment.md), for the tests that read
them back from /proc/PID/status."""
import re

# what it keeps; sys_admin besides where the kernel asks it for uprobes
KEPT = {"bpf", "perfmon", "sys_ptrace", "dac_read_search", "checkpoint_restore", "syslog"}
CAP_BITS = {"dac_read_search": 2, "sys_ptrace": 19, "sys_admin": 21, "syslog": 34,
            "perfmon": 38, "bpf": 39, "checkpoint_restore": 40}


def caps_of(mask):
    """The names of the capabilities of mask that KEPT or sys_admin name, and "other" for any
    more."""
    return {name for name, bit in CAP_BITS.items() if mask >> bit & 1} | \
        ({"other"} if mask & ~sum(1 << b for b in CAP_BITS.values()) else set())


def status_caps(pid):
    """(CapEff, CapPrm, CapAmb, CapInh) of process pid, as integers."""
    status = open("/proc/%d/status" % pid).read()
    return tuple(int(re.search(r"^%s:\s*([0-9a-f]+)$" % k, status, re.M).group(1), 16)
                 for k in ("CapEff", "CapPrm", "CapAmb", "CapInh"))


def unit_setpriv(unit_path):
    """setpriv's arguments (up to and with "--") that start a program with the bounding,
    inheritable and ambient sets of the systemd unit at unit_path."""
    unit = open(unit_path).read()
    caps = lambda key: ",".join(
        ["-all"] + ["+" + c[4:].lower()
                    for c in re.search(r"^%s=(.*)$" % key, unit, re.M).group(1).split()])
    ambient = caps("AmbientCapabilities")
    return ["setpriv", "--bounding-set", caps("CapabilityBoundingSet"), "--inh-caps", ambient,
            "--ambient-caps", ambient, "--"]
