#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every option the server refuses gets its error reply and one log line naming the option,
# the error reply and why (here: a malformed NBD_OPT_GO, an unknown option, NBD_OPT_LIST with
# data, a 64 KiB option, STARTTLS with TLS off and a metadata context before structured
# replies). A client that repeats a refused option
# is thinned out as refused requests are: the first 10 lines, then one per 1000. A client that
# closes in the middle of an option (its header or its data) gets one line; one that closes
# between options (a port probe) none at the default level, and the server's own close
# (its stop, the handshake deadline) is not logged as the peer's. A bad request magic is a
# warning under either engine.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1

truncate -s 1M "$T/a.img"
dg_start "$T/a.img"
PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" <<'PY' || fail "the refused options"
import struct, sys
from nbdproto import *
c = Raw.haggling(unix=sys.argv[1])
cases = [
    (OPT_GO, b"", REP_ERR_INVALID),
    (OPT_GO, struct.pack(">I", 3) + b"a\0b" + struct.pack(">H", 0), REP_ERR_INVALID),
    (99, b"abc", REP_ERR_UNSUP),
    (OPT_LIST, b"x", REP_ERR_INVALID),
    (99, b"x" * 65536, REP_ERR_TOO_BIG),
    (OPT_STARTTLS, b"", REP_ERR_POLICY),
    (OPT_SET_META_CONTEXT, meta_payload("", ["base:allocation"]), REP_ERR_INVALID),
]
for opt, data, want in cases:
    replies = c.option_replies(opt, data)
    assert replies[-1][0] == want, f"option {opt}: reply {replies[-1][0]:#x}, expected {want:#x}"
size, _ = c.go("")           # the connection is still usable
assert size == 1048576, size
c.close()
print("each refused option got its error reply")
PY
want_line() { # fixed text of one expected line
  wait_until 5 grep -qF -- "$1" "$DG_LOG" || { cat "$DG_LOG" >&2; fail "no log line: $1"; }
}
want_line "NBD_OPT_GO (7) refused with NBD_REP_ERR_INVALID: malformed request"
want_line "an unknown option (99) refused with NBD_REP_ERR_UNSUP: option not supported"
want_line "NBD_OPT_LIST (3) refused with NBD_REP_ERR_INVALID: NBD_OPT_LIST takes no data"
want_line "an unknown option (99) refused with NBD_REP_ERR_TOO_BIG: option data too long"
want_line "NBD_OPT_STARTTLS (5) refused with NBD_REP_ERR_POLICY: TLS is not configured"
want_line "NBD_OPT_SET_META_CONTEXT (10) refused with NBD_REP_ERR_INVALID: negotiate structured replies or extended headers first"
assert_eq "$(grep -c "refused with NBD_REP_ERR" "$DG_LOG")" 7 "lines for 7 refused options"

# Cut short: half an option header; a header whose data never comes; then a close between
# options, which must add no line.
PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" <<'PY' || fail "the connections cut short"
import sys
from nbdproto import *
sock = sys.argv[1]
c = Raw.haggling(unix=sock); c.send(option_header(OPT_GO, 20)[:7]); c.s.close()  # not c.close(): no NBD_CMD_DISC
c = Raw.haggling(unix=sock); c.send(option_header(OPT_GO, 100) + b"\0" * 10); c.s.close()
c = Raw.haggling(unix=sock); c.option_replies(OPT_LIST); c.s.close()
print("three connections closed by the client")
PY
want_line "peer closed the connection in the middle of an option header; closing"
want_line "peer closed the connection in the middle of the data of NBD_OPT_GO; closing"
sleep 0.3   # the third connection's end, which must not log at this level
assert_eq "$(grep -c "peer closed" "$DG_LOG")" 2 "lines for connections closed by the client"

# A flood of refused options on one connection: 10 lines, then one per 1000.
N=5000
PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" "$N" <<'PY' || fail "the flood of refused options"
import sys
from nbdproto import *
n = int(sys.argv[2])
c = Raw.haggling(unix=sys.argv[1])
for batch in range(n // 500):
    c.send(b"".join(option_header(98, 0) for _ in range(500)))
    for i in range(500):
        _, rtype, _ = c.recv_option_reply(98)
        assert rtype == REP_ERR_UNSUP, f"reply {batch * 500 + i}: {rtype:#x}"
c.send_option(OPT_ABORT)
c.s.close()
print(f"{n} refused options, each answered")
PY
# A bad request magic in transmission closes the connection with a warning under either
# engine (the event loops logged it as info, the threads engine as a warning).
PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" <<'PY' || fail "the bad request magic"
import struct, sys
from nbdproto import *
c = Raw.negotiated(unix=sys.argv[1])
c.send(struct.pack(">IHHQQI", 0x12345678, 0, CMD_READ, 1, 0, 512))
assert c.closed_by_server(), "the server kept a connection with a bad request magic"
print("a bad request magic closes the connection")
PY
want_line "warning: unix:$DG_SOCK#"
grep -E "warning: .*: bad request magic; closing the connection" "$DG_LOG" >/dev/null ||
  { cat "$DG_LOG" >&2; fail "the bad request magic is not a warning"; }
# The server's own close is not the peer's: a client stalled in the middle of an option
# header while the server stops gets no "peer closed" line (the drain's shutdown is not the
# peer's EOF).
PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" <<'PY' &
import sys, time
from nbdproto import *
c = Raw.haggling(unix=sys.argv[1])
c.send(option_header(OPT_GO, 20)[:1])
time.sleep(3)
PY
stalled=$!
sleep 0.5
dg_stop
wait "$stalled" || true
assert_eq "$(grep -c "in the middle of" "$DG_LOG")" 2 "cut-short lines after a stop with a stalled option"
assert_eq "$(grep -c "(98) refused with NBD_REP_ERR_UNSUP" "$DG_LOG")" $((10 + N / 1000)) \
  "log lines for $N refused options"
grep -qF "(98) refused with NBD_REP_ERR_UNSUP: option not supported (1000 more refusals)" "$DG_LOG" ||
  fail "no line counts a thousand more refusals"
# Nor when the handshake deadline closes a connection stalled in an option header: one line,
# the deadline's.
truncate -s 1M "$T/b.img"
dg_start --handshake-timeout 1 "$T/b.img"
PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" <<'PY' || fail "the stalled option header"
import sys
from nbdproto import *
c = Raw.haggling(unix=sys.argv[1])
c.send(option_header(OPT_GO, 20)[:1])
assert c.closed_by_server(5.0), "the deadline did not close the stalled handshake"
print("the deadline closed a handshake stalled in an option header")
PY
want_line "handshake not finished within 1 s; closing"
dg_stop
assert_eq "$(grep -c "peer closed" "$DG_LOG")" 0 "peer-closed lines for a handshake the deadline closed"
pass "refused options: one line each, thinned out in a flood; cut-short options logged"
