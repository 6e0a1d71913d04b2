#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A throw-away single-node Ceph cluster (one mon, one OSD, no mgr) for tests and benchmarks.
# Everything lives inside DIR: config, keyrings, mon and OSD data, logs, sockets, PIDs.
#
# Usage:
#   scripts/ceph-cluster.sh start DIR [--store memstore|bluestore]
#   scripts/ceph-cluster.sh stop DIR
#   scripts/ceph-cluster.sh env DIR          prints CEPH_CONF=DIR/ceph.conf
#   scripts/ceph-cluster.sh status DIR       exit 0 iff the cluster in DIR answers
#
# start: writes DIR/ceph.conf (cephx on: client.admin's key in DIR/ceph.client.admin.keyring),
#   starts ceph-mon and ceph-osd in the background (PIDs in DIR/pids), creates and initialises
#   pool "rbd", waits until the OSD is up and `rbd ls` works, and prints how long it took.
#   Mon ports: CEPH_MON_PORT_V2 (default 3300) and CEPH_MON_PORT_V1 (default 6789). When a
#   port was not given and its default is taken, a free port is chosen; a given port that is
#   taken is an error. Idempotent: on a DIR whose cluster already answers it only reports.
#   A failed start kills what it started, prints the daemons' log tails and removes DIR.
#   Store: memstore with page sets (default; RAM grows with data written) or bluestore on
#   a sparse 10 GiB file in DIR (CEPH_BLUESTORE_SIZE overrides) for tests writing gigabytes.
# stop: SIGKILLs only the PIDs recorded in DIR/pids (after checking each is still a ceph
#   daemon started with DIR/ceph.conf), waits for them to exit, and removes DIR.
#
# Keep DIR short: Unix socket paths (DIR/run/...asok) are limited to 107 bytes.
# Every ceph/rbd CLI call is wrapped in `timeout` (CEPH_CLI_TIMEOUT seconds, default 30).
# Needs: ceph-mon ceph-osd ceph-common uuid-runtime (scripts/deps.sh ceph), python3.
set -euo pipefail

prog=ceph-cluster.sh
die() { echo "$prog: $*" >&2; exit 1; }
usage() { echo "usage: $prog start|stop|env|status DIR [--store memstore|bluestore]" >&2; exit 2; }

[ $# -ge 2 ] || usage
cmd=$1
dir_arg=$2
shift 2
store=memstore
while [ $# -gt 0 ]; do
  case $1 in
    --store) [ $# -ge 2 ] || usage; store=$2; shift 2 ;;
    --store=*) store=${1#--store=}; shift ;;
    *) usage ;;
  esac
done
case $store in memstore|bluestore) ;; *) die "unknown store '$store' (memstore|bluestore)" ;; esac

[ -n "$dir_arg" ] && [ "$dir_arg" != "/" ] || die "refusing DIR '$dir_arg'"
DIR=$(realpath -m -- "$dir_arg")
[ "$DIR" != "/" ] || die "refusing DIR /"
CONF=$DIR/ceph.conf
MARK=$DIR/.diskgate-ceph-cluster   # marks a DIR this script owns (stop removes only those)
CLI_TIMEOUT=${CEPH_CLI_TIMEOUT:-30}

ceph_cli() { timeout "$CLI_TIMEOUT" ceph -c "$CONF" --connect-timeout 10 "$@"; }
rbd_cli() { timeout "$CLI_TIMEOUT" rbd -c "$CONF" "$@"; }

# port_free PORT: exit 0 if nothing listens on 127.0.0.1:PORT (and we may bind it).
port_free() {
  python3 - "$1" <<'EOF'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
EOF
}

# free_port: prints a port nothing listens on (chosen by the kernel).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# pick_port VAR DEFAULT: the port in $VAR if set (must be free), else DEFAULT if free, else any.
pick_port() {
  local var=$1 def=$2 val
  val=${!var:-}
  if [ -n "$val" ]; then
    port_free "$val" || die "$var=$val is in use on 127.0.0.1"
    echo "$val"
  elif port_free "$def"; then
    echo "$def"
  else
    free_port
  fi
}

# our_pid PID: exit 0 if PID is alive and was started with our ceph.conf.
our_pid() {
  local pid=$1 cmdline
  [ -r "/proc/$pid/cmdline" ] || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  case $cmdline in *"$CONF"*) return 0 ;; *) return 1 ;; esac
}

