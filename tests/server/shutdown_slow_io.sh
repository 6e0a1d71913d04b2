#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGTERM while a WRITE is held 8 s in the backing (the fault-injecting backing): its reply
# still arrives, past the old 5 s limit; a WRITE sent on the same connection after the
# signal, and a READ sent on an idle one, get no reply at all (neither NBD_ESHUTDOWN nor
# data: a reconnecting client re-sends them) and the late WRITE is not written; the server
# exits 0 once the reply is out. Each engine once, one over the Unix socket, one over TCP
# (each run takes the 8 s; the two run at once, each with its own image and control socket).
. "$SRCDIR/tests/lib.sh"
export PYTHONDONTWRITEBYTECODE=1

# run ENGINE VIA: the scenario against a server of ENGINE, the client over VIA (unix|tcp).
run() {
  local engine=$1 via=$2 rc disk=$T/disk.$1.img
  export DISKGATE_TEST_FAULTS=$T/ctl.$engine
  {
    rm -f "$disk"; truncate -s 1M "$disk"
    DG_ENGINE=$engine dg_start "faulty:$disk"
    PYTHONPATH=$SRCDIR/tests/durability:$SRCDIR/tests/lib $PY - "$DG_SOCK" "$DG_PORT" "$via" \
      "$DG_PID" "$DISKGATE_TEST_FAULTS" <<'PY' || fail "requests at SIGTERM ($engine, $via)"
import os, signal, sys, time
from dgdur import Faults
from nbdproto import Raw, CMD_WRITE, CMD_READ
sock, port, via, pid, ctl = sys.argv[1:]
where = {"unix": sock} if via == "unix" else {"tcp": ("127.0.0.1", int(port))}
f = Faults(ctl)
f.cmd("rule delay write ms=8000")
a = Raw.negotiated(**where)
idle = Raw.negotiated(**where)
a.s.settimeout(30)
a.send_request(CMD_WRITE, 1, 0, 4096, payload=b"A" * 4096)
time.sleep(0.5)                      # read and in the backing
t0 = time.monotonic()
os.kill(int(pid), signal.SIGTERM)
time.sleep(0.5)
try:
    a.send_request(CMD_WRITE, 2, 65536, 4096, payload=b"B" * 4096)
except OSError:
    pass
try:
    idle.send_request(CMD_READ, 3, 0, 4096)
    closed, data = idle.wait_closed(5)
    if data or not closed:
        sys.exit(f"idle connection after SIGTERM: {len(data)} bytes of reply, closed={closed}")
except OSError:
    pass
error, cookie, _ = a.reply()
took = time.monotonic() - t0
if (error, cookie) != (0, 1):
    sys.exit(f"the WRITE in flight at SIGTERM got error {error} cookie {cookie}")
if took < 6:
    sys.exit(f"its reply came {took:.1f} s after SIGTERM: the delay rule did not hold it")
closed, data = a.wait_closed(5)
if data or not closed:
    sys.exit(f"after the reply: {len(data)} more bytes (a reply to the late WRITE?), "
             f"closed={closed}")
print(f"the WRITE held 8 s was answered {took:.1f} s after SIGTERM; the late requests were not")
PY
    rc=0; wait "$DG_PID" || rc=$?
    assert_eq "$rc" 0 "exit status after SIGTERM ($engine, $via)"
    cmp <(head -c 4096 "$disk") <(head -c 4096 /dev/zero | tr '\0' A) ||
      fail "the WRITE in flight at SIGTERM is not on disk ($engine, $via)"
    cmp <(dd if="$disk" bs=64K skip=1 count=1 status=none | head -c 4096) \
      <(head -c 4096 /dev/zero) || fail "the WRITE sent after SIGTERM was written ($engine, $via)"
    if grep -q "replies not read\|refused with NBD error" "$DG_LOG"; then
      cat "$DG_LOG" >&2; fail "a reply dropped or a request refused at shutdown ($engine, $via)"
    fi
  }
}
dg_spawn uring-unix run uring unix
dg_spawn threads-tcp run threads tcp
dg_join
pass "SIGTERM: a WRITE held 8 s is answered, later requests get no reply (both engines)"
