#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/guest/test-guest-ext4.sh: a real Linux guest uses a diskgate export as its disk.
#
# diskgate serves a 256 MiB sparse raw file; a QEMU guest (tests/guest/run-guest.sh) gets the
# export over the Unix socket as its virtio-blk disk, makes an ext4 file system on it, writes
# files of known content (a few bytes to a few MiB; some made in the guest, some shipped from
# the host), records their sha256sums on the file system, syncs, checks them after dropping
# its caches, and unmounts. Then, with the guest powered off and diskgate stopped, the host
# checks the image itself: `e2fsck -fn` must be clean and every file read back with debugfs
# must have the expected sha256 (the host knows each file's exact content: it made the shipped
# ones and makes the guest-made ones again with the same busybox). A negative control corrupts
# one data block of a copy of the image and requires that the same check fails.
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/guest/ext4lib.sh"

RUN_GUEST=$SRCDIR/tests/guest/run-guest.sh
for tool in e2fsck debugfs /bin/busybox sha256sum; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/deps.sh test)"
done

# The guest image (kernel + initramfs with e2fsprogs); built once and cached.
IMAGE_DIR=$("$SRCDIR/scripts/guest-image.sh" --with e2fsprogs) || fail "guest-image.sh failed"

# ---- the expected files, made on the host ----------------------------------------------------
# Names relative to the root of the guest's file system. Sizes: 15 B, 4097 B, 3 MiB + 1234 B,
# 1 MiB, 2 MiB, ~5.4 MiB.
FILES=(small.txt odd.bin big.bin zeros.bin dir/nested/pattern.bin lines.txt)
# Made in the guest and again here with the same commands (the guest has busybox's head, tr and
# awk; head and tr give the same bytes as coreutils', and awk is busybox's on both sides).
GEN_SMALL="printf 'hello diskgate\n'"
GEN_ZEROS='head -c 1048576 /dev/zero'
GEN_PATTERN='head -c 2097152 /dev/zero | tr "\0" Z'
GEN_LINES="busybox awk 'BEGIN { for (i = 0; i < 150000; i++) printf \"line %07d of the guest-ext4 test\\n\", i }'"
EXP=$T/expected
mkdir -p "$EXP/dir/nested"
(
  cd "$EXP" || exit 1
  eval "$GEN_SMALL" >small.txt
  eval "$GEN_ZEROS" >zeros.bin
  eval "$GEN_PATTERN" >dir/nested/pattern.bin
  eval "$GEN_LINES" >lines.txt
)
# Shipped to the guest as is (random bytes, odd sizes), and the list of sha256s.
ext4_expected

# ---- the guest's task ------------------------------------------------------------------------
ext4_task "$T/task.sh" dgtest dir/nested <<EOF
$GEN_SMALL >small.txt
cp /data/odd.bin /data/big.bin .
$GEN_ZEROS >zeros.bin
$GEN_PATTERN >dir/nested/pattern.bin
$GEN_LINES >lines.txt
EOF

# ---- serve, boot, stop -----------------------------------------------------------------------
IMG=$T/disk.raw
truncate -s 256M "$IMG"
dg_start "$IMG"
start=$SECONDS
rc=0
"$RUN_GUEST" --image-dir "$IMAGE_DIR" --task "$T/task.sh" --nbd "$DG_UNIX" --timeout 240 \
  --file "$EXP/odd.bin:/data/odd.bin" --file "$EXP/big.bin:/data/big.bin" || rc=$?
echo "guest run: $((SECONDS - start)) s, exit $rc"
[ "$rc" -eq 0 ] || { cat "$DG_LOG" >&2; fail "the guest task failed (exit $rc)"; }
dg_stop

# ---- check the image on the host (tests/guest/ext4lib.sh) -----------------------------------
ext4_check_image "$IMG" || fail "the image does not hold what the guest wrote"
pass "e2fsck clean; ${#FILES[@]} files + SHA256SUMS read back with debugfs match"

# Negative control: flip one byte of big.bin on a copy of the image; the check must now fail.
ext4_negative_control "$IMG" "$T/corrupt.raw"
