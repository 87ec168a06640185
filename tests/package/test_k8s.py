#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The Kubernetes DaemonSet (packaging/kubernetes/tailprofd-daemonset.yaml): it parses, and has
hostPID, read-only host mounts of /sys/kernel/btf, capabilities instead of privileged, memory
requests and limits, a readiness probe on /healthz, and no Service. Parsed by the small YAML
subset parser below (PyYAML is not a Debian dependency here), and by PyYAML too where it is
installed, which must agree.

Usage: test_k8s.py SOURCE_DIR"""
import os
import re
import sys

SRC = sys.argv[1]
PATH = os.path.join(SRC, "packaging", "kubernetes", "tailprofd-daemonset.yaml")


def scalar(s):
    s = s.strip()
    if s[:1] in "\"'" and s[-1:] == s[:1]:
        return s[1:-1]
    if s in ("true", "false"):
        return s == "true"
    if re.fullmatch(r"-?[0-9]+", s):
        return int(s)
    if s.startswith("[") and s.endswith("]"):
        return [scalar(x) for x in s[1:-1].split(",") if x.strip()]
    return s


def lines_of(text):
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not line.strip():
            continue
        if "\t" in raw[:len(raw) - len(raw.lstrip())]:
            raise ValueError("line %d: a tab in the indentation" % n)
        out.append((len(line) - len(line.lstrip()), line.strip(), n))
    return out


def parse_block(lines, i, indent):
    """The block at lines[i] of this indent: a mapping or a list. Returns (value, next i)."""
    if lines[i][1].startswith("- ") or lines[i][1] == "-":
        items = []
        while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("-"):
            rest = lines[i][1][1:].strip()
            if not rest:
                v, i = parse_block(lines, i + 1, lines[i + 1][0])
            elif re.match(r"^[A-Za-z0-9_.\-/]+:(\s|$)", rest):
                # a mapping that starts on the dash's line: re-read it at its own indent
                sub = indent + 2
                lines[i] = (sub, rest, lines[i][2])
                v, i = parse_block(lines, i, sub)
            else:
                v, i = scalar(rest), i + 1
            items.append(v)
        return items, i
    m = {}
    while i < len(lines) and lines[i][0] == indent:
        ind, text, n = lines[i]
        km = re.match(r"^([A-Za-z0-9_.\-/]+):(?:\s+(.*))?$", text)
        if not km:
            raise ValueError("line %d: not a key: %r" % (n, text))
        key, val = km.group(1), km.group(2)
        if key in m:
            raise ValueError("line %d: %s given twice" % (n, key))
        if val:
            m[key], i = scalar(val), i + 1
        elif i + 1 < len(lines) and lines[i + 1][0] > indent:
            m[key], i = parse_block(lines, i + 1, lines[i + 1][0])
        elif i + 1 < len(lines) and lines[i + 1][0] == indent and lines[i + 1][1].startswith("-"):
            m[key], i = parse_block(lines, i + 1, indent)
        else:
            m[key], i = None, i + 1
    if i < len(lines) and lines[i][0] > indent:
        raise ValueError("line %d: bad indentation" % lines[i][2])
    return m, i


def parse(text):
    lines = lines_of(text)
    docs = [[]]
    for l in lines:
        if l[1] == "---":
            docs.append([])
        else:
            docs[-1].append(l)
    out = []
    for d in docs:
        if d:
            v, i = parse_block(d, 0, d[0][0])
            if i != len(d):
                raise ValueError("line %d: unexpected" % d[i][2])
            out.append(v)
    return out


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def main():
    text = open(PATH).read()
    docs = parse(text)
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml:
        check([d for d in yaml.safe_load_all(text) if d] == docs,
              "the subset parser and PyYAML disagree")
    kinds = [d.get("kind") for d in docs]
    check(kinds == ["DaemonSet"], "one DaemonSet and nothing else (no Service): %s" % kinds)
    ds = docs[0]
    check(ds["apiVersion"] == "apps/v1", "apiVersion apps/v1")
    spec = ds["spec"]["template"]["spec"]
    check(ds["spec"]["selector"]["matchLabels"].items() <=
          ds["spec"]["template"]["metadata"]["labels"].items(), "the selector matches the pods")
    check(spec.get("hostPID") is True, "hostPID: true")
    (c,) = spec["containers"]
    sc = c["securityContext"]
    check(sc.get("privileged") is False, "not privileged")
    check(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation: false")
    check(sc["capabilities"]["drop"] == ["ALL"], "capabilities: drop ALL")
    want = {"BPF", "PERFMON", "SYS_PTRACE", "DAC_READ_SEARCH", "CHECKPOINT_RESTORE", "SYSLOG",
            "SYS_ADMIN"}
    check(set(sc["capabilities"]["add"]) == want, "capabilities: add %s" % sorted(want))
    unit = open(os.path.join(SRC, "packaging", "systemd", "tailprofd.service")).read()
    bounding = re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split()
    check({b[4:] for b in bounding} == want, "the same capabilities as the systemd unit")
    res = c["resources"]
    for k in ("cpu", "memory"):
        check(k in res["requests"], "requests." + k)
    check("memory" in res["limits"], "limits.memory")
    mem = re.search(r"^MemoryMax=(\d+)M$", unit, re.M).group(1)
    check(res["limits"]["memory"] == mem + "Mi", "the memory limit is the unit's MemoryMax")
    probe = c["readinessProbe"]["httpGet"]
    check(probe["path"] == "/healthz" and probe["port"] == 7077, "readiness on /healthz")
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in spec["volumes"]}
    check(set(mounts) == set(vols), "every volume mounted, every mount a volume")
    host = {vols[n]["hostPath"]["path"]: m for n, m in mounts.items() if "hostPath" in vols[n]}
    check("/sys/kernel/btf" in host and host["/sys/kernel/btf"].get("readOnly") is True,
          "/sys/kernel/btf mounted read-only")
    for path, m in host.items():
        check(m.get("readOnly") is True or path == "/var/lib/tailprof",
              "%s read-only (only the state directory is written)" % path)
    check("/sys/kernel/debug" not in host, "/sys/kernel/debug is not needed")
    print("ok   the DaemonSet parses%s and has its fields" % (" (PyYAML agrees)" if yaml else ""))


main()
