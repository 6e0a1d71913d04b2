#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/bench/e2e-cases.sh: the lab's edge cases, each run for real with 1-second jobs on a
# 16-32 MiB file:
#  - a second copy run in the same --dir makes the tree again (cleanup leaves no
#    diskgate-bench-tree.manifest behind);
#  - two labs never share one --dir: the second exits 2;
#  - a --dir with ':' works for the host row (fio splits filename= at ':');
#  - a TMPDIR with a space works for NBD rows (the socket path is encoded in the URI);
#  - a Ctrl-C during a run reports 'interrupted' and exits 130;
#  - --out on a full file system names the reason and still prints the table on stdout;
#  - the space check of --dir counts the copy tree only when the copy test is selected;
#  - not root: the copy tree is neither made nor described when the copy test is skipped;
#  - the recorded command is quoted (an empty or spaced argument neither vanishes nor splits);
#  - a --copy-size over 60% of --size stops only a run that selects the copy test;
#  - one run is "one run", not "medians of 1 run"; the cells' line names the copy's unit only
#    with a copy column; a run chosen by --configs says so in its title.
source "$SRCDIR/tests/lib.sh"

quick=(--runs 1 --runtime 1 --size 16M)
# lab NAME ARGS...: runs `diskgate bench ARGS`; sets rc, stdout in $T/NAME.out, stderr in
# $T/NAME.err
lab() {
  local name=$1
  shift
  rc=0
  "$DISKGATE" bench "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
}
show() { cat "$T/$1.err" >&2; }

# 1. copy twice in one --dir: the second run makes the tree again; no manifest is left.
if [ "$(id -u)" -eq 0 ]; then
  mkdir "$T/d1"
  for i in 1 2; do
    lab copy$i --runs 1 --runtime 1 --size 32M --copy-size 4M --configs host --workloads copy \
      --dir "$T/d1" --out "$T/copy$i"
    [ "$rc" -eq 0 ] || { show copy$i; fail "copy run $i exited $rc"; }
    grep -q '^| host | [0-9.]* MiB/s' "$T/copy$i/bench.md" || { show copy$i; fail "copy run $i: no figure"; }
  done
  [ -z "$(ls -A "$T/d1")" ] || fail "--dir keeps $(ls -A "$T/d1")"
fi

# 2. a second lab in a --dir that a lab holds: exit 2, one line, nothing of the first touched.
mkdir "$T/d2"
echo keep >"$T/d2/diskgate-bench.img"
$PY -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(60)' "$T/d2" >"$T/holder.out" &
holder=$!
DG_PIDS+=("$holder")
for i in $(seq 1 100); do grep -q held "$T/holder.out" && break; sleep 0.05; done
lab lock "${quick[@]}" --configs host --workloads randread-4k --dir "$T/d2" --out "$T/lock"
kill "$holder"
wait "$holder" 2>/dev/null || true
assert_eq "$rc" 2 "exit status with --dir held by another lab"
assert_eq "$(cat "$T/lock.err")" "diskgate bench: another diskgate bench is using --dir $T/d2 (its test file would be shared): give each run its own --dir" "the message for a held --dir"
assert_eq "$(cat "$T/d2/diskgate-bench.img")" keep "the other lab's test file"
[ ! -e "$T/lock" ] || fail "a lab refused for a held --dir created its --out"

# 3. ':' in --dir; 4. a space in TMPDIR (the sockets' directory), with an NBD row.
mkdir "$T/co:lon" "$T/t mp"
TMPDIR="$T/t mp" lab colon "${quick[@]}" --configs host,diskgate-unix-direct-full \
  --workloads randread-4k --dir "$T/co:lon" --out "$T/colon"
[ "$rc" -eq 0 ] || { show colon; fail "':' in --dir / a space in TMPDIR: exit $rc"; }
grep -q '^| host | [0-9.]*[KM]\? (100%)' "$T/colon/bench.md" || fail "no host figure with ':' in --dir"
grep -q '^| diskgate-unix-direct-full | [0-9.]*[KM]\? (' "$T/colon/bench.md" ||
  fail "no NBD figure with a space in TMPDIR"

# 5. Ctrl-C (SIGINT) during a 20-second run: stops within seconds, says so, exit 130.
"$DISKGATE" bench --runs 1 --runtime 20 --size 16M --configs host --workloads randread-4k \
  --dir "$T/d2" --out "$T/intr" >"$T/intr.out" 2>"$T/intr.err" &
