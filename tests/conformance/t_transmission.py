# SPDX-License-Identifier: MIT
"""t_transmission.py: rules 17-25 of docs/spec-rules.md (transmission: flags,
requests in flight, replies, READ errors, range and alignment checks, unknown commands and
flags, payload sizes); t_commands.py has rules 26-35. Its helpers (conn, in_sync, rw,
wire_sr, export_name_tflags) serve both."""
import os
import struct
import subprocess
import threading
import time

import framework as F
import nbdwire as W
from framework import rule, expect_error, expect_ok, MiB, KiB

EXPORT = "disk"
U64 = 1 << 64


def rw(ctx):
    return ctx.shared("rw")


def conn(ctx, sr=True, meta=False, eh=False, server=None, tcp=False, infos=()):
    s = server or rw(ctx)
    w = s.wire(tcp)
    w.negotiate(s.export, sr=sr or meta, eh=eh, meta=["base:allocation"] if meta else (),
                infos=infos)
    return s, w


def wire_sr(s, sr):
    """A raw connection to s in option haggling, with structured replies when sr."""
    w = s.wire().start()
    if sr:
        w.structured_reply()
    return w


def export_name_tflags(s, sr):
    """The transmission flags NBD_OPT_EXPORT_NAME gives (after structured replies when sr)."""
    w = wire_sr(s, sr)
    tflags = w.export_name(EXPORT).tflags
    w.disconnect()
    return tflags


def in_sync(ctx, w, s, what):
    """The stream still parses: a READ of the layout returns the file's bytes."""
    got = w.read(0, 4096)
    assert got == ctx.file_bytes(s, 0, 4096), f"after {what}: READ returned wrong data"


# ---------------------------------------------------------------- rule 17
@rule(17)
def r17_has_flags(ctx):
    for s, ro in ((rw(ctx), False), (ctx.shared("ro"), True)):
        for sr in (False, True):
            w = wire_sr(s, sr)
            _, info = w.info_or_go(W.OPT_INFO, EXPORT)
            flags = [info.tflags, w.go(EXPORT).tflags]
            w.disconnect()
            flags.append(export_name_tflags(s, sr))
            for f in flags:
                assert f & W.TF_HAS_FLAGS, f"transmission flags {f:#x} lack HAS_FLAGS"
                assert bool(f & W.TF_READ_ONLY) == ro, f"READ_ONLY is {bool(f & 2)} ({f:#x})"


@rule(17)
def r17_read_only_refuses_writes(ctx):
    s = ctx.shared("ro")
    before = ctx.file_bytes(s, 0, 64 * KiB)
    for sr in (False, True):
        _, w = conn(ctx, sr=sr, server=s)
        fake = struct.pack(">IHHQQI", W.REQUEST_MAGIC, 0, W.CMD_WRITE_ZEROES, 99, 0, 4096)
        for cmd, flags, payload, what in [
                (W.CMD_WRITE, 0, fake * 146 + bytes(4096 - 146 * 28), "WRITE"),
                (W.CMD_TRIM, 0, b"", "TRIM"),
                (W.CMD_WRITE_ZEROES, 0, b"", "WRITE_ZEROES"),
                (W.CMD_WRITE_ZEROES, W.CMD_FLAG_NO_HOLE, b"", "WRITE_ZEROES with NO_HOLE"),
                # flags a read-only export does not advertise: still EPERM, not EINVAL
                (W.CMD_WRITE, W.CMD_FLAG_FUA, bytes(4096), "WRITE with FUA"),
                (W.CMD_WRITE_ZEROES, W.CMD_FLAG_FAST_ZERO, b"", "WRITE_ZEROES with FAST_ZERO")]:
            length = len(payload) if cmd == W.CMD_WRITE else 4096
            rep = w.request(cmd, 0, length, flags, payload)
            expect_error(rep, W.EPERM, f"{what} on a read-only export")
            in_sync(ctx, w, s, what)
        w.disconnect()
    assert ctx.file_bytes(s, 0, 64 * KiB) == before, "the read-only export changed"
    h = s.libnbd(strict=0)
    F.libnbd_expect_error("EPERM", "libnbd pwrite on read-only", h.pwrite, b"x" * 512, 0)
    F.libnbd_expect_error("EPERM", "libnbd trim on read-only", h.trim, 4096, 0)
    F.libnbd_expect_error("EPERM", "libnbd zero on read-only", h.zero, 4096, 0)
    h.shutdown()


