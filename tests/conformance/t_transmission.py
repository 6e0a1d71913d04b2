"""t_transmission.py: rules 17-35 of ../shared/nbd-spec-rules.md (transmission)."""
import os
import resource
import signal
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


def in_sync(ctx, w, s, what):
    """The stream still parses: a READ of the layout returns the file's bytes."""
    got = w.read(0, 4096)
    assert got == ctx.file_bytes(s, 0, 4096), f"after {what}: READ returned wrong data"


# ---------------------------------------------------------------- rule 17
@rule(17)
def r17_has_flags(ctx):
    for s, ro in ((rw(ctx), False), (ctx.shared("ro"), True)):
        for sr in (False, True):
            w = s.wire().start()
            if sr:
                w.structured_reply()
            final, info = w.info_or_go(W.OPT_INFO, EXPORT)
            flags = [info.tflags, w.go(EXPORT).tflags]
            w.disconnect()
            w = s.wire().start()
            if sr:
                w.structured_reply()
            flags.append(w.export_name(EXPORT).tflags)
            w.disconnect()
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


# ---------------------------------------------------------------- rule 26
@rule(26)
def r26_flush_offset_length_einval(ctx):
    for sr in (False, True):
        s, w = conn(ctx, sr=sr)
        for off, ln in ((512, 0), (0, 512), (4096, 4096), (U64 - 1, 1)):
            rep = w.request(W.CMD_FLUSH, off, ln)
            expect_error(rep, W.EINVAL, f"FLUSH with offset {off} length {ln}")
        expect_ok(w.request(W.CMD_FLUSH), "FLUSH 0/0")
        in_sync(ctx, w, s, "bad FLUSHes")
        w.disconnect()


@rule(26)
def r26_fua_on_every_command(ctx):
    """With SEND_FUA, the server accepts FUA on every command (doc/proto.md, command flags)."""
    s, w = conn(ctx, meta=True)
    assert w.info.tflags & W.TF_SEND_FUA, "SEND_FUA not advertised"
    off = ctx.scratch(64 * KiB)
    fua = W.CMD_FLAG_FUA
    for cmd, o, n, payload in [(W.CMD_WRITE, off, 4096, os.urandom(4096)),
                               (W.CMD_READ, off, 4096, b""), (W.CMD_FLUSH, 0, 0, b""),
                               (W.CMD_TRIM, off + 8192, 4096, b""),
                               (W.CMD_WRITE_ZEROES, off + 16384, 4096, b""),
                               (W.CMD_BLOCK_STATUS, 0, 4096, b"")] + \
            ([(W.CMD_CACHE, 0, 4096, b"")] if w.info.tflags & W.TF_SEND_CACHE else []):
        expect_ok(w.request(cmd, o, n, fua, payload), f"{W.CMD_NAMES[cmd]} with FUA")
    w.disconnect()


def _clean(path, off, n, what):
    dirty, wb, present = F.page_flags(path, off, n)
    assert dirty == 0 and wb == 0, \
        f"{what}: {dirty} dirty and {wb} writeback pages of {present} cached " \
        "(the data is not on stable storage)"


@rule(26)
def r26_flush_and_fua_durable(ctx):
    """After a FLUSH reply, every write replied to before it is on stable storage; after a
    FUA write's reply, its data is. Checked in the page cache of the image (/proc/kpageflags:
    no dirty or writeback page left in the range)."""
    s, w = conn(ctx, sr=True)
    seen_dirty = 0
    for rnd in range(3):
        offs = [ctx.scratch(128 * KiB) for _ in range(4)]
        for o in offs:
            w.write(o, os.urandom(128 * KiB))
        seen_dirty += sum(F.page_flags(s.image, o, 128 * KiB)[0] for o in offs)
        expect_ok(w.request(W.CMD_FLUSH), "FLUSH")
        for o in offs:
            _clean(s.image, o, 128 * KiB, "after FLUSH")
        o = ctx.scratch(128 * KiB)
        w.write(o, os.urandom(128 * KiB), W.CMD_FLAG_FUA)
        _clean(s.image, o, 128 * KiB, "after a FUA WRITE")
        o = ctx.scratch(128 * KiB)
        w.write(o, os.urandom(128 * KiB))
        expect_ok(w.request(W.CMD_WRITE_ZEROES, o, 64 * KiB, W.CMD_FLAG_FUA | W.CMD_FLAG_NO_HOLE),
                  "WRITE_ZEROES with FUA")
        _clean(s.image, o, 64 * KiB, "after a FUA WRITE_ZEROES")
    w.disconnect()
    return "" if seen_dirty else "note: writes never left dirty pages (nothing to flush seen)"


