#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real clients over TLS (--tls require, X.509 server certificate, no client certificate):
# nbdinfo with nbds:// over TCP and a Unix socket, qemu-img info (TCP and Unix) and qemu-io
# with tls-creds-x509, an nbdcopy round trip with checksums (multi-conn: several TLS sessions,
# each read and written by two threads at once). Plain clients are refused with the
# server's "TLS is required" message; a client with another CA fails the handshake.
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/tls/tlslib.sh"

tls_standard
truncate -s 64M "$T/disk.img"
dg_start --tls require --tls-certificates "$T/srv" "$T/disk.img"
grep -q "listening on nbds://127.0.0.1:$DG_PORT/" "$DG_LOG" || fail "start-up line without nbds://"
tls_uris "$T/cli"

for uri in "$DGS_TCP" "$DGS_UNIX"; do
  assert_eq "$(nbdinfo --size "$uri")" 67108864 "size over $uri"
  nbdinfo "$uri" | grep 'with TLS' >/dev/null || fail "nbdinfo $uri: TLS not negotiated"
done

# Plain clients: refused, with the reason.
if LIBNBD_DEBUG=1 nbdinfo "$DG_TCP" >"$T/plain.out" 2>&1; then fail "plain nbdinfo was served"; fi
grep -q "server error message: TLS is required" "$T/plain.out" ||
  { cat "$T/plain.out" >&2; fail "plain nbdinfo: no TLS-required message"; }
if qemu-img info "$DG_TCP" >"$T/plain.out" 2>&1; then fail "plain qemu-img was served"; fi
grep -q "TLS negotiation required" "$T/plain.out" ||
  { cat "$T/plain.out" >&2; fail "plain qemu-img: no TLS-required message"; }

# A client that trusts another CA: the TLS handshake fails, the server stays up.
tls_ca "$T/otherca" "another CA"
mkdir -p "$T/othercli" && cp "$T/otherca/ca-cert.pem" "$T/othercli/"
if nbdinfo "nbds://127.0.0.1:$DG_PORT/?tls-certificates=$T/othercli" >/dev/null 2>&1; then
  fail "a client with another CA was served"
fi

# qemu-img and qemu-io.
qemu_tls_opts "$T/cli"
qemu-img info "${QEMU_ARGS[@]}" >"$T/qi.out" 2>&1 || { cat "$T/qi.out" >&2; fail "qemu-img info over TLS"; }
grep -q "virtual size: 64 MiB" "$T/qi.out" || { cat "$T/qi.out" >&2; fail "qemu-img info: size"; }
qemu-img info --object "tls-creds-x509,id=tls0,dir=$T/cli,endpoint=client" --image-opts \
  "driver=nbd,server.type=unix,server.path=$DG_SOCK,tls-creds=tls0,tls-hostname=localhost" \
  >"$T/qi.out" 2>&1 || { cat "$T/qi.out" >&2; fail "qemu-img info over TLS (Unix socket)"; }
qemu-io "${QEMU_ARGS[@]}" -c 'write -P 0x5a 1M 3M' -c 'read -P 0x5a 1M 3M' \
  -c 'read -P 0 0 1M' -c flush >"$T/qio.out" 2>&1 || { cat "$T/qio.out" >&2; fail "qemu-io over TLS"; }
grep -qi "pattern verification failed\|error" "$T/qio.out" && { cat "$T/qio.out" >&2; fail "qemu-io"; }

# nbdcopy round trips.
mkrandom "$T/src.bin" $((64 * 1024 * 1024))
want=$(sha256sum <"$T/src.bin" | cut -d' ' -f1)
for uri in "$DGS_TCP" "$DGS_UNIX"; do
  rm -f "$T/out.bin"
  nbdcopy "$T/src.bin" "$uri" || fail "nbdcopy into $uri"
  nbdcopy "$uri" "$T/out.bin" || fail "nbdcopy out of $uri"
  assert_eq "$(sha256sum <"$T/out.bin" | cut -d' ' -f1)" "$want" "round trip via $uri"
done
dg_stop
assert_eq "$(sha256sum <"$T/disk.img" | cut -d' ' -f1)" "$want" "image file after the copies"
pass "tls clients"
