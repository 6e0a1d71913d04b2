#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rbd interop: real clients (nbdcopy, nbdinfo, qemu-img) against `diskgate serve rbd:...`.
# Data copied in through NBD comes back out through NBD and through `rbd export`
# (bypassing diskgate) unchanged; the export's size and flags are what the backing offers.
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"

SIZE=$((256 * 1024 * 1024))
rbdc create --size 256M rbd/img
rbd_serve rbd:rbd/img

# Size and transmission flags.
assert_eq "$(nbdinfo --size "$DG_TCP")" "$SIZE" "nbdinfo --size"
for cap in write flush fua trim zero multi-conn; do
  nbdinfo --can "$cap" "$DG_UNIX" || fail "nbdinfo --can $cap: not advertised"
done
rc=0; nbdinfo --is read-only "$DG_UNIX" || rc=$?
assert_eq "$rc" 2 "nbdinfo --is read-only (exit status; 2 = false)"
rc=0; nbdinfo --is rotational "$DG_UNIX" || rc=$?
assert_eq "$rc" 2 "nbdinfo --is rotational (exit status; 2 = false)"
nbdinfo --json "$DG_TCP" >"$T/info.json"
$PY - "$T/info.json" <<'PYEOF' || fail "nbdinfo --json: unexpected block sizes"
import json, sys
e = json.load(open(sys.argv[1]))["exports"][0]
mn, pref = e.get("block_size_minimum"), e.get("block_size_preferred")
print("block sizes: minimum", mn, "preferred", pref, "maximum", e.get("block_size_maximum"),
      "description", repr(e.get("description")))
if mn is not None:
    assert mn == 512, mn
if pref is not None:
    assert pref & (pref - 1) == 0 and 512 <= pref <= 32 << 20, pref
PYEOF
pass "size $SIZE and flags write flush fua trim zero multi-conn, not read-only"

# nbdcopy a random file in (64 MiB at offset 0; the rest stays zero), then out again.
mkrandom "$T/in.bin" $((64 * 1024 * 1024))
nbdcopy "$T/in.bin" "$DG_UNIX"
nbdcopy "$DG_TCP" "$T/out.bin"
assert_eq "$(stat -c %s "$T/out.bin")" "$SIZE" "size of the copy out"
head -c $((64 * 1024 * 1024)) "$T/out.bin" >"$T/out-head.bin"
assert_eq "$(sha "$T/out-head.bin")" "$(sha "$T/in.bin")" "SHA-256 of the first 64 MiB copied out"
cmp -s -i $((64 * 1024 * 1024)) -n $((192 * 1024 * 1024)) "$T/out.bin" /dev/zero \
  || fail "the rest of the image is not zero"
pass "nbdcopy in then out: same SHA-256, rest zero"

# The cluster holds the same bytes: rbd export (librbd directly) vs the NBD export.
rbdc export --no-progress rbd/img "$T/export.img"
qemu-img compare -f raw -F raw "$DG_TCP" "$T/export.img" >/dev/null \
  || fail "qemu-img compare: the NBD export differs from rbd export"
assert_eq "$(sha "$T/export.img")" "$(sha "$T/out.bin")" "SHA-256 of rbd export"
pass "qemu-img compare NBD export vs rbd export: identical"

# A second, overlapping write through another connection is seen by a third (one image
# handle for all connections).
mkrandom "$T/patch.bin" $((1024 * 1024))
nbdcopy "$T/patch.bin" "$DG_TCP"
$PY - "$DG_UNIX" "$T/patch.bin" <<'PYEOF' || fail "a later connection does not see the patch"
import nbd, sys
h = nbd.NBD(); h.connect_uri(sys.argv[1])
want = open(sys.argv[2], "rb").read()
assert h.pread(len(want), 0) == want
h.shutdown()
PYEOF
pass "write through one connection is read back through another"

dg_stop
pass "diskgate exits 0 on SIGTERM"
