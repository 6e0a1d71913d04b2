# SPDX-License-Identifier: MIT
# tests/rbd/rbd-lib.sh: source after tests/lib.sh. Gives the test script a throw-away Ceph
# cluster (scripts/ceph-cluster.sh, memstore, cephx) shared by the rbd tests of one build
# directory: the first test starts it (about 10 s), each later one finds it running and
# resets it (about 2 s): pool "rbd" deleted and made again empty, every other pool deleted,
# the cluster-wide config a test set (`ceph config set`) removed, the daemons resumed. A test
# holds the cluster alone for its whole run (a lock); a keeper process stops the cluster once
# no test has held it for RBD_IDLE_S seconds (default 15), so none is left behind a suite.
# A cluster that does not answer, or cannot be reset, is replaced by a fresh one.
# Sets CL (the cluster dir), CEPH_CONF (exported, so the rbd/ceph CLIs find the cluster) and
# the helpers below.
: "${SRCDIR:?SRCDIR must point at the source root}"
CEPH_CLUSTER_SH=$SRCDIR/scripts/ceph-cluster.sh
# Short (Unix socket paths in it are limited to 107 bytes) and one per user and build dir.
CL=/tmp/dgceph.$(printf '%s:%s' "$(id -u)" "${BUILDDIR:-$SRCDIR}" | sha256sum | cut -c1-12)
CEPH_CONF=$CL/ceph.conf
export CEPH_CONF

# rbd_lock: waits (up to 10 minutes) until this test holds $CL.lock, and keeps it until the
# test's shell has exited. The holder is a process of its own, so that no process the test
# leaves behind keeps the lock (none inherits its descriptor).
rbd_lock() {
  rm -f "$T/rbd.locked"
  flock -w 600 "$CL.lock" sh -c \
    ': >"$1"; while kill -0 "$2" 2>/dev/null; do sleep 0.2; done' sh "$T/rbd.locked" "$$" \
    </dev/null >/dev/null 2>&1 &
  wait_until 600 test -e "$T/rbd.locked" || fail "the Ceph test cluster stayed locked for 10 minutes"
}

# rbd_cluster_reset: makes the running cluster as a fresh one is (see the top); fails
# (non-zero) when it cannot.
rbd_cluster_reset() {
  local pid _ pools p cmds=('config rm osd osd_pool_default_read_lease_ratio')
  [ -e "$CL/.diskgate-ceph-cluster" ] && [ -s "$CL/pids" ] || return 1
  while read -r pid _; do
    grep -qF "$CL/ceph.conf" "/proc/$pid/cmdline" 2>/dev/null || return 1
    kill -CONT "$pid" || return 1   # a test that failed while it had paused a daemon
  done <"$CL/pids"
  pools=$(timeout 20 rados -c "$CEPH_CONF" lspools) || return 1
  for p in $pools; do cmds+=("osd pool rm $p $p --yes-i-really-really-mean-it"); done
  cmds+=('osd pool create rbd 8 8')
  # one ceph CLI (interactive mode, commands on stdin): one start of its Python for all
  printf '%s\n' "${cmds[@]}" |
    timeout 30 ceph -c "$CEPH_CONF" --connect-timeout 10 >"$T/ceph-reset.log" 2>&1 ||
    return 1
  timeout 30 rbd -c "$CEPH_CONF" pool init rbd || return 1
  [ "$(timeout 20 rados -c "$CEPH_CONF" lspools)" = rbd ] &&
    [ -z "$(timeout 20 rbd -c "$CEPH_CONF" ls rbd)" ]
}

# rbd_keeper_start: the process (in a session of its own, holding none of the test's
# descriptors) that stops the cluster after RBD_IDLE_S seconds without a holder of $CL.lock.
rbd_keeper_start() {
  local kp
  kp=$(cat "$CL.keeper" 2>/dev/null) || kp=
  if [ -n "$kp" ] && grep -qF "rbd-keeper $CL" "/proc/$kp/cmdline" 2>/dev/null; then
    return 0
  fi
  setsid bash -c '
    cl=$1 stop=$2 idle_max=$3 idle=0
    trap '\''[ "$(cat "$cl.keeper" 2>/dev/null)" = $$ ] && rm -f "$cl.keeper"'\'' EXIT
    while sleep 1; do
      [ -e "$cl/.diskgate-ceph-cluster" ] || exit 0
      if flock -n "$cl.lock" true; then idle=$((idle + 1)); else idle=0; fi
      if [ "$idle" -ge "$idle_max" ]; then
        flock -n "$cl.lock" "$stop" stop "$cl" && exit 0
        idle=0
      fi
    done' "rbd-keeper $CL" "$CL" "$CEPH_CLUSTER_SH" "${RBD_IDLE_S:-15}" \
    </dev/null >/dev/null 2>&1 &
  echo "$!" >"$CL.keeper"
}

rbd_lock
if rbd_cluster_reset; then
  echo "the Ceph test cluster in $CL: reused, reset"
else
  "$CEPH_CLUSTER_SH" stop "$CL" >/dev/null 2>&1 || true
  # its daemons in a session of their own: a test killed for its timeout leaves them to the
  # keeper
  setsid -w "$CEPH_CLUSTER_SH" start "$CL" </dev/null || fail "the Ceph test cluster did not start"
fi
rbd_keeper_start

# rbdc ARGS...: the rbd CLI against the test cluster, bounded in time.
rbdc() { timeout 120 rbd -c "$CEPH_CONF" "$@"; }

# rbd_serve [serve options...] SPEC: dg_start for an RBD image, with --ceph-conf.
rbd_serve() { dg_start --ceph-conf "$CEPH_CONF" "$@"; }

# sha FILE: the file's SHA-256.
sha() { sha256sum "$1" | cut -d' ' -f1; }

# cephc ARGS...: the ceph CLI against the test cluster, bounded in time.
cephc() { timeout 60 ceph -c "$CEPH_CONF" --connect-timeout 10 "$@"; }

# osd_pid: the PID of the cluster's only OSD (from DIR/pids, as ceph-cluster.sh recorded it).
osd_pid() {
  local pid
  pid=$(awk '$2 == "ceph-osd" { print $1; exit }' "$CL/pids")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || fail "no running ceph-osd recorded in $CL/pids"
  echo "$pid"
}
