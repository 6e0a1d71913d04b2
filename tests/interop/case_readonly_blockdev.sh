#!/usr/bin/env bash
# A block device the kernel marks read-only (here a loop device made with `losetup -r`),
# served without --read-only: it used to be opened for writing and advertised as writable,
# and then every WRITE, TRIM and WRITE_ZEROES failed with EPERM. Now it is served read-only:
# NBD_FLAG_READ_ONLY is set (no TRIM or WRITE_ZEROES), one log line says why, a write fails
# with EPERM, and reads return the device's bytes.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

mkrandom "$T/backing.img" 4194304
LOOP=$(losetup -r -f --show "$T/backing.img")
DG_CLEANUP_EXTRA='losetup -d "$LOOP" 2>/dev/null'
assert_eq "$(blockdev --getro "$LOOP")" 1 "the loop device is read-only"
dg_start "$LOOP"
grep -qF "$LOOP is a read-only block device: serving it read-only" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "no log line says the device is read-only"; }
$PY - "$DG_UNIX" "$T/backing.img" <<'PY' || fail "read-only block device over NBD"
import sys
import nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
assert h.is_read_only() == 1, "NBD_FLAG_READ_ONLY is not set"
assert h.can_trim() == 0 and h.can_zero() == 0, "TRIM or WRITE_ZEROES offered"
try:
    h.pwrite(b"x" * 4096, 0)
    raise SystemExit("a WRITE to the read-only device succeeded")
except nbd.Error as e:
    # libnbd refuses it itself once the export is read-only; either way, EPERM
    assert e.errno in (1, "EPERM"), f"WRITE failed with errno {e.errno}, want EPERM"
with open(sys.argv[2], "rb") as f:
    f.seek(1 << 20)
    assert h.pread(65536, 1 << 20) == f.read(65536), "READ returned other bytes"
h.shutdown()
PY
dg_stop
pass "a read-only block device is served read-only"
