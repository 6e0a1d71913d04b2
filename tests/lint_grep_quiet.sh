#!/usr/bin/env bash
# Under `set -o pipefail` (tests/lib.sh and the scripts set it), `CMD | grep -q PATTERN`
# fails at random: grep exits at its first match, CMD dies of SIGPIPE if it is still
# writing, and the pipeline's status is then 141, not 0. That made regressions check 10
# run in the ASan build, where it must be skipped, and fail (2026-12-01). `grep PATTERN
# >/dev/null` reads to the end. This test fails while any shell script of the project
# pipes into a quiet grep.
set -euo pipefail
: "${SRCDIR:?SRCDIR must point at the source root}"
cd "$SRCDIR"
hits=$(grep -rnE --include='*.sh' --include='run' --include='check' \
  '\|[[:space:]]*grep[[:space:]]+(-[a-zA-Z]*q|--quiet|--silent)' \
  tests scripts bench .ci Makefile 2>/dev/null | grep -v '^tests/lint_grep_quiet.sh:' || true)
if [ -n "$hits" ]; then
  echo "$hits" >&2
  echo "FAIL: a pipe into a quiet grep (flaky under pipefail; use grep PATTERN >/dev/null)" >&2
  exit 1
fi
echo "ok: no pipe into a quiet grep"
