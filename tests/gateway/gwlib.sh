# SPDX-License-Identifier: MIT
# tests/gateway/gwlib.sh: gw_start CONFIG-BODY: writes $T/gw.conf, a [server] section with
# a Unix socket, a free TCP port, the pid file and the engine, followed by CONFIG-BODY
# (its [export NAME] sections), and starts `diskgate serve --config` on it. Sets what
# dg_start sets (DG_PID, DG_SOCK, DG_PORT, DG_LOG); dg_stop stops it.
# gw_load_start / gw_load_end: a client verifying its writes on an export meanwhile.
gw_start() {
  DG_N=$((${DG_N:-0} + 1))
  DG_SOCK=$T/gw.$DG_N.sock
  DG_PORT=$(free_port)
  DG_LOG=$T/gw.$DG_N.log
  local pidf=$T/gw.$DG_N.pid
  {
    printf '[server]\nsocket = %s\nlisten = 127.0.0.1:%s\npid-file = %s\nengine = %s\n' \
      "$DG_SOCK" "$DG_PORT" "$pidf" "${DG_ENGINE:-uring}"
    printf '%s\n' "${GW_SERVER_EXTRA:-}"
    printf '%s\n' "$1"
  } >"$T/gw.conf"
  "$DISKGATE" serve --config "$T/gw.conf" >"$DG_LOG" 2>&1 &
  DG_PID=$!
  DG_PIDS+=("$DG_PID")
  local i
  for i in $(seq 1 400); do
    [ -s "$pidf" ] && grep 'listening on' "$DG_LOG" >/dev/null && return 0
    kill -0 "$DG_PID" 2>/dev/null || { cat "$DG_LOG" >&2; fail "diskgate exited at start"; }
    sleep 0.05
  done
  fail "diskgate did not become ready"
}

# gw_load_start EXPORT: a client of EXPORT (over $DG_SOCK) that writes 4 KiB blocks and reads
# each back, until gw_load_end; sets GW_LOAD (its pid).
gw_load_start() {
  rm -f "$T/load.stop"
  $PY - "$DG_SOCK" "$1" "$T/load.stop" >"$T/load.out" 2>&1 <<'PY' &
import os, sys
import nbd
sock, name, stop = sys.argv[1:4]
h = nbd.NBD()
h.set_export_name(name)
h.connect_unix(sock)
n = bad = 0
while not os.path.exists(stop) or n == 0:
    off, data = (n % 1024) * 4096, bytes([n % 251 + 1]) * 4096
    h.pwrite(data, off)
    bad += h.pread(4096, off) != data
    n += 1
h.flush()
h.shutdown()
print(n, bad)
PY
  GW_LOAD=$!
}

# gw_load_end: stops gw_load_start's client and fails unless every request succeeded and every
# block read back as written; sets GW_LOAD_ROUNDS.
gw_load_end() {
  local bad
  touch "$T/load.stop"
  wait "$GW_LOAD" || { cat "$T/load.out" >&2; fail "the untouched export's client failed"; }
  read -r GW_LOAD_ROUNDS bad <"$T/load.out"
  assert_eq "$bad" 0 "blocks read back wrong on the untouched export"
  [ "$GW_LOAD_ROUNDS" -gt 10 ] || fail "the untouched export's client did only $GW_LOAD_ROUNDS rounds"
}
