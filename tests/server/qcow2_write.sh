#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writes, WRITE_ZEROES and TRIM to qcow2 images served read-write, with QEMU as the oracle:
# the same qemu-io commands go through NBD to diskgate's image and straight into a copy
# with qemu-io; afterwards `qemu-img compare` finds the two equal and `qemu-img check`
# finds no error and no leak in diskgate's. Images: fresh v3 with 64 KiB and 512 B
# clusters, v2 (compat=0.10), extended L2 entries (alone and over a backing file), an
# overlay (whose base must not change), compressed clusters overwritten, and an image with
# an internal snapshot (whose data must not change), a last cluster only partly in the
# file. TRIM and WRITE_ZEROES semantics are
# checked by reading back: zeroes without a backing file; with one, a trimmed or zeroed
# cluster must not show the backing file's bytes.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"


# Writes of every size and alignment: inside one cluster, across cluster boundaries, whole
# clusters, runs of clusters, overwrites in place, zeroes (with and without unmap) and
# trims over whole and partial clusters, writes into zeroed and trimmed clusters.
OPS=(
  'write -P 0x11 0 512' 'write -P 0x12 4096 4096' 'write -P 0x13 65024 1024'
  'write -P 0x14 131072 65536' 'write -P 0x15 200000 300000' 'write -P 0x16 1048576 4194304'
  'write -P 0x17 0 512' 'write -P 0x18 1050000 70000' 'write -P 0x19 7340033 1'
  'write -P 0x1a 65535 2' 'write -z 6291456 200000' 'write -z -u 6029312 131072'
  'discard 5242880 131072' 'write -P 0x1b 5243904 100' 'write -z 3145728 65536'
  'write -P 0x1c 3146240 512' 'write -P 0x1d 8380416 8192' 'discard 2097152 262144'
  'write -P 0x1e 2100000 5000' 'write -z 1500000 100000' 'write -P 0x1f 7864320 524288'
)

run_ops() { # IMAGE WHAT [serve options...]: OPS through diskgate to IMAGE, into a copy by qemu-io
  local img=$1 what=$2 args=() op
  cp "$img" "$T/oracle.qcow2"
  dg_start "${@:3}" "$img"
  for op in "${OPS[@]}"; do args+=(-c "$op"); done
  qemu-io -f raw "${args[@]}" "$DG_UNIX" >"$T/io.out" 2>&1 || fail "$what: qemu-io through NBD: $(cat "$T/io.out")"
  dg_stop
  qemu-io -f qcow2 "${args[@]}" "$T/oracle.qcow2" >/dev/null || fail "$what: qemu-io on the copy"
  qcow2_check_clean "$img" "$what"
  qemu-img compare -q "$img" "$T/oracle.qcow2" || fail "$what: the image differs from QEMU's copy"
}

mkrandom "$T/data.raw" $((8 << 20))
probe() { # a server of a qcow2 image that cannot start: the engine is missing
  qemu-img create -q -f qcow2 "$T/probe.qcow2" 1M
  timeout 10 "$DISKGATE" serve --socket "$T/probe.sock" "$T/probe.qcow2" >"$T/probe.out" 2>&1 &
  local p=$!
  wait_until 10 bash -c "grep -q 'listening on' '$T/probe.out' || ! kill -0 $p 2>/dev/null" || true
  if ! grep -q 'listening on' "$T/probe.out"; then
    echo "skip: the qcow2 engine refuses every image: $(cat "$T/probe.out")"
    exit 77
  fi
  kill -TERM "$p"
  wait "$p" || true
}
probe

for spec in "cluster_size=65536" "cluster_size=512" "cluster_size=512,refcount_bits=1" \
            "compat=0.10" "extended_l2=on" "cluster_size=2097152"; do
  qemu-img create -q -f qcow2 -o "$spec" "$T/img.qcow2" 8M
  run_ops "$T/img.qcow2" "fresh image ($spec)"
done

# The last cluster partly in the file (QEMU writes only the subclusters it needs, so the
# file ends inside the cluster): writes into its tail grow the file; the entry is valid.
qemu-img create -q -f qcow2 -o cluster_size=2097152,extended_l2=on "$T/tail.qcow2" 8M
qemu-io -f qcow2 -c 'write -P 0x21 6291456 65536' "$T/tail.qcow2" >/dev/null
[ $(($(stat -c %s "$T/tail.qcow2") % 2097152)) -ne 0 ] || fail "the tail image ends on a cluster"
saved=("${OPS[@]}")
OPS=('write -P 0x22 7340033 1' 'write -z 6400000 70000' 'write -P 0x23 8380416 8192' "${saved[@]}")
run_ops "$T/tail.qcow2" "last cluster partly in the file"
OPS=("${saved[@]}")

# A trimmed or zeroed range reads as zeroes without a backing file.
qemu-img create -q -f qcow2 "$T/img.qcow2" 8M
dg_start "$T/img.qcow2"
qemu-io -f raw -c 'write -P 0x77 0 1M' -c 'discard 0 512k' -c 'write -z 512k 256k' \
  -c 'read -P 0 0 768k' -c 'read -P 0x77 768k 256k' "$DG_UNIX" >"$T/io.out" 2>&1 ||
  fail "trim and zeroes: $(cat "$T/io.out")"
! grep -q "Pattern verification failed" "$T/io.out" || fail "trim/zeroes: $(cat "$T/io.out")"
dg_stop
qcow2_check_clean "$T/img.qcow2" "trim and zeroes"
# Trimmed clusters without a backing file are freed: the file holds less after a flush.
used=$(qemu-img info --output=json "$T/img.qcow2" | $PY -c 'import json,sys; print(json.load(sys.stdin)["actual-size"])')
qemu-img map --output=json "$T/img.qcow2" >"$T/map.json"
$PY - "$T/map.json" <<'EOF' || fail "trimmed clusters still mapped: $(cat "$T/map.json")"
import json, sys
for e in json.load(open(sys.argv[1])):
    if e["start"] < 512 * 1024 and e["data"]:
        sys.exit(1)
