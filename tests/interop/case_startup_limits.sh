#!/usr/bin/env bash
# Start-up under a tiny open-files limit (RLIMIT_NOFILE). Whatever runs out first (the I/O
# engine, opening the image, a listener, reading or writing the pid file), `diskgate serve`
# exits 1, not 2: 2 means a bad command line, and this one is fine (qemu-nbd and nbdkit
# exit 1 as well). It prints one error line that names the limit ("the open-files limit,
# ulimit -Hn, is N"), nothing on stdout and no socket file. It used to exit 2 when opening
# the image, a listener or an existing pid file failed (the pid file was "not a pid file",
# a host name "no such host"), 1 when the engine did, and a pid file that could not be
# written was a warning: the server ran without it (qemu-nbd exits then). Limits 3 to 16
# are tried in turn, each start given 1 s (a start that serves is stopped by `timeout`,
# status 124; below what the dynamic loader needs, diskgate never runs); at least one must
# fail for each command line.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 16M "$T/a.img"
port=$(free_port)
total=0
# Three command lines: a Unix socket; a TCP listener on a host name (resolving it opens
# /etc/hosts: glibc said "no such host" when it could not); a stale pid file to replace.
for how in socket name pidfile; do
  case $how in
    socket) args=(--socket "$T/s.sock") ;;
    name) args=(--listen "localhost:$port") ;;
    pidfile) args=(--socket "$T/s.sock" --pid-file "$T/stale.pid") ;;
  esac
  failed=0
  for n in $(seq 3 16); do
    rc=0
    echo 999999 >"$T/stale.pid" # an existing pid file is read before it is replaced
    timeout 1 sh -c 'ulimit -n "$1"; shift; exec "$@"' sh "$n" "$DISKGATE" serve \
      --engine "${DG_ENGINE:-uring}" "${args[@]}" "$T/a.img" >"$T/out" 2>"$T/err" || rc=$?
    if [ "$rc" = 124 ]; then # it served until timeout stopped it
      ! grep -q 'pid file' "$T/err" ||
        fail "$how, ulimit -n $n: served without its pid file: $(cat "$T/err")"
      continue
    fi
    # too few for the dynamic loader itself: diskgate never ran
    [ "$rc" = 127 ] && grep -q 'error while loading shared libraries' "$T/err" && continue
    grep -q 'Too many open files' "$T/err" ||
      fail "$how, ulimit -n $n: exit $rc, not for want of files: $(head -c 400 "$T/err")"
    [ "$rc" = 1 ] || fail "$how, ulimit -n $n: exit $rc, want 1: $(cat "$T/err")"
    [ "$(grep -c '^diskgate serve: ' "$T/err")" = 1 ] ||
      fail "$how, ulimit -n $n: want one error line: $(cat "$T/err")"
    grep -q "the open-files limit, ulimit -Hn, is $n)" "$T/err" ||
      fail "$how, ulimit -n $n: the line does not name the limit: $(cat "$T/err")"
    [ -s "$T/out" ] && fail "$how, ulimit -n $n: printed on stdout: $(cat "$T/out")"
    [ -e "$T/s.sock" ] && fail "$how, ulimit -n $n: the socket file was left behind"
    echo "$how, ulimit -n $n: $(grep '^diskgate serve: ' "$T/err")"
    failed=$((failed + 1))
  done
  [ "$failed" -ge 1 ] || fail "$how: no limit from 3 to 16 stopped the start"
  total=$((total + failed))
done
pass "start-up that runs out of open files exits 1 with one line naming the limit ($total starts)"
