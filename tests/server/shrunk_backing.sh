#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A backing file truncated shorter while it is served: READ past the file's new end fails
# with EIO, so
#  - BLOCK_STATUS must not report that range as a hole that reads as zeroes (base:allocation,
#    NBD_STATE_HOLE|NBD_STATE_ZERO; doc/proto.md "Metadata querying"): SEEK_DATA's ENXIO
#    past the end is not a hole;
#  - with the file cut at a size that is not a multiple of 512, every extent length stays a
#    multiple of the minimum block size (a MUST of BLOCK_STATUS; no hole of 1000 bytes);
#  - WRITE_ZEROES past the new end, replied to with success, reads back as zeroes (fallocate
#    with KEEP_SIZE alone would leave the file short), also when it ends inside a block (with
#    --cache direct, whose read-modify-write reads the whole block through O_DIRECT), and so
#    does an unaligned WRITE there;
#  - every range BLOCK_STATUS reports as zero reads back as zeroes.
# The part of the export still inside the file keeps its map; growing the file back to the
# export's size makes the tail read as zeroes again. For --cache writeback and direct.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

img=$T/shrink.img
for cache in writeback direct; do
  rm -f "$img"
  truncate -s 1M "$img"
  # 64 KiB of data at the start, the rest a hole
  head -c 65536 /dev/urandom | dd of="$img" conv=notrunc status=none
  dg_start --cache "$cache" "$img"
  PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_UNIX" "$img" "$cache" <<'PY' || { cat "$DG_LOG" >&2; fail "shrunk backing, --cache $cache"; }
import os, sys, errno, nbd
from libnbd_helpers import connect, expect_err
uri, img, cache = sys.argv[1], sys.argv[2], sys.argv[3]
K = 1024
HOLE, ZERO = nbd.STATE_HOLE, nbd.STATE_ZERO

h = nbd.NBD()
h.add_meta_context(nbd.CONTEXT_BASE_ALLOCATION)
h.connect_uri(uri)
assert h.can_meta_context(nbd.CONTEXT_BASE_ALLOCATION)

def extents(off, length):
    """[(start, length, flags)] covering [off, off+length), asking again after short replies."""
    out, end = [], off + length
    while off < end:
        got = []
        def cb(ctx, start, entries, err):
            assert ctx == nbd.CONTEXT_BASE_ALLOCATION
            pos = start
            for i in range(0, len(entries), 2):
                got.append((pos, entries[i], entries[i + 1]))
                pos += entries[i]
            return 0
        h.block_status(end - off, off, cb)
        assert got and got[0][0] == off, f"block status at {off}: {got}"
        for s, n, f in got:
            if s >= end:
                break
            n = min(n, end - s)
            out.append((s, n, f))
            off = s + n
    return out

def zeroes_read_back(ext, what):
    """Every range reported HOLE|ZERO or ZERO reads as zeroes (in pieces of at most 1 MiB)."""
    for s, n, f in ext:
        if f & ZERO:
            for o in range(s, s + n, 1 << 20):
                m = min(1 << 20, s + n - o)
                try:
                    got = h.pread(m, o)
                except nbd.Error as e:
                    raise AssertionError(f"{cache}: {what}: [{o}, {o + m}) reported zero, "
                                         f"READ: {e.string}; {ext}")
                assert got == bytes(m), f"{cache}: {what}: [{o}, {o + m}) is not zero"

def flags_over(ext, lo, hi):
    """The set of flags reported anywhere in [lo, hi)."""
    return {f for s, n, f in ext if s < hi and s + n > lo}

size = h.get_size()
assert size == 1024 * K

# before: data at the start, then a hole that reads as zeroes to the end of the export
ext = extents(0, size)
assert flags_over(ext, 0, 64 * K) == {0}, f"{cache}: the data: {ext}"
assert flags_over(ext, 64 * K, size) == {HOLE | ZERO}, f"{cache}: the hole: {ext}"
assert h.pread(4 * K, size - 4 * K) == bytes(4 * K)

