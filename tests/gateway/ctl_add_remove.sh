#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Exports added and removed while the server runs (`diskgate ctl add|remove`, export_table.h),
# with fio (verify=crc32c) writing and verifying on an untouched export all along (it must never see an
# error or a wrong byte):
#  - add: the new export is listed (NBD_OPT_LIST, ctl list) and served; mistakes are refused
#    with the config file's messages; a name taken, or a second default, is refused.
#  - remove with requests in flight: a raw client queues WRITEs and READs without reading its
#    replies (so the server stops reading at its in-flight limit), the export is removed,
#    then the client reads: every request the server had read is answered (the WRITEs are on
#    disk, the READs carry the right bytes), the next one gets NBD_ESHUTDOWN, then EOF; no
#    reply twice.
#  - remove --force closes such a client at once; a client that never reads its replies is
#    closed after SERVER_SHUTDOWN_SEND_S (5 s) without --force.
#  - 1,000 add/remove cycles on one control connection (every 100th with a client attached):
#    the server's open descriptors are the same after as before; under ASan its exit finds
#    no leak.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
source "$HERE/gwlib.sh"
export PYTHONPATH=$HERE/../lib${PYTHONPATH:+:$PYTHONPATH}

truncate -s 64M "$T/a.img" "$T/c.img"
CTL=$T/ctl.sock
GW_SERVER_EXTRA="control = $CTL" gw_start "[export a]
path = $T/a.img"
ctl() { "$DISKGATE" ctl --control "$CTL" "$@"; }

gw_load_start a

ctl add c "$T/c.img" --description "disk c" >"$T/add.out" || { cat "$DG_LOG" >&2; fail "ctl add c"; }
assert_eq "$(cat "$T/add.out")" "export 'c' added" "ctl add's line"
ctl list | grep -E "^c +.*c\.img +disk c$" >/dev/null || fail "ctl list does not show c"
nbdinfo --list "nbd+unix:///?socket=$DG_SOCK" | grep -F 'export="c"' >/dev/null ||
  fail "NBD_OPT_LIST does not show c"
rc=0; ctl add c "$T/c.img" 2>"$T/err" || rc=$?
assert_eq "$rc" 1 "ctl add of a name taken"
grep -F "an export named 'c' exists already" "$T/err" >/dev/null || fail "add c twice: $(cat "$T/err")"
rc=0; ctl add d "$T/c.img" --sync sometimes 2>"$T/err" || rc=$?
assert_eq "$rc" 1 "ctl add with a bad value"
grep -F "add 'd': sync: --sync takes" "$T/err" >/dev/null || fail "bad sync: $(cat "$T/err")"
rc=0; ctl add d "$T/c.img" --frobnicate 2>"$T/err" || rc=$?
assert_eq "$rc" 2 "ctl add with an unknown option"
rc=0; ctl remove nosuch 2>"$T/err" || rc=$?
assert_eq "$rc" 1 "ctl remove of an unknown export"