# ---------------------------------------------------------------- rule 27
@rule(27)
def r27_multi_conn(ctx):
    s = rw(ctx)
    _, a = conn(ctx, sr=True)
    _, b = conn(ctx, sr=False, tcp=True)
    _, c = conn(ctx, sr=True, tcp=True)
    assert a.info.tflags & W.TF_CAN_MULTI_CONN, \
        f"CAN_MULTI_CONN not advertised ({a.info.tflags:#x}): rule 27 not exercised"
    for fua in (False, True):
        off = ctx.scratch(256 * KiB)
        data = os.urandom(256 * KiB)
        a.write(off, data, W.CMD_FLAG_FUA if fua else 0)
        if not fua:
            expect_ok(b.request(W.CMD_FLUSH), "FLUSH on connection B")
        _clean(s.image, off, len(data), "A's write after B's FLUSH" if not fua else "FUA")
        assert c.read(off, len(data)) == data, "connection C does not see A's data"
    for x in (a, b, c):
        x.disconnect()
    import nbd
    hs = [s.libnbd() for _ in range(3)]
    assert all(h.can_multi_conn() for h in hs)
    off = ctx.scratch(64 * KiB)
    data = os.urandom(64 * KiB)
    hs[0].pwrite(data, off)
    hs[1].flush()
    assert hs[2].pread(len(data), off) == data
    for h in hs:
        h.shutdown()
    del nbd


# ---------------------------------------------------------------- rule 28
@rule(28)
def r28_write_zeroes_reads_zero(ctx):
    s, w = conn(ctx, sr=True)
    tf = w.info.tflags
    assert tf & W.TF_SEND_WRITE_ZEROES, "SEND_WRITE_ZEROES not advertised"
    off = ctx.scratch(MiB)
    model = bytearray(os.urandom(MiB))
    w.write(off, bytes(model))
    for o, n, fl in [(4096, 65536, 0), (128 * KiB, 65536, W.CMD_FLAG_NO_HOLE),
                     (256 * KiB, 65536, W.CMD_FLAG_FUA), (300001, 12345, 0),
                     (400000, 100000, W.CMD_FLAG_NO_HOLE), (MiB - 513, 513, 0),
                     (512 * KiB, 1, W.CMD_FLAG_NO_HOLE | W.CMD_FLAG_FUA)]:
        rep = w.request(W.CMD_WRITE_ZEROES, off + o, n, fl)
        assert rep.error != W.ENOTSUP, "WRITE_ZEROES without FAST_ZERO failed with ENOTSUP"
        expect_ok(rep, f"WRITE_ZEROES +{o}+{n} flags {fl:#x}")
        model[o:o + n] = bytes(n)
    assert w.read(off, MiB) == bytes(model), "WRITE_ZEROES: wrong data (zeroes or neighbours)"
    w.disconnect()
    for srv in (s, ctx.shared("ro")):
        _, w = conn(ctx, sr=True, server=srv)
        f = w.info.tflags
        assert not (f & W.TF_SEND_FAST_ZERO and not f & W.TF_SEND_WRITE_ZEROES), \
            f"SEND_FAST_ZERO without SEND_WRITE_ZEROES ({f:#x})"
        w.disconnect()


