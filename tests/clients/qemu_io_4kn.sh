#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# qemu-io write/read patterns, including 512-byte I/O at odd offsets, against a 4Kn loop
# device (losetup --sector-size 4096) served with and without --cache direct.
. "$SRCDIR/tests/lib.sh"

truncate -s 64M "$T/backing.img"
LOOP=$(losetup --sector-size 4096 -f --show "$T/backing.img")
DG_CLEANUP_EXTRA='losetup -d "$LOOP" 2>/dev/null'
assert_eq "$(blockdev --getss "$LOOP")" 4096 "loop device logical sector size"

for cache in direct writeback; do
  dg_start --cache "$cache" "$LOOP"
  for uri in "$DG_TCP" "$DG_UNIX"; do
    # 512-byte writes at odd sector offsets, each with its own pattern, then reads that
    # straddle them; the client's own alignment is the server's advertised minimum (4096),
    # so qemu-io's request_alignment RMW and ours meet here.
    out=$(qemu-io -f raw "$uri" \
      -c 'write -P 0x11 512 512' -c 'write -P 0x22 3584 1024' -c 'write -P 0x33 1048064 512' \
      -c 'read -P 0x11 512 512' -c 'read -P 0x22 3584 1024' -c 'read -P 0x33 1048064 512' \
      -c 'read -P 0 0 512' -c 'read -P 0 1024 2560' -c 'write -z 4608 512' -c 'read -P 0 4608 512' \
      2>&1) || fail "qemu-io via $uri ($cache): $out"
    if grep -qiE 'fail|error|mismatch' <<<"$out"; then fail "qemu-io via $uri ($cache): $out"; fi
  done
  dg_stop
  # The bytes on the device itself.
  assert_eq "$(dd if="$LOOP" bs=512 skip=1 count=1 status=none | od -An -v -tx1 | tr -s ' \n' '\n' | sort -u | tr -d '\n')" 11 "bytes 512-1023 of the device are 0x11 ($cache)"
  assert_eq "$(dd if="$LOOP" bs=512 skip=7 count=2 status=none | od -An -v -tx1 | tr -s ' \n' '\n' | sort -u | tr -d '\n')" 22 "bytes 3584-4607 of the device are 0x22 ($cache)"
  dd if=/dev/zero of="$LOOP" bs=1M count=2 status=none oflag=direct
done
pass "qemu-io on 4Kn"
