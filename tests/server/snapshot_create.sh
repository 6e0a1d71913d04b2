#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# qcow2_create, the overlay --snapshot makes (qcow2.h): empty v3 images, 64 KiB clusters,
# refcount_bits 16, with and without a backing file and its format, that QEMU's own tools
# accept: `qemu-img check` finds no error or leak, `qemu-img info` reads the fields back,
# qemu-io writes through them (allocating clusters and refcounts) and the result still
# checks clean and reads as the backing file with the writes on top. O_EXCL: an existing
# file is never overwritten. $1: the qcow2_create_tool binary.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
TOOL=${1:?usage: snapshot_create.sh QCOW2_CREATE_TOOL}

info_field() { # IMAGE KEY[.KEY...]...: fields of qemu-img info's JSON, "" when absent
  local img=$1
  shift
  qemu-img info --output=json "$img" | $PY -c '
import json, sys
info = json.load(sys.stdin)
out = []
for path in sys.argv[1:]:
    v = info
    for k in path.split("."):
        v = v.get(k, "") if isinstance(v, dict) else ""
    out.append(str(v))
print(" ".join(out))' "$@"
}

# no backing file, sizes that need 1, 2 and 0 L1 clusters
for size in 67108864 $((8 << 40)) 0 1073741824; do
  img=$T/plain.$size.qcow2
  "$TOOL" "$img" "$size" || fail "qcow2_create of $size bytes failed"
  qcow2_check_clean "$img" "empty image of $size bytes"
  assert_eq "$(info_field "$img" format virtual-size cluster-size format-specific.data.compat \
               format-specific.data.refcount-bits backing-filename)" \
    "qcow2 $size 65536 1.1 16 " "qemu-img info of $size: format, size, cluster, compat, refcount bits, backing"
done
qemu-io -f qcow2 -c 'write -P 0x5a 0 1M' -c 'write -P 0x11 4T 64k' -c 'write -P 0x22 100000 3000' \
  "$T/plain.$((8 << 40)).qcow2" >/dev/null || fail "qemu-io writes to the 8 TiB image"
qcow2_check_clean "$T/plain.$((8 << 40)).qcow2" "8 TiB image after writes"
qemu-io -f qcow2 -c 'read -P 0x11 4T 64k' -c 'read -P 0x5a 0 100000' -c 'read -P 0 2T 1M' \
  "$T/plain.$((8 << 40)).qcow2" >"$T/io.out" || fail "qemu-io read-back"
! grep -q "Pattern verification failed" "$T/io.out" || fail "8 TiB image reads back wrong"

# a raw backing file and a qcow2 one, named with their formats
mkrandom "$T/base.raw" $((4 << 20))
qemu-img create -q -f qcow2 "$T/base.qcow2" 4M
qemu-io -f qcow2 -c 'write -P 0x77 1M 64k' "$T/base.qcow2" >/dev/null
for fmt in raw qcow2; do
  img=$T/over.$fmt.qcow2
  "$TOOL" "$img" $((4 << 20)) "$T/base.$fmt" "$fmt" || fail "qcow2_create over $fmt failed"
  qcow2_check_clean "$img" "overlay over $fmt"
  assert_eq "$(info_field "$img" backing-filename)" "$T/base.$fmt" "backing file over $fmt"
  assert_eq "$(info_field "$img" backing-filename-format)" "$fmt" "backing format over $fmt"
  qemu-img compare -q "$img" "$T/base.$fmt" || fail "overlay over $fmt differs from its base"
  cp "$T/base.$fmt" "$T/copy.$fmt"
  for io in 'write -P 0x33 65536 512' 'write -P 0x44 3000000 200000' 'write -z 0 4096'; do
    qemu-io -f qcow2 -c "$io" "$img" >/dev/null || fail "qemu-io $io over $fmt"
    qemu-io -f "$fmt" -c "$io" "$T/copy.$fmt" >/dev/null || fail "qemu-io $io on the copy"
  done
  qcow2_check_clean "$img" "overlay over $fmt after writes"
  qemu-img compare -q -f qcow2 -F "$fmt" "$img" "$T/copy.$fmt" ||
    fail "overlay over $fmt after writes differs from the base with the same writes"
done
cmp -s "$T/base.raw" "$T/copy.raw" && fail "the writes changed nothing (the comparison proves nothing)"

# O_EXCL: an existing file is left as it was
cp "$T/base.raw" "$T/exists"
! "$TOOL" "$T/exists" 1048576 2>"$T/err" || fail "qcow2_create overwrote an existing file"
grep -q "File exists" "$T/err" || fail "qcow2_create on an existing file: $(cat "$T/err")"
cmp -s "$T/exists" "$T/base.raw" || fail "qcow2_create changed an existing file"
# a backing file without its format is refused (QEMU >= 6.1 follows none)
! "$TOOL" "$T/nofmt.qcow2" 1048576 "$T/base.raw" "" 2>/dev/null ||
  fail "qcow2_create named a backing file without its format"
[ ! -e "$T/nofmt.qcow2" ] || fail "a refused qcow2_create left a file behind"
pass "qcow2_create makes images qemu-img checks clean, with and without backing files"