@rule(28)
def r28_fast_zero(ctx):
    s, w = conn(ctx, sr=True)
    tf = w.info.tflags
    off = ctx.scratch(MiB)
    data = os.urandom(MiB)
    w.write(off, data)
    expect_ok(w.request(W.CMD_TRIM, off + 512 * KiB, 512 * KiB), "TRIM")
    w.write(off + 512 * KiB, data[512 * KiB:768 * KiB])
    if not tf & W.TF_SEND_FAST_ZERO:
        rep = w.request(W.CMD_WRITE_ZEROES, off, 65536, W.CMD_FLAG_FAST_ZERO)
        expect_error(rep, W.EINVAL, "FAST_ZERO without SEND_FAST_ZERO")
        w.disconnect()
        return "SEND_FAST_ZERO not advertised: checked that FAST_ZERO is refused"
    notes = []
    for o, n, fl in [(0, 256 * KiB, 0), (768 * KiB, 256 * KiB, 0),
                     (256 * KiB, 128 * KiB, W.CMD_FLAG_NO_HOLE), (4096 + 100, 8000, 0)]:
        before = w.read(off + o, n)
        t0 = time.monotonic()
        rep = w.request(W.CMD_WRITE_ZEROES, off + o, n, fl | W.CMD_FLAG_FAST_ZERO)
        dt = time.monotonic() - t0
        if rep.error:
            expect_error(rep, W.ENOTSUP, f"FAST_ZERO +{o}+{n}")
            assert dt < 1.0, f"FAST_ZERO failure took {dt:.2f} s (must be quick)"
            assert w.read(off + o, n) == before, "a failed FAST_ZERO changed the data (S)"
            notes.append(f"+{o}:ENOTSUP")
        else:
            assert w.read(off + o, n) == bytes(n), f"FAST_ZERO +{o}+{n}: not zero"
            notes.append(f"+{o}:ok")
    w.disconnect()
    h = s.libnbd()
    if h.can_fast_zero():
        import nbd
        try:
            h.zero(65536, off, nbd.CMD_FLAG_FAST_ZERO)
        except nbd.Error as e:
            assert F.libnbd_errno(e) == "ENOTSUP", f"libnbd fast zero: {e}"
    h.shutdown()
    return " ".join(notes)


# ---------------------------------------------------------------- rule 29
@rule(29)
def r29_send_df_iff_sr(ctx):
    s = rw(ctx)
    for sr in (False, True):
        w = s.wire().start()
        if sr:
            w.structured_reply()
        _, info = w.info_or_go(W.OPT_INFO, EXPORT)
        flags = [info.tflags, w.go(EXPORT).tflags]
        if sr:
            rep = w.request(W.CMD_READ, 0, 4096, W.CMD_FLAG_DF if flags[1] & W.TF_SEND_DF else 0)
            expect_ok(rep, "READ (DF when advertised)")
        w.disconnect()
        w = s.wire().start()
        if sr:
            w.structured_reply()
        flags.append(w.export_name(EXPORT).tflags)
        w.disconnect()
        for f in flags:
            if not sr:
                assert not f & W.TF_SEND_DF, f"SEND_DF without structured replies ({f:#x})"
    h = s.libnbd(sr=False)
    assert not h.can_df(), "libnbd: can_df without structured replies"
    h.shutdown()


# ---------------------------------------------------------------- rule 30
def _check_extents(ctx, s, w, rep, off, ln, req_one=False):
    expect_ok(rep, f"BLOCK_STATUS {off}+{ln}")
    assert len(rep.extents) == len(w.contexts), \
        f"{len(rep.extents)} status chunks for {len(w.contexts)} contexts"
    for cid, ext in rep.extents.items():
        assert cid in w.contexts, f"status chunk for context {cid}, not negotiated"
        assert 1 <= len(ext) <= (1 << 20), f"{len(ext)} descriptors"
        if req_one:
            assert len(ext) == 1, f"REQ_ONE: {len(ext)} descriptors"
            assert ext[0][0] <= ln, f"REQ_ONE: descriptor of {ext[0][0]} > request {ln}"
        else:
            assert sum(e for e, _ in ext[:-1]) < ln, "the first N-1 descriptors reach the " \
                                                     "request's end"
        pos = off
        for elen, st in ext:
            assert st & ~(W.STATE_HOLE | W.STATE_ZERO) == 0, \
                f"base:allocation status {st:#x} sets reserved bits"
            if st & W.STATE_ZERO and pos < off + ln:
                n = min(elen, off + ln - pos)
                assert ctx.file_bytes(s, pos, n) == bytes(n), \
                    f"extent {pos}+{n} reported ZERO but holds data"
            pos += elen


@rule(30)
def r30_block_status(ctx):
    s, w = conn(ctx, meta=True)
    for o, n in [(0, 8 * MiB), (0, 4 * MiB), (MiB - 4096, 8192), (MiB + 100, 1000),
                 (3 * MiB, 5 * MiB), (0, F.RW_SIZE), (F.RW_SIZE - 4096, 4096), (0, 1),
                 (2 * MiB - 1, 2)]:
        _check_extents(ctx, s, w, w.request(W.CMD_BLOCK_STATUS, o, n), o, n)
    # the known layout: a hole in the middle of [1 MiB, 2 MiB) is not reported as data-only
    rep = w.request(W.CMD_BLOCK_STATUS, MiB + 65536, 65536, W.CMD_FLAG_REQ_ONE)
    st = list(rep.extents.values())[0][0][1]
    w.disconnect()
    return f"hole reported as status {st}"


