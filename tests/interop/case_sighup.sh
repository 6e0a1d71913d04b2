#!/usr/bin/env bash
# SIGHUP (a closed terminal or ssh session) shuts the server down as SIGTERM does, as nbdkit
# does: it used to kill the server at once (exit 129), leaving the socket file and the pid
# file behind and requests in flight unanswered. Now: exit 0, both files removed, one log
# line naming the signal; data written before a FLUSH is there.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 4M "$T/a.img"
mkrandom "$T/data" 65536
dg_start "$T/a.img"
$PY - "$DG_UNIX" "$T/data" <<'PY' || fail "the write and FLUSH before SIGHUP"
import sys
import nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
h.pwrite(open(sys.argv[2], "rb").read(), 1048576)
h.flush()
h.shutdown()
PY
kill -HUP "$DG_PID"
rc=0
wait "$DG_PID" || rc=$?
assert_eq "$rc" 0 "exit status after SIGHUP"
[ ! -e "$DG_SOCK" ] || fail "the socket file is left behind after SIGHUP"
[ -z "$(ls "$T"/dg.*.pid 2>/dev/null)" ] || fail "the pid file is left behind after SIGHUP"
grep -q "signal 1 (Hangup): finishing in-flight requests" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "no log line names SIGHUP"; }
cmp <(dd if="$T/a.img" bs=64K skip=16 count=1 status=none) "$T/data" ||
  fail "the flushed write is not in the file"
pass "SIGHUP shuts down cleanly"
