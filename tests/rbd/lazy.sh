#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# rbd lazy attach: `diskgate serve rbd:...` connects to the cluster and
# opens the image only when some client's NBD_OPT_GO (or INFO) names the export, never at
# start-up or for connections that merely connect, list exports or stall. Measured from the
# outside: diskgate's TCP connections to the monitor and OSD (ss), and its thread count
# (librados starts about 17 threads). A failed open answers NBD_REP_ERR_UNKNOWN, keeps the
# server up, and is retried by a later NBD_OPT_GO; concurrent first GOs open it once.
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"

# cluster_conns PID: diskgate's established TCP connections to the cluster (ports 3300,
# 6789 for the monitor, 6800+ for the OSD); the test's clients use the Unix socket.
cluster_conns() { ss -tnpH state established | grep -c "pid=$1," || true; }
threads() { awk '/^Threads:/ { print $2 }' "/proc/$1/status"; }

rbd_serve --export vm rbd:rbd/later
grep -q "opened at the first NBD_OPT_GO" "$DG_LOG" || { cat "$DG_LOG" >&2; fail "start-up log"; }
t0=$(threads "$DG_PID")

# Connections that never get to NBD_OPT_GO: 8 that stall, 8 that list the exports and
# ask for the meta contexts, then abort.
$PY - "$DG_SOCK" <<'PYEOF' || fail "listing clients"
import socket, sys, nbd
stalled = []
for _ in range(8):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); stalled.append(s)
for _ in range(8):
    h = nbd.NBD(); h.set_opt_mode(True)
    h.connect_unix(sys.argv[1])
    names = []
    h.opt_list(lambda name, desc: names.append(name) or 0)
    assert names == ["vm"], names
    h.opt_abort()
for s in stalled:
    s.close()
PYEOF
sleep 0.5
assert_eq "$(cluster_conns "$DG_PID")" 0 "cluster connections before any NBD_OPT_GO"
t1=$(threads "$DG_PID")
assert_eq "$t1" "$t0" "thread count before any NBD_OPT_GO"
pass "start-up, 8 stalled and 8 listing connections: no cluster connection, $t1 threads"

# The image does not exist yet: GO fails with NBD_REP_ERR_UNKNOWN (libnbd: "server has no
# export named"); the server stays up.
rc=0; nbdinfo --size "nbd+unix:///vm?socket=$DG_SOCK" >"$T/err" 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "nbdinfo succeeded on a missing image"
grep -q "has no export named .vm." "$T/err" || { cat "$T/err" >&2; fail "error text"; }
grep -q "cannot open rbd:rbd/later" "$DG_LOG" || { cat "$DG_LOG" >&2; fail "no log line"; }
kill -0 "$DG_PID" || fail "diskgate exited after a failed open"
pass "a failed open: NBD_REP_ERR_UNKNOWN, one log line, server still up"

# Created now: the next GO (after the 1 s retry hold-off) opens it.
rbdc create --size 64M rbd/later
sleep 1.2
assert_eq "$(nbdinfo --size "nbd+unix:///vm?socket=$DG_SOCK")" $((64 << 20)) "size after create"
[ "$(cluster_conns "$DG_PID")" -ge 1 ] || fail "no cluster connection after NBD_OPT_GO"
[ "$(threads "$DG_PID")" -gt "$t1" ] || fail "librados threads did not start"
pass "retried at the next NBD_OPT_GO: attached"
dg_stop

# Concurrent first GOs: one open, every client served.
rbd_serve --export vm rbd:rbd/later
pids=()
for i in 1 2 3 4 5 6; do
  nbdinfo --size "nbd+unix:///vm?socket=$DG_SOCK" >"$T/size.$i" &
  pids+=($!)
done
wait "${pids[@]}" # not a bare `wait`: diskgate is a child of this shell too
for i in 1 2 3 4 5 6; do
  assert_eq "$(cat "$T/size.$i")" $((64 << 20)) "concurrent client $i"
done
assert_eq "$(grep -c "rbd:rbd/later attached" "$DG_LOG")" 1 "opens for 6 concurrent clients"
dg_stop
pass "6 concurrent first clients: one open"

# A qcow2 image with the corrupt bit (incompatible_features bit 1, the u64 at byte 72),
# opened at the first NBD_OPT_GO: served read-only, and the remark that says why reaches
# the log when it attaches, as it does at start-up for a file.
qemu-img create -q -f qcow2 "$T/corrupt.qcow2" 16M
printf '\x00\x00\x00\x00\x00\x00\x00\x02' |
  dd of="$T/corrupt.qcow2" bs=1 seek=72 conv=notrunc status=none
rbdc import --no-progress "$T/corrupt.qcow2" rbd/corrupt
rbd_serve --export vm --format qcow2 rbd:rbd/corrupt
nbdinfo --is read-only "nbd+unix:///vm?socket=$DG_SOCK" || fail "a corrupt image is writable"
grep -q "export 'vm': warning: the qcow2 image's corrupt bit is set: served read-only" \
  "$DG_LOG" || { cat "$DG_LOG" >&2; fail "no corrupt-bit line at the lazy open"; }
dg_stop
pass "a lazily opened corrupt qcow2 image: read-only, and the log says why"

# SIGTERM while the first open waits for a monitor that does not answer (paused): the
# open cannot be interrupted, so shutdown gives up on it after its deadlines (1 + 5 + 5 s)
# and exits 0 with one line, instead of waiting for librados' own timeouts (minutes).
rbd_serve --export vm rbd:rbd/later
mon=$(awk '$2 == "ceph-mon" { print $1; exit }' "$CL/pids")
[ -n "$mon" ] || fail "no ceph-mon in $CL/pids"
kill -STOP "$mon"
timeout 60 nbdinfo --size "nbd+unix:///vm?socket=$DG_SOCK" >/dev/null 2>&1 &
client=$!
for _ in $(seq 1 50); do
  grep -q "opening rbd:rbd/later" "$DG_LOG" && break
  sleep 0.1
done
grep -q "opening rbd:rbd/later" "$DG_LOG" || { kill -CONT "$mon"; fail "the open did not start"; }
start=$SECONDS
kill -TERM "$DG_PID"
rc=0
timeout 30 tail --pid="$DG_PID" -f /dev/null || rc=$?
took=$((SECONDS - start))
kill -CONT "$mon"
wait "$client" 2>/dev/null || true
[ "$rc" -eq 0 ] || { cat "$DG_LOG" >&2; fail "diskgate still running 30 s after SIGTERM"; }
rc=0; wait "$DG_PID" || rc=$?
assert_eq "$rc" 0 "exit status after SIGTERM during a stalled open"
grep -q "still opening rbd:rbd/later" "$DG_LOG" || { cat "$DG_LOG" >&2; fail "no log line"; }
pass "SIGTERM during an open stalled on the monitor: exit 0 after ${took} s"
