#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fio's nbd engine writes with verify=crc32c at iodepth 32, over TCP and a Unix socket,
# with both cache modes; fio fails the run on any mismatch.
. "$SRCDIR/tests/lib.sh"

for cache in writeback direct; do
  truncate -s 64M "$T/disk.img"
  dg_start --cache "$cache" "$T/disk.img"
  for uri in "$DG_TCP" "$DG_UNIX"; do
    for rw in randwrite write; do
      (cd "$T" && fio --name=verify --ioengine=nbd --uri="$uri" --rw=$rw --bs=4k --bsrange=512-64k \
        --iodepth=32 --size=32M --verify=crc32c --verify_fatal=1 --do_verify=1 \
        --output="$T/fio.out" >/dev/null 2>&1) || { cat "$T/fio.out" >&2; fail "fio $rw via $uri ($cache)"; }
      grep -q 'err= 0' "$T/fio.out" || { cat "$T/fio.out" >&2; fail "fio reported an error ($rw, $uri)"; }
    done
  done
  dg_stop
  rm -f "$T/disk.img"
done
pass "fio verify"