@rule(30)
def r30_req_one(ctx):
    s, w = conn(ctx, meta=True)
    for o, n in [(0, 8 * MiB), (MiB - 4096, 8192), (MiB + 100, 1000), (3 * MiB, 5 * MiB),
                 (F.RW_SIZE - 512, 512), (0, 1)]:
        _check_extents(ctx, s, w, w.request(W.CMD_BLOCK_STATUS, o, n, W.CMD_FLAG_REQ_ONE),
                       o, n, req_one=True)
    w.disconnect()


@rule(30)
def r30_einval_cases(ctx):
    s, w = conn(ctx, sr=True)        # no context selected
    expect_error(w.request(W.CMD_BLOCK_STATUS, 0, 4096), W.EINVAL,
                 "BLOCK_STATUS without a negotiated context")
    w.disconnect()
    s, w = conn(ctx, meta=True)
    for o, n in [(F.RW_SIZE, 4096), (F.RW_SIZE - 512, 1024), (U64 - 512, 1024)]:
        expect_error(w.request(W.CMD_BLOCK_STATUS, o, n), W.EINVAL,
                     f"BLOCK_STATUS {o}+{n} past the end")
    in_sync(ctx, w, s, "refused BLOCK_STATUS")
    w.disconnect()


@rule(30)
def r30_libnbd_block_status(ctx):
    import nbd
    s = rw(ctx)
    h = s.libnbd(meta=["base:allocation"])
    assert h.can_meta_context("base:allocation")
    seen = []

    def cb(ctxname, off, entries, err):
        seen.append((ctxname, off, list(entries)))
        return 0
    h.block_status(8 * MiB, 0, cb)
    h.block_status(8 * MiB, MiB + 4096, cb, nbd.CMD_FLAG_REQ_ONE)
    assert len(seen) == 2 and all(c == "base:allocation" for c, _, _ in seen)
    assert len(seen[1][2]) == 2, f"REQ_ONE: {seen[1][2]}"
    h.shutdown()


# ---------------------------------------------------------------- rule 31
@rule(31)
def r31_error_chunks(ctx):
    s, w = conn(ctx, sr=True)
    bad = [(W.CMD_READ, F.RW_SIZE, 512, 0), (W.CMD_READ, 0, 512, 0x8000),
           (W.CMD_READ, U64 - 512, 1024, 0), (W.CMD_WRITE, F.RW_SIZE, 512, 0),
           (W.CMD_TRIM, F.RW_SIZE, 512, 0), (0x7F, 0, 0, 0), (W.CMD_BLOCK_STATUS, 0, 4096, 0),
           (W.CMD_FLUSH, 512, 0, 0)]
    chunks = 0
    for cmd, o, n, fl in bad:
        rep = w.request(cmd, o, n, fl, os.urandom(n) if cmd == W.CMD_WRITE else b"")
        assert rep.error, f"{rep.describe()} succeeded"
        chunks += sum(1 for t, *_ in rep.errors if t is not None)
    assert chunks >= 3, f"only {chunks} error chunks seen (READ errors must be chunks)"
    w.disconnect()
    return f"{chunks} error chunks checked"


# ---------------------------------------------------------------- rule 32
@rule(32)
def r32_cache(ctx):
    for sr in (False, True):
        s, w = conn(ctx, sr=sr)
        tf = w.info.tflags
        assert tf & W.TF_SEND_CACHE, f"SEND_CACHE not advertised ({tf:#x}): rule 32 not exercised"
        expect_ok(w.request(W.CMD_CACHE, 0, MiB), "CACHE")
        expect_ok(w.request(W.CMD_CACHE, 100, 5000), "unaligned CACHE")
        if tf & W.TF_SEND_FUA:
            expect_ok(w.request(W.CMD_CACHE, 0, 4096, W.CMD_FLAG_FUA), "CACHE with FUA")
        for fl in (0x8000, 0x40, W.CMD_FLAG_NO_HOLE, W.CMD_FLAG_DF, W.CMD_FLAG_REQ_ONE,
                   W.CMD_FLAG_FAST_ZERO, W.CMD_FLAG_PAYLOAD_LEN):
            expect_error(w.request(W.CMD_CACHE, 0, 4096, fl), W.EINVAL, f"CACHE flags {fl:#x}")
        in_sync(ctx, w, s, "CACHE")
        w.disconnect()
    h = rw(ctx).libnbd()
    assert h.can_cache()
    h.cache(MiB, 0)
    h.shutdown()


