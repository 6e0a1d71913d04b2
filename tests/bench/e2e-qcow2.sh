#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bench/e2e-qcow2.sh: the qcow2 profile end to end on a 32 MiB test file with 1-second
# runs, cut to qemu-nbd on the fully allocated image and on a fresh one, beside a diskgate
# that serves raw images only (a stub whose `serve --help` has no --format): that diskgate
# row is skipped with one line naming the binary; qemu-nbd's cells the targets read run
# (the fresh image's read cell, which no target reads, does not), bench.json has their
# VmHWM, the targets table has Q1-Q4 (all "not measured": every line needs a diskgate
# cell), --render gives bench.md back, and no image is left in --dir.
source "$SRCDIR/tests/lib.sh"

command -v qemu-img >/dev/null && command -v qemu-nbd >/dev/null ||
  fail "qemu-img and qemu-nbd are needed (apt-get install qemu-utils)"
printf '#!/bin/sh\necho "Usage: diskgate serve [--cache MODE] FILE"\n' >"$T/raw-only"
chmod +x "$T/raw-only"
mkdir -p "$T/dir"
rc=0
"$DISKGATE" bench --profile qcow2 --runs 1 --runtime 1 --size 32M --dir "$T/dir" \
  --out "$T/out" --diskgate "$T/raw-only" \
  --configs diskgate-qcow2,qemu-nbd-qcow2,qemu-nbd-qcow2-fresh \
  --workloads randread-4k,randwrite-4k >"$T/stdout" 2>"$T/stderr" || rc=$?
[ "$rc" -eq 0 ] || { cat "$T/stderr" >&2; fail "diskgate bench exited $rc"; }
skip="diskgate bench: skipping diskgate-qcow2: $T/raw-only serves raw images only"
grep -qxF "$skip (its \`serve --help\` has no --format)" "$T/stderr" ||
  { cat "$T/stderr" >&2; fail "no line skipping the raw-only diskgate"; }
left=$(find "$T/dir" -name '*.qcow2')
[ -z "$left" ] || fail "images left in --dir: $left"

$PY - "$T" <<'PYEOF' || fail "the qcow2 report is wrong"
import json, re, sys

t = sys.argv[1]

def check(cond, what):
    if not cond:
        print("e2e-qcow2: " + what, file=sys.stderr)
        sys.exit(1)

md = open(t + "/out/bench.md", encoding="utf-8").read()
check("## qcow2 rows: throughput" in md, "no qcow2 table")
check(re.search(r"^\| qemu-nbd-qcow2 \| [0-9.]+K? \(100%\) \| [0-9.]+K? \(100%\) \|$", md, re.M),
      "qemu-nbd-qcow2 did not run both cells")
check(re.search(r"^\| qemu-nbd-qcow2-fresh \| - \| [0-9.]+K? \([0-9]+%\) \|$", md, re.M),
      "qemu-nbd-qcow2-fresh: its write cell alone should run")
lines = [l for l in md.splitlines() if re.match(r"^\| Q[1-4] \|", l)]
check([l.split("|")[1].strip() for l in lines] == ["Q1", "Q1", "Q2", "Q3", "Q4"],
      "target lines %r" % lines)
check(all(l.split("|")[5].strip() == "not measured" for l in lines), "a target was judged")
data = json.load(open(t + "/out/bench.json"))
check(len(data["targets"]) == 5, "bench.json's targets")
runs = [r for c in data["cells"] if c["config"].startswith("qemu-nbd-qcow2")
        for r in c["runs"]]
check(len(runs) == 3 and all(r["hwm_kib"] > 0 for r in runs), "runs without VmHWM: %r" % runs)
PYEOF
"$DISKGATE" bench --render "$T/out/bench.json" --out "$T/again" >/dev/null ||
  fail "--render of the qcow2 run failed"
diff "$T/out/bench.md" "$T/again/bench.md" >&2 || fail "--render of the qcow2 run differs"
pass "diskgate bench --profile qcow2: qemu-nbd's qcow2 cells, Q1-Q4, a raw-only diskgate skipped"
