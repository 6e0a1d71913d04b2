#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --pid-file must never cost a user a file: not the served image, not the --socket path, not
# any other existing file, not an existing PATH.tmp (even for a command line that is then
# refused), and a directory leaves nothing behind:
#  - the image, the socket, a directory, a non-regular file, or an existing file that is not
#    a pid file: exit 2, one line naming --pid-file, the file untouched;
#  - PATH.tmp is never touched; a stale pid file is replaced and removed at exit;
#  - at exit only the file this server wrote is removed, not one that replaced it since;
#  - a running server's pid file (locked) is refused: exit 2; a dead one's is replaced.
source "$SRCDIR/tests/lib.sh"

cd "$T"
head -c 1048576 /dev/urandom >disk.img
cp disk.img disk.orig
echo precious >p.txt
echo "important notes" >x.tmp
mkdir adir
refused() { # WORD ARGS...: diskgate serve ARGS exits 2 with one stderr line holding WORD
  local word=$1 rc=0; shift
  timeout 10 "$DISKGATE" serve "$@" >out 2>err || rc=$?   # a server that starts is a failure
  [ "$rc" -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -qF -- "$word" err ||
    { cat err >&2; fail "serve $*: exit $rc, want 2 and one line naming '$word'"; }
}
refused "--pid-file disk.img: that is the image being served" --socket s1 --pid-file disk.img disk.img
refused "--pid-file $T/disk.img: that is the image" --socket s1 --pid-file "$T/disk.img" ./disk.img
refused "--pid-file ss: that is the socket being served" --socket ss --pid-file ss disk.img
refused "--pid-file ./ss: that is the socket" --socket "$T/ss" --pid-file ./ss disk.img
refused "--pid-file p.txt: exists and is not a pid file" --socket s1 --pid-file p.txt disk.img
refused "--pid-file adir: Is a directory" --socket s1 --pid-file adir disk.img
mkfifo fifo
refused "--pid-file fifo: exists and is not a regular file" --socket s1 --pid-file fifo disk.img
refused "nonexist" --socket s1 --pid-file x nonexist          # a bad PATH, with --pid-file x
refused "--pid-file needs a path" --socket s1 --pid-file "" disk.img
cmp -s disk.img disk.orig || fail "the image changed"
assert_eq "$(cat p.txt)" precious "the existing file named by --pid-file"
assert_eq "$(cat x.tmp)" "important notes" "x.tmp after a refused --pid-file x"
[ ! -e adir.tmp ] || fail "adir.tmp left behind"
[ ! -e ss ] || fail "a socket left behind"

# A stale pid file is replaced and removed at exit; run.pid.tmp is not touched.
echo 99999 >run.pid
echo keep >run.pid.tmp
"$DISKGATE" serve --socket s2 --pid-file run.pid disk.img 2>log & pid=$!
DG_PIDS+=("$pid")
wait_until 10 grep -qx "$pid" run.pid || { cat log >&2; fail "run.pid does not hold the pid"; }
assert_eq "$(cat run.pid.tmp)" keep "run.pid.tmp while serving"
kill "$pid"; wait "$pid" || fail "exit status after SIGTERM"
[ ! -e run.pid ] || fail "run.pid left behind at exit"
assert_eq "$(cat run.pid.tmp)" keep "run.pid.tmp at exit"
assert_eq "$(ls run.pid.* | tr '\n' ' ')" "run.pid.tmp " "files beside run.pid"

# A pid file replaced while serving (another server's, say) is left alone at exit.
"$DISKGATE" serve --socket s3 --pid-file run.pid disk.img 2>log & pid=$!
DG_PIDS+=("$pid")
wait_until 10 grep -qx "$pid" run.pid || { cat log >&2; fail "run.pid does not hold the pid"; }
mv run.pid mine.pid
echo 4242 >run.pid
kill "$pid"; wait "$pid" || fail "exit status after SIGTERM"
assert_eq "$(cat run.pid)" 4242 "a pid file that replaced ours"

# The pid file of a running server is not taken over by a second one (which would delete it
# at its exit, leaving the first server without one); once that server is gone, even by
# kill -9, its pid file is stale and replaced.
truncate -s 1M disk2.img
"$DISKGATE" serve --socket s4 --pid-file live.pid disk.img 2>log & pid=$!
DG_PIDS+=("$pid")
wait_until 10 grep -qx "$pid" live.pid || { cat log >&2; fail "live.pid does not hold the pid"; }
refused "--pid-file live.pid: is the pid file of a running server (pid $pid)" \
  --socket s5 --pid-file live.pid disk2.img
assert_eq "$(cat live.pid)" "$pid" "live.pid after a second server was refused"
[ ! -e s5 ] || fail "the refused server left its socket"
kill -9 "$pid"; wait "$pid" || true
"$DISKGATE" serve --socket s6 --pid-file live.pid disk2.img 2>log & pid2=$!
DG_PIDS+=("$pid2")
wait_until 10 grep -qx "$pid2" live.pid || { cat log >&2; fail "a stale live.pid was not replaced"; }
kill "$pid2"; wait "$pid2" || fail "exit status after SIGTERM"
[ ! -e live.pid ] || fail "live.pid left behind at exit"
# Two servers started at the same instant with one --pid-file: exactly one runs, the other
# exits 2 with the line above (never both running, never exit 1 with "Device or resource
# busy").
for i in $(seq 1 20); do
  rm -f race.pid
  "$DISKGATE" serve --socket r1.sock --pid-file race.pid disk.img 2>r1.log & p1=$!
  "$DISKGATE" serve --socket r2.sock --pid-file race.pid disk2.img 2>r2.log & p2=$!
  DG_PIDS+=("$p1" "$p2")
  wait_until 10 sh -c '[ -s race.pid ] && { ! kill -0 "$1" 2>/dev/null || ! kill -0 "$2" 2>/dev/null; }' \
    sh "$p1" "$p2" || fail "race $i: neither server exited (both run)"
  sleep 0.2
  if kill -0 "$p1" 2>/dev/null; then run=$p1 gone=$p2 log=r2.log; else run=$p2 gone=$p1 log=r1.log; fi
  kill -0 "$run" 2>/dev/null || fail "race $i: no server runs"
  rc=0
  wait "$gone" || rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$log")" -eq 1 ] && grep -q "is the pid file of a running server (pid $run)" "$log" ||
    { cat "$log" >&2; fail "race $i: the second server exited $rc, want 2 and the one line"; }
  wait_until 5 grep -qx "$run" race.pid || fail "race $i: race.pid does not name the server that runs"
  kill "$run"; wait "$run" || fail "race $i: exit status after SIGTERM"
done
[ ! -e race.pid ] || fail "race.pid left behind"
# A directory that does not exist is the command line's fault: exit 2.
refused "--pid-file nodir/x.pid: No such file or directory" --socket s7 --pid-file nodir/x.pid disk.img
cmp -s disk.img disk.orig || fail "the image changed"
pass "--pid-file: the image, the socket, other files and a running server's pid file are refused and left intact"
