#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The soft limit on open files is raised to the hard limit at start, so the number of
# connections is bounded by the hard limit, not by the usual soft limit of 1024.
. "$SRCDIR/tests/lib.sh"
truncate -s 16M "$T/lim.img"
rm -f "$T/lim.sock"
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -gt 4096 ] && hard=4096 # a value every runner allows
prlimit --nofile="64:$hard" "$DISKGATE" serve --engine "${DG_ENGINE:-uring}" \
  --socket "$T/lim.sock" "$T/lim.img" >/dev/null 2>"$T/lim.log" &
lim_pid=$!
DG_PIDS+=("$lim_pid")
for _ in $(seq 100); do [ -S "$T/lim.sock" ] && break; sleep 0.05; done
[ -S "$T/lim.sock" ] || fail "prlimit 64:$hard: the server did not start: $(cat "$T/lim.log")"
assert_eq "$(awk '/^Max open files/ {print $4 ":" $5}' "/proc/$lim_pid/limits")" "$hard:$hard" \
  "soft:hard limit on open files of a server started with 64:$hard"
kill -TERM "$lim_pid"
rc=0; wait "$lim_pid" || rc=$?
assert_eq "$rc" 0 "exit status (prlimit 64:$hard)"
pass "the soft limit on open files is raised to the hard limit"
