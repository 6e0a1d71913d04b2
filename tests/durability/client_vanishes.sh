#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C01: client vanishes (docs/cases.md), at every point of a session: during option
# haggling, inside request headers, inside WRITE payloads, with READs and WRITEs in flight, with
# FIN or RST, and no NBD_CMD_DISC (tests/durability/vanishing_clients.py). DG_C01_CYCLES cycles
# (default 1000: a few seconds). Required: the server stays up, a concurrent
# well-behaved connection never notices, the server's fds and threads return to their count
# before the cycles, the log says the peers closed, and at SIGTERM the server exits 0 -- under
# the ASan build that includes LeakSanitizer's check of the whole run.
# DG_VALGRIND=1 runs the server under valgrind (memcheck, full leak check, fd tracking; the
# threads engine) instead: slow, run by hand (docs/durability.md).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
CYCLES=${DG_C01_CYCLES:-1000}

if [ -n "${DG_VALGRIND:-}" ]; then
  command -v valgrind >/dev/null || fail "valgrind not found"
  real=$DISKGATE
  cat >"$T/vg.sh" <<EOF
#!/bin/sh
exec valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible \\
  --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 --track-fds=yes \\
  --log-file=$T/valgrind.log "$real" "\$@"
EOF
  chmod +x "$T/vg.sh"
  DISKGATE=$T/vg.sh
  export DG_ENGINE=threads
fi

truncate -s 8M "$T/disk.img"
dg_start "$T/disk.img"
if [ -n "${DG_VALGRIND:-}" ]; then sleep 2; fi
$PY "$HERE/vanishing_clients.py" "$DG_SOCK" "$DG_PID" "$CYCLES" || { tail -20 "$DG_LOG" >&2; fail "C01"; }
kill -0 "$DG_PID" || fail "the server died"
grep -q "peer closed the connection" "$DG_LOG" || { tail "$DG_LOG" >&2; fail "the log does not say the peers closed"; }
dg_stop
if [ -n "${DG_VALGRIND:-}" ]; then
  sed -n '/HEAP SUMMARY/,$p' "$T/valgrind.log"
  awk '/FILE DESCRIPTORS/ { n = 4 } n > 0 { print; n-- }' "$T/valgrind.log"
  grep -q "ERROR SUMMARY: 0 errors" "$T/valgrind.log" || fail "valgrind found errors"
fi
pass "C01: $CYCLES vanishing clients; no leaked fds or threads; clean exit"
