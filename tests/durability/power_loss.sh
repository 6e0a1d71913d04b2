#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Simulated power loss through the fault-injecting backing (src/backing/faulty/faulty.h), over NBD:
# 4 connections x 2 threads of WRITEs (a quarter with FUA) and FLUSHes, with the backing's
# writes and syncs delayed at random (so completions and syncs interleave), under --sync full
# and fsync.
#  1. crash-point enumeration: the load runs with the backing's event log recording; then
#     for EVERY crash point K of the log, the image a power loss there would leave (only
#     writes covered by a completed sync) must hold every write the client had seen
#     acknowledged with FUA, or acknowledged before a FLUSH it had seen acknowledged, by the
#     time of event K (client and log share CLOCK_MONOTONIC). tests/durability/workload.py.
#  2. live power loss, DG_POWER_ROUNDS rounds (default 3): the load runs, the backing is told
#     to `crash` at a random moment (the image is cut back to what was synced -- in even
#     rounds plus a random half of the completed, unsynced writes: `keep=50` -- and the server
#     is SIGKILLed), a plain server is started on the image, and every acknowledged-then-
#     flushed or FUA write must read back (at that version or a later one it sent).
#  3. negative control: under --sync none (FLUSH acknowledged without syncing) the same
#     enumeration must find lost writes, so the check is not vacuous.
#  4. write-through: under --cache writethrough and directsync (--sync full) the load sends
#     no FLUSH and no FUA, and at every crash point every write the client had seen
#     acknowledged must be in the image; one live crash under writethrough, then every
#     acknowledged write reads back. Negative control: the same FLUSH-less load under
#     --cache writeback loses acknowledged writes at some crash point.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
WL="$PY $HERE/workload.py"
ROUNDS=${DG_POWER_ROUNDS:-3}
IMG=$T/disk.img
export DISKGATE_TEST_FAULTS=$T/ctl

faults() { # faults CMD... : runs control commands, one per argument
  PYTHONPATH=$HERE $PY - "$DISKGATE_TEST_FAULTS" "$@" <<'PY'
import sys
from dgdur import Faults
f = Faults(sys.argv[1])
for c in sys.argv[2:]:
    print(c, "->", " ".join(f.cmd(c)))
PY
}

