#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A client in transmission that resets its TCP connection (SO_LINGER 0, so close sends an
# RST) is logged once as "peer closed the connection without NBD_CMD_DISC" on both engines.
# Every such end gets its line, on the event loops as on the thread path.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

truncate -s 1M "$T/disk.img"
for engine in uring threads; do
  DG_ENGINE=$engine dg_start --export disk "$T/disk.img"
  PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_PORT" <<'PY' || fail "$engine: the resetting client"
import socket, struct, sys
from nbdproto import *
c = Raw.haggling(tcp=("127.0.0.1", int(sys.argv[1])))
c.export_name("disk", True)
c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
c.s.close()  # RST
PY
  wait_until 5 grep -q "peer closed the connection without NBD_CMD_DISC" "$DG_LOG" ||
    { cat "$DG_LOG" >&2; fail "$engine: a reset after the handshake was not logged"; }
  dg_stop
  n=$(grep -c "peer closed the connection without NBD_CMD_DISC" "$DG_LOG")
  [ "$n" = 1 ] || { cat "$DG_LOG" >&2; fail "$engine: $n lines for one reset"; }
done
pass "a client's reset is logged once on both engines"
