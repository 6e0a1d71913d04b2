#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds diskgate twice (plain, and ASan+UBSan) and runs the whole suite on both.
# Ends with one line "N passed, N failed" (every test of both builds). Exit 0 iff all pass.
# Usage: scripts/check.sh [BUILD_DIR] [ASAN_BUILD_DIR]   (SUITE_BUILDS="plain" to skip ASan)
set -uo pipefail
cd "$(dirname "$0")/.."
plain=${1:-build}
asan=${2:-build-asan}
builds=${SUITE_BUILDS:-plain asan}

setup() { # dir, extra meson args...
  local dir=$1; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >/dev/null || return 1
  fi
  ninja -C "$dir" >/dev/null || { ninja -C "$dir"; return 1; }
}

passed=0; failed=0; rc=0
for b in $builds; do
  case $b in
    plain) dir=$plain; args=(); export DG_ENGINE=uring ;;
    asan) dir=$asan; args=(-Db_sanitize=address,undefined -Db_lundef=false); export DG_ENGINE=threads ;;
    *) echo "check.sh: unknown build '$b'" >&2; exit 2 ;;
  esac
  echo "== build: $b ($dir), engine $DG_ENGINE"
  if ! setup "$dir" "${args[@]}"; then
    echo "check.sh: the $b build failed" >&2; failed=$((failed + 1)); rc=1; continue
  fi
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  meson test -C "$dir" --print-errorlogs --num-processes 1 ${MESON_TEST_ARGS:-} || rc=1
  log="$dir/meson-logs/testlog.json"
  if [ -f "$log" ]; then
    p=$(grep -c '"result": "OK"' "$log"); f=$(grep -Ec '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log")
    s=$(grep -c '"result": "SKIP"' "$log")
    echo "== $b: $p passed, $f failed, $s skipped"
    passed=$((passed + p)); failed=$((failed + f + s))
  fi
done
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ] && exit "$rc" || exit 1
