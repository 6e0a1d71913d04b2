# SPDX-License-Identifier: MIT
"""t_handshake.py: rules 1-13 of docs/spec-rules.md (the handshake); t_meta.py has
rules 14-16 and uses the helpers here (rw, in_sync_go, still_serves, tls_server, starttls).

Each test is named rNN_... after the first rule it checks. The raw client (nbdwire) checks
every reply it parses as well (see its docstring)."""
import os
import ssl
import struct
import subprocess
import time

import framework as F
import nbdwire as W
from framework import rule

EXPORT = "disk"


def rw(ctx):
    return ctx.shared("rw")


def both(server):
    """The Unix socket, then TCP."""
    return (server.addr(False), server.addr(True))


def still_serves(server, what):
    """After a test's abuse, a fresh client negotiates and reads."""
    w = server.connect()
    try:
        w.read(0, 4096)
    except Exception as e:
        raise AssertionError(f"after {what}, a normal client fails: {e}")
    w.disconnect()


# ---------------------------------------------------------------- rule 1
@rule(1)
def r01_greeting(ctx):
    s = rw(ctx)
    for addr in both(s):
        w = W.Wire(**addr)
        raw = w.recv_exact(18)
        magic, opt, flags = struct.unpack(">QQH", raw)
        assert magic == W.NBDMAGIC, f"first 8 bytes {raw[:8]!r}, expected NBDMAGIC"
        assert opt == W.IHAVEOPT, f"bytes 8-16 {raw[8:16]!r}, expected IHAVEOPT"
        assert flags & W.FLAG_FIXED_NEWSTYLE, f"handshake flags {flags:#x} lack FIXED_NEWSTYLE"
        assert flags & ~(W.FLAG_FIXED_NEWSTYLE | W.FLAG_NO_ZEROES) == 0, \
            f"handshake flags {flags:#x} set bits other than FIXED_NEWSTYLE and NO_ZEROES"
        w.close()


# ---------------------------------------------------------------- rule 2
@rule(2)
def r02_unknown_client_flags_drop(ctx):
    s = rw(ctx)
    for addr in both(s):
        for bad in (1 << 2, 1 << 3, 1 << 15, 1 << 16, 1 << 31, 0xFFFFFFFC):
            w = W.Wire(**addr)
            w.greeting()
            try:
                w.send(struct.pack(">I", W.FLAG_FIXED_NEWSTYLE | bad))
                w.send_option(W.OPT_LIST)
            except OSError:
                pass
            w.expect_hard_close(f"client flags with unknown bit {bad:#x}", 2)
            w.close()
        # a flag the server did not advertise
        w = W.Wire(**addr)
        flags = w.greeting()
        if not flags & W.FLAG_NO_ZEROES:
            w.send(struct.pack(">I", W.FLAG_FIXED_NEWSTYLE | W.FLAG_NO_ZEROES))
            w.send_option(W.OPT_LIST)
            w.expect_hard_close("C_NO_ZEROES without NO_ZEROES advertised", 2)
        w.close()
    still_serves(s, "unknown client flags")


# ---------------------------------------------------------------- rule 3
@rule(3)
def r03_unknown_option_skipped(ctx):
    s = rw(ctx)
    w = s.wire().start()
    final = w.simple_option(0xDEAD, bytes(range(100)))
    assert final.type == W.REP_ERR_UNSUP, f"option 0xdead got {W.rep_name(final.type)}"
    w.go(EXPORT)
    assert w.read(0, 4096) == ctx.file_bytes(s, 0, 4096), "READ after GO: wrong data"
    w.disconnect()


