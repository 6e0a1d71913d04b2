#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Log lines that count things agree in number with the count ("1 thread" in the start-up
# line, "1 connection is negotiating" with --max-handshakes 1).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/a.img"
for n in 1 2; do
  dg_start --threads "$n" --max-handshakes 1 --handshake-timeout 5 "$T/a.img"
  # the engine is uring, or threads where io_uring is not available
  grep -q "engine [a-z]*, $n thread$([ "$n" -eq 1 ] || echo s)[,]*\$" "$DG_LOG" ||
    { cat "$DG_LOG" >&2; fail "start-up line for --threads $n"; }
  if [ "$n" -eq 1 ]; then
    # Two clients that never negotiate: the second arrival closes the first. The first has
    # its greeting before the second connects, and the second stays until the first is shut.
    $PY - "$DG_PORT" <<'PYEOF' || fail "the idle clients"
import socket, sys
port = int(sys.argv[1])
a = socket.create_connection(("127.0.0.1", port), timeout=10)
assert len(a.recv(8)) > 0, "no greeting for the first client"
b = socket.create_connection(("127.0.0.1", port), timeout=10)
while a.recv(4096):  # until the server closes it (EOF), or the 10 s timeout raises
    pass
a.close()
b.close()
PYEOF
    wait_until 5 grep -q ': 1 connection is negotiating; closing the oldest' "$DG_LOG" ||
      { cat "$DG_LOG" >&2; fail "the eviction line with --max-handshakes 1"; }
  fi
  dg_stop
done
pass "counts in log lines: 1 thread, 2 threads, 1 connection is negotiating"
