#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# C17 (docs/cases.md): a slow cluster is not an error. The only OSD is
# paused (SIGSTOP) while clients have requests in flight, for longer than the clients'
# timeout, then resumed (SIGCONT). diskgate must keep every connection and reply late, with
# success and the right data; slowness alone never becomes an error reply.
#
# Pause and client timeout: the case says 40 s against a client timeout of 30 s. CI uses a
# 12 s pause against an 8 s client timeout (DG_C17_PAUSE, DG_C17_CLIENT_TIMEOUT override
# them; the full case is DG_C17_PAUSE=40 DG_C17_CLIENT_TIMEOUT=30, about 60 s in all).
#
# Two clients, started once the OSD is stopped:
#   A (TCP, patient): 8 READs of data written before the pause, 4 WRITEs, 2 WRITEs with FUA,
#     a WRITE_ZEROES, and a FLUSH once the WRITEs have their replies. A waits as long as it
#     takes. Every request must succeed; the READs must return the data from before the
#     pause; the requests that need the cluster (READ, FUA, FLUSH) must be replied to after
#     the client timeout (else the test did not test slowness); afterwards the same
#     connection still works, promptly.
#   B (Unix socket, impatient, like Virtualization.framework's `timeout:`): a READ, a FUA
#     WRITE and a FLUSH; when they are not done after the client timeout, B drops its
#     connection with the requests in flight, connects again while the OSD is still
#     stopped, and sends them again. The new handshake and the requests must succeed.
# Then every written range reads back through a new connection and through `rbd export`;
# diskgate is still running, logged no error or warning, and exits 0 on SIGTERM.
#
# Test-cluster detail, not diskgate's: Ceph 16 with a single OSD never renews an expired PG
# read lease after the OSD was stopped, so its PGs stay "laggy" and every op waits forever
# (ceph-container issue 1682). The image therefore lives in a pool created after raising
# osd_pool_default_read_lease_ratio to 6 (a lease of 6 x 20 s, longer than any pause here).
source "$SRCDIR/tests/lib.sh"
source "$SRCDIR/tests/rbd/rbd-lib.sh"

PAUSE=${DG_C17_PAUSE:-12}
CLIENT_TIMEOUT=${DG_C17_CLIENT_TIMEOUT:-8}
[ "$CLIENT_TIMEOUT" -lt "$PAUSE" ] || fail "DG_C17_CLIENT_TIMEOUT must be below DG_C17_PAUSE"

cephc config set osd osd_pool_default_read_lease_ratio 6
cephc osd pool create slow 8 8 >/dev/null 2>&1 || fail "cannot create pool slow"
rbdc pool init slow
rbdc create --size 64M slow/img
rbd_serve rbd:slow/img
OSD_PID=$(osd_pid)

echo "pausing osd.0 (pid $OSD_PID) for $PAUSE s; client timeout $CLIENT_TIMEOUT s"
$PY - "$DG_TCP" "$DG_UNIX" "$OSD_PID" "$PAUSE" "$CLIENT_TIMEOUT" "$T/expected.bin" <<'PYEOF' \
  || fail "C17: a request failed, came back wrong, or never came back"
import nbd, os, signal, sys, time
tcp, unix, osd, pause, ctimeout, expected_path = sys.argv[1:7]
osd, pause, ctimeout = int(osd), float(pause), float(ctimeout)
KiB, MiB = 1 << 10, 1 << 20
LEN = 64 * KiB