# ---------------------------------------------------------------- rule 18
def _deep_queue(ctx, sr, tcp):
    s, w = conn(ctx, sr=sr, tcp=tcp)
    rng = ctx.rng
    slot = 64 * KiB
    base = ctx.scratch(64 * slot)
    fixed = os.urandom(32 * slot)              # slots 32..63: read only during the queue
    w.write(base + 32 * slot, fixed)
    cookies = set()
    while len(cookies) < 640:
        cookies.add(rng.getrandbits(64))
    cookies = [0, U64 - 1] + list(cookies - {0, U64 - 1})
    plan, writes = [], {}
    wslots = list(range(0, 32))
    rng.shuffle(wslots)
    for i, ck in enumerate(cookies):
        k = rng.random()
        if k < 0.05 and wslots:
            n = wslots.pop()
            data = os.urandom(slot)
            writes[n] = data
            plan.append((ck, W.CMD_WRITE, base + n * slot, slot, 0, data))
        elif k < 0.08:
            plan.append((ck, W.CMD_FLUSH, 0, 0, 0, b""))
        elif k < 0.12:
            plan.append((ck, W.CMD_READ, F.RW_SIZE - 512, 1024, 0, b""))         # EINVAL
        elif k < 0.14:
            plan.append((ck, 0x7F, 0, 0, 0, b""))                                 # EINVAL
        elif k < 0.16:
            plan.append((ck, W.CMD_WRITE, F.RW_SIZE, 512, 0, os.urandom(512)))   # ENOSPC
        else:
            o = rng.randrange(0, 32 * slot - 512) // 512 * 512
            ln = min(rng.choice([512, 4096, 65536, 512000]), 32 * slot - o)
            plan.append((ck, W.CMD_READ, base + 32 * slot + o, ln, 0, b""))
    err = []

    def sender():
        try:
            for ck, cmd, off, ln, fl, payload in plan:
                w.send_request(cmd, off, ln, fl, payload, cookie=ck)
        except Exception as e:  # noqa: BLE001
            err.append(e)
    t = threading.Thread(target=sender, daemon=True)
    t.start()
    got = 0
    deadline = time.monotonic() + 90
    while got < len(plan):
        assert time.monotonic() < deadline, f"only {got} of {len(plan)} replies in 90 s"
        if not w.pending and t.is_alive():
            time.sleep(0.001)
            continue
        w.recv_message()
        got = len(w.finished)
    t.join()
    assert not err, f"sending failed: {err[0]}"
    assert set(w.finished) == set(cookies), "replies do not match the requests' cookies"
    order = [ck for ck, *_ in plan]
    for ck, cmd, off, ln, fl, payload in plan:
        rep = w.finished[ck]
        if cmd == W.CMD_READ and off < F.RW_SIZE - 512:
            expect_ok(rep, f"queued READ {off}+{ln}")
            rel = off - base - 32 * slot
            assert bytes(rep.data) == fixed[rel:rel + ln], f"READ {off}+{ln} (cookie {ck:#x}) " \
                                                           "returned wrong data"
        elif cmd == W.CMD_READ or cmd == 0x7F:
            expect_error(rep, W.EINVAL, f"queued {W.CMD_NAMES.get(cmd, cmd)}")
        elif cmd == W.CMD_WRITE and off >= F.RW_SIZE:
            expect_error(rep, W.ENOSPC, "queued WRITE past the end")
        else:
            expect_ok(rep, f"queued {W.CMD_NAMES[cmd]}")
    w.finished.clear()
    for n, data in writes.items():
        assert w.read(base + n * slot, slot) == data, f"queued WRITE to slot {n} lost"
    w.disconnect()
    return order