EOF
[ "$used" -gt 0 ] || fail "actual size"

# Overlays: the base never changes; trimmed and zeroed clusters hide the base's bytes.
qemu-img convert -q -f raw -O qcow2 "$T/data.raw" "$T/base.qcow2"
base_sum=$(sha256sum <"$T/base.qcow2")
for spec in "cluster_size=65536" "extended_l2=on" "cluster_size=4096"; do
  qemu-img create -q -f qcow2 -o "$spec" -b "$T/base.qcow2" -F qcow2 "$T/ovl.qcow2"
  run_ops "$T/ovl.qcow2" "overlay ($spec)"
  assert_eq "$(sha256sum <"$T/base.qcow2")" "$base_sum" "the base after writes to its overlay ($spec)"
  qemu-img create -q -f qcow2 -o "$spec" -b "$T/base.qcow2" -F qcow2 "$T/ovl.qcow2"
  dg_start "$T/ovl.qcow2"
  qemu-io -f raw -c 'write -P 0x66 0 2M' -c 'discard 0 1M' -c 'write -z 1M 512k' \
    -c 'write -z 4M 1M' -c 'read -P 0 0 1536k' -c 'read -P 0x66 1536k 512k' \
    -c 'read -P 0 4M 1M' "$DG_UNIX" >"$T/io.out" 2>&1 || fail "overlay trim/zero: $(cat "$T/io.out")"
  ! grep -q "Pattern verification failed" "$T/io.out" ||
    fail "overlay ($spec): the base shows through a trimmed or zeroed range: $(cat "$T/io.out")"
  dg_stop
  qcow2_check_clean "$T/ovl.qcow2" "overlay trim/zero ($spec)"
  assert_eq "$(sha256sum <"$T/base.qcow2")" "$base_sum" "the base after trims of its overlay"
done

# Compressed clusters overwritten, partly and wholly, trimmed and zeroed (base64 text:
# random bytes would be stored uncompressed).
head -c $((6 << 20)) /dev/urandom | base64 -w0 >"$T/text.raw" # 8 MiB
for spec in "compression_type=zlib" "compression_type=zstd"; do
  qemu-img convert -q -c -f raw -O qcow2 -o "$spec" "$T/text.raw" "$T/comp.qcow2"
  out=$(qemu-img check "$T/comp.qcow2")
  grep -q "100.00% compressed clusters" <<<"$out" ||
    fail "$spec: qemu-img made no compressed clusters"
  run_ops "$T/comp.qcow2" "compressed ($spec)"
done

# An internal snapshot: its clusters are shared (refcount 2); writes copy them, the
# snapshot's data stays as it was.
qemu-img convert -q -f raw -O qcow2 "$T/data.raw" "$T/snap.qcow2"
qemu-img snapshot -c s1 "$T/snap.qcow2"
qemu-img convert -q -l snapshot.name=s1 -O raw "$T/snap.qcow2" "$T/s1.before"
run_ops "$T/snap.qcow2" "image with an internal snapshot"
qemu-img convert -q -l snapshot.name=s1 -O raw "$T/snap.qcow2" "$T/s1.after"
cmp -s "$T/s1.before" "$T/s1.after" || fail "the internal snapshot's data changed"
cmp -s "$T/s1.after" "$T/data.raw" || fail "the internal snapshot's data is not the original"

# Concurrent partial writes into the same unallocated clusters (qemu-io's aio_write: all in
# flight at once): each cluster is allocated once and keeps every slice, over zeroes and
# over a backing file's bytes.
aio=() reads=()
for slice in $(seq 0 15); do
  for c in $(seq 0 31); do
    aio+=(-c "aio_write -P $(((c * 16 + slice) % 251)) $((c * 65536 + slice * 4096)) 4096")
    reads+=(-c "read -P $(((c * 16 + slice) % 251)) $((c * 65536 + slice * 4096)) 4096")
  done
done
for backing in "" "-b $T/base.qcow2 -F qcow2"; do
  # shellcheck disable=SC2086
  qemu-img create -q -f qcow2 $backing "$T/par.qcow2" 8M
  dg_start "$T/par.qcow2"
  qemu-io -f raw "${aio[@]}" -c aio_flush "$DG_UNIX" >"$T/io.out" 2>&1 || fail "aio writes: $(cat "$T/io.out")"
  qemu-io -f raw "${reads[@]}" "$DG_UNIX" >"$T/io.out" 2>&1 || fail "reads: $(cat "$T/io.out")"
  ! grep -q "Pattern verification failed" "$T/io.out" ||
    fail "concurrent partial writes ($backing) lost a slice: $(grep -c failed "$T/io.out") failed"
  dg_stop
  qcow2_check_clean "$T/par.qcow2" "concurrent partial writes ($backing)"
  qemu-io -f qcow2 "${reads[@]}" "$T/par.qcow2" >"$T/io.out" 2>&1 || fail "reads by qemu-io"
  ! grep -q "Pattern verification failed" "$T/io.out" || fail "qemu-io reads other bytes ($backing)"
  clusters=$(qemu-img check "$T/par.qcow2" | sed -n 's/^\([0-9]*\)\/.*allocated.*/\1/p')
  assert_eq "$clusters" 32 "clusters allocated by 16 concurrent writes each to 32 clusters"
done

pass "qcow2 writes, zeroes and trims match QEMU's; images check clean"
