#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The control socket (control = in [server]): mode 0600; `diskgate ctl list` and `stats`
# (per-export connection counts, with `metrics =` each export's request counts by command
# as metrics_stats_json gives them, --json for scripts); garbage, oversized lines,
# half-written JSON, non-objects and unknown commands each get a JSON error reply and a log
# line, and the server goes on serving.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
source "$HERE/gwlib.sh"

truncate -s 1M "$T/a.img" "$T/b.img"
CTL=$T/ctl.sock
MPORT=$(free_port)
GW_SERVER_EXTRA="control = $CTL
metrics = 127.0.0.1:$MPORT" gw_start "[export a]
path = $T/a.img
description = disk a
default = true
[export b]
path = $T/b.img"
assert_eq "$(stat -c %a "$CTL")" 600 "the control socket's mode"
"$DISKGATE" ctl --control "$CTL" list >"$T/list"
grep -E '^a +.*a\.img +disk a \(default\)$' "$T/list" >/dev/null || { cat "$T/list" >&2; fail "ctl list"; }
grep -E '^b +.*b\.img' "$T/list" >/dev/null || { cat "$T/list" >&2; fail "ctl list: b"; }

# one client holds a connection to b while stats are taken
$PY - "$DG_SOCK" "$DISKGATE" "$CTL" <<'PY' || { cat "$DG_LOG" >&2; fail "stats with a connection open"; }
import json, subprocess, sys
import nbd
sock, dg, ctl = sys.argv[1:4]
h = nbd.NBD()
h.set_export_name("b")
h.connect_unix(sock)
for i in range(3):
    h.pread(4096, i * 4096)
h.pwrite(b"x" * 512, 0)
h.flush()
out = subprocess.run([dg, "ctl", "--control", ctl, "--json", "stats"], check=True,
                     capture_output=True, text=True).stdout
r = json.loads(out)
assert r["ok"] is True, r
by = {e["name"]: e for e in r["exports"]}
assert by["b"]["connections"] == 1 and by["b"]["attached"] is True, by
assert by["a"]["connections"] == 0 and by["a"]["attached"] is False, by
ops = by["b"]["metrics"]["ops"]
assert [ops[o]["requests"] for o in ("read", "write", "flush", "trim")] == [3, 1, 1, 0], ops
assert ops["read"]["bytes"] == 3 * 4096 and ops["write"]["bytes"] == 512, ops
assert by["a"]["metrics"]["ops"]["read"]["requests"] == 0, by["a"]
table = subprocess.run([dg, "ctl", "--control", ctl, "stats", "b"], check=True,
                       capture_output=True, text=True).stdout.splitlines()
assert table[1].split() == ["b", "1", "yes", "3", "1", "1", "0", "0", "0"], table
one = json.loads(subprocess.run([dg, "ctl", "--control", ctl, "--json", "stats", "a"],
                                check=True, capture_output=True, text=True).stdout)
assert [e["name"] for e in one["exports"]] == ["a"], one
h.shutdown()
PY
rc=0
"$DISKGATE" ctl --control "$CTL" stats nosuch 2>"$T/err" || rc=$?
assert_eq "$rc" 1 "ctl stats of an unknown export"
grep "no such export" "$T/err" >/dev/null || fail "ctl's line for an unknown export"

# bad input: each gets {"ok":false,...}; the server goes on
$PY - "$CTL" <<'PY' || { cat "$DG_LOG" >&2; fail "bad input on the control socket"; }
import json, socket, sys
path = sys.argv[1]
def ask(data, shut=False):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(data)
    if shut:
        s.shutdown(socket.SHUT_WR)
    s.settimeout(10)
    buf = b""
    while b"\n" not in buf:
        try:
            got = s.recv(65536)
        except ConnectionResetError:
            break
        if not got:
            break
        buf += got
    s.close()
    return json.loads(buf.split(b"\n")[0])
for data, shut in ((b"garbage\n", False), (b"[1,2]\n", False), (b"{}\n", False),
                   (b'{"command":"explode"}\n', False), (b'{"command":"list","na', True),
                   (b'{"command":"stats","name":7}\n', False), (b"\xff\xfe\x00\n", False),
                   (b"x" * 70000, False)):
    r = ask(data, shut)
    assert r["ok"] is False and r["error"], (data[:40], r)
r = ask(b'{"command":"list"}\n{"command":"stats"}\n')
assert r["ok"] is True and len(r["exports"]) == 2, r
PY
grep "control socket: unknown command 'explode'" "$DG_LOG" >/dev/null || fail "no log line for an unknown command"
grep "control socket: request line too long" "$DG_LOG" >/dev/null || fail "no log line for an oversized request"
grep "control socket: request cut off" "$DG_LOG" >/dev/null || fail "no log line for half-written JSON"
assert_eq "$(nbdinfo --size "nbd+unix:///a?socket=$DG_SOCK")" 1048576 "serving after bad control input"
# SIGUSR2: the new server takes the control socket over (the old one lets go of it first)
kill -USR2 "$DG_PID"
wait_until 10 grep "the new server (pid" "$DG_LOG" >/dev/null || { cat "$DG_LOG" >&2; fail "no hand-over"; }
newpid=$(sed -n 's/.*the new server (pid \([0-9]*\)).*/\1/p' "$DG_LOG")
DG_PIDS+=("$newpid")
rc=0
wait "$DG_PID" || rc=$?
assert_eq "$rc" 0 "the old server's exit status after SIGUSR2"
wait_until 10 "$DISKGATE" ctl --control "$CTL" list >/dev/null 2>&1 ||
  { cat "$DG_LOG" >&2; fail "the new server's control socket"; }
kill -TERM "$newpid"
for i in $(seq 1 100); do kill -0 "$newpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$newpid" 2>/dev/null && fail "the new server did not stop"
[ ! -e "$CTL" ] || fail "the control socket was left behind"
pass "control socket: list, stats, bad input"