@rule(18)
def r18_cookies_deep_queue(ctx):
    """640 pipelined requests (reads, writes, flushes, errors) with random 64-bit cookies
    including 0 and 2^64-1: every reply carries its request's cookie, exactly once."""
    for sr, tcp in ((False, False), (True, True)):
        _deep_queue(ctx, sr, tcp)


@rule(18)
def r18_libnbd_many_in_flight(ctx):
    s = rw(ctx)
    h = s.libnbd()
    want = ctx.file_bytes(s, 0, 4 * MiB)
    bufs = []
    for i in range(256):
        off = (i * 7919 * 512) % (4 * MiB - 65536)
        b = bytearray(65536)
        bufs.append((off, b, h.aio_pread(b, off)))
    while h.aio_in_flight() > 0:
        h.poll(-1)
    for off, b, ck in bufs:
        assert h.aio_command_completed(ck)
        assert bytes(b) == want[off:off + 65536], f"libnbd aio_pread at {off}: wrong data"
    h.shutdown()


# ---------------------------------------------------------------- rule 19
@rule(19)
def r19_read_structured_even_on_error(ctx):
    s, w = conn(ctx, sr=True)
    cases = [(0, 512, W.CMD_FLAG_NO_HOLE, W.EINVAL), (0, 512, 0x8000, W.EINVAL),
             (0, 512, W.CMD_FLAG_REQ_ONE, W.EINVAL), (0, 512, W.CMD_FLAG_FAST_ZERO, W.EINVAL),
             (0, 512, W.CMD_FLAG_PAYLOAD_LEN, W.EINVAL),
             (F.RW_SIZE, 512, 0, W.EINVAL), (F.RW_SIZE - 512, 1024, 0, W.EINVAL),
             (U64 - 512, 1024, 0, W.EINVAL), (0, 4096, 0, 0), (0, 0, 0, None)]
    for off, ln, fl, want in cases:
        rep = w.request(W.CMD_READ, off, ln, fl)
        assert rep.simple is False, f"READ {off}+{ln} flags {fl:#x}: simple reply"
        if want:
            expect_error(rep, want, f"READ {off}+{ln} flags {fl:#x}")
            assert any(t is not None for t, *_ in rep.errors), "error without an error chunk"
        elif want == 0:
            expect_ok(rep, f"READ {off}+{ln}")
    w.disconnect()
    # without structured replies: simple replies only (nbdwire refuses chunks)
    s, w = conn(ctx, sr=False)
    for off, ln, fl, want in cases:
        rep = w.request(W.CMD_READ, off, ln, fl)
        assert rep.simple, "chunk without structured replies"
    in_sync(ctx, w, s, "errors with simple replies")
    w.disconnect()


# ---------------------------------------------------------------- rule 20
READS = [(0, 4 * MiB), (MiB - 4096, 8192), (MiB + 512, 1000), (3 * MiB - 100, 200),
         (1000, 5000), (0, 8 * MiB), (2 * MiB - 1, 2), (MiB, MiB), (5 * MiB, 3 * MiB)]


@rule(20)
def r20_structured_read_chunks(ctx):
    """Structured READs over data, holes and their borders, aligned and not: chunks inside
    the request, no overlap, >= 1 byte, full coverage, DONE last, NONE only with DONE
    (checked by nbdwire), and the right bytes."""
    s, w = conn(ctx, sr=True)
    sent = [(w.send_request(W.CMD_READ, o, n), o, n) for o, n in READS]
    for ck, o, n in sent:
        rep = w.wait(ck)
        expect_ok(rep, f"READ {o}+{n}")
        assert bytes(rep.data) == ctx.file_bytes(s, o, n), f"READ {o}+{n}: wrong data"
        dones = [f for f, _t, _l in rep.chunks if f & W.REPLY_FLAG_DONE]
        assert len(dones) == 1 and rep.chunks[-1][0] & W.REPLY_FLAG_DONE
    w.disconnect()
    s, w = conn(ctx, eh=True)
    for o, n in READS:
        assert w.read(o, n) == ctx.file_bytes(s, o, n), f"READ {o}+{n} (extended): wrong data"
    w.disconnect()


