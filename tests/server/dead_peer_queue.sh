#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A client queues many READs and goes away without reading a reply: the server stops
# starting its requests once a reply cannot be sent, on the event loops and with
# `--engine threads` (also the path of TLS connections), so a dead peer's queue never keeps
# the cores busy or its descriptors and threads held. Here: 3000 READs of 32 MiB
# (84 KB of request headers), both engines; the connection must be closed within 10 s of
# the client's close, and with the threads engine (pread) the server must have read less
# than 1 GiB (`rchar`) for it, far less than the 3000 x 32 MiB queued.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 64M "$T/a.img"
for engine in threads uring; do
  dg_start --verbose --engine "$engine" "$T/a.img"
  rchar0=$(awk '/^rchar:/ {print $2}' "/proc/$DG_PID/io")
  PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" <<'PY' || fail "the client ($engine)"
import sys
from nbdproto import *
c = Raw.negotiated(unix=sys.argv[1])
c.send(b"".join(request_header(CMD_READ, i + 1, 0, 32 << 20, 0) for i in range(3000)))
c.s.close()
PY
  t0=$(date +%s%N)
  wait_until 10 grep -q ': connection closed: reads=' "$DG_LOG" ||
    { tail -5 "$DG_LOG" >&2; fail "$engine: the connection was still open 10 s after its client left"; }
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  read_mib=$(( ($(awk '/^rchar:/ {print $2}' "/proc/$DG_PID/io") - rchar0) >> 20 ))
  if [ "$engine" = threads ] && [ "$read_mib" -ge 1024 ]; then
    fail "$engine: the server read $read_mib MiB for a client that had gone"
  fi
  dg_stop
  echo "$engine: connection closed ${ms} ms after the client left; $read_mib MiB read"
done
pass "a gone client's queued requests are not started (threads and uring engines)"
