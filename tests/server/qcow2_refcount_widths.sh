#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Allocation under every refcount width (qemu-img create -o refcount_bits=1..64) with
# 64 KiB and 512 B clusters: nbdcopy writes random data through diskgate, then the image
# reads back as the data (qemu-img compare) and `qemu-img check` finds no error and no
# leak. With 512 B clusters and 32- or 64-bit refcounts a refcount block counts only 128
# or 64 clusters, so 16 MiB of allocations already need hundreds of new refcount blocks
# and moves of the refcount table to larger ones (checked in the header); the 64-bit case
# goes on past 128 MiB, where an allocator that cannot grow its table far enough fails.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

be32() { od -An -tx1 -j "$2" -N4 "$1" | tr -d ' \n' | { read -r h; echo $((16#$h)); }; }

mkrandom "$T/small.raw" $((16 << 20))
mkrandom "$T/big.raw" $((160 << 20))
for bits in 1 2 4 8 16 32 64; do
  for cs in 65536 512; do
    src=$T/small.raw
    if [ "$cs" = 512 ] && [ "$bits" = 64 ]; then src=$T/big.raw; fi
    size=$(stat -c %s "$src")
    what="refcount_bits=$bits cluster_size=$cs, $((size >> 20)) MiB"
    qemu-img create -q -f qcow2 -o "refcount_bits=$bits,cluster_size=$cs" "$T/img.qcow2" "$size"
    before=$(be32 "$T/img.qcow2" 56)
    dg_start "$T/img.qcow2"
    nbdcopy "$src" "$DG_UNIX" 2>"$T/copy.err" || fail "$what: nbdcopy: $(cat "$T/copy.err")"
    dg_stop
    qcow2_check_clean "$T/img.qcow2" "$what"
    qemu-img compare -q -f qcow2 -F raw "$T/img.qcow2" "$src" || fail "$what: the data differs"
    if [ "$cs" = 512 ] && [ "$bits" -ge 32 ]; then
      clusters=$(be32 "$T/img.qcow2" 56)
      [ "$clusters" -gt "$before" ] ||
        fail "$what: refcount_table_clusters is $clusters, as before: the table never grew"
    fi
  done
done
pass "every refcount width allocates past its first refcount blocks and table"
