#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --cache writethrough and directsync: every WRITE, TRIM and WRITE_ZEROES is replied to only
# after a sync that started after it reached the file, with no FLUSH or FUA from the client.
# The threads engine (syncs are plain syscalls) is traced with strace -f attached to the
# running server; a client sends 3 WRITEs, a TRIM and a WRITE_ZEROES at once
# (tests/server/synctrace.py client-through). In the trace, for each request: its pwrite or
# fallocate returned, then an fdatasync started and returned 0, then the sendmsg holding its
# reply (found by cookie). FLUSH and FUA stay advertised. Negative control: under --cache
# writeback the same check must fail (nothing syncs). --sync none with write-through is
# said in the start-up log.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

truncate -s 16M "$T/disk.img"
for cache in writethrough directsync writeback; do
  dg_start_traceable --sync full --cache "$cache" "$T/disk.img"
  grep -q "cache $cache" "$DG_LOG" || { cat "$DG_LOG" >&2; fail "$cache: not in the start-up log"; }
  trace=$T/trace.$cache
  dg_strace "$trace" fdatasync,fsync,sync_file_range,pwrite64,pwritev,pwritev2,fallocate,sendmsg
  st_pid=$ST_PID
  PYTHONPATH=$HERE $PY "$HERE/synctrace.py" client-through "$DG_UNIX" "$T/cookies.$cache" \
    || fail "client under --cache $cache"
  dg_stop
  wait "$st_pid" || true
  rc=0
  [ "$cache" = writeback ] && echo "negative control, must fail:"
  PYTHONPATH=$HERE $PY "$HERE/synctrace.py" check-through "$trace" "$T/cookies.$cache" || rc=$?
  if [ "$cache" = writeback ]; then
    [ "$rc" -ne 0 ] || fail "writeback: replies after syncs although nothing asked for one (vacuous check?)"
  else
    [ "$rc" -eq 0 ] || { cat "$trace" >&2; fail "--cache $cache: a reply before its covering sync"; }
  fi
done
pass "writethrough, directsync: each WRITE, TRIM and WRITE_ZEROES replied to after its sync"

# --sync none: write-through syncs nothing, and the log says what the combination means
dg_start --sync none --cache writethrough "$T/disk.img"
grep -q "writethrough with --sync none syncs nothing" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "--sync none --cache writethrough: not explained at start-up"; }
dg_stop
pass "--sync none with writethrough is explained in the start-up log"
