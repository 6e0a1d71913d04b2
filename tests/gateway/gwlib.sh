# SPDX-License-Identifier: MIT
# tests/gateway/gwlib.sh: gw_start CONFIG-BODY: writes $T/gw.conf, a [server] section with
# a Unix socket, a free TCP port, the pid file and the engine, followed by CONFIG-BODY
# (its [export NAME] sections), and starts `diskgate serve --config` on it. Sets what
# dg_start sets (DG_PID, DG_SOCK, DG_PORT, DG_LOG); dg_stop stops it.
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
