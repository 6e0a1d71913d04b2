#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sockets diskgate cannot serve on, passed by socket activation: a datagram socket, a
# socket that is not listening, and only a reserved name ("control"). Each is refused with
# one line on stderr naming it, exit status 2 and nothing on stdout.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/d.img"
envs=()
for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
  [ -z "${!v:-}" ] || envs+=(-E "$v=${!v}")
done

# check NAME WHAT: the run's exit status 2, one "diskgate serve:" line matching WHAT
check() {
  assert_eq "$rc" 2 "$1: exit status"
  assert_eq "$(grep -c '^diskgate serve:' "$T/$1.err")" 1 "$1: lines naming the problem"
  grep -F "$2" "$T/$1.err" >/dev/null || { cat "$T/$1.err" >&2; fail "$1: no '$2'"; }
  [ ! -s "$T/$1.out" ] || fail "$1: something on stdout"
}

# a datagram socket: systemd-socket-activate starts the server at the first datagram
P=$(free_port)
systemd-socket-activate --datagram -l "127.0.0.1:$P" --fdname=nbd "${envs[@]}" \
  "$DISKGATE" serve --engine "${DG_ENGINE:-uring}" "$T/d.img" >"$T/dgram.out" 2>"$T/dgram.err" &
pid=$!
DG_PIDS+=("$pid")
sleep 0.3
$PY -c "import socket,sys; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', int(sys.argv[1])))" "$P"
rc=0
wait "$pid" || rc=$?
check dgram "systemd socket 'nbd' (127.0.0.1:$P): not a stream socket"

# passes fd 3 as systemd does (LISTEN_PID is this process, which then execs diskgate)
activate() { # NAME KIND NAME-OF-FD
  $PY - "$@" "$DISKGATE" "${DG_ENGINE:-uring}" "$T/d.img" >"$T/$1.out" 2>"$T/$1.err" <<'PYEOF' || rc=$?
import os, socket, sys
name, kind, fdname, dg, engine, img = sys.argv[1:7]
if kind == "bound":
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))  # bound, never listening
else:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(os.path.dirname(img), name + ".sock"))
    s.listen(8)
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES=fdname)
os.execv(dg, [dg, "serve", "--engine", engine, img])
PYEOF
}
rc=0
activate bound bound nbd
check bound "not a listening socket"
rc=0
activate reserved listening control
check reserved "passed no socket for NBD"
pass "datagram, non-listening and reserved-only sockets refused with exit 2"
