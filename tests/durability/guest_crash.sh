#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Guest-level crash check: a QEMU guest (tests/guest/run-guest.sh; TCG where KVM does not
# work) runs a metadata-heavy load on ext4 over diskgate (--sync full): in a loop, three
# parallel untars of a tree of ~1500 small files and directories, deletion of the previous
# round's trees, small files written with fsync, and `sync`. At a random moment once the load
# is running (then the first moment when diskgate holds 1 to 16 completed but unsynced writes),
# the host "loses power" and QEMU is killed with kill -9:
# the export is served through the fault-injecting backing, which is told to `crash`, so the
# image keeps what diskgate had synced plus a random half of the writes it had completed but
# not synced (`crash keep=50`: a disk may have written any subset of those). Then, on the
# host: the ext4 journal is replayed (`e2fsck -E journal_only`, what the kernel does at the
# next mount) and `e2fsck -fn` must find the file system clean.
# DG_GUEST_ROUNDS rounds (default 2; docs/durability.md records 10), each continuing on the
# file system the previous round left (replayed). The round's console log is kept on failure.
# DG_GUEST_MIN_ITERS (default 2): load iterations before the random moment.
# DG_GUEST_NEGATIVE=1 adds DG_GUEST_NEGATIVE_ROUNDS (default 3) rounds under --sync none
# (FLUSH acknowledged without a sync) and reports whether e2fsck notices (by hand:
# docs/durability.md; not a pass/fail condition).
source "$SRCDIR/tests/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
HERE=$SRCDIR/tests/durability
RUN_GUEST=$SRCDIR/tests/guest/run-guest.sh
ROUNDS=${DG_GUEST_ROUNDS:-2}
DG_GUEST_NEGATIVE_ROUNDS=${DG_GUEST_NEGATIVE_ROUNDS:-3}
for tool in e2fsck mkfs.ext4 tar; do
  command -v "$tool" >/dev/null || fail "$tool not found"
done
IMAGE_DIR=$("$SRCDIR/scripts/guest-image.sh" --with e2fsprogs) || fail "guest-image.sh failed"
export DISKGATE_TEST_FAULTS=$T/ctl

# The tree the guest unpacks: 30 directories x 50 files of 0..6 KiB, plus nested dirs.
mkdir -p "$T/tree"
$PY - "$T/tree" <<'PY'
import os, random, sys
root, rnd = sys.argv[1], random.Random(7)
for d in range(30):
    p = os.path.join(root, f"d{d:02}", "sub", f"s{d % 5}")
    os.makedirs(p)
    for f in range(50):
        open(os.path.join(p if f % 3 else os.path.dirname(p), f"f{f:03}"), "wb").write(
            os.urandom(rnd.randrange(0, 6 * 1024)))
PY
tar -C "$T/tree" -cf "$T/tree.tar" .

cat >"$T/task.sh" <<'EOF'
set -eu
mount -t ext4 "$DISK" /mnt
cd /mnt
mkdir -p small
i=0
while :; do
  i=$((i + 1))
  for j in 1 2 3; do
    (mkdir -p "w$i.$j" && tar -xf /data/tree.tar -C "w$i.$j") &
  done
  [ $i -gt 1 ] && rm -rf "w$((i - 1)).1" "w$((i - 1)).2" "w$((i - 1)).3" &
  for k in 1 2 3 4 5 6 7 8; do
    dd if=/dev/urandom of="small/f$i.$k" bs=512 count=$((k * 3)) conv=fsync 2>/dev/null
  done
  rm -f small/f$((i - 1)).*
  wait
  sync
  echo "dg-progress $i"
done
EOF

