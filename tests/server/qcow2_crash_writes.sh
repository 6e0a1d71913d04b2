#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# kill -9 of diskgate during allocating writes, trims and zeroes to qcow2 images (fresh,
# 512 B clusters with 64-bit refcounts so refcount blocks and tables are being added, an
# overlay, and an image with an internal snapshot, which must keep its data): afterwards
# `qemu-img check` finds no corruption (exit status 0, or 3 when only clusters leaked), as
# the write-back order promises (qcow2_impl.h).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

ops() { # qemu-io -c arguments: allocating writes all over the disk, some trims and zeroes
  local i off
  for i in $(seq 1 3000); do
    off=$(( (i * 7919 % 2000) * 4096 + (i % 3) * 512 ))
    printf -- '-c\nwrite -P %d %d %d\n' $((i % 250)) "$off" $(( (i % 17 + 1) * 2048 ))
    if [ $((i % 25)) = 0 ]; then printf -- '-c\ndiscard %d 131072\n' $((off / 65536 * 65536)); fi
    if [ $((i % 40)) = 0 ]; then printf -- '-c\nwrite -z %d 131072\n' $((off / 65536 * 65536)); fi
    if [ $((i % 50)) = 0 ]; then printf -- '-c\nflush\n'; fi
  done
}
mapfile -t OPS < <(ops)

mkrandom "$T/data.raw" $((8 << 20))
qemu-img convert -q -f raw -O qcow2 "$T/data.raw" "$T/base.qcow2"
for round in 1 2 3 4 5 6 7 8; do
  case $((round % 4)) in
    0) qemu-img create -q -f qcow2 "$T/img.qcow2" 8M ;;
    1) qemu-img create -q -f qcow2 -o cluster_size=512,refcount_bits=64 "$T/img.qcow2" 8M ;;
    2) qemu-img create -q -f qcow2 -b "$T/base.qcow2" -F qcow2 "$T/img.qcow2" ;;
    3) # an internal snapshot: shared L2 tables and clusters are copied, never written
      qemu-img convert -q -f raw -O qcow2 -o cluster_size=4096 "$T/data.raw" "$T/img.qcow2"
      qemu-img snapshot -c s1 "$T/img.qcow2" ;;
  esac
  dg_start "$T/img.qcow2"
  qemu-io -f raw "${OPS[@]}" "$DG_UNIX" >/dev/null 2>&1 &
  io=$!
  sleep "0.$((round * 13 % 9 + 1))"
  kill -0 "$io" 2>/dev/null || fail "round $round: the writes ended before the kill: it proves nothing"
  kill -9 "$DG_PID"
  wait "$DG_PID" 2>/dev/null || true
  wait "$io" 2>/dev/null || true
  rc=0
  out=$(qemu-img check "$T/img.qcow2" 2>&1) || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "round $round: qemu-img check exit $rc: $out"
  ! grep -qE "^ERROR|corrupt" <<<"$out" || fail "round $round: qemu-img check: $out"
  if [ $((round % 4)) = 3 ]; then
    qemu-img convert -q -l snapshot.name=s1 -O raw "$T/img.qcow2" "$T/s1.raw"
    cmp -s "$T/s1.raw" "$T/data.raw" || fail "round $round: the internal snapshot changed"
  fi
  echo "round $round: check exit $rc, $(grep -c "^Leaked" <<<"$out" || true) leaked clusters reported"
done
# Deterministic: writes that add refcount blocks (512 B clusters, 64-bit refcounts: one
# block per 64 clusters), no FLUSH, then kill -9 with the connection open. Each new block,
# and the refcount counting it in the block before, must be in the file before the
# refcount table points to it.
for size in 32768 65536 200704 1048576; do
  qemu-img create -q -f qcow2 -o cluster_size=512,refcount_bits=64 "$T/img.qcow2" 8M
  dg_start "$T/img.qcow2"
  $PY - "$DG_UNIX" "$size" "$DG_PID" <<'EOF2' || fail "writes through nbd ($size)"
import os, sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
size = int(sys.argv[2])
h.pwrite(b"\x5a" * size, 0)
h.pwrite(b"\xa5" * 4096, 4 << 20)
os.kill(int(sys.argv[3]), 9)
EOF2
  wait "$DG_PID" 2>/dev/null || true
  rc=0
  out=$(qemu-img check "$T/img.qcow2" 2>&1) || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "$size bytes then kill -9: qemu-img check exit $rc: $out"
done

pass "kill -9 during allocating writes leaves images qemu-img check accepts"
