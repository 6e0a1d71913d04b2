#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# TLS 1.3 KeyUpdate from the client (RFC 8446 4.6.3), legal at any time after the
# handshake: keyupdate_client sends one in option haggling and one during each of 6 READ
# replies of 4 MiB (half of them asking the server to update its own keys), and checks
# every reply; 8 connections. (GnuTLS itself refuses more than 8 KeyUpdates a second on a
# session: "Too many handshake packets have been received".) Before the fix the server logged "Connection timed out" or "handshake not
# finished" and dropped the connection, and a KeyUpdate during a streaming reply made the
# client fail to decrypt it (the reader thread changed the session's keys while the writer
# thread sent). Also: a record cut short by the client's close is not called a timeout, and
# a client that leaves right after STARTTLS is not a "TLS handshake failed".
# $1: the keyupdate_client binary (meson passes it).
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/tls/tlslib.sh"

client=${1:?usage: keyupdate.sh KEYUPDATE_CLIENT}
tls_standard
truncate -s 16M "$T/disk.img"
dg_start --handshake-timeout 30 --tls require --tls-certificates "$T/srv" "$T/disk.img"
for i in 1 2 3 4 5 6 7 8; do
  "$client" "$DG_PORT" "$T/cli/ca-cert.pem" 6 || { cat "$DG_LOG" >&2; fail "KeyUpdate run $i"; }
done
# A TLS record whose header promises 256 bytes, 10 of them sent, then the TCP close: in
# transmission, in option haggling, and in the TLS handshake itself (half a ClientHello).
$PY - "$DG_PORT" "$SRCDIR" "$T/cli/ca-cert.pem" <<'PY' || fail "truncated records"
import os, socket, sys, time
sys.path.insert(0, os.path.join(sys.argv[2], "tests", "tls"))
from nbdtls import Client
port = int(sys.argv[1]); ca = sys.argv[3]
cut = b"\x17\x03\x03\x01\x00" + os.urandom(10)
c = Client(port=port).negotiate().starttls(ca); c.go()
os.write(c.s.fileno(), cut); time.sleep(0.05); c.s.close()
c = Client(port=port).negotiate().starttls(ca)
os.write(c.s.fileno(), cut); time.sleep(0.05); c.s.close()
c = Client(port=port).negotiate()
assert c.final(5) == 1, "STARTTLS not acknowledged"
c.s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"); time.sleep(0.05); c.s.close()
# and a client that leaves right after STARTTLS's ACK: it went away, not a TLS failure
c = Client(port=port).negotiate()
assert c.final(5) == 1, "STARTTLS not acknowledged"
c.s.close()
PY
sleep 1
if grep -E "timed out|not finished within" "$DG_LOG"; then
  fail "a KeyUpdate or a record cut short by a close was logged as a timeout"
fi
[ "$(grep -c "TLS error\|TLS handshake failed" "$DG_LOG")" -eq 3 ] ||
  { cat "$DG_LOG" >&2; fail "expected one TLS error line for each cut record, none for a client that left"; }
dg_stop
pass "TLS 1.3 KeyUpdates from the client (48 READs of 4 MiB checked); cut records are TLS errors, not timeouts"
