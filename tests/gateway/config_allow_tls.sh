#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# allow = tls:NAME over TLS with PSK: the identity named reaches the export, another
# identity gets NBD_REP_ERR_UNKNOWN and does not see it in NBD_OPT_LIST; one log line.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
source "$HERE/gwlib.sh"

key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
bkey=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$T/srv" "$T/alice" "$T/bob"
printf 'alice:%s\nbob:%s\n' "$key" "$bkey" >"$T/srv/keys.psk"
printf 'alice:%s\n' "$key" >"$T/alice/keys.psk"
printf 'bob:%s\n' "$bkey" >"$T/bob/keys.psk"
truncate -s 1M "$T/a.img" "$T/pub.img"
GW_SERVER_EXTRA="tls-psk = $T/srv/keys.psk" gw_start "[export secret]
path = $T/a.img
allow = tls:alice
[export public]
path = $T/pub.img"
grep "TLS require (PSK)" "$DG_LOG" >/dev/null || fail "TLS not on"
alice="tls-psk-file=$T/alice/keys.psk"
bob="tls-psk-file=$T/bob/keys.psk"
assert_eq "$(nbdinfo --size "nbds://alice@127.0.0.1:$DG_PORT/secret?$alice")" 1048576 "alice"
! nbdinfo --size "nbds://bob@127.0.0.1:$DG_PORT/secret?$bob" >"$T/o" 2>&1 ||
  fail "bob reached the export only alice may use"
grep "no export named" "$T/o" >/dev/null || { cat "$T/o" >&2; fail "bob's refusal is not UNKNOWN"; }
assert_eq "$(nbdinfo --size "nbds://bob@127.0.0.1:$DG_PORT/public?$bob")" 1048576 "bob, public"
nbdinfo --list --json "nbds://bob@127.0.0.1:$DG_PORT/?$bob" >"$T/bl" 2>&1 || true
grep '"public"' "$T/bl" >/dev/null || { cat "$T/bl" >&2; fail "bob's list lacks public"; }
grep '"secret"' "$T/bl" >/dev/null && fail "bob's list shows secret"
nbdinfo --list --json "nbds://alice@127.0.0.1:$DG_PORT/?$alice" >"$T/al" 2>&1 || true
grep '"secret"' "$T/al" >/dev/null || { cat "$T/al" >&2; fail "alice's list lacks secret"; }
grep "refused export 'secret' by its allow list" "$DG_LOG" >/dev/null ||
  { cat "$DG_LOG" >&2; fail "no log line for bob's refusal"; }
dg_stop
pass "allow = tls:NAME admits the PSK identity named, hides the export from others"
