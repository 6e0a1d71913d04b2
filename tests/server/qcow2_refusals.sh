#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# qcow2 images diskgate must not serve as they are (QEMU's docs/interop/qcow2.txt): each
# refusal at start-up is exactly one line naming the reason, exit status 2 (a dirty image,
# encryption, a backing file without a recorded format, an L1 table past the end, a loop);
# a chain of 1000 images is refused as too deep in well under 3 s; an image with the
# corrupt bit is served read-only (the client sees NBD_FLAG_READ_ONLY, its writes fail);
# an L2 or L1 entry pointing past the end of the file (or a compressed descriptor, or an
# extended entry the spec forbids) makes that read fail with EIO while the server goes on;
# a writable open clears the autoclear feature bits.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

# refused FILE WORDS: serve FILE must exit 2 at once with one line that contains WORDS.
refused() {
  local rc=0 out
  out=$("$DISKGATE" serve --socket "$T/r.sock" --read-only "$1" 2>&1) || rc=$?
  assert_eq "$rc" 2 "exit status for $(basename "$1")"
  assert_eq "$(printf '%s\n' "$out" | wc -l)" 1 "lines printed refusing $(basename "$1"): $out"
  [[ "$out" == *"$2"* ]] || fail "refusal of $(basename "$1") does not say '$2': $out"
}

# poke FILE OFFSET HEX: writes the bytes HEX (e.g. 0000002a) at OFFSET.
poke() {
  python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2]));
f.write(bytes.fromhex(sys.argv[3]))' "$1" "$2" "$3"
}

qemu-img create -q -f qcow2 "$T/dirty.qcow2" 1M
poke "$T/dirty.qcow2" 79 01
refused "$T/dirty.qcow2" "marked dirty (it was not closed cleanly): the dirty bit is set"

qemu-img create -q -f qcow2 "$T/crypt.qcow2" 1M
poke "$T/crypt.qcow2" 32 00000002
refused "$T/crypt.qcow2" "does not serve: encryption (crypt_method 2)"

qemu-img create -q -f qcow2 "$T/l1.qcow2" 1M
poke "$T/l1.qcow2" 40 0000010000000000
refused "$T/l1.qcow2" "not a valid qcow2 image (malformed header or tables): l1_table_offset"

qemu-img create -q -f qcow2 "$T/bits.qcow2" 1M
poke "$T/bits.qcow2" 20 0000001e
refused "$T/bits.qcow2" "cluster_bits 30 out of range 9-21"

# No recorded backing format: the extension's type made unknown.
qemu-img create -q -f raw "$T/base.raw" 1M
qemu-img create -q -f qcow2 -b "$T/base.raw" -F raw "$T/nofmt.qcow2"
assert_eq "$(od -An -tx1 -j112 -N4 "$T/nofmt.qcow2" | tr -d ' ')" e2792aca "backing format extension"
poke "$T/nofmt.qcow2" 112 12345678
refused "$T/nofmt.qcow2" "qemu-img rebase -u -F"

qemu-img create -q -f qcow2 -u -b "$T/missing.qcow2" -F qcow2 "$T/orphan.qcow2" 1M
out=$("$DISKGATE" serve --socket "$T/r.sock" --read-only "$T/orphan.qcow2" 2>&1) && fail "served"
assert_eq "$(printf '%s\n' "$out" | wc -l)" 1 "lines for a missing backing file: $out"
[[ "$out" == *"backing file $T/missing.qcow2"*"No such file"* ]] || fail "missing backing: $out"

qemu-img create -q -f qcow2 -u -b "$T/loop-b.qcow2" -F qcow2 "$T/loop-a.qcow2" 1M
qemu-img create -q -f qcow2 -u -b "$T/loop-a.qcow2" -F qcow2 "$T/loop-b.qcow2" 1M
refused "$T/loop-a.qcow2" "is already in the chain (a loop)"

# 1000 images, each the backing file of the one before: refused fast, as too deep.
mkdir "$T/deep"
(cd "$T/deep" && qemu-img create -q -f qcow2 -u -b c0001.qcow2 -F qcow2 t.qcow2 1M)
python3 - "$T/deep" <<'EOF'
import sys
d = sys.argv[1]
t = open(d + "/t.qcow2", "rb").read()
for i in range(1000):
    open("%s/c%04d.qcow2" % (d, i), "wb").write(t.replace(b"c0001.qcow2", b"c%04d.qcow2" % (i + 1)))
