#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Read-only export (--read-only): libnbd in non-strict mode sends WRITE, TRIM, WRITE_ZEROES
# (with and without NO_HOLE) and a FUA WRITE anyway; each fails with EPERM from the server
# (the FUA WRITE may get EINVAL instead when SEND_FUA is not advertised); the connection stays
# in sync (the next READ returns the file's bytes; with and without structured replies) and
# the file is unchanged. The export is flagged read-only: nbdinfo --is read-only exits 0 (and
# 2, false, for the same file served read-write).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

mkrandom "$T/disk.img" 1048576
cp "$T/disk.img" "$T/orig.img"
dg_start --read-only "$T/disk.img"
nbdinfo --is read-only "$DG_UNIX" || fail "nbdinfo --is read-only: exit $? for a --read-only export"

PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_UNIX" "$T/orig.img" <<'PY'
import sys, nbd
from errno import EPERM, EINVAL
from libnbd_helpers import connect, expect_err
uri, data = sys.argv[1], open(sys.argv[2], "rb").read()
for sr in (True, False):
    h = connect(uri, strict=0, sr=sr)
    assert h.is_read_only(), "transmission flags lack NBD_FLAG_READ_ONLY"
    for what, fn, args in (
            ("WRITE", h.pwrite, (b"\x11" * 4096, 8192)),
            ("TRIM", h.trim, (65536, 0)),
            ("WRITE_ZEROES", h.zero, (65536, 0)),
            ("WRITE_ZEROES NO_HOLE", h.zero, (4096, 4096, nbd.CMD_FLAG_NO_HOLE))):
        expect_err(EPERM, f"{what} on a read-only export (sr={sr})", fn, *args)
        assert h.pread(65536, 0) == data[:65536], f"after {what}: READ returned wrong data"
    # FUA: EPERM; EINVAL is right too if the export does not advertise SEND_FUA
    expect_err(EPERM if h.can_fua() else (EPERM, EINVAL), f"WRITE with FUA (sr={sr})",
               h.pwrite, b"\x11" * 512, 0, nbd.CMD_FLAG_FUA)
    assert h.pread(65536, 0) == data[:65536], "after WRITE with FUA: READ returned wrong data"
    h.shutdown()
PY
dg_stop
cmp -s "$T/disk.img" "$T/orig.img" || fail "the read-only export's file changed"

dg_start "$T/disk.img"
rc=0; nbdinfo --is read-only "$DG_UNIX" || rc=$?
assert_eq "$rc" 2 "nbdinfo --is read-only on a read-write export (2 = false)"
dg_stop
pass "read-only export"
