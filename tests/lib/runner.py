# SPDX-License-Identifier: GPL-2.0-only
"""What every integration test file starts and ends with: check that it can load BPF, start its
daemons; run its tests against them, say what passed, and exit with the count."""
import os
import sys
import traceback


def run_tests(tests, daemons, cleanup=None):
    """Runs each test function with the first N daemons, N its number of arguments (t(),
    t(d), t(d, bare)); TAILPROF_TEST=PART runs only those whose name contains PART. Prints
    'ok NAME' or 'FAIL NAME' and the traceback, stops the daemons still running (the first one's
    output follows when a test failed), calls cleanup, prints 'N passed, M failed' and exits 1
    if any failed, else 0."""
    only = os.environ.get("TAILPROF_TEST")
    passed = failed = 0
    for t in tests:
        if only and only not in t.__name__:
            continue
        try:
            t(*daemons[:t.__code__.co_argcount])
            print("ok   %s" % t.__name__)
            passed += 1
        except Exception:
            print("FAIL %s" % t.__name__)
            traceback.print_exc()
            failed += 1
        sys.stdout.flush()
    for d in daemons:
        if d.proc.poll() is None:
            d.stop()
    if failed and daemons:
        print("--- tailprofd output ---\n" + daemons[0].output()[-4000:])
    if cleanup:
        cleanup()
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


IN_CI = os.environ.get("CI") == "true"


def skip(why):
    """Ends the test file: exit 77 (meson's skip), or with CI=true a failure (CI must run it)."""
    if IN_CI:
        print("FAIL: cannot run integration tests in CI: " + why)
        sys.exit(1)
    print("SKIP: " + why)
    sys.exit(77)


def require_bpf():
    """skip()s unless this runs as root on a kernel with BTF (what every integration test needs
    to load BPF)."""
    if os.geteuid() != 0:
        skip("needs root")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        skip("kernel has no BTF")


def start_daemons(make):
    """Returns make() (it starts the daemons a test file needs). Outside CI a daemon that does not
    come up is a skip(); with CI=true it is a failure."""
    try:
        return make()
    except RuntimeError as e:
        if IN_CI:
            raise
        skip(str(e))
