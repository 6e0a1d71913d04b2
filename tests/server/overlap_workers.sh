#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Four connections writing overlapping, unaligned ranges of an O_DIRECT export at once (each
# client: write its own pattern, read it back, 400 times). Such writes wait on engine
# workers: at the file backing's gate for a read-modify-write, and at the export's fence
# for another connection's write. No worker may wait for a request still queued behind it
# (the whole server would hang, SIGTERM included), however many overlapping writes are in
# flight (three connections with 128 each would take 258 workers). A write
# that must wait for another connection's is parked in the fence and started by the
# completion that unblocks it, and a read-modify-write takes the gate on the worker that
# runs it: every client finishes, a fifth client is served, the extra workers exit once
# idle, and SIGTERM ends the server with status 0. The data of overlapping writes is
# unspecified (the spec): only that every request is answered is checked.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

head -c 1048576 /dev/urandom >"$T/disk.img"
dg_start --engine uring --cache direct "$T/disk.img"
# clients MODE URI [PSK]: "race": 4 clients, each writing then reading its own
# (overlapping, unaligned) range 400 times, one request at a time; "flood": 3 clients
# keeping 128 overlapping unaligned 100-byte writes in flight, 5 times; "mixed": the flood
# without overlaps plus a TLS client (PSK file PSK, user alice) writing unaligned 100-byte pieces one at a
# time, 300 times. Exit 0 when every request was answered; 124 from timeout when the
# server hung.
cat >"$T/clients.py" <<'PY'
import sys
from multiprocessing import Process
import nbd

mode, uri = sys.argv[1], sys.argv[2]

def connect(psk=None):
    h = nbd.NBD()
    h.set_strict_mode(0)
    if psk is not None:
        h.set_tls(nbd.TLS_REQUIRE)
        h.set_tls_psk_file(psk)
        h.set_tls_username("alice")
    h.connect_uri(uri)
    return h

def tls_writer(psk):
    h = connect(psk)
    for r in range(300):
        h.pwrite(bytes([r % 255 + 1]) * 100, 600000 + r * 300 + 3)
    h.shutdown()

def race(k, off, length):
    h = connect()
    for r in range(400):
        h.pwrite(bytes([(k * 50 + r) % 255 + 1]) * length, off)
        h.pread(length, off)
    h.shutdown()

def flood(k, overlap=True):
    h = connect()
    buf = nbd.Buffer.from_bytearray(bytearray([k + 1]) * 100)
    for r in range(5):
        for i in range(128):
            off = (i * 37 + k * 11) % 8000 + 1 if overlap else (k * 128 + i) * 200 + 1
            h.aio_pwrite(buf, off)
        while h.aio_in_flight() > 0:
            h.poll(-1)
    h.shutdown()

if mode == "race":
    jobs = [(race, (k, o, n)) for k, (o, n) in
            enumerate([(0, 4096), (100, 100), (4000, 300), (3000, 2000)])]
else:
    jobs = [(flood, (k,)) for k in range(3)]
if mode == "mixed":  # no overlaps: every RMW goes straight to the gate
    jobs = [(flood, (k, False)) for k in range(3)] + [(tls_writer, (sys.argv[3],))]
ps = [Process(target=f, args=a) for f, a in jobs]
for p in ps:
    p.start()
for p in ps:
    p.join()
sys.exit(max(p.exitcode for p in ps))
PY
rc=0
timeout 90 $PY "$T/clients.py" race "$DG_UNIX" || rc=$?
[ "$rc" -ne 124 ] || { cat "$DG_LOG" >&2; fail "the four clients hung (no reply within 90 s)"; }
assert_eq "$rc" 0 "the four clients' exit status"
threads0=$(ls "/proc/$DG_PID/task" | wc -l)
rc=0
timeout 90 $PY "$T/clients.py" flood "$DG_UNIX" || rc=$?
[ "$rc" -ne 124 ] || { cat "$DG_LOG" >&2; fail "3 x 128 overlapping writes hung (no reply within 90 s)"; }
assert_eq "$rc" 0 "the three flooding clients' exit status"
for i in $(seq 1 200); do
  [ "$(ls "/proc/$DG_PID/task" | wc -l)" -le "$threads0" ] && break
  sleep 0.1
done
[ "$(ls "/proc/$DG_PID/task" | wc -l)" -le "$threads0" ] ||
  fail "$(ls "/proc/$DG_PID/task" | wc -l) threads 20 s after the clients left, $threads0 before"
timeout 20 $PY - "$DG_UNIX" <<'PY' || fail "a fifth client after the race"
import sys
import nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
h.pwrite(b"z" * 4096, 65536)
assert h.pread(4096, 65536) == b"z" * 4096
h.shutdown()
PY
kill -TERM "$DG_PID"
for i in $(seq 1 200); do kill -0 "$DG_PID" 2>/dev/null || break; sleep 0.05; done
kill -0 "$DG_PID" 2>/dev/null && { cat "$DG_LOG" >&2; fail "diskgate still runs 10 s after SIGTERM"; }
rc=0
wait "$DG_PID" || rc=$?
assert_eq "$rc" 0 "exit status after SIGTERM"
# TLS connections run on threads, plain ones on event loops; one export, both at once.
echo "alice:$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/keys.psk"
dg_start --engine uring --cache direct --tls on --tls-psk "$T/keys.psk" "$T/disk.img"
rc=0
timeout 90 $PY "$T/clients.py" mixed "$DG_UNIX" "$T/keys.psk" || rc=$?
[ "$rc" -ne 124 ] || { cat "$DG_LOG" >&2; fail "TLS and plain unaligned writes hung (no reply within 90 s)"; }
assert_eq "$rc" 0 "the TLS and plain clients' exit status"
dg_stop
pass "overlapping unaligned writes from many connections, plain and TLS: no hang"
