#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Access to the API (docs/security.md): the unix socket (mode 0660, group tailprof when it exists,
a stale one replaced, a live one refused when --socket is explicit, only a warning for the
default), the CLI through it (the default socket, --server unix:PATH, TAILPROF_SERVER), a listener
off loopback that needs --auth-token-file and then a bearer token on every path but /healthz and
the page's files (/, /ui/FILE), the CLI's --token-file and TAILPROF_TOKEN_FILE, and the token kept
out of the status, the logs, the CLI's messages and the command line.

Two daemons: `sock` serves the default socket /run/tailprof/tailprofd.sock (given explicitly, so
that a user's tailprofd holding it makes this fail rather than pass by accident) and a token on
loopback; `tok` listens on
every address with a token and asks for the default socket, which `sock` holds.

Usage: test_access.py BUILD_DIR. Outside CI, exits 77 (skip) when not root or BPF cannot load;
with CI=true that is a failure."""
import grp
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import daemon  # noqa: E402
from pprof_decode import Profile  # noqa: E402
from runner import require_bpf, run_tests, start_daemons  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
DAEMON = os.path.join(BUILD, "daemon", "tailprofd")
CLI = os.path.join(BUILD, "cli", "tailprof")
DEFAULT_DIR = "/run/tailprof"
DEFAULT_SOCKET = DEFAULT_DIR + "/tailprofd.sock"
TOKEN = "tp-test-" + os.urandom(16).hex()
TMP = tempfile.mkdtemp(prefix="tailprof_access_")
os.chmod(TMP, 0o755)  # the CLI runs as nobody through it
TOKEN_FILE = os.path.join(TMP, "token")
made = {"group": False, "dir": False}


def run(cmd, timeout=30, env=None, **kw):
    e = {k: v for k, v in os.environ.items() if k != "TAILPROF_SERVER"}
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e, **kw)


def host_address():
    """A non-loopback IPv4 address of this machine (its main interface)."""
    out = json.loads(subprocess.run(["ip", "-j", "-4", "addr"], capture_output=True, text=True,
                                    check=True).stdout)
    addrs = [a["local"] for i in out for a in i.get("addr_info", [])
             if not a["local"].startswith("127.")]
    assert addrs, "no non-loopback IPv4 address on this machine: %s" % out
    return addrs[0]


def live(path):
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(path)
            return True
        except OSError:
            return False


def wait_for(path, proc, timeout=20):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, "tailprofd exited before making %s" % path
        assert time.time() < deadline, "no %s in %d s" % (path, timeout)
        time.sleep(0.05)


def status_pid(*args, env=None):
    r = run([CLI, *args, "status", "--json"], env=env)
    assert r.returncode == 0, (args, env, r.returncode, r.stderr)
    return json.loads(r.stdout)["pid"]


def get(url, token=None, data=None, scheme="Bearer"):
    req = urllib.request.Request(url, data=data)
    if token is not None:
        req.add_header("Authorization", "%s %s" % (scheme, token))
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


# ---- start-up checks (no BPF loaded: they fail before) ----

def test_off_loopback_needs_a_token():
    ip = host_address()
    for addr in ("0.0.0.0", ip):
        r = run([DAEMON, "--listen", "%s:%d" % (addr, daemon.free_port()), "--socket", "none"])
        print("  --listen %s: exit %d: %s" % (addr, r.returncode, r.stderr.strip()[:160]))
        assert r.returncode == 2, (r.returncode, r.stderr)
        assert "not a loopback address" in r.stderr and "--auth-token-file" in r.stderr, \
            r.stderr


def test_token_file_open_to_others_refused():
    bad = os.path.join(TMP, "token-0644")
    with open(bad, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(bad, 0o644)
    link = os.path.join(TMP, "token-link")
    os.symlink(TOKEN_FILE, link)
    empty = os.path.join(TMP, "token-empty")
    with open(empty, "w") as f:
        f.write("  \nsecond line\n")
    os.chmod(empty, 0o600)
    cases = ((bad, "mode 0644", "chmod 600"), (link, "symbolic link", "not followed"),
             (empty, "empty", "first line"))
    for path, what, fix in cases:
        r = run([DAEMON, "--listen", "0.0.0.0:%d" % daemon.free_port(), "--socket", "none",
                 "--auth-token-file", path])
        print("  %s: exit %d: %s" % (what, r.returncode, r.stderr.splitlines()[0][:140]))
        assert r.returncode == 2 and what in r.stderr and fix in r.stderr, (what, r.stderr)
        assert TOKEN not in r.stderr


def test_socket_path_not_a_socket_left_alone():
    path = os.path.join(TMP, "plain-file")
    with open(path, "w") as f:
        f.write("keep me\n")
    r = run([DAEMON, "--listen", "127.0.0.1:%d" % daemon.free_port(), "--socket", path])
    assert r.returncode == 1 and "is not a socket" in r.stderr, (r.returncode, r.stderr)
    assert open(path).read() == "keep me\n"


def no_group_socket():
    """Without a group tailprof: the socket is root's (group 0), mode 0660. The daemon is killed
    with SIGKILL once the socket exists, which leaves it stale for `sock` to replace."""
    p = subprocess.Popen([DAEMON, "--listen", "127.0.0.1:%d" % daemon.free_port(), "--socket",
                          DEFAULT_SOCKET, "-F", "1"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        wait_for(DEFAULT_SOCKET, p)
        time.sleep(0.2)  # bound and listening: its group is set right after bind
        st = os.lstat(DEFAULT_SOCKET)
        print("  no group tailprof: %s mode %04o gid %d" % (DEFAULT_SOCKET,
                                                            stat.S_IMODE(st.st_mode), st.st_gid))
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660, oct(st.st_mode)
        assert st.st_gid == 0, st.st_gid
    finally:
        p.kill()
        p.wait()
    assert os.path.exists(DEFAULT_SOCKET) and not live(DEFAULT_SOCKET), "no stale socket left"
    # the CLI takes the stale default socket, is refused, and goes to http://127.0.0.1:7077
    r = run([CLI, "status"])
    with socket.socket() as s:
        busy = s.connect_ex(("127.0.0.1", 7077)) == 0
    print("  CLI with a stale default socket: exit %d: %s" % (r.returncode, r.stderr.strip()))
    assert "unix:" not in r.stderr, r.stderr
    assert busy or (r.returncode == 1 and "at http://127.0.0.1:7077" in r.stderr), r.stderr


# ---- the socket daemon ----

def test_socket_mode_group_and_directory(sock):
    st = os.lstat(DEFAULT_SOCKET)
    gid = grp.getgrnam("tailprof").gr_gid
    print("  %s: mode %04o gid %d (tailprof: %d); the stale one was replaced" % (
        DEFAULT_SOCKET, stat.S_IMODE(st.st_mode), st.st_gid, gid))
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660, oct(st.st_mode)
    assert st.st_gid == gid and st.st_uid == 0, (st.st_uid, st.st_gid)
    if made["dir"]:
        assert stat.S_IMODE(os.stat(DEFAULT_DIR).st_mode) == 0o755


def test_cli_over_the_socket(sock):
    """The socket asks no token, while its daemon's TCP listener does."""
    pid = sock.proc.pid
    assert get(sock.url + "/api/v1/status")[0] == 401
    # its TCP port is not 7077: a CLI that reached it went through the socket
    assert sock.port != 7077
    assert status_pid() == pid, "the CLI without --server did not use the default socket"
    assert status_pid("--server", "unix:" + DEFAULT_SOCKET) == pid
    assert status_pid(env={"TAILPROF_SERVER": "unix:" + DEFAULT_SOCKET}) == pid
    # an explicit --server wins over TAILPROF_SERVER and the default socket
    down = "http://127.0.0.1:%d" % daemon.free_port()
    r = run([CLI, "--server", down, "status"], env={"TAILPROF_SERVER": "unix:" + DEFAULT_SOCKET})
    assert r.returncode == 1 and "cannot reach tailprofd at " + down in r.stderr, r.stderr
    r = run([CLI, "windows", "--server", "unix:" + DEFAULT_SOCKET, "--last", "1m", "--json"])
    assert r.returncode == 0 and "windows" in json.loads(r.stdout), r
    r = run([CLI, "--server", "unix:relative.sock", "status"])
    assert r.returncode == 2 and "unix:/absolute" in r.stderr, r.stderr


def test_socket_guarded_by_its_group(sock):
    """As nobody: refused without the group tailprof, served with it (no token either way)."""
    base = ["setpriv", "--reuid", "nobody", "--regid", "nogroup"]
    r = run(base + ["--clear-groups", CLI, "--server", "unix:" + DEFAULT_SOCKET, "status"])
    print("  nobody: exit %d: %s" % (r.returncode, r.stderr.strip()[:150]))
    assert r.returncode == 1 and "Permission denied" in r.stderr and "tailprof" in r.stderr, r
    r = run(base + ["--groups", "tailprof", CLI, "status", "--json"])
    assert r.returncode == 0 and json.loads(r.stdout)["pid"] == sock.proc.pid, r
    print("  nobody with group tailprof: served through the default socket")


def test_live_socket_explicit_fails(sock):
    r = run([DAEMON, "--listen", "127.0.0.1:%d" % daemon.free_port(), "--socket",
             DEFAULT_SOCKET])
    print("  second tailprofd on a live socket: exit %d: %s" % (r.returncode, r.stderr.strip()))
    assert r.returncode == 1 and "held by a running server" in r.stderr, r
    assert "--socket" in r.stderr
    assert live(DEFAULT_SOCKET), "the live socket was removed"


# ---- the token daemon ----

def test_token_on_every_path_but_healthz(sock, tok):
    base = "http://%s:%d" % (host_address(), tok.port)
    status, _, body = get(base + "/healthz")
    assert status == 200 and body == b"ok\n", (status, body)
    for path in ("/api/v1/status", "/metrics", "/api/v1/windows?last=1m", "/nope", "/ui/x/y",
                 "/ui/../api/v1/status", "/debug/pprof/profile?seconds=1"):
        status, headers, body = get(base + path)
        assert status == 401, (path, status, body)
        assert headers.get("WWW-Authenticate") == "Bearer", headers
        assert TOKEN not in body.decode(), body
        # the last character changed (a random token may end in "0" itself)
        other = TOKEN[:-1] + ("1" if TOKEN.endswith("0") else "0")
        for wrong in (TOKEN[:-1], TOKEN + "x", other, ""):
            assert get(base + path, token=wrong)[0] == 401, (path, wrong)
    status, _, body = get(base + "/api/v1/marks", data=b"{}")
    assert status == 401, (status, body)
    status, _, body = get(base + "/api/v1/status", token=TOKEN)
    assert status == 200 and json.loads(body)["pid"] == tok.proc.pid, (status, body)
    assert get(base + "/metrics", token=TOKEN, scheme="bearer")[0] == 200
    # the same on loopback: the token is asked on the TCP listener, whatever the address
    assert get(tok.url + "/api/v1/status")[0] == 401
    print("  %s: 401 without the token on 7 paths, 200 with it; /healthz open" % base)


def test_page_files_need_no_token(sock, tok):
    """The page's own files carry no data: served without a token, so that the page loads and
    asks for it; its data, /metrics and the rest still need it."""
    base = "http://%s:%d" % (host_address(), tok.port)
    status, headers, body = get(base + "/")
    assert status == 200 and b"<title>tailprof</title>" in body and b'id="auth"' in body, \
        (status, body[:200])
    status, headers, js = get(base + "/ui/app.js")
    assert status == 200 and b"tailprof.token" in js and len(js) > 10000, (status, len(js))
    assert get(base + "/ui/nope.js")[0] == 404
    for path in ("/api/v1/status", "/metrics", "/api/v1/heatmap"):
        status, _, body = get(base + path)
        assert status == 401 and b"--token-file" in body, (path, status, body)
        assert get(base + path, token=TOKEN)[0] == 200, path
    print("  / (%d bytes) and /ui/app.js (%d bytes) 200 without a token; /api/v1/status, "
          "/metrics, /api/v1/heatmap 401" % (len(body), len(js)))


def write_token_file(name, text, mode):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def test_cli_token_file(sock, tok):
    """The CLI reaches the token listener with --token-file or TAILPROF_TOKEN_FILE (the flag
    wins), says which option to give when it has none, and never prints the token."""
    base = "http://%s:%d" % (host_address(), tok.port)
    pid = tok.proc.pid
    assert status_pid("--server", base, "--token-file", TOKEN_FILE) == pid
    assert status_pid("--server", base, env={"TAILPROF_TOKEN_FILE": TOKEN_FILE}) == pid
    # the flag after the subcommand, and over a TAILPROF_TOKEN_FILE that would be refused
    wrong = write_token_file("token-wrong", "not-the-token\n", 0o600)
    r = run([CLI, "status", "--json", "--server", base, "--token-file=" + TOKEN_FILE],
            env={"TAILPROF_TOKEN_FILE": wrong})
    assert r.returncode == 0 and json.loads(r.stdout)["pid"] == pid, r
    # a profile pull of a process that spun 1 s of CPU time: about 49 samples at 49 Hz
    spin = subprocess.run([sys.executable, "-c", "import os, time\n"
                           "while time.process_time() < 1: pass\n"
                           "print(os.getpid(), time.process_time())"],
                          capture_output=True, text=True, check=True)
    spin_pid, cpu_s = spin.stdout.split()
    want = float(cpu_s) * 49
    time.sleep(1.5)  # its last window closed
    out = os.path.join(TMP, "cpu.pb.gz")
    r = run([CLI, "--server", base, "pull", "--last", "15s", "--pid", spin_pid, "-o",
             out], env={"TAILPROF_TOKEN_FILE": TOKEN_FILE}, timeout=60)
    assert r.returncode == 0 and "wrote " + out in r.stderr, r
    with open(out, "rb") as f:
        prof = Profile(f.read())
    n = prof.total()
    print("  CLI with --token-file and TAILPROF_TOKEN_FILE: status pid %d; pull of a %.2f s CPU "
          "spin at 49 Hz: %d samples (%.0f expected)" % (pid, float(cpu_s), n, want))
    assert 0.6 * want <= n <= 1.3 * want, (n, want)
    # without a token: the 401 names the two ways to give it
    r = run([CLI, "--server", base, "status"])
    print("  without a token: exit %d: %s" % (r.returncode, r.stderr.strip().splitlines()[-1]))
    assert r.returncode == 1 and "--token-file" in r.stderr and \
        "TAILPROF_TOKEN_FILE" in r.stderr, r.stderr
    r = run([CLI, "--server", base, "pull", "--last", "5s", "-o", out + ".2"])
    assert r.returncode == 1 and "--token-file" in r.stderr and not os.path.exists(out + ".2")
    # a wrong token: refused, named by its file, the token not printed
    r = run([CLI, "--server", base, "--token-file", wrong, "status"])
    assert r.returncode == 1 and "refused the token of --token-file " + wrong in r.stderr, \
        r.stderr
    assert "not-the-token" not in r.stderr + r.stdout
    # a token file open to others: refused before any request
    bad = write_token_file("token-cli-0644", TOKEN + "\n", 0o644)
    for args, env in ((["--token-file", bad], None), ([], {"TAILPROF_TOKEN_FILE": bad})):
        r = run([CLI, "--server", base, *args, "status"], env=env)
        print("  0644 token file (%s): exit %d: %s" % (
            "flag" if args else "env", r.returncode, r.stderr.strip().splitlines()[0]))
        assert r.returncode == 2 and "mode 0644" in r.stderr and "chmod 600" in r.stderr, r
        assert ("--token-file" if args else "TAILPROF_TOKEN_FILE") in r.stderr, r.stderr
        assert TOKEN not in r.stderr + r.stdout
    # over the unix socket the token is not needed, and harmless
    assert status_pid("--server", "unix:" + DEFAULT_SOCKET, "--token-file", wrong) == \
        sock.proc.pid


def test_default_socket_held_only_warns(sock, tok):
    out = tok.output()
    # the lines about sockets: a -v log is hundreds of kB of libbpf's
    said = "\n".join(line for line in out.splitlines() if "socket" in line or "serving" in line)
    assert "held by a running server" in out and "served on http://" in out, said
    assert live(DEFAULT_SOCKET) and status_pid() == sock.proc.pid


def test_token_kept_secret(sock, tok):
    status, _, body = get(tok.url + "/api/v1/status", token=TOKEN)
    assert status == 200 and TOKEN not in body.decode()
    assert TOKEN not in tok.output(), "the token is in the log"
    for f in ("cmdline", "environ"):
        with open("/proc/%d/%s" % (tok.proc.pid, f), "rb") as fh:
            assert TOKEN.encode() not in fh.read(), f
    print("  token absent from the status JSON, %d bytes of log (-v), cmdline, environ" %
          len(tok.output()))


def make_daemons():
    if live(DEFAULT_SOCKET):
        raise SystemExit("FAIL: a tailprofd serves %s already; stop it to run this test" %
                         DEFAULT_SOCKET)
    if os.path.exists(DEFAULT_SOCKET):
        os.unlink(DEFAULT_SOCKET)
    if not os.path.isdir(DEFAULT_DIR):
        made["dir"] = True
    try:
        grp.getgrnam("tailprof")
    except KeyError:
        no_group_socket()
        subprocess.run(["groupadd", "--system", "tailprof"], check=True)
        made["group"] = True
    with open(TOKEN_FILE, "w") as f:
        f.write(TOKEN + "  \n")
    os.chmod(TOKEN_FILE, 0o600)
    sock = daemon.Daemon(DAEMON, "-F", "49", "--window", "1s", "--socket", DEFAULT_SOCKET,
                         "--auth-token-file", TOKEN_FILE, wait_s=60)
    try:
        tok = daemon.Daemon(DAEMON, "-F", "49", "--window", "1s", "-v", "--auth-token-file",
                            TOKEN_FILE, host="0.0.0.0", default_socket=True, wait_s=60)
    except RuntimeError:
        sock.stop()
        raise
    return [sock, tok]


def cleanup():
    if made["group"]:
        subprocess.run(["groupdel", "tailprof"])
    if made["dir"]:
        shutil.rmtree(DEFAULT_DIR, ignore_errors=True)
    made["group"] = made["dir"] = False
    shutil.rmtree(TMP, ignore_errors=True)


def main():
    require_bpf()
    try:
        daemons = start_daemons(make_daemons)
    except BaseException:  # skip() exits: the group and directory made go all the same
        cleanup()
        raise
    tests = [test_off_loopback_needs_a_token, test_token_file_open_to_others_refused,
             test_socket_path_not_a_socket_left_alone, test_socket_mode_group_and_directory,
             test_cli_over_the_socket, test_socket_guarded_by_its_group,
             test_live_socket_explicit_fails, test_token_on_every_path_but_healthz,
             test_page_files_need_no_token, test_cli_token_file,
             test_default_socket_held_only_warns, test_token_kept_secret]
    # the socket goes with its daemon: stopped first, it must remove it
    try:
        run_tests(tests, daemons, cleanup=lambda: (check_removed(daemons), cleanup()))
    finally:
        cleanup()


def check_removed(daemons):
    assert daemons[0].proc.poll() is not None
    if os.path.exists(DEFAULT_SOCKET):
        print("FAIL the socket is left after its tailprofd stopped")
        cleanup()
        sys.exit(1)
    print("ok   the socket was removed when its tailprofd stopped")


if __name__ == "__main__":
    main()
