#!/usr/bin/env bash
# Large READs answered in parts (src/server/txn_split.c): with structured replies, a READ of
# 512 KiB or more, aligned to 4096, comes back as one content chunk per 256 KiB (OFFSET_DATA,
# or OFFSET_HOLE where the part read as zeroes), DONE on the last chunk only, the extended
# header echoing the request's offset; smaller, unaligned and DF READs and simple replies
# stay whole. Through the fault-injecting backing: a part that fails gives an error chunk
# beside the other parts' data and the stream stays in sync; a client that leaves while
# parts are still at the backing leaves a server that serves the next one and stops clean
# (the ASan+UBSan build also checks for leaks there). Checked with the raw client of
# tests/conformance (nbdwire), which checks every chunk against the spec.
. "$SRCDIR/tests/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
export DISKGATE_TEST_FAULTS=$T/ctl
PYPATH=$SRCDIR/tests/conformance:$SRCDIR/tests/durability

# disk.img: 8 MiB of random bytes, 4 MiB of zeroes, 4 MiB of random bytes.
mkrandom "$T/a" $((8 << 20))
mkrandom "$T/b" $((4 << 20))
cp "$T/a" "$T/disk.img"
truncate -s $((12 << 20)) "$T/disk.img"
cat "$T/b" >>"$T/disk.img"

shapes() { # the chunk shapes of large and small READs against the running server
  PYTHONPATH=$PYPATH $PY - "$DG_SOCK" "$T/disk.img" <<'PY'
import sys
import nbdwire as W
sock, img = sys.argv[1:]
KiB, MiB, PART = 1024, 1 << 20, 256 * 1024
data = open(img, "rb").read()

def wire(**kw):
    w = W.Wire(unix=sock)
    w.negotiate("", **kw)
    return w

def check(rep, off, n, want):
    """want: the content chunks, [(offset, length, type)] in offset order."""
    what = f"READ {off}+{n} flags {rep.req.flags:#x}"
    assert rep.error == 0, f"{what}: error {rep.errors}"
    assert bytes(rep.data) == data[off:off + n], f"{what}: wrong data"
    got = sorted(rep.content)
    assert got == want, f"{what}: chunks {got}, expected {want}"
    dones = [i for i, (fl, _t, _l) in enumerate(rep.chunks) if fl & W.REPLY_FLAG_DONE]
    assert dones == [len(rep.chunks) - 1], f"{what}: DONE on chunks {dones} of {len(rep.chunks)}"

def parts(off, n, holes=()):
    out = []
    for p in range(off, off + n, PART):
        kind = W.RT_OFFSET_HOLE if any(a <= p < b for a, b in holes) else W.RT_OFFSET_DATA
        out.append((p, min(PART, off + n - p), kind))
    return out

zeroes = [(8 * MiB, 12 * MiB)]
for eh in (False, True):
    w = wire(sr=True, eh=eh)
    cases = [(0, MiB), (7 * MiB, 2 * MiB), (4096, MiB + 4096), (12 * MiB, 512 * KiB),
             (3 * MiB, 4 * MiB)]
    sent = [(w.send_request(W.CMD_READ, o, n), o, n) for o, n in cases for _ in range(3)]
    for ck, o, n in sent:  # nine requests in flight: chunks of several READs interleave
        check(w.wait(ck), o, n, parts(o, n, zeroes))
    one = lambda o, n: [(o, n, W.RT_OFFSET_DATA)]
    check(w.request(W.CMD_READ, 0, 512 * KiB - 4096), 0, 512 * KiB - 4096,
          one(0, 512 * KiB - 4096))
    check(w.request(W.CMD_READ, 512, MiB), 512, MiB, one(512, MiB))
    check(w.request(W.CMD_READ, MiB, MiB, W.CMD_FLAG_DF), MiB, MiB, one(MiB, MiB))
    check(w.request(W.CMD_READ, 7 * MiB, 2 * MiB, W.CMD_FLAG_DF), 7 * MiB, 2 * MiB,
          one(7 * MiB, 2 * MiB))
    w.disconnect()
w = wire(sr=False)
rep = w.request(W.CMD_READ, 0, 2 * MiB)
assert rep.simple and bytes(rep.data) == data[:2 * MiB], "simple READ of 2 MiB"
w.disconnect()
PY
}

for cache in direct writeback; do
  dg_start --cache "$cache" "$T/disk.img"
  shapes || fail "chunk shapes (--cache $cache)"
  dg_stop
done

dg_start "faulty:$T/disk.img"
shapes || fail "chunk shapes (faulty backing)"
PYTHONPATH=$PYPATH $PY - "$DG_SOCK" "$T/disk.img" "$DISKGATE_TEST_FAULTS" <<'PY' ||
import sys
import nbdwire as W
from dgdur import Faults
sock, img, ctl = sys.argv[1:]
KiB, MiB, PART = 1024, 1 << 20, 256 * 1024
data = open(img, "rb").read()
f = Faults(ctl)

def wire():
    w = W.Wire(unix=sock)
    w.negotiate("", sr=True)
    return w

# The second part of a 1 MiB READ fails: an error chunk, the other three parts' data.
w = wire()
f.cmd(f"rule fail read off={MiB + PART} len=4096 count=1 err=EIO")
rep = w.request(W.CMD_READ, MiB, MiB)
assert rep.error == W.EIO, f"READ with a failed part: error {rep.error}, expected EIO"
got = sorted(rep.content)
want = [(MiB, PART, W.RT_OFFSET_DATA), (MiB + 2 * PART, PART, W.RT_OFFSET_DATA),
        (MiB + 3 * PART, PART, W.RT_OFFSET_DATA)]
assert got == want, f"READ with a failed part: content chunks {got}, expected {want}"
for o, n, _t in got:
    assert bytes(rep.data[o - MiB:o - MiB + n]) == data[o:o + n], f"part {o}: wrong data"
dones = [i for i, (fl, _t, _l) in enumerate(rep.chunks) if fl & W.REPLY_FLAG_DONE]
assert dones == [len(rep.chunks) - 1], f"failed part: DONE on chunks {dones}"
assert w.read(0, MiB) == data[:MiB], "the READ after a failed part: wrong data"
w.disconnect()

# A client leaves after the first chunk, while the other three parts are held.
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
w = wire()  # the server goes on
assert w.read(2 * MiB, MiB) == data[2 * MiB:3 * MiB], "READ after a client left: wrong data"
w.disconnect()
PY
  fail "failed part, client gone mid-READ"
dg_stop
pass "large READs in 256 KiB chunks; small, unaligned, DF, simple READs whole;" \
  "a failed part; a client gone mid-READ"
