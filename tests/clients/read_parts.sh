#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Large READs answered in parts (src/server/txn_split.c): with structured replies, a READ of
# 512 KiB or more, aligned to 4096, comes back as one content chunk per 256 KiB (OFFSET_DATA,
# or OFFSET_HOLE where the part read as zeroes), DONE on the last chunk only, the extended
# header echoing the request's offset; smaller, unaligned and DF READs and simple replies
# stay whole; a 32 MiB READ (128 parts) among small requests. Both engines (event loops,
# and the reader/writer threads that TLS connections also use), both cache modes.
# Through the fault-injecting backing: each failed part gives an NBD_REPLY_TYPE_ERROR_OFFSET
# chunk at its own offset (no generic ERROR chunk) beside the other parts' data, one log
# line per READ, and the stream stays in sync; a client that leaves while parts are held
# leaves a server that serves the next one; SIGTERM while parts are held answers the READ
# whole once they are released, and the server exits 0 (the ASan+UBSan build also checks
# for leaks there). Checked with the raw client of tests/conformance (nbdwire), which checks
# every chunk against the spec.
. "$SRCDIR/tests/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
export DISKGATE_TEST_FAULTS=$T/ctl
PYPATH=$SRCDIR/tests/conformance:$SRCDIR/tests/durability

# disk.img: 8 MiB of random bytes, 4 MiB of zeroes, 4 MiB of random bytes, 32 MiB of random
# bytes.
mkrandom "$T/disk.img" $((8 << 20))
truncate -s $((12 << 20)) "$T/disk.img"
mkrandom "$T/b" $((36 << 20))
cat "$T/b" >>"$T/disk.img"

shapes() { # the chunk shapes of large and small READs against the running server
  PYTHONPATH=$PYPATH $PY - "$DG_SOCK" "$T/disk.img" <<'PY'
import sys
import nbdwire as W
sock, img = sys.argv[1:]
KiB, MiB, PART = 1024, 1 << 20, 256 * 1024
data = open(img, "rb").read()

def wire(**kw):
    w = W.Wire(unix=sock, timeout=30)
    w.negotiate("", **kw)
    return w

def check(rep, off, n, want):
    """want: the content chunks, [(offset, length, type)] in offset order."""
    what = f"READ {off}+{n} flags {rep.req.flags:#x}"
    assert rep.error == 0, f"{what}: error {rep.errors}"
    assert bytes(rep.data) == data[off:off + n], f"{what}: wrong data"
    got = sorted(rep.content)
    assert got == want, f"{what}: chunks {got[:6]}..., expected {want[:6]}..."
    dones = [i for i, (fl, _t, _l) in enumerate(rep.chunks) if fl & W.REPLY_FLAG_DONE]
    assert dones == [len(rep.chunks) - 1], f"{what}: DONE on chunks {dones} of {len(rep.chunks)}"

def parts(off, n, holes=()):
    out = []
    for p in range(off, off + n, PART):
        kind = W.RT_OFFSET_HOLE if any(a <= p < b for a, b in holes) else W.RT_OFFSET_DATA
        out.append((p, min(PART, off + n - p), kind))
    return out

zeroes = [(8 * MiB, 12 * MiB)]
one = lambda o, n: [(o, n, W.RT_OFFSET_DATA)]
for eh in (False, True):
    w = wire(sr=True, eh=eh)
    cases = [(0, MiB), (7 * MiB, 2 * MiB), (4096, MiB + 4096), (12 * MiB, 512 * KiB),
             (3 * MiB, 4 * MiB)]
    sent = [(w.send_request(W.CMD_READ, o, n), o, n) for o, n in cases for _ in range(3)]
    for ck, o, n in sent:  # 15 READs in flight: chunks of several READs interleave
        check(w.wait(ck), o, n, parts(o, n, zeroes))
    check(w.request(W.CMD_READ, 0, 512 * KiB - 4096), 0, 512 * KiB - 4096,
          one(0, 512 * KiB - 4096))
    check(w.request(W.CMD_READ, 512, MiB), 512, MiB, one(512, MiB))
    check(w.request(W.CMD_READ, MiB, MiB, W.CMD_FLAG_DF), MiB, MiB, one(MiB, MiB))
    check(w.request(W.CMD_READ, 7 * MiB, 2 * MiB, W.CMD_FLAG_DF), 7 * MiB, 2 * MiB,
          one(7 * MiB, 2 * MiB))
    # The largest READ (32 MiB, 128 parts) among small reads and writes of a scratch range.
    big = w.send_request(W.CMD_READ, 16 * MiB, 32 * MiB)
    small = [(w.send_request(W.CMD_READ, o, 4096), o) for o in range(0, 64 * KiB, 4096)]
    flags = W.CMD_FLAG_PAYLOAD_LEN if eh else 0
    wr = w.send_request(W.CMD_WRITE, 14 * MiB, 8192, flags, payload=data[14 * MiB:14 * MiB + 8192])
    for ck, o in small:
        check(w.wait(ck), o, 4096, one(o, 4096))
    assert w.wait(wr).error == 0, "WRITE among the parts of a 32 MiB READ"
    check(w.wait(big), 16 * MiB, 32 * MiB, parts(16 * MiB, 32 * MiB))
    w.disconnect()
w = wire(sr=False)
rep = w.request(W.CMD_READ, 0, 2 * MiB)
assert rep.simple and bytes(rep.data) == data[:2 * MiB], "simple READ of 2 MiB"
w.disconnect()
PY
}

