# SPDX-License-Identifier: MIT
# tests/qcow2/lib_qcow2.sh: helpers of the qcow2 tests (source it after tests/lib.sh's
# environment is set: it sources tests/lib.sh itself).
#
# Every test runs against the server Q2_SERVER names: diskgate (the default: the binary
# $DISKGATE, engine $DG_ENGINE) or qemu-nbd (the reference: the tests are validated against
# it, so a failure under diskgate is diskgate's). Servers listen on a Unix socket in $T.
#
#   q2_start [-r] [-f FORMAT] [-- SERVER-OPTIONS...] IMAGE
#       starts the server on IMAGE (format qcow2 unless -f; -r read-only; options after --
#       go to diskgate only). Sets Q2_PID, Q2_SOCK, Q2_URI (nbd+unix:), Q2_LOG.
#   q2_stop         SIGTERM, wait; diskgate must exit 0.
#   q2_kill9        SIGKILL, wait.
#   q2_launch [-r] [-f FORMAT] IMAGE
#       starts the server on a possibly hostile image without failing, under /usr/bin/time
#       (Q2_PID is time's; Q2_RSSF gets the server's peak RSS in KiB once it exited): sets
#       Q2_STATE to "serving" (Q2_SPID = the server's pid, Q2_SOCK, Q2_URI set), "refused"
#       (Q2_RC = exit status, Q2_ERR = the file holding its stderr) or "hung" (neither
#       within Q2_LAUNCH_WAIT s, default 10). Stop a served one with q2_stop.
#   q2_hwm_kib PID  the process's peak resident set (VmHWM), KiB.
#   q2_check IMAGE [ALLOW_LEAKS]   qemu-img check: exit 0, or 3 (leaks only) when ALLOW_LEAKS
#       is 1; fails with the check's output otherwise.
#   q2_size FILE    the file's size in bytes.
#   q2_memdir       a folder on a tmpfs (/dev/shm, else $T), removed at exit; sets Q2_MEM.
#       For images whose syncs would only measure the disk (FUA, FLUSH) in content tests.
HERE_Q2LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib.sh
source "$HERE_Q2LIB/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
Q2_SERVER=${Q2_SERVER:-diskgate}
case "$Q2_SERVER" in
  diskgate | qemu-nbd) ;;
  *) fail "Q2_SERVER must be diskgate or qemu-nbd, not '$Q2_SERVER'" ;;
esac
for tool in qemu-img qemu-io qemu-nbd; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (Debian: apt-get install qemu-utils)"
done
$PY -c 'import nbd' 2>/dev/null || fail "python3-libnbd is not installed"
Q2_N=0

# q2_args_parse ARGS...: splits the common options into Q2_RO, Q2_FMT, Q2_EXTRA, Q2_IMAGE.
q2_args_parse() {
  Q2_RO=0 Q2_FMT=qcow2 Q2_EXTRA=()
  while [ $# -gt 1 ]; do
    case "$1" in
      -r) Q2_RO=1; shift ;;
      -f) Q2_FMT=$2; shift 2 ;;
      --) shift; while [ $# -gt 1 ]; do Q2_EXTRA+=("$1"); shift; done ;;
      *) fail "q2 helpers: unknown option $1" ;;
    esac
  done
  Q2_IMAGE=${1:?q2 helpers: no image}
}

