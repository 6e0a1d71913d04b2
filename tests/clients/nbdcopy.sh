#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdcopy a random image into diskgate and back out, over TCP and a Unix socket, comparing
# checksums; both cache modes.
. "$SRCDIR/tests/lib.sh"

mkrandom "$T/src.bin" $((48 * 1024 * 1024))
want=$(sha256sum <"$T/src.bin" | cut -d' ' -f1)
for cache in writeback direct; do
  truncate -s 48M "$T/disk.img"
  dg_start --cache "$cache" "$T/disk.img"
  for uri in "$DG_TCP" "$DG_UNIX"; do
    rm -f "$T/out.bin"
    nbdcopy "$T/src.bin" "$uri" || fail "nbdcopy into $uri ($cache)"
    nbdcopy "$uri" "$T/out.bin" || fail "nbdcopy out of $uri ($cache)"
    assert_eq "$(sha256sum <"$T/out.bin" | cut -d' ' -f1)" "$want" "round trip via $uri ($cache)"
  done
  dg_stop
  assert_eq "$(sha256sum <"$T/disk.img" | cut -d' ' -f1)" "$want" "image file after $cache"
  rm -f "$T/disk.img"
done
pass "nbdcopy"
