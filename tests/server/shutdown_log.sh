#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A client still connected when the server stops (SIGTERM) did not close the connection:
# the log must not say "peer closed the connection without NBD_CMD_DISC", on the thread path
# (--engine threads, and TLS) as on the event loops. Each: an idle libnbd client, SIGTERM,
# exit 0, no such line. With --verbose, where the line would be printed (debug).
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/tls/tlslib.sh"

tls_standard
truncate -s 16M "$T/disk.img"
idle_client() { # URI: connects, then waits to be cut off; prints "connected" once connected
  $PY -c '
import sys, time, nbd
h = nbd.NBD()
h.set_uri_allow_local_file(True)
h.connect_uri(sys.argv[1])
print("connected", flush=True)
time.sleep(60)' "$1" >"$T/client.out" 2>&1 &
  client=$!
  wait_until 10 grep -q connected "$T/client.out" || { cat "$T/client.out" >&2; fail "$2: the client did not connect"; }
}
for how in uring threads tls; do
  case $how in
    tls) DG_ENGINE=uring dg_start --verbose --tls require --tls-certificates "$T/srv" "$T/disk.img"
         idle_client "nbds://127.0.0.1:$DG_PORT/?tls-certificates=$T/cli" "$how" ;;
    *) DG_ENGINE=$how dg_start --verbose "$T/disk.img"
       idle_client "$DG_UNIX" "$how" ;;
  esac
  dg_stop
  kill "$client" 2>/dev/null; wait "$client" 2>/dev/null || true
  if grep -q "peer closed" "$DG_LOG"; then
    cat "$DG_LOG" >&2; fail "$how: an idle client cut off by the shutdown was logged as the peer closing"
  fi
done
pass "shutdown with idle clients connected: no 'peer closed' line (uring, threads, TLS)"
