#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Out of file descriptors: a client past the limit sees its connection closed at once (a
# reserve descriptor takes it off the listen queue) instead of waiting there, the spell is
# logged once when it starts and once when it is over (even while connections come and go
# at the limit), and clients are served again once descriptors are free.
. "$SRCDIR/tests/lib.sh"
truncate -s 16M "$T/fd.img"
rm -f "$T/fd.sock"
(ulimit -n 48; exec "$DISKGATE" serve --engine "${DG_ENGINE:-uring}" --handshake-timeout 60 \
  --socket "$T/fd.sock" "$T/fd.img") >/dev/null 2>"$T/fd.log" &
fd_pid=$!
DG_PIDS+=("$fd_pid") # stopped by the cleanup if a check fails
for _ in $(seq 100); do [ -S "$T/fd.sock" ] && break; sleep 0.05; done
[ -S "$T/fd.sock" ] || fail "fd limit 48: the server did not start: $(cat "$T/fd.log")"
out=$($PY - "$T/fd.sock" "$T/fd.log" <<'PY' 2>&1) || fail "out of descriptors: $out"
import socket, sys, time
import nbd
path, log = sys.argv[1], sys.argv[2]


held, closed = [], 0


def client():
    """A new connection, kept in `held` if the server greets it, counted in `closed` if it
    closes it at once; a client left waiting fails the check."""
    global closed
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(path)
    try:
        greeting = s.recv(18)  # NBDMAGIC, IHAVEOPT, handshake flags
    except socket.timeout:
        sys.exit("a client past the limit was left waiting (no greeting, not closed) for 5 s")
    if greeting:
        held.append(s)
    else:
        closed += 1
        s.close()


for i in range(80):  # far more than 48 descriptors allow; each waits in its handshake
    client()
if not held or closed == 0:
    sys.exit("%d clients greeted, %d closed: expected both" % (len(held), closed))
for _ in range(20):  # at the limit, connections end and others come
    held.pop(0).close()
    time.sleep(0.05)
    client()
    client()
for s in held:
    s.close()
time.sleep(0.5)
h = nbd.NBD()  # served again once descriptors are free
h.connect_unix(path)
assert h.pread(4096, 0) == bytes(4096)
h.shutdown()
for _ in range(100):  # the spell ends 5 s after the last failure
    if "no longer" in open(log).read():
        break
    time.sleep(0.1)
print("%d closed at once" % closed)
PY
kill -TERM "$fd_pid"
rc=0; wait "$fd_pid" || rc=$?
assert_eq "$rc" 0 "exit status after running out of descriptors"
assert_eq "$(grep -c 'Too many open files' "$T/fd.log")" 2 \
  "log lines for one spell out of descriptors (start, end): $(cat "$T/fd.log")"
grep -q 'Too many open files; new connections are closed at once until it passes (.*ulimit -Hn' \
  "$T/fd.log" || fail "no line for the start of the spell: $(cat "$T/fd.log")"
grep -q 'Too many open files no longer; [1-9][0-9]* connections* w[ae][sr]e* closed at once' \
  "$T/fd.log" || fail "no line for the end of the spell: $(cat "$T/fd.log")"
pass "out of descriptors: one line each way; $out"