@rule(20)
def r20_df(ctx):
    s, w = conn(ctx, sr=True)
    assert w.info.tflags & W.TF_SEND_DF, \
        f"SEND_DF not advertised with structured replies ({w.info.tflags:#x}): DF untestable"
    for o, n in [(MiB - 32 * KiB, 64 * KiB), (MiB + 4096, 4096), (0, 64 * KiB),
                 (3 * MiB - 60000, 65536), (2 * MiB - 1, 2)]:
        rep = w.request(W.CMD_READ, o, n, W.CMD_FLAG_DF)
        expect_ok(rep, f"DF READ {o}+{n} (<= 64 KiB must be supported)")
        assert len(rep.content) == 1, f"DF READ {o}+{n}: {len(rep.content)} content chunks"
        data_and_hole = o < MiB < o + n or o < 3 * MiB < o + n
        if data_and_hole:
            assert rep.content[0][2] == W.RT_OFFSET_DATA, \
                "DF READ over data and a hole must use OFFSET_DATA"
        assert bytes(rep.data) == ctx.file_bytes(s, o, n)
    rep = w.request(W.CMD_READ, 0, 32 * MiB, W.CMD_FLAG_DF)
    if rep.error:
        expect_error(rep, W.EOVERFLOW, "DF READ of 32 MiB")
        assert not rep.content, "content chunk with an EOVERFLOW DF error"
    else:
        assert len(rep.content) == 1
    w.disconnect()
    s, w = conn(ctx, sr=False)
    rep = w.request(W.CMD_READ, 0, 4096, W.CMD_FLAG_DF)
    expect_error(rep, W.EINVAL, "DF without SEND_DF (no structured replies)")
    w.disconnect()


@rule(20)
def r20_libnbd_pread_structured(ctx):
    import nbd
    s = rw(ctx)
    h = s.libnbd(strict=0)
    for o, n, fl in [(0, 4 * MiB, 0), (MiB - 32 * KiB, 64 * KiB, nbd.CMD_FLAG_DF),
                     (MiB + 1, 70000, 0)]:
        chunks = []

        def cb(sub, off, status, err, chunks=chunks):
            chunks.append((off, len(sub), status))
            return 0
        buf = h.pread_structured(n, o, cb, fl)
        assert bytes(buf) == ctx.file_bytes(s, o, n), f"libnbd pread_structured {o}+{n}"
        if fl & nbd.CMD_FLAG_DF:
            assert len(chunks) == 1, f"DF: {len(chunks)} chunks"
    h.shutdown()


# ---------------------------------------------------------------- rule 21
@rule(21)
def r21_simple_read_early_error_no_payload(ctx):
    s, w = conn(ctx, sr=False)
    sent = [(w.send_request(W.CMD_READ, o, n, fl), o, n, bad) for o, n, fl, bad in [
        (F.RW_SIZE - 512, 4096, 0, True), (0, 8192, 0, False), (0, 8192, 0x8000, True),
        (4096, 4096, 0, False), (U64 - 4096, 8192, 0, True), (MiB - 4096, 8192, 0, False)]]
    for ck, o, n, bad in sent:
        rep = w.wait(ck)         # a payload after an error reply would break this parse
        if bad:
            expect_error(rep, W.EINVAL, f"READ {o}+{n}")
            assert rep.data is None
        else:
            assert bytes(rep.data) == ctx.file_bytes(s, o, n)
    w.disconnect()


