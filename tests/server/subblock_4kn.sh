#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C06: sub-block I/O on a 4Kn device (losetup --sector-size 4096), served with the default
# cache and with --cache direct (O_DIRECT: the server must read-modify-write through aligned
# bounce buffers). tests/server/subblock.py sends READ 1024+1024, WRITE 512+512,
# TRIM 512+3584, WRITE_ZEROES inside/across blocks, odd-length reads and writes at odd offsets
# (also at the device's end), a FUA write, and many concurrent unaligned reads/writes sharing
# blocks (disjoint: exact result; overlapping: each byte from one covering write).
# Every request must succeed (never EIO) and read back right; after the server stops, the
# loop device's backing file, read directly, must equal the client's model.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

mkrandom "$T/4kn.img" $((16 << 20))
LOOP=$(losetup --sector-size 4096 -f --show "$T/4kn.img")
DG_CLEANUP_EXTRA="losetup -d $LOOP"
assert_eq "$(blockdev --getss "$LOOP")" 4096 "logical sector size of $LOOP"

seed=1
for cache in writeback direct; do
  dg_start --cache "$cache" "$LOOP"
  PYTHONPATH=$HERE $PY "$HERE/subblock.py" "$DG_UNIX" "$T/4kn.img" "$seed" \
    || { cat "$DG_LOG" >&2; fail "sub-block I/O with --cache $cache"; }
  dg_stop
  # a separate path: the backing file itself, after the server closed the device
  cmp "$T/4kn.img" "$T/4kn.img.model" >&2 \
    || fail "--cache $cache: backing file differs from what the client wrote and read"
  seed=$((seed + 1))
done
pass "C06 sub-block I/O on 4Kn"
