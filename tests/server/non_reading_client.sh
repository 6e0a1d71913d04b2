#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A client that never reads its replies: the server's memory stays bounded, other clients
# are served promptly, and SIGTERM still exits 0 within seconds (both engines, at once: each
# run mostly waits for the server's shutdown).
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/server/edge_lib.sh"
# check ENGINE: the non-reading client holds its connection until SIGTERM has been answered.
check() {
  coproc SLOW { $PY "$EDGE" slow_reader "$DG_SOCK" "$DG_PID"; }
  read -r -t 30 line <&"${SLOW[0]}" || fail "slow reader check did not finish ($1)"
  assert_eq "$line" ready "slow reader check ($1)"
  start=$(date +%s)
  kill -TERM "$DG_PID"
  rc=0; wait "$DG_PID" || rc=$?
  took=$(( $(date +%s) - start ))
  assert_eq "$rc" 0 "exit status after SIGTERM with a non-reading client ($1)"
  [ "$took" -le 9 ] || fail "SIGTERM took $took s with a non-reading client ($1)"
  kill "$SLOW_PID" 2>/dev/null || true
  wait "$SLOW_PID" 2>/dev/null || true
}
edge_engines_at_once 64M check
pass "a client that never reads its replies"
