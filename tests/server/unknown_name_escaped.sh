#!/usr/bin/env bash
# An unknown export name with a newline and a non-UTF-8 byte gets NBD_REP_ERR_UNKNOWN and goes
# into the log escaped, never as raw bytes that could forge a log line (both engines).
. "$SRCDIR/tests/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
R="$SRCDIR/tests/server/edge_clients.py"
truncate -s 1M "$T/disk.img"
for engine in uring threads; do
  DG_ENGINE=$engine dg_start "$T/disk.img"
  $PY "$R" unknown_name_escaped "$DG_SOCK" "$DG_LOG" || fail "escaped name ($engine)"
  dg_stop
done
pass "escaped name"
