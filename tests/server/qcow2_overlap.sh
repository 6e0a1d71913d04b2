#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A qcow2 L2 table or data cluster that is one of the image's metadata clusters (QEMU's
# docs/interop/qcow2.txt, "Host cluster management"; what QEMU's overlap-check=cached
# guards): the read or write through it fails with EIO, the log says so in one line, every
# later write is refused, and not one byte of the file changes. The image (64 KiB clusters)
# is laid out by qemu-img as: cluster 0 header, 1 refcount table, 2 refcount block, 3 L1
# table, 4 the L2 table, 5-6 the data of guest clusters 0-1. Each case rewrites one entry:
#   l2-reftable   L2[0] = cluster 1 | COPIED   (guest data would land in the refcount table)
#   l2-cow        L2[0] = cluster 1            (the copy-on-write would free the refcount table)
#   l2-self       L2[0] = cluster 4 | COPIED   (guest data would land in the L2 table itself)
#   l1-l1         L1[0] = cluster 3 | COPIED   (the L2 table is the L1 table)
#   l1-reftable   L1[0] = cluster 1 | COPIED   (an L2 entry would be stored in the refcount table)
#   l1-cow        L1[0] = cluster 2            (the table copy would free the refcount block)
#   l1-shared     L1[1] = L1[0] | COPIED       (two L1 entries name one L2 table)
# The same for an L2 entry naming the snapshot table or a snapshot's L1 table. An image whose
# refcount table names the L1 table's cluster as a refcount block is refused at start-up in
# one line; a legitimate image with internal snapshots is served as it is.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

CS=65536
# poke FILE OFFSET HEX: writes the bytes HEX at OFFSET.
poke() {
  python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2]));
f.write(bytes.fromhex(sys.argv[3]))' "$1" "$2" "$3"
}
# word FILE OFFSET: the big-endian 64-bit word at OFFSET, as 16 hex digits.
word() { od -An -tx1 -j"$2" -N8 "$1" | tr -d ' \n'; }

make_image() { # IMG: the layout above, guest clusters 0-1 holding bytes 0x07
  qemu-img create -q -f qcow2 -o cluster_size=$CS "$1" 1G
  qemu-io -f qcow2 -c "write -P 7 0 $((2 * CS))" "$1" >/dev/null
  assert_eq "$(word "$1" $((3 * CS)))" 8000000000040000 "L1[0] of the fresh image"
  assert_eq "$(word "$1" $((4 * CS)))" 8000000000050000 "L2[0] of the fresh image"
}

# io IMG-URI CMD: runs one qemu-io command against the server; prints its output.
io() { qemu-io -f raw -c "$2" "$1" 2>&1 || true; }

for case in l2-reftable l2-cow l2-self l1-l1 l1-reftable l1-cow l1-shared; do
  img=$T/$case.qcow2
  make_image "$img"
  case $case in
  l2-reftable) poke "$img" $((4 * CS)) 8000000000010000 ;;
  l2-cow) poke "$img" $((4 * CS)) 0000000000010000 ;;
  l2-self) poke "$img" $((4 * CS)) 8000000000040000 ;;
  l1-l1) poke "$img" $((3 * CS)) 8000000000030000 ;;
  l1-reftable) poke "$img" $((3 * CS)) 8000000000010000 ;;
  l1-cow) poke "$img" $((3 * CS)) 0000000000020000 ;;
  l1-shared) poke "$img" $((3 * CS + 8)) 8000000000040000 ;;
  esac
  before=$(sha256sum <"$img")
  meta_before=$(head -c $((5 * CS)) "$img" | sha256sum)
  dg_start "$img"
  # l1-shared: guest cluster 0 is what the bad L1 entry (index 1) maps: 512 MiB on.
  at=0
  [ "$case" = l1-shared ] && at=$((512 << 20))
  out=$(io "$DG_UNIX" "write -P 9 $((at + 512)) 512")
  [[ "$out" == *"Input/output error"* ]] || fail "$case: the write was not refused: $out"
  out=$(io "$DG_UNIX" "read $at 4k")
  [[ "$out" == *"Input/output error"* ]] || fail "$case: the read was served: $out"
  if [[ "$case" == l2-* ]]; then
    # The table's other entries still map: guest cluster 1 reads its bytes.
    out=$(io "$DG_UNIX" "read -P 7 $CS 4k")
    [[ "$out" == *"read 4096/4096"* ]] || fail "$case: guest cluster 1 no longer reads: $out"
  fi
  # The image is corrupt now: a write anywhere else (allocating, or in place) is refused.
  for w in "write -P 9 $((32 << 20)) 4k" "write -P 9 $CS 4k"; do
    out=$(io "$DG_UNIX" "$w")
    [[ "$out" == *"Input/output error"* ]] || fail "$case: '$w' after the bad entry: $out"
  done
  kill -0 "$DG_PID" || fail "$case: the server died"
  dg_stop
  assert_eq "$(head -c $((5 * CS)) "$img" | sha256sum)" "$meta_before" "$case: metadata bytes"
  assert_eq "$(sha256sum <"$img")" "$before" "$case: the file's bytes"
  assert_eq "$(grep -c "overlaps the image's" "$DG_LOG")" 1 "$case: log lines: $(cat "$DG_LOG")"
  assert_eq "$(grep -c "^diskgate: error: " "$DG_LOG")" 1 "$case: error lines: $(cat "$DG_LOG")"
