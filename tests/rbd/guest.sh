#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A QEMU guest whose disk is an RBD image served by diskgate over TCP (the gateway set-up of
# docs/rbd.md). The guest (tests/guest/run-guest.sh) makes ext4 on its virtio disk, writes
# files of known content (some shipped from the host, some made in the guest), syncs, checks
# them after dropping its caches, unmounts and powers off. Then diskgate is killed with
# SIGKILL, and the host checks the cluster's copy, bypassing diskgate: `rbd export`,
# `e2fsck -fn` clean, every file read back with debugfs has the expected SHA-256. The same
# bytes read back through a new (read-only) diskgate. A negative control corrupts one byte
# of big.bin in a copy of the export and requires the check to fail.
#
# diskgate runs with librbd's writeback cache active from the start and a dirty age longer
# than the guest's run (CEPH_ARGS below): the guest's writes stay in librbd's memory (up to
# its 16 MiB dirty target) until the guest's own flushes (sync, unmount) make diskgate
# flush librbd, and the SIGKILL discards whatever they did not cover. So the check also
# fails if the guest's FLUSHes do not reach the cluster.
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"
source "$SRCDIR/tests/guest/ext4lib.sh"

RUN_GUEST=$SRCDIR/tests/guest/run-guest.sh
for tool in e2fsck debugfs /bin/busybox sha256sum qemu-system-x86_64; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/deps.sh test)"
done
IMAGE_DIR=$("$SRCDIR/scripts/guest-image.sh" --with e2fsprogs) || fail "guest-image.sh failed"

# ---- the expected files ----------------------------------------------------------------------
FILES=(hello.txt odd.bin big.bin dir/pattern.bin lines.txt)
GEN_HELLO="printf 'hello from a guest on rbd\n'"
GEN_PATTERN='head -c 2097152 /dev/zero | tr "\0" R'
GEN_LINES="busybox awk 'BEGIN { for (i = 0; i < 60000; i++) printf \"rbd line %06d\\n\", i }'"
EXP=$T/expected
mkdir -p "$EXP/dir"
(
  cd "$EXP" || exit 1
  eval "$GEN_HELLO" >hello.txt
  eval "$GEN_PATTERN" >dir/pattern.bin
  eval "$GEN_LINES" >lines.txt
)
ext4_expected

ext4_task "$T/task.sh" dgrbd dir <<EOF
$GEN_HELLO >hello.txt
cp /data/odd.bin /data/big.bin .
$GEN_PATTERN >dir/pattern.bin
$GEN_LINES >lines.txt
EOF

# ---- serve, boot ---------------------------------------------------------------------------
rbdc create --size 128M rbd/disk
export CEPH_ARGS="--rbd-cache-policy writeback --rbd-cache-writethrough-until-flush false \
--rbd-cache-max-dirty-age 600"
rbd_serve rbd:rbd/disk
unset CEPH_ARGS
start=$SECONDS
rc=0
"$RUN_GUEST" --image-dir "$IMAGE_DIR" --task "$T/task.sh" --nbd "$DG_TCP" --timeout 240 \
  --file "$EXP/odd.bin:/data/odd.bin" --file "$EXP/big.bin:/data/big.bin" || rc=$?
echo "guest run: $((SECONDS - start)) s, exit $rc"
[ "$rc" -eq 0 ] || { cat "$DG_LOG" >&2; fail "the guest task failed (exit $rc)"; }
kill -0 "$DG_PID" 2>/dev/null || fail "diskgate exited while the guest ran"
kill -KILL "$DG_PID"
wait "$DG_PID" 2>/dev/null || true
if grep -E '^diskgate: (error|warning):' "$DG_LOG"; then
  fail "diskgate logged errors or warnings while serving the guest (above)"
fi

# ---- check the cluster's copy (tests/guest/ext4lib.sh) ----------------------------------------
rbdc export --no-progress rbd/disk "$T/export.img"
ext4_check_image "$T/export.img" || fail "rbd export does not hold what the guest wrote"
pass "rbd export after kill -9: e2fsck clean; ${#FILES[@]} files + SHA256SUMS match"

rbd_serve --read-only rbd:rbd/disk
nbdcopy "$DG_UNIX" "$T/through-dg.img"
cmp "$T/through-dg.img" "$T/export.img" || fail "a new diskgate serves other bytes than rbd export"
dg_stop
pass "a new diskgate serves the same bytes"

# Negative control: one byte of big.bin's data changed in a copy must fail the check.
ext4_negative_control "$T/export.img" "$T/corrupt.img"
