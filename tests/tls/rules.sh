#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Spec rules 11 (NOTLS), 12 (FORCEDTLS), 13 (state forgotten after STARTTLS), 33 and 34
# (TLS bye after DISC, ABORT and at shutdown) with the raw client nbdtls.py, against three
# servers: --tls off, --tls require and --tls on (SELECTIVETLS: rule 13 needs options
# negotiated in the clear). Over TCP, and some require checks again over the Unix socket.
# --handshake-timeout 2 for the deadline checks.
. "$SRCDIR/tests/lib.sh"
. "$SRCDIR/tests/tls/tlslib.sh"

tls_standard
truncate -s 16M "$T/disk.img"
run() { $PY "$SRCDIR/tests/tls/nbdtls.py" --ca "$T/cli" --hs-timeout 2 "$@"; }
failed=0
logs=()

dg_start --handshake-timeout 2 "$T/disk.img"
logs+=("$DG_LOG")
run --port "$DG_PORT" off || failed=1
dg_stop

dg_start --handshake-timeout 2 --tls require --tls-certificates "$T/srv" "$T/disk.img"
logs+=("$DG_LOG")
run --port "$DG_PORT" require || failed=1
run --socket "$DG_SOCK" rule12_every_option_tls_reqd rule12_second_starttls_invalid \
  rule33_tls_bye tls_big_io || failed=1
grep -q "handshake not finished within 2 s" "$DG_LOG" || { echo "FAIL: no handshake timeout logged"; failed=1; }
run --port "$DG_PORT" --pid "$DG_PID" rule34_tls_drain_bye || failed=1
rc=0; wait "$DG_PID" || rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: diskgate exited $rc after SIGTERM"; failed=1; }

dg_start --handshake-timeout 2 --tls on --tls-certificates "$T/srv" "$T/disk.img"
logs+=("$DG_LOG")
run --port "$DG_PORT" on || failed=1
dg_stop

# A TLS record that fails to authenticate, in transmission and in option haggling: the
# connection closes and the log names the TLS error (it said "bad request magic" for the
# first and nothing for the second).
dg_start --tls require --tls-certificates "$T/srv" "$T/disk.img"
logs+=("$DG_LOG")
run --port "$DG_PORT" tls_bad_record_in_transmission tls_bad_record_in_haggling || failed=1
wait_until 5 grep -q "TLS error while reading requests (.*); closing the connection" "$DG_LOG" \
  || { echo "FAIL: no TLS error logged for a bad record in transmission"; failed=1; }
wait_until 5 grep -q "TLS error during option haggling (.*); closing" "$DG_LOG" \
  || { echo "FAIL: no TLS error logged for a bad record in option haggling"; failed=1; }
if grep -q "bad request magic" "$DG_LOG"; then
  echo "FAIL: a TLS error logged as a bad request magic"; failed=1
fi
dg_stop

[ "$failed" -eq 0 ] || { cat "${logs[@]}" >&2; fail "TLS rule checks"; }
pass "tls rules 11, 12, 13, 33, 34; TLS errors logged as such"
