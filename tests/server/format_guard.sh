#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The probed-raw guard (QEMU's rule against CVE-2008-2004): an image whose format was
# probed as raw refuses, with NBD_EPERM and one log line, a WRITE that would give it a
# qcow2 header at offset 0: the whole magic in one write, or its bytes written piece by
# piece. Writes elsewhere, and at 0 with other bytes, succeed. With --format raw the same
# writes succeed and the file starts with the magic afterwards. Refusals beyond the first
# ten on a connection are rate-limited, so a flood makes few lines.
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../lib.sh"
export PYTHONDONTWRITEBYTECODE=1

guard_run() { # EXPECT(refused|allowed) FILE
  PYTHONPATH=$SRCDIR/tests/lib $PY - "$DG_SOCK" "$1" "$2" <<'PY'
import sys
from nbdproto import *
sock, expect, path = sys.argv[1], sys.argv[2], sys.argv[3]
c = Raw.negotiated(unix=sock)
magic = b"QFI\xfb"
header = magic + b"\x00\x00\x00\x03" + bytes(504)
want = EPERM if expect == "refused" else 0
cases = [("the whole header at 0", 0, header),
         ("the magic alone at 0", 0, magic),
         ("the magic's first two bytes at 0", 0, magic[:2]),
         ("the magic's last three bytes at 1", 1, magic[1:] + b"zz")]
for what, off, data in cases:
    err, _ = c.request(CMD_WRITE, 1, off, len(data), payload=data)
    assert err == want, f"{what}: NBD error {err}, expected {want}"
for what, off, data in [("one wrong byte at 2", 2, b"G"),
                        ("the magic at 512", 512, magic),
                        ("other bytes at 0", 0, b"\xeb\x63\x90" + bytes(509))]:
    err, _ = c.request(CMD_WRITE, 2, off, len(data), payload=data)
    assert err == 0, f"{what}: NBD error {err}"
if expect == "refused":
    for i in range(200):  # a flood of refusals: the log stays short
        err, _ = c.request(CMD_WRITE, 3, 0, 512, payload=header)
        assert err == EPERM
else:
    err, _ = c.request(CMD_WRITE, 4, 0, len(header), payload=header)
    assert err == 0, f"the header at 0 again: NBD error {err}"
c.close()
PY
}

truncate -s 1M "$T/p.img"
dg_start "$T/p.img"
guard_run refused "$T/p.img" || fail "the probed raw image took a header-making write"
dg_stop
head -c 4 "$T/p.img" | od -An -tx1 | grep "eb 63 90" >/dev/null || fail "the allowed write at 0 is missing"
n=$(grep -c "refused: it would give the probed raw image a qcow2 header" "$DG_LOG" || true)
[ "$n" -ge 4 ] && [ "$n" -le 20 ] || fail "$n guard lines in the log (expected 4..20, rate-limited)"
# the image is still raw, so it is probed raw again
dg_start --read-only "$T/p.img"
dg_stop
grep -q "raw image (probed)" "$DG_LOG" || fail "the guarded image no longer probes as raw"

truncate -s 1M "$T/e.img"
dg_start --format raw "$T/e.img"
guard_run allowed "$T/e.img" || fail "--format raw refused a write the guard should leave alone"
dg_stop
assert_eq "$(head -c 3 "$T/e.img")" "QFI" "the explicit raw image after the writes"
! grep -q "probed raw image" "$DG_LOG" || fail "--format raw logged a guard line"
pass "a probed raw image refuses header-making writes; --format raw does not"
