#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/guest/test-guest-bench.sh: `diskgate bench` guest rows, end to end in a QEMU guest.
#  1. A short run of guest-virtio-file and guest-virtio-diskgate gives a figure for each, on
#     the guest's own 100% line.
#  2. Ctrl-C (SIGINT) while a guest row runs: the lab stops within seconds with 'interrupted'
#     and exit 130, and leaves no QEMU process and no scratch directory behind. (The guest
#     path stops through run-guest.sh, which kills QEMU; nothing tested it before.)
source "$SRCDIR/tests/lib.sh"

command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 not found (scripts/deps.sh test)"
export DISKGATE_SRCDIR=$SRCDIR
mkdir -p "$T/tmp" "$T/d1" "$T/d2"
export TMPDIR=$T/tmp  # run-guest.sh's scratch directories go here

# The image with fio (built once and cached), so that neither run below waits for it.
"$SRCDIR/scripts/guest-image.sh" --with fio >/dev/null || fail "guest-image.sh --with fio failed"

# QEMU processes of this test (their command lines name paths under $T); a function, so that
# pgrep -f does not match a shell whose own command line holds the pattern.
qemu_of_test() { pgrep -f "qemu-system.*$T/" >/dev/null; }
no_qemu_of_test() { ! qemu_of_test; }

# 1. a short run
rc=0
"$DISKGATE" bench --runs 1 --runtime 1 --size 64M --configs guest-virtio-file,guest-virtio-diskgate \
  --workloads randread-4k --dir "$T/d1" --out "$T/o1" >"$T/o1.out" 2>"$T/o1.err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$T/o1.err" >&2; fail "guest rows: exit $rc"; }
grep -q '^| guest-virtio-file | [0-9.]*[KM]\? (100%)' "$T/o1/bench.md" ||
  { cat "$T/o1/bench.md" >&2; fail "no guest-virtio-file figure"; }
grep -q '^| guest-virtio-diskgate | [0-9.]*[KM]\? ([0-9]*%)' "$T/o1/bench.md" ||
  { cat "$T/o1/bench.md" >&2; fail "no guest-virtio-diskgate figure"; }
! qemu_of_test || fail "a QEMU process is left after a finished run"

# 2. SIGINT while the guest row runs
"$DISKGATE" bench --runs 1 --runtime 60 --size 64M --configs guest-virtio-diskgate \
  --workloads randread-4k --dir "$T/d2" --out "$T/o2" >"$T/o2.out" 2>"$T/o2.err" &
lab_pid=$!
wait_until 60 qemu_of_test || { cat "$T/o2.err" >&2; fail "the guest's QEMU did not start"; }
sleep 1  # into the guest's boot (QEMU runs from here to the SIGINT)
interrupt_within 15 "$lab_pid" "the lab"
assert_eq "$rc" 130 "exit status after SIGINT"
grep -q '(interrupted: the runs done so far' "$T/o2.err" || { cat "$T/o2.err" >&2; fail "no 'interrupted' line"; }
grep -q '^| guest-virtio-diskgate | interrupted |' "$T/o2/bench.md" ||
  { cat "$T/o2/bench.md" >&2; fail "the guest cell does not say interrupted"; }
wait_until 5 no_qemu_of_test ||
  fail "QEMU still runs after the lab stopped: $(pgrep -af "qemu-system.*$T/")"
left=$(ls -A "$T/tmp")
[ -z "$left" ] || fail "scratch left in TMPDIR: $left"

pass "guest rows: figures from a short run; SIGINT stops the guest, exit 130, nothing left"