@rule(3)
def r03_unknown_options_pipelined(ctx):
    """Several unknown options of different lengths sent at once, then GO: each is skipped
    exactly (payloads that look like option headers must not be parsed)."""
    s = rw(ctx)
    w = s.wire().start()
    fake = struct.pack(">QII", W.IHAVEOPT, W.OPT_ABORT, 0)        # looks like NBD_OPT_ABORT
    opts = [(0xDEAD, b""), (0x7FFFFFFF, b"x"), (0x1000, fake * 3), (W.OPT_PEEK_EXPORT, b""),
            (0xFFFFFFFF, os.urandom(4096)), (12, fake), (0x80000001, b"abc")]
    blob = b"".join(struct.pack(">QII", W.IHAVEOPT, o, len(d)) + d for o, d in opts)
    w.send(blob + struct.pack(">QII", W.IHAVEOPT, W.OPT_GO, 6 + len(EXPORT)) +
           W.info_payload(EXPORT))
    for o, _d in opts:
        r = w.option_reply(o)
        assert r.type == W.REP_ERR_UNSUP, f"unknown option {o:#x} got {W.rep_name(r.type)}"
    final, _info = w.info_or_go(W.OPT_GO, EXPORT, send=False)
    assert final.type == W.REP_ACK, f"GO after unknown options: {W.rep_name(final.type)}"
    assert w.read(4096, 512) == ctx.file_bytes(s, 4096, 512)
    w.disconnect()


# ---------------------------------------------------------------- rule 4
@rule(4)
def r04_reply_headers(ctx):
    """Every option reply: magic 0x3e889045565a9, the client's option number, a type and a
    length that frames it exactly (nbdwire checks magic and option on every reply)."""
    s = rw(ctx)
    w = s.wire().start()
    for opt, data in [(W.OPT_LIST, b""), (W.OPT_INFO, W.info_payload(EXPORT, [W.INFO_NAME])),
                      (0x7FFFFFFF, b"12345"), (W.OPT_INFO, W.info_payload("nosuch")),
                      (W.OPT_STARTTLS, b""), (W.OPT_STRUCTURED_REPLY, b""),
                      (W.OPT_LIST_META_CONTEXT, W.meta_payload(EXPORT)),
                      (W.OPT_STRUCTURED_REPLY, b"junk")]:
        final, earlier = w.option(opt, data)
        for r in earlier + [final]:
            assert r.option == opt
    w.go(EXPORT)
    assert w.pending_bytes() == b"", "bytes after the GO's ACK"
    w.disconnect()
    # the same through libnbd's option mode
    h = s.libnbd(opt_mode=True)
    names = []
    h.opt_list(lambda name, desc: names.append(name))
    assert EXPORT in names, f"NBD_OPT_LIST through libnbd: {names}"
    h.set_export_name(EXPORT)
    h.opt_info()
    h.opt_go()
    assert h.get_size() == F.RW_SIZE
    h.shutdown()


# ---------------------------------------------------------------- rule 5
@rule(5)
def r05_abort_ack(ctx):
    s = rw(ctx)
    for addr in both(s):
        for data in (b"", b"ignored data"):  # the server SHOULD ignore data sent with ABORT
            w = W.Wire(**addr).start()
            w.send_option(W.OPT_ABORT, data)
            r = w.option_reply(W.OPT_ABORT)
            assert r.type == W.REP_ACK, f"NBD_OPT_ABORT ({len(data)} bytes) got {W.rep_name(r.type)}"
            assert r.data == b"", "NBD_REP_ACK with data"
            closed, extra = w.wait_closed(5)
            assert not extra, f"{len(extra)} bytes after the ACK to ABORT"
            w.close()
    h = s.libnbd(opt_mode=True)
    h.opt_abort()
    assert h.aio_is_closed(), "libnbd: not closed after opt_abort"


@rule(5)
def r05_abort_client_hangs_up(ctx):
    """Clients that send ABORT (or half an option) and close without reading."""
    s = rw(ctx)
    for i in range(30):
        w = W.Wire(**s.addr(i % 2 == 1)).start()
        w.send_option(W.OPT_ABORT)
        w.close()
    for i in range(10):
        w = W.Wire(**s.addr(i % 2 == 1)).start()
        w.send(struct.pack(">QII", W.IHAVEOPT, W.OPT_ABORT, 100)[:12])
        w.close()
    time.sleep(0.2)
    still_serves(s, "clients closing right after NBD_OPT_ABORT")


# ---------------------------------------------------------------- rule 6
def in_sync_go(ctx, w, s):
    info = w.go(EXPORT)
    assert w.read(0, 512) == ctx.file_bytes(s, 0, 512), "READ after GO: wrong data"
    return info


