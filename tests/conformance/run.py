#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""run.py: the conformance runner (tests/conformance).

  run.py                 every rule test; prints one line per test, a per-rule summary and
                         "rules covered: N/35"
  run.py --case C02 ...  the tests of those field cases
  run.py -k TEXT         only tests whose name contains TEXT
  run.py --list          the tests and their rules

Environment: DISKGATE (the binary), DG_ENGINE (uring|threads, default uring),
CONFORMANCE_STRICT=1 (an XPASS fails the run), CONFORMANCE_TIMEOUT (seconds per test, 120),
CONFORMANCE_SERVER_ARGS (extra `diskgate serve` options for every server, e.g. --cache direct).
Exit status 0 iff no test failed except those in expected.py's EXPECTED_FAIL.
Must run under Debian's /usr/bin/python3 (python3-libnbd).
"""
import argparse
import os
import signal
import sys
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import framework as F  # noqa: E402
import nbdwire  # noqa: E402,F401
import t_handshake  # noqa: E402,F401
import t_meta  # noqa: E402,F401
import t_transmission  # noqa: E402,F401
import t_commands  # noqa: E402,F401
import t_cases  # noqa: E402,F401
from expected import EXPECTED_FAIL  # noqa: E402

NRULES = 35


class TestTimeout(Exception):
    pass


def on_alarm(_sig, _frame):
    raise TestTimeout("test timed out")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", nargs="*", default=None)
    ap.add_argument("-k", default=None)
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()

    names = {t.name for t in F.TESTS}
    unknown = sorted(set(EXPECTED_FAIL) - names)
    if unknown:
        print(f"expected.py lists unknown tests: {', '.join(unknown)}")
        return 2
    if len(names) != len(F.TESTS):
        print("two tests have the same name")
        return 2

    if a.case is not None:
        want = {c.upper() for c in a.case}
        tests = [t for t in F.TESTS if t.case in want]
        if not tests:
            print(f"no tests for cases {sorted(want)}")
            return 2
    else:
        tests = [t for t in F.TESTS if t.case is None]
    if a.k:
        tests = [t for t in tests if a.k in t.name]
    if a.list:
        for t in tests:
            print(f"{t.name:50s} {'rules ' + ','.join(map(str, t.rules)) if t.rules else t.case}"
                  f"{'' if t.counts else ' (stand-in, not counted)'}"
                  f"{'  [expected to fail: ' + EXPECTED_FAIL[t.name] + ']' if t.name in EXPECTED_FAIL else ''}")
        return 0

    diskgate = os.environ.get("DISKGATE")
    if not diskgate:
        print("DISKGATE must point at the diskgate binary")
        return 2
    ctx = F.Ctx(os.path.abspath(diskgate), os.environ.get("DG_ENGINE", "uring"),
                os.environ.get("SRCDIR", os.path.dirname(os.path.dirname(HERE))))
    timeout = int(os.environ.get("CONFORMANCE_TIMEOUT", "120"))
    strict = os.environ.get("CONFORMANCE_STRICT") == "1"
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    results = {}  # name -> (status, message)
    t_start = time.monotonic()
    try:
        for t in tests:
            t0 = time.monotonic()
            note = ""
            signal.alarm(timeout)
            try:
                note = t.fn(ctx) or ""
                ok, msg = True, note
            except Exception as e:  # noqa: BLE001
                ok = False
                msg = f"{type(e).__name__}: {e}" if not isinstance(e, AssertionError) else str(e)
                if not isinstance(e, (AssertionError, TestTimeout)):
                    msg += " | " + " / ".join(
                        ln.strip() for ln in traceback.format_exc().splitlines()[-4:-1])
            finally:
                signal.alarm(0)
            for kind, s in ctx.shared_alive():
                ok = False
                msg = (msg + " | " if msg else "") + \
                    f"the shared '{kind}' server died (exit {s.proc.returncode}): {s.log_tail()}"
                s.exit_checked = True
            dt = time.monotonic() - t0
            xfail = t.name in EXPECTED_FAIL
            if ok and not xfail:
                status = "PASS"
            elif ok and xfail:
                status = "XPASS"
                msg = (msg + " | " if msg else "") + \
                    "listed in expected.py: remove it from EXPECTED_FAIL"
            elif xfail:
                status = "XFAIL"
                msg = f"{msg} [expected: {EXPECTED_FAIL[t.name]}]"
            else:
                status = "FAIL"
            results[t.name] = (status, msg)
            label = ",".join(map(str, t.rules)) if t.rules else t.case
            print(f"{status:5s} {t.name} ({label}{'' if t.counts else ', stand-in'}; "
                  f"{dt:.1f}s){': ' + msg if msg else ''}", flush=True)
    finally:
        problems = ctx.cleanup()
    for p in problems:
        print(f"FAIL  suite: {p}")

    failed = [n for n, (s, _) in results.items() if s == "FAIL"] + (["suite"] if problems else [])
    xpassed = [n for n, (s, _) in results.items() if s == "XPASS"]
    print()
    if a.case is None and not a.k:
        covered = 0
        for r in range(1, NRULES + 1):
            mine = [t for t in tests if r in t.rules and t.counts]
            stand = [t for t in tests if r in t.rules and not t.counts]
            npass = sum(1 for t in mine if results[t.name][0] in ("PASS", "XPASS"))
            ok = bool(mine) and npass == len(mine)
            covered += ok
            why = ""
            if not mine:
                why = " (no test)"
            elif not ok:
                bad = [t.name for t in mine if results[t.name][0] not in ("PASS", "XPASS")]
                why = " (" + "; ".join(f"{n}: {results[n][0]}" for n in bad) + ")"
            extra = f", {len(stand)} stand-in" if stand else ""
            print(f"rule {r:2d}: {'covered    ' if ok else 'NOT covered'} "
                  f"{npass}/{len(mine)} tests pass{extra}{why}")
        print(f"rules covered: {covered}/{NRULES}")
    elif a.case is not None:
        for c in sorted({t.case for t in tests}):
            mine = [t for t in tests if t.case == c]
            npass = sum(1 for t in mine if results[t.name][0] in ("PASS", "XPASS"))
            print(f"case {c}: {npass}/{len(mine)} tests pass")
    counts = {s: sum(1 for v in results.values() if v[0] == s)
              for s in ("PASS", "FAIL", "XFAIL", "XPASS")}
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['XFAIL']} expected "
          f"failures, {counts['XPASS']} unexpected passes ({time.monotonic() - t_start:.0f} s)")
    if failed:
        print("failed: " + ", ".join(failed))
    if xpassed:
        print("unexpected passes (remove from expected.py): " + ", ".join(xpassed))
    return 1 if failed or (strict and xpassed) else 0


if __name__ == "__main__":
    sys.exit(main())
