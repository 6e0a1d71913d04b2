#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# QEMU as the oracle of the qcow2 engine (issue 35, point 6). For each cell -- cluster size
# 4K/64K/2M, v2 (compat=0.10) and v3, extended L2 entries on and off, without a backing file
# and over a raw or a qcow2 backing file of random data shorter than the disk -- an image A
# is created and preloaded by qemu-io (data clusters, compressed clusters, zero clusters,
# partial clusters) and copied to B. Then a seeded random workload (tests/qcow2/oracle.py:
# reads, writes, FUA, trims, write-zeroes, flushes; aligned and not) runs through the server
# (Q2_SERVER) on A, every read compared with the expected bytes, and the same workload runs
# through one qemu-io process on B. `qemu-img compare A B` must find them identical and
# `qemu-img check` must find both clean (no leak, no corruption).
# Q2_SEED fixes the seed (printed), Q2_OPS the operations per cell (default 160; half of it with 2M clusters),
# Q2_CELLS a subset ("64K-v3-extl2-qcow2 ..."), Q2_EXACT_TRIM=1 requires trimmed bytes to
# read exactly as QEMU leaves them.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib_qcow2.sh"
q2_memdir
SIZE=$((32 << 20))
OPS=${Q2_OPS:-160}
SEED=${Q2_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "oracle: server $Q2_SERVER, seed $SEED (Q2_SEED=$SEED to run it again), $OPS ops per cell"
exact=()
[ "${Q2_EXACT_TRIM:-0}" = 1 ] || [ "$Q2_SERVER" = qemu-nbd ] && exact=(--exact-trim)

# the backing file: 24 MiB of random data with holes (zeroes), as raw and as qcow2
$PY - "$T/base.raw" "$SEED" <<'PY'
import random, sys
rnd = random.Random(int(sys.argv[2]))
out = bytearray(rnd.randbytes(24 << 20))
for _ in range(8):  # zero runs: unallocated in the qcow2 copy
    a = rnd.randrange(0, 24 << 20, 4096)
    n = min(len(out) - a, rnd.randrange(4096, 2 << 20, 4096))
    out[a:a + n] = bytes(n)
open(sys.argv[1], "wb").write(out)
PY
qemu-img convert -q -f raw -O qcow2 "$T/base.raw" "$T/base.qcow2"
truncate -s 0 "$T/empty.raw"

CELLS=(4K-v2-none 4K-v2-raw 64K-v2-none 64K-v2-qcow2 2M-v2-none 2M-v2-raw
       4K-v3-none 4K-v3-qcow2 64K-v3-none 64K-v3-raw 2M-v3-none 2M-v3-qcow2
       64K-v3-extl2-none 64K-v3-extl2-qcow2 2M-v3-extl2-none 2M-v3-extl2-raw)
[ -n "${Q2_CELLS:-}" ] && read -r -a CELLS <<<"$Q2_CELLS"

cell_secs() { # START: seconds since START (an $EPOCHREALTIME), to 0.1
  local us=$(( ${EPOCHREALTIME/./} - ${1/./} ))
  echo "$((us / 1000000)).$((us / 100000 % 10))"
}

run_cell() { # NAME
  local name=$1 cs ver ext=off back c opts dir=$Q2_MEM/$1 seed out t0=$EPOCHREALTIME
  IFS=- read -r cs ver rest <<<"$name"
  case "$rest" in extl2-*) ext=on; back=${rest#extl2-} ;; *) back=$rest ;; esac
  case "$cs" in 4K) c=4096 ;; 64K) c=65536 ;; 2M) c=$((2 << 20)) ;; *) fail "cell $name" ;; esac
  opts="cluster_size=$c,compat=$([ "$ver" = v2 ] && echo 0.10 || echo 1.1),extended_l2=$ext"
  mkdir -p "$dir"
  local ops=$OPS
  [ "$c" -ge $((1 << 20)) ] && ops=$((OPS / 2)) # each small write copies 2 MiB
  local A=$dir/a.qcow2 B=$dir/b.qcow2 bargs=() braw=$T/empty.raw hb=()
  if [ "$back" != none ]; then
    bargs=(-b "$T/base.$back" -F "$back")
    braw=$T/base.raw
    hb=(--has-backing)
  fi
  qemu-img create -q -f qcow2 -o "$opts" "${bargs[@]}" "$A" "$SIZE" || fail "$name: qemu-img create"
  # preload: normal, compressed, zero and partial clusters, the last cluster
  local n=$((SIZE / c))
  out=$(qemu-io -t writeback -f qcow2 "$A" <<EOF 2>&1 | sed 's/qemu-io> //g'
write -q -P 0xa1 0 $((3 * c))
write -q -c -P 0x5c $((n / 4 * c)) $c
write -q -c -P 0x3e $(((n / 4 + 1) * c)) $c
write -q -P 0x77 $((n * 11 / 16 * c + 1000)) 5000
write -q -z $((n / 2 * c)) $((2 * c))
write -q -z -u $(((n / 2 + 2) * c)) $c
write -q -P 0x42 $((SIZE - c)) $c
write -q -P 0x17 $((n * 3 / 4 * c + 512)) 1024
EOF
)
  [ -z "${out//[[:space:]]/}" ] || fail "$name: preload: $out"
  qemu-img convert -q -f qcow2 -O raw "$A" "$dir/start.raw"
  cp "$A" "$B"
  q2_start "$A"
  seed=$((SEED + ${#name} * 7919 + $(cksum <<<"$name" | cut -d' ' -f1) % 100000))
  if ! $PY "$HERE/oracle.py" "$Q2_URI" --start "$dir/start.raw" --backing "$braw" \
      --cluster "$c" --version "${ver#v}" "${hb[@]}" --ops "$ops" --seed "$seed" \
      --dir "$dir" "${exact[@]}" >"$dir/oracle.out" 2>&1; then
    tail -20 "$dir/oracle.out" >&2
    grep -v 'info:' "$Q2_LOG" | tail -5 >&2
    fail "$name: a request failed, stalled, or a read through $Q2_SERVER returned other bytes than written (seed $SEED)"
  fi
  q2_stop
  out=$(qemu-io -t writeback -f qcow2 "$B" <"$dir/qemu-io.cmds" 2>&1 | sed 's/qemu-io> //g')
  [ -z "${out//[[:space:]]/}" ] || fail "$name: qemu-io on the copy: $out"
  out=$(qemu-img compare -f qcow2 -F qcow2 "$A" "$B" 2>&1) ||
    fail "$name: qemu-img compare (seed $SEED): $out"
  q2_check "$A"
  q2_check "$B"
  echo "$name: $(tail -1 "$dir/oracle.out" | sed 's/^oracle: //'); identical to qemu-io's, check clean ($(cell_secs "$t0") s)"
  rm -rf "$dir"
}

start=$SECONDS
for cell in "${CELLS[@]}"; do
  run_cell "$cell"
done
pass "${#CELLS[@]} cells through $Q2_SERVER in $((SECONDS - start)) s: qemu-img compare identical to qemu-io's result, qemu-img check clean"
