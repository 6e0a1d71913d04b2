#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A SIGUSR2 restart (reexec.h) of a server with --control and --metrics, not started by
# systemd (serve_planes.h): the old server closes its control socket and metrics port, the
# new one binds them again and answers on both (ctl list names the export by its path; the
# scrape counts the new server's writes); the control socket is mode 0600 again, and the
# new server removes its path when it stops.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 4M "$T/d.img"
CTL=$T/ctl.sock
MPORT=$(free_port)
dg_start --control "$CTL" --metrics "127.0.0.1:$MPORT" "$T/d.img"
old=$DG_PID

head -c 64K /dev/urandom >"$T/a.bin"
nbdcopy "$T/a.bin" "$DG_UNIX" || fail "write before SIGUSR2"
dg_planes_answer "before SIGUSR2" "$CTL" "$MPORT" "$T/d.img" "$DG_LOG"

dg_usr2_restart "$old" "$DG_LOG"
new=$DG_NEW_PID
grep -F "metrics no longer served here: the new server serves them" "$DG_LOG" >/dev/null ||
  { cat "$DG_LOG" >&2; fail "no line saying the metrics moved"; }
wait_until 10 test -S "$CTL" || { cat "$DG_LOG" >&2; fail "the new server has no control socket"; }
nbdcopy "$T/a.bin" "$DG_UNIX" || fail "write after SIGUSR2"
dg_planes_answer "after SIGUSR2" "$CTL" "$MPORT" "$T/d.img" "$DG_LOG"
assert_eq "$(stat -c %a "$CTL")" 600 "the new control socket's mode"

kill -TERM "$new"
wait_until 30 sh -c "! kill -0 $new 2>/dev/null" || fail "the new server did not stop"
[ ! -e "$CTL" ] || fail "the new server left its control socket behind"
if grep -E "ERROR: [A-Za-z]+Sanitizer|runtime error" "$DG_LOG" >/dev/null; then cat "$DG_LOG" >&2; fail "a sanitizer report"; fi
pass "SIGUSR2 without systemd: control socket and metrics bound again by the new server"
