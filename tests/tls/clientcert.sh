#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Client certificates: with ca-cert.pem in the --tls-certificates directory, a client must
# present a certificate that CA signed (as qemu's tls-creds-x509 with verify-peer). Without
# one, or with one from another CA, the TLS handshake fails; with one, nbdinfo, qemu-img and
# nbdcopy work. A revoked certificate (ca-crl.pem) is refused.
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/tls/tlslib.sh"

tls_standard
cp "$T/ca/ca-cert.pem" "$T/srv/"                 # verify clients against our CA
tls_cert "$T/ca" "$T/cli" client                 # $T/cli: CA + client-cert.pem/key
mkdir -p "$T/nocert" && cp "$T/ca/ca-cert.pem" "$T/nocert/"
tls_ca "$T/otherca" "another CA"
tls_cert "$T/otherca" "$T/badcli" client
cp "$T/ca/ca-cert.pem" "$T/badcli/"              # trusts the server, but a foreign cert

truncate -s 16M "$T/disk.img"
dg_start --tls require --tls-certificates "$T/srv" "$T/disk.img"
grep -q "client certificates required and verified" "$DG_LOG" || fail "start-up log: no client verification"
tls_uris "$T/cli"
assert_eq "$(nbdinfo --size "$DGS_TCP")" 16777216 "size with a client certificate"
assert_eq "$(nbdinfo --size "$DGS_UNIX")" 16777216 "size with a client certificate (Unix)"
for d in nocert badcli; do
  if nbdinfo --size "nbds://127.0.0.1:$DG_PORT/?tls-certificates=$T/$d" >/dev/null 2>&1; then
    fail "client credentials '$d' were accepted"
  fi
done
qemu_tls_opts "$T/cli"
qemu-img info "${QEMU_ARGS[@]}" >"$T/qi.out" 2>&1 || { cat "$T/qi.out" >&2; fail "qemu-img with a client certificate"; }
qemu_tls_opts "$T/nocert"
if qemu-img info "${QEMU_ARGS[@]}" >/dev/null 2>&1; then fail "qemu-img without a client certificate was served"; fi
mkrandom "$T/src.bin" $((16 * 1024 * 1024))
nbdcopy "$T/src.bin" "$DGS_TCP" || fail "nbdcopy in"
nbdcopy "$DGS_TCP" "$T/out.bin" || fail "nbdcopy out"
cmp -s "$T/src.bin" "$T/out.bin" || fail "nbdcopy round trip differs"
# libnbd does not send a certificate the server's CA list excludes; Python's ssl does.
$PY "$SRCDIR/tests/tls/nbdtls.py" --port "$DG_PORT" --ca "$T/cli" --cert "$T/cli" \
  tls_client_cert_accepted || fail "raw client with a client certificate"
$PY "$SRCDIR/tests/tls/nbdtls.py" --port "$DG_PORT" --ca "$T/cli" --cert "$T/badcli" \
  tls_client_cert_refused || fail "raw client with a foreign client certificate"
grep -q "TLS handshake failed: Certificate is required" "$DG_LOG" || fail "refusals not logged"
grep -q "client certificate refused: The certificate is NOT trusted" "$DG_LOG" ||
  { cat "$DG_LOG" >&2; fail "foreign certificate refusal not logged"; }
dg_stop

# Revocation: the client certificate listed in ca-crl.pem is refused.
printf 'crl_next_update = 2\ncrl_number = 1\n' >"$T/crl.info"
certtool --generate-crl --load-ca-privkey "$T/ca/ca-key.pem" --load-ca-certificate "$T/ca/ca-cert.pem" \
  --load-certificate "$T/cli/client-cert.pem" --template "$T/crl.info" \
  --outfile "$T/srv/ca-crl.pem" >"$T/crl.log" 2>&1 || { cat "$T/crl.log" >&2; fail "certtool: CRL"; }
dg_start --tls require --tls-certificates "$T/srv" "$T/disk.img"
tls_uris "$T/cli"
if nbdinfo --size "$DGS_TCP" >/dev/null 2>&1; then fail "a revoked client certificate was accepted"; fi
grep -q "client certificate refused: .*revoked" "$DG_LOG" || { cat "$DG_LOG" >&2; fail "revocation not logged"; }
tls_cert "$T/ca" "$T/cli2" client                # a sibling certificate, not revoked
cp "$T/ca/ca-cert.pem" "$T/cli2/"
assert_eq "$(nbdinfo --size "nbds://127.0.0.1:$DG_PORT/?tls-certificates=$T/cli2")" 16777216 \
  "size with an unrevoked client certificate"
dg_stop
pass "tls client certificates"
