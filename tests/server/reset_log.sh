#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A client in transmission that resets its TCP connection (SO_LINGER 0, so close sends an
# RST) is a routine end (fio, nbdcopy after an error): without --verbose it leaves no line
# in the operator's log; with --verbose it is logged once as "peer closed the connection
# without NBD_CMD_DISC", on both engines. Every such end gets its line, on the event loops
# as on the thread path.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

LINE="peer closed the connection without NBD_CMD_DISC"
reset_client() { # PORT: negotiates, then closes with an RST
  PYTHONPATH=$SRCDIR/tests/lib $PY - "$1" <<'PY'
import socket, struct, sys
from nbdproto import *
c = Raw.haggling(tcp=("127.0.0.1", int(sys.argv[1])))
c.export_name("disk", True)
c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
c.s.close()  # RST
PY
}

sockets_of() { # PID: how many sockets the process holds open
  local f n=0
  for f in /proc/"$1"/fd/*; do
    case $(readlink "$f" 2>/dev/null) in socket:*) n=$((n + 1)) ;; esac
  done
  echo "$n"
}
sockets_back() { [ "$(sockets_of "$1")" -le "$2" ]; } # PID COUNT

truncate -s 1M "$T/disk.img"
for engine in uring threads; do
  DG_ENGINE=$engine dg_start --export disk --verbose "$T/disk.img"
  reset_client "$DG_PORT" || fail "$engine: the resetting client"
  wait_until 5 grep -q "$LINE" "$DG_LOG" ||
    { cat "$DG_LOG" >&2; fail "$engine: a reset after the handshake was not logged with --verbose"; }
  dg_stop
  n=$(grep -c "$LINE" "$DG_LOG")
  [ "$n" = 1 ] || { cat "$DG_LOG" >&2; fail "$engine: $n lines for one reset"; }

  # Without --verbose: once the server has closed the connection's socket (its sockets are
  # back to the listeners' count) it is past where the line would be logged.
  DG_ENGINE=$engine dg_start --export disk "$T/disk.img"
  base=$(sockets_of "$DG_PID")
  reset_client "$DG_PORT" || fail "$engine: the resetting client (no --verbose)"
  wait_until 5 sockets_back "$DG_PID" "$base" ||
    fail "$engine: the server still holds the reset connection's socket after 5 s"
  dg_stop
  if grep -q "$LINE" "$DG_LOG"; then
    cat "$DG_LOG" >&2; fail "$engine: a client's reset is an info line without --verbose"
  fi
done
pass "a client's reset is logged once with --verbose, not at all without, on both engines"