EOF
start=$(date +%s%N)
refused "$T/deep/c0000.qcow2" "deeper than 64 images"
ms=$((($(date +%s%N) - start) / 1000000))
[ "$ms" -lt 3000 ] || fail "the 1000-deep chain took $ms ms to refuse"
# A writable top is refused the same way: nothing of the chain is written.
out=$("$DISKGATE" serve --socket "$T/r.sock" "$T/deep/c0000.qcow2" 2>&1) && fail "deep served"
[[ "$out" == *"backing file c0064.qcow2: the chain is deeper than 64 images"* ]] ||
  fail "deep chain's line: $out"

# The corrupt bit: served read-only, said once in the log.
mkrandom "$T/data.raw" $((1 << 20))
qemu-img convert -q -f raw -O qcow2 "$T/data.raw" "$T/corrupt.qcow2"
poke "$T/corrupt.qcow2" 79 02
dg_start "$T/corrupt.qcow2"
nbdinfo --json "$DG_UNIX" | grep '"is_read_only": true' >/dev/null || fail "corrupt image not read-only"
nbdinfo --can write "$DG_UNIX" && fail "the client may write a corrupt image"
qemu-io -f raw -c 'write -P 1 0 4k' "$DG_UNIX" >"$T/w.out" 2>&1 && fail "a write to it succeeded"
grep -qi "read-only\|permission\|not permitted" "$T/w.out" || fail "write error: $(cat "$T/w.out")"
qemu-img compare -q -f raw -F raw "$T/data.raw" "$DG_UNIX" || fail "corrupt image's bytes"
dg_stop
assert_eq "$(grep -c "corrupt bit is set: served read-only" "$DG_LOG")" 1 "corrupt warnings"

# Entries the spec forbids, each under guest cluster 0: that read fails with EIO (one log
# line), the next cluster still reads, the server stays up. WHAT: an L2 entry and an L1
# entry 1 TiB past the end of the file, a compressed descriptor past it, and an extended L2
# entry whose subcluster 0 is both allocated and zero.
offset_at() { # IMG WHAT: the file offset of the L1 or L2 entry of guest cluster 0
  python3 -c 'import struct, sys; d = open(sys.argv[1], "rb").read()
l1 = struct.unpack(">Q", d[40:48])[0]; l2 = struct.unpack(">Q", d[l1:l1 + 8])[0] & 0xfffffffffffe00
print(l1 if sys.argv[2] == "L1" else l2)' "$1" "$2"
}
for what in L2 L1 compressed extended; do
  img=$T/bad-$what.qcow2
  case $what in
  L2) qemu-img convert -q -f raw -O qcow2 "$T/data.raw" "$img"
    poke "$img" "$(offset_at "$img" L2)" 8000010000000000 && words="past the end of the file" ;;
  L1) qemu-img convert -q -f raw -O qcow2 "$T/data.raw" "$img"
    poke "$img" "$(offset_at "$img" L1)" 8000010000000000 && words="past the end of the file" ;;
  compressed) qemu-img convert -q -f raw -O qcow2 "$T/data.raw" "$img"
    poke "$img" "$(offset_at "$img" L2)" 4000010000000000 && words="bad compressed cluster" ;;
  extended) qemu-img convert -q -f raw -O qcow2 -o extended_l2=on "$T/data.raw" "$img"
    poke "$img" $(($(offset_at "$img" L2) + 8)) 0000000100000001 && words="bad extended entry" ;;
  esac
  dg_start --read-only "$img"
  qemu-io -r -f raw -c 'read 0 4k' "$DG_UNIX" >"$T/r.out" 2>&1 && fail "$what: bad entry read"
  grep -q "Input/output error" "$T/r.out" || fail "$what: $(cat "$T/r.out")"
  qemu-io -r -f raw -c 'read 0 4k' "$DG_UNIX" >/dev/null 2>&1 && fail "$what: read again"
  if [ "$what" != L1 ]; then
    "$PY" -c 'import nbd, sys; h = nbd.NBD(); h.connect_uri(sys.argv[1])
sys.exit(h.pread(4096, 65536) != open(sys.argv[2], "rb").read()[65536:65536 + 4096])' \
      "$DG_UNIX" "$T/data.raw" || fail "$what: the cluster after the bad entry no longer reads"
  fi
  kill -0 "$DG_PID" || fail "the server died on a bad entry ($what)"
  dg_stop
  assert_eq "$(grep -c "$words" "$DG_LOG")" 1 "log lines for the bad $what entry"
done

# A writable open clears the autoclear bits (bitmaps kept by nobody are not consistent).
qemu-img create -q -f qcow2 "$T/auto.qcow2" 1M
poke "$T/auto.qcow2" 88 0000000000000001
dg_start "$T/auto.qcow2"
dg_stop
assert_eq "$(od -An -tx1 -j88 -N8 "$T/auto.qcow2" | tr -d ' ')" 0000000000000000 "autoclear"
pass "qcow2 refusals are one line; deep chains refused fast; corrupt images served read-only"