enumerate_run() { # sync-mode expect(pass|fail) [cache-mode: a FLUSH-less, FUA-less load]
  local mode=$1 expect=$2 cache=${3:-writeback} rc=0 wt=() ops=50
  [ $# -ge 3 ] && wt=(--write-through) && ops=30   # every write syncs: fewer, to stay short
  rm -f "$IMG"; truncate -s 8M "$IMG"
  dg_start --sync "$mode" --cache "$cache" "faulty:$IMG"
  faults "rule delay write ms=4 jitter=1" "rule delay flush ms=6 jitter=1" record >/dev/null
  local seed=$RANDOM
  echo "workload seed $seed (--sync $mode --cache $cache ${wt[*]})"   # to run it again
  $WL run "$DG_UNIX" "$T/log.json" --unique --ops "$ops" --slots 2048 --seed "$seed" "${wt[@]}" ||
    fail "workload (--sync $mode --cache $cache, seed $seed)"
  $WL enumerate "$DISKGATE_TEST_FAULTS" "$T/log.json" "$T" >"$T/enum.txt" || rc=$?
  cat "$T/enum.txt"
  faults clear >/dev/null
  dg_stop
  if [ "$expect" = pass ]; then
    [ "$rc" -eq 0 ] ||
      fail "--sync $mode --cache $cache: an acknowledged write is lost at some crash point"
  else
    [ "$rc" -ne 0 ] ||
      fail "--sync $mode --cache $cache: the enumeration found nothing lost (vacuous check?)"
    grep -q "violations" "$T/enum.txt" || fail "--sync $mode: no enumeration summary"
  fi
}

enumerate_run full pass
enumerate_run fsync pass
pass "every crash point of a recorded 4-connection load keeps what was acknowledged (full, fsync)"

for round in $(seq 1 "$ROUNDS"); do
  mode=$([ $((round % 2)) -eq 1 ] && echo full || echo fsync)
  rm -f "$IMG"; truncate -s 8M "$IMG"
  dg_start --sync "$mode" "faulty:$IMG"
  faults "rule delay write ms=3 jitter=1" "rule delay flush ms=5 jitter=1" >/dev/null
  rm -f "$T/ready"
  $WL run "$DG_UNIX" "$T/log.json" --slots 512 --seconds 20 --seed "$round" --ready "$T/ready" &
  wl=$!
  for _ in $(seq 1 200); do [ -e "$T/ready" ] && break; sleep 0.05; done
  [ -e "$T/ready" ] || fail "round $round: the load did not start"
  sleep "0.$((RANDOM % 8 + 2))"
  keep=$([ $((round % 2)) -eq 0 ] && echo 50 || echo 0)
  PYTHONPATH=$HERE $PY - "$DISKGATE_TEST_FAULTS" "$keep" "$round" <<'PY' || fail "round $round: crash command"
import sys
from dgdur import Faults
print(f"crash keep={sys.argv[2]} ->", Faults(sys.argv[1]).raw(f"crash keep={sys.argv[2]} seed={sys.argv[3]}"))
PY
  rc=0; wait "$DG_PID" || rc=$?
  [ "$rc" -eq 137 ] || { cat "$DG_LOG" >&2; fail "round $round: diskgate exited $rc, expected SIGKILL"; }
  wait "$wl" || fail "round $round: workload"
  [ ! -e "$IMG.faulty-base" ] || fail "round $round: the durable image was not put in place"
  dg_start "$IMG"
  $WL verify "$DG_UNIX" "$T/log.json" || fail "round $round (--sync $mode): acknowledged data lost"
  dg_stop
done
pass "$ROUNDS live power losses: every FUA or flushed write survived"

enumerate_run none fail
pass "negative control: --sync none loses acknowledged-and-flushed writes at some crash point"

enumerate_run full pass writethrough
enumerate_run full pass directsync
pass "writethrough, directsync: every crash point keeps every acknowledged write, no FLUSH sent"
enumerate_run full fail writeback
pass "negative control: writeback without FLUSH loses acknowledged writes at some crash point"

# one live power loss under writethrough, no FLUSH: every acknowledged write reads back
rm -f "$IMG"; truncate -s 8M "$IMG"
dg_start --sync full --cache writethrough "faulty:$IMG"
faults "rule delay write ms=3 jitter=1" "rule delay flush ms=5 jitter=1" >/dev/null
rm -f "$T/ready"
$WL run "$DG_UNIX" "$T/log.json" --slots 512 --seconds 20 --seed 7 --ready "$T/ready" \
  --write-through &
wl=$!
for _ in $(seq 1 200); do [ -e "$T/ready" ] && break; sleep 0.05; done
[ -e "$T/ready" ] || fail "writethrough: the load did not start"
sleep "0.$((RANDOM % 8 + 2))"
PYTHONPATH=$HERE $PY - "$DISKGATE_TEST_FAULTS" <<'PY' || fail "writethrough: crash command"
import sys
from dgdur import Faults
print("crash keep=50 ->", Faults(sys.argv[1]).raw("crash keep=50 seed=7"))
PY
rc=0; wait "$DG_PID" || rc=$?
[ "$rc" -eq 137 ] || { cat "$DG_LOG" >&2; fail "writethrough: diskgate exited $rc, expected SIGKILL"; }
wait "$wl" || fail "writethrough: workload"
dg_start "$IMG"
$WL verify "$DG_UNIX" "$T/log.json" || fail "writethrough: an acknowledged write was lost"
dg_stop
pass "a live power loss under writethrough: every acknowledged write survived, no FLUSH sent"