@rule(6)
def r06_list_with_data_invalid(ctx):
    s = rw(ctx)
    w = s.wire().start()
    final, earlier = w.option(W.OPT_LIST, b"\0\0\0\x04disk")
    assert final.type == W.REP_ERR_INVALID and not earlier, \
        f"NBD_OPT_LIST with data: {earlier} {W.rep_name(final.type)}"
    final, earlier = w.option(W.OPT_LIST)
    assert final.type == W.REP_ACK, "NBD_OPT_LIST after the refused one failed"
    in_sync_go(ctx, w, s)
    w.disconnect()


@rule(6)
def r06_structured_reply_with_data_invalid(ctx):
    s = rw(ctx)
    w = s.wire().start()
    r = w.simple_option(W.OPT_STRUCTURED_REPLY, b"data")
    assert r.type == W.REP_ERR_INVALID, f"STRUCTURED_REPLY with data: {W.rep_name(r.type)}"
    # refused, so not negotiated: READ must get a simple reply (nbdwire checks the style)
    in_sync_go(ctx, w, s)
    w.disconnect()


@rule(6)
def r06_extended_headers_with_data_invalid(ctx):
    s = rw(ctx)
    w = s.wire().start()
    r = w.simple_option(W.OPT_EXTENDED_HEADERS, b"\0\0\0\0")
    assert r.type == W.REP_ERR_INVALID, f"EXTENDED_HEADERS with data: {W.rep_name(r.type)}"
    in_sync_go(ctx, w, s)      # compact headers and simple replies still in use
    w.disconnect()


@rule(6, 11)
def r06_starttls_with_data(ctx):
    """STARTTLS with data: ACK or a permitted error (NOTLS: INVALID, POLICY, UNSUP or
    PLATFORM; never TLS_REQD), then the next option still parses."""
    s = rw(ctx)
    w = s.wire().start()
    r = w.simple_option(W.OPT_STARTTLS, b"junk data")
    assert r.type in (W.REP_ERR_INVALID, W.REP_ERR_POLICY, W.REP_ERR_UNSUP, W.REP_ERR_PLATFORM), \
        f"STARTTLS with data on a NOTLS server: {W.rep_name(r.type)}"
    in_sync_go(ctx, w, s)
    w.disconnect()


# ---------------------------------------------------------------- rule 7
@rule(7)
def r07_export_name_unknown_hard_close(ctx):
    s = rw(ctx)
    for addr in both(s):
        for name in (b"nosuch", b"", b"disk2", b"DISK"):
            w = W.Wire(**addr).start()
            w.send_option(W.OPT_EXPORT_NAME, name)
            w.expect_hard_close(f"NBD_OPT_EXPORT_NAME {name!r} (unknown)", 7)
            w.close()
    still_serves(s, "unknown EXPORT_NAME")


@rule(7)
def r07_export_name_reply_bytes(ctx):
    s = rw(ctx)
    want = ctx.file_bytes(s, 4096, 8192)
    for addr in both(s):
        for nz in (False, True):
            w = W.Wire(**addr).start(no_zeroes=nz)
            info = w.export_name(EXPORT)     # reads exactly 10 (+124 zero) bytes
            assert info.size == F.RW_SIZE, f"size {info.size}"
            extra = w.pending_bytes()
            assert extra == b"", f"{len(extra)} bytes after the EXPORT_NAME reply " \
                                 f"(NO_ZEROES {nz})"
            assert w.read(4096, 8192) == want, "READ after EXPORT_NAME: wrong data"
            w.disconnect()


# ---------------------------------------------------------------- rule 8
@rule(8)
def r08_info_go_replies(ctx):
    s = rw(ctx)
    w = s.wire().start()
    for infos in ((), (W.INFO_NAME,), (W.INFO_NAME, W.INFO_DESCRIPTION, W.INFO_BLOCK_SIZE)):
        final, info = w.info_or_go(W.OPT_INFO, EXPORT, infos)
        assert final.type == W.REP_ACK, f"INFO {infos}: {W.rep_name(final.type)}"
        assert info.size == F.RW_SIZE and info.tflags & W.TF_HAS_FLAGS
        types = [t for t, _ in info.infos]
        assert len(types) == len(set(types)), f"an info type sent twice: {types}"
    w.go(EXPORT, (W.INFO_BLOCK_SIZE,))
    w.disconnect()


