#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A client that sends requests the server refuses (an unknown command, a READ past the end)
# as fast as it reads the replies must not flood the log (one line each would write 55 MB a
# second, and a slow reader of the log would stall the other clients). The refusals
# of a connection are logged as the backing's failures are: the first 10, then one line per
# 1000 saying so. Every request still gets its NBD_EINVAL reply.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1

truncate -s 1M "$T/a.img"
dg_start "$T/a.img"
N=5000
PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" "$N" <<'PY' || fail "the refused requests"
import sys
from nbdproto import *
sock, n = sys.argv[1], int(sys.argv[2])
c = Raw.negotiated(unix=sock)
for batch in range(n // 500):
    reqs = b"".join(request_header(0x7F if i % 2 else CMD_READ, batch * 500 + i,
                                   offset=1 << 30, length=4096) for i in range(500))
    c.send(reqs)
    for i in range(500):
        error, _ = c.simple_reply()
        assert error == EINVAL, f"reply {batch * 500 + i}: error {error}, expected NBD_EINVAL"
c.send(request_header(CMD_DISC, 0))
c.close()
print(f"{n} refused requests, each answered with NBD_EINVAL")
PY
dg_stop
lines=$(grep -c "refused with NBD error" "$DG_LOG" || true)
assert_eq "$lines" $((10 + N / 1000)) "log lines for $N refused requests"
grep -q "refused with NBD error 22 (further refusals are logged once per 1000)" "$DG_LOG" ||
  fail "the tenth line does not say that later ones are thinned out"
grep -q "refused with NBD error 22 (1000 more refusals)" "$DG_LOG" ||
  fail "no line counts a thousand more refusals"
pass "$N refused requests: $lines log lines, each request answered"
