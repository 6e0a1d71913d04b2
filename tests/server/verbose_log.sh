#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --verbose logs each connection's start and its end ("connection closed"), so a log tells a
# client still connected from one that has gone. Unix-socket connections are numbered, not
# named by their (reused) fd. The end line counts the connection's requests by kind
# ("reads=3 writes=2 flushes=1 fua=1 trims=4 zeroes=5 other=1"), so an operator sees whether
# a client ever sends FLUSH (docs/apple.md); both engines count alike.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

truncate -s 1M "$T/a.img"
dg_start --verbose "$T/a.img"
for uri in "$DG_UNIX" "$DG_TCP" "$DG_UNIX"; do
  assert_eq "$(nbdinfo --size "$uri")" 1048576 "size over $uri"
done
dg_stop
assert_eq "$(grep -c ': transmission on export' "$DG_LOG")" 3 "connection start lines"
assert_eq "$(grep -c ': connection closed: reads=[0-9]* ' "$DG_LOG")" 3 "connection end lines"
# Two Unix-socket clients one after the other have different names (not the fd, which the
# second reuses).
names=$(grep ': transmission on export' "$DG_LOG" | grep -o "unix:[^ ]*#[0-9]*" | sort -u | wc -l)
assert_eq "$names" 2 "distinct names of the two Unix-socket connections"

# A client whose requests of each kind are counted differently: each count names its kind.
for engine in uring threads; do
  DG_ENGINE=$engine dg_start --verbose "$T/a.img"
  PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" <<'PY' || fail "$engine: the counted client"
import sys
from nbdproto import *
c = Raw.negotiated(unix=sys.argv[1])
cookie = 0
def req(cmd, offset=0, length=4096, flags=0, payload=b""):
    global cookie
    cookie += 1
    err, _ = c.request(cmd, cookie, offset, length, flags, payload)
    return err
for _ in range(3):
    assert req(CMD_READ) == 0, "READ failed"
assert req(CMD_WRITE, payload=bytes(4096)) == 0, "WRITE failed"
assert req(CMD_WRITE, flags=CMD_FLAG_FUA, payload=bytes(4096)) == 0, "FUA WRITE failed"
assert req(CMD_FLUSH, length=0) == 0, "FLUSH failed"
for _ in range(4):
    assert req(CMD_TRIM) == 0, "TRIM failed"
for _ in range(5):
    assert req(CMD_WRITE_ZEROES) == 0, "WRITE_ZEROES failed"
req(CMD_CACHE)  # other: answered or refused, counted either way
c.close()
PY
  dg_stop
  want="connection closed: reads=3 writes=2 flushes=1 fua=1 trims=4 zeroes=5 other=1"
  grep -q ": $want\$" "$DG_LOG" ||
    { grep 'connection closed' "$DG_LOG" >&2; fail "$engine: no end line '$want'"; }
done
pass "--verbose logs each connection's start and end, with its requests counted by kind"