# $1: mode (drain, force, silent). Queues 64 WRITEs (64 KiB, byte i+1 at i * 64 KiB) and
# 200 READs of 256 KiB on export c without reading replies, removes c, then reads what comes.
drain_case() {
  $PY - "$DG_SOCK" "$DISKGATE" "$CTL" "$T/c.img" "$1" <<'PY' || { cat "$DG_LOG" >&2; fail "removal ($1)"; }
import json, struct, subprocess, sys, time
import nbdproto as p
sock, dg, ctl, img, mode = sys.argv[1:6]
class Closed(Exception):
    pass
class Client(p.Raw):
    def eof(self, got, wanted):
        raise Closed(got)
c = Client.negotiated(unix=sock, name="c")
for i in range(64):
    c.send_request(p.CMD_WRITE, i, i * 65536, 65536, payload=bytes([i + 1]) * 65536)
for i in range(64, 264):
    c.send_request(p.CMD_READ, i, (i % 64) * 65536, 262144)
time.sleep(0.5)  # the server reads until 128 requests are in flight
args = [dg, "ctl", "--control", ctl, "--json", "remove", "c"] + (["--force"] if mode == "force" else [])
t0 = time.monotonic()
rm = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
if mode == "silent":  # never reads: closed after 5 s
    out = json.loads(rm.communicate(timeout=30)[0])
    took = time.monotonic() - t0
    assert out["ok"] and out["connections"] == 1 and out["cut"] == 1, out
    assert 4.5 <= took < 15, f"a silent client was closed after {took:.1f} s"
    sys.exit(0)
if mode == "force":
    out = json.loads(rm.communicate(timeout=30)[0])
    assert time.monotonic() - t0 < 3, "remove --force waited"
    assert out["ok"] and out["connections"] == 1 and out["cut"] == 1, out
else:
    time.sleep(0.5)  # the removal has begun; the client reads only now
seen, shut, cut_at, shut_cookie = set(), 0, None, None
try:
    while True:
        magic, err, cookie = struct.unpack(">IIQ", c.recv_exact(16))
        assert magic == p.SIMPLE_REPLY_MAGIC and cookie not in seen, (magic, cookie)
        seen.add(cookie)
        if err == 108:  # NBD_ESHUTDOWN (replies come in completion order: it may lead)
            shut += 1
            shut_cookie = cookie
            continue
        assert err == 0, f"cookie {cookie}: error {err}"
        if cookie >= 64:
            data = c.recv_exact(262144)
            assert data[:65536] == bytes([cookie % 64 + 1]) * 65536, f"READ {cookie}: wrong bytes"
except Closed as e:
    cut_at = e.args[0]
except (ConnectionResetError, BrokenPipeError):
    assert mode == "force", "reset without --force"
if mode == "drain":
    out = json.loads(rm.communicate(timeout=30)[0])
    assert out["ok"] and out["connections"] == 1 and out["cut"] == 0, out
    assert shut == 1, f"{shut} NBD_ESHUTDOWN replies, expected one for the first request not started"
    assert cut_at == 0, f"EOF in the middle of a reply ({cut_at} bytes)"
    # requests are read in order: all before the refused one answered, none after it
    assert 128 <= shut_cookie < 263, f"NBD_ESHUTDOWN for request {shut_cookie}"
    assert seen == set(range(shut_cookie + 1)), f"answered: {sorted(set(range(264)) ^ seen)[:8]}..."
    with open(img, "rb") as f:
        for i in range(64):
            f.seek(i * 65536)
            assert f.read(65536) == bytes([i + 1]) * 65536, f"WRITE {i} acknowledged, not on disk"
else:
    assert len(seen) < 264, "every request answered despite --force"
PY
}
drain_case drain
grep -F "export 'c' removed: 1 connection closed (0 before all replies were sent)" "$DG_LOG" \
  >/dev/null || fail "no removal line"
nbdinfo --list "nbd+unix:///?socket=$DG_SOCK" | grep -F 'export="c"' >/dev/null &&
  fail "NBD_OPT_LIST still shows c"
ctl add c "$T/c.img" >/dev/null
drain_case force
ctl add c "$T/c.img" >/dev/null
drain_case silent

# 1,000 add/remove cycles on one control connection; every 100th attaches a client
fds_before=$(ls "/proc/$DG_PID/fd" | wc -l)
$PY - "$DG_SOCK" "$CTL" "$T/c.img" <<'PY' || { cat "$DG_LOG" >&2; fail "add/remove cycles"; }
import json, socket, sys
import nbd
sock, ctl, img = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX)
s.connect(ctl)
f = s.makefile("rw")
def ask(req):
    f.write(json.dumps(req) + "\n"); f.flush()
    r = json.loads(f.readline())
    assert r["ok"], (req, r)
    return r
for i in range(1000):
    ask({"command": "add", "name": f"cyc{i}", "path": img, "options": {"read-only": True}})
    if i % 100 == 0:
        h = nbd.NBD(); h.set_export_name(f"cyc{i}"); h.connect_unix(sock)
        assert h.pread(512, 0) is not None
        h.shutdown()
    r = ask({"command": "remove", "name": f"cyc{i}"})
    assert r["connections"] <= 1, r
PY
assert_eq "$(ls "/proc/$DG_PID/fd" | wc -l)" "$fds_before" "open descriptors after 1,000 add/remove cycles"

gw_load_end
dg_stop
pass "ctl add/remove: drained removals, --force, a silent client, 1,000 cycles; export a untouched (fio read back $GW_LOAD_ROUNDS blocks)"
