#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Symbolizer benchmark: cold symbol-table reads of the largest ELF objects on this machine
(libjvm.so, libLLVM, ...), memory per cached object and cached lookups per second, through
tp_bench_symbolize (built with the project). Usage: tests/bench/symbols.py [N_LARGEST]"""
import os
import subprocess
import sys

from common import build_dir


def largest(n):
    objs = []
    for root in ("/usr/lib", "/usr/local/lib"):
        for dirpath, _, files in os.walk(root):
            for f in files:
                if ".so" not in f:
                    continue
                p = os.path.join(dirpath, f)
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                with open(p, "rb") as fh:
                    if fh.read(4) != b"\x7fELF":
                        continue
                objs.append((os.path.getsize(p), p))
    return [p for _, p in sorted(objs, reverse=True)[:n]]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    objs = largest(n) + ["/usr/lib/x86_64-linux-gnu/libc.so.6"]
    subprocess.run([os.path.join(build_dir(), "tests", "bench", "tp_bench_symbolize")] + objs,
                   check=True)


if __name__ == "__main__":
    main()
