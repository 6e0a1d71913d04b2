#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Read-only storage served without --read-only. A block device the kernel marks read-only
# (here a loop device made with `losetup -r`) is not advertised as writable (every WRITE,
# TRIM and WRITE_ZEROES would then fail with EPERM): it is served read-only:
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
# the lock it takes is the shared one of --read-only: a second server on the device starts,
# here with O_DIRECT (the read-only reopen with O_DIRECT)
first_pid=$DG_PID first_log=$DG_LOG
dg_start --cache direct "$LOOP"
assert_eq "$(nbdinfo --is read-only "$DG_UNIX" && echo ro)" ro "the second server, O_DIRECT"
cmp <(nbdcopy "$DG_UNIX" - | head -c 65536) <(head -c 65536 "$T/backing.img") ||
  fail "O_DIRECT reads of the read-only device"
dg_stop
DG_PID=$first_pid DG_LOG=$first_log
dg_stop

# A file on a read-only mount refuses O_RDWR itself (EROFS): it is served read-only too, with
# one log line, not refused with "cannot open ...: Read-only file system".
mkdir "$T/ro"
mount -t tmpfs -o size=4m tmpfs "$T/ro"
DG_CLEANUP_EXTRA='losetup -d "$LOOP" 2>/dev/null; umount "$T/ro" 2>/dev/null'
head -c 1048576 "$T/backing.img" >"$T/ro/disk.img"
mount -o remount,ro "$T/ro"
dg_start "$T/ro/disk.img"
grep -qF "$T/ro/disk.img is on read-only storage: serving it read-only" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "no log line says the storage is read-only"; }
assert_eq "$(nbdinfo --is read-only "$DG_UNIX" && echo ro)" ro "the file on a read-only mount"
cmp <(nbdcopy "$DG_UNIX" -) "$T/ro/disk.img" || fail "reads of the file on a read-only mount"
dg_stop
pass "a read-only block device, and a file on a read-only mount, are served read-only"
