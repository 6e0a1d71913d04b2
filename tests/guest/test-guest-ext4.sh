#!/usr/bin/env bash
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
# Shipped to the guest as is (random bytes, odd sizes).
mkrandom "$EXP/odd.bin" 4097
mkrandom "$EXP/big.bin" $((3 * 1024 * 1024 + 1234))
(cd "$EXP" && sha256sum "${FILES[@]}") >"$T/SHA256SUMS.expected"

# ---- the guest's task ------------------------------------------------------------------------
cat >"$T/task.sh" <<EOF
set -eu
echo "task: disk \$DISK"
mkfs.ext4 -q -F -L dgtest "\$DISK"
mkdir -p /mnt/t
mount -t ext4 "\$DISK" /mnt/t
cd /mnt/t
mkdir -p dir/nested
$GEN_SMALL >small.txt
cp /data/odd.bin /data/big.bin .
$GEN_ZEROS >zeros.bin
$GEN_PATTERN >dir/nested/pattern.bin
$GEN_LINES >lines.txt
sha256sum ${FILES[*]} >SHA256SUMS
sync
# Read everything back through the disk, not the page cache.
echo 3 >/proc/sys/vm/drop_caches
sha256sum -c SHA256SUMS
cd /
umount /mnt/t
echo "task: done"
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

# ---- check the image on the host -------------------------------------------------------------
# check_image IMAGE: e2fsck clean, every file and SHA256SUMS as expected. Returns non-zero (and
# says why) instead of failing, so that the negative control can use it too.
check_image() {
  local img=$1 f got want bad=0 out
  if ! out=$(e2fsck -fn "$img" 2>&1); then
    echo "$out" | tail -n 20 >&2
    echo "check: e2fsck -fn reports problems in $img" >&2
    return 1
  fi
  for f in "${FILES[@]}"; do
    want=$(sha256sum <"$EXP/$f" | cut -d' ' -f1)
    got=$(debugfs -R "cat /$f" "$img" 2>/dev/null | sha256sum | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
      echo "check: /$f: sha256 $got, expected $want" >&2
      bad=1
    fi
  done
  if ! debugfs -R "cat /SHA256SUMS" "$img" 2>/dev/null | cmp -s - "$T/SHA256SUMS.expected"; then
    echo "check: /SHA256SUMS differs from the expected list:" >&2
    debugfs -R "cat /SHA256SUMS" "$img" 2>/dev/null | diff - "$T/SHA256SUMS.expected" >&2 || true
    bad=1
  fi
  return $bad
}
check_image "$IMG" || fail "the image does not hold what the guest wrote"
pass "e2fsck clean; ${#FILES[@]} files + SHA256SUMS read back with debugfs match"

# Negative control: flip one byte in the middle of big.bin's data on a copy of the image; the
# same check must now fail (it would pass vacuously if debugfs or the hashing were broken).
cp --sparse=always "$IMG" "$T/corrupt.raw"
blk=$(debugfs -R "bmap /big.bin 300" "$T/corrupt.raw" 2>/dev/null)
bsize=$(debugfs -R "stats" "$T/corrupt.raw" 2>/dev/null | awk -F: '/^Block size/ { print $2 + 0 }')
[[ "$blk" =~ ^[0-9]+$ ]] && [ "$blk" -gt 0 ] && [ "${bsize:-0}" -gt 0 ] ||
  fail "negative control: cannot locate big.bin's data (block '$blk', block size '$bsize')"
old=$(od -An -tu1 -j $((blk * bsize + 100)) -N1 "$T/corrupt.raw" | tr -d ' ')
printf "\\$(printf '%03o' $(((old + 1) % 256)))" |
  dd of="$T/corrupt.raw" bs=1 seek=$((blk * bsize + 100)) conv=notrunc status=none
if check_image "$T/corrupt.raw" 2>"$T/negative.txt"; then
  fail "negative control: a corrupted image passed the check"
fi
grep -q 'big.bin' "$T/negative.txt" || { cat "$T/negative.txt" >&2; fail "negative control: wrong complaint"; }
pass "negative control: a one-byte corruption of big.bin is caught"
