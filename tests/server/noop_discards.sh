#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C09: no-op discards on fresh all-hole sparse exports (4 GiB, and 4 GiB - 4 KiB so that one
# 32-bit request can cover the whole export):
#  - TRIM the whole export in one request, and in 2 GiB pieces; WRITE_ZEROES likewise, over
#    holes, without NO_HOLE; WRITE_ZEROES with NO_HOLE over holes (start, middle, end);
#    TRIM/WRITE_ZEROES of a block or two at the very end; then all again over what is now
#    partly allocated. Every request succeeds; everything reads back as zeroes; the file
#    keeps its size.
#  - mkfs.ext4 through a client: nbdfuse exposes the 4 GiB export as a file and mkfs.ext4
#    (which discards the whole device first) runs on it; after the server stops, e2fsck -fn on
#    the backing file passes. Also a local ext4 image copied in with nbdcopy (which zeroes
#    holes with WRITE_ZEROES) reads back identical and passes e2fsck.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

G4=$((4 << 30))
for size in $G4 $((G4 - 4096)); do
  truncate -s "$size" "$T/holes.img"
  dg_start "$T/holes.img"
  PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_UNIX" "$size" <<'PY' || { cat "$DG_LOG" >&2; fail "no-op discards, size $size"; }
import sys, nbd
from libnbd_helpers import connect
uri, size = sys.argv[1], int(sys.argv[2])
G2, M64 = 2 << 30, 64 << 20
h = connect(uri)
assert h.get_size() == size and h.can_trim() and h.can_zero()

def pieces(step):
    return [(off, min(step, size - off)) for off in range(0, size, step)]

def run(what, fn, ranges, flags=0):
    for off, n in ranges:
        try:
            fn(n, off, flags)
        except nbd.Error as e:
            raise AssertionError(f"{what} offset {off} length {n} (size {size}): {e}")

for rnd in ("over holes", "over partly allocated data"):
    if size <= 0xFFFFFFFF:
        run(f"TRIM whole export {rnd}", h.trim, [(0, size)])
        run(f"WRITE_ZEROES whole export {rnd}", h.zero, [(0, size)])
    run(f"TRIM in 2 GiB pieces {rnd}", h.trim, pieces(G2))
    run(f"WRITE_ZEROES in 2 GiB pieces {rnd}", h.zero, pieces(G2))
    run(f"WRITE_ZEROES NO_HOLE {rnd}", h.zero, [(0, M64), (G2 - 4096, M64), (size - M64, M64)],
        nbd.CMD_FLAG_NO_HOLE)
    run(f"TRIM at the end {rnd}", h.trim, [(size - 512, 512), (size - 4096, 4096)])
    run(f"WRITE_ZEROES at the end {rnd}", h.zero, [(size - 512, 512), (size - 1536, 1024)])
    for off in (0, M64 - 512, G2 - 4096, G2 + M64, size - (1 << 20)):
        assert h.pread(1 << 20, off) == bytes(1 << 20), f"non-zero data at {off} {rnd}"
    h.pwrite(b"\x55" * 65536, G2 - 1024)   # make the second round cover some real data
h.flush()
h.shutdown()
PY
  dg_stop
  assert_eq "$(stat -c %s "$T/holes.img")" "$size" "file size after the discards"
  rm -f "$T/holes.img"
done

# mkfs.ext4 through nbdfuse (a FUSE file whose I/O, discards included, are NBD requests)
truncate -s "$G4" "$T/fs.img"
mkdir "$T/mnt"
dg_start "$T/fs.img"
DG_CLEANUP_EXTRA="umount -l $T/mnt 2>/dev/null"
nbdfuse "$T/mnt/disk" "$DG_UNIX" &
fuse_pid=$!
for _ in $(seq 1 100); do [ -f "$T/mnt/disk" ] && break; sleep 0.05; done
[ -f "$T/mnt/disk" ] || fail "nbdfuse did not mount"
mkfs.ext4 -F -E discard "$T/mnt/disk" >"$T/mkfs.out" 2>&1 \
  || { cat "$T/mkfs.out" "$DG_LOG" >&2; fail "mkfs.ext4 through nbdfuse"; }
# mke2fs says "done" only when its whole-device discard (NBD TRIMs here) succeeded
grep -q "Discarding device blocks:.*done" "$T/mkfs.out" \
  || { cat "$T/mkfs.out" >&2; fail "mkfs.ext4: the whole-device discard did not succeed"; }
sync "$T/mnt/disk"
umount "$T/mnt"
wait "$fuse_pid" || fail "nbdfuse exited non-zero"
dg_stop
# $T's random suffix is taken out first: it could spell "fail" itself.
sed "s|$T|T|g" "$DG_LOG" | grep -i "error\|fail" >/dev/null &&
  { cat "$DG_LOG" >&2; fail "the server logged an error during mkfs"; }
e2fsck -fn "$T/fs.img" >"$T/fsck.out" 2>&1 || { cat "$T/fsck.out" >&2; fail "e2fsck of the file system made through nbdfuse"; }

# a local ext4 image copied in with nbdcopy, read back, compared and checked
truncate -s 128M "$T/local.img"
mkfs.ext4 -q -F "$T/local.img"
truncate -s "$G4" "$T/fs2.img"
dg_start "$T/fs2.img"
nbdcopy "$T/local.img" "$DG_UNIX" || fail "nbdcopy into the export"
$PY -c 'import nbd,sys; h=nbd.NBD(); h.connect_uri(sys.argv[1]); open(sys.argv[2],"wb").write(b"".join(h.pread(1<<24, o) for o in range(0, 128<<20, 1<<24)))' \
  "$DG_UNIX" "$T/back.img"
dg_stop
cmp "$T/local.img" "$T/back.img" || fail "the image read back differs from the one copied in"
e2fsck -fn "$T/back.img" >"$T/fsck.out" 2>&1 || { cat "$T/fsck.out" >&2; fail "e2fsck of the copied image"; }
pass "C09 no-op discards"
