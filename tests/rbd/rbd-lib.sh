# SPDX-License-Identifier: MIT
# tests/rbd/rbd-lib.sh: source after tests/lib.sh. Starts a throw-away Ceph cluster for this
# test script (scripts/ceph-cluster.sh, memstore, cephx) in a short temp dir and stops it on
# exit, after lib.sh has killed any diskgate it started. Sets CL (the cluster dir),
# CEPH_CONF (exported, so the rbd/ceph CLIs find the cluster) and the helpers below.
: "${SRCDIR:?SRCDIR must point at the source root}"
CEPH_CLUSTER_SH=$SRCDIR/scripts/ceph-cluster.sh
CL=$(mktemp -d /tmp/dgceph.XXXXXX)
DG_CLEANUP_EXTRA="\"$CEPH_CLUSTER_SH\" stop \"$CL\""
"$CEPH_CLUSTER_SH" start "$CL" || fail "the Ceph test cluster did not start"
export CEPH_CONF=$CL/ceph.conf

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
