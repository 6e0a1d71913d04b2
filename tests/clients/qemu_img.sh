#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# qemu-img convert into nbd:// and nbd+unix:// URIs, then qemu-img compare against the file.
. "$SRCDIR/tests/lib.sh"

mkrandom "$T/src.bin" $((8 * 1024 * 1024))
truncate -s 24M "$T/src.bin" # a sparse tail too
truncate -s 24M "$T/disk.img"
dg_start "$T/disk.img" --export "my disk"
tcp="nbd://127.0.0.1:$DG_PORT/my%20disk"
unix="nbd+unix:///my%20disk?socket=$DG_SOCK"
grep -qF "$tcp" "$DG_LOG" || fail "start-up line lacks the percent-encoded TCP URI $tcp"
grep -qF "$unix" "$DG_LOG" || fail "start-up line lacks the Unix URI $unix"
for uri in "$tcp" "$unix"; do
  qemu-img convert -n -f raw -O raw "$T/src.bin" "$uri" || fail "qemu-img convert to $uri"
  qemu-img compare -f raw -F raw "$T/src.bin" "$uri" || fail "qemu-img compare with $uri"
  # A difference must be seen: change one byte of the source and compare again.
  cp "$T/src.bin" "$T/other.bin"
  flip_byte "$T/other.bin" 5000000
  cmp -s "$T/src.bin" "$T/other.bin" && fail "negative control: the changed copy equals the source"
  if qemu-img compare -q -f raw -F raw "$T/other.bin" "$uri"; then
    fail "qemu-img compare missed a changed byte via $uri"
  fi
done
dg_stop
pass "qemu-img"
