#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# When the listener can no longer wait for connections (poll(2) fails: here RLIMIT_NOFILE
# is lowered below the number of listeners with prlimit), the server does not exit 0 as if
# asked to stop (nor log "signal 0 (Unknown signal 0)"): one line names the failure, the
# connection in progress is served to its end or closed as at any stop, and the exit status
# is 1.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/a.img"
# The server exits while its open-files limit still leaves it no descriptor (an idle
# connection is closed at once when it stops), so LeakSanitizer, which must open
# /proc/self/task at exit, cannot run: it is turned off for this server alone.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
dg_start "$T/a.img"
mkfifo "$T/go"
$PY - "$DG_SOCK" "$T/go" >"$T/client.out" 2>&1 <<'PY' &
import sys
import nbd
h = nbd.NBD()
h.connect_unix(sys.argv[1])
h.pwrite(b"x" * 512, 0)
print("connected", flush=True)
open(sys.argv[2]).read()  # until the test says go
h.shutdown()
print("done", flush=True)
PY
client=$!
for i in $(seq 1 100); do grep -q connected "$T/client.out" && break; sleep 0.05; done
grep -q connected "$T/client.out" || fail "the client did not connect"
hard=$(prlimit --pid "$DG_PID" --nofile --output HARD --noheadings | tr -d ' ')
soft=$(prlimit --pid "$DG_PID" --nofile --output SOFT --noheadings | tr -d ' ')
prlimit --pid "$DG_PID" --nofile=2:"$hard" # 2 listeners + the signalfd: poll says EINVAL
for i in $(seq 1 100); do grep -q "cannot wait for connections" "$DG_LOG" && break; sleep 0.05; done
prlimit --pid "$DG_PID" --nofile="$soft":"$hard" 2>/dev/null || true # it may be gone already
grep -qF "cannot wait for connections (poll: Invalid argument): finishing in-flight requests, then exiting" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "no line naming the failure"; }
! grep -q "Unknown signal" "$DG_LOG" || { cat "$DG_LOG" >&2; fail "logged a signal 0"; }
echo go >"$T/go"
wait "$client" || { cat "$T/client.out" >&2; fail "the client's connection was not served to its end"; }
rc=0
wait "$DG_PID" || rc=$?
assert_eq "$rc" 1 "exit status after the listener failed"
[ ! -e "$DG_SOCK" ] || fail "the socket file was left behind"
pass "a listener failure is one line and exit status 1"