@rule(8)
def r08_unknown_info_types_ignored(ctx):
    s = rw(ctx)
    w = s.wire().start()
    for opt in (W.OPT_INFO, W.OPT_GO):
        final, info = w.info_or_go(opt, EXPORT, (0x7777, W.INFO_BLOCK_SIZE, 0xFFFF, 4))
        assert final.type == W.REP_ACK, \
            f"{'GO' if opt == W.OPT_GO else 'INFO'} with unknown info types: " \
            f"{W.rep_name(final.type)} {final.data!r}"
    w.read(0, 512)
    w.disconnect()


@rule(8)
def r08_unknown_export(ctx):
    s = rw(ctx)
    w = s.wire().start()
    for opt in (W.OPT_INFO, W.OPT_GO):
        for name in ("nosuch", "", "disk/", "dis"):
            final, earlier = w.option(opt, W.info_payload(name))
            assert final.type == W.REP_ERR_UNKNOWN, \
                f"INFO/GO for unknown export {name!r}: {W.rep_name(final.type)}"
            assert not earlier, f"REP_INFO sent for an unknown export: {earlier}"
    in_sync_go(ctx, w, s)
    w.disconnect()


@rule(8)
def r08_name_length_exceeds_optlen(ctx):
    s = rw(ctx)
    w = s.wire().start()
    n = EXPORT.encode()
    for opt in (W.OPT_INFO, W.OPT_GO):
        for declared in (len(n) + 1, len(n) + 2, 0x7FFFFFFF, 0xFFFFFFFF):
            data = struct.pack(">I", declared) + n + b"\0\0"   # optlen - 6 == len(n)
            final, earlier = w.option(opt, data)
            assert final.type == W.REP_ERR_INVALID, \
                f"name length {declared} > optlen-6 ({len(n)}): {W.rep_name(final.type)}"
    in_sync_go(ctx, w, s)
    w.disconnect()


@rule(8)
def r08_go_no_padding(ctx):
    s = rw(ctx)
    for addr in both(s):
        for nz in (False, True):
            w = W.Wire(**addr).start(no_zeroes=nz)
            w.go(EXPORT)
            extra = w.pending_bytes()
            assert extra == b"", f"{len(extra)} bytes after the ACK to GO (NO_ZEROES {nz})"
            assert w.read(0, 512) == ctx.file_bytes(s, 0, 512)
            w.disconnect()


# ---------------------------------------------------------------- rule 9
@rule(9)
def r09_info_then_go_same(ctx):
    s = rw(ctx)
    for sr in (False, True):
        for infos in ((), (W.INFO_NAME, W.INFO_DESCRIPTION, W.INFO_BLOCK_SIZE)):
            w = s.wire().start()
            if sr:
                w.structured_reply()
            final, a = w.info_or_go(W.OPT_INFO, EXPORT, infos)
            assert final.type == W.REP_ACK
            b = w.go(EXPORT, infos)
            assert a.same_as(b), f"INFO then GO (SR {sr}, infos {infos}) differ: " \
                f"size {a.size}/{b.size} flags {a.tflags:#x}/{b.tflags:#x} " \
                f"name {a.name}/{b.name} block {a.block_size}/{b.block_size}"
            assert sorted(t for t, _ in a.infos) == sorted(t for t, _ in b.infos), \
                f"different info types: {a.infos} / {b.infos}"
            w.disconnect()
    # libnbd: opt_info then opt_go
    h = s.libnbd(opt_mode=True)
    h.set_export_name(EXPORT)
    h.opt_info()
    size, ro = h.get_size(), h.is_read_only()
    h.opt_go()
    assert (h.get_size(), h.is_read_only()) == (size, ro)
    h.shutdown()


