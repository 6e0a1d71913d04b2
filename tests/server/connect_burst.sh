#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Many clients reconnecting at once (a host's VMs after a restart): 400 non-blocking
# connects issued together, over TCP and over a Unix socket, each then reads the 18-byte
# greeting; every one must be greeted within 10 s. With a listen backlog of 128 some TCP
# clients waited for ever and Unix connects failed (EAGAIN: "server backlog overflowed");
# the backlog is now the system's maximum. --max-handshakes is raised above 400 so that
# the handshake limit (admit.h) does not close the idle clients: the queue is what is
# tested here.
. "$SRCDIR/tests/lib.sh"
truncate -s 1M "$T/disk.img"
dg_start --max-handshakes 1000 "$T/disk.img"
for via in tcp unix; do
  $PY - "$via" "$DG_SOCK" "$DG_PORT" <<'PY' || fail "400 simultaneous connects over $via"
import errno, resource, selectors, socket, sys, time
via, path, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
N = 400
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
socks, refused = [], 0
for i in range(N):
    s = socket.socket(socket.AF_INET if via == "tcp" else socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    rc = s.connect_ex(("127.0.0.1", port) if via == "tcp" else path)
    if rc not in (0, errno.EINPROGRESS):
        refused += 1
        s.close()
        continue
    socks.append(s)
sel = selectors.DefaultSelector()
got = {}
for s in socks:
    sel.register(s, selectors.EVENT_READ)
    got[s] = b""
greeted, closed = 0, 0
deadline = time.monotonic() + 10
while got and time.monotonic() < deadline:
    for key, _ in sel.select(timeout=0.5):
        s = key.fileobj
        try:
            chunk = s.recv(18 - len(got[s]))
        except OSError:
            chunk = b""
        if chunk:
            got[s] += chunk
        if not chunk or len(got[s]) == 18:
            sel.unregister(s)
            if got.pop(s).startswith(b"NBDMAGIC"):
                greeted += 1
            else:
                closed += 1
print(f"{via}: {greeted} of {N} greeted; {refused} connects refused, {closed} closed "
      f"without a greeting, {len(got)} still waiting after 10 s")
for s in socks:
    s.close()
sys.exit(0 if greeted == N else 1)
PY
done
dg_stop
pass "400 simultaneous connects, TCP and Unix: all greeted"
