#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGTERM while a TLS client has a request in flight: the server finishes it and the client
# gets its reply, as a plain client does (tls-rules checks the close_notify of an idle
# client). The drain's shutdown(SHUT_RD) must not reach GnuTLS as an end of stream without
# close_notify, which it would take for a truncation attack (the session invalidated, the
# reply and the close_notify never sent, though the write landed). TLS connections use
# threads with either engine; the backing holds each WRITE 7 s, past the 6 s after which
# the shutdown once dropped replies.
. "$SRCDIR/tests/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
export DISKGATE_TEST_FAULTS=$T/ctl

key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf 'alice:%s\n' "$key" >"$T/keys.psk"
truncate -s 1M "$T/disk.img"
dg_start --tls on --tls-psk "$T/keys.psk" "faulty:$T/disk.img"
PYTHONPATH=$SRCDIR/tests/durability $PY - "$DG_UNIX" "$DG_SOCK" "$T/keys.psk" "$DG_PID" \
  "$DISKGATE_TEST_FAULTS" <<'PY' || fail "replies at shutdown"
import os, signal, sys, time
import nbd
from dgdur import Faults
plain_uri, sock, psk, pid, ctl = sys.argv[1:]
f = Faults(ctl)
f.cmd("rule delay write ms=7000")
plain = nbd.NBD()
plain.connect_uri(plain_uri)
tls = nbd.NBD()
tls.set_uri_allow_local_file(True)
tls.connect_uri(f"nbds+unix://alice@/?socket={sock}&tls-psk-file={psk}")
cookies = {"plain": (plain, plain.aio_pwrite(b"P" * 4096, 0)),
           "TLS": (tls, tls.aio_pwrite(b"T" * 4096, 65536))}
time.sleep(0.3)
os.kill(int(pid), signal.SIGTERM)
for name, (h, cookie) in cookies.items():
    try:
        while not h.aio_command_completed(cookie):
            h.poll(-1)
    except nbd.Error as e:
        sys.exit(f"{name} client: no reply to its WRITE in flight at SIGTERM: {e}")
    print(f"{name} client: its WRITE in flight at SIGTERM was answered")
PY
rc=0
wait "$DG_PID" || rc=$?
assert_eq "$rc" 0 "exit status after SIGTERM"
cmp <(head -c 4096 "$T/disk.img") <(head -c 4096 /dev/zero | tr '\0' P) || fail "the plain write"
cmp <(dd if="$T/disk.img" bs=64K skip=1 count=1 status=none | head -c 4096) \
  <(head -c 4096 /dev/zero | tr '\0' T) || fail "the TLS write"
pass "SIGTERM: requests in flight are answered over TLS as over plain NBD"