for engine in uring threads; do
  for cache in direct writeback; do
    dg_start --engine "$engine" --cache "$cache" "$T/disk.img"
    shapes || fail "chunk shapes (--engine $engine --cache $cache)"
    dg_stop
  done
done

faults() { # a failed part, a client gone mid-READ, SIGTERM mid-READ (faulty backing)
  PYTHONPATH=$PYPATH $PY - "$DG_SOCK" "$T/disk.img" "$DISKGATE_TEST_FAULTS" "$DG_LOG" \
    "$DG_PID" <<'PY'
import os, signal, sys, time
import nbdwire as W
from dgdur import Faults
sock, img, ctl, log, pid = sys.argv[1:]
KiB, MiB, PART = 1024, 1 << 20, 256 * 1024
data = open(img, "rb").read()
f = Faults(ctl)

def wire():
    w = W.Wire(unix=sock, timeout=30)
    w.negotiate("", sr=True)
    return w

def wait_log(text, what):
    for _ in range(200):
        if text in open(log).read():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: no log line '{text}'")

# The second and fourth parts of a 1 MiB READ fail: an ERROR_OFFSET chunk at each one's
# offset, no generic ERROR, the other two parts' data; one log line for the READ.
w = wire()
for off in (MiB + PART, MiB + 3 * PART):
    f.cmd(f"rule fail read off={off} len=4096 count=1 err=EIO")
rep = w.request(W.CMD_READ, MiB, MiB)
assert rep.error == W.EIO, f"READ with failed parts: error {rep.error}, expected EIO"
errs = sorted((t, e, o) for t, e, _m, o in rep.errors)
want = [(W.RT_ERROR_OFFSET, W.EIO, MiB + PART), (W.RT_ERROR_OFFSET, W.EIO, MiB + 3 * PART)]
assert errs == want, f"READ with failed parts: error chunks {errs}, expected {want}"
got = sorted(rep.content)
want = [(MiB, PART, W.RT_OFFSET_DATA), (MiB + 2 * PART, PART, W.RT_OFFSET_DATA)]
assert got == want, f"READ with failed parts: content chunks {got}, expected {want}"
for o, n, _t in got:
    assert bytes(rep.data[o - MiB:o - MiB + n]) == data[o:o + n], f"part {o}: wrong data"
dones = [i for i, (fl, _t, _l) in enumerate(rep.chunks) if fl & W.REPLY_FLAG_DONE]
assert dones == [len(rep.chunks) - 1], f"failed parts: DONE on chunks {dones}"
assert w.read(0, MiB) == data[:MiB], "the READ after failed parts: wrong data"
w.disconnect()
wait_log(f"READ offset {MiB} length {MiB} failed", "failed parts")
lines = [l for l in open(log) if "failed:" in l]
assert len(lines) == 1, f"failed parts: {len(lines)} log lines, expected 1: {lines}"

# A client leaves after the first chunk while the other three parts are held.
f.cmd("clear")
f.cmd(f"rule stall read off={2 * MiB} len={MiB} skip=1")
w = wire()
ck = w.send_request(W.CMD_READ, 2 * MiB, MiB)
rep = w.recv_message()
assert rep.req.cookie == ck and not rep.done and len(rep.content) == 1, \
    f"first chunk: {rep.content} done {rep.done}"
w.close()
assert f.cmd("wait-stalled 3") == ["3"], "three parts not held"
f.cmd("clear")
f.cmd("release all")
wait_log("peer closed the connection without NBD_CMD_DISC", "client gone mid-READ")
w = wire()  # the server goes on
assert w.read(2 * MiB, MiB) == data[2 * MiB:3 * MiB], "READ after a client left: wrong data"
w.disconnect()

# SIGTERM while parts are held: the READ is answered whole once they are released.
f.cmd(f"rule stall read off={4 * MiB} len={MiB}")
w = wire()
ck = w.send_request(W.CMD_READ, 4 * MiB, MiB)
assert f.cmd("wait-stalled 4") == ["4"], "four parts not held"
os.kill(int(pid), signal.SIGTERM)
wait_log("finishing in-flight requests", "SIGTERM")
f.cmd("clear")
f.cmd("release all")
rep = w.wait(ck)
assert rep.error == 0 and bytes(rep.data) == data[4 * MiB:5 * MiB], \
    f"READ in flight at SIGTERM: error {rep.error}"
w.close()
PY
}

for engine in uring threads; do
  dg_start --engine "$engine" --verbose "faulty:$T/disk.img" # --verbose: the peer-closed line
  shapes || fail "chunk shapes (faulty backing, --engine $engine)"
  faults || { cat "$DG_LOG" >&2; fail "failed parts, client gone, SIGTERM (--engine $engine)"; }
  rc=0
  wait "$DG_PID" || rc=$?
  assert_eq "$rc" 0 "exit status after SIGTERM with parts held (--engine $engine)"
done
pass "large READs in 256 KiB chunks, 32 MiB among small requests; small, unaligned, DF," \
  "simple READs whole; failed parts; a client gone and SIGTERM mid-READ; both engines"
