# SPDX-License-Identifier: MIT
# tests/asif/lib_asif.sh: helpers of the ASIF tests (source it: it sources tests/lib.sh).
# Many servers run at once, so that their start-ups (a third of a second each in the ASan
# build) overlap and one Python process checks them all.
#
#   asif_launch NAME [serve options...] IMAGE
#       starts `diskgate serve` on IMAGE in the background with a Unix socket and a pid file
#       in $T named after NAME (unique per test), its stdout and stderr to $T/NAME.log.
#   asif_wait NAME...     waits until each launched server listens; fails naming one that
#       exited (with its log) or did not become ready within 30 s.
#   asif_uri NAME         prints the server's nbd+unix URI.
#   asif_log NAME         prints the path of its log.
#   asif_stop NAME...     SIGTERM to each, then waits for each: exit status 0 required.
#   asif_exit NAME        waits for a server expected to refuse its image; sets ASIF_RC to
#       its exit status (fails when it is still running after 30 s).
#   asif_samples          sets SAMPLES (shared/samples/asif beside the repository, or
#       DG_ASIF_SAMPLES) and MANIFEST; fails when they are missing.
HERE_ASIFLIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../lib.sh
source "$HERE_ASIFLIB/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1
declare -A ASIF_PID=()
CHECK=$HERE_ASIFLIB/asifcheck.py
ASIFIMG=$HERE_ASIFLIB/asifimg.py

asif_launch() {
  local name=$1
  shift
  [ -z "${ASIF_PID[$name]:-}" ] || fail "asif_launch: $name is running already"
  rm -f "$T/$name.sock" "$T/$name.pid"
  "$DISKGATE" serve --socket "$T/$name.sock" --pid-file "$T/$name.pid" \
    --engine "${DG_ENGINE:-uring}" "$@" >"$T/$name.log" 2>&1 &
  ASIF_PID[$name]=$!
  DG_PIDS+=("$!")
}

asif_ready() { [ -s "$T/$1.pid" ] && grep -q 'listening on' "$T/$1.log"; }

asif_wait() {
  local name end=$(( $(date +%s%N) + 30000000000 ))
  for name in "$@"; do
    until asif_ready "$name"; do
      kill -0 "${ASIF_PID[$name]}" 2>/dev/null || { cat "$T/$name.log" >&2; fail "$name: diskgate exited at start"; }
      [ "$(date +%s%N)" -lt "$end" ] || fail "$name: diskgate did not become ready"
      sleep 0.02
    done
  done
}

asif_uri() { echo "nbd+unix:///?socket=$T/$1.sock"; }
asif_log() { echo "$T/$1.log"; }

asif_stop() {
  local name rc
  for name in "$@"; do kill -TERM "${ASIF_PID[$name]}"; done
  for name in "$@"; do
    rc=0
    wait "${ASIF_PID[$name]}" || rc=$?
    [ "$rc" -eq 0 ] || { cat "$T/$name.log" >&2; fail "$name: diskgate exited $rc after SIGTERM"; }
    unset "ASIF_PID[$name]"
  done
}

asif_exit() {
  local name=$1 end=$(( $(date +%s%N) + 30000000000 ))
  while kill -0 "${ASIF_PID[$name]}" 2>/dev/null; do
    [ "$(date +%s%N)" -lt "$end" ] || fail "$name: diskgate still runs after 30 s, expected a refusal"
    sleep 0.02
  done
  ASIF_RC=0
  wait "${ASIF_PID[$name]}" || ASIF_RC=$?
  unset "ASIF_PID[$name]"
}

asif_samples() {
  SAMPLES=${DG_ASIF_SAMPLES:-$SRCDIR/../shared/samples/asif}
  MANIFEST=$SAMPLES/MANIFEST.tsv
  [ -f "$MANIFEST" ] || fail "no ASIF samples at $SAMPLES (shared/ beside the repository)"
}
