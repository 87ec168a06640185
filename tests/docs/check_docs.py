#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The docs check (suites lint and docs): the documentation says what the code does.

- every flag of `tailprofd --help` is in tailprofd(8) (docs/man/tailprofd.8) and in
  docs/configuration.md; every flag of `tailprof --help` and of each subcommand's --help is in
  tailprof(1) (docs/man/tailprof.1);
- every section and key the configuration file takes (daemon/config.c) is in
  docs/configuration.md;
- every path the HTTP server routes (daemon/http_api.c and daemon/http_compare.c: the
  strcmp/strncmp on the URL and the write endpoints' table) is in docs/api.md, and so is every
  Prometheus metric name the daemon writes (daemon/*.c);
- the README's quick-start commands are `packaging/setup.sh run` and `packaging/setup.sh test`,
  setup.sh has both, and .ci/run runs the README's test command;
- every relative link of README.md and docs/*.md points to a file that exists.

Usage: check_docs.py SOURCE_ROOT TAILPROFD TAILPROF. Prints one line per problem and exits 1
when there is any; prints what it checked and exits 0 otherwise."""
import glob
import os
import re
import subprocess
import sys

problems = []


def problem(msg):
    problems.append(msg)
    print("FAIL: " + msg)


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def help_text(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if r.returncode != 0 or not r.stdout.strip():
        problem("%s exited %d with no help text" % (" ".join(cmd), r.returncode))
    return r.stdout


def option_flags(text):
    """The flags an option list of a --help text defines: the terms of its items (lines
    indented 2 to 8 columns that start with '-'), e.g. '-F, --frequency HZ' -> -F, --frequency;
    '--unwind=MODE' -> --unwind."""
    flags = set()
    for line in text.splitlines():
        m = re.match(r"^ {2,8}(-\S.*?)(?:\s{2,}|$)", line)
        if not m:
            continue
        for alt in m.group(1).split(", "):
            f = re.match(r"(--?[A-Za-z][A-Za-z0-9-]*)", alt.strip())
            if f:
                flags.add(f.group(1))
    return flags


def roff_text(text):
    """A man page as its reader sees the words: escapes and font changes dropped."""
    text = text.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")
    return re.sub(r"\\f[BIRP]", "", text)


def has_flag(text, flag):
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(flag), text) is not None


def check_flags(root, tailprofd, tailprof):
    d_help = help_text(tailprofd, "--help")
    d_flags = option_flags(d_help)
    if len(d_flags) < 20:
        problem("tailprofd --help: found only %d flags (%s); has its layout changed?"
                % (len(d_flags), ", ".join(sorted(d_flags))))
    man8 = roff_text(read(root, "docs/man/tailprofd.8"))
    conf = read(root, "docs/configuration.md")
    for f in sorted(d_flags):
        if not has_flag(man8, f):
            problem("tailprofd flag %s is not in docs/man/tailprofd.8 "
                    "(run python3 docs/man/gen_man.py BUILD_DIR)" % f)
        if not has_flag(conf, f):
            problem("tailprofd flag %s is not in docs/configuration.md" % f)

    c_help = help_text(tailprof, "--help")
    c_flags = {f: "tailprof --help" for f in option_flags(c_help)}
    m = re.search(r"^Subcommands:\n((?: {2,}.*\n)+)", c_help, re.M)
    subs = [l.split()[0] for l in m.group(1).splitlines()] if m else []
    if len(subs) < 5:
        problem("tailprof --help: found only %d subcommands (%s)" % (len(subs), subs))
    for sub in subs:
        if sub == "help":
            continue
        for f in option_flags(help_text(tailprof, sub, "--help")):
            c_flags.setdefault(f, "tailprof %s --help" % sub)
    man1 = roff_text(read(root, "docs/man/tailprof.1"))
    for f, where in sorted(c_flags.items()):
        if not has_flag(man1, f):
            problem("%s flag %s is not in docs/man/tailprof.1 "
                    "(run python3 docs/man/gen_man.py BUILD_DIR)" % (where, f))
    for sub in subs:
        if sub != "help" and not re.search(r"tailprof %s\b" % re.escape(sub), man1):
            problem("subcommand %s is not in docs/man/tailprof.1" % sub)
    return len(d_flags), len(c_flags), len(subs)


def check_config(root):
    src = read(root, "daemon/config.c")
    conf = read(root, "docs/configuration.md")
    # sections: strcmp(section, "NAME") and strcmp(kind, "stage"/"usdt-app")
    sections = set(re.findall(r'strcmp\(section, "([a-z-]+)"\)', src))
    sections |= {s + " NAME" for s in re.findall(r'strcmp\(kind, "([a-z-]+)"\)', src)}
    # keys: the keys[] arrays of set_daemon/set_gc/set_spikes/set_snapshots, and the
    # strcmp(key, "...") of [stage] and [usdt-app]
    keys = set()
    for body in re.findall(r"keys\[\] = \{([^}]*)\}", src):
        keys |= set(re.findall(r'"([a-z_]+)"', body))
    keys |= set(re.findall(r'strcmp\(key, "([a-z_]+)"\)', src))
    if len(sections) < 6 or len(keys) < 20:
        problem("daemon/config.c: found only %d sections and %d keys; has its layout changed?"
                % (len(sections), len(keys)))
    for s in sorted(sections):
        if "[%s]" % s not in conf:
            problem("config section [%s] is not in docs/configuration.md" % s)
    for k in sorted(keys):
        if not re.search(r"`(?:\[[a-z -]+\] )?%s`" % re.escape(k), conf) and \
                not re.search(r"^%s = " % re.escape(k), conf, re.M):
            problem("config key %s is not in docs/configuration.md" % k)
    return len(sections), len(keys)


def check_routes(root):
    api = read(root, "docs/api.md")
    routes = set()
    for path in sorted(glob.glob(os.path.join(root, "daemon", "http_*.c"))):
        src = open(path, encoding="utf-8").read()
        routes |= set(re.findall(r'strcmp\(url, "(/[^"]*)"\)', src))
        routes |= {p + "ID" for p in re.findall(r'strncmp\(url, "(/[^"]*/)"', src)}
        routes |= set(re.findall(r'\] = "(/api/[^"]*)"', src))
    if len(routes) < 12:
        problem("daemon/http_*.c: found only %d routes (%s); has the routing changed?"
                % (len(routes), ", ".join(sorted(routes))))
    for r in sorted(routes):
        if r.endswith("/ID"):
            # a path with a parameter: documented as PREFIX/ID, PREFIX/NAME, ...
            if not re.search(r"%s[A-Z]+\b" % re.escape(r[:-2]), api):
                problem("route %s... (a path with a parameter) is not in docs/api.md" % r[:-2])
        elif not re.search(r"%s(?![\w/-])" % re.escape(r), api):
            problem("route %s is not in docs/api.md" % r)

    metrics = set()
    for path in glob.glob(os.path.join(root, "daemon", "*.c")):
        src = open(path, encoding="utf-8").read()
        metrics |= set(re.findall(r'"(tailprof_[a-z0-9_]+)[" {]', src))
    metrics = {m for m in metrics if not re.search(r"_(bucket|sum|count)$", m)}
    if len(metrics) < 50:
        problem("daemon/*.c: found only %d metric names" % len(metrics))
    for m in sorted(metrics):
        if not re.search(r"`%s[`{]" % re.escape(m), api):
            problem("metric %s is not in docs/api.md" % m)
    return len(routes), len(metrics)


def check_quick_start(root):
    readme = read(root, "README.md")
    m = re.search(r"^## Quick start\n(.*?)(?=^## )", readme, re.M | re.S)
    if not m:
        problem("README.md has no '## Quick start' section")
        return
    blocks = re.findall(r"```sh\n(.*?)```", m.group(1), re.S)
    cmds = [re.sub(r"\s+#.*", "", l).strip() for b in blocks[:1] for l in b.splitlines()]
    cmds = [c for c in cmds if c]
    if cmds != ["packaging/setup.sh run", "packaging/setup.sh test"]:
        problem("README.md's quick start (its first sh block) runs %s; it must run exactly "
                "packaging/setup.sh run and packaging/setup.sh test" % cmds)
    setup = read(root, "packaging/setup.sh")
    for sub in ("run", "test"):
        if not re.search(r"^%s\)" % sub, setup, re.M):
            problem("packaging/setup.sh has no '%s)' command" % sub)
    ci = [l.strip() for l in read(root, ".ci/run").splitlines()
          if l.strip() and not l.lstrip().startswith("#")]
    ran = [l for l in ci if "setup.sh" in l]
    if not ran or not re.fullmatch(r"(exec )?packaging/setup\.sh test", ran[-1]):
        problem(".ci/run does not run the README's test command packaging/setup.sh test "
                "(it runs: %s)" % (ran or "no setup.sh"))


def check_links(root):
    n = 0
    for path in ["README.md"] + sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        path = os.path.relpath(os.path.join(root, path), root)
        text = read(root, path)
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            n += 1
            file = os.path.normpath(os.path.join(os.path.dirname(path), target.split("#")[0]))
            if not os.path.exists(os.path.join(root, file)):
                problem("%s links to %s, which does not exist" % (path, target))
    return n


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    root, tailprofd, tailprof = sys.argv[1:]
    nd, nc, ns = check_flags(root, tailprofd, tailprof)
    nsec, nkeys = check_config(root)
    nroutes, nmetrics = check_routes(root)
    check_quick_start(root)
    nlinks = check_links(root)
    print("checked %d tailprofd flags, %d tailprof flags of %d subcommands, %d config sections "
          "and %d keys, %d routes, %d metrics, the quick start, %d links"
          % (nd, nc, ns, nsec, nkeys, nroutes, nmetrics, nlinks))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
