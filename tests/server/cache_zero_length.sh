#!/usr/bin/env bash
# NBD_CMD_CACHE of length 0 succeeds, as every other zero-length command does (both
# engines).
. "$SRCDIR/tests/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
R="$SRCDIR/tests/server/edge_clients.py"
truncate -s 1M "$T/disk.img"
for engine in uring threads; do
  DG_ENGINE=$engine dg_start "$T/disk.img"
  $PY "$R" cache_zero_length "$DG_SOCK" || fail "cache length 0 ($engine)"
  dg_stop
done
pass "cache length 0"
