#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every command a test checks for with `command -v NAME` must come from a Debian package
# that scripts/deps.sh installs: otherwise the suite passes on a machine that happens to
# have the package and fails on a fresh one (server-fast-zero-blockdev needs sfdisk, from
# fdisk, which a machine may happen to have).
# Each command a test checks with `command -v NAME ... || fail` must be installed, and the
# package that owns it (dpkg -S) must be one `scripts/deps.sh --list all` prints.
set -euo pipefail
: "${SRCDIR:?SRCDIR must point at the source root}"

listed=$(bash "$SRCDIR/scripts/deps.sh" --list all)
[ -n "$listed" ] || { echo "FAIL: scripts/deps.sh --list all printed no package" >&2; exit 1; }

# owner PATH: the Debian package that installed PATH (tries the /usr-merged twin too).
owner() {
  local p=$1 alt
  case "$p" in /usr/*) alt=${p#/usr} ;; *) alt=/usr$p ;; esac
  { dpkg -S "$p" 2>/dev/null || dpkg -S "$alt" 2>/dev/null || true; } | sed -n '1s/:.*//p' |
    sed 's/, .*//'
}

# Self-check on a command deps.sh lists: mkfs.ext4 is e2fsprogs'.
if command -v mkfs.ext4 >/dev/null; then
  [ "$(owner "$(command -v mkfs.ext4)")" = e2fsprogs ] ||
    { echo "FAIL: owner() does not find mkfs.ext4's package" >&2; exit 1; }
fi

bad=0
while read -r cmd; do
  path=$(command -v "$cmd" || true)
  if [ -z "$path" ]; then
    echo "FAIL: a test requires '$cmd', which is not installed: add its package to scripts/deps.sh" >&2
    bad=1
    continue
  fi
  case "$path" in /*) ;; *) continue ;; esac   # a shell builtin or function
  pkg=$(owner "$(readlink -f "$path")")
  [ -n "$pkg" ] || pkg=$(owner "$path")
  if [ -z "$pkg" ]; then
    echo "FAIL: '$cmd' ($path) belongs to no Debian package" >&2
    bad=1
  elif ! printf '%s\n' "$listed" | grep -Fx "${pkg%%:*}" >/dev/null; then
    echo "FAIL: tests need '$cmd' from package '$pkg', which scripts/deps.sh does not install" >&2
    bad=1
  fi
done < <(grep -rhoE 'command -v [A-Za-z0-9._+-]+( *>/dev/null)?( *2>&1)? *\|\| *fail' \
           "$SRCDIR/tests" --include='*.sh' --exclude='lint_deps_cover.sh' |
         awk '{print $3}' | sort -u)
exit $bad
