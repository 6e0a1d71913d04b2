#!/usr/bin/env bash
# A client that never reads its replies: the server's memory stays bounded, other clients
# are served promptly, and SIGTERM still exits 0 within seconds (both engines).
. "$SRCDIR/tests/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
R="$SRCDIR/tests/server/edge_clients.py"
truncate -s 64M "$T/big.img"
for engine in uring threads; do
  DG_ENGINE=$engine dg_start "$T/big.img"
  coproc SLOW { $PY "$R" slow_reader "$DG_SOCK" "$DG_PID"; }
  read -r -t 30 line <&"${SLOW[0]}" || fail "slow reader check did not finish ($engine)"
  assert_eq "$line" ready "slow reader check ($engine)"
  start=$(date +%s)
  kill -TERM "$DG_PID"
  rc=0; wait "$DG_PID" || rc=$?
  took=$(( $(date +%s) - start ))
  assert_eq "$rc" 0 "exit status after SIGTERM with a non-reading client ($engine)"
  [ "$took" -le 9 ] || fail "SIGTERM took $took s with a non-reading client ($engine)"
  kill "$SLOW_PID" 2>/dev/null || true
  wait "$SLOW_PID" 2>/dev/null || true
done
pass "a client that never reads its replies"
