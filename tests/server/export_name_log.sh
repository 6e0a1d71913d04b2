#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The operator's --export name goes into the start-up log escaped, like names that come from
# clients: a newline in it never splits the "serving ..." line (or the --sync none warning)
# in two. The export is still served under its real name. Paths are escaped the
# same way: the image's (the "serving" line, a refused image's line, "cannot open"), the Unix
# socket's (--verbose peer names) and the pid file's. A client's unknown export name is
# logged escaped, once per option that asked for it, naming the option.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/a.img"
dg_start --export $'vm\n1' --sync none "$T/a.img"
$PY - "$DG_SOCK" <<'PY' || fail "the export under its real name"
import sys
import nbd
h = nbd.NBD()
h.set_export_name("vm\n1")
h.connect_unix(sys.argv[1])
assert h.get_size() == 1048576
h.shutdown()
PY
# An unknown export: nbdinfo asks with NBD_OPT_INFO, then NBD_OPT_GO; each refusal is one
# line naming the option, escaped (so the two lines differ)
! nbdinfo "nbd+unix:///wr%0Aong?socket=$DG_SOCK" >/dev/null 2>&1 || fail "nbdinfo of an unknown export"
wait_until 5 grep -qF "client asked for unknown export 'wr\x0aong' (NBD_OPT_GO)" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "the unknown export's NBD_OPT_GO line"; }
assert_eq "$(grep -c "unknown export 'wr" "$DG_LOG")" \
  "$(grep "unknown export 'wr" "$DG_LOG" | sort -u | wc -l)" "distinct unknown-export lines"
dg_stop
grep -qF "serving $T/a.img as export 'vm\\x0a1': 1048576 bytes" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "the start-up line does not escape the name"; }
grep -qF "export 'vm\\x0a1' is UNSAFE" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "the UNSAFE warning does not escape the name"; }
[ "$(grep -c '^1' "$DG_LOG")" = 0 ] || { cat "$DG_LOG" >&2; fail "a log line starts with the name's second line"; }

# A path with a newline: every line that names it stays one line.
img=$T/$'b\nc.img'
printf 'QFI\xfb' >"$img"
truncate -s 1M "$img"
mkdir "$T/"$'s\nd'
DG_SOCK_DIR=$T/$'s\nd'
rc=0
"$DISKGATE" serve --socket "$DG_SOCK_DIR/x.sock" "$img" 2>"$T/r.log" || rc=$?
assert_eq "$rc" 2 "exit status for a refused qcow2 image"
assert_eq "$(grep -c "^diskgate serve: " "$T/r.log")" 1 "refusal lines for a refused qcow2 image"
grep -qF "diskgate serve: $T/b\x0ac.img: " "$T/r.log" ||
  { cat "$T/r.log" >&2; fail "the refused image's line does not escape the path"; }
"$DISKGATE" serve --socket "$DG_SOCK_DIR/x.sock" --verbose --engine "${DG_ENGINE:-uring}" \
  --format raw "$img" >"$T/p.out" 2>"$T/p.log" &
pid=$!
DG_PIDS+=("$pid")
for i in $(seq 1 100); do [ -S "$DG_SOCK_DIR/x.sock" ] && break; sleep 0.05; done
$PY - "$DG_SOCK_DIR/x.sock" <<'PY' || fail "the export at a path with a newline"
import sys
import nbd
h = nbd.NBD()
h.connect_unix(sys.argv[1])
assert h.get_size() == 1048576
h.shutdown()
PY
kill -TERM "$pid"
wait "$pid" || fail "diskgate exited non-zero"
grep -qF "serving $T/b\x0ac.img as export ''" "$T/p.log" ||
  { cat "$T/p.log" >&2; fail "the start-up line does not escape the path"; }
grep -qF "unix:$T/s\x0ad/x.sock#" "$T/p.log" ||
  { cat "$T/p.log" >&2; fail "the peer name does not escape the socket path"; }
! grep -qE '^(c\.img|d/x\.sock)' "$T/p.log" || { cat "$T/p.log" >&2; fail "a log line was split"; }
rc=0
"$DISKGATE" serve --socket "$T/y.sock" "$T/"$'no\nsuch.img' 2>"$T/q.log" || rc=$?
assert_eq "$rc" 2 "exit status for a missing path"
assert_eq "$(wc -l <"$T/q.log")" 1 "lines for a missing path"
grep -qF "cannot open $T/no\x0asuch.img: No such file or directory" "$T/q.log" ||
  { cat "$T/q.log" >&2; fail "the missing path is not escaped"; }
rc=0
"$DISKGATE" serve --socket "$T/z.sock" --pid-file "$T/"$'nodir\n/x.pid' "$T/a.img" 2>"$T/r.log" || rc=$?
assert_eq "$rc" 2 "exit status for a pid file that cannot be made"
assert_eq "$(wc -l <"$T/r.log")" 1 "lines for the pid file"
grep -qF -- "--pid-file $T/nodir\x0a/x.pid: No such file or directory" "$T/r.log" ||
  { cat "$T/r.log" >&2; fail "the pid file path is not escaped"; }
pass "the export name and paths are escaped in the log"
