#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# WRITE_ZEROES with FAST_ZERO on block devices (spec "NBD_CMD_FLAG_FAST_ZERO", rule 28): the
# server fails it quickly with NBD_ENOTSUP, changing nothing, unless the device zeroes
# without writing. diskgate used fallocate ZERO_RANGE for it, which on a block device falls
# back to writing zero pages (blkdev_issue_zeroout) when the device has no write-zeroes
# command, and replied success after the kernel had written them all.
#   - A loop device over a sparse file on a tmpfs, after its one refused write-zeroes (tmpfs
#     has no FALLOC_FL_ZERO_RANGE; until the device is refused once it claims the command, and
#     that once the kernel writes the zeroes, out of the server's sight; after it, it reports
#     write_zeroes_max_bytes 0): FAST_ZERO, with and without NO_HOLE, aligned or not, fails
#     with ENOTSUP; the tmpfs file's allocated blocks do not grow and the data under the
#     range, written but not flushed, reads back (fallocate on a block device drops the
#     range's cached pages, and zeroes its part of partial ones, even when it is refused).
#     The same requests without FAST_ZERO succeed and read back as zeroes. The declined
#     FAST_ZERO requests leave no warning in the log (ENOTSUP is the answer they ask for).
#   - A loop device over a file on ext4 (write zeroes supported), and a partition of it (its
#     queue is its disk's): FAST_ZERO, with and without NO_HOLE, succeeds and reads back zeroes.
# Each with both engines, and with --cache direct. Exit 77 where no loop device can be made.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
command -v mkfs.ext4 >/dev/null || fail "mkfs.ext4 not found (e2fsprogs)"
command -v sfdisk >/dev/null || fail "sfdisk not found (fdisk)"

dg_tmpfs 96M
slow="" disk=""   # the loop devices attached now (only ours are detached)
DG_CLEANUP_EXTRA='for l in $slow $disk; do losetup -d "$l" 2>/dev/null; done; dg_tmpfs_umount'
truncate -s 1M "$TFS/probe.img"
if ! probe=$(losetup -f --show "$TFS/probe.img" 2>/dev/null); then
  echo "SKIP: this machine cannot make loop devices"
  exit 77
fi
losetup -d "$probe"

SIZE=$((16 << 20))
COMBOS=("--engine uring" "--engine threads" "--engine uring --cache direct"
  "--engine threads --cache direct")

wz_max() { cat "/sys/block/${1#/dev/}/queue/write_zeroes_max_bytes"; }

