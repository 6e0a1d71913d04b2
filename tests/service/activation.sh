#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Socket activation (docs/systemd.md): systemd-socket-activate passes a TCP and a Unix
# listener (FileDescriptorName nbd and local), the control socket (control, Unix) and the
# metrics endpoint (metrics, TCP); diskgate serves on them, not on sockets of its own
# (--listen, --control and --metrics name others), logs one line per socket and warns that
# the control socket's mode lets others connect. With WATCHDOG_USEC set it sends WATCHDOG=1. A client writes through one and reads back
# through the other. sd_notify goes to a stand-in NOTIFY_SOCKET: READY=1, STATUS= and
# STOPPING=1, in that order. A SIGUSR2 restart keeps both sockets: the new process sends
# MAINPID= (through the old one) and READY=1 and serves on them, and the Unix socket file,
# systemd's, stays in place when both processes have exited. The control socket and the
# metrics endpoint answer through the restart's hand-over too, on the same sockets, and
# their files stay in place.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 4M "$T/d.img"
P=$(free_port)
S=$T/nbd.sock
N=$T/notify.sock
C=$T/ctl.sock
MP=$(free_port)
$PY "$HERE/notify_sink.py" "$N" "$T/notes" &
DG_PIDS+=("$!")
wait_until 10 test -S "$N" || fail "the notify stand-in did not start"
envs=(-E "NOTIFY_SOCKET=$N" -E "WATCHDOG_USEC=2000000") # WatchdogSec=2: a ping a second
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS PATH; do
  [ -z "${!v:-}" ] || envs+=(-E "$v=${!v}")
done
# --listen names a port nobody uses: the passed sockets are served instead
systemd-socket-activate -l "127.0.0.1:$P" -l "$S" -l "$C" -l "127.0.0.1:$MP" \
  --fdname=nbd:local:control:metrics "${envs[@]}" \
  "$DISKGATE" serve --engine "${DG_ENGINE:-uring}" --listen "127.0.0.1:1" \
  --control "$T/not-this.sock" --metrics "127.0.0.1:1" "$T/d.img" >"$T/out" 2>"$T/log" &
pid=$!
DG_PIDS+=("$pid")
wait_until 10 test -S "$S" || fail "systemd-socket-activate did not listen"

# the first connect starts diskgate; it answers it
head -c 1M /dev/urandom >"$T/a.bin"
nbdcopy "$T/a.bin" "nbd://127.0.0.1:$P/" || { cat "$T/log" >&2; fail "write through TCP"; }
nbdcopy "nbd+unix:///?socket=$S" "$T/back.bin"
cmp -n 1048576 "$T/a.bin" "$T/back.bin" || fail "read through Unix differs from the TCP write"
wait_until 10 grep -F "READY=1" "$T/notes" >/dev/null || { cat "$T/notes" "$T/log" >&2; fail "no READY=1"; }
wait_until 5 grep -Fx "WATCHDOG=1" "$T/notes" >/dev/null || { cat "$T/notes" "$T/log" >&2; fail "no WATCHDOG=1"; }
grep -F "systemd watchdog: pinging every 1000 ms" "$T/log" >/dev/null || fail "no watchdog line"
grep -F "systemd socket 'nbd': NBD listener on 127.0.0.1:$P" "$T/log" >/dev/null ||
  { cat "$T/log" >&2; fail "no log line for the TCP socket"; }
grep -F "systemd socket 'local': NBD listener on unix:$S" "$T/log" >/dev/null ||
  { cat "$T/log" >&2; fail "no log line for the Unix socket"; }
assert_eq "$(grep -c "listening on" "$T/out")" 2 "URIs printed"
grep -F "systemd socket 'control': unix:$C (kept for the control)" "$T/log" >/dev/null ||
  { cat "$T/log" >&2; fail "no log line for the control socket"; }
grep -F "systemd socket 'metrics': 127.0.0.1:$MP (kept for the metrics)" "$T/log" >/dev/null ||
  { cat "$T/log" >&2; fail "no log line for the metrics socket"; }
grep -F "control: serving on systemd's socket 'control', not on --control $T/not-this.sock" \
  "$T/log" >/dev/null || { cat "$T/log" >&2; fail "no line saying --control is not bound"; }
grep -F "the control socket $C is mode" "$T/log" >/dev/null ||
  { cat "$T/log" >&2; fail "no warning on the control socket's mode"; }
[ ! -e "$T/not-this.sock" ] || fail "--control was bound beside systemd's control socket"
dg_planes_answer "at start" "$C" "$MP" "$T/d.img" "$T/log"
grep -F "nbd://127.0.0.1:$P/" "$T/out" >/dev/null || fail "the TCP URI is not the passed socket's"
wait_until 10 grep -F "STATUS=serving 1 export, 0 connections" "$T/notes" >/dev/null ||
  { cat "$T/notes" >&2; fail "no STATUS line"; }

# SIGUSR2: a new process on the same sockets
dg_usr2_restart "$pid" "$T/log"
new=$DG_NEW_PID
grep -F "MAINPID=$new" "$T/notes" >/dev/null || { cat "$T/notes" >&2; fail "no MAINPID=$new"; }
[ -S "$S" ] || fail "the old server removed systemd's socket file"
head -c 1M /dev/urandom >"$T/b.bin"
nbdcopy "$T/b.bin" "nbd+unix:///?socket=$S" || { cat "$T/log" >&2; fail "write through Unix after SIGUSR2"; }
nbdcopy "nbd://127.0.0.1:$P/" "$T/back2.bin"
cmp -n 1048576 "$T/b.bin" "$T/back2.bin" || fail "read through TCP after SIGUSR2 differs"
dg_planes_answer "after SIGUSR2" "$C" "$MP" "$T/d.img" "$T/log"
assert_eq "$(grep -cF "systemd socket 'control': unix:$C (kept for the control)" "$T/log")" 2 \
  "lines taking the control socket (start, new server)"
assert_eq "$(grep -c "READY=1" "$T/notes")" 2 "READY=1 messages (start, new server)"
kill -TERM "$new"
wait_until 30 sh -c "! kill -0 $new 2>/dev/null" || fail "the new server did not stop"
[ -S "$S" ] || fail "the new server removed systemd's socket file"
[ -S "$C" ] || fail "the new server removed systemd's control socket file"
# the order: READY=1 ... STATUS= ... STOPPING=1 (the last message)
first_ready=$(grep -n "READY=1" "$T/notes" | head -1 | cut -d: -f1)
first_status=$(grep -n "STATUS=serving" "$T/notes" | head -1 | cut -d: -f1)
[ "$first_ready" -le "$first_status" ] || { cat "$T/notes" >&2; fail "STATUS= before READY=1"; }
tail -1 "$T/notes" | grep -F "STOPPING=1" >/dev/null || { cat "$T/notes" >&2; fail "STOPPING=1 is not last"; }
assert_eq "$(grep -c "STOPPING=1" "$T/notes")" 1 "STOPPING=1 messages (the restart sends none)"
if grep -E "ERROR: [A-Za-z]+Sanitizer|runtime error" "$T/log" >/dev/null; then cat "$T/log" >&2; fail "a sanitizer report"; fi
pass "socket activation: TCP, Unix, control and metrics served, READY/STATUS/STOPPING, SIGUSR2 keeps the sockets"
