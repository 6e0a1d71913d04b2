#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsync errors are sticky (README "Sync modes"), through the fault-injecting backing over NBD:
# after a WRITE, the backing fails the next sync with EIO. That FLUSH gets NBD_EIO; so does
# every later FLUSH on the export, from this connection and from a new one, and every FUA
# write, even after more writes; the backing sees no further sync (a retried fsync may
# report success although the page cache dropped the data). Plain WRITEs and READs still
# work. The log says so once. After a restart the export syncs again.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
export DISKGATE_TEST_FAULTS=$T/ctl

truncate -s 4M "$T/disk.img"
for mode in full fsync; do
  dg_start --sync "$mode" "faulty:$T/disk.img"
  PYTHONPATH=$HERE:$SRCDIR/tests/lib $PY - "$DG_UNIX" "$DISKGATE_TEST_FAULTS" <<'PY' ||
import errno, sys
import nbd
from dgdur import Faults
from libnbd_helpers import expect_err
uri, ctl = sys.argv[1:]
f = Faults(ctl)
a, b = nbd.NBD(), nbd.NBD()
a.connect_uri(uri)
b.connect_uri(uri)
a.pwrite(b"\x11" * 4096, 0)
a.flush()                                    # a good sync first
a.pwrite(b"\x22" * 4096, 4096)
f.cmd("rule fail flush count=1 err=EIO")
f.cmd("record")
expect_err(errno.EIO, "the FLUSH whose sync failed", a.flush)
a.pwrite(b"\x33" * 4096, 8192)               # plain writes still work
assert a.pread(4096, 8192) == b"\x33" * 4096
expect_err(errno.EIO, "a later FLUSH, same connection", a.flush)
expect_err(errno.EIO, "a later FLUSH, another connection", b.flush)
c = nbd.NBD()
c.connect_uri(uri)
expect_err(errno.EIO, "a FLUSH on a new connection", c.flush)
expect_err(errno.EIO, "a FUA write after the failure", c.pwrite, b"\x44" * 4096, 12288,
           nbd.CMD_FLAG_FUA)
flushes = [(e["kind"], e["result"]) for e in f.events() if e["type"] == "flush"]
assert flushes == [("D", -5)], f"the backing saw these syncs after the failure: {flushes}"
for h in (a, b, c):
    h.shutdown()
print("sticky: every FLUSH after the failed sync failed with EIO; no retried sync")
PY
    fail "--sync $mode: sync errors are not sticky"
  dg_stop
  n=$(grep -c "sync failed" "$DG_LOG" || true)
  [ "$n" -eq 1 ] || { cat "$DG_LOG" >&2; fail "--sync $mode: 'sync failed' logged $n times, expected once"; }
  # a restart clears it: the new process syncs again
  dg_start --sync "$mode" "faulty:$T/disk.img"
  $PY - "$DG_UNIX" <<'PY' || fail "--sync $mode: FLUSH after a restart"
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
h.pwrite(b"\x55" * 4096, 0)
h.flush()
h.shutdown()
PY
  dg_stop
done
pass "a failed sync is sticky until restart (full, fsync), logged once"
