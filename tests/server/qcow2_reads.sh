#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# qcow2 reads and allocation maps against QEMU's: images made by qemu-img and qemu-io with
# clusters of 512 B, 4 KiB, 64 KiB and 2 MiB, version 2 (compat=0.10) and 3, extended L2
# entries, compressed clusters (zlib and zstd), and a chain qcow2 -> qcow2 -> raw whose base
# is shorter than the top. For each, the bytes diskgate serves equal `qemu-img convert -O
# raw`'s, and nbdinfo --map of base:allocation and qemu:allocation-depth, and qemu-img map,
# equal qemu-nbd -A's.
# A small --l2-cache-size makes the 512 B image evict tables on every read; --cache direct
# (O_DIRECT) makes the image file demand aligned I/O.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

SIZE=$((6 << 20))

# fill IMG: data written in pieces, unaligned edges, zeroes written, a discard.
fill() {
  qemu-io -f qcow2 -c 'write -P 0x5a 0 1M' -c 'write -P 0x33 1536k 100k' \
    -c 'write -P 0x44 3000001 70000' -c 'write -z 2M 512k' -c 'discard 2560k 64k' \
    -c 'write -P 0x66 5M 4k' "$1" >/dev/null
}

# check IMG [serve options]: diskgate's bytes and maps against qemu-img's and qemu-nbd's.
check() {
  local img=$1 name
  name=$(basename "$img")
  shift
  qemu-img convert -q -O raw "$img" "$T/want.raw"
  dg_start --read-only "$@" "$img"
  assert_eq "$(nbdinfo --size "$DG_UNIX")" "$(stat -c %s "$T/want.raw")" "size of $name"
  rm -f "$T/got.raw"
  nbdcopy "$DG_UNIX" "$T/got.raw" || fail "nbdcopy from diskgate ($name)"
  cmp "$T/want.raw" "$T/got.raw" || fail "bytes of $name differ from qemu-img convert's"
  rm -f "$T/q.sock"
  qemu-nbd -t -A -r -f qcow2 -k "$T/q.sock" "$img" &
  local qpid=$!
  DG_PIDS+=("$qpid")
  wait_until 10 test -S "$T/q.sock" || fail "qemu-nbd did not start ($name)"
  for ctx in base:allocation qemu:allocation-depth; do
    assert_eq "$(nbdinfo --map="$ctx" "$DG_UNIX")" \
      "$(nbdinfo --map="$ctx" "nbd+unix:///?socket=$T/q.sock")" "map $ctx of $name"
  done
  assert_eq "$(qemu-img map -f raw --output=json "$DG_UNIX")" \
    "$(qemu-img map -f raw --output=json "nbd+unix:///?socket=$T/q.sock")" "qemu-img map of $name"
  kill "$qpid"
  wait "$qpid" 2>/dev/null || true
  dg_stop
}

for cs in 512 4k 64k 2M; do
  qemu-img create -q -f qcow2 -o cluster_size=$cs "$T/c$cs.qcow2" $SIZE
  fill "$T/c$cs.qcow2"
  check "$T/c$cs.qcow2"
done
check "$T/c512.qcow2" --l2-cache-size 64K
check "$T/c512.qcow2" --cache direct # O_DIRECT: 512 B clusters read through aligned bounces

# Fragmented: 512 B clusters written backwards, so no two neighbours are contiguous in the
# file and one request maps to hundreds of runs (more than the fast path plans on its stack).
qemu-img create -q -f qcow2 -o cluster_size=512 "$T/frag.qcow2" $SIZE
for ((i = 2047; i >= 0; i--)); do echo "write -P $((i % 251)) $((i * 512)) 512"; done |
  qemu-io -f qcow2 "$T/frag.qcow2" >/dev/null
check "$T/frag.qcow2"

qemu-img create -q -f qcow2 -o compat=0.10 "$T/v2.qcow2" $SIZE
fill "$T/v2.qcow2"
check "$T/v2.qcow2"

for cs in 64k 2M; do
  qemu-img create -q -f qcow2 -o extended_l2=on,cluster_size=$cs "$T/ext$cs.qcow2" $SIZE
  fill "$T/ext$cs.qcow2"
  check "$T/ext$cs.qcow2"
done

# Compressible data with holes: text repeated, zeroes between.
python3 - "$T/text.raw" $SIZE <<'EOF'
import sys
path, size = sys.argv[1], int(sys.argv[2])
line = b"".join(b"line %08d of a compressible qcow2 test image\n" % i for i in range(4000))
data = bytearray(size)
for start in range(0, size, 1 << 20):
    chunk = line[: 600 << 10]
    data[start + 4096 + 17 : start + 4096 + 17 + len(chunk)] = chunk
open(path, "wb").write(bytes(data))
EOF
qemu-img convert -q -c -f raw -O qcow2 "$T/text.raw" "$T/zlib.qcow2"
check "$T/zlib.qcow2"
qemu-img convert -q -c -f raw -O qcow2 -o compression_type=zstd "$T/text.raw" "$T/zstd.qcow2"
check "$T/zstd.qcow2"
qemu-img convert -q -c -f raw -O qcow2 -o cluster_size=4k,compat=0.10 "$T/text.raw" "$T/zv2.qcow2"
check "$T/zv2.qcow2"

# A chain: raw base of 4 MiB <- qcow2 mid (5 MiB) <- qcow2 top (6 MiB), relative names.
mkdir -p "$T/chain"
mkrandom "$T/chain/base.raw" $((4 << 20))
(cd "$T/chain" && qemu-img create -q -f qcow2 -b base.raw -F raw mid.qcow2 5M &&
  qemu-img create -q -f qcow2 -o cluster_size=4k -b mid.qcow2 -F qcow2 top.qcow2 $SIZE)
qemu-io -f qcow2 -c 'write -P 0x11 1M 64k' -c 'write -z 3M 8k' -c 'write -P 0x12 4600k 4k' \
  "$T/chain/mid.qcow2" >/dev/null
qemu-io -f qcow2 -c 'write -P 0x21 1028k 4k' -c 'write -z 2M 4k' -c 'write -P 0x22 5800k 3k' \
  "$T/chain/top.qcow2" >/dev/null
check "$T/chain/top.qcow2"
check "$T/chain/top.qcow2" --cache direct
pass "qcow2 bytes and maps match QEMU's for every cluster size, v2, extended L2, compression, chains"
