#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# WRITEs cut short by peers that also stopped reading their replies: every such connection
# ends, so SIGTERM exits 0 within 3 s (both engines).
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/server/edge_lib.sh"
# check ENGINE: cut writes from six clients, then SIGTERM (a watchdog kills after 30 s).
check() {
  $PY "$EDGE" cut_writes "$DG_SOCK" || fail "cut writes ($1)"
  sleep 1
  start=$(date +%s)
  kill -TERM "$DG_PID"
  watchdog_start 30 "$DG_PID"
  rc=0; wait "$DG_PID" || rc=$?
  watchdog_stop
  took=$(( $(date +%s) - start ))
  assert_eq "$rc" 0 "exit status after SIGTERM following cut writes ($1)"
  [ "$took" -le 3 ] || fail "SIGTERM took $took s after cut writes ($1): a connection never ended"
}
edge_each_engine 64M check
pass "cut writes: every connection ends, SIGTERM exits promptly"
