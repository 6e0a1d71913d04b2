#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C15: multi-conn flush visibility and durability (docs/cases.md): with
# NBD_FLAG_CAN_MULTI_CONN advertised, a FLUSH on any connection covers the writes every
# connection saw acknowledged.
#  1. plain file backing, --cache writeback and direct: WRITE on A, FLUSH on B, READ on C
#     sees A's data (and D, connected only afterwards, too).
#  2. durability, through the fault-injecting backing: a sync requested from connection C
#     has started (its completion held: stall-done) when A's WRITE Y completes; B's FLUSH
#     must not ride on that sync. It is answered after a sync that started after Y: the
#     next one, or one on another sync channel started at once (server/durability.h); every
#     sync is held for a while, so it is not answered then. After B's FLUSH reply, a
#     simulated power loss must keep Y (a FLUSH that rode on the first sync would lose it).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1

truncate -s 8M "$T/disk.img"
for cache in writeback direct; do
  dg_start --cache "$cache" "$T/disk.img"
  $PY - "$DG_UNIX" "$cache" <<'PY' || fail "C15 visibility (--cache $cache)"
import sys, nbd
uri, cache = sys.argv[1:]
hs = []
for _ in range(3):
    h = nbd.NBD()
    h.connect_uri(uri)
    assert h.can_multi_conn(), "CAN_MULTI_CONN is not advertised"
    hs.append(h)
a, b, c = hs
for i in range(50):
    data = bytes([i + 1]) * 4096 + (b"%s-%d" % (cache.encode(), i)).ljust(4096, b".")
    a.pwrite(data, i * 8192)
    b.flush()
    assert c.pread(8192, i * 8192) == data, f"round {i}: C does not see A's write after B's FLUSH"
d = nbd.NBD()
d.connect_uri(uri)
assert d.pread(8192, 49 * 8192) == data, "a new connection does not see the data"
for h in hs + [d]:
    h.shutdown()
PY
  dg_stop
done
pass "C15: a FLUSH on B makes A's writes visible on C (writeback, direct)"

export DISKGATE_TEST_FAULTS=$T/ctl
truncate -s 0 "$T/disk.img"; truncate -s 8M "$T/disk.img"
dg_start "faulty:$T/disk.img"
PYTHONPATH=$HERE $PY - "$DG_UNIX" "$DISKGATE_TEST_FAULTS" <<'PY' || fail "C15 durability"
import sys, time, nbd
from dgdur import Faults
uri, ctl = sys.argv[1:]
f = Faults(ctl)
a, b, c = nbd.NBD(), nbd.NBD(), nbd.NBD()
for h in (a, b, c):
    h.connect_uri(uri)
a.pwrite(b"\x01" * 4096, 0)
f.cmd("rule stall-done flush count=2")
fc = c.aio_flush()                          # sync S1 starts; its completion is held
f.cmd("wait-stalled 1 5000")
a.pwrite(b"\x59" * 4096, 65536)             # Y completes after S1 started
fb = b.aio_flush()                          # must wait for a sync that starts after Y
t_end = time.time() + 0.5
while time.time() < t_end:
    b.poll(50)
assert not b.aio_command_completed(fb), "B's FLUSH was answered while every sync was held"
while not b.aio_command_completed(fb):       # S2 may start only once S1 is released
    f.cmd("release all")
    b.poll(50)
while not c.aio_command_completed(fc):
    c.poll(-1)
print("crash ->", f.raw("crash"))           # power loss right after B's FLUSH reply
PY
rc=0; wait "$DG_PID" || rc=$?
[ "$rc" -eq 137 ] || fail "the faulty backing did not crash the server (exit $rc)"
dg_start "$T/disk.img"
$PY - "$DG_UNIX" <<'PY' || fail "C15: Y, acknowledged on A and flushed on B, lost in a power loss"
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
assert h.pread(4096, 65536) == b"\x59" * 4096, "Y is not in the image after the power loss"
assert h.pread(4096, 0) == b"\x01" * 4096
h.shutdown()
PY
dg_stop
pass "C15: a FLUSH on B makes A's acknowledged write durable (simulated power loss)"
