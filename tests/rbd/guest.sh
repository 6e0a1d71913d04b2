#!/usr/bin/env bash
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
mkrandom "$EXP/odd.bin" 4097
mkrandom "$EXP/big.bin" $((3 * 1024 * 1024 + 1234))
(cd "$EXP" && sha256sum "${FILES[@]}") >"$T/SHA256SUMS.expected"

cat >"$T/task.sh" <<EOF
set -eu
echo "task: disk \$DISK"
mkfs.ext4 -q -F -L dgrbd "\$DISK"
mkdir -p /mnt/t
mount -t ext4 "\$DISK" /mnt/t
cd /mnt/t
mkdir -p dir
$GEN_HELLO >hello.txt
cp /data/odd.bin /data/big.bin .
$GEN_PATTERN >dir/pattern.bin
$GEN_LINES >lines.txt
sha256sum ${FILES[*]} >SHA256SUMS
sync
echo 3 >/proc/sys/vm/drop_caches
sha256sum -c SHA256SUMS
cd /
umount /mnt/t
echo "task: done"
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

# ---- check the cluster's copy ------------------------------------------------------------------
# check_image IMAGE: e2fsck clean, every file and SHA256SUMS as expected; returns non-zero
# (saying why) instead of failing, for the negative control.
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
    echo "check: /SHA256SUMS differs from the expected list" >&2
    bad=1
  fi
  return $bad
}
rbdc export --no-progress rbd/disk "$T/export.img"
check_image "$T/export.img" || fail "rbd export does not hold what the guest wrote"
pass "rbd export after kill -9: e2fsck clean; ${#FILES[@]} files + SHA256SUMS match"

rbd_serve --read-only rbd:rbd/disk
nbdcopy "$DG_UNIX" "$T/through-dg.img"
cmp "$T/through-dg.img" "$T/export.img" || fail "a new diskgate serves other bytes than rbd export"
dg_stop
pass "a new diskgate serves the same bytes"

# Negative control: one byte of big.bin's data changed in a copy must fail the check.
cp --sparse=always "$T/export.img" "$T/corrupt.img"
blk=$(debugfs -R "bmap /big.bin 300" "$T/corrupt.img" 2>/dev/null)
bsize=$(debugfs -R "stats" "$T/corrupt.img" 2>/dev/null | awk -F: '/^Block size/ { print $2 + 0 }')
[[ "$blk" =~ ^[0-9]+$ ]] && [ "$blk" -gt 0 ] && [ "${bsize:-0}" -gt 0 ] ||
  fail "negative control: cannot locate big.bin's data (block '$blk', block size '$bsize')"
old=$(od -An -tu1 -j $((blk * bsize + 100)) -N1 "$T/corrupt.img" | tr -d ' ')
printf "\\$(printf '%03o' $(((old + 1) % 256)))" |
  dd of="$T/corrupt.img" bs=1 seek=$((blk * bsize + 100)) conv=notrunc status=none
if check_image "$T/corrupt.img" 2>"$T/negative.txt"; then
  fail "negative control: a corrupted image passed the check"
fi
grep -q 'big.bin' "$T/negative.txt" ||
  { cat "$T/negative.txt" >&2; fail "negative control: wrong complaint"; }
pass "negative control: a one-byte corruption of big.bin is caught"
