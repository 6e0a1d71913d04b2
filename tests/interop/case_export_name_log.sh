#!/usr/bin/env bash
# The operator's --export name goes into the start-up log escaped, like names that come from
# clients: a newline in it used to split the "serving ..." line (and the --sync none
# warning) in two. The export is still served under its real name.
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
dg_stop
grep -qF "serving $T/a.img as export 'vm\\x0a1': 1048576 bytes" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "the start-up line does not escape the name"; }
grep -qF "export 'vm\\x0a1' is UNSAFE" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "the UNSAFE warning does not escape the name"; }
[ "$(grep -c '^1' "$DG_LOG")" = 0 ] || { cat "$DG_LOG" >&2; fail "a log line starts with the name's second line"; }
pass "the export name is escaped in the log"