done

# After `qemu-img snapshot -c`: L2[0] names the snapshot table, or the snapshot's L1 table
# (the L2 table is shared with the snapshot: a write would copy it first).
for what in "snapshot table" "L1 table of a snapshot"; do
  img=$T/snap-hostile.qcow2
  make_image "$img"
  qemu-img snapshot -c s1 "$img"
  python3 -c 'import struct, sys
f = open(sys.argv[1], "r+b")
d = f.read()
be = lambda at: struct.unpack(">Q", d[at:at + 8])[0]
snap = be(64)
f.seek(be(be(40)) & 0xfffffffffffe00)
f.write(struct.pack(">Q", (snap if sys.argv[2] == "snapshot table" else be(snap)) | 1 << 63))
' "$img" "$what"
  before=$(sha256sum <"$img")
  dg_start "$img"
  out=$(io "$DG_UNIX" "read 0 4k")
  [[ "$out" == *"Input/output error"* ]] || fail "$what: the read was served: $out"
  out=$(io "$DG_UNIX" "write -P 9 512 512")
  [[ "$out" == *"Input/output error"* ]] || fail "$what: the write was not refused: $out"
  out=$(io "$DG_UNIX" "read -P 7 $CS 4k")
  [[ "$out" == *"read 4096/4096"* ]] || fail "$what: guest cluster 1 no longer reads: $out"
  dg_stop
  assert_eq "$(sha256sum <"$img")" "$before" "$what: the file's bytes"
  assert_eq "$(grep -c "overlaps the image's $what:" "$DG_LOG")" 1 "$what: $(cat "$DG_LOG")"
done

# A refcount block in the L1 table's cluster: refused at start-up, one line, status 2.
img=$T/refblock.qcow2
make_image "$img"
poke "$img" $((1 * CS)) 0000000000030000
rc=0
out=$("$DISKGATE" serve --socket "$T/r.sock" "$img" 2>&1) || rc=$?
assert_eq "$rc" 2 "exit status for a refcount block over the L1 table"
assert_eq "$(printf '%s\n' "$out" | wc -l)" 1 "lines refusing the refcount block: $out"
[[ "$out" == *"the refcount block at 0x30000 overlaps the L1 table at 0x30000"* ||
   "$out" == *"the L1 table at 0x30000 overlaps the refcount block at 0x30000"* ]] ||
  fail "refusal of the refcount block over the L1 table: $out"

# Internal snapshots (their table and L1 tables are metadata too): served, written, intact.
img=$T/snap.qcow2
mkrandom "$T/data.raw" $((4 << 20))
qemu-img convert -q -f raw -O qcow2 "$T/data.raw" "$img"
qemu-img snapshot -c s1 "$img"
qemu-img snapshot -c s2 "$img"
dg_start "$img"
qemu-io -f raw -c "write -P 5 $((1 << 20)) 64k" "$DG_UNIX" >/dev/null || fail "snapshot image write"
dd if=/dev/zero bs=64k count=1 2>/dev/null | tr '\0' '\5' |
  dd of="$T/data.raw" bs=64k seek=16 conv=notrunc 2>/dev/null
qemu-img compare -q -f raw -F raw "$T/data.raw" "$DG_UNIX" || fail "snapshot image's bytes"
dg_stop
assert_eq "$(grep -c "overlaps" "$DG_LOG")" 0 "overlap lines for a sound image"
qemu-img check -q "$img" || fail "qemu-img check of the snapshot image after the write"
pass "L2 tables and entries overlapping qcow2 metadata: EIO, one line, no byte written"
