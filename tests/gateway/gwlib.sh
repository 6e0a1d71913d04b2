# SPDX-License-Identifier: MIT
# tests/gateway/gwlib.sh: gw_start CONFIG-BODY: writes $T/gw.conf, a [server] section with
# a Unix socket, a free TCP port, the pid file and the engine, followed by CONFIG-BODY
# (its [export NAME] sections), and starts `diskgate serve --config` on it. Sets what
# dg_start sets (DG_PID, DG_SOCK, DG_PORT, DG_LOG); dg_stop stops it.
# gw_load_start / gw_load_end: fio verifying its writes on an export meanwhile.
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

# gw_load_start EXPORT: fio over one connection to EXPORT (over $DG_SOCK): 4 KiB random
# writes at QD8 over its first 4 MiB, each batch of 64 read back and checked (verify=crc32c)
# while it runs, until gw_load_end; sets GW_LOAD (its pid).
gw_load_start() {
  rm -f "$T/load.stop"
  fio --name=untouched --ioengine=nbd --uri="nbd+unix:///$1?socket=$DG_SOCK" --rw=randwrite \
    --bs=4k --iodepth=8 --size=4m --verify=crc32c --verify_backlog=64 --verify_fatal=1 \
    --time_based --runtime=600 --trigger-file="$T/load.stop" --trigger=true \
    --output-format=json >"$T/load.out" 2>"$T/load.err" &
  GW_LOAD=$!
  GW_LOAD_SINCE=$SECONDS
  # connected: the accepted socket is listed beside the listening one
  wait_until 10 gw_load_connected ||
    { cat "$T/load.err" >&2; fail "the untouched export's fio did not connect"; }
}

gw_load_connected() { [ "$(grep -cF "$DG_SOCK" /proc/net/unix)" -ge 2 ]; }

# gw_load_end: stops gw_load_start's fio and fails unless it ended without an error (an
# I/O error, a block read back wrong) and checked blocks; sets GW_LOAD_ROUNDS (the blocks
# written and read back).
gw_load_end() {
  local errors
  while [ $((SECONDS - GW_LOAD_SINCE)) -lt 2 ]; do sleep 0.2; done # some batches checked
  touch "$T/load.stop"
  wait "$GW_LOAD" || { cat "$T/load.err" "$T/load.out" >&2; fail "the untouched export's fio failed"; }
  read -r GW_LOAD_ROUNDS errors < <($PY -c '
import json, sys
t = open(sys.argv[1]).read()
j = json.loads(t[t.index("{"):])["jobs"][0]
print(j["read"]["total_ios"], j["error"])' "$T/load.out")
  assert_eq "$errors" 0 "fio errors on the untouched export"
  [ "$GW_LOAD_ROUNDS" -gt 64 ] || fail "the untouched export's fio checked only $GW_LOAD_ROUNDS blocks"
}
