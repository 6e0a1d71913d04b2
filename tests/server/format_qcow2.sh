#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Serving qcow2 through the command line, with QEMU's tools as the oracle: a qcow2 file is
# probed ("qcow2 image (probed)" in the log), served at its virtual size with the bytes
# qemu-img reads (also under a small --l2-cache-size); an overlay made by the persistent
# recipe (qemu-img create -b base -F qcow2) reads through its base, and nbdinfo --map of
# base:allocation and qemu:allocation-depth match qemu-nbd -A's; a looping backing chain,
# an unknown incompatible feature bit and cluster_bits out of range are each refused in
# one line, exit 2. Needs the qcow2 engine: skipped where qcow2.c still refuses everything.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

refused() { # FILE: runs serve on FILE, which must fail at once; prints its one line
  local rc=0
  "$DISKGATE" serve --socket "$T/r.sock" --read-only "$1" >"$T/r.out" 2>&1 || rc=$?
  assert_eq "$rc" 2 "exit status for $(basename "$1")"
  grep "^diskgate serve: " "$T/r.out" | tail -1
}

qemu-img create -q -f qcow2 "$T/probe.qcow2" 1M
timeout 10 "$DISKGATE" serve --socket "$T/probe.sock" --read-only "$T/probe.qcow2" \
  >"$T/probe.out" 2>&1 &
probe=$!
wait_until 10 bash -c "grep -q 'listening on' '$T/probe.out' || ! kill -0 $probe 2>/dev/null" ||
  fail "the qcow2 server neither started nor exited"
if ! grep -q 'listening on' "$T/probe.out" && grep -q "does not serve" "$T/probe.out"; then
  echo "skip: the qcow2 engine refuses every image (placeholder)"
  exit 77
fi
kill -TERM "$probe" 2>/dev/null || true
wait "$probe" || true

mkrandom "$T/data.raw" $((8 << 20))
qemu-img convert -q -f raw -O qcow2 "$T/data.raw" "$T/base.qcow2"
qemu-io -f qcow2 -c 'discard 1M 1M' -c 'write -z 5M 64k' "$T/base.qcow2" >/dev/null
for cache in "" "--l2-cache-size 64K"; do
  # shellcheck disable=SC2086
  dg_start --read-only $cache "$T/base.qcow2"
  assert_eq "$(nbdinfo --size "$DG_UNIX")" $((8 << 20)) "virtual size ($cache)"
  qemu-img compare -q -f qcow2 -F raw "$T/base.qcow2" "$DG_UNIX" ||
    fail "diskgate's bytes differ from qemu-img's ($cache)"
  dg_stop
  grep -q "bytes, qcow2 image (probed)," "$DG_LOG" || fail "probe log: $(cat "$DG_LOG")"
done

qemu-img create -q -f qcow2 -b "$T/base.qcow2" -F qcow2 "$T/overlay.qcow2"
qemu-io -f qcow2 -c 'write -P 0x11 0 64k' -c 'write -P 0x22 3M 192k' "$T/overlay.qcow2" >/dev/null
qemu-nbd -t -A -r -f qcow2 -k "$T/q.sock" "$T/overlay.qcow2" &
DG_PIDS+=($!)
wait_until 10 test -S "$T/q.sock" || fail "qemu-nbd did not start"
dg_start --read-only "$T/overlay.qcow2"
for ctx in qemu:allocation-depth base:allocation; do
  want=$(nbdinfo --map="$ctx" "nbd+unix:///?socket=$T/q.sock") || fail "qemu-nbd map ($ctx)"
  assert_eq "$(nbdinfo --map="$ctx" "$DG_UNIX")" "$want" "nbdinfo --map=$ctx of the overlay"
done
nbdinfo --map=qemu:allocation-depth "$DG_UNIX" | awk '$3 == 2' | grep . >/dev/null ||
  fail "no extent read from the base (depth 2): the comparison proves little"
qemu-img compare -q -f qcow2 -F raw "$T/overlay.qcow2" "$DG_UNIX" || fail "overlay bytes"
dg_stop

qemu-img create -q -f qcow2 -u -b "$T/loop-b.qcow2" -F qcow2 "$T/loop-a.qcow2" 1M
qemu-img create -q -f qcow2 -u -b "$T/loop-a.qcow2" -F qcow2 "$T/loop-b.qcow2" 1M
refused "$T/loop-a.qcow2" | grep "backing chain loops or is deeper than" >/dev/null ||
  fail "looping chain: $(cat "$T/r.out")"
qemu-img create -q -f qcow2 "$T/feature.qcow2" 1M
printf '\x80' | dd of="$T/feature.qcow2" bs=1 seek=72 conv=notrunc status=none
refused "$T/feature.qcow2" | grep "uses a feature this diskgate does not serve" >/dev/null ||
  fail "unknown incompatible bit: $(cat "$T/r.out")"
qemu-img create -q -f qcow2 "$T/bits.qcow2" 1M
printf '\x00\x00\x00\x28' | dd of="$T/bits.qcow2" bs=1 seek=20 conv=notrunc status=none
refused "$T/bits.qcow2" | grep "not a valid qcow2 image" >/dev/null ||
  fail "cluster_bits 40: $(cat "$T/r.out")"
pass "qcow2 served as QEMU reads it; overlays match qemu-nbd -A; bad images refused"
