#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A snapshot ("rbd:POOL/IMAGE@SNAP") is served read-only: the export says read-only, reads
# return the snapshot's bytes (not the head's later writes), and WRITE, TRIM and
# WRITE_ZEROES sent anyway (libnbd's strict mode off) fail with EPERM (TRIM and
# WRITE_ZEROES: or EINVAL when the read-only export does not advertise them).
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"

mkrandom "$T/v1.bin" $((32 * 1024 * 1024))
rbdc import --no-progress "$T/v1.bin" rbd/img >/dev/null
rbdc snap create rbd/img@s1 >/dev/null 2>&1

# The head keeps changing after the snapshot, through diskgate.
rbd_serve rbd:rbd/img
HEAD_UNIX=$DG_UNIX HEAD_PID=$DG_PID HEAD_LOG=$DG_LOG
mkrandom "$T/v2.bin" $((1024 * 1024))
nbdcopy "$T/v2.bin" "$HEAD_UNIX"

rbd_serve rbd:rbd/img@s1
SNAP_PID=$DG_PID
nbdinfo --is read-only "$DG_UNIX" || fail "the snapshot export is not read-only"
rc=0; nbdinfo --can write "$DG_UNIX" || rc=$?
assert_eq "$rc" 2 "nbdinfo --can write on the snapshot (2 = false)"
assert_eq "$(nbdinfo --size "$DG_TCP")" $((32 * 1024 * 1024)) "snapshot size"
nbdcopy "$DG_TCP" "$T/snap.bin"
cmp "$T/snap.bin" "$T/v1.bin" || fail "the snapshot export does not hold the snapshot's bytes"
pass "snapshot served read-only with the snapshot's bytes"

$PY - "$DG_UNIX" <<'PYEOF' || fail "writes to the snapshot were not refused with EPERM"
import errno, nbd, sys
h = nbd.NBD()
h.set_strict_mode(0)          # send the requests; let the server refuse them
h.connect_uri(sys.argv[1])
before = h.pread(4096, 0)
# WRITE must fail with EPERM. TRIM and WRITE_ZEROES too when the export advertises them;
# when it does not (read-only exports need not), EINVAL for an unadvertised command is
# also right. (FUA is not tried: a read-only export does not advertise it.)
tries = [("WRITE", lambda: h.pwrite(b"\x55" * 4096, 0), True),
         ("TRIM", lambda: h.trim(4096, 0), h.can_trim()),
         ("WRITE_ZEROES", lambda: h.zero(4096, 0), h.can_zero())]
for what, call, advertised in tries:
    allowed = (errno.EPERM,) if advertised else (errno.EPERM, errno.EINVAL)
    try:
        call()
    except nbd.Error as e:
        if e.errnum not in allowed:
            sys.exit(f"{what}: {e.errno} ({e.string}), expected EPERM")
        print(f"{what}: refused with {e.errno}{'' if advertised else ' (not advertised)'}")
    else:
        sys.exit(f"{what}: succeeded on a snapshot")
assert h.pread(4096, 0) == before, "snapshot bytes changed"
h.flush()                     # FLUSH is harmless on a read-only export
h.shutdown()
PYEOF
pass "WRITE, TRIM, WRITE_ZEROES on the snapshot refused; bytes unchanged"

# The head has the new bytes; the snapshot still the old ones.
nbdcopy "$HEAD_UNIX" "$T/head.bin"
cmp -n $((1024 * 1024)) "$T/head.bin" "$T/v2.bin" || fail "the head lost its write"
cmp "$T/snap.bin" "$T/v1.bin" || fail "snapshot changed"
pass "head changed, snapshot unchanged"
kill -0 "$SNAP_PID" || fail "the snapshot's diskgate exited"
dg_stop
DG_PID=$HEAD_PID DG_LOG=$HEAD_LOG
dg_stop
