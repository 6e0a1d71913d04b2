#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bench/e2e-asif.sh: the asif profile end to end on a 32 MiB test file with 1-second
# runs, cut to the raw and ASIF rows, with --keep: both rows measure both cells, A1 and A2
# are judged (PASS or FAIL, never "not measured"), bench.json says the row's kind; the ASIF
# image the lab wrote, served by `diskgate serve --format asif`, reads back byte for byte as
# the test file; --render gives bench.md back; and a diskgate without ASIF has the row
# skipped with one line.
source "$SRCDIR/tests/lib.sh"

command -v nbdcopy >/dev/null || fail "nbdcopy is needed (apt-get install libnbd-bin)"
mkdir -p "$T/dir"
rc=0
"$DISKGATE" bench --profile asif --runs 1 --runtime 1 --size 32M --dir "$T/dir" --keep \
  --out "$T/out" --configs diskgate-unix-direct-full,diskgate-asif \
  >"$T/stdout" 2>"$T/stderr" || rc=$?
if [ "$rc" -ne 0 ]; then
  cat "$T/stderr" >&2
  for f in "$T"/out/logs/*; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  fail "diskgate bench --profile asif exited $rc"
fi
grep -q "writing the test file's data as an ASIF image $T/dir/diskgate-bench.asif" \
  "$T/stderr" || fail "no line for the ASIF image"

$PY - "$T" <<'PYEOF' || fail "the asif report is wrong"
import json, re, sys

t = sys.argv[1]

def check(cond, what):
    if not cond:
        print("e2e-asif: " + what, file=sys.stderr)
        sys.exit(1)

md = open(t + "/out/bench.md", encoding="utf-8").read()
for row in ("diskgate-unix-direct-full", "diskgate-asif"):
    check(re.search(r"^\| %s \| [0-9.]+ MB/s \| [0-9.]+K? \|$" % row, md, re.M),
          "%s did not measure both cells" % row)
lines = [l.split("|") for l in md.splitlines() if re.match(r"^\| A[12] \|", l)]
check([l[1].strip() for l in lines] == ["A1", "A2"], "target lines %r" % lines)
check(all(l[5].strip() in ("PASS", "FAIL") for l in lines), "a target was not judged")
check(all(re.match(r"^[0-9]+\.[0-9]{2}x$", l[3].strip()) for l in lines), "a ratio is missing")
data = json.load(open(t + "/out/bench.json"))
check([x["result"] for x in data["targets"]] == [l[5].strip() for l in lines],
      "bench.json's targets")
kinds = {c["name"]: c["kind"] for c in data["configs"]}
check(kinds.get("diskgate-asif") == "asif", "the row's kind: %r" % kinds)
PYEOF

# The image through the node: the export is the test file's size and bytes.
dg_start --format asif --read-only "$T/dir/diskgate-bench.asif"
size=$(nbdinfo --size "$DG_UNIX")
assert_eq "$size" 33554432 "the ASIF export's size"
nbdcopy "$DG_UNIX" "$T/copy" || fail "nbdcopy from the ASIF export failed"
cmp "$T/copy" "$T/dir/diskgate-bench.img" || fail "the ASIF export differs from the test file"
dg_stop

"$DISKGATE" bench --render "$T/out/bench.json" --out "$T/again" >/dev/null ||
  fail "--render of the asif run failed"
diff "$T/out/bench.md" "$T/again/bench.md" >&2 || fail "--render of the asif run differs"

# A diskgate that cannot serve ASIF: the row is skipped with one line (nothing left: exit 2).
printf '#!/bin/sh\necho "Usage: diskgate serve [--format auto|raw|qcow2] FILE"\n' >"$T/no-asif"
chmod +x "$T/no-asif"
rc=0
"$DISKGATE" bench --profile asif --runs 1 --runtime 1 --size 32M --dir "$T/dir" \
  --out "$T/out2" --diskgate "$T/no-asif" --configs diskgate-asif >/dev/null 2>"$T/stderr2" ||
  rc=$?
assert_eq "$rc" 2 "exit status with the ASIF row skipped and nothing left"
grep -qxF "diskgate bench: skipping diskgate-asif: $T/no-asif cannot serve ASIF images (its \`serve --help\` has no --format asif)" \
  "$T/stderr2" || { cat "$T/stderr2" >&2; fail "no line skipping the diskgate without ASIF"; }
pass "diskgate bench --profile asif: both rows, A1-A2 judged, the image read back byte for byte"