# ---------------------------------------------------------------- rule 10
def _check_block_size(bs, size, what):
    mn, pref, mx = bs
    pow2 = lambda v: v > 0 and v & (v - 1) == 0  # noqa: E731
    assert pow2(mn) and mn <= 65536, f"{what}: minimum {mn} not a power of 2 <= 64 KiB"
    assert pow2(pref) and pref >= max(mn, 512), \
        f"{what}: preferred {pref} not a power of 2 >= max(min, 512)"
    assert mx >= pref or mx == 0xFFFFFFFF, f"{what}: maximum {mx} < preferred {pref}"
    assert size % mn == 0, f"{what}: export size {size} not a multiple of minimum {mn} (S)"


@rule(10)
def r10_block_size(ctx):
    servers = [rw(ctx)]
    for size in (1000, 123456789, 4096 + 512):
        img = ctx.make_image(f"odd{size}.img", size, [(0, size, "data")])
        servers.append(F.Server(ctx, img))
    for s in servers:
        for opt in (W.OPT_INFO, W.OPT_GO):
            w = s.wire().start()
            final, info = w.info_or_go(opt, EXPORT, (W.INFO_BLOCK_SIZE,))
            assert final.type != W.REP_ERR_BLOCK_SIZE_REQD, \
                "NBD_REP_ERR_BLOCK_SIZE_REQD although the client asked for NBD_INFO_BLOCK_SIZE"
            assert final.type == W.REP_ACK, f"INFO/GO with BLOCK_SIZE: {W.rep_name(final.type)}"
            if info.block_size is None:
                # omitting it is allowed only with default constraints; diskgate advertises
                # its backing's block size (case C07), so it must answer the request
                raise AssertionError(f"no NBD_INFO_BLOCK_SIZE reply although the client asked "
                                     f"(export {info.size} bytes)")
            _check_block_size(info.block_size, info.size, f"export of {info.size} bytes")
            w.close()
    # without the request, GO must not be refused for that reason (diskgate serves
    # clients that did not ask)
    w = servers[0].wire().start()
    final, _ = w.info_or_go(W.OPT_GO, EXPORT, ())
    assert final.type == W.REP_ACK, f"GO without BLOCK_SIZE: {W.rep_name(final.type)}"
    w.disconnect()
    h = servers[0].libnbd()
    _check_block_size((h.get_block_size(0), h.get_block_size(1), h.get_block_size(2)),
                      h.get_size(), "libnbd")
    h.shutdown()
    for s in servers[1:]:
        s.stop()


# ---------------------------------------------------------------- rule 11
@rule(11)
def r11_notls_starttls(ctx):
    s = rw(ctx)
    for addr in both(s):
        w = W.Wire(**addr).start()
        r = w.simple_option(W.OPT_STARTTLS)
        assert r.type in (W.REP_ERR_POLICY, W.REP_ERR_UNSUP, W.REP_ERR_PLATFORM), \
            f"STARTTLS on a NOTLS server: {W.rep_name(r.type)} (expected ERR_POLICY, " \
            "ERR_UNSUP or ERR_PLATFORM)"
        in_sync_go(ctx, w, s)    # still plaintext, still in sync
        w.disconnect()


@rule(11)
def r11_notls_never_tls_reqd(ctx):
    s = rw(ctx)
    w = s.wire().start()
    probes = [(W.OPT_LIST, b""), (W.OPT_INFO, W.info_payload(EXPORT)),
              (W.OPT_INFO, W.info_payload("nosuch")), (0xDEAD, b"x"),
              (W.OPT_STRUCTURED_REPLY, b""), (W.OPT_LIST_META_CONTEXT, W.meta_payload(EXPORT)),
              (W.OPT_SET_META_CONTEXT, W.meta_payload(EXPORT, ["base:allocation"])),
              (W.OPT_STARTTLS, b""), (W.OPT_GO, W.info_payload("nosuch"))]
    for opt, data in probes:
        final, earlier = w.option(opt, data)
        for r in earlier + [final]:
            assert r.type != W.REP_ERR_TLS_REQD, f"option {opt} got ERR_TLS_REQD in NOTLS mode"
    w.go(EXPORT)
    w.disconnect()
    w = s.wire().start()
    w.export_name(EXPORT)     # no TLS needed: EXPORT_NAME succeeds
    w.disconnect()


