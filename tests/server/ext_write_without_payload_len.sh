#!/usr/bin/env bash
# Extended headers: a WRITE without NBD_CMD_FLAG_PAYLOAD_LEN gets EINVAL and its data is
# skipped, never parsed as requests; the next request is served (both engines).
. "$SRCDIR/tests/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
R="$SRCDIR/tests/server/edge_clients.py"
truncate -s 1M "$T/disk.img"
for engine in uring threads; do
  DG_ENGINE=$engine dg_start "$T/disk.img"
  $PY "$R" ext_write_without_flag "$DG_SOCK" || fail "ext write without flag ($engine)"
  dg_stop
done
pass "ext write without flag"
