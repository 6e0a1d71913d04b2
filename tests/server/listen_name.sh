#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --listen HOST:PORT with a host name (qemu-nbd's -b and nbdkit's -i take names) is served,
# not refused with "Invalid argument". localhost resolves on every test machine; the server binds
# its first address, and a client that resolves the same name reaches it.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 2M "$T/a.img"
port=$(free_port)
"$DISKGATE" serve --listen "localhost:$port" "$T/a.img" >"$T/out" 2>"$T/log" &
pid=$!
DG_PIDS+=("$pid")
for _ in $(seq 1 100); do
  grep -q "listening on" "$T/out" && break
  kill -0 "$pid" 2>/dev/null || { cat "$T/log" >&2; fail "diskgate exited at start"; }
  sleep 0.05
done
grep -qF "listening on nbd://localhost:$port/" "$T/out" ||
  { cat "$T/out" "$T/log" >&2; fail "the URI printed does not name the host given"; }
assert_eq "$(nbdinfo --size "nbd://localhost:$port/")" 2097152 "export size through the name"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
assert_eq "$rc" 0 "exit status after SIGTERM"
pass "--listen with a host name"
