# SPDX-License-Identifier: GPL-2.0-only
"""Shared helpers of the benchmarks: start tailprofd and workloads, read /metrics."""
import os
import signal
import socket
import subprocess
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def build_dir():
    return os.environ.get("TAILPROF_BUILD_DIR", os.path.join(ROOT, "build"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, *args):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.proc = subprocess.Popen([os.path.join(build_dir(), "daemon", "tailprofd"),
                                      "--listen", "127.0.0.1:%d" % self.port] + list(args),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                if urllib.request.urlopen(self.url + "/healthz", timeout=2).status == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("tailprofd did not become healthy")

    def get(self, path):
        return urllib.request.urlopen(self.url + path, timeout=120).read()

    def metrics(self):
        out = {}
        for line in self.get("/metrics").decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def workload(name, *args):
    return subprocess.Popen([os.path.join(build_dir(), "tests", "workloads", name)] +
                            [str(a) for a in args], stdout=subprocess.DEVNULL)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
