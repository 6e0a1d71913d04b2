#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGUSR2 with --pid-file: once the old server has exited, the pid file names the new one,
# however long the new one takes to start. open_hook.c ($1) makes the new server's open of
# its image wait 1.5 s; the old one has no client to drain, so it would exit at once.
. "$SRCDIR/tests/lib.sh"
hook=${1:?usage: restart_pid_file.sh OPEN_HOOK_MODULE}
dg_allow_preload
truncate -s 1M "$T/slow-start.img"
DG_OPEN_DELAY_SUFFIX=slow-start.img DG_OPEN_DELAY_MS=1500 LD_PRELOAD=$hook \
  dg_start "$T/slow-start.img"
pidf=$T/dg.$BASHPID.$DG_N.pid
old=$DG_PID
DG_CLEANUP_EXTRA='p=$(cat "$pidf" 2>/dev/null) && [ "$p" != "$old" ] && kill -9 "$p"'
assert_eq "$(cat "$pidf")" "$old" "the pid file before SIGUSR2"
kill -USR2 "$old"
rc=0
wait "$old" || rc=$?
assert_eq "$rc" 0 "the old server's exit status"
new=$(cat "$pidf" 2>/dev/null || true)
[ -n "$new" ] && [ "$new" != "$old" ] && kill -0 "$new" 2>/dev/null ||
  { cat "$DG_LOG" >&2; fail "the pid file holds '$new' when the old server has gone"; }
kill -TERM "$new"
for i in $(seq 1 100); do kill -0 "$new" 2>/dev/null || break; sleep 0.1; done
kill -0 "$new" 2>/dev/null && fail "the new server did not stop"
pass "SIGUSR2: the pid file names the new server once the old one has exited"
