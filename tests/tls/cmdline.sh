#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The TLS options on the command line: every bad combination or unreadable credential gives
# one line on stderr naming the problem, nothing on stdout, exit status 2; credentials alone
# mean --tls require (URIs printed as nbds://); --help documents the options.
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/tls/tlslib.sh"

tls_standard
truncate -s 1M "$T/disk.img"
port=$(free_port)

# expect_bad "what stderr must contain" serve-options...
expect_bad() {
  local want=$1 rc=0
  shift
  "$DISKGATE" serve --listen "127.0.0.1:$port" "$@" "$T/disk.img" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -eq 2 ] || { cat "$T/err" >&2; fail "serve $*: exit $rc, expected 2"; }
  [ ! -s "$T/out" ] || fail "serve $*: printed on stdout: $(cat "$T/out")"
  assert_eq "$(wc -l <"$T/err")" 1 "serve $*: lines on stderr ($(cat "$T/err"))"
  grep -qF -- "$want" "$T/err" || fail "serve $*: stderr '$(cat "$T/err")' lacks '$want'"
}

expect_bad "--tls takes off, on or require, not 'maybe'" --tls maybe
expect_bad "--tls require needs --tls-certificates DIR or --tls-psk FILE" --tls require
expect_bad "--tls on needs --tls-certificates DIR or --tls-psk FILE" --tls on
expect_bad "--tls off cannot take --tls-certificates" --tls off --tls-certificates "$T/srv"
expect_bad "--tls-certificates and --tls-psk cannot be combined" \
  --tls-certificates "$T/srv" --tls-psk "$T/srv/server-key.pem"
expect_bad "--tls-certificates $T/nosuch: No such file or directory" --tls-certificates "$T/nosuch"
expect_bad "not a directory" --tls-certificates "$T/disk.img"
mkdir -p "$T/nokey" && cp "$T/srv/server-cert.pem" "$T/nokey/"
expect_bad "$T/nokey/server-key.pem: No such file or directory" --tls-certificates "$T/nokey"
mkdir -p "$T/garbage" && echo garbage >"$T/garbage/server-cert.pem" && cp "$T/srv/server-key.pem" "$T/garbage/"
expect_bad "$T/garbage/server-cert.pem with $T/garbage/server-key.pem:" --tls-certificates "$T/garbage"
tls_cert "$T/ca" "$T/other" server
mkdir -p "$T/mismatch" && cp "$T/srv/server-cert.pem" "$T/mismatch/" && cp "$T/other/server-key.pem" "$T/mismatch/"
expect_bad "$T/mismatch/server-cert.pem with" --tls-certificates "$T/mismatch"
mkdir -p "$T/badca" && cp "$T/srv/"server-*.pem "$T/badca/" && echo junk >"$T/badca/ca-cert.pem"
expect_bad "$T/badca/ca-cert.pem:" --tls-certificates "$T/badca"
mkdir -p "$T/cadir" && cp "$T/srv/"server-*.pem "$T/cadir/" && mkdir "$T/cadir/ca-cert.pem"
expect_bad "$T/cadir/ca-cert.pem: not a regular file" --tls-certificates "$T/cadir"
mkdir -p "$T/dangling" && cp "$T/srv/"server-*.pem "$T/dangling/" && ln -s "$T/nosuch" "$T/dangling/ca-cert.pem"
expect_bad "$T/dangling/ca-cert.pem: No such file or directory" --tls-certificates "$T/dangling"
expect_bad "--tls-psk $T/nosuch.psk: No such file or directory" --tls-psk "$T/nosuch.psk"
printf 'alice:0123\nbob 4567\n' >"$T/bad.psk"
expect_bad "--tls-psk $T/bad.psk line 2: expected username:hexkey" --tls-psk "$T/bad.psk"
printf 'alice:012\n' >"$T/odd.psk"
expect_bad "$T/odd.psk line 1: expected username:hexkey" --tls-psk "$T/odd.psk"
: >"$T/empty.psk"
expect_bad "$T/empty.psk: no username:hexkey line" --tls-psk "$T/empty.psk"

# Credentials alone: TLS required, nbds:// URIs.
dg_start --tls-certificates "$T/srv" "$T/disk.img"
grep -q "listening on nbds://127.0.0.1:$DG_PORT/" "$DG_LOG" || fail "no nbds:// TCP URI"
grep -q "listening on nbds+unix:///?socket=" "$DG_LOG" || fail "no nbds+unix:// URI"
grep -q "TLS require (X.509)" "$DG_LOG" || fail "start-up log: TLS mode"
dg_stop
# --tls on: TLS optional, plain URIs.
dg_start --tls on --tls-certificates "$T/srv" "$T/disk.img"
grep -q "listening on nbd://127.0.0.1:$DG_PORT/" "$DG_LOG" || fail "--tls on: no nbd:// URI"
assert_eq "$(nbdinfo --size "$DG_TCP")" 1048576 "--tls on: plain client"
assert_eq "$(nbdinfo --size "nbds://127.0.0.1:$DG_PORT/?tls-certificates=$T/cli")" 1048576 \
  "--tls on: TLS client"
dg_stop

help=$("$DISKGATE" serve --help)
for opt in "--tls off|on|require" "--tls-certificates DIR" "--tls-psk FILE"; do
  grep -qF -- "$opt" <<<"$help" || fail "--help does not document $opt"
done
pass "tls command line"
