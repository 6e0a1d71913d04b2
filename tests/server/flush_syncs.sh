#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C19: flush really syncs. The threads engine (syncs are plain syscalls) is traced with
# strace -f attached to the running server; a client does WRITE A, FLUSH, WRITE C with FUA
# (tests/server/synctrace.py). In the trace (the server's sendmsg calls hold the replies,
# found by cookie):
#  --sync full : an fdatasync (or fsync) starts after A's pwrite returned and returns before
#                the FLUSH reply is sent; C is written with RWF_DSYNC (or RWF_SYNC) or synced
#                before its reply; the start-up log does not say UNSAFE;
#  --sync fsync: the same with fsync (RWF_SYNC);
#  --sync none : no fdatasync/fsync/sync_file_range at all (shutdown included), no RWF_*SYNC,
#                and the start-up log says UNSAFE.
# The trace must show the data writes, so an unattached strace cannot pass.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

truncate -s 16M "$T/disk.img"
for mode in full fsync none; do
  dg_start_traceable --sync "$mode" "$T/disk.img"
  trace=$T/trace.$mode
  dg_strace "$trace" fdatasync,fsync,sync_file_range,pwrite64,pwritev,pwritev2,sendmsg
  st_pid=$ST_PID
  PYTHONPATH=$HERE $PY "$HERE/synctrace.py" client "$DG_UNIX" "$T/cookies.$mode" \
    || fail "client under --sync $mode"
  dg_stop
  wait "$st_pid" || true
  PYTHONPATH=$HERE $PY "$HERE/synctrace.py" check "$trace" "$mode" "$T/cookies.$mode" \
    || { cat "$trace" >&2; fail "--sync $mode"; }
  if [ "$mode" = none ]; then
    grep -q UNSAFE "$DG_LOG" || { cat "$DG_LOG" >&2; fail "--sync none: start-up log does not say UNSAFE"; }
  else
    grep -qi unsafe "$DG_LOG" && { cat "$DG_LOG" >&2; fail "--sync $mode: log says unsafe"; }
  fi
done
# the data landed in every mode
$PY - "$T/disk.img" <<'PY' || fail "file content"
import sys
d = open(sys.argv[1], "rb").read()
assert d[1 << 20:(1 << 20) + 65536] == b"\xa1" * 65536 and d[3 << 20:(3 << 20) + 65536] == b"\xc3" * 65536
PY
pass "C19 flush really syncs"
