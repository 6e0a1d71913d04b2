#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A block device the kernel reports in use is not served writable: a loop device that is
# mounted (ext4), then one another process holds open with O_EXCL, is refused with one line
# naming the device and exit status 2, and served with --read-only and with
# --allow-busy-device. An idle loop device is served writable, and is claimed while served:
# another O_EXCL open (mount, mkfs) gets EBUSY until the server stops.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 32M "$T/backing.img"
LOOP=$(losetup -f --show "$T/backing.img") || fail "losetup (needs root)"
mkdir "$T/mnt"
DG_CLEANUP_EXTRA='[ -n "${holder:-}" ] && kill "$holder" 2>/dev/null; umount "$T/mnt" 2>/dev/null; losetup -d "$LOOP" 2>/dev/null'

# excl_open: 0 when an O_EXCL open of $LOOP works now, 16 (EBUSY) when it is in use
excl_open() {
  $PY -c 'import os, sys
try:
    os.close(os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL))
except OSError as e:
    sys.exit(e.errno)' "$LOOP"
}
# refused WHY: a writable diskgate on $LOOP exits 2 with one line naming the device
refused() {
  local rc=0
  timeout 10 "$DISKGATE" serve --socket "$T/r.sock" "$LOOP" >"$T/out" 2>"$T/err" || rc=$?
  if [ "$rc" != 2 ] || [ -s "$T/out" ] || [ "$(wc -l <"$T/err")" != 1 ] ||
     ! grep -qF "$LOOP is in use" "$T/err" || ! grep -qF -- "--allow-busy-device" "$T/err"; then
    sed 's/^/    | /' "$T/err" >&2
    fail "$1: exit $rc (want 2 and one line naming $LOOP)"
  fi
}
# served WHY ARGS...: a diskgate with ARGS serves $LOOP, read-only or writable as ARGS say
served() {
  local why=$1 want; shift
  dg_start "$@" "$LOOP"
  want=$([[ " $* " == *" --read-only "* ]] && echo ro || echo rw)
  assert_eq "$(nbdinfo --is read-only "$DG_UNIX" && echo ro || echo rw)" "$want" "$why: served"
  assert_eq "$(nbdinfo --size "$DG_UNIX")" 33554432 "$why: the export's size"
  dg_stop
}

# an idle device: served writable, and claimed while served
assert_eq "$(excl_open; echo $?)" 0 "an O_EXCL open of the idle device"
dg_start "$LOOP"
assert_eq "$(nbdinfo --is read-only "$DG_UNIX" && echo ro || echo rw)" rw "the idle device"
assert_eq "$(excl_open || echo $?)" 16 "an O_EXCL open while diskgate serves the device"
dg_stop
assert_eq "$(excl_open; echo $?)" 0 "an O_EXCL open once diskgate has stopped"

# mounted
mkfs.ext4 -q -F "$LOOP"
mount "$LOOP" "$T/mnt" || fail "mount $LOOP"
refused "a mounted device"
served "a mounted device, --read-only" --read-only
served "a mounted device, --allow-busy-device" --allow-busy-device
umount "$T/mnt"

# held open with O_EXCL by another process
$PY -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)
print("held", flush=True)
time.sleep(120)' "$LOOP" >"$T/holder.out" &
holder=$!
wait_until 10 grep -q held "$T/holder.out" || fail "the O_EXCL holder did not start"
refused "a device open with O_EXCL by another process"
served "a held device, --read-only" --read-only
served "a held device, --allow-busy-device" --allow-busy-device
kill "$holder"; wait "$holder" 2>/dev/null || true
holder=""
served "the device once its holder has gone"
pass "a busy block device is refused unless --read-only or --allow-busy-device; an idle one is claimed while served"
