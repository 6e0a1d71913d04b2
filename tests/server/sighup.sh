#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGHUP (a closed terminal or ssh session) shuts the server down as SIGTERM does, as nbdkit
# does, never killing it at once (exit 129, the socket and pid files left behind, requests
# in flight unanswered): exit 0, both files removed, one log
# line naming the signal; data written before a FLUSH is there. Under nohup it stays ignored.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 4M "$T/a.img"
mkrandom "$T/data" 65536
# The suite itself may run with SIGHUP ignored (under nohup, as a background job of a
# closed terminal): the server would inherit that and rightly ignore SIGHUP (the second
# half below). Start this one with SIGHUP at its default.
printf '#!/bin/sh\nexec env --default-signal=HUP "$DG_HUP_REAL" "$@"\n' >"$T/dg-hup"
chmod +x "$T/dg-hup"
DG_HUP_REAL=$DISKGATE DISKGATE=$T/dg-hup dg_start "$T/a.img"
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

# Under nohup (SIGHUP ignored when the server starts) a SIGHUP is still ignored: a blocked
# signal is delivered even when ignored, so the server must leave it out of its signalfd.
sh -c 'trap "" HUP; exec "$0" serve --socket "$1" "$2"' "$DISKGATE" "$T/n.sock" "$T/a.img" \
  >"$T/n.out" 2>"$T/n.log" &
pid=$!
DG_PIDS+=("$pid")
for _ in $(seq 1 100); do [ -S "$T/n.sock" ] && break; sleep 0.05; done
kill -HUP "$pid"
sleep 0.3
kill -0 "$pid" 2>/dev/null || { cat "$T/n.log" >&2; fail "a SIGHUP ignored at start stopped the server"; }
assert_eq "$(nbdinfo --size "nbd+unix:///?socket=$T/n.sock")" 4194304 "size after the ignored SIGHUP"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
assert_eq "$rc" 0 "exit status after SIGTERM"
pass "SIGHUP shuts down cleanly, and stays ignored under nohup"
