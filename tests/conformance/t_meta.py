# SPDX-License-Identifier: MIT
"""t_meta.py: rules 14-16 of docs/spec-rules.md (the handshake: metadata contexts,
string lengths, extended headers) and the TLS test of rule 33; t_handshake.py has rules
1-13.

Each test is named rNN_... after the first rule it checks."""
import os
import ssl
import struct

import framework as F
import nbdwire as W
from framework import rule
from t_handshake import EXPORT, in_sync_go, rw, starttls, still_serves, tls_server


# ---------------------------------------------------------------- rule 14
def _sr_conn(ctx):
    s = rw(ctx)
    w = s.wire().start()
    w.structured_reply()
    return s, w


@rule(14)
def r14_set_before_sr_invalid(ctx):
    s = rw(ctx)
    w = s.wire().start()
    final, ctxs = w.meta_context(W.OPT_SET_META_CONTEXT, EXPORT, ["base:allocation"])
    assert final.type in (W.REP_ERR_INVALID, W.REP_ERR_EXT_HEADER_REQD) and not ctxs, \
        f"SET_META_CONTEXT before structured replies: {ctxs} {W.rep_name(final.type)}"
    in_sync_go(ctx, w, s)
    w.disconnect()


@rule(14)
def r14_set_zero_queries_selects_nothing(ctx):
    s, w = _sr_conn(ctx)
    final, ctxs = w.meta_context(W.OPT_SET_META_CONTEXT, EXPORT, [])
    assert final.type == W.REP_ACK and ctxs == [], \
        f"SET with no query: {ctxs} {W.rep_name(final.type)}"
    w.go(EXPORT)
    rep = w.request(W.CMD_BLOCK_STATUS, 0, 4096)
    F.expect_error(rep, W.EINVAL, "BLOCK_STATUS after SET selected nothing")
    w.disconnect()


@rule(14)
def r14_list_zero_queries_lists_all(ctx):
    s, w = _sr_conn(ctx)
    final, ctxs = w.meta_context(W.OPT_LIST_META_CONTEXT, EXPORT, [])
    assert final.type == W.REP_ACK, f"LIST with no query: {W.rep_name(final.type)}"
    names = [n for _, n in ctxs]
    assert "base:allocation" in names, f"LIST with no query lists {names}"
    for n in names:
        ns = n.split(":", 1)[0]
        assert ":" in n and ns and " " not in ns, f"context name {n!r} has no namespace"
    w.close()
    h = s.libnbd(opt_mode=True)
    got = []
    h.opt_list_meta_context(lambda name: got.append(name))
    assert "base:allocation" in got, f"libnbd opt_list_meta_context: {got}"
    h.opt_abort()


@rule(14)
def r14_unknown_namespace_ignored(ctx):
    s, w = _sr_conn(ctx)
    for opt in (W.OPT_LIST_META_CONTEXT, W.OPT_SET_META_CONTEXT):
        final, ctxs = w.meta_context(opt, EXPORT, ["x-nosuch:foo", "qemu:dirty-bitmap:b",
                                                  "nbd-server:", "x-a:"])
        assert final.type == W.REP_ACK and ctxs == [], \
            f"unknown namespaces (option {opt}): {ctxs} {W.rep_name(final.type)}"
        final, ctxs = w.meta_context(opt, EXPORT, ["x-nosuch:foo", "base:allocation",
                                                  "base:nosuch-leaf"])
        assert final.type == W.REP_ACK and [n for _, n in ctxs] == ["base:allocation"], \
            f"unknown + base:allocation (option {opt}): {ctxs} {W.rep_name(final.type)}"
    w.close()


@rule(14)
def r14_base_wildcard(ctx):
    s, w = _sr_conn(ctx)
    final, ctxs = w.meta_context(W.OPT_SET_META_CONTEXT, EXPORT, ["base:"])
    assert final.type == W.REP_ACK and ctxs == [], \
        f"SET with 'base:' must select nothing: {ctxs} {W.rep_name(final.type)}"
    final, ctxs = w.meta_context(W.OPT_LIST_META_CONTEXT, EXPORT, ["base:"])
    assert final.type == W.REP_ACK and "base:allocation" in [n for _, n in ctxs], \
        f"LIST with 'base:' must list base:allocation: {ctxs} {W.rep_name(final.type)}"
    w.close()


