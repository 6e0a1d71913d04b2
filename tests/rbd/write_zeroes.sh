#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C16: WRITE_ZEROES on RBD really zeroes (docs/cases.md).
# An image with 4 MiB objects is filled with 0x78. WRITE_ZEROES without NO_HOLE at offset 0
# length 127*512 (a partial object: a bare discard would be skipped by librbd's discard
# granularity and leave 0x78 behind), again crossing the 4 MiB object boundary, with FUA,
# and with NO_HOLE. Every range reads back as zeroes, through diskgate and through
# `rbd export` (librbd directly), and the bytes around the ranges are still 0x78.
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"

rbdc create --size 24M --object-size 4M rbd/img
rbd_serve rbd:rbd/img

$PY - "$DG_UNIX" "$DG_TCP" "$T/expected.bin" <<'PYEOF' || fail "C16: WRITE_ZEROES did not zero"
import nbd, sys
MiB = 1 << 20
SIZE = 24 * MiB
uri, uri2, expected_path = sys.argv[1:4]
h = nbd.NBD()
h.connect_uri(uri)
assert h.get_size() == SIZE
fill = b"\x78" * MiB
for off in range(0, SIZE, MiB):
    h.pwrite(fill, off)
h.flush()

cases = [
    (0, 127 * 512, 0, "offset 0, 127*512, no NO_HOLE"),
    (4 * MiB - 20480, 127 * 512, 0, "crossing the 4 MiB object boundary, no NO_HOLE"),
    (8 * MiB - 512, 1024, nbd.CMD_FLAG_FUA, "512 B each side of 8 MiB, FUA"),
    (12 * MiB + 512, 127 * 512, nbd.CMD_FLAG_NO_HOLE, "inside an object, NO_HOLE"),
    (19 * MiB - 512, 2 * MiB + 1024, 0, "2 MiB + 1 KiB crossing the 20 MiB object boundary"),
]
expected = bytearray(b"\x78" * SIZE)
for off, length, flags, what in cases:
    h.zero(length, off, flags)
    expected[off:off + length] = bytes(length)
h.flush()

def check(handle, label):
    for off, length, flags, what in cases:
        lo, hi = max(0, off - 4096), min(SIZE, off + length + 4096)
        got = handle.pread(hi - lo, lo)
        if got != bytes(expected[lo:hi]):
            bad = next(i for i in range(hi - lo) if got[i] != expected[lo + i])
            sys.exit(f"{label}: {what}: byte {lo + bad} is {got[bad]:#x}, "
                     f"expected {expected[lo + bad]:#x}")
    whole = b"".join(handle.pread(MiB, o) for o in range(0, SIZE, MiB))
    if whole != bytes(expected):
        sys.exit(f"{label}: the whole image differs from what was expected")

check(h, "same connection")
h2 = nbd.NBD()
h2.connect_uri(uri2)
check(h2, "new connection")
h2.shutdown()

# For contrast, not asserted: a bare TRIM of a partial object may leave the data.
h.pwrite(b"\x78" * 65536, 0)
h.trim(127 * 512, 0)
print("info: after TRIM 127*512 at 0, byte 0 reads", hex(h.pread(512, 0)[0]),
      "(TRIM may leave data; WRITE_ZEROES may not)")
h.zero(127 * 512, 0)
assert h.pread(127 * 512, 0) == bytes(127 * 512)
h.flush()
h.shutdown()
open(expected_path, "wb").write(bytes(expected))
PYEOF
pass "C16: WRITE_ZEROES zeroed every range through NBD; neighbours still 0x78"

# librbd directly, bypassing diskgate: the zeroes are in the cluster.
rbdc export --no-progress rbd/img "$T/export.img"
cmp "$T/export.img" "$T/expected.bin" || fail "C16: rbd export differs from the expected bytes"
pass "C16: rbd export shows the same zeroes and 0x78 around them"

dg_stop
