#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Request buffers registered with the event loops' rings (src/io/loop_bufs.c): while a
# client reads, the server holds pinned pages (VmPin in /proc/PID/status: io_uring counts
# registered buffers there); when the client leaves, every buffer is unregistered (VmPin
# back to 0, no slot leaked); and data stays right while buffers are replaced, freed and
# re-registered: three clients at once, 4K-512K requests, fio's crc32c verify, both cache
# modes, both transports. Always --engine uring: only event loops register buffers.
. "$SRCDIR/tests/lib.sh"

vmpin_kib() { awk '/^VmPin:/ {print $2}' "/proc/$DG_PID/status"; }

# wait_vmpin OP VALUE: polls for up to 5 s until VmPin OP VALUE (-gt or -eq) holds.
wait_vmpin() {
  local i
  for i in $(seq 1 100); do
    kill -0 "$DG_PID" 2>/dev/null || { cat "$DG_LOG" >&2; fail "diskgate exited"; }
    [ "$(vmpin_kib)" "$1" "$2" ] && return 0
    sleep 0.05
  done
  return 1
}

run_fio() { # NAME URI fio-args...: fails the test on a fio error or a verify mismatch
  local name=$1 uri=$2
  shift 2
  (cd "$T" && fio --name="$name" --ioengine=nbd --uri="$uri" --output="$T/$name.out" "$@" \
    >/dev/null 2>&1) || { cat "$T/$name.out" >&2; fail "fio $name via $uri"; }
  grep -q 'err= 0' "$T/$name.out" || { cat "$T/$name.out" >&2; fail "fio $name: error"; }
}

for cache in direct writeback; do
  truncate -s 96M "$T/disk.img"
  dg_start --engine uring --cache "$cache" "$T/disk.img"
  assert_eq "$(vmpin_kib)" 0 "VmPin before any client ($cache)"
  run_fio load "$DG_UNIX" --rw=randread --bs=4k --iodepth=32 --size=32M --runtime=2 \
    --time_based &
  fio_pid=$!
  wait_vmpin -gt 0 || fail "no buffer registered while a client reads ($cache)"
  wait "$fio_pid"
  wait_vmpin -eq 0 || fail "VmPin $(vmpin_kib) kB after the client left ($cache)"
  pids=()
  for i in 0 1 2; do
    uri=$DG_UNIX
    [ "$i" -eq 1 ] && uri=$DG_TCP
    run_fio "churn$i" "$uri" --rw=randwrite --bsrange=4k-512k --blockalign=4k --iodepth=16 \
      --offset=$((i * 32))M --size=32M --verify=crc32c --verify_fatal=1 --do_verify=1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    wait "$p"
  done
  wait_vmpin -eq 0 || fail "VmPin $(vmpin_kib) kB after three clients left ($cache)"
  dg_stop
  rm -f "$T/disk.img"
done
pass "registered buffers: pinned while used, released after, data verified"
