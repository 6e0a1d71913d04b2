#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C14: full host file system (docs/cases.md): a sparse 64 MiB image on a 16 MiB
# ext4 file system (a loop mount), served with --cache writeback and with --cache direct.
# A client writes 256 KiB chunks of distinct data until a write fails. Required:
#   - that write fails with NBD_ENOSPC (not EIO, not a disconnect), and so does a retry;
#   - nothing false was acknowledged: a FLUSH succeeds, and every acknowledged chunk reads
#     back, through the server and, after unmounting and mounting the file system again,
#     from the image file itself;
#   - once space is freed on the host (a filler file is deleted), the failed write succeeds
#     on the same connection, and so do further writes, FLUSH and reads.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
command -v mkfs.ext4 >/dev/null || fail "mkfs.ext4 not found (e2fsprogs)"

MNT=$T/mnt
mkdir -p "$MNT"
DG_CLEANUP_EXTRA="umount -l '$MNT' 2>/dev/null"

for cache in writeback direct; do
  truncate -s 0 "$T/fs.img"; truncate -s 16M "$T/fs.img"
  mkfs.ext4 -q -F -b 4096 -E nodiscard "$T/fs.img"
  mount -o loop "$T/fs.img" "$MNT" || fail "cannot loop-mount a file system (need root and loop devices)"
  fallocate -l 3M "$MNT/filler"
  truncate -s 64M "$MNT/disk.img"
  dg_start --cache "$cache" "$MNT/disk.img"
  PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_UNIX" "$MNT" "$T/acked.$cache" <<'PY' ||
import errno, os, sys
import nbd
from libnbd_helpers import errno_name
uri, mnt, out = sys.argv[1:]
CH = 256 * 1024
def chunk(i):
    return (b"C14-chunk-%05d-" % i) * (CH // 16)
h = nbd.NBD()
h.connect_uri(uri)
size = h.get_size()
acked, failed = [], None
for i in range(size // CH):
    try:
        h.pwrite(chunk(i), i * CH)
        acked.append(i)
    except nbd.Error as e:
        assert errno_name(e) == "ENOSPC", f"chunk {i}: failed with {errno_name(e)}, expected ENOSPC"
        failed = i
        break
assert failed is not None, "the image was written in full on a 16 MiB file system?"
assert len(acked) > 8, f"only {len(acked)} chunks fitted"
try:
    h.pwrite(chunk(failed), failed * CH)
    raise AssertionError("a retry of the failed write succeeded while the disk is still full")
except nbd.Error as e:
    assert errno_name(e) == "ENOSPC", f"retry: {errno_name(e)}, expected ENOSPC"
h.flush()                                   # nothing was acknowledged that cannot be synced
for i in acked:
    assert h.pread(CH, i * CH) == chunk(i), f"acknowledged chunk {i} does not read back"
os.unlink(os.path.join(mnt, "filler"))      # free space on the host
h.pwrite(chunk(failed), failed * CH, nbd.CMD_FLAG_FUA)
h.pwrite(chunk(failed + 1), (failed + 1) * CH)
h.flush()
acked += [failed, failed + 1]
for i in (failed, failed + 1):
    assert h.pread(CH, i * CH) == chunk(i), f"chunk {i} written after freeing space"
h.shutdown()
open(out, "w").write(" ".join(map(str, acked)))
print(f"C14: {len(acked) - 2} chunks of 256 KiB acknowledged, chunk {failed} got ENOSPC; "
      "after freeing space it and the next were written")
PY
    fail "C14 (--cache $cache)"
  kill -0 "$DG_PID" || fail "the server died"
  dg_stop
  umount "$MNT"
  mount -o loop "$T/fs.img" "$MNT"            # read the image from the disk, not the cache
  $PY - "$MNT/disk.img" "$T/acked.$cache" <<'PY' || fail "C14 (--cache $cache): the image file"
import sys
CH = 256 * 1024
f = open(sys.argv[1], "rb")
for i in map(int, open(sys.argv[2]).read().split()):
    f.seek(i * CH)
    assert f.read(CH) == (b"C14-chunk-%05d-" % i) * (CH // 16), f"chunk {i} is not in the file"
PY
  umount "$MNT"
  e2fsck -fn "$T/fs.img" >/dev/null 2>&1 || fail "the host file system is damaged?"
done
pass "C14: ENOSPC on a full host file system, nothing false acknowledged, writes resume"
