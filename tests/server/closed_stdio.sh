#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A server started with standard descriptors closed (`2>&-`, a service manager that closes
# them) must not write its log or listener lines into what it opened at those numbers.
# (Were the image to take fd 1 or 2, a flushed WRITE would be overwritten by "peer closed
# the connection...".) The closed ones are /dev/null before anything is opened
# (util/stdio_fds.c), and the image holds exactly what clients wrote, whichever of 0, 1 and
# 2 were closed.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

head -c 4096 /dev/zero | tr '\0' A >"$T/a4k"
{ cat "$T/a4k"; head -c $((1048576 - 4096)) /dev/zero; } >"$T/expected"

for closed in "0 2" "0 1 2" "1 2" "1" "2" "0"; do
  img=$T/img.${closed// /}
  sock=$T/s.${closed// /}.sock
  truncate -s 1M "$img"
  redir=""
  for fd in $closed; do redir+=" $fd>&-"; done
  # The streams left open go to files: what the server prints must land there, not in the image.
  (
    exec >"$T/out.${closed// /}" 2>"$T/err.${closed// /}"
    eval "exec $redir"
    exec "$DISKGATE" serve --engine "${DG_ENGINE:-uring}" --threads 1 --socket "$sock" "$img"
  ) &
  pid=$!
  DG_PIDS+=("$pid")
  wait_until 10 test -S "$sock" || fail "closed $closed: the server did not listen"
  for fd in $closed; do
    assert_eq "$(readlink "/proc/$pid/fd/$fd")" /dev/null "closed $closed: the server's fd $fd"
  done
  uri="nbd+unix:///?socket=$sock"
  $PY - "$uri" "$T/a4k" <<'PY' || fail "closed $closed: the write and FLUSH"
import sys
import nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
h.pwrite(open(sys.argv[2], "rb").read(), 0)
h.flush()
h.shutdown()
# Log lines of every kind: a connection closed without NBD_CMD_DISC, an unknown export.
h = nbd.NBD()
h.connect_uri(sys.argv[1])
del h  # closed without NBD_CMD_DISC
h = nbd.NBD()
try:
    h.connect_uri(sys.argv[1].replace(":///", ":///no-such-export"))
except nbd.Error:
    pass
PY
  kill -TERM "$pid"
  rc=0
  wait "$pid" || rc=$?
  assert_eq "$rc" 0 "closed $closed: exit status after SIGTERM"
  cmp "$img" "$T/expected" ||
    { od -c "$img" | sed -n '255,262p' >&2; fail "closed $closed: the image is not what the client wrote"; }
  case " $closed " in
    *" 1 "*) ;;
    *) grep -q 'listening on' "$T/out.${closed// /}" ||
         fail "closed $closed: no listener line on the open stdout" ;;
  esac
  case " $closed " in
    *" 2 "*) ;;
    *) grep -q 'no-such-export' "$T/err.${closed// /}" ||
         fail "closed $closed: no log line on the open stderr" ;;
  esac
  pass "closed $closed: the image holds what was written; fds at /dev/null"
done
