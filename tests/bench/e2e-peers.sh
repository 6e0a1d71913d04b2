#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bench/e2e-peers.sh: the peers profile's targets table and an A/B, end to end on a small
# file with 1-second runs. The peers run, of a copy of the binary (--diskgate once), is cut to
# T1's Unix read cells and one cell no target reads: the legend names the copy, that cell is
# not run, T1's two Unix read lines get a value and a verdict, every other
# line says "not measured", and bench.json carries the same lines. The A/B runs two binaries
# as NAME@1 and NAME@2, the second with ARGS that change its cache mode, and has no targets.
# --render of either gives its bench.md back.
source "$SRCDIR/tests/lib.sh"

run_lab() { # OUT ARGS...: runs the lab into OUT, fails the test when it fails
  local out=$1 rc=0
  shift
  "$DISKGATE" bench --runtime 1 --size 32M --dir "$T" --out "$out" "$@" \
    >"$out.stdout" 2>"$out.stderr" || rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$out.stderr" >&2
    fail "diskgate bench $* exited $rc"
  fi
}

cp "$DISKGATE" "$T/diskgate-copy"
run_lab "$T/peers" --profile peers --runs 1 --diskgate "$T/diskgate-copy" \
  --configs host,host-batched,diskgate-unix-direct-full,qemu-nbd-unix \
  --workloads randread-4k,read-4k
run_lab "$T/ab" --configs diskgate-unix-direct-full --workloads randread-4k --rounds 2 \
  --diskgate "$T/diskgate-copy" --diskgate "$DISKGATE:--cache writeback"

$PY - "$T" <<'PYEOF' || fail "the targets table or the A/B is wrong"
import json, re, sys

t = sys.argv[1]

def check(cond, what):
    if not cond:
        print("e2e-peers: " + what, file=sys.stderr)
        sys.exit(1)

md = open(t + "/peers/bench.md", encoding="utf-8").read()
check(re.search(r"^\| host \| [0-9.]+K \(100%\) \| - \|$", md, re.M) is not None,
      "read-4k, which no target reads, ran on host")
check("- `diskgate-unix-direct-full`: " in md and "; binary: %s/diskgate-copy (diskgate " % t
      in md, "the legend does not name the binary measured")
lines = [l for l in md.splitlines() if re.match(r"^\| T[1-6] \|", l)]
check(len(lines) == 18, "%d target lines" % len(lines))
cells = [[c.strip() for c in l.strip("|").split("|")] for l in lines]
for i, c in enumerate(cells):
    if i in (0, 1):
        check(c[1].startswith("4K randread QD32 1 conn unix"), "line %d: %r" % (i, c))
        check(re.match(r"^[0-9]+\.[0-9]{2}x$", c[2]) is not None, "value %r" % c[2])
        check(c[4] in ("PASS", "FAIL", "FAIL (limit)"), "result %r" % c[4])
    else:
        check(c[4] == "not measured", "line %d: %r" % (i, c))
data = json.load(open(t + "/peers/bench.json"))
check([x["result"] for x in data["targets"]] == [c[4] for c in cells], "bench.json's targets")
run = next(c for c in data["cells"] if c["config"] == "host" and c["workload"] == "randread-4k")
check(run["runs"][0]["p50_us"] > 0 and run["runs"][0]["client_sys_us_per_io"] > 0,
      "host run lacks p50 or fio's kernel CPU: %r" % run["runs"][0])
run = next(c for c in data["cells"] if c["config"] == "diskgate-unix-direct-full")
check(run["runs"][0]["rss_max_kib"] > 0, "diskgate run lacks its VmRSS")

ab = json.load(open(t + "/ab/bench.json"))
check([c["name"] for c in ab["configs"]] ==
      ["diskgate-unix-direct-full@1", "diskgate-unix-direct-full@2"], "A/B rows")
check("targets" not in ab, "an A/B with targets")
for c in ab["cells"]:
    check(c["state"] == "done" and len(c["runs"]) == 2, "A/B cell %r" % c["config"])
PYEOF
for run in peers ab; do # --render gives the same report back, targets and A/B rows included
  "$DISKGATE" bench --render "$T/$run/bench.json" --out "$T/$run-again" >/dev/null ||
    fail "--render of the $run run failed"
  diff "$T/$run/bench.md" "$T/$run-again/bench.md" >&2 || fail "--render of $run differs"
done
grep -q "cache writeback" "$T"/ab/logs/server-r1-diskgate-unix-direct-full@2.log ||
  fail "the second binary's ARGS did not reach its serve"
grep -q "cache direct" "$T"/ab/logs/server-r1-diskgate-unix-direct-full@1.log ||
  fail "the first binary did not serve --cache direct"
pass "diskgate bench --profile peers: 18 target lines; an A/B of two binaries"
