#!/usr/bin/env bash
# Log lines that count things agree in number with the count (a new user found "1 threads"
# in the start-up line and "1 connections are negotiating" with --max-handshakes 1).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/a.img"
for n in 1 2; do
  dg_start --threads "$n" --max-handshakes 1 --handshake-timeout 5 "$T/a.img"
  grep -q "engine ${DG_ENGINE:-uring}, $n thread$([ "$n" -eq 1 ] || echo s)[,]*\$" "$DG_LOG" ||
    { cat "$DG_LOG" >&2; fail "start-up line for --threads $n"; }
  if [ "$n" -eq 1 ]; then
    # Two clients that never negotiate: the second arrival closes the first.
    $PY - "$DG_PORT" <<'PYEOF' || fail "the idle clients"
import socket, sys, time
port = int(sys.argv[1])
a = socket.create_connection(("127.0.0.1", port))
time.sleep(0.3)
b = socket.create_connection(("127.0.0.1", port))
time.sleep(0.5)
a.close()
b.close()
PYEOF
    grep -q ': 1 connection is negotiating; closing the oldest' "$DG_LOG" ||
      { cat "$DG_LOG" >&2; fail "the eviction line with --max-handshakes 1"; }
  fi
  dg_stop
done
pass "counts in log lines: 1 thread, 2 threads, 1 connection is negotiating"
