#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# diskgate's image lock against QEMU's (block/file-posix.c: one shared OFD lock per byte,
# 100 + bit for a permission held, 200 + bit for one not shared). A --read-only diskgate
# must not make read-only QEMU users fail with 'Failed to get "consistent read" lock'
# (qemu-img compare, qemu-io -r, qemu-nbd -r), as a lock over the whole file would. It locks
# as a read-only QEMU user that keeps the image stable:
#  - read-only diskgate first: QEMU readers open the image; QEMU writers do not; a second
#    read-only diskgate starts; a writable diskgate does not (exit 2);
#  - a QEMU writer first: neither a read-only nor a writable diskgate starts (exit 2), as
#    qemu-io -r and qemu-nbd -r refuse an image in use without -U;
#  - a QEMU reader (qemu-nbd -r) first: a read-only diskgate starts;
#  - --read-only --force-share (QEMU's -U): only "consistent read" is held, so it starts
#    beside a QEMU writer and serves what that writer wrote, and a QEMU writer opens the
#    image beside it; a writable diskgate does not start beside that writer.
# A writable diskgate against QEMU's tools and qemu-nbd: qemu_lock_matrix.sh.
source "$SRCDIR/tests/lib.sh"

for tool in qemu-img qemu-io qemu-nbd nbdinfo; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/deps.sh test)"
done
img=$T/disk.img
truncate -s 16M "$img"
qemu_io() { qemu-io -f raw "$@" "$img" >"$T/qemu-io.out" 2>&1; }
# starts: PID of a diskgate that must still run after 1 s (it started)
serve_bg() { "$DISKGATE" serve "$@" >"$T/bg.log" 2>&1 & bg=$!; DG_PIDS+=("$bg"); sleep 1; kill -0 "$bg" 2>/dev/null; }
refused() { # ARGS...: diskgate serve ARGS must exit 2 naming the lock
  local rc=0
  "$DISKGATE" serve "$@" >"$T/refused.log" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] && grep -q "already served by another process" "$T/refused.log"
}

# 1. a read-only diskgate first
dg_start --read-only "$img"
qemu-img compare -f raw -F raw "$img" "$img" >/dev/null 2>"$T/cmp.err" ||
  { cat "$T/cmp.err" >&2; fail "qemu-img compare beside a read-only diskgate"; }
qemu_io -r -c 'read 0 512' || { cat "$T/qemu-io.out" >&2; fail "qemu-io -r beside a read-only diskgate"; }
qemu-nbd -r -f raw -k "$T/q.sock" "$img" 2>"$T/qn.err" & qn=$!
wait_until 5 test -S "$T/q.sock" || { cat "$T/qn.err" >&2; fail "qemu-nbd -r beside a read-only diskgate"; }
assert_eq "$(nbdinfo --size "nbd+unix:///?socket=$T/q.sock")" 16777216 "qemu-nbd -r's export size"
kill "$qn" 2>/dev/null || true; wait "$qn" 2>/dev/null || true  # qemu-nbd ends with its first client
if qemu_io -c 'write 0 512'; then fail "qemu-io wrote an image a read-only diskgate serves"; fi
grep -q '"write" lock' "$T/qemu-io.out" || { cat "$T/qemu-io.out" >&2; fail "qemu-io's refusal does not name the write lock"; }
serve_bg --read-only --socket "$T/ro2.sock" "$img" || { cat "$T/bg.log" >&2; fail "a second read-only diskgate"; }
kill "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true
refused --socket "$T/rw.sock" "$img" || { cat "$T/refused.log" >&2; fail "a writable diskgate beside a read-only one"; }
assert_eq "$(nbdinfo --size "$DG_UNIX")" 16777216 "the read-only diskgate still serves"
dg_stop

# 2. a QEMU writer first
qemu-nbd -f raw -k "$T/w.sock" "$img" 2>"$T/qw.err" & qw=$!
wait_until 5 test -S "$T/w.sock" || { cat "$T/qw.err" >&2; fail "qemu-nbd (writable) did not start"; }
refused --read-only --socket "$T/ro3.sock" "$img" || { cat "$T/refused.log" >&2; fail "a read-only diskgate beside a QEMU writer"; }
refused --socket "$T/rw3.sock" "$img" || { cat "$T/refused.log" >&2; fail "a writable diskgate beside a QEMU writer"; }
kill "$qw" 2>/dev/null || true; wait "$qw" 2>/dev/null || true

# 3. a QEMU reader first
qemu-nbd -r -f raw -k "$T/q2.sock" "$img" 2>"$T/qn2.err" & qn=$!
wait_until 5 test -S "$T/q2.sock" || { cat "$T/qn2.err" >&2; fail "qemu-nbd -r did not start"; }
serve_bg --read-only --socket "$T/ro4.sock" "$img" || { cat "$T/bg.log" >&2; fail "a read-only diskgate beside qemu-nbd -r"; }
kill "$bg" "$qn" 2>/dev/null || true; wait "$bg" "$qn" 2>/dev/null || true

# 4. --read-only --force-share: only QEMU's "consistent read" byte
qemu-nbd -t -f raw -k "$T/w5.sock" "$img" 2>"$T/qw5.err" & qw=$!
DG_PIDS+=("$qw")   # -t: it stays until killed, also when a check fails
wait_until 5 test -S "$T/w5.sock" || { cat "$T/qw5.err" >&2; fail "qemu-nbd (writable) did not start"; }
serve_bg --read-only --force-share --socket "$T/fs.sock" "$img" ||
  { cat "$T/bg.log" >&2; fail "a --read-only --force-share diskgate beside a QEMU writer"; }
grep -q "shared with writers (--force-share)" "$T/bg.log" || { cat "$T/bg.log" >&2; fail "no log line says the image is shared with writers"; }
refused --socket "$T/rw5.sock" "$img" || { cat "$T/refused.log" >&2; fail "a writable diskgate beside a QEMU writer and a --force-share diskgate"; }
qemu-io -f raw -c 'write -P 0x5a 8192 4096' "nbd+unix:///?socket=$T/w5.sock" >"$T/qemu-io.out" 2>&1 ||
  { cat "$T/qemu-io.out" >&2; fail "writing through qemu-nbd beside a --force-share diskgate"; }
kill "$qw" 2>/dev/null || true; wait "$qw" 2>/dev/null || true
qemu_io -c 'write -P 0x6b 12288 4096' || { cat "$T/qemu-io.out" >&2; fail "qemu-io writing the image beside a --force-share diskgate"; }
"$PY" - "nbd+unix:///?socket=$T/fs.sock" <<'PY' || fail "the --force-share diskgate does not serve what QEMU wrote"
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
assert h.is_read_only(), "not read-only"
got = h.pread(8192, 8192)
assert got == b"\x5a" * 4096 + b"\x6b" * 4096, got[:8] + b"..." + got[4096:4104]
h.shutdown()
PY
kill "$bg" 2>/dev/null || true; wait "$bg" 2>/dev/null || true

pass "image locks with QEMU: read-only diskgate shares with QEMU readers, not writers; --force-share shares with writers"
