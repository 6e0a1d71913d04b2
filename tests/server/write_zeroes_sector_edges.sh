#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# WRITE_ZEROES across one sector boundary, with no whole sector inside, on block devices
# of 512- and 4096-byte sectors, cached and O_DIRECT: exactly the range reads back as zeroes,
# the bytes around it stay, and the server stays up (tests/server/edge_clients.py zero_edges).
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/server/edge_lib.sh"
for ss in 512 4096; do
  truncate -s 8M "$T/dev$ss.img"
  loopdev=$(losetup --sector-size $ss -f --show "$T/dev$ss.img")
  DG_CLEANUP_EXTRA="${DG_CLEANUP_EXTRA:+$DG_CLEANUP_EXTRA; }losetup -d $loopdev 2>/dev/null"
  for cache in writeback direct; do
    dg_start --cache $cache "$loopdev"
    $PY "$EDGE" zero_edges "$DG_SOCK" $ss || fail "zero edges, $ss-byte sectors, $cache"
    kill -0 "$DG_PID" || fail "server died (zero edges, $ss, $cache)"
    dg_stop
  done
done
pass "WRITE_ZEROES across sector edges on block devices"