@rule(14)
def r14_bad_query_length_invalid(ctx):
    s, w = _sr_conn(ctx)
    n = EXPORT.encode()
    q = b"base:allocation"
    bad = [
        struct.pack(">I", len(n)) + n + struct.pack(">I", 1) + struct.pack(">I", len(q) + 1) + q,
        struct.pack(">I", len(n)) + n + struct.pack(">I", 1) + struct.pack(">I", 0xFFFFFFFF) + q,
        struct.pack(">I", len(n)) + n + struct.pack(">I", 2) + struct.pack(">I", len(q)) + q,
        struct.pack(">I", len(n)) + n + struct.pack(">I", 1) + b"\0\0",
        struct.pack(">I", len(n) + 50) + n + struct.pack(">I", 0),
        struct.pack(">I", len(n)) + n + b"\0\0",
        b"\0\0",
    ]
    for opt in (W.OPT_LIST_META_CONTEXT, W.OPT_SET_META_CONTEXT):
        for data in bad:
            final, ctxs = w.meta_context(opt, EXPORT, data=data)
            assert final.type == W.REP_ERR_INVALID, \
                f"malformed meta request {data.hex()} (option {opt}): {ctxs} " \
                f"{W.rep_name(final.type)}"
    final, ctxs = w.meta_context(W.OPT_LIST_META_CONTEXT, EXPORT, [])
    assert final.type == W.REP_ACK, "LIST after malformed requests failed: out of sync?"
    w.go(EXPORT)
    w.disconnect()


def _set_base_allocation(w):
    """SET_META_CONTEXT base:allocation for EXPORT; asserts the server selected exactly it and
    returns its context id."""
    final, ctxs = w.meta_context(W.OPT_SET_META_CONTEXT, EXPORT, ["base:allocation"])
    assert final.type == W.REP_ACK and [n for _, n in ctxs] == ["base:allocation"], \
        f"SET base:allocation: {ctxs} {W.rep_name(final.type)}"
    return ctxs[0][0]


@rule(14, 30)
def r14_each_context_own_reply(ctx):
    s, w = _sr_conn(ctx)
    cid = _set_base_allocation(w)
    w.go(EXPORT)
    rep = w.request(W.CMD_BLOCK_STATUS, 0, 2 * F.MiB)
    F.expect_ok(rep, "BLOCK_STATUS")
    assert list(rep.extents) == [cid], f"chunks for contexts {list(rep.extents)}, " \
                                       f"selected {cid}"
    w.disconnect()
    h = s.libnbd(meta=["base:allocation"])
    assert h.can_meta_context("base:allocation"), "libnbd: base:allocation not negotiated"
    h.shutdown()


@rule(14, 30)
def r14_set_then_export_name(ctx):
    """The contexts the final SET_META_CONTEXT selected for an export apply when that export
    is "ultimately selected for transmission phase" by NBD_OPT_EXPORT_NAME, as by
    NBD_OPT_GO. A final SET naming another export selects nothing for this one: BLOCK_STATUS
    is refused (rule 30's EINVAL), whichever option entered transmission."""
    s = rw(ctx)
    w = s.wire().start()
    w.structured_reply()
    cid = _set_base_allocation(w)
    w.export_name(EXPORT)
    rep = w.request(W.CMD_BLOCK_STATUS, 0, 2 * F.MiB)
    F.expect_ok(rep, "BLOCK_STATUS after SET_META_CONTEXT base:allocation and EXPORT_NAME")
    assert list(rep.extents) == [cid] and rep.extents[cid], \
        f"BLOCK_STATUS after EXPORT_NAME: extents for contexts {list(rep.extents)}, " \
        f"selected {cid}"
    assert [t for _f, t, _l in rep.chunks if t != W.RT_NONE] == [W.RT_BLOCK_STATUS], \
        f"chunks {rep.chunks}: expected one NBD_REPLY_TYPE_BLOCK_STATUS"
    w.disconnect()
    other = EXPORT + "-other"   # not served: one export per server
    for names in ([other], [EXPORT, other]):
        for enter in ("GO", "EXPORT_NAME"):
            w = s.wire().start()
            w.structured_reply()
            for n in names:
                final, ctxs = w.meta_context(W.OPT_SET_META_CONTEXT, n, ["base:allocation"])
            assert not ctxs, f"SET_META_CONTEXT for unknown export {other!r} selected {ctxs}"
            if enter == "GO":
                w.go(EXPORT)
            else:
                w.export_name(EXPORT)
            rep = w.request(W.CMD_BLOCK_STATUS, 0, 4096)
            F.expect_error(rep, W.EINVAL, f"BLOCK_STATUS after SET_META_CONTEXT for {names} "
                           f"and {enter} {EXPORT!r}")
            w.disconnect()


