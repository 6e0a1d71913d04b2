#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Under `set -o pipefail` (tests/lib.sh and the scripts set it), `CMD | grep -q PATTERN`
# fails at random: grep exits at its first match, CMD dies of SIGPIPE if it is still
# writing, and the pipeline's status is then 141, not 0 (so a check that must be skipped in
# the ASan build could run there and fail). `grep PATTERN >/dev/null` reads to the end.
# This test fails while any shell script of the project (*.sh, scripts with a shell
# shebang, the Makefile; continued lines joined) pipes into a reader that stops early:
# grep/egrep/fgrep with -q, --quiet, --silent or -m, or an awk program with `exit`. A line
# that ends the pipeline with `|| true`, or carries the comment `# pipe-ok`, is exempt.
# `| head` is not checked: most uses read output written at once.
# The scanner checks itself first on lines it must and must not catch.
set -euo pipefail
: "${SRCDIR:?SRCDIR must point at the source root}"

# scan FILE...: prints FILE:LINE:TEXT for each offending logical line.
scan() {
  awk '
    FNR == 1 { cont = 0 }
    {
      if (cont) { buf = buf " " $0 } else { buf = $0; start = FNR }
      if (buf ~ /\\$/) { sub(/\\$/, "", buf); cont = 1; next }
      if (buf ~ /\|[ \t]*$/) { cont = 1; next }  # a pipeline goes on after a trailing |
      cont = 0
      if (buf ~ /\|\| *true/ || buf ~ /# pipe-ok/) { next }
      if (buf ~ /\|[ \t]*[ef]?grep([ \t]+-[^ \t|]*)*[ \t]+(-[a-zA-Z]*[qm][a-zA-Z0-9]*|--quiet|--silent|--max-count[^ \t]*)([ \t]|$)/ ||
          buf ~ /\|[ \t]*awk[^|]*exit/) {
        print FILENAME ":" start ":" buf
      }
    }' "$@"
}

self=$(mktemp)
trap 'rm -f "$self"' EXIT
cat >"$self" <<'SAMPLE'
ldd x | grep -q libasan
ldd x | grep -E -q 'a|b'
ldd x | egrep -q a
ldd x |
  grep --quiet a
ldd x | \
  grep -qE a
x=$(cmd | awk '/^V/ { print $2; exit }')
cmd | grep -m1 a
ok1 | grep a >/dev/null
ok2 | grep -q a || true
ok3 | grep -c a
ok4 | grep -q a # pipe-ok: the writer writes once
SAMPLE
caught=$(scan "$self" | wc -l)
[ "$caught" -eq 7 ] || { scan "$self" >&2; echo "FAIL: the scanner caught $caught of 7 sample lines" >&2; exit 1; }

cd "$SRCDIR"
files=()
while IFS= read -r f; do
  case $f in
    *.sh | Makefile | .ci/*) files+=("$f") ;;
    *) head -n1 "$f" | grep -E '^#!.*(ba)?sh' >/dev/null && files+=("$f") ;;
  esac
done < <(find tests scripts bench .ci Makefile -type f \
  ! -path '*/fixtures/*' ! -path '*/results/*' ! -path '*/corpus/*' ! -path '*/crashes/*' \
  ! -name 'lint_grep_quiet.sh' ! -name '*.py' ! -name '*.c' ! -name '*.h' ! -name '*.md' \
  ! -name '*.json' ! -name '*.svg' ! -name 'meson.build' 2>/dev/null)
[ "${#files[@]}" -gt 20 ] || { echo "FAIL: only ${#files[@]} shell scripts found" >&2; exit 1; }
hits=$(scan "${files[@]}")
if [ -n "$hits" ]; then
  echo "$hits" >&2
  echo "FAIL: a pipe into a reader that stops early (flaky under pipefail; use grep PATTERN >/dev/null)" >&2
  exit 1
fi
echo "ok: no pipe into a reader that stops early (${#files[@]} scripts)"
