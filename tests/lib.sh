# SPDX-License-Identifier: MIT
# tests/lib.sh: shared helpers for the shell-driven tests. Source it; it sets `set -euo pipefail`.
# Environment (set by meson): DISKGATE = path of the diskgate binary, SRCDIR = source root;
# DG_ENGINE = uring|threads, the engine every server in the suite uses (scripts/check.sh runs
# the plain build with uring and the ASan+UBSan build with threads).
# Each test: exit 0 = pass, non-zero = fail. Helpers print one line on failure.
set -euo pipefail
: "${DISKGATE:?DISKGATE must point at the diskgate binary}"
PY=/usr/bin/python3   # Debian's python, where python3-libnbd lives

T=$(mktemp -d /tmp/dgtest.XXXXXX)
DG_PIDS=()
DG_SPAWNS=()
DG_SPAWN_NAMES=()
dg_cleanup() {
  local p
  # jobs of dg_spawn still running (the test failed): each with what it started
  for p in "${DG_SPAWNS[@]:-}"; do [ -n "$p" ] && dg_kill_tree "$p"; done
  for p in "${DG_PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  [ -n "${DG_CLEANUP_EXTRA:-}" ] && eval "$DG_CLEANUP_EXTRA" || true
  rm -rf "$T"
}
trap dg_cleanup EXIT