# kill_recorded: SIGKILL every recorded PID that is still ours, then wait for them to go.
kill_recorded() {
  local pid alive=() i
  [ -f "$DIR/pids" ] || return 0
  while read -r pid _; do
    [ -n "$pid" ] || continue
    if our_pid "$pid"; then
      kill -KILL "$pid" 2>/dev/null || true
      alive+=("$pid")
    fi
  done <"$DIR/pids"
  for i in $(seq 1 100); do
    local left=0
    for pid in "${alive[@]:-}"; do
      [ -n "$pid" ] && [ -e "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null \
        && left=1
    done
    [ $left -eq 0 ] && break
    sleep 0.05
  done
}

remove_dir() {
  # Only a DIR this script made (marker present) or an empty one.
  if [ -e "$MARK" ]; then
    rm -rf -- "$DIR"
  elif [ -d "$DIR" ]; then
    rmdir -- "$DIR" 2>/dev/null || true
  fi
}

cluster_answers() {
  [ -f "$CONF" ] && [ -s "$DIR/pids" ] || return 1
  local pid _
  while read -r pid _; do
    our_pid "$pid" || return 1
  done <"$DIR/pids"
  CEPH_CLI_TIMEOUT=10 ceph_cli osd dump 2>/dev/null | grep '^osd\.0 up' >/dev/null || return 1
  timeout 10 rbd -c "$CONF" ls rbd >/dev/null 2>&1
}

log_tails() {
  local f
  for f in "$DIR"/log/mon.a.log "$DIR"/log/osd.0.log "$DIR"/log/*.out; do
    [ -f "$f" ] || continue
    echo "---- $f (last 15 lines)" >&2
    tail -n 15 "$f" >&2 || true
  done
}

start_failed() {
  local rc=$?
  [ "$started_ok" = 1 ] && return 0
  echo "$prog: start failed (rc $rc); cleaning up $DIR" >&2
  log_tails
  kill_recorded
  remove_dir
  exit 1
}

write_conf() { # v2port v1port fsid
  local p2=$1 p1=$2 fsid=$3
  cat >"$CONF" <<EOF
# Written by scripts/ceph-cluster.sh: a throw-away test cluster. Every path is inside $DIR.
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$p2,v1:127.0.0.1:$p1]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $DIR/ceph.client.admin.keyring
run dir = $DIR/run
crash dir = $DIR/crash
pid file = $DIR/run/\$name.pid
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
mon cluster log file = $DIR/log/cluster.log
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
auth allow insecure global id reclaim = false
mon warn on pool no redundancy = false
mon mgr mkfs grace = 31536000
mon data avail warn = 2
mon data avail crit = 1
paxos propose interval = 0.1
osd objectstore = $store

[mon]
mon data = $DIR/mon
mon cluster log to file = true

[osd]
osd data = $DIR/osd
keyring = $DIR/osd/keyring
memstore page set = true
memstore page size = 4096
memstore device bytes = ${CEPH_MEMSTORE_BYTES:-8589934592}
bluestore block create = true
bluestore block size = ${CEPH_BLUESTORE_SIZE:-10737418240}
bluestore cache size = 128M
bluestore fsck on mkfs = false

[client]
admin socket = $DIR/run/\$cluster-\$name.\$pid.asok
log file = $DIR/log/\$cluster-\$name.\$pid.log
client mount timeout = 30
EOF
}

do_start() {
  local t0 t1 fsid p2 p1 uuid secret id i
  t0=$(date +%s.%N)

  if [ -e "$MARK" ]; then
    if cluster_answers; then
      echo "$prog: cluster in $DIR already running"
      return 0
    fi
    echo "$prog: stale cluster in $DIR: removing it" >&2
    kill_recorded
    rm -rf -- "$DIR"
  fi
  if [ -d "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
    die "$DIR exists and is not empty (not made by this script)"
  fi
  # The longest socket path: DIR/run/ceph-client.admin.<pid>.asok (pid up to 7 digits).
  local longest="$DIR/run/ceph-client.admin.4194304.asok"
  [ ${#longest} -le 107 ] || die "DIR too long for Unix sockets (${#longest} > 107 bytes): $DIR"
  for t in ceph-mon ceph-osd ceph ceph-authtool monmaptool rbd uuidgen python3 timeout; do
    command -v "$t" >/dev/null || die "missing $t (scripts/deps.sh ceph)"
  done

  p2=$(pick_port CEPH_MON_PORT_V2 3300)
  p1=$(pick_port CEPH_MON_PORT_V1 6789)
  [ "$p1" != "$p2" ] || p1=$(free_port)

  started_ok=0
  trap start_failed EXIT
  mkdir -p "$DIR"
  : >"$MARK"
  mkdir -p "$DIR/run" "$DIR/log" "$DIR/crash" "$DIR/mon" "$DIR/osd"
  : >"$DIR/pids"
  fsid=$(uuidgen)
  write_conf "$p2" "$p1" "$fsid"

  # Keys: mon. (mon data) and client.admin; the mon imports both at mkfs.
  ceph-authtool --create-keyring "$DIR/mkfs.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool --create-keyring "$DIR/ceph.client.admin.keyring" --gen-key -n client.admin \
    --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
  ceph-authtool "$DIR/mkfs.keyring" --import-keyring "$DIR/ceph.client.admin.keyring" >/dev/null
  chmod 600 "$DIR/mkfs.keyring" "$DIR/ceph.client.admin.keyring"

  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$p2,v1:127.0.0.1:$p1]" \
    "$DIR/monmap" >/dev/null
  timeout 60 ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" \
    --keyring "$DIR/mkfs.keyring" >"$DIR/log/mon-mkfs.out" 2>&1
  rm -f "$DIR/mkfs.keyring" "$DIR/monmap"

  ceph-mon -f -c "$CONF" -i a >"$DIR/log/mon.out" 2>&1 &
  echo "$! ceph-mon" >>"$DIR/pids"
  disown $!

  # The OSD: register it with its cephx secret, mkfs, start.
  uuid=$(uuidgen)
  secret=$(ceph-authtool --gen-print-key)
  printf '{"cephx_secret": "%s"}\n' "$secret" >"$DIR/osd/new.json"
  id=$(ceph_cli osd new "$uuid" -i "$DIR/osd/new.json")
  rm -f "$DIR/osd/new.json"
  [ "$id" = 0 ] || die "ceph osd new returned id '$id', expected 0"
  printf '[osd.0]\n\tkey = %s\n' "$secret" >"$DIR/osd/keyring"
  chmod 600 "$DIR/osd/keyring"
  timeout 120 ceph-osd -c "$CONF" -i 0 --mkfs --osd-uuid "$uuid" \
    >"$DIR/log/osd-mkfs.out" 2>&1
  ceph-osd -f -c "$CONF" -i 0 >"$DIR/log/osd.out" 2>&1 &
  echo "$! ceph-osd" >>"$DIR/pids"
  disown $!

  for i in $(seq 1 300); do
    if ceph_cli osd dump 2>/dev/null | grep '^osd\.0 up' >/dev/null; then
      break
    fi
    while read -r pid name; do
      our_pid "$pid" || die "$name (pid $pid) exited during start"
    done <"$DIR/pids"
    sleep 0.2
  done
  ceph_cli osd dump | grep '^osd\.0 up' >/dev/null || die "osd.0 did not come up"

  local out
  out=$(ceph_cli osd pool create rbd 8 8 2>&1) || die "pool create failed: $out"
  rbd_cli pool init rbd
  for i in $(seq 1 100); do
    rbd_cli ls rbd >/dev/null 2>&1 && break
    sleep 0.2
  done
  rbd_cli ls rbd >/dev/null || die "rbd ls does not work"

  started_ok=1
  trap - EXIT
  t1=$(date +%s.%N)
  printf '%s: cluster ready in %s s (%s, mon v2 %s v1 %s, conf %s)\n' \
    "$prog" "$(LC_ALL=C awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" \
    "$store" "$p2" "$p1" "$CONF"
}

do_stop() {
  if [ ! -d "$DIR" ]; then
    return 0
  fi
  [ -e "$MARK" ] || [ -z "$(ls -A "$DIR")" ] || die "$DIR was not made by $prog; not touching it"
  kill_recorded
  remove_dir
}

case $cmd in
  start) do_start ;;
  stop) do_stop ;;
  env)
    [ -f "$CONF" ] || die "no cluster config at $CONF"
    echo "CEPH_CONF=$CONF"
    ;;
  status) cluster_answers ;;
  *) usage ;;
esac
