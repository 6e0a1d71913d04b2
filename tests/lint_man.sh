#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The reference a user reads stays whole and true to the program:
# - each man page the build made renders with `man -l` at 80 columns, with no groff or tbl
#   warning and a NAME, SYNOPSIS and SEE ALSO section;
# - the options serve's and bench's pages list are exactly those their --help lists;
# - every docs/ page the man pages and README.md name, and every relative link in README.md,
#   is a file in the source tree;
# - README.md, the front door, is at most 150 lines.
# Needs SRCDIR, BUILDDIR and DISKGATE (tests/meson.build sets them).
set -euo pipefail
: "${SRCDIR:?SRCDIR must point at the source root}"
: "${BUILDDIR:?BUILDDIR must point at the build directory}"
: "${DISKGATE:?DISKGATE must point at the diskgate binary}"
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v man >/dev/null || fail "man not found (scripts/deps.sh test installs man-db)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0

# render FILE: the page at 80 columns on stdout, groff's and tbl's warnings on stderr.
render() { MANWIDTH=80 man --warnings=w -l "$1"; }   # groff -ww: every warning

# Self-check: a page with an undefined request must produce a warning here, or the check
# below could never fail.
printf '.TH X 1\n.SH NAME\nx \\- y\n.notamacro\n' >"$tmp/bad.1"
render "$tmp/bad.1" >/dev/null 2>"$tmp/bad.err" || true
[ -s "$tmp/bad.err" ] || fail "man --warnings=w reports no warning for an undefined request"

for page in diskgate.1 diskgate-serve.1 diskgate-bench.1 diskgate-ctl.1 diskgate.conf.5; do
  f=$BUILDDIR/man/$page
  if [ ! -s "$f" ]; then
    echo "FAIL: $f is missing or empty (is scdoc installed? meson -Dman=enabled)" >&2
    bad=1
    continue
  fi
  if ! render "$f" >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL: man -l $page failed: $(head -3 "$tmp/err")" >&2
    bad=1
  elif [ -s "$tmp/err" ]; then
    echo "FAIL: man -l $page warns:" >&2
    sed 's/^/  /' "$tmp/err" >&2
    bad=1
  fi
  for section in NAME SYNOPSIS 'SEE ALSO'; do
    grep -qx "$section" "$tmp/out" || { echo "FAIL: $page renders no $section section" >&2; bad=1; }
  done
done

# options_help ARGS...: the long options the --help text of `diskgate ARGS --help` lists.
options_help() {
  "$DISKGATE" "$@" --help | grep -oE '^ +--[a-z][a-z0-9-]*' | tr -d ' ' | sort -u
}
# options_page FILE: the options an scdoc page lists as terms (`*--name*` at a line's start).
options_page() {
  grep -oE '^\*--[a-z][a-z0-9-]*\*' "$1" | tr -d '*' | sort -u
}
for cmd in serve bench; do
  page=$SRCDIR/man/diskgate-$cmd.1.scd
  options_help "$cmd" >"$tmp/help"
  options_page "$page" >"$tmp/page"
  [ "$(wc -l <"$tmp/help")" -ge 5 ] || { echo "FAIL: diskgate $cmd --help lists no options" >&2; bad=1; }
  if ! diff -u "$tmp/help" "$tmp/page" >"$tmp/diff"; then
    echo "FAIL: diskgate $cmd --help (-) and diskgate-$cmd.1.scd (+) list different options:" >&2
    grep -E '^[-+]--[a-z]' "$tmp/diff" | sed 's/^/  /' >&2
    bad=1
  fi
done

# Links: README.md's relative links, and the source-tree files the pages and README name.
readme=$SRCDIR/README.md
{
  grep -oE '\]\([^)#]+' "$readme" | sed 's/^](//' | grep -vE '^[a-z]+:' || true
  grep -ohE '(docs|man)/[A-Za-z0-9_.-]+\.(md|scd)' "$readme" "$SRCDIR"/man/*.scd || true
} | sort -u >"$tmp/links"
[ -s "$tmp/links" ] || { echo "FAIL: README.md and the man pages link to no file" >&2; bad=1; }
while read -r link; do
  [ -e "$SRCDIR/$link" ] || { echo "FAIL: '$link' (README.md or man/) is not in the tree" >&2; bad=1; }
done <"$tmp/links"

lines=$(wc -l <"$readme")
[ "$lines" -le 150 ] || { echo "FAIL: README.md has $lines lines (at most 150)" >&2; bad=1; }
exit $bad
