#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Start-up under a tiny open-files limit (RLIMIT_NOFILE), limits 3 to 40 in turn, for four
# command lines (--threads 2, so that the limits do not depend on the machine's CPUs). At
# each limit `diskgate serve` either serves a client (nbdinfo reads the size) or exits 1
# with one error line naming the limit ("the open-files limit, ulimit -Hn, is N") and
# nothing else on stderr, nothing on stdout and no socket file; once a limit serves, every higher one does; and at 40 it
# has taken its optional extras (concurrent sync channels, and with io_uring the event
# loops: no "only N more files can be opened" line). Faults this catches:
# - exit 2 (a bad command line) when opening the image, a listener or an existing pid file
#   ran out of files (the pid file was "not a pid file", a host name "no such host"); a pid
#   file that could not be written was a warning and the server ran without it;
# - the optional extras taking what the listener and the connections need: at ulimit -n 10
#   the image's concurrent sync channels left no descriptor for the listener ("cannot
#   listen", exit 1, where 8 served), and at 16 the event loops left none for connections
#   (a server that printed its URI and closed every connection at accept);
# - a start that failed for want of files printed, before its error line, an info line about
#   the sync channels it had left out: the note waits for a start that succeeds;
# - with --tls-psk, a server that printed its URI at the lowest limit with room for the
#   connection's socket but not for the PSK file its TLS handshake reads: every client
#   failed the handshake.
# Below what the dynamic loader needs (status 127), diskgate never runs: skipped.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 16M "$T/a.img"
printf 'alice:%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$T/psk.keys"
port=$(free_port)
top=40
total_failed=0
total_served=0
# Four command lines: a Unix socket; a TCP listener on a host name (resolving it opens
# /etc/hosts: glibc said "no such host" when it could not); a stale pid file to replace;
# TLS with a PSK file (read again in each handshake).
for how in socket name pidfile psk; do
  case $how in
    socket) args=(--socket "$T/s.sock") uri="nbd+unix:///?socket=$T/s.sock" ;;
    name) args=(--listen "localhost:$port") uri="nbd://localhost:$port" ;;
    pidfile) args=(--socket "$T/s.sock" --pid-file "$T/stale.pid") uri="nbd+unix:///?socket=$T/s.sock" ;;
    psk) args=(--socket "$T/s.sock" --tls-psk "$T/psk.keys")
      uri="nbds+unix://alice@/?socket=$T/s.sock&tls-psk-file=$T/psk.keys" ;;
  esac
  failed=0
  served_at=
  for n in $(seq 3 "$top"); do
    echo 999999 >"$T/stale.pid" # an existing pid file is read before it is replaced
    rm -f "$T/out" "$T/err"
    sh -c 'ulimit -n "$1"; shift; exec "$@"' sh "$n" "$DISKGATE" serve \
      --engine "${DG_ENGINE:-uring}" --threads 2 "${args[@]}" "$T/a.img" >"$T/out" 2>"$T/err" &
    pid=$!
    DG_PIDS+=("$pid")
    # it prints its URI once it serves, or exits
    wait_until 10 sh -c 'grep -q "listening on" "$1" || ! kill -0 "$2" 2>/dev/null' sh \
      "$T/out" "$pid" || fail "$how, ulimit -n $n: neither served nor exited in 10 s"
    if grep -q "listening on" "$T/out"; then
      size=$(timeout 10 nbdinfo --size "$uri" 2>&1) ||
        fail "$how, ulimit -n $n: printed its URI but no client could connect: $size; $(cat "$T/err")"
      assert_eq "$size" 16777216 "$how, ulimit -n $n: the size nbdinfo read"
      if [ "$how" = pidfile ]; then
        assert_eq "$(cat "$T/stale.pid")" "$pid" "$how, ulimit -n $n: the pid file"
      fi
      if [ "$n" = "$top" ] && grep -q 'more files\? can be opened' "$T/err"; then
        fail "$how, ulimit -n $n: left out an extra: $(cat "$T/err")"
      fi
      rc=0
      interrupt_within 10 "$pid" "$how, ulimit -n $n"
      assert_eq "$rc" 0 "$how, ulimit -n $n: the exit status after SIGINT"
      served_at=${served_at:-$n}
      total_served=$((total_served + 1))
      continue
    fi
    rc=0
    wait "$pid" || rc=$?
    # too few for the dynamic loader itself: diskgate never ran
    [ "$rc" = 127 ] && grep -q 'error while loading shared libraries' "$T/err" && continue
    [ -z "$served_at" ] ||
      fail "$how, ulimit -n $n: exit $rc where ulimit -n $served_at served: $(cat "$T/err")"
    grep -q 'Too many open files' "$T/err" ||
      fail "$how, ulimit -n $n: exit $rc, not for want of files: $(head -c 400 "$T/err")"
    [ "$rc" = 1 ] || fail "$how, ulimit -n $n: exit $rc, want 1: $(cat "$T/err")"
    [ "$(grep -c '^diskgate serve: ' "$T/err")" = 1 ] ||
      fail "$how, ulimit -n $n: want one error line: $(cat "$T/err")"
    [ "$(wc -l <"$T/err")" = 1 ] ||
      fail "$how, ulimit -n $n: want nothing but the error line: $(cat "$T/err")"
    grep -q "the open-files limit, ulimit -Hn, is $n)" "$T/err" ||
      fail "$how, ulimit -n $n: the line does not name the limit: $(cat "$T/err")"
    [ -s "$T/out" ] && fail "$how, ulimit -n $n: printed on stdout: $(cat "$T/out")"
    [ -e "$T/s.sock" ] && fail "$how, ulimit -n $n: the socket file was left behind"
    echo "$how, ulimit -n $n: $(grep '^diskgate serve: ' "$T/err")"
    failed=$((failed + 1))
  done
  [ "$failed" -ge 1 ] || fail "$how: no limit from 3 to $top stopped the start"
  [ -n "$served_at" ] || fail "$how: no limit from 3 to $top served"
  echo "$how: served a client from ulimit -n $served_at up"
  total_failed=$((total_failed + failed))
done
pass "start-up under ulimit -n 3..$top: $total_failed starts exited 1 naming the limit, $total_served served a client, none failed above a limit that served"
