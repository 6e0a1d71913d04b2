# SPDX-License-Identifier: MIT
# tests/guest/ext4lib.sh: the guest ext4 check shared by tests/guest/test-guest-ext4.sh and
# tests/rbd/guest.sh. Source it after tests/lib.sh (it uses T, fail, pass, mkrandom, flip_byte).
#
# The caller sets FILES (paths relative to the root of the guest's file system) and EXP (the
# folder of the expected files), makes the files the guest makes itself in $EXP, then:
#   ext4_expected                 adds the shipped ones (odd.bin, big.bin: random bytes, odd
#                                 sizes) and lists every file's sha256 in $T/SHA256SUMS.expected
#   ext4_task TASK LABEL DIR <CMDS  writes the guest's task (see below)
#   ext4_check_image IMAGE        e2fsck clean, every file and SHA256SUMS as expected
#   ext4_negative_control IMAGE COPY  the same check must fail on a corrupted copy

# ext4_expected: odd.bin (4097 B) and big.bin (3 MiB + 1234 B) of random bytes in $EXP (the
# task gets them with --file EXP/X:/data/X), then $T/SHA256SUMS.expected for FILES.
ext4_expected() {
  mkrandom "$EXP/odd.bin" 4097
  mkrandom "$EXP/big.bin" $((3 * 1024 * 1024 + 1234))
  (cd "$EXP" && sha256sum "${FILES[@]}") >"$T/SHA256SUMS.expected"
}

# ext4_task TASK LABEL DIR: writes to TASK the guest's task: mkfs.ext4 (label LABEL) on $DISK,
# mount, mkdir -p DIR, the commands read from stdin (run in the file system's root: they
# make FILES), then SHA256SUMS of FILES on the file system, sync, a check after dropping the
# caches, unmount.
ext4_task() {
  local task=$1 label=$2 dir=$3
  {
    cat <<EOF
set -eu
echo "task: disk \$DISK"
mkfs.ext4 -q -F -L $label "\$DISK"
mkdir -p /mnt/t
mount -t ext4 "\$DISK" /mnt/t
cd /mnt/t
mkdir -p $dir
EOF
    cat
    cat <<EOF
sha256sum ${FILES[*]} >SHA256SUMS
sync
# Read everything back through the disk, not the page cache.
echo 3 >/proc/sys/vm/drop_caches
sha256sum -c SHA256SUMS
cd /
umount /mnt/t
echo "task: done"
EOF
  } >"$task"
}

# ext4_check_image IMAGE: e2fsck clean, every file and SHA256SUMS as expected. Returns non-zero
# (and says why on stderr) instead of failing, so that the negative control can use it too.
ext4_check_image() {
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

# ext4_negative_control IMAGE COPY: flips one byte in the middle of big.bin's data in COPY (a
# copy of IMAGE); ext4_check_image must then fail, naming big.bin (the check would pass
# vacuously if debugfs or the hashing were broken). Fails the test otherwise.
ext4_negative_control() {
  local img=$1 copy=$2 blk bsize
  cp --sparse=always "$img" "$copy"
  blk=$(debugfs -R "bmap /big.bin 300" "$copy" 2>/dev/null)
  bsize=$(debugfs -R "stats" "$copy" 2>/dev/null | awk -F: '/^Block size/ { print $2 + 0 }')
  [[ "$blk" =~ ^[0-9]+$ ]] && [ "$blk" -gt 0 ] && [ "${bsize:-0}" -gt 0 ] ||
    fail "negative control: cannot locate big.bin's data (block '$blk', block size '$bsize')"
  flip_byte "$copy" $((blk * bsize + 100))
  if ext4_check_image "$copy" 2>"$T/negative.txt"; then
    fail "negative control: a corrupted image passed the check"
  fi
  grep -q 'big.bin' "$T/negative.txt" ||
    { cat "$T/negative.txt" >&2; fail "negative control: wrong complaint"; }
  pass "negative control: a one-byte corruption of big.bin is caught"
}