# the file shrinks to 512 KiB + 1000 bytes under the server (not a whole number of blocks)
cut = 512 * K + 1000
os.truncate(img, cut)
expect_err(errno.EIO, f"{cache}: READ past the file's new end", h.pread, 4 * K, 768 * K)
minimum = h.get_block_size(nbd.SIZE_MINIMUM)
assert minimum == 512, f"{cache}: minimum block size {minimum}"
ext = extents(0, size)
bad = [(s, n, f) for s, n, f in ext if n % minimum]
assert not bad, f"{cache}: extent lengths not multiples of {minimum}: {bad} in {ext}"
assert flags_over(ext, 0, 64 * K) == {0}, f"{cache}: the data after the shrink: {ext}"
assert flags_over(ext, 64 * K, 512 * K) == {HOLE | ZERO}, \
    f"{cache}: the hole inside the file after the shrink: {ext}"
past = flags_over(ext, cut // minimum * minimum, size)  # from the block the end cuts
assert all(f & ZERO == 0 and f & HOLE == 0 for f in past), \
    f"{cache}: past the file's end reported as {past} (reads there fail): {ext}"
zeroes_read_back(ext, "after the shrink")
# asked from inside the hole, and from past the end
ext = extents(256 * K, 512 * K)
assert flags_over(ext, 256 * K, 512 * K) == {HOLE | ZERO}, f"{cache}: from 256K: {ext}"
assert all(f & ZERO == 0 for f in flags_over(ext, cut // minimum * minimum, 768 * K)), \
    f"{cache}: from 256K: {ext}"
assert all(n % minimum == 0 for s, n, f in ext), f"{cache}: from 256K: {ext}"
ext = extents(640 * K, 64 * K)
assert all(f & ZERO == 0 for f in flags_over(ext, 640 * K, 704 * K)), f"{cache}: from 640K: {ext}"
# reads inside the file still work
assert h.pread(4 * K, 256 * K) == bytes(4 * K)

# WRITE_ZEROES past the end succeeds and reads back as zeroes (punched, then with NO_HOLE)
h.zero(64 * K, 768 * K)
assert h.pread(64 * K, 768 * K) == bytes(64 * K), f"{cache}: WRITE_ZEROES past the end"
assert os.stat(img).st_size >= 832 * K, f"{cache}: file size {os.stat(img).st_size}"
h.zero(64 * K, 896 * K, nbd.CMD_FLAG_NO_HOLE)
assert h.pread(64 * K, 896 * K) == bytes(64 * K), f"{cache}: NO_HOLE WRITE_ZEROES past the end"
assert os.stat(img).st_size == 960 * K, f"{cache}: file size {os.stat(img).st_size}"
# zeroing inside the file leaves its size as it is
h.zero(4 * K, 60 * K)
assert os.stat(img).st_size == 960 * K, f"{cache}: file size {os.stat(img).st_size}"
# an unaligned WRITE_ZEROES past the end (libnbd's own alignment check off): the file ends
# inside a block, and the zeroes still read back (with --cache direct, a read of them is a
# read-modify-write that O_DIRECT cannot do across the file's end)
h.set_strict_mode(h.get_strict_mode() & ~nbd.STRICT_ALIGN)
h.zero(100, 960 * K)
assert os.stat(img).st_size == 960 * K + 100, f"{cache}: file size {os.stat(img).st_size}"
assert h.pread(100, 960 * K) == bytes(100), f"{cache}: unaligned zeroes past the end"
assert h.pread(60, 960 * K + 20) == bytes(60), f"{cache}: unaligned zeroes past the end"
ext = extents(0, size)
assert all(n % minimum == 0 for s, n, f in ext), f"{cache}: after the unaligned zeroes: {ext}"
zeroes_read_back(ext, "after the unaligned zeroes")
# an unaligned WRITE past the end grows the file the same way, and reads back
h.pwrite(b"\x5a" * 100, 960 * K + 300)
assert os.stat(img).st_size == 960 * K + 400, f"{cache}: file size {os.stat(img).st_size}"
assert h.pread(100, 960 * K + 300) == b"\x5a" * 100, f"{cache}: unaligned WRITE past the end"
assert h.pread(300, 960 * K) == bytes(300), f"{cache}: before the unaligned WRITE"

# grown back: the tail reads as zeroes again, and is reported as a hole
os.truncate(img, size)
assert h.pread(4 * K, 1020 * K) == bytes(4 * K)
ext = extents(0, size)
assert flags_over(ext, 964 * K, size) == {HOLE | ZERO}, f"{cache}: grown back: {ext}"
zeroes_read_back(ext, "grown back")
h.shutdown()
PY
  dg_stop
done
pass "a backing file shrunk while served: READ past its end is EIO, BLOCK_STATUS there is not zero and stays aligned, WRITE_ZEROES there reads back"
