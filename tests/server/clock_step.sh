#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The server's timed waits neither stretch nor shrink when the wall clock steps. Run with
# $1, an LD_PRELOAD module (realtime_shift.c) that shifts every CLOCK_REALTIME read by
# DG_REALTIME_SHIFT_S seconds from the clock the kernel times a futex against: what a
# process sees when the wall clock is stepped between computing a deadline and waiting for
# it. With the wall clock an hour ahead and an hour behind, two waits are timed:
# - shutdown: with an idle client connected, SIGINT stops reading at once and the drain
#   waits for the connection in ticks of 1 s: the server must exit within 3 s;
# - --max-connections 1: a second client, while the first is idle past negotiation, is
#   turned away once no connection has left within ADMIT_GRACE_MS (0.2 s): after 0.15 to
#   4 s, with the refusal logged.
# With the server's condition variable on CLOCK_REALTIME (before 3af2f65), an hour ahead
# each wait lasted until the client gave up (60 s, or the test's 20 s), and an hour behind
# neither waited at all; with deadlines from one clock and the variable on the other, the
# same. It now uses CLOCK_MONOTONIC for both (server_init, server_deadline_in).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
shim=${1:?usage: clock_step.sh REALTIME_SHIFT_MODULE}
[ -f "$shim" ] || fail "no module $shim"

truncate -s 16M "$T/a.img"
dg_allow_preload

# idle_client URI: connects and negotiates (libnbd), touches $T/connected, then stays idle
# for 60 s; sets CLIENT_PID. It never sends a request.
idle_client() {
  rm -f "$T/connected"
  $PY -c 'import nbd, sys, time
h = nbd.NBD()
h.connect_uri(sys.argv[1])
open(sys.argv[2], "w").close()
time.sleep(60)' "$1" "$T/connected" >/dev/null 2>&1 &
  CLIENT_PID=$!
  wait_until 10 test -e "$T/connected" || fail "the idle client did not connect"
}

# within WHAT MS MIN MAX: fails unless MIN <= MS <= MAX (milliseconds).
within() {
  [ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || fail "$1 took $2 ms (want $3 to $4 ms)"
}

for shift in 3600 -3600; do
  export DG_REALTIME_SHIFT_S=$shift
  # the module works: date(1) under it is an hour off
  now=$(date +%s)
  moved=$(LD_PRELOAD=$shim date +%s)
  [ $((moved - now - shift)) -ge -5 ] && [ $((moved - now - shift)) -le 5 ] ||
    fail "the module did not shift CLOCK_REALTIME by $shift s ($now, $moved)"

  # 1. Shutdown with an idle client.
  LD_PRELOAD=$shim dg_start "$T/a.img"
  idle_client "$DG_UNIX"
  t0=$(date +%s%N)
  interrupt_within 10 "$DG_PID" "shutdown with an idle client, wall clock shifted $shift s"
  ms=$((($(date +%s%N) - t0) / 1000000))
  assert_eq "$rc" 0 "the exit status after SIGINT"
  within "shutdown with an idle client, wall clock shifted $shift s," "$ms" 0 3000
  kill "$CLIENT_PID" 2>/dev/null || true
  wait "$CLIENT_PID" 2>/dev/null || true
  echo "wall clock shifted $shift s: shutdown with an idle client took $ms ms"

  # 2. --max-connections 1: the second client is turned away after the grace.
  LD_PRELOAD=$shim dg_start --max-connections 1 "$T/a.img"
  idle_client "$DG_UNIX"
  t0=$(date +%s%N)
  out=$(timeout 20 nbdinfo --size "$DG_UNIX" 2>&1) && fail "a second client got in: $out"
  ms=$((($(date +%s%N) - t0) / 1000000))
  within "turning the second client away, wall clock shifted $shift s," "$ms" 150 4000
  grep -q "accept: at the connection limit (--max-connections); new connections are closed" \
    "$DG_LOG" || fail "the refusal was not logged: $(cat "$DG_LOG")"
  kill "$CLIENT_PID" 2>/dev/null || true
  wait "$CLIENT_PID" 2>/dev/null || true
  dg_stop
  echo "wall clock shifted $shift s: the second client was turned away in $ms ms"
done
pass "the server's timed waits keep their length with the wall clock an hour ahead or behind"
