#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real crashes: DG_KILL_TRIALS trials (default 10; docs/durability.md records 100). Each runs
# the mixed load of tests/durability/workload.py (4 connections x 2 threads: WRITEs, a quarter
# with FUA, and FLUSHes) against a fresh image, kill -9s diskgate at a random moment (0.1 to
# 1.5 s into the load), restarts it on the image and verifies that every write the client saw
# acknowledged-then-flushed (a FLUSH sent after the write's reply, on any connection, was
# acknowledged) or acknowledged with FUA reads back, at that version or a later one it sent,
# with no torn or foreign sector.
# Trials rotate over --cache writeback/direct and --sync full/fsync. After kill -9 the page
# cache survives, so under writeback every completed write survives; --cache direct makes the
# trial meaningful for the data path (nothing waits in diskgate's memory), and the faulty
# backing's simulated power loss (power_loss.sh) checks the "only synced data survives" side.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
TRIALS=${DG_KILL_TRIALS:-10}
WL="$PY $HERE/workload.py"
IMG=$T/disk.img
start=$SECONDS
declare -A done_by
for trial in $(seq 1 "$TRIALS"); do
  case $((trial % 4)) in
    1) cache=writeback sync=full ;;
    2) cache=direct sync=full ;;
    3) cache=writeback sync=fsync ;;
    0) cache=direct sync=fsync ;;
  esac
  rm -f "$IMG" "$T/ready"; truncate -s 16M "$IMG"
  dg_start --cache "$cache" --sync "$sync" "$IMG"
  $WL run "$DG_UNIX" "$T/log.json" --slots 1024 --seconds 30 --seed "$trial" --ready "$T/ready" \
    >"$T/wl.out" 2>&1 &
  wl=$!
  for _ in $(seq 1 100); do [ -e "$T/ready" ] && break; sleep 0.05; done
  [ -e "$T/ready" ] || { cat "$T/wl.out" >&2; fail "trial $trial: the load did not start"; }
  sleep "$((RANDOM % 15)).$((RANDOM % 10))e-1"
  kill -9 "$DG_PID"
  wait "$DG_PID" 2>/dev/null || true
  wait "$wl" || { cat "$T/wl.out" >&2; fail "trial $trial: the load failed"; }
  dg_start --cache "$cache" --sync "$sync" "$IMG"
  if ! $WL verify "$DG_UNIX" "$T/log.json" >"$T/verify.out" 2>&1; then
    cat "$T/wl.out" "$T/verify.out" >&2
    cp "$T/log.json" "/tmp/kill9-failed-trial-$trial.json" 2>/dev/null || true
    fail "trial $trial (--cache $cache --sync $sync): an acknowledged write was lost"
  fi
  dg_stop
  echo "trial $trial (--cache $cache --sync $sync): $(cat "$T/wl.out") | $(tail -1 "$T/verify.out")"
  done_by[$cache]=$(( ${done_by[$cache]:-0} + 1 ))
done
pass "$TRIALS kill -9 trials in $((SECONDS - start)) s (writeback ${done_by[writeback]:-0}, direct ${done_by[direct]:-0}): nothing acknowledged was lost"
