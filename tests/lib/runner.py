# SPDX-License-Identifier: GPL-2.0-only
"""The loop every integration test file ends with: run its tests against its daemons, say what
passed, and exit with the count."""
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
