#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Crashes during allocating qcow2 writes (issue 35, point 6), the load of
# tests/qcow2/crash.py: 2 connections x 2 threads writing 4 KiB blocks into fresh clusters
# (both connections allocating the same clusters at once), rewrites, FUA, FLUSHes.
#  1. all replies: the load runs to its end (a request without a reply for 20 s fails the
#     test); after a clean stop `qemu-img check` finds nothing (no leak) and every
#     acknowledged write reads back.
#  2. kill -9 (3 rounds: 64 KiB clusters, 4 KiB clusters, 64 KiB with extended L2): the
#     server is killed at a random moment of the load; `qemu-img check` then reports no
#     corruption (leaked clusters allowed: exit 0 or 3), and every write acknowledged
#     before a FLUSH reply (or with FUA) reads back through qemu-img convert; no sector is
#     torn or foreign.
#  3. diskgate only (its fault-injecting backing, faulty:, src/backing/faulty/faulty.h):
#     simulated power loss at every sync point of a short recorded load: each image
#     passes qemu-img check and holds what was flushed; then 2 live power losses in which
#     each completed but unsynced write survives with probability 1/2 (keep=50), so that
#     metadata written without a sync between may survive without what it relies on;
#     a negative control: under --sync none the enumeration must find lost writes; and
#     the load over the faulty backing delaying writes and syncs (issued and completed on
#     its pump thread) must get every reply.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib_qcow2.sh"
CR="$PY $HERE/crash.py"
IMG=$T/disk.qcow2
SEED=${Q2_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "crash: server $Q2_SERVER, seed $SEED (Q2_SEED=$SEED to run it again)"
start=$SECONDS

new_image() { # CLUSTER [EXTL2]
  rm -f "$IMG"
  qemu-img create -q -f qcow2 -o "cluster_size=$1,extended_l2=${2:-off}" "$IMG" 64M
}

# 1. every request gets its reply; a clean stop leaves a clean image
new_image 65536
q2_start "$IMG"
$CR run "$Q2_URI" "$T/log.json" --cluster 65536 --writes 120 --seed "$SEED" ||
  fail "the load did not complete (a request got no reply, or an error)"
q2_stop
q2_check "$IMG"
qemu-img convert -f qcow2 -O raw "$IMG" "$T/disk.raw"
$CR verify "$T/disk.raw" "$T/log.json" --all || fail "after a clean stop: acknowledged writes lost"
pass "concurrent allocating writes from 2 connections all got replies; clean image after stop"

# 2. kill -9 during the load
round=0
for cell in 65536:off 4096:off 65536:on; do
  round=$((round + 1))
  new_image "${cell%:*}" "${cell#*:}"
  q2_start "$IMG"
  rm -f "$T/ready"
  $CR run "$Q2_URI" "$T/log.json" --cluster "${cell%:*}" --seconds 10 --seed "$((SEED + round))" \
    --ready "$T/ready" >"$T/run.out" 2>&1 &
  wl=$!
  wait_until 10 test -e "$T/ready" || { cat "$T/run.out" >&2; fail "round $round: the load did not start"; }
  sleep "0.$((RANDOM % 7 + 3))"
  q2_kill9
  wait "$wl" || { cat "$T/run.out" >&2; fail "round $round: the load failed (exit $?)"; }
  q2_check "$IMG" 1
  qemu-img convert -f qcow2 -O raw "$IMG" "$T/disk.raw"
  $CR verify "$T/disk.raw" "$T/log.json" >"$T/verify.out" ||
    { cat "$T/run.out" "$T/verify.out" >&2; fail "round $round (clusters ${cell%:*}, extended L2 ${cell#*:}): flushed writes lost after kill -9"; }
  echo "kill -9 round $round (clusters ${cell%:*}, extended L2 ${cell#*:}): $(cat "$T/run.out") | $(tail -1 "$T/verify.out")"
done
pass "kill -9 during allocating writes: qemu-img check finds no corruption, flushed writes read back"

if [ "$Q2_SERVER" != diskgate ]; then
  pass "crash: $Q2_SERVER done in $((SECONDS - start)) s (power loss needs diskgate's faulty: backing)"
  exit 0
fi

# 3. simulated power loss
export DISKGATE_TEST_FAULTS=$T/ctl
faults() { # CMD...: control commands of the faulty backing, one per argument
  PYTHONPATH=$SRCDIR/tests/durability $PY - "$DISKGATE_TEST_FAULTS" "$@" <<'PY'
import sys
from dgdur import Faults
f = Faults(sys.argv[1])
for c in sys.argv[2:]:
    print(c, "->", f.raw(c))
PY
}

enumerate_run() { # SYNC-MODE pass|fail
  new_image 65536
  q2_start -- --sync "$1" "faulty:$IMG"
  faults record >/dev/null
  $CR run "$Q2_URI" "$T/log.json" --cluster 65536 --writes 30 --seed "$SEED" --stall 10 >"$T/run.out" ||
    { cat "$T/run.out" >&2; fail "power loss load (--sync $1)"; }
  local rc=0
  $CR enumerate "$DISKGATE_TEST_FAULTS" "$T/log.json" "$IMG" "$T" >"$T/enum.out" || rc=$?
  faults clear >/dev/null
  q2_stop
  echo "--sync $1: $(cat "$T/run.out") | $(tail -1 "$T/enum.out")"
  if [ "$2" = pass ]; then
    [ "$rc" -eq 0 ] || { cat "$T/enum.out" >&2; fail "a power loss at some sync point corrupts the image or loses a flushed write (--sync $1)"; }
  else
    [ "$rc" -ne 0 ] && grep -q "version 0, but version" "$T/enum.out" ||
      { cat "$T/enum.out" >&2; fail "negative control: under --sync $1 no crash point lost a flushed write"; }
  fi
}
enumerate_run full pass
pass "a power loss at every sync point: qemu-img check finds no corruption, flushed writes kept"

for round in 1 2; do
  new_image 65536
  q2_start -- --sync full "faulty:$IMG"
  rm -f "$T/ready"
  $CR run "$Q2_URI" "$T/log.json" --cluster 65536 --seconds 10 --seed "$((SEED + 10 + round))" \
    --ready "$T/ready" >"$T/run.out" 2>&1 &
  wl=$!
  wait_until 10 test -e "$T/ready" || fail "live power loss $round: the load did not start"
  sleep "0.$((RANDOM % 6 + 4))"
  faults "crash keep=50 seed=$((SEED + round))" >/dev/null
  rc=0; wait "$Q2_PID" || rc=$?
  [ "$rc" -eq 137 ] || { cat "$Q2_LOG" >&2; fail "live power loss $round: diskgate exited $rc, expected SIGKILL"; }
  wait "$wl" || { cat "$T/run.out" >&2; fail "live power loss $round: the load failed"; }
  q2_check "$IMG" 1
  qemu-img convert -f qcow2 -O raw "$IMG" "$T/disk.raw"
  $CR verify "$T/disk.raw" "$T/log.json" >"$T/verify.out" ||
    { cat "$T/verify.out" >&2; fail "live power loss $round (keep=50): flushed writes lost"; }
  echo "live power loss $round (keep=50): $(cat "$T/run.out") | $(tail -1 "$T/verify.out")"
done
pass "2 live power losses keeping half of the unsynced writes: no corruption, flushed writes kept"

enumerate_run none fail
pass "negative control: under --sync none a power loss loses flushed writes"

# the faulty backing delaying writes and syncs (its pump thread issues them later, and
# completes them there): every request must still get its reply
new_image 65536
q2_start -- --sync full "faulty:$IMG"
faults "rule delay write ms=2 jitter=1" "rule delay flush ms=3 jitter=1" >/dev/null
$CR run "$Q2_URI" "$T/log.json" --cluster 65536 --writes 30 --seed "$SEED" --stall 10 >"$T/run.out" ||
  { cat "$T/run.out" >&2; fail "allocating writes over a backing that delays I/O: a request got no reply"; }
faults clear >/dev/null
q2_stop
pass "allocating writes over a backing that delays and completes I/O on its own thread: all replies"
pass "crash: $Q2_SERVER done in $((SECONDS - start)) s"
