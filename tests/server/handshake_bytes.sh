#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C04: exact handshake bytes (raw socket, tests/lib/nbdproto.py), over Unix and TCP:
#  - the server's handshake flags are FIXED_NEWSTYLE|NO_ZEROES and nothing else;
#  - client flags FIXED_NEWSTYLE only + NBD_OPT_EXPORT_NAME "disk": exactly 8 (size) + 2
#    (flags) + 124 zero bytes, nothing more, then a READ returns the file's bytes;
#  - with NO_ZEROES: exactly 10 bytes, nothing more, then a READ works;
#  - an unknown client flag bit: the server closes the connection (and stays up).
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the source tree

mkrandom "$T/disk.img" 1048576
dg_start --export disk "$T/disk.img"

PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" "$DG_PORT" "$T/disk.img" <<'PY'
import sys
from nbdproto import *
sock, port, img = sys.argv[1], int(sys.argv[2]), sys.argv[3]
data = open(img, "rb").read()
for where in ({"unix": sock}, {"tcp": ("127.0.0.1", port)}):
    for no_zeroes in (False, True):
        c = Raw(**where)
        flags = c.greeting()
        assert flags == FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES, f"handshake flags {flags:#x}"
        c.send_client_flags(FLAG_FIXED_NEWSTYLE | (FLAG_NO_ZEROES if no_zeroes else 0))
        size, tflags = c.export_name("disk", no_zeroes)   # reads exactly 10 or 134 bytes
        assert size == len(data), f"size {size}, expected {len(data)}"
        assert tflags & TF_HAS_FLAGS, f"transmission flags {tflags:#x} lack HAS_FLAGS"
        extra = c.pending()
        assert extra == b"", f"{len(extra)} unexpected bytes after the export-name reply " \
                             f"(no_zeroes={no_zeroes}, {where})"
        assert c.read(4096, 8192) == data[4096:12288], "READ after EXPORT_NAME: wrong data"
        c.close()
    # unknown client flag bits: the server must drop the connection, not haggle
    for bad in (1 << 2, 1 << 15, 1 << 31):
        c = Raw(**where)
        c.greeting()
        try:
            c.send_client_flags(FLAG_FIXED_NEWSTYLE | bad)
            c.send_option(OPT_GO, bytes(6))
        except OSError:
            pass  # already closed: fine
        assert c.closed_by_server(), f"client flag {bad:#x} accepted (connection not closed)"
        c.s.close()
print("c04 raw handshake checks passed")
PY
# the server survived and still serves a normal client
[ "$(nbdinfo --size "$DG_UNIX")" = 1048576 ] || fail "server not usable after bad client flags"
dg_stop
pass "C04 handshake bytes"
