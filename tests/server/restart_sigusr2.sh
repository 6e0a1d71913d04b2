#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# SIGUSR2: a restart in which no connect is refused. diskgate starts a new copy of itself
# that inherits the listening sockets, then drains and exits 0; the new process accepts on
# the same sockets and takes the pid file. Meanwhile clients connect in a loop over the
# Unix socket and TCP (each must be greeted: no refused connect, no connection closed
# before its greeting) and qemu-io (reconnect-delay=10) writes a 4 KiB pattern every 3 ms:
# 0 failed writes, every block on disk. Then SIGTERM stops the new process, which removes
# the socket file and the pid file. The same restart of a writable block device (a loop
# device) hands its exclusive claim over.
. "$SRCDIR/tests/lib.sh"
command -v qemu-io >/dev/null || { echo "SKIP: no qemu-io"; exit 77; }
NW=300
truncate -s 4M "$T/disk.img"
dg_start "$T/disk.img"
pidf=$T/dg.$BASHPID.$DG_N.pid
old=$DG_PID
# the new process is not this shell's child: killed at exit through the pid file
DG_CLEANUP_EXTRA='p=$(cat "$pidf" 2>/dev/null) && [ "$p" != "$old" ] && kill -9 "$p"'
assert_eq "$(cat "$pidf")" "$old" "the pid file before SIGUSR2"

$PY - "$DG_SOCK" "$DG_PORT" >"$T/connects.out" 2>&1 <<'PY' &
import socket, sys, threading, time
path, port = sys.argv[1], int(sys.argv[2])
results = {"unix": [0, []], "tcp": [0, []]}
def loop(via):
    end = time.monotonic() + 3.0
    while time.monotonic() < end:
        try:
            if via == "unix":
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(10)
                s.connect(path)
            else:
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
            got = b""
            while len(got) < 18:
                chunk = s.recv(18 - len(got))
                if not chunk:
                    break
                got += chunk
            s.close()
            if not got.startswith(b"NBDMAGIC"):
                results[via][1].append(f"closed after {len(got)} bytes of the greeting")
            else:
                results[via][0] += 1
        except OSError as e:
            results[via][1].append(repr(e))
        time.sleep(0.002)
ts = [threading.Thread(target=loop, args=(v,)) for v in results]
for t in ts:
    t.start()
for t in ts:
    t.join()
bad = False
for via, (ok, errors) in results.items():
    print(f"{via}: {ok} connects greeted, {len(errors)} failed {errors[:3]}")
    bad = bad or errors or ok < 20
sys.exit(1 if bad else 0)
PY
conns=$!

args=()
for ((i = 0; i < NW; i++)); do
  args+=(-c "write -P $((i % 255 + 1)) $((i * 4096)) 4k" -c "sleep 3")
done
qemu-io --image-opts "driver=nbd,server.type=unix,server.path=$DG_SOCK,reconnect-delay=10" \
  "${args[@]}" >"$T/qio.out" 2>&1 &
qio=$!
sleep 0.5
kill -0 "$qio" 2>/dev/null || { cat "$T/qio.out" >&2; fail "qemu-io ended before SIGUSR2"; }
kill -USR2 "$old"
rc=0; wait "$old" || rc=$?
assert_eq "$rc" 0 "the old process's exit status after SIGUSR2"
new=$(cat "$pidf" 2>/dev/null || true)
[ -n "$new" ] && [ "$new" != "$old" ] && kill -0 "$new" 2>/dev/null ||
  { cat "$DG_LOG" >&2; fail "no new process in the pid file after SIGUSR2 (it holds '$new')"; }
DG_PIDS+=("$new")
grep -q "the new server (pid $new) accepts on these listeners" "$DG_LOG" ||
  fail "the handover was not logged: $(cat "$DG_LOG")"

rc=0; wait "$conns" || rc=$?
cat "$T/connects.out"
[ "$rc" -eq 0 ] || fail "a connect was refused or not greeted across SIGUSR2"
rc=0; wait "$qio" || rc=$?
failed=$(grep -c -i "fail\|error" "$T/qio.out" || true)
wrote=$(grep -c "^wrote 4096/4096 bytes" "$T/qio.out" || true)
[ "$failed" -eq 0 ] || { grep -i "fail\|error" "$T/qio.out" | head -3 >&2; fail "$failed failed writes across SIGUSR2"; }
assert_eq "$wrote" "$NW" "writes reported done (qemu-io status $rc)"

kill -TERM "$new"
wait_until 20 sh -c "! kill -0 $new 2>/dev/null" || fail "the new process did not stop on SIGTERM"
[ ! -e "$DG_SOCK" ] && [ ! -e "$pidf" ] || fail "the socket or pid file left behind by the new process"
$PY - "$T/disk.img" "$NW" <<'PY' || fail "a write is not on disk"
import sys
data = open(sys.argv[1], "rb").read()
for i in range(int(sys.argv[2])):
    if data[i * 4096:(i + 1) * 4096] != bytes([i % 255 + 1]) * 4096:
        sys.exit(f"block {i} does not hold its pattern")
PY
# A writable block device: the old process holds an exclusive claim on it (O_EXCL) until it
# has drained, and the new process waits for that claim as it waits for the image lock.
LOOP=$(losetup -f --show "$T/disk.img") || fail "losetup (needs root)"
DG_CLEANUP_EXTRA="$DG_CLEANUP_EXTRA; losetup -d $LOOP 2>/dev/null"
dg_start "$LOOP"
pidf=$T/dg.$BASHPID.$DG_N.pid
old=$DG_PID
# A client that sends READs and reads no reply keeps the old process draining (up to 5 s),
# so the new one meets the claim still held.
PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" <<'PY' &
import sys, time
from nbdproto import *
c = Raw.negotiated(unix=sys.argv[1])
c.send(b"".join(request_header(CMD_READ, i + 1, 0, 2 << 20, 0) for i in range(32)))
time.sleep(8)
PY
holder=$!
sleep 0.5
kill -USR2 "$old"
rc=0; wait "$old" || rc=$?
assert_eq "$rc" 0 "the old process's exit status after SIGUSR2 on a block device"
kill "$holder" 2>/dev/null || true
wait_until 10 sh -c "[ -s '$pidf' ] && [ \"\$(cat '$pidf')\" != $old ]" ||
  { cat "$DG_LOG" >&2; fail "no new process took over the block device after SIGUSR2"; }
new=$(cat "$pidf")
DG_PIDS+=("$new")
assert_eq "$(nbdinfo --size "$DG_UNIX")" 4194304 "the block device's size through the new process"
kill -TERM "$new"
wait_until 20 sh -c "! kill -0 $new 2>/dev/null" || fail "the new process did not stop on SIGTERM"
pass "SIGUSR2: no connect refused, 0 failed writes, the pid file follows the new process"
