#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bench/e2e-quick.sh: `diskgate bench --profile quick` end to end, with 1-second runs on a
# small file and no --dir: the three outputs exist, the report opens with the best row per
# column beside serve's default rows (flagged) and the one-run note, the Markdown table has one
# row per configuration and one column per workload (named with its unit), every number in it
# and in the JSON is positive, the SVG labels every bar, the test file's temporary folder is
# gone and nothing lands in the working directory, and --render gives the same table back.
source "$SRCDIR/tests/lib.sh"

out=$T/out
rc=0
mkdir "$T/cwd"
(cd "$T/cwd" && "$DISKGATE" bench --profile quick --runtime 1 --size 64M --out "$out" \
  >"$T/stdout" 2>"$T/stderr") || rc=$?
if [ "$rc" -ne 0 ]; then
  cat "$T/stderr" >&2
  for f in "$out"/logs/*; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }; done
  fail "diskgate bench --profile quick exited $rc"
fi
for f in bench.md bench.json bench.svg; do
  [ -s "$out/$f" ] || fail "no $f in $out"
done
grep -q '^\[1/[0-9]*\] host / ' "$T/stderr" || fail "no progress lines on stderr"
grep -q 'remaining ~' "$T/stderr" || fail "progress lines lack the remaining time"
[ -z "$(ls -A "$T/cwd")" ] || fail "the lab wrote into the working directory: $(ls -A "$T/cwd")"

# The configurations quick runs (loop devices need root).
expected=(host host-dev-4k diskgate-unix-direct-full diskgate-unix-writeback-full
          diskgate-dev-unix-writeback-full qemu-nbd-unix nbdkit-unix)
[ "$(id -u)" -eq 0 ] || expected=(host diskgate-unix-direct-full diskgate-unix-writeback-full
                                  qemu-nbd-unix nbdkit-unix)

$PY - "$out" "${expected[@]}" <<'PYEOF' || fail "the report's shape or numbers are wrong"
import json, os, re, sys

out, expected = sys.argv[1], sys.argv[2:]
md = open(out + "/bench.md", encoding="utf-8").read()

def table(title_prefix):
    """The rows of the first table after the heading starting with title_prefix."""
    lines = md.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(title_prefix))
    rows = []
    for l in lines[start + 1:]:
        if l.startswith("|"):
            rows.append([c.strip() for c in l.strip().strip("|").split("|")])
        elif rows:
            break
    return rows

def check(cond, what):
    if not cond:
        print("e2e-quick: " + what, file=sys.stderr)
        sys.exit(1)

DEFAULT = " **(default)**"
defaults = [n for n in expected if n.endswith("-writeback-full")]
heads = [l for l in md.splitlines() if l.startswith("## ")]
check(heads[0] == "## What this run shows", "the report opens with %r" % heads[0])
opening = md[:md.index("## How it was measured")]
check("> **One run per cell (runs=1): these figures are indicative only.**" in opening,
      "no one-run note")
summary = table("## What this run shows")
check(summary[0] == ["column", "best row", "best diskgate row"] +
      ["`%s` (default)" % n for n in defaults], "summary header %r" % summary[0])
check([r[0] for r in summary[2:]] == ["1M seqread QD4, MB/s", "4K randread QD32, IOPS"],
      "summary columns %r" % [r[0] for r in summary[2:]])
for r in summary[2:]:
    best = re.match(r"^`([a-z0-9-]+)`: (\d+(\.\d+)?)", r[1])
    check(best is not None and best.group(1) in expected, "best row %r" % r[1])
    check(re.match(r"^`diskgate-[a-z0-9-]+`: \d", r[2]) is not None, "best diskgate %r" % r[2])
    for c in r[3:]:
        check(re.match(r"^\d+(\.\d+)?([KM]| MB/s) \(\d+(\.\d+)?% of best\)$", c) is not None,
              "default cell %r" % c)

main = table("## Host and NBD rows: throughput, higher is better (% of `host`)")
check(main[0] == ["config", "1M seqread QD4, MB/s", "4K randread QD32, IOPS"],
      "header %r" % main[0])
check(set(main[1]) <= {"---", "---:"}, "separator %r" % main[1])
check([r[0] for r in main[2:] if r[0].endswith(DEFAULT)] == [n + DEFAULT for n in defaults],
      "flagged rows %r" % [r[0] for r in main[2:]])
for rows in (main,):
    for r in rows[2:]:
        r[0] = r[0].replace(DEFAULT, "")
check([r[0] for r in main[2:]] == expected, "rows %r" % [r[0] for r in main[2:]])
cell = re.compile(r"^(\d+(\.\d+)?)([KM]| MB/s) \((\d+(\.\d+)?)%\)$")
for r in main[2:]:
    check(len(r) == 3, "row %r has %d cells" % (r, len(r)))
    for c in r[1:]:
        m = cell.match(c)
        check(m is not None, "cell %r is not 'value (NN%%)'" % c)
        check(float(m.group(1)) > 0 and float(m.group(4)) > 0, "cell %r is not positive" % c)
check(main[2][1].endswith("(100%)") and main[2][2].endswith("(100%)"), "host is not 100%")
for title in ("## p99", "## CPU-seconds"):
    rows = table(title)
    check(" lower is better" in next(l for l in md.splitlines() if l.startswith(title)),
          "%s: no direction" % title)
    check([r[0].replace(DEFAULT, "") for r in rows[2:]] == expected, "%s rows" % title)
    for r in rows[2:]:
        for c in r[1:]:
            num = re.match(r"^(\d+(\.\d+)?(e-?\d+)?)", c)
            check(num is not None and float(num.group(1)) > 0, "%s cell %r" % (title, c))

data = json.load(open(out + "/bench.json"))
check(data["options"]["profile"] == "quick", "profile")
tmp = data["options"]["dir"]
check(tmp.startswith("/var/tmp/diskgate-bench."), "--dir defaulted to %r" % tmp)
check(not os.path.exists(tmp), "the temporary folder %s was left behind" % tmp)
for key in ("cpu_model", "cores", "kernel", "dir_fs"):
    check(data["machine"][key], "machine lacks " + key)
check(data["machine"]["versions"]["fio"].startswith("fio-"), "fio version")
check(len(data["cells"]) == 2 * len(expected), "%d cells" % len(data["cells"]))
for c in data["cells"]:
    check(c["state"] == "done", "%s/%s is %s" % (c["config"], c["workload"], c["state"]))
    m = c["median"]
    for k in ("value", "p99_us", "cpu_per_unit", "pct"):
        check(m[k] > 0, "%s/%s median %s = %r" % (c["config"], c["workload"], k, m[k]))
    check(len(c["runs"]) == 1, "runs kept")
    for run in c["runs"]:
        check(run["ok"], "run not ok")
        for k in ("value", "iops", "mbps", "ios", "p99_us", "cpu_client_s", "seconds"):
            check(run[k] > 0, "%s/%s run %s = %r" % (c["config"], c["workload"], k, run[k]))
        if c["config"] != "host" and not c["config"].startswith("host-"):
            check(run["cpu_server_s"] > 0, "%s: no server CPU" % c["config"])

svg = open(out + "/bench.svg").read()
check(svg.startswith("<svg ") and svg.rstrip().endswith("</svg>"), "svg")
check(svg.count("<title>") == 2 * len(expected), "svg bars: %d" % svg.count("<title>"))
check(svg.count('<text class="value"') == 2 * len(expected), "svg bar labels")
check(">diskgate bench: profile quick, " + data["started"][:10] + "</text>" in svg, "svg header")
check(">read-1m (MB/s)</text>" in svg and ">randread-4k (IOPS)</text>" in svg, "svg columns")
check(svg.count("(default: diskgate serve with no options)") == len(defaults), "svg legend")
PYEOF
# --render: the reports again from bench.json, identical Markdown
"$DISKGATE" bench --render "$out/bench.json" --out "$T/again" >"$T/again.stdout" ||
  fail "diskgate bench --render failed"
cmp -s "$out/bench.md" "$T/again/bench.md" || fail "--render gave a different bench.md"
cmp -s "$out/bench.md" "$T/again.stdout" || fail "--render printed a different table"
# bad_line WHAT MESSAGE ARGS...: `diskgate bench ARGS` exits 2 with exactly MESSAGE on stderr
bad_line() {
  local what=$1 want=$2 rc=0; shift 2
  "$DISKGATE" bench "$@" >/dev/null 2>"$T/bad.err" || rc=$?
  assert_eq "$rc" 2 "exit status of $what"
  assert_eq "$(cat "$T/bad.err")" "$want" "the message for $what"
}
# --render of a file that is not there: one line with the reason
bad_line "--render on a missing file" \
  "diskgate bench: cannot read $T/none.json: No such file or directory" \
  --render "$T/none.json" --out "$T/none"
# an --out that cannot be made, or is a file, is a bad command line: exit 2 before anything
# runs
bad_line "an --out that cannot be made" \
  "diskgate bench: cannot create --out /proc/none/out: No such file or directory" \
  --out /proc/none/out --size 16M --runtime 1
touch "$T/afile"
bad_line "an --out that is a file" \
  "diskgate bench: cannot create --out $T/afile: Not a directory" \
  --out "$T/afile" --size 16M --runtime 1

pass "diskgate bench --profile quick: $(grep -c '^| ' "$out/bench.md") table lines, all positive"