def pattern(tag, n):  # deterministic bytes, different per tag
    seed = (tag.encode() * 64)[:64]
    return (seed * (n // 64 + 1))[:n]

expected = bytearray(16 * MiB)
def put(off, data):
    expected[off:off + len(data)] = data

# Before the pause: 8 MiB of data, flushed (which also switches librbd's cache from
# writethrough to writearound: plain writes are then acknowledged before the OSD has them,
# while reads, FUA writes and flushes need the OSD).
a = nbd.NBD(); a.connect_uri(tcp)
base = pattern("before", 8 * MiB)
for off in range(0, 8 * MiB, MiB):
    a.pwrite(base[off:off + MiB], off)
a.flush()
put(0, base)

results = {}      # name -> (seconds after the pause began, error, buffer or None)
failures = []
def track(name, buf=None):
    def done(err):
        results[name] = (time.monotonic() - t0, err.value, buf)
        return 1
    return done

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.environ["SRCDIR"] + "/tests/rbd")
from osdpause import stop_osd
stop_osd(osd)
t0 = time.monotonic()
resumed = False
try:
    # Client A: patient, TCP.
    a_reads = {}
    for i in range(8):
        off = i * MiB + 4096 * i          # one read in each of 2 objects x 4 places
        buf = nbd.Buffer(LEN)
        a_reads[f"A read {i}"] = (off, buf)
        a.aio_pread(buf, off, completion=track(f"A read {i}", buf))
    for i in range(4):
        off = 9 * MiB + i * LEN
        data = pattern(f"A write {i}", LEN)
        a.aio_pwrite(data, off, completion=track(f"A write {i}"))
        put(off, data)
    for i in range(2):
        off = 10 * MiB + i * 3 * LEN
        data = pattern(f"A fua {i}", LEN)
        a.aio_pwrite(data, off, completion=track(f"A fua write {i}"), flags=nbd.CMD_FLAG_FUA)
        put(off, data)
    a.aio_zero(LEN, 5 * MiB, completion=track("A write_zeroes"))
    put(5 * MiB, bytes(LEN))
    # The FLUSH goes out once the plain writes have their replies (librbd's writearound
    # cache acknowledges them at once), so that it has something to make durable: a FLUSH
    # sent while they were still in flight would not have to cover them.
    plain = [f"A write {i}" for i in range(4)] + ["A write_zeroes"]
    while time.monotonic() - t0 < 3 and not all(n in results for n in plain):
        a.poll(20)
    a.aio_flush(completion=track("A flush"))

    # Client B: impatient, Unix socket.
    b_data = pattern("B fua", LEN)
    put(12 * MiB, b_data)
    def b_send(h, gen):
        buf = nbd.Buffer(LEN)
        h.aio_pread(buf, 6 * MiB, completion=track(f"B{gen} read", buf))
        h.aio_pwrite(b_data, 12 * MiB, completion=track(f"B{gen} fua write"),
                     flags=nbd.CMD_FLAG_FUA)
        h.aio_flush(completion=track(f"B{gen} flush"))
    b = nbd.NBD(); b.connect_uri(unix); b_send(b, 1)
    b_reconnected = None

    deadline = t0 + pause + 60
    while True:
        now = time.monotonic()
        if not resumed and now - t0 >= pause:
            os.kill(osd, signal.SIGCONT)
            resumed = True
            print(f"osd resumed after {now - t0:.1f} s")
        if b_reconnected is None and now - t0 >= ctimeout:
            pending = [n for n in ("B1 read", "B1 fua write", "B1 flush") if n not in results]
            print(f"B: {len(pending)} of 3 requests still pending after its {ctimeout:g} s "
                  "timeout: dropping the connection and connecting again")
            del b                          # close the socket with the requests in flight
            tc = time.monotonic()
            b = nbd.NBD(); b.connect_uri(unix)
            b_reconnected = time.monotonic() - tc
            print(f"B: new connection negotiated in {b_reconnected:.2f} s "
                  f"({'before' if not resumed else 'after'} the OSD was resumed)")
            b_send(b, 2)
        busy = [h for h in (a, b) if h.aio_in_flight() > 0]
        if resumed and not busy:
            break
        if now > deadline:
            missing = sorted(set(n for n in (list(a_reads) + ["A flush"]) if n not in results))
            sys.exit(f"requests still unanswered {pause + 60:g} s after the pause began "
                     f"(e.g. {missing[:4]}); diskgate or the cluster is stuck")
        for h in busy:
            h.poll(20)
        if not busy:
            time.sleep(0.02)
finally:
    if not resumed:
        os.kill(osd, signal.SIGCONT)

for name, (when, err, buf) in sorted(results.items(), key=lambda kv: kv[1][0]):
    print(f"  {name:16s} replied after {when:5.1f} s: {os.strerror(err) if err else 'ok'}")
    if err and not name.startswith("B1 "):
        failures.append(f"{name}: error {os.strerror(err)}")
# (B1's requests went with the connection B dropped: libnbd fails them itself, if it
# reports them at all, so they are not judged.)
for name, (off, buf) in a_reads.items():
    if name in results and buf.to_bytearray() != base[off:off + LEN]:
        failures.append(f"{name} at {off}: wrong data")
if results.get("B2 read") and results["B2 read"][2].to_bytearray() != base[6 * MiB:6 * MiB + LEN]:
    failures.append("B2 read: wrong data")
expected_names = list(a_reads) + [f"A write {i}" for i in range(4)] + \
    ["A fua write 0", "A fua write 1", "A write_zeroes", "A flush",
     "B2 read", "B2 fua write", "B2 flush"]
for n in expected_names:
    if n not in results:
        failures.append(f"{n}: no reply")
late = [n for n in expected_names if n in results and results[n][0] >= ctimeout]
# READs, FUA writes and a FLUSH after acknowledged writes need the OSD: if they came back
# before the client timeout, the pause did not hold them and nothing slow was tested.
held = list(a_reads) + ["A fua write 0", "A fua write 1", "A flush"]
early = [n for n in held if n in results and n not in late]
if early:
    failures.append(f"not held by the paused OSD (replied before {ctimeout:g} s): {early}")
if not a.aio_is_ready():
    failures.append("connection A is no longer usable")
if failures:
    sys.exit("C17 failures:\n  " + "\n  ".join(failures))
print(f"{len(late)} requests replied after the client timeout, all with success")

# The same connection, after the stall: prompt and correct.
tc = time.monotonic()
post = pattern("after", LEN)
a.pwrite(post, 14 * MiB, nbd.CMD_FLAG_FUA); put(14 * MiB, post)
assert a.pread(LEN, 14 * MiB) == post
a.flush()
took = time.monotonic() - tc
if took > 20:
    sys.exit(f"connection A took {took:.1f} s for a write, a read and a flush after the stall")
print(f"connection A after the stall: FUA write + read + flush in {took:.2f} s")

# Everything through the same connection and through a new one.
d = nbd.NBD(); d.connect_uri(tcp)
for label, h in (("connection A", a), ("a new connection", d)):
    got = b"".join(h.pread(MiB, off) for off in range(0, 16 * MiB, MiB))
    if got != bytes(expected):
        bad = next(i for i in range(len(got)) if got[i] != expected[i])
        sys.exit(f"{label}: byte {bad} is {got[bad]:#x}, expected {expected[bad]:#x}")
a.shutdown(); d.shutdown(); b.shutdown()
open(expected_path, "wb").write(bytes(expected))
PYEOF
pass "C17: OSD paused ${PAUSE} s: every request replied late with success and the right data"

kill -0 "$DG_PID" 2>/dev/null || fail "diskgate exited"
if grep -E '^diskgate: (error|warning):' "$DG_LOG"; then
  fail "C17: diskgate logged errors or warnings during the stall (above)"
fi
pass "C17: diskgate kept running and logged no error or warning"

rbdc export --no-progress slow/img "$T/export.img"
cmp -n $((16 * 1024 * 1024)) "$T/export.img" "$T/expected.bin" \
  || fail "C17: rbd export differs from what the clients wrote"
pass "C17: rbd export holds every write made during the stall"
dg_stop

# The other side of the rule: an operator who wants a bound sets rados_osd_op_timeout
# (here 2 s, through CEPH_ARGS). A request the cluster does not answer in time then fails
# with EIO, as docs/rbd.md says (never EINVAL, which tells a client its request was
# invalid), the connection stays, the log names librbd's error, and once the cluster is
# back the same connection works again.
export CEPH_ARGS="--rados-osd-op-timeout 2"
rbd_serve rbd:slow/img
unset CEPH_ARGS
$PY - "$DG_UNIX" "$OSD_PID" "$T/expected.bin" <<'PYEOF' || fail "C17: operator timeout: wrong error"
import errno, nbd, os, signal, sys, time
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.environ["SRCDIR"] + "/tests/rbd")
from osdpause import stop_osd
uri, osd, expected_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
want = open(expected_path, "rb").read(65536)
h = nbd.NBD(); h.connect_uri(uri)
assert h.pread(65536, 0) == want
stop_osd(osd)
try:
    t0 = time.monotonic()
    try:
        h.pread(65536, 0)
    except nbd.Error as e:
        took = time.monotonic() - t0
        if e.errnum != errno.EIO:
            sys.exit(f"READ past rados_osd_op_timeout failed with {e.errno} ({e.string}), "
                     "expected EIO")
        print(f"READ failed with EIO after {took:.1f} s (rados_osd_op_timeout 2 s)")
    else:
        sys.exit("READ succeeded with the OSD stopped and rados_osd_op_timeout set")
finally:
    os.kill(osd, signal.SIGCONT)
assert h.pread(65536, 0) == want, "the connection does not work after the OSD resumed"
h.shutdown()
PYEOF
grep -q 'librbd failed a request with "Connection timed out"' "$DG_LOG" \
  || { cat "$DG_LOG" >&2; fail "C17: the log does not name librbd's timeout"; }
pass "C17: with rados_osd_op_timeout set, a timed-out READ fails with EIO; connection kept"
dg_stop
