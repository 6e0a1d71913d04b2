#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `rbd resize` while diskgate serves the image: connections made after the resize see the
# new size, and I/O past the old end works; connections made before keep working within
# the size they were given; data below the old end is intact.
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"

OLD=$((64 * 1024 * 1024))
NEW=$((128 * 1024 * 1024))
rbdc create --size 64M rbd/img
rbd_serve rbd:rbd/img
assert_eq "$(nbdinfo --size "$DG_TCP")" "$OLD" "size before the resize"

mkrandom "$T/tail.bin" 65536
# A connection that stays open across the resize, with the old size.
$PY - "$DG_UNIX" "$T/tail.bin" "$OLD" "$NEW" "$CEPH_CONF" <<'PYEOF' || fail "resize while serving"
import nbd, subprocess, sys, time
uri, tail_path, old, new, conf = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
tail = open(tail_path, "rb").read()
h = nbd.NBD(); h.connect_uri(uri)
assert h.get_size() == old
h.pwrite(tail, old - len(tail)); h.flush()

subprocess.run(["timeout", "120", "rbd", "-c", conf, "resize", "--size", str(new >> 20) + "M",
                "rbd/img"], check=True, stderr=subprocess.DEVNULL)

# A new connection sees the new size (allow librbd's header watch a moment).
for i in range(50):
    h2 = nbd.NBD(); h2.connect_uri(uri)
    if h2.get_size() == new:
        break
    h2.shutdown(); time.sleep(0.1)
else:
    sys.exit(f"new connections still see size {h2.get_size()}, expected {new}")
print(f"new connection sees {new} bytes after {i} retries")
assert h2.pread(len(tail), old - len(tail)) == tail, "data before the old end changed"
assert h2.pread(65536, old) == bytes(65536), "grown area not zero"
pattern = bytes(range(256)) * 256
h2.pwrite(pattern, old + 4096, nbd.CMD_FLAG_FUA)
h2.pwrite(pattern, new - len(pattern))
assert h2.pread(len(pattern), old + 4096) == pattern, "read past the old end"
assert h2.pread(len(pattern), new - len(pattern)) == pattern, "read at the new end"
# A read spanning the old end.
got = h2.pread(8192, old - 4096)
assert got == tail[-4096:] + bytes(4096), "read across the old end"
h2.flush(); h2.shutdown()

# The old connection still works within its own (old) size.
assert h.pread(len(tail), old - len(tail)) == tail
h.pwrite(b"\x11" * 4096, 0); assert h.pread(4096, 0) == b"\x11" * 4096
h.shutdown()
PYEOF
assert_eq "$(nbdinfo --size "$DG_TCP")" "$NEW" "nbdinfo --size after the resize"
pass "resize seen by new connections; I/O past the old end works; old connection fine"

# The size is read and stored in one step (rbd.c size_refresh): with new connections
# arriving all the time (each NBD_OPT_GO refreshes the size) while the image is resized and
# snapshotted (a header change that keeps the size), each change is logged once, and the
# size never goes back (a refresh that read the old size never stores it after the header
# watch stored the new one).
# size_is BYTES: a new connection sees BYTES (asked anew at each call of wait_until)
size_is() { [ "$(nbdinfo --size "$DG_TCP")" = "$1" ]; }
( while :; do nbdinfo --size "$DG_UNIX" >/dev/null 2>&1 || true; done ) &
goers=$!
sizes=(128)
for mb in 192 256 320 384; do
  rbdc resize --size "${mb}M" rbd/img 2>/dev/null || fail "rbd resize to ${mb}M"
  rbdc snap create "rbd/img@s$mb" || fail "rbd snap create @s$mb"
  wait_until 30 size_is $((mb << 20)) || fail "new connections do not see ${mb}M"
  sizes+=("$mb")
done
sleep 1
kill "$goers"; wait "$goers" 2>/dev/null || true
want=""
for ((i = 0; i + 1 < ${#sizes[@]}; i++)); do
  want+="size changed: $((sizes[i] << 20)) -> $((sizes[i + 1] << 20)) bytes;"
done
got=$(grep -o 'size changed: [0-9]* -> [0-9]* bytes' "$DG_LOG" | sed 1d | tr '\n' ';')
assert_eq "$got" "$want" "the size changes logged (after the first)"
pass "resizes under a stream of new connections: each logged once, in order"
dg_stop