# ---------------------------------------------------------------- rules 12, 13 (TLS)
def tls_support(ctx):
    """True when `diskgate serve --help` offers TLS."""
    out = subprocess.run([ctx.diskgate, "serve", "--help"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT).stdout.decode()
    return "--tls-certificates" in out


def make_pki(ctx):
    """A CA (DIR/ca) and a server certificate for localhost/127.0.0.1 (DIR), made once."""
    if getattr(ctx, "pki", None):
        return ctx.pki
    d = ctx.path(f"pki{ctx.counter()}")
    ca = d + "/ca"                # the CA stays out of the server's directory: a
    os.makedirs(ca)               # ca-cert.pem there would demand client certificates
    F.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
           "-subj", "/CN=diskgate-test-ca", "-keyout", f"{ca}/ca-key.pem", "-out",
           f"{ca}/ca-cert.pem"])
    F.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
           "-keyout", f"{d}/server-key.pem", "-out", f"{ca}/server.csr"])
    with open(f"{ca}/ext.cnf", "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    F.run(["openssl", "x509", "-req", "-in", f"{ca}/server.csr", "-CA", f"{ca}/ca-cert.pem",
           "-CAkey", f"{ca}/ca-key.pem", "-CAcreateserial", "-days", "2", "-extfile",
           f"{ca}/ext.cnf", "-out", f"{d}/server-cert.pem"])
    ctx.pki = (d, ca)
    return ctx.pki


def tls_server(ctx, mode="require"):
    """A FORCEDTLS server (--tls require) and an ssl context trusting its CA."""
    if not tls_support(ctx):
        raise AssertionError("diskgate has no TLS (no --tls-certificates in `serve --help`): "
                             "the FORCEDTLS rules cannot be exercised")
    d, ca = make_pki(ctx)
    # the options of `diskgate serve --help`: --tls off|on|require, --tls-certificates DIR
    args = ["--tls", mode, "--tls-certificates", d]
    s = F.Server(ctx, ctx.make_image(f"tls{ctx.counter()}.img", 1 * F.MiB,
                                     [(0, F.MiB, "data")]), args)
    cctx = ssl.create_default_context(cafile=f"{ca}/ca-cert.pem")
    cctx.check_hostname = False
    return s, cctx


def starttls(w, cctx):
    r = w.simple_option(W.OPT_STARTTLS)
    assert r.type == W.REP_ACK, f"STARTTLS: {W.rep_name(r.type)}"
    # suppress_ragged_eofs=False: a TCP close without a TLS close_notify raises SSLEOFError
    w.s = cctx.wrap_socket(w.s, server_hostname="localhost", suppress_ragged_eofs=False)
    w.sr = w.eh = False           # nothing negotiated before STARTTLS survives it


@rule(12)
def r12_forcedtls_options_need_tls(ctx):
    s, cctx = tls_server(ctx)
    w = s.wire().start()
    for opt, data in [(W.OPT_INFO, W.info_payload(EXPORT)), (W.OPT_GO, W.info_payload(EXPORT)),
                      (W.OPT_LIST, b""), (W.OPT_STRUCTURED_REPLY, b""), (0xDEAD, b"xyz"),
                      (W.OPT_LIST_META_CONTEXT, W.meta_payload(EXPORT))]:
        final, earlier = w.option(opt, data)
        assert final.type == W.REP_ERR_TLS_REQD and not earlier, \
            f"FORCEDTLS: option {opt} before TLS got {W.rep_name(final.type)} {earlier}"
    w.send_option(W.OPT_ABORT)
    assert w.option_reply(W.OPT_ABORT).type == W.REP_ACK
    w.close()
    w = s.wire().start()
    w.send_option(W.OPT_EXPORT_NAME, EXPORT.encode())
    w.expect_hard_close("FORCEDTLS: EXPORT_NAME before TLS", 12)
    s.stop()


