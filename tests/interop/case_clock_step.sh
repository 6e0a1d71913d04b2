#!/usr/bin/env bash
# The server's timed waits do not follow the wall clock. Run with $1, an LD_PRELOAD module
# (realtime_shift.c) that makes every CLOCK_REALTIME read one hour ahead of the clock the
# kernel times a futex against: what a process sees when the wall clock is stepped back an
# hour between computing a deadline and waiting for it. Two waits are checked:
# - shutdown: with an idle client connected, SIGINT gives connections 1 s to leave, then
#   closes them; the server must exit within a few seconds;
# - --max-connections 1: a second client, while the first is idle past negotiation, is
#   turned away after ADMIT_WAIT_MS (1 s).
# Both waited an hour when the server's condition variable used CLOCK_REALTIME (it now uses
# CLOCK_MONOTONIC, server_init).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
shim=${1:?usage: case_clock_step.sh REALTIME_SHIFT_MODULE}
[ -f "$shim" ] || fail "no module $shim"

truncate -s 16M "$T/a.img"
export DG_REALTIME_SHIFT_S=3600
# an ASan build's runtime must come first in the library list; the module has no globals
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# the module works: date(1) under it is an hour ahead
now=$(date +%s)
shifted=$(LD_PRELOAD=$shim date +%s)
[ $((shifted - now)) -ge 3590 ] || fail "the module did not shift CLOCK_REALTIME ($now, $shifted)"

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

# 1. Shutdown with an idle client.
LD_PRELOAD=$shim dg_start "$T/a.img"
idle_client "$DG_UNIX"
t0=$(date +%s%N)
interrupt_within 8 "$DG_PID" "shutdown with an idle client, wall clock an hour ahead"
ms=$((($(date +%s%N) - t0) / 1000000))
assert_eq "$rc" 0 "the exit status after SIGINT"
kill "$CLIENT_PID" 2>/dev/null || true
wait "$CLIENT_PID" 2>/dev/null || true
echo "shutdown with an idle client: exited in $ms ms"

# 2. --max-connections 1: the second client is turned away within a few seconds.
LD_PRELOAD=$shim dg_start --max-connections 1 "$T/a.img"
idle_client "$DG_UNIX"
t0=$(date +%s%N)
out=$(timeout 20 nbdinfo --size "$DG_UNIX" 2>&1) && fail "a second client got in: $out"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 5000 ] || fail "the second client waited $ms ms to be turned away (want about 1 s)"
grep -q "max-connections" "$DG_LOG" || fail "no log line about --max-connections: $(cat "$DG_LOG")"
kill "$CLIENT_PID" 2>/dev/null || true
wait "$CLIENT_PID" 2>/dev/null || true
dg_stop
echo "--max-connections 1: the second client was turned away in $ms ms"
pass "the server's timed waits keep time with the wall clock stepped an hour"
