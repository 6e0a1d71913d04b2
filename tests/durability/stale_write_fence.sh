#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C12: stale write after reconnect (docs/cases.md), with the fault-injecting
# backing's stall: WRITE(X, v1) from connection 1 is stalled in the backing (not yet started).
# The client drops connection 1 with the write in flight, opens connection 2, sends WRITE(X, v1)
# again, then WRITE(X, v2). Required (server/fence.c):
#   - while the stale write is stalled, connection 2's overlapping writes are not
#     acknowledged (they wait for it), but a non-overlapping write on connection 3 is;
#   - once the stall is released, the stale write lands first: both of connection 2's
#     writes are acknowledged and X reads back v2, also after a restart of the server.
# Run with the stale write stalled before it starts (`stall`) and with it stalled after it
# reached the file but before it completes (`stall-done`).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
export DISKGATE_TEST_FAULTS=$T/ctl

X=$((1024 * 1024))
for how in stall stall-done; do
  truncate -s 0 "$T/disk.img"; truncate -s 4M "$T/disk.img"
  dg_start "faulty:$T/disk.img"
  PYTHONPATH=$HERE $PY - "$DG_UNIX" "$DISKGATE_TEST_FAULTS" "$X" "$how" <<'PY' || fail "C12 ($how)"
import sys, time
import nbd
from dgdur import Faults
uri, ctl, X, how = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
v1, v2 = b"\x01" * 65536, b"\x02" * 65536
f = Faults(ctl)
f.cmd(f"rule {how} write off={X} len=65536 count=1")
c1 = nbd.NBD()
c1.connect_uri(uri)
c1.aio_pwrite(v1, X)                       # stalled in the backing
f.cmd("wait-stalled 1 5000")
del c1           # libnbd closes the socket without NBD_CMD_DISC, the write still in flight
time.sleep(0.2)
c2 = nbd.NBD()
c2.connect_uri(uri)
w1 = c2.aio_pwrite(v1, X)
time.sleep(0.2)
# Another connection's non-overlapping write is not held back. (Connection 2's reader waits
# in the fence, so its own later requests wait too: the fence blocks per connection.)
c3 = nbd.NBD()
c3.connect_uri(uri)
c3.pwrite(b"\x09" * 4096, 3 * 1024 * 1024)
c3.shutdown()
t_end = time.time() + 1.0
while time.time() < t_end:                 # 1 s: the repeated write must not be acknowledged
    c2.poll(50)
    assert not c2.aio_command_completed(w1), \
        "WRITE(X, v1) on connection 2 acknowledged while the stale write is still in flight"
assert f.cmd("stalled")[0] == "1", "the stale write is no longer stalled"
f.cmd("release all")
while not c2.aio_command_completed(w1):
    c2.poll(-1)
c2.pwrite(v2, X)
assert c2.pread(65536, X) == v2, "X does not hold v2 after the stale write was released"
c2.shutdown()
print(f"C12 ({how}): the stale write landed first; X = v2")
PY
  dg_stop
  dg_start "$T/disk.img"   # from the file, not the cache of the old process
  $PY - "$DG_UNIX" "$X" <<'PY' || fail "C12 ($how): X after a restart"
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
assert h.pread(65536, int(sys.argv[2])) == b"\x02" * 65536, "X does not hold v2"
h.shutdown()
PY
  dg_stop
done

# A chain of dead connections: connection 1's write is stalled, connection 2's overlapping
# write waits behind it and connection 2 is dropped too; connection 3 writes v2 over a range
# that overlaps only connection 2's write. That write must wait for it, never be
# acknowledged at once and then overwritten by connection 2's stale data when the stall
# ends. Afterwards each range holds the newest write that covers it.
truncate -s 0 "$T/disk.img"; truncate -s 4M "$T/disk.img"
dg_start "faulty:$T/disk.img"
PYTHONPATH=$HERE $PY - "$DG_UNIX" "$DISKGATE_TEST_FAULTS" "$X" <<'PY' || fail "C12 (parked)"
import sys, time
import nbd
from dgdur import Faults
uri, ctl, X = sys.argv[1], sys.argv[2], int(sys.argv[3])
K = 1024
f = Faults(ctl)
f.cmd(f"rule stall write off={X} len={64 * K} count=1")
c1 = nbd.NBD()
c1.connect_uri(uri)
c1.aio_pwrite(b"\x01" * 64 * K, X)             # [X, X+64K): stalled in the backing
f.cmd("wait-stalled 1 5000")
del c1
c2 = nbd.NBD()
c2.connect_uri(uri)
c2.aio_pwrite(b"\x11" * 64 * K, X + 32 * K)    # [X+32K, X+96K): waits for connection 1's
time.sleep(0.3)
del c2                                          # dropped, its write still waiting
time.sleep(0.2)
c3 = nbd.NBD()
c3.connect_uri(uri)
w = c3.aio_pwrite(b"\x02" * 32 * K, X + 64 * K) # [X+64K, X+96K): overlaps connection 2's only
t_end = time.time() + 1.0
while time.time() < t_end:
    c3.poll(50)
    assert not c3.aio_command_completed(w), \
        "the newer write was acknowledged while an older overlapping write still waits"
f.cmd("release all")
while not c3.aio_command_completed(w):
    c3.poll(-1)
time.sleep(0.3)
got = c3.pread(96 * K, X)
want = b"\x01" * 32 * K + b"\x11" * 32 * K + b"\x02" * 32 * K
assert got == want, "after the release: " + str([got[i * 32 * K] for i in range(3)])
c3.shutdown()
print("C12 (parked): the dead connections' writes landed in order, then v2")
PY
dg_stop
dg_start "$T/disk.img"
$PY - "$DG_UNIX" "$X" <<'PY' || fail "C12 (parked): after a restart"
import sys, nbd
K = 1024
h = nbd.NBD()
h.connect_uri(sys.argv[1])
got = h.pread(96 * K, int(sys.argv[2]))
assert got == b"\x01" * 32 * K + b"\x11" * 32 * K + b"\x02" * 32 * K, "not in order"
h.shutdown()
PY
dg_stop
pass "C12: a dead connection's stalled write is fenced before newer overlapping writes"
