#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TLS with pre-shared keys (--tls-psk FILE, `username:hexkey` lines as nbdkit's and qemu's
# keys.psk): nbdinfo and nbdcopy with libnbd's tls-psk-file, qemu-img with tls-creds-psk; a
# wrong key or an unknown user fails the handshake, with a log line naming the user; the
# file is read at each handshake; a plain client is refused.
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/tls/tlslib.sh"

key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
other=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$T/srv" "$T/qemu" "$T/bad"
printf 'alice:%s\nbob:%s\n' "$key" "$other" >"$T/srv/keys.psk"
printf 'alice:%s\n' "$key" >"$T/qemu/keys.psk"
printf 'alice:%s\n' "$other" >"$T/bad/keys.psk"
truncate -s 16M "$T/disk.img"
dg_start --tls-psk "$T/srv/keys.psk" "$T/disk.img"   # credentials alone: --tls require
grep -q "TLS require (PSK)" "$DG_LOG" || fail "start-up log: PSK not announced"
good="nbds://alice@127.0.0.1:$DG_PORT/?tls-psk-file=$T/qemu/keys.psk"
assert_eq "$(nbdinfo --size "$good")" 16777216 "size over PSK"
assert_eq "$(nbdinfo --size "nbds+unix://alice@/?socket=$DG_SOCK&tls-psk-file=$T/qemu/keys.psk")" \
  16777216 "size over PSK (Unix)"
if nbdinfo --size "nbds://alice@127.0.0.1:$DG_PORT/?tls-psk-file=$T/bad/keys.psk" >/dev/null 2>&1; then
  fail "a wrong key was accepted"
fi
if nbdinfo --size "nbds://carol@127.0.0.1:$DG_PORT/?tls-psk-file=$T/qemu/keys.psk" >/dev/null 2>&1; then
  fail "an unknown user was accepted"
fi
# The log names the user: unknown, or known with another key (GnuTLS itself says only "An
# illegal parameter has been received." for both).
mkdir -p "$T/carol" && printf 'carol:%s\n' "$key" >"$T/carol/keys.psk"
if nbdinfo --size "nbds+unix://carol@/?socket=$DG_SOCK&tls-psk-file=$T/carol/keys.psk" >/dev/null 2>&1; then
  fail "an unknown user with a key was accepted"
fi
wait_until 5 grep -q "TLS handshake failed: unknown PSK user 'carol'" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "no log line names the unknown PSK user"; }
wait_until 5 grep -q "TLS handshake failed for PSK user 'alice' (not the key in $T/srv/keys.psk?)" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "no log line names the PSK user whose key is wrong"; }
# The client cannot tell an unknown user from a known one with a wrong key (GnuTLS's own
# file lookup behaves so; the key of an unknown user is random).
mkdir -p "$T/dave" && printf 'dave:%s\n' "$key" >"$T/dave/keys.psk"
unknown=$(nbdinfo --size "nbds+unix://dave@/?socket=$DG_SOCK&tls-psk-file=$T/dave/keys.psk" 2>&1 | tail -1 || true)
wrong=$(nbdinfo --size "nbds+unix://alice@/?socket=$DG_SOCK&tls-psk-file=$T/bad/keys.psk" 2>&1 | tail -1 || true)
assert_eq "$unknown" "$wrong" "the client's error for an unknown user and for a wrong key"
# The key file gone while serving: the log names the file, not an unknown user.
mv "$T/srv/keys.psk" "$T/srv/keys.away"
if nbdinfo --size "$good" >/dev/null 2>&1; then fail "served with the key file gone"; fi
wait_until 5 grep -q "TLS: reading the PSK file $T/srv/keys.psk: No such file or directory" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "no log line names the missing key file"; }
if grep -q "unknown PSK user 'alice'" "$DG_LOG"; then fail "a missing key file logged as an unknown user"; fi
mv "$T/srv/keys.away" "$T/srv/keys.psk"
# The file is read at each handshake: a user added while serving gets in.
printf 'carol:%s\n' "$key" >>"$T/srv/keys.psk"
assert_eq "$(nbdinfo --size "nbds+unix://carol@/?socket=$DG_SOCK&tls-psk-file=$T/carol/keys.psk")" \
  16777216 "size for a PSK user added while serving"
if nbdinfo --size "$DG_TCP" >/dev/null 2>&1; then fail "a plain client was served"; fi
qemu-img info --object "tls-creds-psk,id=tls0,dir=$T/qemu,username=alice,endpoint=client" \
  --image-opts "driver=nbd,host=127.0.0.1,port=$DG_PORT,tls-creds=tls0" >"$T/qi.out" 2>&1 ||
  { cat "$T/qi.out" >&2; fail "qemu-img info over PSK"; }
grep -q "virtual size: 16 MiB" "$T/qi.out" || { cat "$T/qi.out" >&2; fail "qemu-img info: size"; }
mkrandom "$T/src.bin" $((16 * 1024 * 1024))
nbdcopy "$T/src.bin" "$good" || fail "nbdcopy in over PSK"
nbdcopy "$good" "$T/out.bin" || fail "nbdcopy out over PSK"
cmp -s "$T/src.bin" "$T/out.bin" || fail "PSK round trip differs"
dg_stop
pass "tls psk"