# ---------------------------------------------------------------- rule 15
@rule(15)
def r15_long_names(ctx):
    s = rw(ctx)
    w = s.wire().start()
    for opt in (W.OPT_INFO, W.OPT_GO):
        final, earlier = w.option(opt, W.info_payload("n" * 4096))
        assert final.type == W.REP_ERR_UNKNOWN, \
            f"4096-byte unknown name: {W.rep_name(final.type)} (a legal name: look it up)"
        final, earlier = w.option(opt, W.info_payload("n" * 4097))
        assert final.type in (W.REP_ERR_INVALID, W.REP_ERR_TOO_BIG) and not earlier, \
            f"4097-byte name: {W.rep_name(final.type)}"
    w.structured_reply()
    for opt in (W.OPT_LIST_META_CONTEXT, W.OPT_SET_META_CONTEXT):
        final, ctxs = w.meta_context(opt, "n" * 4097, ["base:allocation"])
        assert final.is_error and not ctxs, f"meta option for a 4097-byte name: {ctxs}"
        final, ctxs = w.meta_context(opt, EXPORT, ["base:" + "a" * 4092])
        assert not ctxs and (final.type in (W.REP_ACK, W.REP_ERR_INVALID, W.REP_ERR_TOO_BIG)), \
            f"4097-byte query: {ctxs} {W.rep_name(final.type)}"
    in_sync_go(ctx, w, s)
    w.disconnect()
    for n in (4097, 5000):
        w = s.wire().start()
        w.send_option(W.OPT_EXPORT_NAME, b"n" * n)
        w.expect_hard_close(f"EXPORT_NAME of {n} bytes", 15)
    still_serves(s, "long names")


# ---------------------------------------------------------------- rule 16
@rule(16)
def r16_eh_ack(ctx):
    s = rw(ctx)
    for sr_first in (False, True):
        w = s.wire().start()
        if sr_first:
            w.structured_reply()
        w.extended_headers()
        w.go(EXPORT)
        assert w.read(0, 4096) == ctx.file_bytes(s, 0, 4096)
        w.disconnect()


@rule(16)
def r16_eh_replies_extended(ctx):
    """With extended headers, every reply is a 32-byte extended header echoing the request's
    offset, also for commands without payload and for errors (nbdwire rejects anything
    else)."""
    s = rw(ctx)
    w = s.wire().start()
    w.extended_headers()
    w.go(EXPORT)
    off = ctx.scratch(256 * F.KiB)
    data = os.urandom(64 * F.KiB)
    for rep, what in [
        (w.request(W.CMD_WRITE, off, len(data), W.CMD_FLAG_PAYLOAD_LEN, data), "WRITE"),
        (w.request(W.CMD_FLUSH), "FLUSH"),
        (w.request(W.CMD_TRIM, off + 128 * F.KiB, 64 * F.KiB), "TRIM"),
        (w.request(W.CMD_WRITE_ZEROES, off + 192 * F.KiB, 64 * F.KiB), "WRITE_ZEROES")]:
        F.expect_ok(rep, what)
        assert rep.simple is False and rep.ext_offsets, f"{what}: reply not extended"
    assert w.read(off, len(data)) == data
    for rep, what, want in [
        (w.request(W.CMD_READ, F.RW_SIZE, 512), "READ past the end", W.EINVAL),
        (w.request(W.CMD_TRIM, 0, 1 << 40), "TRIM with a 64-bit effect length past the end",
         W.EINVAL),
        (w.request(0x7F, 4096, 0), "unknown command", W.EINVAL),
        (w.request(W.CMD_READ, 512, 512, 0x4000), "READ with an unknown flag", W.EINVAL)]:
        F.expect_error(rep, want, what)
        assert rep.ext_offsets, f"{what}: reply not extended"
    w.disconnect()


@rule(16, 30)
def r16_eh_block_status_ext(ctx):
    s = rw(ctx)
    w = s.wire().start()
    w.extended_headers()
    final, ctxs = w.meta_context(W.OPT_SET_META_CONTEXT, EXPORT, ["base:allocation"])
    assert final.type == W.REP_ACK and len(ctxs) == 1, f"SET after EH: {ctxs}"
    w.go(EXPORT)
    rep = w.request(W.CMD_BLOCK_STATUS, 0, 1 << 33)
    # a 64-bit effect length past the end: EINVAL (rules 22, 30), in an extended reply
    F.expect_error(rep, W.EINVAL, "BLOCK_STATUS of 8 GiB on a 64 MiB export")
    for off, length, flags in [(0, 4 * F.MiB, 0), (F.MiB + 4096, 8192, W.CMD_FLAG_REQ_ONE),
                               (0, F.RW_SIZE, 0)]:
        rep = w.request(W.CMD_BLOCK_STATUS, off, length, flags)
        F.expect_ok(rep, f"BLOCK_STATUS {off}+{length}")
        assert [t for _f, t, _l in rep.chunks if t != W.RT_NONE] == [W.RT_BLOCK_STATUS_EXT], \
            f"chunks {rep.chunks}: expected one NBD_REPLY_TYPE_BLOCK_STATUS_EXT"
        for elen, st in rep.extents[ctxs[0][0]]:
            assert st >> 32 == 0, f"base:allocation status {st:#x} uses the upper 32 bits"
    w.disconnect()