# q2_spawn: starts the chosen server in the background on Q2_IMAGE; stdout+stderr to
# Q2_LOG and stderr alone to Q2_ERR. Sets Q2_PID, Q2_SOCK, Q2_URI.
q2_spawn() {
  Q2_N=$((Q2_N + 1))
  Q2_SOCK=$T/q2.$BASHPID.$Q2_N.sock
  Q2_LOG=$T/q2.$BASHPID.$Q2_N.log
  Q2_ERR=$T/q2.$BASHPID.$Q2_N.err
  Q2_PIDF=$T/q2.$BASHPID.$Q2_N.pid
  Q2_RSSF=$T/q2.$BASHPID.$Q2_N.rss
  : >"$Q2_LOG"
  local ro=()
  if [ "$Q2_SERVER" = diskgate ]; then
    [ "$Q2_RO" = 1 ] && ro=(--read-only)
    "${Q2_WRAP[@]}" "$DISKGATE" serve --socket "$Q2_SOCK" --pid-file "$Q2_PIDF" --engine "${DG_ENGINE:-uring}" \
      --format "$Q2_FMT" "${ro[@]}" "${Q2_EXTRA[@]}" "$Q2_IMAGE" \
      >>"$Q2_LOG" 2> >(tee "$Q2_ERR" >>"$Q2_LOG") &
  else
    [ "$Q2_RO" = 1 ] && ro=(-r)
    # -e 8: several connections at once; --discard=unmap: TRIM reaches the image, as
    # qemu-io's default; -A: qemu:allocation-depth, as diskgate offers it.
    "${Q2_WRAP[@]}" qemu-nbd -f "$Q2_FMT" -t -e 8 -A -k "$Q2_SOCK" --pid-file "$Q2_PIDF" --cache=writeback \
      --discard=unmap "${ro[@]}" "$Q2_IMAGE" >>"$Q2_LOG" 2> >(tee "$Q2_ERR" >>"$Q2_LOG") &
  fi
  Q2_PID=$!
  DG_PIDS+=("$Q2_PID")
  Q2_URI="nbd+unix:///?socket=$Q2_SOCK"
}

q2_ready() {
  if [ "$Q2_SERVER" = diskgate ]; then
    [ -s "$Q2_PIDF" ] && grep -q 'listening on' "$Q2_LOG"
  else
    [ -S "$Q2_SOCK" ] && [ -s "$Q2_PIDF" ]
  fi
}

q2_start() {
  q2_args_parse "$@"
  Q2_WRAP=()
  q2_spawn
  local i
  for i in $(seq 1 400); do
    q2_ready && return 0
    kill -0 "$Q2_PID" 2>/dev/null || { cat "$Q2_LOG" >&2; fail "$Q2_SERVER exited at start on $Q2_IMAGE"; }
    sleep 0.025
  done
  cat "$Q2_LOG" >&2
  fail "$Q2_SERVER did not become ready on $Q2_IMAGE"
}

q2_launch() {
  q2_args_parse "$@"
  Q2_WRAP=(/usr/bin/time -o "$T/q2.$BASHPID.$((Q2_N + 1)).rss" -f %M)
  q2_spawn
  local end=$(( $(date +%s%N) + ${Q2_LAUNCH_WAIT:-10} * 1000000000 ))
  Q2_STATE="" Q2_RC=""
  while :; do
    if q2_ready; then
      Q2_STATE=serving
      Q2_SPID=$(cat "$Q2_PIDF")
      DG_PIDS+=("$Q2_SPID")
      return 0
    fi
    if ! kill -0 "$Q2_PID" 2>/dev/null; then
      Q2_RC=0
      wait "$Q2_PID" || Q2_RC=$?
      sleep 0.05 # the tee behind Q2_ERR may still be copying
      Q2_STATE=refused
      return 0
    fi
    [ "$(date +%s%N)" -lt "$end" ] || { Q2_STATE=hung; return 0; }
    sleep 0.02
  done
}

q2_stop() {
  kill -TERM "$(cat "$Q2_PIDF")"
  local rc=0
  wait "$Q2_PID" || rc=$?
  if [ "$Q2_SERVER" = diskgate ] && [ "$rc" -ne 0 ]; then
    cat "$Q2_LOG" >&2
    fail "diskgate exited $rc after SIGTERM"
  fi
  return 0
}

q2_kill9() {
  kill -9 "$(cat "$Q2_PIDF")" 2>/dev/null || true
  wait "$Q2_PID" 2>/dev/null || true
}

q2_hwm_kib() {
  sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"
}

q2_check() {
  local rc=0 out
  out=$(qemu-img check -f qcow2 "$1" 2>&1) || rc=$?
  if [ "$rc" -eq 0 ] || { [ "${2:-0}" = 1 ] && [ "$rc" -eq 3 ]; }; then
    return 0
  fi
  echo "$out" >&2
  fail "qemu-img check $1: exit $rc"
}

q2_size() { stat -c %s "$1"; }

q2_memdir() {
  Q2_MEM=$(mktemp -d /dev/shm/dgq2.XXXXXX 2>/dev/null) || { Q2_MEM=$T/mem; mkdir -p "$Q2_MEM"; }
  DG_CLEANUP_EXTRA="${DG_CLEANUP_EXTRA:+$DG_CLEANUP_EXTRA; }rm -rf '$Q2_MEM'"
}
