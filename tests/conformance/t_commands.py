# SPDX-License-Identifier: MIT
"""t_commands.py: rules 26-35 of docs/spec-rules.md (transmission: FLUSH and FUA,
multi-conn, WRITE_ZEROES, DF, BLOCK_STATUS, error chunks, CACHE, NBD_CMD_DISC, shutdown,
error values); t_transmission.py has rules 17-25 and the helpers both use."""
import os
import resource
import signal
import subprocess
import time

import framework as F
import nbdwire as W
from framework import rule, expect_error, expect_ok, MiB, KiB
from t_transmission import EXPORT, U64, conn, export_name_tflags, in_sync, rw, wire_sr


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
        w = wire_sr(s, sr)
        _, info = w.info_or_go(W.OPT_INFO, EXPORT)
        flags = [info.tflags, w.go(EXPORT).tflags]
        if sr:
            rep = w.request(W.CMD_READ, 0, 4096, W.CMD_FLAG_DF if flags[1] & W.TF_SEND_DF else 0)
            expect_ok(rep, "READ (DF when advertised)")
        w.disconnect()
        flags.append(export_name_tflags(s, sr))
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
    # a client still negotiating: options other than ABORT get NBD_REP_ERR_SHUTDOWN, or
    # (reading stopped) the connection closes
    try:
        final, _ = b.option(W.OPT_LIST)
        if final.type != W.REP_ERR_SHUTDOWN:
            problems.append(f"option during shutdown got {W.rep_name(final.type)}, expected "
                            "ERR_SHUTDOWN")
    except (W.Closed, OSError):
        pass
    # a new request on an idle connection: no reply (the client re-sends it once it has
    # reconnected); never ESHUTDOWN, which a client passes on as a failed request
    try:
        rep = idle.request(W.CMD_READ, 0, 4096)
        problems.append(f"new request during shutdown got a reply ({W.err_name(rep.error)}); "
                        "expected none, the connection closed")
    except (W.Closed, OSError):
        pass
    late = None
    try:
        late = a.send_request(W.CMD_READ, 0, 4096)
    except OSError:
        pass
    # every request in flight at SIGTERM is finished and replied to, without an error
    for ck, off in cks:
        try:
            rep = a.wait(ck)
        except (W.Closed, OSError) as e:
            problems.append(f"in-flight READ at {off} never answered ({e}): "
                            f"{len(a.pending)} requests lost")
            break
        if rep.error:
            problems.append(f"in-flight READ at {off} failed with {W.err_name(rep.error)}")
        elif bytes(rep.data) != content[off:off + MiB]:
            problems.append(f"in-flight READ at {off}: wrong data")
    if late is not None and not problems:
        try:
            rep = a.wait(late)
            problems.append(f"request sent after SIGTERM got a reply ({W.err_name(rep.error)}); "
                            "expected none")
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
