#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real writeback error under the page cache (docs/durability.md "Sync channels"): the
# image sits on an ext4 file system whose loop device is a file on a full tmpfs, and half
# of the image's blocks are holes in that file. Page-cache writes there succeed, but their
# writeback fails (the loop device gets ENOSPC): the kernel records the error once per open
# file description (errseq), and each of the file backing's 4 sync channels has its own.
# 4 connections write 4K blocks of distinct data at distinct offsets, each followed by a
# FLUSH, on --cache writeback --sync full. Required:
#   - before any write reaches the holes, FLUSH succeeds (the first phase);
#   - a FLUSH fails with EIO once writeback fails, and no FLUSH or FUA write succeeds after
#     the first failed one (sticky), on any connection;
#   - nothing acknowledged is lost: after the server stops and the file system is mounted
#     again (so every page is read from the loop device), each write that a successful
#     FLUSH or FUA covered reads back;
#   - the log says "sync failed" once;
#   - writes left unflushed at shutdown, whose writeback fails, make the server's last sync
#     at shutdown fail, and the log says so.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
command -v mkfs.ext4 >/dev/null || fail "mkfs.ext4 not found (e2fsprogs)"
command -v filefrag >/dev/null || fail "filefrag not found (e2fsprogs)"

dg_tmpfs 72M
DG_CLEANUP_EXTRA=dg_tmpfs_umount
# Every block of the file system is written, so that only the holes punched below can fail.
dd if=/dev/zero of="$TFS/fs.img" bs=1M count=64 status=none
# No lazy init: ext4's background inode-table zeroing reaches the loop device as
# WRITE_ZEROES, which punches holes in fs.img and so gives the tmpfs space back.
mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$TFS/fs.img"
mount -o loop,noinit_itable "$TFS/fs.img" "$MNT" ||
  fail "cannot loop-mount a file system (need loop devices)"
dd if=/dev/urandom of="$MNT/disk.img" bs=1M count=8 conv=fsync status=none
# One extent of 2048 blocks; its second half (the image's last 4 MiB) becomes holes.
read -r first count <<<"$(filefrag -e "$MNT/disk.img" |
  awk '$1 == "0:" { gsub(/[.:]/, " "); print $4, $6 }')"
[ "${count:-0}" -eq 2048 ] || fail "disk.img is not one extent of 2048 blocks: $(filefrag -e "$MNT/disk.img")"
fallocate --punch-hole -o $(((first + 1024) * 4096)) -l $((1024 * 4096)) "$TFS/fs.img"
dd if=/dev/zero of="$TFS/filler" bs=1M status=none 2>/dev/null || true  # fills the tmpfs
[ "$(df --output=avail -k "$TFS" | tail -1)" -lt 64 ] || fail "the tmpfs is not full"

dg_start --cache writeback --sync full "$MNT/disk.img"
PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_UNIX" "$T/durable" <<'PY' ||
import sys, threading
import nbd
from libnbd_helpers import errno_name
uri, out = sys.argv[1:]
BS, GOOD = 4096, 1024                     # blocks 0..1023 are backed, 1024..2047 are holes
def data(block):
    return (b"WBE-block-%05d-" % block) * (BS // 16)
conns = [nbd.NBD() for _ in range(4)]
for h in conns:
    h.connect_uri(uri)
durable = []
# Phase 1: backed blocks only; every FLUSH succeeds.
for i, block in enumerate(range(0, 64)):
    h = conns[i % 4]
    h.pwrite(data(block), block * BS)
    h.flush()
    durable.append(block)
# Phase 2: 4 threads, each block once, writes and FLUSHes across both halves.
# Backed blocks first (their FLUSHes succeed), then backed and hole blocks in turn.
blocks = list(range(64, 320))
blocks += [b for pair in zip(range(320, GOOD), range(GOOD, 2 * GOOD)) for b in pair]
lock = threading.Lock()
state = {"next": 0, "failed": 0, "ok_after_fail": [], "other": []}
def worker(h):
    mine = []
    while True:
        with lock:
            if state["next"] >= len(blocks) or state["failed"] >= 8:
                return
            block = blocks[state["next"]]
            state["next"] += 1
        try:
            h.pwrite(data(block), block * BS)
        except nbd.Error as e:
            with lock:
                state["other"].append("write %d: %s" % (block, e))
            return
        mine.append(block)
        with lock:
            failed_before = state["failed"]
        try:
            h.flush()
            with lock:
                durable.extend(mine)
                if failed_before:
                    state["ok_after_fail"].append(block)
            mine = []
        except nbd.Error as e:
            if errno_name(e) != "EIO":
                with lock:
                    state["other"].append("flush: %s" % e)
                return
            with lock:
                state["failed"] += 1
threads = [threading.Thread(target=worker, args=(h,)) for h in conns]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert not state["other"], state["other"]
assert state["failed"] > 0, "no FLUSH failed although writeback into the holes must fail"
assert not state["ok_after_fail"], \
    "FLUSHes succeeded after one had failed: %s" % state["ok_after_fail"]
h = conns[0]
try:
    h.pwrite(data(63), 63 * BS, nbd.CMD_FLAG_FUA)
    raise AssertionError("a FUA write succeeded after a failed sync")
except nbd.Error as e:
    assert errno_name(e) == "EIO", e
try:
    h.flush()
    raise AssertionError("a FLUSH succeeded after a failed sync")
except nbd.Error as e:
    assert errno_name(e) == "EIO", e
# Phase 3: writes into the holes that no client flushes. Their writeback fails at the
# server's last sync at shutdown, which must say so in the log.
for block in range(GOOD + 1000, GOOD + 1024):
    h.pwrite(data(block), block * BS)
for h in conns:
    h.shutdown()
open(out, "w").write(" ".join(map(str, sorted(durable))))
print("writeback error: %d writes made durable, %d FLUSHes failed, none succeeded after"
      % (len(durable), state["failed"]))
PY
  fail "writeback error: FLUSH results"
kill -0 "$DG_PID" || fail "the server died"
dg_stop
n=$(grep -c "sync failed" "$DG_LOG" || true)
[ "$n" -eq 1 ] || { cat "$DG_LOG" >&2; fail "'sync failed' logged $n times, expected once"; }
grep -q "error: file: the last sync at shutdown failed: " "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "the failed last sync at shutdown is not logged"; }
umount "$MNT" || fail "cannot unmount the file system"
# read-write: ext4 may replay its journal, into blocks the tmpfs already holds
mount -o loop,noinit_itable "$TFS/fs.img" "$MNT" || { dmesg | tail -5 >&2; fail "cannot mount the file system again"; }
$PY - "$MNT/disk.img" "$T/durable" <<'PY' || fail "writeback error: an acknowledged write was lost"
import sys
BS = 4096
f = open(sys.argv[1], "rb")
durable = list(map(int, open(sys.argv[2]).read().split()))
lost = []
for block in durable:
    f.seek(block * BS)
    if f.read(BS) != (b"WBE-block-%05d-" % block) * (BS // 16):
        lost.append(block)
assert not lost, "acknowledged by a FLUSH but not on the disk: blocks %s" % lost
print("all %d acknowledged writes read back from the disk" % len(durable))
PY
umount "$MNT"
pass "a real writeback error fails FLUSH on every channel, sticky; nothing acknowledged lost"
