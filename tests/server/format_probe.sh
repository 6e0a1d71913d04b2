#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --format and probing, on what needs no qcow2 engine: a raw regular file is probed and the
# log says "raw image (probed)"; --format raw serves a qcow2 file's own bytes, the log saying
# "raw image" (not probed) and no qcow2 warning; a loop device over a qcow2 file is raw
# without --format (devices are not probed) and refused as a malformed image with --format
# qcow2 when it is not one; a regular file that is not qcow2 given --format qcow2 is refused
# in one line, exit 2; a bad --format value or --l2-cache-size is a usage error (exit 2).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/a.img"
dg_start --read-only "$T/a.img"
dg_stop
grep -qF "serving $T/a.img as export '': 1048576 bytes, raw image (probed)," "$DG_LOG" ||
  fail "the log does not name the probed raw format: $(cat "$DG_LOG")"

qemu-img create -q -f qcow2 "$T/b.qcow2" 64M
size=$(stat -c %s "$T/b.qcow2")
dg_start --read-only --format raw "$T/b.qcow2"
assert_eq "$(nbdinfo --size "$DG_UNIX")" "$size" "--format raw: the qcow2 file's own bytes"
dg_stop
grep -qF "$size bytes, raw image, sync" "$DG_LOG" || fail "--format raw log: $(cat "$DG_LOG")"
assert_eq "$(grep -c "qcow2" "$DG_LOG" | tr -d ' ')" 1 "lines naming qcow2 (only the path's)"

# --format qcow2 on a file that is not one: one line, exit 2
mkrandom "$T/c.img" 1048576
rc=0
"$DISKGATE" serve --socket "$T/c.sock" --format qcow2 "$T/c.img" >"$T/c.out" 2>&1 || rc=$?
assert_eq "$rc" 2 "exit status of --format qcow2 on random bytes"
# one refusal line (the qcow2 node may log the field it refused just before it)
assert_eq "$(grep -c "^diskgate serve: " "$T/c.out")" 1 "refusal lines"
grep -q "^diskgate serve: $T/c.img: " "$T/c.out" || fail "refusal line: $(cat "$T/c.out")"
[ ! -e "$T/c.sock" ] || fail "a refused image left a socket"

# usage errors
for bad in "--format vmdk" "--format" "--l2-cache-size 12X" "--l2-cache-size 1K" \
           "--l2-cache-size 99999999999999999999" "--snapshot --read-only"; do
  rc=0
  # shellcheck disable=SC2086
  "$DISKGATE" serve --socket "$T/u.sock" $bad "$T/a.img" >"$T/u.out" 2>&1 || rc=$?
  assert_eq "$rc" 2 "exit status of '$bad'"
  assert_eq "$(wc -l <"$T/u.out" | tr -d ' ')" 1 "lines for '$bad'"
done
dg_start --read-only --l2-cache-size 16M --format auto "$T/a.img"
dg_stop

# a loop device over the qcow2 file: raw unless --format qcow2 (devices are not probed)
LOOP=$(losetup -f --show "$T/b.qcow2") || fail "losetup (needs root)"
DG_CLEANUP_EXTRA="losetup -d $LOOP"
dg_start --read-only "$LOOP"
dsize=$(blockdev --getsize64 "$LOOP")
assert_eq "$(nbdinfo --size "$DG_UNIX")" "$dsize" "a loop device over a qcow2 file is raw"
dg_stop
grep -qF "$dsize bytes, raw image, sync" "$DG_LOG" || fail "loop device log: $(cat "$DG_LOG")"
LOOP2=$(losetup -f --show "$T/c.img") || fail "losetup (needs root)"
DG_CLEANUP_EXTRA="losetup -d $LOOP; losetup -d $LOOP2"
rc=0
"$DISKGATE" serve --socket "$T/d.sock" --read-only --format qcow2 "$LOOP2" >"$T/d.out" 2>&1 || rc=$?
assert_eq "$rc" 2 "exit status of --format qcow2 on a device of random bytes"
pass "formats: probed raw, explicit raw, devices raw, refusals in one line"