# ---------------------------------------------------------------- rule 33
@rule(33)
def r33_disc_finishes_requests(ctx):
    s = rw(ctx)
    for sr, tcp in ((False, False), (True, True)):
        _, w = conn(ctx, sr=sr, tcp=tcp)
        off = ctx.scratch(2 * MiB)
        blocks = [os.urandom(64 * KiB) for _ in range(32)]
        cks = [w.send_request(W.CMD_WRITE, off + i * 64 * KiB, 64 * KiB, 0, b)
               for i, b in enumerate(blocks)]
        cks += [w.send_request(W.CMD_READ, o, 256 * KiB) for o in range(0, 2 * MiB, 256 * KiB)]
        w.send_request(W.CMD_DISC, cookie=0xD15C)      # not registered: a reply to it fails
        for ck in cks:
            try:
                rep = w.wait(ck)
            except W.Closed:
                raise AssertionError(f"connection closed with {len(w.pending)} of {len(cks)} "
                                     "requests unanswered after NBD_CMD_DISC")
            expect_ok(rep, rep.describe())
        closed, extra = w.wait_closed(10)
        assert not extra, f"{len(extra)} bytes after the last reply (a reply to DISC?)"
        assert closed, "connection still open 10 s after NBD_CMD_DISC"
        w.close()
        _, r = conn(ctx)
        assert r.read(off, 2 * MiB) == b"".join(blocks), "writes before DISC were not all done"
        r.disconnect()
    h = s.libnbd()
    off = ctx.scratch(MiB)
    data = os.urandom(MiB)
    for i in range(16):
        h.aio_pwrite(data[i * 65536:(i + 1) * 65536], off + i * 65536)
    h.shutdown()
    h2 = s.libnbd()
    assert h2.pread(MiB, off) == data, "libnbd shutdown lost writes"
    h2.shutdown()


# ---------------------------------------------------------------- rule 34
def _shutdown_scenario(ctx, tcp):
    img = ctx.make_image(f"sd{ctx.counter()}.img", 64 * MiB, [(0, 64 * MiB, "data")])
    s = F.Server(ctx, img)
    with open(img, "rb") as f:
        content = f.read()
    _, a = conn(ctx, sr=True, server=s, tcp=tcp)
    _, idle = conn(ctx, sr=False, server=s, tcp=tcp)
    b = s.wire(tcp).start()
    cks = [(a.send_request(W.CMD_READ, i * MiB, MiB), i * MiB) for i in range(48)]
    time.sleep(1.0)                    # the server has read them; replies back up
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    problems = []
    # a client still negotiating: options other than ABORT get NBD_REP_ERR_SHUTDOWN
    try:
        final, _ = b.option(W.OPT_LIST)
        if final.type != W.REP_ERR_SHUTDOWN:
            problems.append(f"option during shutdown got {W.rep_name(final.type)}, expected "
                            "ERR_SHUTDOWN")
    except (W.Closed, OSError) as e:
        problems.append(f"negotiating client was disconnected instead of getting "
                        f"NBD_REP_ERR_SHUTDOWN ({e})")
    # a new request on an idle connection: ESHUTDOWN (or the connection is already closed)
    try:
        rep = idle.request(W.CMD_READ, 0, 4096)
        if rep.error != W.ESHUTDOWN:
            problems.append(f"new request during shutdown got {W.err_name(rep.error)}, "
                            "expected ESHUTDOWN")
    except (W.Closed, OSError):
        pass
    late = None
    try:
        late = a.send_request(W.CMD_READ, 0, 4096)
    except OSError:
        pass
    # every request in flight at SIGTERM is finished and replied to
    for ck, off in cks:
        try:
            rep = a.wait(ck)
        except (W.Closed, OSError) as e:
            problems.append(f"in-flight READ at {off} never answered ({e}): "
                            f"{len(a.pending)} requests lost")
            break
        if rep.error:
            if rep.error != W.ESHUTDOWN:
                problems.append(f"in-flight READ at {off} failed with {W.err_name(rep.error)}")
        elif bytes(rep.data) != content[off:off + MiB]:
            problems.append(f"in-flight READ at {off}: wrong data")
    if late is not None and not problems:
        try:
            rep = a.wait(late)
            if rep.error != W.ESHUTDOWN:
                problems.append(f"request sent after SIGTERM got {W.err_name(rep.error)}, "
                                "expected ESHUTDOWN")
        except (W.Closed, OSError):
            pass
    for x in (a, b, idle):
        x.close()
    s.wait_exit(30)
    assert not problems, f"({'TCP' if tcp else 'Unix'}) " + "; ".join(problems)