# fast_zero URI MODE [BACKING_FILE]: MODE "refused" (BACKING_FILE is the tmpfs file under the
# loop device) or "done".
fast_zero() {
  PYTHONPATH=$SRCDIR/tests/lib $PY - "$@" <<'PY'
import errno, os, sys
import nbd
from libnbd_helpers import connect, expect_err
uri, mode = sys.argv[1:3]
MiB = 1 << 20
LEN = 8 * MiB
data = (b"fast-zero-data-" + bytes(range(1, 242)))[:256] * (MiB // 256)
h = connect(uri, strict=0)  # the server, not libnbd, judges unaligned requests
assert h.can_fast_zero(), "FAST_ZERO is not advertised"
h.pwrite(data, 0)
h.flush()
fast = [(nbd.CMD_FLAG_FAST_ZERO, "FAST_ZERO"),
        (nbd.CMD_FLAG_FAST_ZERO | nbd.CMD_FLAG_NO_HOLE, "FAST_ZERO|NO_HOLE")]
if mode == "refused":
    backing = sys.argv[3]
    # newer data over the flushed data, not flushed: dirty in the page cache under writeback
    data = bytes(reversed(data))
    h.pwrite(data, 0)
    blocks = os.stat(backing).st_blocks
    for flags, name in fast:
        for off, length in [(0, LEN), (100, LEN - 200)]:
            what = f"WRITE_ZEROES {name} of [{off}, {off + length})"
            expect_err(errno.ENOTSUP, what, h.zero, length, off, flags)
            now = os.stat(backing).st_blocks
            assert now == blocks, \
                f"{what}: the tmpfs file's allocation grew from {blocks * 512} to {now * 512} bytes"
            assert h.pread(MiB, 0) == data, f"{what}: the data under the range changed"
    # without FAST_ZERO the server may write: success, zeroes
    for flags, name in [(0, "WRITE_ZEROES"), (nbd.CMD_FLAG_NO_HOLE, "WRITE_ZEROES|NO_HOLE")]:
        h.pwrite(data, 0)
        h.zero(LEN - 200, 100, flags)
        got = h.pread(LEN, 0)
        assert got[:100] == data[:100] and got[LEN - 100:] == bytes(100), f"{name}: outside the range"
        assert got[100:LEN - 100] == bytes(LEN - 200), f"{name}: does not read back as zeroes"
    print("FAST_ZERO refused with ENOTSUP, nothing written; without FAST_ZERO zeroed")
else:
    for flags, name in fast:
        h.pwrite(data, 0)
        h.flush()
        h.zero(LEN, 0, flags)
        assert h.pread(LEN, 0) == bytes(LEN), f"WRITE_ZEROES {name}: does not read back as zeroes"
    print("FAST_ZERO done by the device, reads back zeroes")
h.shutdown()
PY
}

# 1. No write-zeroes: a loop device over a sparse tmpfs file, one per server (the requests
#    that may write allocate the file).
for combo in "${COMBOS[@]}"; do
  rm -f "$TFS/slow.img"
  truncate -s "$SIZE" "$TFS/slow.img"
  slow=$(losetup -f --show "$TFS/slow.img") || fail "losetup $TFS/slow.img"
  # Its first ZERO_RANGE: the loop driver's FALLOC_FL_ZERO_RANGE on the tmpfs is refused,
  # the kernel writes the zeroes itself and marks the device as having no write-zeroes.
  fallocate --zero-range -o 0 -l 4096 "$slow" || fail "fallocate --zero-range $slow"
  assert_eq "$(wz_max "$slow")" 0 "write_zeroes_max_bytes of a loop device over a tmpfs file"
  # shellcheck disable=SC2086 # the combo is words
  dg_start $combo "$slow"
  fast_zero "$DG_UNIX" refused "$TFS/slow.img" || fail "$combo: FAST_ZERO on $slow (no write zeroes)"
  dg_stop
  # ENOTSUP is the answer FAST_ZERO asks for, not a failure: no warning in the log
  ! grep -q 'WRITE_ZEROES.*failed' "$DG_LOG" ||
    { cat "$DG_LOG" >&2; fail "$combo: FAST_ZERO's ENOTSUP was logged as a failed request"; }
  losetup -d "$slow"
  slow=""
done

# 2. Write zeroes supported: a loop device over a file on ext4 (itself a loop mount of a tmpfs
#    file), with one partition.
truncate -s 64M "$TFS/fs.img"
mkfs.ext4 -q -F -E nodiscard "$TFS/fs.img"
mount -o loop "$TFS/fs.img" "$MNT" || fail "cannot loop-mount a file system"
truncate -s "$SIZE" "$MNT/disk.img"
echo 'start=2048, type=83' | sfdisk -q "$MNT/disk.img" >/dev/null
disk=$(losetup -f --show -P "$MNT/disk.img") || fail "losetup -P $MNT/disk.img"
# the kernel has read the table if it has its parser; else the partition is added by BLKPG
d=${disk#/dev/}
[ -e "/sys/block/$d/${d}p1" ] || addpart "$disk" 1 2048 $(((SIZE >> 9) - 2048)) ||
  fail "addpart $disk 1"
wait_until 5 test -b "${disk}p1" || fail "no partition device ${disk}p1"
[ "$(wz_max "$disk")" -gt 0 ] || fail "a loop device over an ext4 file reports no write zeroes"
for dev in "$disk" "${disk}p1"; do
  for combo in "${COMBOS[@]}"; do
    # shellcheck disable=SC2086
    dg_start $combo "$dev"
    fast_zero "$DG_UNIX" done || fail "$combo: FAST_ZERO on $dev (write zeroes supported)"
    dg_stop
  done
done
pass "FAST_ZERO on block devices: ENOTSUP without write zeroes (nothing written), done with them"