IMG=$T/disk.img
truncate -s 192M "$IMG"
mkfs.ext4 -q -F -L dgcrash "$IMG"
negative=0
rounds=$ROUNDS
[ -n "${DG_GUEST_NEGATIVE:-}" ] && rounds=$((ROUNDS + DG_GUEST_NEGATIVE_ROUNDS))
for round in $(seq 1 "$rounds"); do
  sync_mode=full
  [ "$round" -gt "$ROUNDS" ] && sync_mode=none
  dg_start --sync "$sync_mode" "faulty:$IMG"
  # syncs take 0-30 ms to report back, writes 0-3 ms to start: wider windows in which writes
  # complete while a sync runs (the group-commit case) and in which writes are unsynced
  PYTHONPATH=$HERE $PY -c 'import sys; from dgdur import Faults; f = Faults(sys.argv[1]); [f.cmd(c) for c in sys.argv[2:]]' \
    "$DISKGATE_TEST_FAULTS" "rule delay-done flush ms=30 jitter=1" "rule delay write ms=3 jitter=1" ||
    fail "round $round: faulty rules"
  console=$T/console.$round
  rm -f "$T/qemu.pid"
  "$RUN_GUEST" --image-dir "$IMAGE_DIR" --task "$T/task.sh" --nbd "$DG_UNIX" --timeout 600 \
    --file "$T/tree.tar:/data/tree.tar" --qemu-pid-file "$T/qemu.pid" -v >"$T/guest.out" 2>"$console" &
  guest=$!
  DG_PIDS+=("$guest")
  # wait for the load to run (two full iterations), then pick a moment within the next 4 s
  want=${DG_GUEST_MIN_ITERS:-2} start=$SECONDS
  until grep -aqs "dg-progress $want" "$console"; do
    kill -0 "$guest" 2>/dev/null || { tail -30 "$console" >&2; fail "round $round: the guest ended early"; }
    [ $((SECONDS - start)) -lt 400 ] || { tail -30 "$console" >&2; fail "round $round: no progress"; }
    sleep 0.2
  done
  sleep "$((RANDOM % 4)).$((RANDOM % 10))"
  qpid=$(cat "$T/qemu.pid")
  # The host loses power at the next moment when some completed writes are not yet synced
  # (most of the time a TCG guest computes and has nothing in flight), and the guest stops
  # dead with it.
  PYTHONPATH=$HERE $PY - "$DISKGATE_TEST_FAULTS" "$RANDOM" <<'PY' || fail "round $round: crash command"
import sys, time
from dgdur import Faults
f = Faults(sys.argv[1])
target = 1 + int(sys.argv[2]) % 16       # unsynced writes to wait for: 1 to 16
deadline = time.time() + 10
while time.time() < deadline:
    st = dict(kv.split("=") for kv in f.cmd("stats"))
    if int(st["pending"]) >= target:
        break
    if int(st["pending"]) > 0 and time.time() > deadline - 5:
        break                            # after 5 s, any unsynced write will do
    time.sleep(0.002)
print(f"crash with {st['pending']} completed writes not synced ->",
      f.raw(f"crash keep=50 seed={sys.argv[2]}"))
PY
  kill -9 "$qpid" 2>/dev/null || true
  rc=0; wait "$DG_PID" 2>/dev/null || rc=$?
  [ "$rc" -eq 137 ] || fail "round $round: diskgate exited $rc, expected SIGKILL"
  wait "$guest" 2>/dev/null || true
  grep -o "simulated power loss.*" "$DG_LOG" | sed "s/^/round $round: /" || true
  iters=$(grep -ao "dg-progress [0-9]*" "$console" | awk '{print $2}' | sort -n | tail -1 || true)
  # what the next mount would do (replay the journal, nothing more), then the check
  cp --sparse=always "$IMG" "$T/check.img"
  jrc=0; e2fsck -y -E journal_only "$T/check.img" >"$T/replay.$round" 2>&1 || jrc=$?
  damage=
  if grep -q "^Pass 1" "$T/replay.$round"; then
    damage="the file system is marked with errors (the replay step had to check it in full)"
    cp "$T/replay.$round" "$T/fsck.$round"
  elif [ "$jrc" -gt 1 ]; then
    damage="the journal replay failed (e2fsck exit $jrc)"
    cp "$T/replay.$round" "$T/fsck.$round"
  elif ! e2fsck -fn "$T/check.img" >"$T/fsck.$round" 2>&1; then
    damage="e2fsck -fn finds the file system damaged"
  fi
  if [ "$sync_mode" = none ]; then
    if [ -z "$damage" ]; then
      echo "negative round $round (--sync none): e2fsck -fn clean this time"
    else
      negative=$((negative + 1))
      echo "negative round $round (--sync none): $damage, as expected:"
      awk '!/^(e2fsck|Pass|$)/ && n < 3 { print; n++ }' "$T/fsck.$round"
    fi
    cp --sparse=always "$IMG" "$T/check.img"  # continue from a clean state: fsck -y the copy
    e2fsck -fy "$T/check.img" >/dev/null 2>&1 || true
    mv "$T/check.img" "$IMG"
    continue
  fi
  if [ -n "$damage" ]; then
    awk 'NF && n < 40 { print; n++ }' "$T/fsck.$round" >&2
    cp "$console" "/tmp/guest-crash-console.$round" 2>/dev/null || true
    cp --sparse=always "$IMG" "/tmp/guest-crash-image.$round" 2>/dev/null || true
    fail "round $round: after the crash, $damage (image kept in /tmp/guest-crash-image.$round)"
  fi
  echo "round $round: killed after $iters load iterations; journal replay exit $jrc; e2fsck -fn clean"
  mv "$T/check.img" "$IMG"
done
pass "$ROUNDS guest crashes + simulated power loss under --sync full: ext4 clean every time"
if [ -n "${DG_GUEST_NEGATIVE:-}" ]; then
  echo "negative control: --sync none damaged the file system in $negative of ${DG_GUEST_NEGATIVE_ROUNDS} rounds"
fi
