#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A wildcard listener (--listen 0.0.0.0:PORT, [::]:PORT) accepts on every address of its
# family, but no client can connect to 0.0.0.0 or ::, so the URIs it prints name the host's
# own addresses: the loopback first, then each interface's, each reachable, none the
# wildcard; the port is the one bound (0 asks for any).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/a.img"
# serve_wildcard ADDRESS: starts the server on ADDRESS; sets pid and out (its stdout)
serve_wildcard() {
  out=$T/out.$RANDOM
  "$DISKGATE" serve --listen "$1" --engine "${DG_ENGINE:-uring}" "$T/a.img" >"$out" 2>"$out.log" &
  pid=$!
  DG_PIDS+=("$pid")
  wait_until 10 grep -q "listening on" "$out" || { cat "$out.log" >&2; fail "$1: no listener line"; }
}
stop_wildcard() {
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  assert_eq "$rc" 0 "exit status after SIGTERM"
}

serve_wildcard 0.0.0.0:0
! grep -q '0\.0\.0\.0' "$out" || { cat "$out" >&2; fail "a URI names 0.0.0.0"; }
port=$(sed -n 's|^diskgate: listening on nbd://127\.0\.0\.1:\([0-9]*\)/$|\1|p' "$out")
[ -n "$port" ] && [ "$port" -gt 0 ] || { cat "$out" >&2; fail "no nbd://127.0.0.1:PORT/ line"; }
[ "$(sed -n 1p "$out")" = "diskgate: listening on nbd://127.0.0.1:$port/" ] ||
  { cat "$out" >&2; fail "loopback not first"; }
n=0
while read -r uri; do
  n=$((n + 1))
  [[ "$uri" =~ ^nbd://[0-9.]+:$port/$ ]] || fail "unexpected URI $uri"
  assert_eq "$(nbdinfo --size "$uri")" 1048576 "size through $uri"
done < <(sed -n 's|^diskgate: listening on ||p' "$out")
assert_eq "$(sed -n 's|^diskgate: listening on ||p' "$out" | sort -u | wc -l)" "$n" "distinct URIs"
stop_wildcard

# IPv6, where the host has it: [::1] first, no [::]
if $PY -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
  serve_wildcard '[::]:0'
  ! grep -q '\[::\]' "$out" || { cat "$out" >&2; fail "a URI names [::]"; }
  uri=$(sed -n '1s|^diskgate: listening on \(nbd://\[::1\]:[0-9]*/\)$|\1|p' "$out")
  [ -n "$uri" ] || { cat "$out" >&2; fail "the first URI of [::]:0 is not nbd://[::1]:PORT/"; }
  assert_eq "$(nbdinfo --size "$uri")" 1048576 "size through $uri"
  stop_wildcard
fi
pass "a wildcard listener prints the host's addresses ($n IPv4 URIs), never the wildcard"