@rule(34)
def r34_shutdown(ctx):
    _shutdown_scenario(ctx, tcp=False)
    _shutdown_scenario(ctx, tcp=True)


# ---------------------------------------------------------------- rule 35
@rule(35)
def r35_efbig_maps_to_enospc(ctx):
    """EFBIG from the backing becomes NBD_ENOSPC: the server runs with RLIMIT_FSIZE = 8 MiB
    (SIGXFSZ ignored) on a 16 MiB image; writes at or beyond 8 MiB fail with EFBIG."""
    img = ctx.make_image(f"fsz{ctx.counter()}.img", 16 * MiB)

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8 * MiB, 8 * MiB))
    s = F.Server(ctx, img, preexec=limit)
    for sr in (False, True):
        _, w = conn(ctx, sr=sr, server=s)
        w.write(4 * MiB, os.urandom(4096))
        for off in (12 * MiB, 8 * MiB, 8 * MiB - 2048):
            rep = w.request(W.CMD_WRITE, off, 4096, 0, os.urandom(4096))
            expect_error(rep, W.ENOSPC, f"WRITE at {off} beyond RLIMIT_FSIZE (EFBIG)")
        w.read(0, 4096)
        w.disconnect()
    assert s.alive(), "the server died (SIGXFSZ?)"
    s.stop()


@rule(35)
def r35_tcp_nodelay(ctx):
    strace = F.tool("strace")
    assert strace, "strace is not installed"
    s = rw(ctx)
    out = ctx.path(f"strace{ctx.counter()}.txt")
    p = subprocess.Popen([strace, "-f", "-qq", "-e", "trace=setsockopt", "-o", out, "-p",
                          str(s.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)
    try:
        if p.poll() is not None:
            raise AssertionError(f"strace could not attach: {p.stderr.read().decode()[:200]}")
        _, w = conn(ctx, tcp=True)
        w.read(0, 512)
        w.disconnect()
        time.sleep(0.3)
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(10)
    text = open(out).read()
    assert "TCP_NODELAY, [1]" in text, f"no setsockopt(TCP_NODELAY, 1) on the accepted " \
                                       f"socket: {text[:300]!r}"


@rule(35)
def r35_error_values(ctx):
    """A battery of refused requests, with and without structured and extended headers:
    every error value is one of the eight the spec allows (nbdwire checks each reply)."""
    n = 0
    for sr, eh in ((False, False), (True, False), (True, True)):
        s, w = conn(ctx, sr=sr, meta=sr, eh=eh)
        for cmd, o, ln, fl in [(W.CMD_READ, F.RW_SIZE, 512, 0), (W.CMD_WRITE, F.RW_SIZE, 512, 0),
                               (W.CMD_TRIM, U64 - 1, 2, 0), (0x55, 0, 0, 0),
                               (W.CMD_READ, 0, 512, 0x100), (W.CMD_FLUSH, 1, 1, 0),
                               (W.CMD_WRITE_ZEROES, F.RW_SIZE, 1, 0),
                               (W.CMD_BLOCK_STATUS, F.RW_SIZE, 1, 0)]:
            if cmd == W.CMD_WRITE and eh:
                fl |= W.CMD_FLAG_PAYLOAD_LEN
            rep = w.request(cmd, o, ln, fl, os.urandom(ln) if cmd == W.CMD_WRITE else b"")
            assert rep.error, f"{rep.describe()} succeeded"
            n += 1
        w.disconnect()
    ro = ctx.shared("ro")
    _, w = conn(ctx, server=ro)
    assert w.request(W.CMD_WRITE, 0, 512, 0, bytes(512)).error == W.EPERM
    w.disconnect()
    return f"{n + 1} error replies checked"
