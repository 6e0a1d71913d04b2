#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rbd block status: NBD_CMD_BLOCK_STATUS / base:allocation on an RBD
# export comes from librbd's object map (rbd_diff_iterate2, whole objects) when the image
# has fast-diff, and agrees with `rbd diff --whole-object` run beside diskgate; REQ_ONE
# gives exactly the first extent (a stopped map is not extended to the end); zeroing whole
# objects turns them into holes; without fast-diff the export reports all data.
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"

M=$((1 << 20))
rbdc create --size 64M rbd/bs
rbdc info rbd/bs | grep "fast-diff" >/dev/null || fail "rbd create's default features lack fast-diff"
rbd_serve rbd:rbd/bs

# check_map LABEL [IMAGE]: libnbd's full map and qemu-img map vs `rbd diff --whole-object`
# of IMAGE (default rbd/bs; 64 MiB).
check_map() {
  rbdc diff --whole-object --format json "${2:-rbd/bs}" >"$T/diff.json"
  qemu-img map --output=json "$DG_UNIX" >"$T/qmap.json"
  $PY - "$DG_UNIX" "$T/diff.json" "$T/qmap.json" "$1" <<'PYEOF' || fail "$1: maps differ"
import json, sys, nbd
uri, diff, qmap, label = sys.argv[1:]
size = 64 << 20
# expected: data where rbd diff says the object exists, hole|zero elsewhere
want, cur = [], 0
for d in sorted(json.load(open(diff)), key=lambda d: d["offset"]):
    if d["offset"] > cur:
        want.append((d["offset"] - cur, 3))
    want.append((d["length"], 0))
    cur = d["offset"] + d["length"]
if cur < size:
    want.append((size - cur, 3))
merged = []
for ln, fl in want:
    if merged and merged[-1][1] == fl:
        merged[-1] = (merged[-1][0] + ln, fl)
    else:
        merged.append((ln, fl))
h = nbd.NBD(); h.add_meta_context("base:allocation"); h.connect_uri(uri)
got, off = [], 0
while off < size:
    ents = []
    h.block_status(size - off, off, lambda c, o, e, err: ents.extend(e) or 0)
    for i in range(0, len(ents), 2):
        ln, fl = ents[i], ents[i + 1]
        if got and got[-1][1] == fl:
            got[-1] = (got[-1][0] + ln, fl)
        else:
            got.append((ln, fl))
        off += ln
print(label, "map:", got)
assert got == merged, f"NBD map {got} != rbd diff {merged}"
q = [(e["length"], 0 if e["data"] else 3) for e in json.load(open(qmap))]
assert q == merged, f"qemu-img map {q} != rbd diff {merged}"
PYEOF
  pass "$1: NBD block status and qemu-img map agree with rbd diff"
}

check_map "empty image"
$PY - "$DG_UNIX" <<'PYEOF' || fail "writes"
import sys, nbd
h = nbd.NBD(); h.connect_uri(sys.argv[1])
M = 1 << 20
h.pwrite(b"a" * 4096, 0)                 # object 0
h.pwrite(b"b" * 8192, 12 * M + 4096)     # object 3
h.pwrite(b"c" * 512, 28 * M + 512)       # object 7
h.flush()
PYEOF
check_map "three objects written"

# REQ_ONE from inside the first hole: exactly the hole up to object 3 (a map stopped by a
# full buffer must not be extended to the end of the range).
$PY - "$DG_UNIX" <<'PYEOF' || fail "REQ_ONE"
import sys, nbd
h = nbd.NBD(); h.add_meta_context("base:allocation"); h.connect_uri(sys.argv[1])
M = 1 << 20
for off, want in ((4 * M, [8 * M, 3]), (12 * M, [4 * M, 0]), (20 * M, [8 * M, 3]),
                  (32 * M, [32 * M, 3])):
    got = []
    h.block_status(64 * M - off, off, lambda c, o, e, err: got.extend(e) or 0,
                   nbd.CMD_FLAG_REQ_ONE)
    assert got == want, f"REQ_ONE at {off}: {got}, expected {want}"
PYEOF
pass "REQ_ONE: one extent, ending where the object map changes"

$PY - "$DG_UNIX" <<'PYEOF' || fail "zero"
import sys, nbd
h = nbd.NBD(); h.connect_uri(sys.argv[1])
h.zero(4 << 20, 12 << 20)   # the whole of object 3
assert h.pread(8192, (12 << 20) + 4096) == bytes(8192)
PYEOF
check_map "object 3 zeroed"
dg_stop

# A clone: the parent's data counts as data (include_parent), the clone's own writes too.
rbdc snap create rbd/bs@base >/dev/null 2>&1
rbdc snap protect rbd/bs@base
rbdc clone rbd/bs@base rbd/child
rbd_serve rbd:rbd/child
$PY -c 'import sys, nbd; h = nbd.NBD(); h.connect_uri(sys.argv[1]); h.pwrite(b"d" * 4096, 20 << 20); h.flush()' "$DG_UNIX"
check_map "clone with its own write" rbd/child
dg_stop

# Without fast-diff: every range reported as data (the server's fallback), reads still work.
rbdc create --size 16M --image-feature layering rbd/plain
rbd_serve rbd:rbd/plain
nbdinfo --map "$DG_UNIX" >"$T/plain.map"
assert_eq "$(awk '{ print $1, $2, $3 }' "$T/plain.map")" "0 16777216 0" "map without fast-diff"
dg_stop
pass "no fast-diff: all data"