def squashfs_eio_server(ctx):
    """A read-only export whose file lives on a squashfs image with one corrupted data block:
    reading that block fails with EIO in the kernel."""
    if not F.tool("mksquashfs"):
        raise AssertionError("mksquashfs (squashfs-tools) is not installed: cannot inject EIO")
    d = ctx.path(f"sq{ctx.counter()}")
    os.makedirs(d + "/src")
    os.makedirs(d + "/mnt")
    size = 4 * MiB
    with open(d + "/src/disk.img", "wb") as f:
        for i in range(size // 4096):
            f.write((b"blk%08d " % i) * 341 + b"x" * 4)
    F.run([F.tool("mksquashfs"), d + "/src", d + "/fs.sqsh", "-comp", "gzip", "-b", "131072",
           "-noappend", "-no-fragments", "-quiet"])
    with open(d + "/fs.sqsh", "r+b") as f:
        sb = f.read(96)
        inode_table = struct.unpack("<Q", sb[64:72])[0]
        mid = 96 + (inode_table - 96) // 2
        f.seek(mid)
        junk = f.read(64)
        f.seek(mid)
        f.write(bytes(b ^ 0x5A for b in junk))
    F.run(["mount", "-t", "squashfs", "-o", "loop,ro", d + "/fs.sqsh", d + "/mnt"])
    ctx.cleanups.append(lambda: subprocess.run(["umount", "-l", d + "/mnt"]))
    s = F.Server(ctx, d + "/mnt/disk.img", ["--read-only"], extra=False)  # no O_DIRECT there
    with open(d + "/src/disk.img", "rb") as f:
        good = f.read()
    return s, good


@rule(21, 31, 35)
def r21_read_eio(ctx):
    """READs that hit an I/O error: with simple replies an error reply and no payload (or a
    hard disconnect), never a success header with partial data; with structured replies
    valid error chunks. Every READ that succeeds returns the right bytes."""
    s, good = squashfs_eio_server(ctx)
    failures = 0
    for sr in (False, True):
        _, w = conn(ctx, sr=sr, server=s)
        for blk in range(0, 4 * MiB, 128 * KiB):
            try:
                rep = w.request(W.CMD_READ, blk, 128 * KiB)
            except W.Closed:
                if sr:
                    raise AssertionError(f"structured READ at {blk}: server disconnected")
                failures += 1            # a hard disconnect is allowed after an error
                _, w = conn(ctx, sr=sr, server=s)
                continue
            if rep.error:
                failures += 1
                assert rep.error == W.EIO, f"READ at {blk} failed with {W.err_name(rep.error)}" \
                                           " (an I/O error should be EIO)"
                if not sr:
                    assert rep.data is None, "payload after a simple error reply"
            else:
                assert bytes(rep.data) == good[blk:blk + 128 * KiB], \
                    f"READ at {blk} succeeded with wrong data"
        w.disconnect()
    assert failures >= 2, "no READ failed: the EIO injection did not work"
    s.stop()


# ---------------------------------------------------------------- rule 22
@rule(22)
def r22_out_of_range(ctx):
    s = rw(ctx)
    size = F.RW_SIZE
    tail = ctx.file_bytes(s, size - 8192, 8192)
    for sr in (False, True):
        _, w = conn(ctx, sr=sr, meta=sr)
        cache = w.info.tflags & W.TF_SEND_CACHE
        cases = []
        for off, ln in [(size, 512), (size - 512, 1024), (U64 - 512, 1024), (1 << 63, 512),
                        (size + 4096, 0x80000000)]:
            cases += [(W.CMD_READ, off, ln, W.EINVAL), (W.CMD_TRIM, off, ln, W.EINVAL),
                      (W.CMD_WRITE_ZEROES, off, ln, W.ENOSPC)]
            if ln <= 65536:
                cases.append((W.CMD_WRITE, off, ln, W.ENOSPC))
            if cache:
                cases.append((W.CMD_CACHE, off, ln, W.EINVAL))
            if sr:
                cases.append((W.CMD_BLOCK_STATUS, off, ln, W.EINVAL))
        for cmd, off, ln, want in cases:
            payload = os.urandom(ln) if cmd == W.CMD_WRITE else b""
            rep = w.request(cmd, off, ln, 0, payload)
            expect_error(rep, want, f"{W.CMD_NAMES[cmd]} {off}+{ln} on a {size}-byte export")
        in_sync(ctx, w, s, "out-of-range requests")
        w.disconnect()
    assert ctx.file_bytes(s, size - 8192, 8192) == tail, "the end of the export changed"
    h = s.libnbd(strict=0)
    F.libnbd_expect_error("EINVAL", "libnbd pread past the end", h.pread, 1024, size - 512)
    F.libnbd_expect_error("ENOSPC", "libnbd pwrite past the end", h.pwrite, b"x" * 1024,
                          size - 512)
    F.libnbd_expect_error("EINVAL", "libnbd trim past the end", h.trim, 1024, size - 512)
    F.libnbd_expect_error("ENOSPC", "libnbd zero past the end", h.zero, 1024, size - 512)
    h.shutdown()


# ---------------------------------------------------------------- rule 23
@rule(23)
def r23_unaligned_einval(ctx):
    """A client that asked for NBD_INFO_BLOCK_SIZE and then sends requests not aligned to
    the advertised minimum gets NBD_EINVAL (S), and nothing is written. diskgate does this
    with --unaligned error; by default it serves such requests (case C06)."""
    img = ctx.make_image(f"al{ctx.counter()}.img", 4 * MiB, [(0, 4 * MiB, "data")])
    s = F.Server(ctx, img, ["--unaligned", "error"])
    w = s.wire().start()
    info = w.go(EXPORT, (W.INFO_BLOCK_SIZE,))
    assert info.block_size, "no NBD_INFO_BLOCK_SIZE"
    mn = info.block_size[0]
    assert mn > 1, "minimum block size 1: nothing is unaligned, rule 23 not exercisable"
    off = 64 * KiB
    before = ctx.file_bytes(s, off, 64 * KiB)
    h = mn // 2
    cases = [(W.CMD_READ, off + h, mn), (W.CMD_READ, off, mn + h),
             (W.CMD_WRITE, off + h, mn), (W.CMD_WRITE, off, h),
             (W.CMD_TRIM, off + h, mn), (W.CMD_WRITE_ZEROES, off + 1, mn - 1),
             (W.CMD_WRITE_ZEROES, off, mn + h)]
    if info.tflags & W.TF_SEND_CACHE:
        cases.append((W.CMD_CACHE, off + h, mn))
    for cmd, o, n in cases:
        rep = w.request(cmd, o, n, 0, os.urandom(n) if cmd == W.CMD_WRITE else b"")
        expect_error(rep, W.EINVAL, f"{W.CMD_NAMES[cmd]} {o - off}+{n} (minimum block {mn})")
    in_sync(ctx, w, s, "unaligned requests")
    expect_ok(w.request(W.CMD_READ, off, mn), "an aligned READ")
    w.disconnect()
    assert ctx.file_bytes(s, off, 64 * KiB) == before, "an unaligned request changed data"
    s.stop()
    return "with --unaligned error (the default serves unaligned requests: case C06)"


# ---------------------------------------------------------------- rule 24
@rule(24)
def r24_unknown_command_einval(ctx):
    for sr in (False, True):
        s, w = conn(ctx, sr=sr)
        for cmd in (0x7F, 9, 0x100, 0x7FFF, 0xFFFF, W.CMD_RESIZE):
            for off, ln in ((0, 0), (0, 512)):
                rep = w.request(cmd, off, ln)
                expect_error(rep, W.EINVAL, f"unknown command {cmd:#x}")
        in_sync(ctx, w, s, "unknown commands")
        w.disconnect()


@rule(24)
def r24_bad_flags_einval(ctx):
    """Unknown flags, and known flags on commands they do not apply to: EINVAL; a refused
    WRITE's payload (crafted to look like requests) is consumed, never parsed."""
    s = rw(ctx)
    off = ctx.scratch(64 * KiB)
    marker = os.urandom(8192)
    for sr in (False, True):
        _, w = conn(ctx, sr=sr, meta=sr)
        w.write(off, marker)
        tf = w.info.tflags
        fake = (struct.pack(">IHHQQI", W.REQUEST_MAGIC, 0, W.CMD_WRITE_ZEROES, 7, off, 8192) +
                struct.pack(">IHHQQI", W.REQUEST_MAGIC, 0, W.CMD_DISC, 8, 0, 0))
        payload = (fake * 74)[:4096]
        cases = [(W.CMD_READ, W.CMD_FLAG_NO_HOLE), (W.CMD_READ, W.CMD_FLAG_FAST_ZERO),
                 (W.CMD_READ, W.CMD_FLAG_REQ_ONE), (W.CMD_READ, 0x8000), (W.CMD_READ, 0x40),
                 (W.CMD_READ, W.CMD_FLAG_PAYLOAD_LEN), (W.CMD_FLUSH, W.CMD_FLAG_NO_HOLE),
                 (W.CMD_FLUSH, W.CMD_FLAG_DF), (W.CMD_TRIM, W.CMD_FLAG_DF),
                 (W.CMD_TRIM, W.CMD_FLAG_NO_HOLE), (W.CMD_WRITE_ZEROES, W.CMD_FLAG_DF),
                 (W.CMD_WRITE_ZEROES, W.CMD_FLAG_REQ_ONE), (W.CMD_WRITE_ZEROES, 0x8000),
                 (W.CMD_WRITE, W.CMD_FLAG_NO_HOLE), (W.CMD_WRITE, W.CMD_FLAG_DF),
                 (W.CMD_WRITE, 0x8000), (W.CMD_WRITE, W.CMD_FLAG_PAYLOAD_LEN),
                 (W.CMD_WRITE, W.CMD_FLAG_FAST_ZERO), (W.CMD_WRITE, W.CMD_FLAG_REQ_ONE)]
        if not sr:
            cases.append((W.CMD_READ, W.CMD_FLAG_DF))
        if not tf & W.TF_SEND_FAST_ZERO:
            cases.append((W.CMD_WRITE_ZEROES, W.CMD_FLAG_FAST_ZERO))
        if tf & W.TF_SEND_CACHE:
            cases += [(W.CMD_CACHE, W.CMD_FLAG_NO_HOLE), (W.CMD_CACHE, 0x8000)]
        if sr:
            cases += [(W.CMD_BLOCK_STATUS, W.CMD_FLAG_NO_HOLE), (W.CMD_BLOCK_STATUS, 0x8000),
                      (W.CMD_BLOCK_STATUS, W.CMD_FLAG_DF)]
        for cmd, fl in cases:
            is_w = cmd == W.CMD_WRITE
            rep = w.request(cmd, off if is_w else 0, 4096 if cmd != W.CMD_FLUSH else 0, fl,
                            payload if is_w else b"")
            expect_error(rep, W.EINVAL, f"{W.CMD_NAMES[cmd]} with flags {fl:#x}")
        in_sync(ctx, w, s, "bad flags")
        assert w.read(off, 8192) == marker, "a refused WRITE's payload was executed or written"
        w.disconnect()
    import nbd
    h = s.libnbd(strict=0)
    F.libnbd_expect_error("EINVAL", "libnbd pread with NO_HOLE", h.pread, 512, 0,
                          nbd.CMD_FLAG_NO_HOLE)
    F.libnbd_expect_error("EINVAL", "libnbd pwrite with DF", h.pwrite, b"y" * 512, off,
                          nbd.CMD_FLAG_DF)
    F.libnbd_expect_error("EINVAL", "libnbd trim with REQ_ONE", h.trim, 512, off,
                          nbd.CMD_FLAG_REQ_ONE)
    assert h.pread(8192, off) == marker
    h.shutdown()


# ---------------------------------------------------------------- rule 25
@rule(25)
def r25_max_payload_not_dos(ctx):
    """READ and WRITE of exactly 32 MiB (payloads <= 32 MiB are not a DoS)."""
    for sr, tcp in ((False, False), (True, True)):
        _, w = conn(ctx, sr=sr, tcp=tcp, infos=(W.INFO_BLOCK_SIZE,))
        mx = w.info.block_size[2] if w.info.block_size else 32 * MiB
        n = min(32 * MiB, mx)
        off = ctx.scratch(n, align=MiB)
        data = os.urandom(n)
        w.write(off, data)
        assert w.read(off, n) == data, f"READ of {n} bytes: wrong data"
        w.disconnect()


@rule(25)
def r25_zero_length(ctx):
    s = rw(ctx)
    off = ctx.scratch(4096)
    for sr in (False, True):
        _, w = conn(ctx, sr=sr)
        cmds = [W.CMD_READ, W.CMD_WRITE, W.CMD_TRIM, W.CMD_WRITE_ZEROES]
        if w.info.tflags & W.TF_SEND_CACHE:
            cmds.append(W.CMD_CACHE)
        for cmd in cmds:
            for o in (0, off, F.RW_SIZE):
                rep = w.request(cmd, o, 0)        # any reply, but a reply and no hang-up
                assert rep.done
                if o < F.RW_SIZE:
                    assert rep.error in (0, W.EINVAL), \
                        f"zero-length {W.CMD_NAMES[cmd]}: {W.err_name(rep.error)}"
        in_sync(ctx, w, s, "zero-length requests")
        w.disconnect()
    h = s.libnbd(strict=0)            # STRICT_ZERO_SIZE off: libnbd sends them
    h.pread(0, 0)
    h.pwrite(b"", off)
    h.trim(0, off)
    h.zero(0, off)
    h.flush()
    assert h.pread(4096, 0) == ctx.file_bytes(s, 0, 4096)
    h.shutdown()


@rule(25, 28)
def r25_large_trim_zero(ctx):
    """TRIM and WRITE_ZEROES longer than the maximum payload (a sparse 8 GiB export): no
    disconnect; success, or EOVERFLOW/EINVAL; zeroed ranges read back as zero."""
    img = ctx.make_image(f"big{ctx.counter()}.img", 8 << 30, [(0, MiB, "data"),
                                                              ((4 << 30) - MiB, 2 * MiB, "data")])
    s = F.Server(ctx, img)
    _, w = conn(ctx, sr=True, server=s)
    for cmd, off, ln in [(W.CMD_TRIM, 0, 0x80000000), (W.CMD_TRIM, 0, 0xFFFFFE00),
                         (W.CMD_WRITE_ZEROES, 0, 0x80000000),
                         (W.CMD_WRITE_ZEROES, 0, 0xFFFFFFFF),
                         (W.CMD_WRITE_ZEROES, 0xFFFFFE00, 0xFFFFFE00),
                         (W.CMD_TRIM, 0xFFFFFE00, 0xFFFFFE00)]:
        rep = w.request(cmd, off, ln)
        assert rep.error in (0, W.EOVERFLOW, W.EINVAL), \
            f"{W.CMD_NAMES[cmd]} {off:#x}+{ln:#x}: {W.err_name(rep.error)}"
        if cmd == W.CMD_WRITE_ZEROES and rep.error == 0:
            for o in (off, off + ln // 2, off + ln - 4096):
                assert w.read(o, 4096) == bytes(4096), f"WRITE_ZEROES {off:#x}+{ln:#x}: " \
                                                       f"data at {o:#x}"
    w.read(0, 4096)
    w.disconnect()
    s.stop()