lab_pid=$!
for i in $(seq 1 100); do grep -q '^\[1/1\]' "$T/intr.err" 2>/dev/null && break; sleep 0.1; done
sleep 1
interrupt_within 10 "$lab_pid" "the lab"
assert_eq "$rc" 130 "exit status after SIGINT"
grep -q '(interrupted: the runs done so far' "$T/intr.err" || { show intr; fail "no 'interrupted' line"; }
! grep -q 'some runs failed' "$T/intr.err" || fail "an interrupt reported as failed runs"
grep -q '^| host | interrupted |' "$T/intr/bench.md" || { cat "$T/intr/bench.md" >&2; fail "the cell does not say interrupted"; }

# 6. --out on a full file system; 7. --dir with room for the file but not the copy tree.
if [ "$(id -u)" -eq 0 ]; then
  mkdir "$T/full" "$T/small"
  mount -t tmpfs -o size=16k tmpfs "$T/full"
  mount -t tmpfs -o size=20m tmpfs "$T/small"
  DG_CLEANUP_EXTRA="umount '$T/full' '$T/small' 2>/dev/null"
  lab full "${quick[@]}" --configs host --workloads randread-4k --dir "$T/small" --out "$T/full"
  umount "$T/full"
  umount "$T/small"
  assert_eq "$rc" 1 "exit status with a full --out"
  grep -q 'No space left on device' "$T/full.err" || { show full; fail "the full --out is not named"; }
  grep -q '^| host | ' "$T/full.out" || fail "no table on stdout with a full --out"
fi

# 8. not root: the copy test is dropped before anything is made for it.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  mkdir -m 0777 "$T/nr" "$T/nr/dir"
  chmod 0755 "$T"
  rc=0
  TMPDIR=$T/nr setpriv --reuid=nobody --regid=nogroup --clear-groups "$DISKGATE" bench "${quick[@]}" \
    --configs host --workloads randread-4k,copy --dir "$T/nr/dir" --out "$T/nr/out" \
    >"$T/nr.out" 2>"$T/nr.err" || rc=$?
  [ "$rc" -eq 0 ] || { show nr; fail "not root: exit $rc"; }
  grep -q 'not root, so the copy test is skipped' "$T/nr.err" || fail "not root: no note"
  ! grep -q 'making the copy tree' "$T/nr.err" || fail "not root: the copy tree was made"
  ! grep -q '^- Copy test' "$T/nr/out/bench.md" || fail "not root: bench.md describes the copy test"
  grep -qx '| config | 4K randread QD32, IOPS |' "$T/nr/out/bench.md" || fail "not root: a copy column"
fi

# 9. the recorded command takes the arguments back as given.
mkdir "$T/o ut"
lab quote "${quick[@]}" --configs host --workloads randread-4k --dir "$T/d2" --out "$T/o ut/x"
[ "$rc" -eq 0 ] || { show quote; fail "--out with a space: exit $rc"; }
grep -qF -- "--out '$T/o ut/x'" "$T/o ut/x/bench.md" || fail "the command in bench.md is not quoted"
# ... and one run is not "medians of 1 run"; no copy column, no copy unit.
grep -q '^- Method: one run of 1 s after' "$T/o ut/x/bench.md" || fail "the method line of one run"
! grep -q 'for the copy' "$T/o ut/x/bench.md" || fail "the copy's unit without a copy column"
# ... and a run chosen by --configs and --workloads is not titled
# as the profile's own.
assert_eq "$(head -1 "$T/o ut/x/bench.md")" \
  "# diskgate bench: profile quick, rows and columns chosen by --configs and --workloads" \
  "the title of a run chosen by --configs and --workloads"

# 10. --copy-size is checked only when the copy test runs.
lab cs1 "${quick[@]}" --copy-size 10M --configs host --workloads randread-4k --dir "$T/d2" \
  --out "$T/cs1"
[ "$rc" -eq 0 ] || { show cs1; fail "--copy-size 10M of 16M without the copy test: exit $rc"; }
if [ "$(id -u)" -eq 0 ]; then # not root, the copy test is dropped before the check
  lab cs2 "${quick[@]}" --copy-size 10M --configs host --workloads copy --dir "$T/d2" --out "$T/cs2"
  assert_eq "$rc" 2 "exit status for --copy-size 10M of 16M with the copy test"
  assert_eq "$(wc -l <"$T/cs2.err")" 1 "lines on stderr for a --copy-size that does not fit"
  grep -q -- '--copy-size must fit' "$T/cs2.err" || { show cs2; fail "the --copy-size line"; }
fi

pass "the lab's cases: copy twice, a held --dir, ':' and spaces, SIGINT, full --out, not root, --copy-size"
