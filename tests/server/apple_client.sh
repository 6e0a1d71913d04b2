#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Apple's Virtualization.framework NBD client as it is reported to behave (docs/apple.md;
# tests/server/apple_client.py): NO_ZEROES, INFO then GO with NBD_INFO_BLOCK_SIZE, simple
# replies, a whole-device TRIM and a 3/4-device WRITE_ZEROES each bigger than the maximum
# block size, pipelined writes without FLUSH or FUA, and a server restart (SIGTERM, exit,
# start again on the same socket and port) while writes are in flight, after which the
# client reconnects and re-sends what had no reply: every write reads back, the export's
# size and block sizes never change. Over a Unix socket and TCP at once, with both engines
# and every cache mode.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

# Every cache mode serve has: the ones that never need a FLUSH (writethrough, directsync)
# are the ones Apple's client wants, and the others must not lose acknowledged writes
# across a restart either.
modes="writeback direct writethrough directsync"
for engine in uring threads; do
  for mode in $modes; do
    $PY "$HERE/apple_client.py" "$DISKGATE" "$engine" "$mode" "$T" ||
      fail "Apple's client against --engine $engine --cache $mode"
    rm -f "$T"/apple-*.img
  done
done
pass "Apple's client: every write reads back across a restart (cache modes: $modes)"