@rule(16)
def r16_eh_export_name_forbidden(ctx):
    s = rw(ctx)
    w = s.wire().start()
    w.extended_headers()
    w.send_option(W.OPT_EXPORT_NAME, EXPORT.encode())
    w.expect_hard_close("NBD_OPT_EXPORT_NAME after extended headers", 16)
    still_serves(s, "EXPORT_NAME after extended headers")


@rule(16)
def r16_block_status_payload_flag(ctx):
    s = rw(ctx)
    for sr, meta in ((False, False), (True, False), (True, True)):
        w = s.wire().start()
        if sr:
            w.structured_reply()
        if meta:
            w.meta_context(W.OPT_SET_META_CONTEXT, EXPORT, ["base:allocation"])
        final, info = w.info_or_go(W.OPT_INFO, EXPORT)
        assert not info.tflags & W.TF_BLOCK_STATUS_PAYLOAD, \
            f"NBD_FLAG_BLOCK_STATUS_PAYLOAD in INFO without extended headers ({info.tflags:#x})"
        info = w.go(EXPORT)
        assert not info.tflags & W.TF_BLOCK_STATUS_PAYLOAD, \
            f"NBD_FLAG_BLOCK_STATUS_PAYLOAD without extended headers ({info.tflags:#x})"
        w.disconnect()
    w = s.wire().start()
    w.structured_reply()
    info = w.export_name(EXPORT)
    assert not info.tflags & W.TF_BLOCK_STATUS_PAYLOAD
    w.disconnect()


@rule(16)
def r16_sr_after_eh(ctx):
    s = rw(ctx)
    w = s.wire().start()
    w.extended_headers()
    r = w.simple_option(W.OPT_STRUCTURED_REPLY)
    assert r.type in (W.REP_ACK, W.REP_ERR_EXT_HEADER_REQD), \
        f"STRUCTURED_REPLY after EXTENDED_HEADERS: {W.rep_name(r.type)}"
    w.go(EXPORT)                  # extended headers stay in force
    assert w.read(0, 512) == ctx.file_bytes(s, 0, 512)
    w.disconnect()


@rule(16, 24)
def r16_eh_write_payload_rules(ctx):
    """Extended headers: a WRITE carries PAYLOAD_LEN; a payload on a command that takes none
    is consumed (and refused), so the stream stays in sync."""
    s = rw(ctx)
    w = s.wire().start()
    w.extended_headers()
    w.go(EXPORT)
    off = ctx.scratch(64 * F.KiB)
    data = os.urandom(4096)
    w.write(off, data)
    marker = os.urandom(4096)
    w.write(off + 8192, marker)
    # a FLUSH with PAYLOAD_LEN and a payload that looks like a WRITE_ZEROES over the marker
    fake = struct.pack(">IHHQQQ", W.EXT_REQUEST_MAGIC, 0, W.CMD_WRITE_ZEROES, 0x5151,
                       off + 8192, 4096)
    rep = w.request(W.CMD_TRIM, off, len(fake), W.CMD_FLAG_PAYLOAD_LEN, fake)
    assert rep.error, "TRIM with PAYLOAD_LEN and a payload succeeded"
    assert w.read(off + 8192, 4096) == marker, "a payload was parsed as a request"
    assert w.read(off, 4096) == data
    w.disconnect()


@rule(33)
def r33_disc_tls_bye(ctx):
    """NBD_CMD_DISC over TLS: the server replies to what is in flight, then shuts TLS down
    (close_notify) before closing the connection."""
    s, cctx = tls_server(ctx)
    w = s.wire().start()
    starttls(w, cctx)
    w.go(EXPORT)
    cks = [w.send_request(W.CMD_READ, i * 4096, 4096) for i in range(8)]
    w.send_request(W.CMD_DISC, cookie=0xD15C)
    for ck in cks:
        F.expect_ok(w.wait(ck), "READ before DISC")
    try:
        closed, extra = w.wait_closed(10)
    except ssl.SSLEOFError:
        raise AssertionError("the server closed the TCP connection without a TLS close_notify "
                             "after NBD_CMD_DISC")
    assert not extra and closed, f"after DISC over TLS: closed {closed}, {len(extra)} bytes"
    s.stop()
