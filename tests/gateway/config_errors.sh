#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A config file with each kind of mistake: diskgate serve --config exits 2 after ONE line on
# stderr naming FILE:LINE: KEY, prints nothing on stdout and leaves no socket behind.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"

truncate -s 1M "$T/a.img" "$T/b.img"
n=0
# bad CASE-NAME EXPECTED-PREFIX (file:line: key:) FILE-BODY
bad() {
  local what=$1 want=$2 body=$3 rc=0
  n=$((n + 1))
  printf '%s\n' "$body" >"$T/c$n.conf"
  "$DISKGATE" serve --config "$T/c$n.conf" >"$T/out" 2>"$T/err" || rc=$?
  assert_eq "$rc" 2 "exit status: $what"
  assert_eq "$(wc -l <"$T/err")" 1 "stderr lines: $what"
  [ ! -s "$T/out" ] || fail "stdout not empty: $what"
  grep -F "diskgate serve: $T/c$n.conf:$want" "$T/err" >/dev/null ||
    { cat "$T/err" >&2; fail "$what: expected '$T/c$n.conf:$want'"; }
  [ ! -e "$T/s.sock" ] || fail "a socket was left behind: $what"
}
srv="[server]
socket = $T/s.sock"
ok="[export a]
path = $T/a.img"

bad "unknown server key" "2: lisen: unknown key" "[server]
lisen = 127.0.0.1:1
$ok"
bad "export key in [server]" "3: read-only: belongs in an [export NAME] section" "$srv
read-only = true
$ok"
bad "server key in an export" "5: threads: belongs in the [server] section" "$srv
[export a]
path = $T/a.img
threads = 2"
bad "unknown export key" "5: colour: unknown key" "$srv
[export a]
path = $T/a.img
colour = blue"
bad "command-line-only key" "5: export: unknown key" "$srv
[export a]
path = $T/a.img
export = b"
bad "duplicate export" "5: a: export named twice (first at line 3)" "$srv
$ok
[export a]
path = $T/b.img"
bad "duplicate key" "5: path: given twice in this section" "$srv
[export a]
path = $T/a.img
path = $T/b.img"
bad "duplicate server key" "3: socket: given twice in this section" "$srv
socket = $T/t.sock
$ok"
bad "missing path" "3: path: missing" "$srv
[export a]
read-only = true
[export b]
path = $T/b.img"
bad "missing path, empty section" "3: path: missing" "$srv
[export a]
[export b]
path = $T/b.img"
bad "path that does not exist" "4: path: cannot use $T/nope.img" "$srv
[export a]
path = $T/nope.img"
bad "bad sync" "5: sync: --sync takes full, fsync or none, not 'always'" "$srv
[export a]
path = $T/a.img
sync = always"
bad "bad threads" "2: threads: --threads takes a number from 1 to 64, not '0'" "[server]
threads = 0
$ok"
bad "bad boolean" "5: read-only: takes true or false" "$srv
[export a]
path = $T/a.img
read-only = maybe"
bad "bad allow" "5: allow: '10.0.0.0/40' is not" "$srv
[export a]
path = $T/a.img
allow = unix, 10.0.0.0/40"
bad "two defaults" "6: default: a second default export (the first at line 3)" "$srv
[export a]
path = $T/a.img
default = true
[export b]
path = $T/b.img
default = yes"
bad "cross-option check" "3: a: --force-share needs --read-only" "$srv
[export a]
path = $T/a.img
force-share = true"
bad "unknown section" "3: exports: unknown section" "$srv
[exports]
path = $T/a.img"
bad "key outside a section" "1: path: outside a section" "path = $T/a.img
$srv
$ok"
bad "syntax" "3: syntax: not a [section] or key = value line" "$srv
this is not a key
$ok"
bad "no export" "2: [export]: no export in the file" "$srv"
bad "empty listen" "2: listen: --listen needs HOST:PORT" "[server]
listen =
$ok"

# the command line with --config takes only --verbose besides
rc=0
printf '%s\n%s\n' "$srv" "$ok" >"$T/good.conf"
"$DISKGATE" serve --config "$T/good.conf" --read-only >/dev/null 2>"$T/err" || rc=$?
assert_eq "$rc" 2 "exit status: --config with another option"
assert_eq "$(wc -l <"$T/err")" 1 "stderr lines: --config with another option"
rc=0
"$DISKGATE" serve --config "$T/good.conf" "$T/a.img" >/dev/null 2>"$T/err" || rc=$?
assert_eq "$rc" 2 "exit status: --config with a PATH"
rc=0
"$DISKGATE" serve --config "$T/missing.conf" >/dev/null 2>"$T/err" || rc=$?
assert_eq "$rc" 2 "exit status: a config file that does not exist"
grep -F "cannot read $T/missing.conf" "$T/err" >/dev/null || fail "the missing file's line"
pass "each mistake in a config file gives exit 2 and one line naming file:line: key"
