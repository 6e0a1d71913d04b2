#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writes over allocated qcow2 clusters (every L2 entry normal with refcount 1, every
# subcluster allocated) go straight to the image file (qcow2_submit.c's fast path): whole-image
# copies, unaligned pieces and FUA writes land where qemu-img reads them, the image still
# passes `qemu-img check`, and the file does not grow. Both cluster layouts: standard and
# extended L2 entries (every subcluster allocated).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

SIZE=$((8 << 20))
mkrandom "$T/data.raw" $SIZE
for opts in cluster_size=64k extended_l2=on,cluster_size=128k cluster_size=4k; do
  img=$T/pre.qcow2
  rm -f "$img"
  qemu-img create -q -f qcow2 -o "preallocation=metadata,$opts" "$img" $SIZE
  # with extended L2 entries preallocation leaves the subclusters unallocated: fill them
  qemu-io -f qcow2 -c "write -P 0 0 $SIZE" "$img" >/dev/null
  before=$(stat -c %s "$img")
  dg_start "$img"
  nbdcopy "$DG_UNIX" null: || fail "reading the image first caches its L2 tables ($opts)"
  nbdcopy --flush "$T/data.raw" "$DG_UNIX" || fail "nbdcopy into diskgate ($opts)"
  cp "$T/data.raw" "$T/want.raw"
  # FUA writes and unaligned ones, applied to the reference copy too.
  qemu-io -f raw -c 'write -f -P 0x7e 65536 4096' -c 'write -P 0x3c 1000001 77777' \
    -c 'write -f -P 0x11 8388000 192' "$DG_UNIX" >/dev/null || fail "qemu-io writes ($opts)"
  qemu-io -f raw -c 'write -P 0x7e 65536 4096' -c 'write -P 0x3c 1000001 77777' \
    -c 'write -P 0x11 8388000 192' "$T/want.raw" >/dev/null
  qemu-img compare -q -f raw -F raw "$T/want.raw" "$DG_UNIX" || fail "bytes served ($opts)"
  dg_stop
  qemu-img check -q "$img" || fail "qemu-img check after fast writes ($opts)"
  qemu-img compare -q -f raw -F qcow2 "$T/want.raw" "$img" || fail "bytes in the image ($opts)"
  assert_eq "$(stat -c %s "$img")" "$before" "image file size after writes in place ($opts)"
done
pass "writes over allocated clusters land in place, FUA included, for both L2 layouts"
