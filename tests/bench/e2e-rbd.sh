#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bench/e2e-rbd.sh: `diskgate bench --profile rbd` end to end on a 32 MiB image with
# 1-second runs: the bench starts its own Ceph cluster (scripts/ceph-cluster.sh), creates and
# fills the image, measures diskgate-rbd and qemu-nbd-rbd on it in the same run, and stops the
# cluster. The table has both rows with a positive figure, p99 and CPU figure in all four
# columns (4K random read/write, 1M sequential read/write), qemu-nbd-rbd is the 100% line,
# the servers' CPU was counted, and nothing of the cluster is left behind. Then an unusable
# --ceph-conf: one line per skipped row and exit status 2. About 40 s.
source "$SRCDIR/tests/lib.sh"

out=$T/out
rc=0
"$DISKGATE" bench --profile rbd --runtime 1 --runs 1 --ramp 0.5 --size 32M --dir "$T" \
  --out "$out" >"$T/stdout" 2>"$T/stderr" || rc=$?
if [ "$rc" -ne 0 ]; then
  cat "$T/stderr" >&2
  for f in "$out"/logs/*; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  fail "diskgate bench --profile rbd exited $rc"
fi
for f in bench.md bench.json bench.svg; do
  [ -s "$out/$f" ] || fail "no $f in $out"
done
[ ! -e "$T/diskgate-bench.img" ] || fail "an RBD-only run wrote a test file"

# The cluster the bench started is gone: its directory and its daemons.
cdir=$(sed -n 's/^diskgate bench: starting a throw-away Ceph cluster in \([^ ]*\) .*/\1/p' \
  "$T/stderr")
[ -n "$cdir" ] || { cat "$T/stderr" >&2; fail "the bench did not say where its cluster was"; }
[ ! -e "$cdir" ] || fail "the cluster directory $cdir was left behind"
if pgrep -f -- "$cdir/ceph.conf" >/dev/null; then
  fail "a process of the bench's cluster ($cdir) is still running"
fi
grep -q '^\[8/8\] qemu-nbd-rbd / ' "$T/stderr" || fail "no progress line for the 8th run"

$PY - "$out" <<'PYEOF' || fail "the report's shape or numbers are wrong"
import json, re, sys

out = sys.argv[1]
md = open(out + "/bench.md", encoding="utf-8").read()

def check(cond, what):
    if not cond:
        print("e2e-rbd: " + what, file=sys.stderr)
        print(md, file=sys.stderr)
        sys.exit(1)

def table(title_prefix):
    lines = md.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(title_prefix))
    rows = []
    for l in lines[start + 1:]:
        if l.startswith("|"):
            rows.append([c.strip() for c in l.strip().strip("|").split("|")])
        elif rows:
            break
    return rows

check("- RBD rows: image rbd/diskgate-bench (32 MiB" in md, "no RBD line in the header")
check("test file" not in md, "the header names a test file")
main = table("## RBD rows: throughput, higher is better (% of `qemu-nbd-rbd`")
check(main[0] == ["config", "1M seqread QD4, MB/s", "1M seqwrite QD4, MB/s",
                  "4K randread QD32, IOPS", "4K randwrite QD32, IOPS"], "header %r" % main[0])
check([r[0] for r in main[2:]] == ["diskgate-rbd", "qemu-nbd-rbd"], "rows %r" % main[2:])
cell = re.compile(r"^(\d+(\.\d+)?)([KM]| MB/s)? \((\d+(\.\d+)?)%\)$")
for r in main[2:]:
    for c in r[1:]:
        m = cell.match(c)
        check(m is not None, "cell %r is not 'value (NN%%)'" % c)
        check(float(m.group(1)) > 0 and float(m.group(4)) > 0, "cell %r is not positive" % c)
check(all(c.endswith("(100%)") for c in main[3][1:]), "qemu-nbd-rbd is not the 100% line")
for title in ("## p99", "## CPU-seconds"):
    rows = table(title)
    check([r[0] for r in rows[2:]] == ["diskgate-rbd", "qemu-nbd-rbd"], "%s rows" % title)
    for r in rows[2:]:
        for c in r[1:]:
            num = re.match(r"^(\d+(\.\d+)?(e-?\d+)?)", c)
            check(num is not None and float(num.group(1)) > 0, "%s cell %r" % (title, c))

data = json.load(open(out + "/bench.json"))
check(data["options"]["profile"] == "rbd", "profile")
check(data["rbd"].startswith("image rbd/diskgate-bench"), "rbd description")
check([c["kind"] for c in data["configs"]] == ["rbd", "rbd"], "config kinds")
check(len(data["cells"]) == 8, "%d cells" % len(data["cells"]))
for c in data["cells"]:
    check(c["state"] == "done", "%s/%s is %s" % (c["config"], c["workload"], c["state"]))
    check(c["median"]["pct_of"] == "qemu-nbd-rbd", "pct_of %r" % c["median"].get("pct_of"))
    for run in c["runs"]:
        for k in ("value", "iops", "ios", "p99_us", "cpu_server_s", "cpu_client_s"):
            check(run[k] > 0, "%s/%s run %s = %r" % (c["config"], c["workload"], k, run[k]))
PYEOF

# An unusable --ceph-conf: both rows skipped with one line each, nothing run, status 2.
rc=0
"$DISKGATE" bench --profile rbd --ceph-conf "$T/nonexistent.conf" --dir "$T" --out "$T/out2" \
  >"$T/stdout2" 2>"$T/stderr2" || rc=$?
assert_eq "$rc" 2 "exit status with an unreadable --ceph-conf"
assert_eq "$(wc -l <"$T/stderr2")" 2 "lines on stderr with an unreadable --ceph-conf"
grep -q "^diskgate bench: skipping diskgate-rbd: --ceph-conf $T/nonexistent.conf: No such file" \
  "$T/stderr2" || { cat "$T/stderr2" >&2; fail "the skip line"; }
[ ! -e "$T/out2" ] || fail "a skipped run created --out"

pass "diskgate bench --profile rbd: $(sed -n 's/^| \(diskgate-rbd\|qemu-nbd-rbd\) | \(.*\) |$/\1: \2;/p' "$out/bench.md" | head -2 | tr '\n' ' ')"
