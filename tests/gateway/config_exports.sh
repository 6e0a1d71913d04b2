#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Many exports from one config file: NBD_OPT_LIST lists each with its description, the empty
# name reaches the `default = true` export, each export serves its own file, and `allow`
# hides an export from a client it does not name (NBD_REP_ERR_UNKNOWN; absent from the
# list; one log line) over TCP and over the Unix socket.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
source "$HERE/gwlib.sh"

body=""
for i in $(seq 1 20); do
  truncate -s $((i * 65536)) "$T/d$i.img"
  body+="[export disk$i]
path = $T/d$i.img
description = disk number $i
"
done
truncate -s 1M "$T/dflt.img" "$T/net10.img" "$T/local.img" "$T/unix.img"
body+="[export main]
path = $T/dflt.img
default = true
[export net10]
path = $T/net10.img
allow = 10.0.0.0/8, 2001:db8::/32
[export local]
path = $T/local.img
allow = 127.0.0.0/24
description = loopback only
[export unixonly]
path = $T/unix.img
allow = unix
"
gw_start "$body"

$PY - "$DG_PORT" "$DG_SOCK" <<'PY' || { cat "$DG_LOG" >&2; fail "exports seen by clients"; }
import sys
import nbd

port, sock = sys.argv[1], sys.argv[2]

def listing(tcp):
    h = nbd.NBD()
    h.set_opt_mode(True)
    if tcp:
        h.connect_tcp("127.0.0.1", port)
    else:
        h.connect_unix(sock)
    h.opt_list(lambda name, desc: seen.__setitem__(name, desc) or 0)
    h.opt_abort()

def size_of(name, tcp):
    h = nbd.NBD()
    h.set_export_name(name)
    try:
        if tcp:
            h.connect_tcp("127.0.0.1", port)
        else:
            h.connect_unix(sock)
    except nbd.Error as e:
        return str(e)
    s = h.get_size()
    h.shutdown()
    return s

for tcp, visible in ((True, "local"), (False, "unixonly")):
    seen = {}
    listing(tcp)
    want = {"disk%d" % i for i in range(1, 21)} | {"main", visible}
    assert set(seen) == want, (tcp, sorted(set(seen) ^ want))
    for i in range(1, 21):
        assert seen["disk%d" % i] == "disk number %d" % i, seen
    assert size_of("disk7", tcp) == 7 * 65536
    assert size_of("", tcp) == 1048576          # the default export
    assert size_of(visible, tcp) == 1048576
    for hidden in ({"net10", "local", "unixonly"} - {visible}):
        r = size_of(hidden, tcp)
        assert isinstance(r, str) and "no export named" in r, (hidden, r)
    assert seen.get("local", "loopback only") == "loopback only"
for i in range(1, 21):
    assert size_of("disk%d" % i, True) == i * 65536
PY
grep "refused export 'net10' by its allow list (NBD_OPT_GO)" "$DG_LOG" >/dev/null ||
  { cat "$DG_LOG" >&2; fail "no log line for the refused export"; }
grep "unknown export 'net10'" "$DG_LOG" >/dev/null && fail "a refusal logged twice"
dg_stop

# Without a default, the empty name is unknown
gw_start "[export only]
path = $T/d1.img"
! nbdinfo --size "nbd+unix:///?socket=$DG_SOCK" >/dev/null 2>&1 || fail "no default: empty name served"
assert_eq "$(nbdinfo --size "nbd+unix:///only?socket=$DG_SOCK")" 65536 "the named export"
dg_stop
pass "many exports listed with descriptions, the default export, allow lists"
