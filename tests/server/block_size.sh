#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C07: advertised block size (NBD_INFO_BLOCK_SIZE, asked for by libnbd during NBD_OPT_GO):
#  - a plain image file -> minimum 512;
#  - a 4Kn loop device (losetup --sector-size 4096) -> minimum 4096, with and without
#    --cache direct;
#  - and always valid per the spec: min a power of 2 <= 64 KiB, preferred a power of 2
#    >= max(min, 512), maximum >= preferred. nbdinfo --json agrees with libnbd.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

truncate -s 64M "$T/plain.img" "$T/4kn.img"
LOOP=$(losetup --sector-size 4096 -f --show "$T/4kn.img")
DG_CLEANUP_EXTRA="losetup -d $LOOP"
assert_eq "$(blockdev --getss "$LOOP")" 4096 "logical sector size of $LOOP"

check_min() { # expected-minimum what
  $PY - "$DG_UNIX" "$1" "$2" <<'PY' || fail "block sizes of $2"
import sys, nbd
uri, want, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
h = nbd.NBD()
h.connect_uri(uri)
mn, pref, mx = (h.get_block_size(k) for k in (nbd.SIZE_MINIMUM, nbd.SIZE_PREFERRED,
                                              nbd.SIZE_MAXIMUM))
print(f"{what}: minimum {mn} preferred {pref} maximum {mx}")
assert mn == want, f"{what}: minimum block size {mn}, expected {want}"
pow2 = lambda v: v > 0 and v & (v - 1) == 0
assert pow2(mn) and mn <= 65536, f"minimum {mn} is not a power of 2 <= 64 KiB"
assert pow2(pref) and pref >= max(mn, 512), f"preferred {pref} invalid (minimum {mn})"
assert mx >= pref, f"maximum {mx} < preferred {pref}"
PY
  local j
  j=$(nbdinfo --json "$DG_UNIX" | $PY -c 'import json,sys; print(json.load(sys.stdin)["exports"][0]["block_size_minimum"])')
  assert_eq "$j" "$1" "nbdinfo --json block_size_minimum of $2"
}

dg_start "$T/plain.img"; check_min 512 "plain file"; dg_stop
dg_start "$LOOP"; check_min 4096 "4Kn loop device"; dg_stop
dg_start --cache direct "$LOOP"; check_min 4096 "4Kn loop device, --cache direct"; dg_stop
pass "C07 advertised block size"
