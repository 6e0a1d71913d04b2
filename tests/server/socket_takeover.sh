#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A server removes its Unix socket file at exit only if the path still names the socket it
# bound. Server A's socket file is removed (by hand, a tmp cleaner) and server B binds the
# same path: B stays reachable after A exits, and B's own exit removes the file.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/a.img"
truncate -s 2M "$T/b.img"
S=$T/shared.sock
"$DISKGATE" serve --engine "${DG_ENGINE:-uring}" --socket "$S" "$T/a.img" >/dev/null 2>"$T/a.log" &
a=$!
DG_PIDS+=("$a")
wait_until 10 test -S "$S" || fail "server A did not listen"
rm "$S"
"$DISKGATE" serve --engine "${DG_ENGINE:-uring}" --socket "$S" "$T/b.img" >/dev/null 2>"$T/b.log" &
b=$!
DG_PIDS+=("$b")
wait_until 10 test -S "$S" || fail "server B did not listen"
assert_eq "$(nbdinfo --size "nbd+unix:///?socket=$S")" 2097152 "the size through B's socket"
kill -TERM "$a"
rc=0
wait "$a" || rc=$?
assert_eq "$rc" 0 "A's exit status"
[ -S "$S" ] || fail "A's exit removed B's socket file"
assert_eq "$(nbdinfo --size "nbd+unix:///?socket=$S")" 2097152 "the size through B's socket after A's exit"
kill -TERM "$b"
rc=0
wait "$b" || rc=$?
assert_eq "$rc" 0 "B's exit status"
[ ! -e "$S" ] || fail "B left its socket file behind"
pass "a server's exit removes its own socket file, not one bound at the same path since"
