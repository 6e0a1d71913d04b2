#!/usr/bin/env bash
# WRITEs cut short by peers that also stopped reading their replies: every such connection
# ends, so SIGTERM exits 0 within 3 s (both engines).
. "$SRCDIR/tests/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
R="$SRCDIR/tests/server/edge_clients.py"
truncate -s 64M "$T/cut.img"
for engine in uring threads; do
  DG_ENGINE=$engine dg_start "$T/cut.img"
  $PY "$R" cut_writes "$DG_SOCK" || fail "cut writes ($engine)"
  sleep 1
  start=$(date +%s)
  kill -TERM "$DG_PID"
  ( sleep 30; kill -KILL "$DG_PID" 2>/dev/null ) &
  watchdog=$!
  rc=0; wait "$DG_PID" || rc=$?
  kill "$watchdog" 2>/dev/null || true
  took=$(( $(date +%s) - start ))
  assert_eq "$rc" 0 "exit status after SIGTERM following cut writes ($engine)"
  [ "$took" -le 3 ] || fail "SIGTERM took $took s after cut writes ($engine): a connection never ended"
done
pass "cut writes: every connection ends, SIGTERM exits promptly"
