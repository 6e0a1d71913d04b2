#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C05: odd export sizes: files of 1000 and 123456789 bytes (not multiples of 512).
#  - the size is exact (nbdinfo --size and libnbd);
#  - READ of the last 21 bytes returns the file's bytes; an in-range WRITE of the tail lands;
#  - out of range: READ (2 MiB from 4096 before the end, 1 byte at EOF, 21 bytes ending 1
#    past EOF) and TRIM -> EINVAL; WRITE and WRITE_ZEROES -> ENOSPC; offset+length wrapping
#    past 2^64 -> EINVAL (ENOSPC allowed for WRITE/WRITE_ZEROES, like nbdkit and qemu);
#  - after every error the connection still works and is in sync (the next READ returns the
#    right bytes), with and without structured replies (simple replies: no payload after an
#    error reply);
#  - afterwards the file has its original size and exactly the in-range write.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

for size in 1000 123456789; do
  img=$T/odd-$size.img
  truncate -s "$size" "$img"
  tail_len=$(( size < 4194304 ? size : 4194304 ))   # random data where the tests look
  head -c "$tail_len" /dev/urandom | dd of="$img" bs=1M seek=$((size - tail_len)) \
    oflag=seek_bytes conv=notrunc status=none
  cp "$img" "$T/orig.img"
  dg_start "$img"
  assert_eq "$(nbdinfo --size "$DG_UNIX")" "$size" "nbdinfo --size"

  PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_UNIX" "$img" "$size" <<'PY'
import sys
from errno import EINVAL, ENOSPC
from libnbd_helpers import connect, expect_err
uri, img, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(img, "rb") as f:
    f.seek(size - 21)
    tail = f.read()
for sr in (True, False):
    h = connect(uri, strict=0, sr=sr)
    assert h.get_size() == size, f"libnbd size {h.get_size()}, expected {size}"
    def ok(after):  # the connection still works and is in sync
        got = h.pread(21, size - 21)
        assert got == tail, f"after {after} (sr={sr}): last 21 bytes wrong"
    ok("connect")
    W = 2**64
    bad = [  # (what, expected errnos, function, args)
        ("READ 2MiB from 4096 before EOF", EINVAL, h.pread, (2 << 20, max(0, size - 4096))),
        ("READ 1 byte at EOF", EINVAL, h.pread, (1, size)),
        ("READ 21 bytes ending 1 past EOF", EINVAL, h.pread, (21, size - 20)),
        ("WRITE crossing EOF", ENOSPC, h.pwrite, (b"\xaa" * 200, size - 100)),
        ("WRITE past EOF", ENOSPC, h.pwrite, (b"\xaa" * 512, size)),
        ("WRITE_ZEROES crossing EOF", ENOSPC, h.zero, (200, size - 100)),
        ("TRIM crossing EOF", EINVAL, h.trim, (200, size - 100)),
        ("READ offset 2^64-512 len 1024", EINVAL, h.pread, (1024, W - 512)),
        ("READ offset 2^63 len 512", EINVAL, h.pread, (512, 2**63)),
        ("READ offset 2^64-1 len 1", EINVAL, h.pread, (1, W - 1)),
        ("TRIM offset 2^64-512 len 1024", EINVAL, h.trim, (1024, W - 512)),
        ("WRITE offset 2^64-512 len 1024", (ENOSPC, EINVAL), h.pwrite, (b"\xbb" * 1024, W - 512)),
        ("WRITE_ZEROES offset 2^64-512 len 1024", (ENOSPC, EINVAL), h.zero, (1024, W - 512)),
    ]
    for what, want, fn, args in bad:
        expect_err(want, f"{what} (size {size}, sr={sr})", fn, *args)
        ok(what)
    h.shutdown()
# in-range I/O at the ragged end still works
h = connect(uri)
new = bytes(range(100, 121))
h.pwrite(new, size - 21)
assert h.pread(21, size - 21) == new, "in-range WRITE of the last 21 bytes did not read back"
h.flush()
h.shutdown()
PY
  dg_stop
  # the file: same size, only the last 21 bytes changed
  assert_eq "$(stat -c %s "$img")" "$size" "file size after the session"
  $PY - "$img" "$T/orig.img" "$size" <<'PY' || fail "file content after the session (size $2)"
import sys
img, orig, size = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), int(sys.argv[3])
assert img[:-21] == orig[:-21], "bytes before the last 21 changed"
assert img[-21:] == bytes(range(100, 121)), "the in-range write did not land"
PY
done
pass "C05 odd export sizes"
