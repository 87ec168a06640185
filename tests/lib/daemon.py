# SPDX-License-Identifier: GPL-2.0-only
"""Starting and talking to a tailprofd for tests and benchmarks: its own free port, wait for
/healthz, GET helpers, SIGTERM."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from pprof_decode import Profile


def bpf_map_dump(name):
    """The entries of every BPF map called name, as bpftool's BTF-formatted dump gives them:
    a list of {"key": ..., "value": ...} (ints, or dicts for structs)."""
    r = subprocess.run(["bpftool", "-j", "map", "dump", "name", name], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    return [e["formatted"] for e in json.loads(r.stdout or "[]")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, fn, timeout=10):
    """Polls fn() every 0.05 s until it returns something true; returns it, or raises
    AssertionError naming what after timeout seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class Daemon:
    """tailprofd on host (127.0.0.1, or e.g. 0.0.0.0, reached through 127.0.0.1) and a free port,
    with no unix socket unless args give --socket or default_socket is true; healthy when the
    constructor returns, within wait_s seconds (or RuntimeError with its output); env: variables
    added to its environment."""

    def __init__(self, binary, *args, host="127.0.0.1", default_socket=False, wait_s=20,
                 env=None):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = tempfile.TemporaryFile()
        # no unix socket unless the test asks for one (--socket PATH, or default_socket): test
        # daemons run side by side, and the default one may be a user's tailprofd
        if not default_socket and not any(a == "--socket" or a.startswith("--socket=")
                                          for a in args):
            args = ("--socket", "none") + tuple(args)
        self.proc = subprocess.Popen([binary, "--listen", "%s:%d" % (host, self.port)] +
                                     list(args), stdout=self.log, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, **(env or {})))
        deadline = time.time() + wait_s
        try:
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError("tailprofd exited: " + self.output())
                try:
                    if urllib.request.urlopen(self.url + "/healthz", timeout=2).status == 200:
                        return
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
                time.sleep(0.1)
            raise RuntimeError("tailprofd not healthy in %d s: %s" % (wait_s, self.output()))
        except BaseException:
            # not left running (and holding its socket or port) after the caller gives up or is
            # interrupted meanwhile
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            raise

    def output(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def get(self, path, timeout=120):
        """(status, headers, body) of GET path; HTTP errors are returned, not raised."""
        try:
            r = urllib.request.urlopen(self.url + path, timeout=timeout)
            return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def json(self, path):
        status, _, body = self.get(path)
        assert status == 200, (path, status, body)
        return json.loads(body)

    def profile(self, query):
        status, headers, body = self.get("/api/v1/profile?" + query)
        assert status == 200, (query, status, body)
        return Profile(body), headers

    def metrics(self):
        out = {}
        for line in self.get("/metrics")[2].decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                out[k] = float(v)
        return out

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)