@rule(12)
def r12_forcedtls_after_tls(ctx):
    s, cctx = tls_server(ctx)
    w = s.wire().start()
    starttls(w, cctx)
    r = w.simple_option(W.OPT_STARTTLS)
    assert r.type == W.REP_ERR_INVALID, f"second STARTTLS: {W.rep_name(r.type)}"
    for opt, data in [(W.OPT_LIST, b""), (W.OPT_INFO, W.info_payload(EXPORT)),
                      (W.OPT_INFO, W.info_payload("nosuch")), (0xDEAD, b"")]:
        final, earlier = w.option(opt, data)
        assert final.type != W.REP_ERR_TLS_REQD, f"ERR_TLS_REQD after TLS (option {opt})"
    w.go(EXPORT)
    assert w.read(0, 4096) == ctx.file_bytes(s, 0, 4096)
    w.disconnect()
    # libnbd: TLS required works; a client without TLS cannot get in
    import nbd
    d, ca = make_pki(ctx)
    h = nbd.NBD()
    h.set_tls(nbd.TLS_REQUIRE)
    h.set_tls_certificates(ca)
    h.set_tls_verify_peer(True)
    h.connect_uri(s.uri().replace("nbd+unix", "nbds+unix"))
    assert h.get_tls_negotiated()
    assert h.pread(4096, 0) == ctx.file_bytes(s, 0, 4096)
    h.shutdown()
    h = nbd.NBD()
    h.set_tls(nbd.TLS_DISABLE)
    try:
        h.connect_uri(s.uri())
        raise AssertionError("a plaintext libnbd client got into a FORCEDTLS server")
    except nbd.Error:
        pass
    s.stop()


@rule(13)
def r13_starttls_discards_state(ctx):
    s, cctx = tls_server(ctx, mode="on")   # state can be negotiated before TLS
    w = s.wire().start()
    w.structured_reply()
    w.meta_context(W.OPT_SET_META_CONTEXT, EXPORT, ["base:allocation"])
    starttls(w, cctx)             # SR and the meta context must be forgotten
    w.go(EXPORT)
    assert not w.info.tflags & W.TF_SEND_DF, "SEND_DF after STARTTLS without SR again"
    w.read(0, 512)                # a structured reply here is a violation (nbdwire)
    rep = w.request(W.CMD_BLOCK_STATUS, 0, 4096)
    assert rep.error, "BLOCK_STATUS succeeded although STARTTLS discarded the meta context"
    w.disconnect()
    w = s.wire().start()
    w.extended_headers()
    starttls(w, cctx)
    w.go(EXPORT)
    w.read(0, 512)                # compact headers, simple replies
    w.disconnect()
    s.stop()


@rule(12, counts=False)
def r12_notls_standin(ctx):
    """NOTLS stand-in for rule 12 while diskgate has no TLS: nothing is refused for lack of
    TLS, EXPORT_NAME works in plaintext."""
    s = rw(ctx)
    w = s.wire().start()
    for opt, data in [(W.OPT_INFO, W.info_payload(EXPORT)), (W.OPT_LIST, b""), (0xDEAD, b"")]:
        final, _ = w.option(opt, data)
        assert final.type != W.REP_ERR_TLS_REQD
    w.export_name(EXPORT)
    w.read(0, 512)
    w.disconnect()


@rule(13, counts=False)
def r13_notls_standin(ctx):
    """NOTLS stand-in for rule 13: a refused STARTTLS leaves the negotiated state alone (the
    spec discards state only when STARTTLS succeeds)."""
    s = rw(ctx)
    w = s.wire().start()
    w.structured_reply()
    final, ctxs = w.meta_context(W.OPT_SET_META_CONTEXT, EXPORT, ["base:allocation"])
    r = w.simple_option(W.OPT_STARTTLS)
    assert r.is_error
    w.go(EXPORT)
    rep = w.request(W.CMD_READ, 0, 512)
    assert rep.simple is False, "READ got a simple reply: the refused STARTTLS dropped SR"
    if final.type == W.REP_ACK and ctxs:
        rep = w.request(W.CMD_BLOCK_STATUS, 0, 4096)
        F.expect_ok(rep, "BLOCK_STATUS after a refused STARTTLS")
    w.disconnect()
