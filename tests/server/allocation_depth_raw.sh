#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# qemu:allocation-depth (QEMU's docs/interop/nbd.txt) on a raw file, against qemu-nbd -A as
# the oracle on the same file: nbdinfo --map of both contexts prints the same lines from
# both servers, and both list the two contexts. Then the wire, with the raw client: SET of
# both contexts (a query repeated) replies each once, ids 1 and 2; BLOCK_STATUS answers one
# chunk per context, the first without DONE, over consecutive extents that cover the
# request, depth 1 everywhere (one image), flags matching base:allocation's holes; in
# structured and in extended replies; SET of the depth context alone answers it alone.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1

truncate -s 8M "$T/disk.img"
for off in 1048576 3000000 7340032; do
  head -c 70000 /dev/urandom | dd of="$T/disk.img" bs=1 seek="$off" conv=notrunc status=none
done
qemu-nbd -t -A -f raw -r -k "$T/q.sock" "$T/disk.img" &
DG_PIDS+=($!)
wait_until 10 test -S "$T/q.sock" || fail "qemu-nbd did not start"
dg_start --read-only "$T/disk.img"
for ctx in qemu:allocation-depth base:allocation; do
  want=$(nbdinfo --map="$ctx" "nbd+unix:///?socket=$T/q.sock") || fail "nbdinfo on qemu-nbd ($ctx)"
  got=$(nbdinfo --map="$ctx" "$DG_UNIX") || fail "nbdinfo on diskgate ($ctx)"
  [ -n "$want" ] || fail "qemu-nbd printed no map for $ctx"
  assert_eq "$got" "$want" "nbdinfo --map=$ctx, diskgate against qemu-nbd -A"
done
contexts=$(nbdinfo --json "$DG_UNIX" | $PY -c 'import json,sys; print(" ".join(json.load(sys.stdin)["exports"][0]["contexts"]))')
assert_eq "$contexts" "base:allocation qemu:allocation-depth" "contexts listed"

PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" "$T/disk.img" <<'PY'
import os, struct, sys
from nbdproto import *
sock, path = sys.argv[1], sys.argv[2]
size = os.path.getsize(path)

def holes_of(path):
    """[(start, end)] of the file's holes, from SEEK_HOLE/SEEK_DATA."""
    out, off, fd = [], 0, os.open(path, os.O_RDONLY)
    while off < size:
        try:
            data = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            data = size
        if data > off:
            out.append((off, data))
        if data >= size:
            break
        off = os.lseek(fd, data, os.SEEK_HOLE)
    os.close(fd)
    return out
holes = holes_of(path)
assert holes, "the test file has no holes: the flags prove nothing"

def in_hole(a, b):
    return any(h0 <= a and b <= h1 for h0, h1 in holes)

def connect(ext, queries):
    c = Raw.haggling(unix=sock)
    if ext:
        c.extended_headers()
    else:
        r = c.option_replies(OPT_STRUCTURED_REPLY)
        assert r[-1][0] == REP_ACK, "structured replies refused"
    r = c.option_replies(OPT_SET_META_CONTEXT, meta_payload("", queries))
    ctx = {}
    for rtype, data in r[:-1]:
        assert rtype == REP_META_CONTEXT, f"SET reply type {rtype:#x}"
        cid, = struct.unpack(">I", data[:4])
        name = data[4:].decode()
        assert name not in ctx, f"{name} replied twice"
        ctx[name] = cid
    assert r[-1][0] == REP_ACK, "SET not acknowledged"
    c.go("")
    return c, ctx

def chunks(c, ext):
    """The chunks of one reply: [(flags, type, payload)] up to DONE."""
    out = []
    while True:
        if ext:
            magic, flags, rtype, cookie, off, length = struct.unpack(">IHHQQQ", c.recv_exact(32))
            assert magic == EXT_REPLY_MAGIC, hex(magic)
        else:
            magic, flags, rtype, cookie, length = struct.unpack(">IHHQI", c.recv_exact(20))
            assert magic == STRUCTURED_REPLY_MAGIC, hex(magic)
        assert cookie == 77, f"cookie {cookie}"
        out.append((flags, rtype, c.recv_exact(length)))
        if flags & 1:
            return out

def extents_of(rtype, body, ext):
    cid, = struct.unpack(">I", body[:4])
    if ext:
        assert rtype == 6, f"chunk type {rtype}"
        count, = struct.unpack(">I", body[4:8])
        d = [struct.unpack(">QQ", body[8 + 16 * i:24 + 16 * i]) for i in range(count)]
    else:
        assert rtype == 5, f"chunk type {rtype}"
        d = [struct.unpack(">II", body[4 + 8 * i:12 + 8 * i]) for i in range((len(body) - 4) // 8)]
    return cid, d

for ext in (False, True):
    c, ctx = connect(ext, ["qemu:allocation-depth", "base:allocation", "qemu:allocation-depth",
                           "qemu:nonesuch"])
    assert ctx == {"base:allocation": 1, "qemu:allocation-depth": 2}, ctx
    for off, length in ((0, size), (1000, 3000000), (7340032, 4096)):
        c.send_request(CMD_BLOCK_STATUS, 77, off, length)
        got = chunks(c, ext)
        assert len(got) == 2, f"{len(got)} chunks for two contexts"
        assert not (got[0][0] & 1), "the first chunk carries DONE"
        seen = {}
        for flags, rtype, body in got:
            cid, d = extents_of(rtype, body, ext)
            pos = off
            for length_i, value in d:
                assert length_i > 0
                if cid == 2:
                    assert value == 1, f"depth {value} at {pos} (one image: 1)"
                else:
                    hole = value & 1
                    assert bool(hole) == in_hole(pos, min(pos + length_i, off + length)), \
                        f"hole flag {value} at {pos}+{length_i}"
                pos += length_i
            assert pos >= off + length or len(d) > 0, "no extents"
            seen[cid] = pos
        assert set(seen) == {1, 2}, seen
    c.close()
    c, ctx = connect(ext, ["qemu:allocation-depth"])
    assert ctx == {"qemu:allocation-depth": 2}, ctx
    c.send_request(CMD_BLOCK_STATUS, 77, 0, size)
    got = chunks(c, ext)
    assert len(got) == 1, f"{len(got)} chunks for one context"
    assert extents_of(got[0][1], got[0][2], ext)[0] == 2
    c.close()
print("wire ok")
PY
pass "qemu:allocation-depth matches qemu-nbd -A on a raw file, one chunk per context"
