#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C11: degenerate requests, sent with the raw client (simple replies, so every reply is
# exactly 16 bytes + a READ payload on success and the stream must stay in step):
#  - READ, WRITE, TRIM, WRITE_ZEROES with length 0 -> success, connection kept;
#  - FLUSH with non-zero offset or length -> EINVAL (FLUSH 0/0 -> success);
#  - unknown commands (0x7F, 0xFF, even with a length field) -> EINVAL, nothing consumed;
#  - a known command with an unknown flag bit (or NO_HOLE on READ) -> EINVAL;
#  - a WRITE with an unknown flag bit -> EINVAL, its payload consumed and NOT written (the
#    payload is made of READ request headers: a server that parsed it would send extra replies);
#  - a WRITE whose payload is too large to drop -> the connection closes with no reply, and the
#    log does not claim one.
# Every reply carries the request's cookie; after every request a READ returns the file's
# bytes and no stray bytes are pending; the file is unchanged at the end.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

mkrandom "$T/disk.img" 1048576
cp "$T/disk.img" "$T/orig.img"
dg_start "$T/disk.img"

PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" "$T/orig.img" <<'PY'
import struct, sys
from nbdproto import *
sock, data = sys.argv[1], open(sys.argv[2], "rb").read()
c = Raw.negotiated(unix=sock)
cookie = 0xFFFFFFFF00000000   # 64-bit cookies: the high half must be echoed too

def check(what, cmd, want, offset=0, length=0, flags=0, payload=b""):
    global cookie
    cookie += 1
    err, _ = c.request(cmd, cookie, offset, length, flags, payload)  # asserts the cookie
    assert err == want, f"{what}: NBD error {err}, expected {want}"
    # still in sync: nothing stray pending, and a READ returns the right bytes
    extra = c.pending(0.1)
    assert extra == b"", f"after {what}: {len(extra)} unexpected bytes from the server"
    assert c.read(8000, 500) == data[8000:8500], f"after {what}: READ returned wrong data"

check("READ length 0", CMD_READ, 0, 4096, 0)
check("WRITE length 0", CMD_WRITE, 0, 4096, 0)
check("TRIM length 0", CMD_TRIM, 0, 4096, 0)
check("WRITE_ZEROES length 0", CMD_WRITE_ZEROES, 0, 4096, 0)
check("FLUSH offset 0 length 0", CMD_FLUSH, 0)
check("FLUSH offset 4096", CMD_FLUSH, EINVAL, 4096, 0)
check("FLUSH length 512", CMD_FLUSH, EINVAL, 0, 512)
check("unknown command 0x7F", 0x7F, EINVAL, 0, 0)
check("unknown command 0x7F with length 4096", 0x7F, EINVAL, 0, 4096)
check("unknown command 0xFF with length 512", 0xFF, EINVAL, 512, 512)
check("READ with unknown flag 1<<10", CMD_READ, EINVAL, 0, 512, 1 << 10)
check("READ with NO_HOLE", CMD_READ, EINVAL, 0, 512, CMD_FLAG_NO_HOLE)
check("TRIM with unknown flag 1<<10", CMD_TRIM, EINVAL, 0, 4096, 1 << 10)
check("FLUSH with unknown flag 1<<12", CMD_FLUSH, EINVAL, 0, 0, 1 << 12)
check("WRITE_ZEROES with unknown flag 1<<15", CMD_WRITE_ZEROES, EINVAL, 0, 4096, 1 << 15)
# a WRITE with an unknown flag: its 448-byte payload is 16 READ headers (cookie 0xBAD)
trap = struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_READ, 0xBAD, 0, 512) * 16
check("WRITE with unknown flag 1<<10", CMD_WRITE, EINVAL, 8192, len(trap), 1 << 10, trap)
check("WRITE with unknown flag 1<<15", CMD_WRITE, EINVAL, 8192, len(trap), 1 << 15, trap)
assert c.read(0, 65536) == data[:65536], "the rejected WRITE changed the data"
c.close()
print("c11 degenerate request checks passed")
PY

dg_stop

# A WRITE whose payload is too large to read and drop (4 GiB - 1): the connection is closed
# without a reply (spec rule 25), and the log says so once, naming it, on both transmission
# paths (event loops, and the threads engine's reader), and never claims a reply ("refused
# with NBD error 22") that was not sent.
for engine in uring threads; do
  DG_ENGINE=$engine dg_start "$T/disk.img"
  PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" <<'PY' || fail "oversized WRITE ($engine)"
import struct, sys
from nbdproto import *
c = Raw.negotiated(unix=sys.argv[1])
c.s.sendall(struct.pack(">IHHQQI", REQUEST_MAGIC, 0, CMD_WRITE, 0x0B16, 0, 0xFFFFFFFF))
c.s.settimeout(10)
got = c.s.recv(64)
assert got == b"", f"oversized WRITE: {len(got)} bytes came back instead of the close"
PY
  wait_until 5 grep -q "oversized payload refused (WRITE with 4294967295 bytes); closing the connection" "$DG_LOG" ||
    { cat "$DG_LOG" >&2; fail "no log line naming the oversized WRITE ($engine)"; }
  assert_eq "$(grep -c "oversized payload" "$DG_LOG")" 1 "log lines about the oversized WRITE ($engine)"
  if grep "length 4294967295" "$DG_LOG" | grep "refused with NBD error" >/dev/null; then
    cat "$DG_LOG" >&2
    fail "the log claims an error reply to the oversized WRITE, which got none ($engine)"
  fi
  dg_stop
done
cmp -s "$T/disk.img" "$T/orig.img" || fail "the file changed (zero-length or rejected requests wrote)"
pass "C11 degenerate requests"
