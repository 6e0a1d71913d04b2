#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A restart no client notices: QEMU's own NBD client (qemu-io, reconnect-delay=10) writes a
# 4 KiB pattern every few milliseconds, each block its own, while the server gets SIGTERM,
# is down 0.5 s and starts again on the same socket or port. Every write must succeed (0
# "failed" lines: a request answered NBD_ESHUTDOWN would be one, as QEMU retries only
# requests lost with the connection) and be on disk afterwards. diskgate over a Unix socket
# and TCP with both engines; then the same script against qemu-nbd, the peer, which must
# also show 0 failures (so that the comparison is real). The runs are mostly waits (qemu-io's
# sleeps between writes, the server's downtime): each engine's pair of runs, and qemu-nbd's,
# run at once (dg_spawn), each job with its own image, socket and port.
. "$SRCDIR/tests/lib.sh"
command -v qemu-io >/dev/null || { echo "SKIP: no qemu-io"; exit 77; }
command -v qemu-nbd >/dev/null || { echo "SKIP: no qemu-nbd"; exit 77; }

NW=300          # writes per run, one 4 KiB block each

# server_start KIND ENGINE: starts diskgate (KIND dg) or qemu-nbd (KIND qemu) on $SOCK and
# $PORT; sets SRV_PID and waits until it accepts.
server_start() {
  local log=$T/server.$BASHPID.$((++nstarts)).log
  if [ "$1" = dg ]; then
    "$DISKGATE" serve --socket "$SOCK" --listen "127.0.0.1:$PORT" --engine "$2" \
      "$DISK" >"$log" 2>&1 &
    SRV_PID=$!
    DG_PIDS+=("$SRV_PID")
    wait_until 20 grep -q "listening on nbd:" "$log" || { cat "$log" >&2; fail "diskgate did not start"; }
  else
    # one qemu-nbd per listener: it takes either a socket or a port
    if [ "$3" = unix ]; then
      qemu-nbd -t -f raw --cache=writeback -k "$SOCK" "$DISK" >"$log" 2>&1 &
    else
      qemu-nbd -t -f raw --cache=writeback -b 127.0.0.1 -p "$PORT" "$DISK" >"$log" 2>&1 &
    fi
    SRV_PID=$!
    DG_PIDS+=("$SRV_PID")
    wait_until 20 nbdinfo --size "$(uri "$3")" >/dev/null 2>&1 ||
      { cat "$log" >&2; fail "qemu-nbd did not start"; }
  fi
}
nstarts=0
uri() { if [ "$1" = unix ]; then echo "nbd+unix:///?socket=$SOCK"; else echo "nbd://127.0.0.1:$PORT/"; fi; }

# run KIND ENGINE VIA: the writer across a restart; fails unless every write succeeded and
# is on disk.
run() {
  local kind=$1 engine=$2 via=$3 opts rc
  dd if=/dev/zero of="$DISK" bs=1M count=4 conv=notrunc status=none
  if [ "$via" = unix ]; then
    opts="driver=nbd,server.type=unix,server.path=$SOCK,reconnect-delay=10"
  else
    opts="driver=nbd,server.type=inet,server.host=127.0.0.1,server.port=$PORT,reconnect-delay=10"
  fi
  server_start "$kind" "$engine" "$via"
  local args=() i
  for ((i = 0; i < NW; i++)); do
    args+=(-c "write -P $((i % 255 + 1)) $((i * 4096)) 4k" -c "sleep 3")
  done
  qemu-io --image-opts "$opts" "${args[@]}" >"$QIO" 2>&1 &
  local qio=$!
  sleep 0.5
  kill -0 "$qio" 2>/dev/null || { cat "$QIO" >&2; fail "qemu-io ended before the restart ($kind $engine $via)"; }
  kill -TERM "$SRV_PID"
  rc=0; wait "$SRV_PID" || rc=$?
  [ "$kind" = qemu ] || assert_eq "$rc" 0 "diskgate's exit status after SIGTERM ($engine, $via)"
  kill -0 "$qio" 2>/dev/null || fail "qemu-io ended while the server was down ($kind $engine $via)"
  sleep 0.5
  server_start "$kind" "$engine" "$via"
  rc=0; wait "$qio" || rc=$?
  local failed
  failed=$(grep -c -i "fail\|error" "$QIO" || true)
  local wrote
  wrote=$(grep -c "^wrote 4096/4096 bytes" "$QIO" || true)
  kill -TERM "$SRV_PID"; wait "$SRV_PID" || true
  [ "$failed" -eq 0 ] || { grep -i "fail\|error" "$QIO" | head -5 >&2;
    fail "$kind $engine $via: $failed failed writes across the restart"; }
  assert_eq "$wrote" "$NW" "writes reported done ($kind $engine $via, qemu-io status $rc)"
  $PY - "$DISK" "$NW" <<'PY' || fail "$kind $engine $via: a write is not on disk"
import sys
data = open(sys.argv[1], "rb").read()
for i in range(int(sys.argv[2])):
    block = data[i * 4096:(i + 1) * 4096]
    if block != bytes([i % 255 + 1]) * 4096:
        sys.exit(f"block {i} does not hold its pattern")
PY
  echo "$kind $engine $via: $NW writes across a restart, 0 failed, all on disk"
}

# job NAME KIND ENGINE VIAS...: the runs of KIND ENGINE over each of VIAS, in turn, with the
# job's own image, socket, port and qemu-io output.
job() {
  local name=$1 kind=$2 engine=$3 via
  shift 3
  DISK=$T/disk.$name.img SOCK=$T/restart.$name.sock QIO=$T/qio.$name.out
  PORT=$(free_port)
  truncate -s 4M "$DISK"
  for via in "$@"; do
    run "$kind" "$engine" "$via"
  done
}
dg_spawn uring job uring dg uring unix tcp
dg_spawn threads job threads dg threads unix tcp
dg_spawn qemu job qemu qemu - unix
dg_join
pass "a restart under qemu-io with reconnect-delay: 0 failed writes, diskgate as qemu-nbd"