# dg_kill_tree PID: SIGKILLs PID and every descendant of it (stopped first, so that none
# starts another meanwhile).
dg_kill_tree() {
  local c
  kill -STOP "$1" 2>/dev/null || return 0
  for c in $(pgrep -P "$1"); do dg_kill_tree "$c"; done
  kill -KILL "$1" 2>/dev/null || true
}

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }
assert_eq() { # actual expected what
  [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

# wait_until SECONDS CMD...: runs CMD every 0.05 s until it succeeds or SECONDS have passed;
# returns CMD's last status. CMD's words are expanded once, by the caller: a value that must
# be read anew each time (a "$(...)") belongs in a function given as CMD.
wait_until() {
  local end=$(( $(date +%s%N) + $1 * 1000000000 ))
  shift
  until "$@"; do
    [ "$(date +%s%N)" -lt "$end" ] || return 1
    sleep 0.05
  done
}

# interrupt_within SECONDS PID WHAT: sends SIGINT to PID (a child of this shell) and waits
# for it; fails when it takes more than SECONDS. Sets rc to PID's exit status.
interrupt_within() {
  local limit=$1 pid=$2 what=$3 t0
  t0=$(date +%s)
  kill -INT "$pid"
  rc=0
  wait "$pid" || rc=$?
  [ $(($(date +%s) - t0)) -le "$limit" ] || fail "$what took more than $limit s to stop after SIGINT"
}

# watchdog_start SECONDS PID: in the background, SIGKILLs PID (a process of this test) unless
# watchdog_stop comes first within SECONDS. Sets WATCHDOG_PID. The watchdog holds none of the
# test's descriptors (its stdin, stdout and stderr are /dev/null), so a test that ends
# before it does is not kept waiting by meson, which reads the test's output until every
# holder of it has closed it.
watchdog_start() {
  local secs=$1 target=$2
  (
    nap=
    trap '[ -n "$nap" ] && kill "$nap" 2>/dev/null; exit 0' TERM
    sleep "$secs" &
    nap=$!
    wait "$nap" && kill -KILL "$target" 2>/dev/null
  ) </dev/null >/dev/null 2>&1 &
  WATCHDOG_PID=$!
  DG_PIDS+=("$WATCHDOG_PID")
}

# watchdog_stop: ends the watchdog of watchdog_start (and its timer) and waits for it; the
# process it watched is left alone.
watchdog_stop() {
  kill -TERM "$WATCHDOG_PID" 2>/dev/null || true
  wait "$WATCHDOG_PID" 2>/dev/null || true
}

# dg_spawn NAME CMD [ARGS...]: runs CMD ARGS (a function of the test, typically one engine's
# run of a scenario) in a background subshell, its stdout and stderr to $T/spawn.NAME.out,
# while the test goes on; dg_join waits for it. For scenarios bound by sleeps and timeouts,
# not by CPU (the machine may have 2 cores). What CMD starts with dg_start is its own: the
# subshell kills it when it exits, and dg_cleanup kills a job still running with all it
# started. Jobs share $T: each must name its own files (dg_start's names are unique per
# subshell).
dg_spawn() {
  local name=$1
  shift
  [ ! -e "$T/spawn.$name.out" ] || fail "dg_spawn: a job named $name exists already"
  (
    DG_PIDS=()
    DG_SPAWNS=()
    trap 'for p in "${DG_PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done' EXIT
    "$@"
  ) </dev/null >"$T/spawn.$name.out" 2>&1 &
  DG_SPAWNS+=("$!")
  DG_SPAWN_NAMES+=("$name")
}

# dg_join: waits for every job of dg_spawn, in the order they were spawned, and prints
# each one's output under a "== NAME" line; fails naming the jobs that exited non-zero
# (after printing all of them).
dg_join() {
  local i rc bad=""
  for i in "${!DG_SPAWNS[@]}"; do
    rc=0
    wait "${DG_SPAWNS[$i]}" || rc=$?
    echo "== ${DG_SPAWN_NAMES[$i]} (exit $rc)"
    cat "$T/spawn.${DG_SPAWN_NAMES[$i]}.out"
    [ "$rc" -eq 0 ] || bad="$bad ${DG_SPAWN_NAMES[$i]}"
  done
  DG_SPAWNS=()
  DG_SPAWN_NAMES=()
  [ -z "$bad" ] || fail "failed:$bad (output above)"
}

free_port() {
  $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# dg_start [serve options...] PATH
# Starts `diskgate serve` with a Unix socket in $T and a free TCP port on 127.0.0.1.
# Sets DG_PID, DG_SOCK, DG_PORT, DG_LOG, DG_TCP (nbd://...) and DG_UNIX (nbd+unix://...),
# for the export named by --export (default "").
dg_start() {
  # Names from a counter, not $RANDOM: two live servers of one test must never share a
  # socket or pid file (with $RANDOM, 1 in 16384 would, and the second refuse to start).
  DG_N=$((${DG_N:-0} + 1))
  DG_SOCK=$T/dg.$BASHPID.$DG_N.sock
  DG_PORT=$(free_port)
  DG_LOG=$T/dg.$BASHPID.$DG_N.log
  local pidf=$T/dg.$BASHPID.$DG_N.pid
  [ ! -e "$DG_SOCK" ] && [ ! -e "$pidf" ] || fail "dg_start: $DG_SOCK or its pid file exists already"
  local name="" a prev=""
  for a in "$@"; do [ "$prev" = "--export" ] && name=$a; prev=$a; done
  "$DISKGATE" serve --socket "$DG_SOCK" --listen "127.0.0.1:$DG_PORT" --pid-file "$pidf" \
    --engine "${DG_ENGINE:-uring}" "$@" \
    >"$DG_LOG" 2>&1 &
  DG_PID=$!
  DG_PIDS+=("$DG_PID")
  # ready: the pid file, then the listeners' lines (printed once nothing can fail)
  dg_ready() { [ -s "$pidf" ] && grep -q 'listening on' "$DG_LOG"; }
  local i
  for i in $(seq 1 200); do
    dg_ready && break
    kill -0 "$DG_PID" 2>/dev/null || { cat "$DG_LOG" >&2; fail "diskgate exited at start"; }
    sleep 0.05
  done
  dg_ready || fail "diskgate did not become ready"
  DG_TCP="nbd://127.0.0.1:$DG_PORT/$name"
  DG_UNIX="nbd+unix:///$name?socket=$DG_SOCK"
}

# dg_stop: SIGTERM, wait, and require exit status 0.
dg_stop() {
  kill -TERM "$DG_PID"
  local rc=0
  wait "$DG_PID" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$DG_LOG" >&2; fail "diskgate exited $rc after SIGTERM"; }
}

# dg_allow_preload: lets an ASan build run under LD_PRELOAD of a test module (its runtime
# wants to come first in the library list; the modules have no globals it would miss).
dg_allow_preload() {
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
}

# dg_tmpfs SIZE: a tmpfs of SIZE (mount's size=, e.g. 72M) at $T/tmpfs, and an empty
# mount point $T/mnt; sets TFS and MNT. The caller's DG_CLEANUP_EXTRA unmounts them
# (dg_tmpfs_umount), after whatever else it undoes. Needs root.
dg_tmpfs() {
  TFS=$T/tmpfs
  MNT=$T/mnt
  mkdir -p "$TFS" "$MNT"
  mount -t tmpfs -o "size=$1" tmpfs "$TFS" || fail "cannot mount a tmpfs (need root)"
}
dg_tmpfs_umount() { umount -l "$MNT" 2>/dev/null; umount -l "$TFS" 2>/dev/null; }

# mkrandom FILE SIZE_BYTES: a file of random bytes.
mkrandom() { head -c "$2" /dev/urandom >"$1"; }

# qcow2_check_clean IMAGE WHAT: `qemu-img check` of the qcow2 IMAGE exits 0 and reports
# no error and no leaked cluster; WHAT names the case in the failure.
qcow2_check_clean() {
  local out rc=0
  out=$(qemu-img check "$1" 2>&1) || rc=$?
  assert_eq "$rc" 0 "$2: qemu-img check's exit status ($out)"
  grep -q "No errors were found on the image" <<<"$out" || fail "$2: qemu-img check: $out"
  ! grep -qi "leak" <<<"$out" || fail "$2: qemu-img check found leaks: $out"
}

# flip_byte FILE OFFSET: changes the byte at OFFSET (bytes) in FILE in place, to a value it
# cannot already have (old + 1, mod 256); a negative control's one-byte corruption. A
# constant written instead equals a random byte 1 time in 256 (CI failed that way once).
flip_byte() {
  local old
  old=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
  [[ "$old" =~ ^[0-9]+$ ]] || fail "flip_byte: $1 has no byte at offset $2"
  printf "\\$(printf '%03o' $(((old + 1) % 256)))" |
    dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# dg_start_traceable [serve options...] PATH: dg_start with the threads engine (its syncs and
# writes are plain syscalls strace can see) and, in the ASan build, no LeakSanitizer, which
# cannot run under ptrace.
dg_start_traceable() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" DG_ENGINE=threads dg_start "$@"
}

# dg_strace TRACE SYSCALLS: attaches strace -f to the running server ($DG_PID), writing the
# calls named (a comma-separated list) to TRACE, and returns once every thread of the server
# is traced (fails otherwise). Sets ST_PID; the strace ends with the server.
dg_strace() {
  strace -f -qq -s 64 -xx -o "$1" -p "$DG_PID" -e trace="$2" &
  ST_PID=$!
  DG_PIDS+=("$ST_PID")
  for _ in $(seq 1 100); do
    grep -q "TracerPid:[[:space:]]*0$" /proc/"$DG_PID"/task/*/status || break
    sleep 0.05
  done
  ! grep -q "TracerPid:[[:space:]]*0$" /proc/"$DG_PID"/task/*/status || fail "strace did not attach"
}

# dg_usr2_restart PID LOG: SIGUSR2 to the server PID (a child of this shell), which must
# exit 0 once the new server it started (named in LOG) has taken over; sets DG_NEW_PID
# and adds it to DG_PIDS.
dg_usr2_restart() {
  local rc=0
  kill -USR2 "$1"
  wait "$1" || rc=$?
  assert_eq "$rc" 0 "the old server's exit status"
  DG_NEW_PID=$(sed -n 's/.*the new server (pid \([0-9]*\)).*/\1/p' "$2")
  [ -n "$DG_NEW_PID" ] || { cat "$2" >&2; fail "no new server"; }
  DG_PIDS+=("$DG_NEW_PID")
}

# dg_planes_answer WHAT CTL MPORT PATH LOG: the control socket CTL lists the export of
# PATH, and the metrics endpoint on 127.0.0.1:MPORT has counted writes; WHAT names the
# moment in the failure (LOG is shown).
dg_planes_answer() {
  "$DISKGATE" ctl --control "$2" list >"$T/list" || { cat "$5" >&2; fail "ctl list $1"; }
  grep -F "$4" "$T/list" >/dev/null || { cat "$T/list" >&2; fail "ctl list $1: no $4"; }
  curl -sf "http://127.0.0.1:$3/metrics" >"$T/scrape" || fail "metrics scrape $1"
  grep -E '^diskgate_requests_total\{export="",op="write"\} [1-9]' "$T/scrape" >/dev/null ||
    { cat "$T/scrape" >&2; fail "metrics scrape $1: no writes counted"; }
}
