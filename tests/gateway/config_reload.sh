#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGHUP under --config (reload.h): the file read again and the running exports made to
# match it, while fio (verify=crc32c) writes and verifies on an untouched export throughout:
#  - an export only in the file is added, one only in the server (also one `ctl add` made)
#    is removed, descriptions and allow lists change in place, the default moves;
#  - an export whose path changed is left as it was, with a line naming it;
#  - a file with a mistake changes nothing (one line, FILE:LINE: KEY), and the server goes on;
#  - the untouched export's client never sees an error, and after the reloads SIGTERM still
#    stops the server (exit 0).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
source "$HERE/gwlib.sh"

truncate -s 16M "$T/a.img" "$T/b.img" "$T/d.img" "$T/e1.img" "$T/e2.img"
CTL=$T/ctl.sock
GW_SERVER_EXTRA="control = $CTL" gw_start "[export a]
path = $T/a.img
description = old
default = true
[export b]
path = $T/b.img
[export e]
path = $T/e1.img"
conf_server=$(sed -n '/^\[export a\]/q;p' "$T/gw.conf")
ctl() { "$DISKGATE" ctl --control "$CTL" "$@"; }
"$DISKGATE" ctl --control "$CTL" add extra "$T/d.img" >/dev/null

gw_load_start a

# reload_with BODY: the [server] section as started, then BODY; SIGHUP; waits for the
# reload's summary line (the Nth).
reloads=0
reload_with() {
  printf '%s\n%s\n' "$conf_server" "$1" >"$T/gw.conf"
  reloads=$((reloads + 1))
  kill -HUP "$DG_PID"
  wait_until 10 reloads_logged || { cat "$DG_LOG" >&2; fail "reload $reloads did not finish"; }
}
# true once the log has $reloads reloads' last lines (counted anew at each call)
reloads_logged() {
  [ "$(grep -cE 'reload of |reload: .*nothing changed' "$DG_LOG")" -ge "$reloads" ]
}

reload_with "[export a]
path = $T/a.img
description = new
allow = unix
[export d]
path = $T/d.img
description = disk d
default = true
[export e]
path = $T/e2.img"
grep -F "reload of $T/gw.conf: 1 added, 2 removed, 1 changed in place, 0 unchanged, 1 not applied (need a reopen), 0 failed" \
  "$DG_LOG" >/dev/null || { cat "$DG_LOG" >&2; fail "the reload's summary"; }
grep -F "reload: export 'e': its path or options changed; not applied" "$DG_LOG" >/dev/null ||
  fail "no line for e's new path"
grep -F "reload: the default export is now 'd'" "$DG_LOG" >/dev/null || fail "no line for the default"
ctl list >"$T/list"
grep -E '^a +.*a\.img +new$' "$T/list" >/dev/null || { cat "$T/list" >&2; fail "a's description"; }
grep -E '^d +.*d\.img +disk d \(default\)$' "$T/list" >/dev/null || { cat "$T/list" >&2; fail "d added"; }
grep -E '^e +.*e1\.img' "$T/list" >/dev/null || { cat "$T/list" >&2; fail "e changed"; }
grep -E '^(b|extra) ' "$T/list" >/dev/null && { cat "$T/list" >&2; fail "b or extra still served"; }
# the default (empty name) now reaches d; TCP clients are refused a by its new allow list
nbdinfo --json "nbd+unix:///?socket=$DG_SOCK" | grep -F '"export-name": "d"' >/dev/null ||
  fail "the empty name does not reach d"
rc=0; nbdinfo "nbd://127.0.0.1:$DG_PORT/a" >/dev/null 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "a TCP client reached a after allow = unix"

reload_with "[export a]
path = $T/a.img
sync = sometimes"
grep -E "reload: $T/gw.conf:[0-9]+: sync: .*; nothing changed" "$DG_LOG" >/dev/null ||
  { cat "$DG_LOG" >&2; fail "a bad file's line"; }
assert_eq "$(ctl list | tail -n +2 | wc -l)" 3 "exports after a bad file"

gw_load_end
dg_stop
pass "SIGHUP reload: added, removed, changed in place, not applied, bad file; export a untouched (fio read back $GW_LOAD_ROUNDS blocks)"
