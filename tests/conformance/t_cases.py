# SPDX-License-Identifier: MIT
"""t_cases.py: field cases C02, C03, C10 and C13 of docs/cases.md.

(C01 and C15 are covered by the durability work, with ASan/valgrind and fd counts.)"""
import json
import os
import resource
import signal
import socket
import struct
import threading
import time

import framework as F
import nbdwire as W
from framework import case, MiB


def _proc_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _served(s, name=None):
    w = s.connect(name=name)
    w.read(0, 512)
    w.disconnect()


# ================================================================ C02 export-name lengths
C02_LENGTHS = (23, 24, 256, 257, 4096)


def _name(n, tail=b""):
    base = (b"export-" + b"0123456789abcdef" * (n // 16 + 1))[:n - len(tail)] + tail
    assert len(base) == n
    return base


@case("C02")
def c02_lookup_by_length(ctx):
    """Names of 23..4096 bytes are looked up: the exact name is served (GO and EXPORT_NAME),
    a name differing in its last byte gets NBD_REP_ERR_UNKNOWN with a short message (and a
    hard close for EXPORT_NAME)."""
    img = ctx.make_image("c02.img", MiB, [(0, MiB, "data")])
    for n in C02_LENGTHS:
        name = _name(n)
        s = F.Server(ctx, img, export=name.decode())
        w = s.wire().start()
        info = w.go(name)
        assert info.size == MiB
        w.read(0, 512)
        w.disconnect()
        w = s.wire().start(no_zeroes=False)
        w.export_name(name)
        w.read(MiB - 512, 512)
        w.disconnect()
        other = name[:-1] + (b"X" if name[-1:] != b"X" else b"Y")
        w = s.wire().start()
        for opt in (W.OPT_INFO, W.OPT_GO):
            final, earlier = w.option(opt, W.info_payload(other))
            assert final.type == W.REP_ERR_UNKNOWN and not earlier, \
                f"{n}-byte unknown name: {W.rep_name(final.type)}"
            assert len(final.data) <= 256, \
                f"ERR_UNKNOWN message of {len(final.data)} bytes (should be short)"
        w.go(name)
        w.disconnect()
        w = s.wire().start()
        w.send_option(W.OPT_EXPORT_NAME, other)
        w.expect_hard_close(f"EXPORT_NAME with an unknown {n}-byte name", "C02")
        h = s.libnbd()
        assert h.get_size() == MiB, f"libnbd via {s.uri()[:60]}..."
        h.shutdown()
        s.stop()


@case("C02")
def c02_too_long_and_inconsistent(ctx):
    s = ctx.shared("rw")
    rss0 = _proc_rss_kib(s.pid)
    w = s.wire().start()
    for opt in (W.OPT_INFO, W.OPT_GO):
        for n in (4097, 65536):
            final, earlier = w.option(opt, W.info_payload(b"q" * n))
            assert final.type in (W.REP_ERR_INVALID, W.REP_ERR_TOO_BIG) and not earlier, \
                f"{n}-byte name: {W.rep_name(final.type)}"
        for declared, real in ((100, 10), (4096, 4095), (0xFFFFFFFF, 4), (7, 6)):
            data = struct.pack(">I", declared) + b"d" * real + b"\0\0"
            final, earlier = w.option(opt, data)
            assert final.type == W.REP_ERR_INVALID, \
                f"declared name length {declared} with {real} bytes: {W.rep_name(final.type)}"
        for bad in (b"di\0sk", b"\0", b"disk\0"):
            final, earlier = w.option(opt, W.info_payload(bad))
            assert final.type == W.REP_ERR_INVALID, \
                f"name with a NUL byte {bad!r}: {W.rep_name(final.type)}"
    w.go("disk")
    w.read(0, 512)
    w.disconnect()
    for name in (b"q" * 4097, b"q" * 65536, b"di\0sk"):
        w = s.wire().start()
        try:
            w.send_option(W.OPT_EXPORT_NAME, name)
        except OSError:
            pass
        w.expect_hard_close(f"EXPORT_NAME of {len(name)} bytes", "C02")
    assert s.alive()
    _served(s)
    rss1 = _proc_rss_kib(s.pid)
    assert rss1 - rss0 < 64 * 1024, f"RSS grew by {(rss1 - rss0) // 1024} MiB"


@case("C02")
def c02_utf8_name(ctx):
    name = "dïsk-ü€-日本-😀"
    img = ctx.make_image("c02u.img", MiB, [(0, MiB, "data")])
    s = F.Server(ctx, img, export=name)
    w = s.wire().start()
    final, info = w.info_or_go(W.OPT_INFO, name, (W.INFO_NAME,))
    assert final.type == W.REP_ACK, f"INFO for a UTF-8 name: {W.rep_name(final.type)}"
    if info.name is not None:
        assert info.name == name, f"NBD_INFO_NAME {info.name!r}"
    names = []
    final, earlier = w.option(W.OPT_LIST)
    for r in earlier:
        ln = struct.unpack(">I", r.data[:4])[0]
        names.append(r.data[4:4 + ln].decode())
    assert name in names, f"NBD_OPT_LIST: {names}"
    w.go(name)
    w.read(0, 4096)
    w.disconnect()
    w = s.wire().start()
    w.export_name(name)
    w.read(0, 4096)
    w.disconnect()
    # the URI the server prints (percent-encoded) works with libnbd and nbdinfo
    log = s.log_text()
    uris = [tok for ln in log.splitlines() for tok in ln.split() if tok.startswith("nbd")]
    assert uris, f"no URI in the start-up log: {log[:300]}"
    for uri in uris:
        out = F.run(["nbdinfo", "--size", uri.rstrip(".,")])
        assert out.strip() == str(MiB), f"nbdinfo {uri}: {out}"
    h = s.libnbd()
    assert h.get_size() == MiB
    h.shutdown()
    s.stop()


# ================================================================ C03 huge option payloads
def _trickle_then_check(s, option, tcp, wait=5.0):
    """Declares option data of 0xFFFFFFFF bytes and trickles bytes: the server must refuse
    (ERR_TOO_BIG, or a hard close) without waiting for 4 GiB."""
    w = s.wire(tcp).start()
    w.send(struct.pack(">QII", W.IHAVEOPT, option, 0xFFFFFFFF))
    t0 = time.monotonic()
    outcome = None
    while time.monotonic() - t0 < wait:
        try:
            w.send(b"\xAA" * 64)
        except OSError:
            outcome = "closed"
            break
        try:
            data = w.pending_bytes(0.1)
        except W.Closed:
            outcome = "closed"
            break
        if data:
            magic, opt, rtype, ln = struct.unpack(">QIII", data[:20])
            assert magic == W.REPLY_MAGIC and opt == option, f"reply {data[:20].hex()}"
            assert rtype == W.REP_ERR_TOO_BIG, f"reply {W.rep_name(rtype)} to a 4 GiB option"
            outcome = "TOO_BIG"
            break
    w.close()
    assert outcome, f"option {option:#x} declaring 4 GiB: no refusal within {wait} s " \
                    "(the server keeps reading)"
    return outcome, time.monotonic() - t0


@case("C03")
def c03_huge_declared_length(ctx):
    s = ctx.shared("rw")
    rss0 = _proc_rss_kib(s.pid)
    outcomes = []
    for tcp in (False, True):
        for opt in (0xDEAD, W.OPT_GO, W.OPT_INFO, W.OPT_LIST, W.OPT_EXPORT_NAME,
                    W.OPT_SET_META_CONTEXT, W.OPT_STRUCTURED_REPLY):
            outcomes.append(_trickle_then_check(s, opt, tcp))
    rss1 = _proc_rss_kib(s.pid)
    assert rss1 - rss0 < 64 * 1024, f"RSS grew by {(rss1 - rss0) // 1024} MiB"
    _served(s)
    return "; ".join(f"{o} in {t:.1f}s" for o, t in outcomes[:3]) + " ..."


@case("C03")
def c03_large_but_drainable(ctx):
    """Options of 64 KiB and 1 MiB of data: refused (TOO_BIG/UNSUP/INVALID) or a hard close;
    when refused, the next option still parses."""
    s = ctx.shared("rw")
    for opt, n in ((0xDEAD, 65536), (W.OPT_GO, 65536), (0xBEEF, MiB), (W.OPT_LIST, 200000)):
        w = s.wire().start()
        try:
            w.send_option(opt, os.urandom(n))
            final, earlier = w.replies_until_final(opt)
        except (W.Closed, OSError):
            w.close()
            continue
        assert final.is_error and not earlier, f"option {opt:#x} with {n} bytes: {final}"
        w.go("disk")
        w.read(0, 512)
        w.disconnect()
    _served(s)


@case("C03")
def c03_malformed_options_stay_in_sync(ctx):
    s = ctx.shared("rw")
    w = s.wire().start()
    final, _ = w.option(W.OPT_LIST, b"x")
    assert final.type == W.REP_ERR_INVALID, f"LIST with 1 byte: {W.rep_name(final.type)}"
    final, _ = w.option(W.OPT_LIST, os.urandom(4096))
    assert final.type == W.REP_ERR_INVALID, f"LIST with 4096 bytes: {W.rep_name(final.type)}"
    shorts = [b"", b"\0", b"\0\0\0", b"\0\0\0\0", b"\0\0\0\0\0", b"\0\0\0\x0adisk",
              struct.pack(">I", 4) + b"disk" + b"\0",
              struct.pack(">I", 4) + b"disk" + struct.pack(">H", 3) + b"\0\0",
              struct.pack(">I", 4) + b"disk" + struct.pack(">H", 1) + b"\0\0\0",
              struct.pack(">I", 4) + b"disk" + struct.pack(">H", 0xFFFF)]
    for opt in (W.OPT_GO, W.OPT_INFO):
        for data in shorts:
            final, earlier = w.option(opt, data)
            assert final.type == W.REP_ERR_INVALID and not earlier, \
                f"{'GO' if opt == W.OPT_GO else 'INFO'} with data {data.hex()}: " \
                f"{W.rep_name(final.type)}"
    w.structured_reply()
    for opt in (W.OPT_LIST_META_CONTEXT, W.OPT_SET_META_CONTEXT):
        for data in (b"", b"\0\0\0", struct.pack(">I", 4) + b"disk",
                     struct.pack(">I", 4) + b"disk" + struct.pack(">I", 0xFFFFFFFF)):
            final, _ = w.meta_context(opt, "", data=data)
            assert final.type == W.REP_ERR_INVALID, \
                f"meta option {opt} with {data.hex()}: {W.rep_name(final.type)}"
    w.go("disk")
    w.read(0, 4096)
    w.disconnect()
    # a bad option magic desynchronises the stream: the server closes
    w = s.wire().start()
    w.send(struct.pack(">QII", 0x1122334455667788, W.OPT_LIST, 0))
    w.expect_hard_close("option with a bad magic", "C03")
    _served(s)


# ================================================================ C10 zeroes as zeroes
@case("C10")
def c10_zeroes_reported(ctx):
    img = ctx.make_image(f"c10-{ctx.counter()}.img", 16 * MiB)
    s = F.Server(ctx, img)
    w = s.wire().start()
    w.structured_reply()
    final, ctxs = w.meta_context(W.OPT_SET_META_CONTEXT, "disk", ["base:allocation"])
    assert final.type == W.REP_ACK and len(ctxs) == 1, f"SET base:allocation: {ctxs}"
    w.contexts = dict(ctxs)
    w.go("disk")
    w.write(MiB, os.urandom(3 * MiB))
    w.request(W.CMD_FLUSH)
    rep = w.request(W.CMD_WRITE_ZEROES, 2 * MiB, MiB)            # NO_HOLE clear
    F.expect_ok(rep, "WRITE_ZEROES over written data")
    assert w.read(2 * MiB, MiB) == bytes(MiB)
    rep = w.request(W.CMD_BLOCK_STATUS, MiB, 3 * MiB)
    F.expect_ok(rep, "BLOCK_STATUS")
    ext = list(rep.extents.values())[0]
    pos, zero_cover, hole_cover = MiB, 0, 0
    for elen, st in ext:
        a, b = max(pos, 2 * MiB), min(pos + elen, 3 * MiB)
        if b > a:
            if st & W.STATE_ZERO:
                zero_cover += b - a
            if st & W.STATE_HOLE:
                hole_cover += b - a
        a, b = max(pos, MiB), min(pos + elen, 2 * MiB)
        if b > a:
            assert not st & W.STATE_ZERO, f"written data at {a} reported ZERO"
        pos += elen
    assert zero_cover == MiB, f"only {zero_cover} of {MiB} zeroed bytes reported NBD_STATE_ZERO " \
                              f"(extents {ext})"
    # where the file really has a hole, HOLE must be reported too
    fd = os.open(img, os.O_RDONLY)
    try:
        try:
            punched = os.lseek(fd, 2 * MiB, os.SEEK_HOLE) == 2 * MiB and \
                os.lseek(fd, 2 * MiB, os.SEEK_DATA) >= 3 * MiB
        except OSError:
            punched = True       # ENXIO: no data after 2 MiB
    finally:
        os.close(fd)
    if punched:
        assert hole_cover == MiB, f"the range is a hole in the file but only {hole_cover} " \
                                  "bytes are reported NBD_STATE_HOLE"
    w.disconnect()
    # nbdinfo --map and qemu-img map see the zeroes
    out = F.run(["nbdinfo", "--map", s.uri()])
    zeroed = 0
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0].isdigit():
            off, ln, t = int(f[0]), int(f[1]), int(f[2])
            a, b = max(off, 2 * MiB), min(off + ln, 3 * MiB)
            if b > a and t & W.STATE_ZERO:
                zeroed += b - a
    assert zeroed == MiB, f"nbdinfo --map: {zeroed} zero bytes in the range: {out}"
    out = F.run(["qemu-img", "map", "--output=json", "-f", "raw", s.uri()])
    zeroed = 0
    for e in json.loads(out):
        a, b = max(e["start"], 2 * MiB), min(e["start"] + e["length"], 3 * MiB)
        if b > a and e.get("zero"):
            zeroed += b - a
    assert zeroed == MiB, f"qemu-img map: {zeroed} zero bytes in the range: {out[:500]}"
    s.stop()
    return "HOLE reported too" if punched else "file not punched (ZERO only)"


@case("C10")
def c10_no_hole_zeroes_read_zero(ctx):
    """WRITE_ZEROES with NO_HOLE: reads back zero, and the status never claims data that is
    not zero (ZERO is optional there)."""
    s = ctx.shared("rw")
    w = s.wire().start()
    w.structured_reply()
    final, ctxs = w.meta_context(W.OPT_SET_META_CONTEXT, "disk", ["base:allocation"])
    w.contexts = dict(ctxs)
    w.go("disk")
    off = ctx.scratch(2 * MiB, align=MiB)
    w.write(off, os.urandom(2 * MiB))
    F.expect_ok(w.request(W.CMD_WRITE_ZEROES, off, MiB, W.CMD_FLAG_NO_HOLE), "WZ NO_HOLE")
    assert w.read(off, MiB) == bytes(MiB)
    rep = w.request(W.CMD_BLOCK_STATUS, off, 2 * MiB)
    F.expect_ok(rep, "BLOCK_STATUS")
    pos = off
    for elen, st in list(rep.extents.values())[0]:
        a, b = max(pos, off + MiB), min(pos + elen, off + 2 * MiB)
        assert not (b > a and st & W.STATE_ZERO), "written data reported ZERO"
        pos += elen
    w.disconnect()


# ================================================================ C13 never negotiating
def _raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))
    return soft, hard


def _raw_connect(s, tcp, timeout):
    """A plain socket connected to the server's TCP or Unix listener; raises OSError."""
    if tcp:
        return socket.create_connection(("127.0.0.1", s.port), timeout=timeout)
    c = socket.socket(socket.AF_UNIX)
    try:
        c.settimeout(timeout)
        c.connect(s.sock)
    except OSError:
        c.close()
        raise
    return c


def _flood(s, n, tcp=True, flags_every=2):
    socks = []
    for i in range(n):
        try:
            c = _raw_connect(s, tcp, 5)
        except OSError as e:
            raise AssertionError(f"connection {i} of {n} failed: {e}")
        if flags_every and i % flags_every == 1:
            try:
                c.sendall(struct.pack(">I", W.FLAG_FIXED_NEWSTYLE | W.FLAG_NO_ZEROES))
            except OSError:
                pass
        socks.append(c)
    return socks


def _normal_client_time(s, tcp=True):
    import nbd
    t0 = time.monotonic()
    h = nbd.NBD()
    try:
        h.connect_uri(s.uri(tcp))
        h.pread(4096, 0)
        h.shutdown()
    except nbd.Error as e:
        raise AssertionError(f"a normal client was refused after {time.monotonic() - t0:.2f} s:"
                             f" {e.string} | server log: {s.log_tail(3)}")
    return time.monotonic() - t0


def _all_closed(socks, wait):
    deadline = time.monotonic() + wait
    open_ = list(socks)
    while open_ and time.monotonic() < deadline:
        still = []
        for c in open_:
            c.setblocking(False)
            try:
                while True:
                    d = c.recv(65536)
                    if not d:
                        break
            except BlockingIOError:
                still.append(c)
                continue
            except OSError:
                pass
        open_ = still
        if open_:
            time.sleep(0.1)
    return len(open_)


@case("C13")
def c13_idle_flood(ctx):
    """1000 TCP connections that send nothing (half stop after the client flags), with the
    default --handshake-timeout and --max-handshakes: a normal client is served within 3 s,
    the server's fds stay bounded by the cap, and SIGTERM closes the idle sockets and exits 0
    promptly."""
    old = _raise_nofile(4096)
    img = ctx.make_image(f"c13-{ctx.counter()}.img", MiB, [(0, MiB, "data")])
    # the server gets the usual soft limit (1024), as a service would
    s = F.Server(ctx, img, preexec=lambda: resource.setrlimit(
        resource.RLIMIT_NOFILE, (min(1024, old[1]), old[1])))
    socks = []
    try:
        socks = _flood(s, 1000)
        time.sleep(0.5)
        fds = s.fd_count()
        dt = _normal_client_time(s)
        assert s.alive(), f"the server died: {s.log_tail()}"
        assert dt < 3.0, f"a normal client took {dt:.1f} s with 1000 idle connections"
        assert fds < 256 + 128, f"{fds} fds open with 1000 idle connections (cap 256)"
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        s.wait_exit(10)
        left = _all_closed(socks, 5)
        assert left == 0, f"{left} idle sockets still open after the server exited"
        return f"normal client {dt:.2f} s; {fds} fds; exit {time.monotonic() - t0:.2f} s"
    finally:
        for c in socks:
            c.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, old)


@case("C13")
def c13_cap_and_deadline(ctx):
    """--max-handshakes 8 --handshake-timeout 2: 50 idle connections; a normal client is
    served promptly; idle connections are closed by the deadline; fds stay bounded."""
    img = ctx.make_image(f"c13b-{ctx.counter()}.img", MiB, [(0, MiB, "data")])
    s = F.Server(ctx, img, ["--max-handshakes", "8", "--handshake-timeout", "2"])
    socks = _flood(s, 50)
    try:
        time.sleep(0.3)
        fds = s.fd_count()
        dt = _normal_client_time(s)
        assert dt < 3.0, f"a normal client took {dt:.1f} s with 50 idle connections (cap 8)"
        assert fds < 8 + 40, f"{fds} fds with 50 idle connections (cap 8)"
        left = _all_closed(socks, 6)
        assert left == 0, f"{left} of 50 idle connections still open 6 s after connecting " \
                          "(deadline 2 s)"
    finally:
        for c in socks:
            c.close()
    s.stop()
    return f"normal client {dt:.2f} s, {fds} fds"


@case("C13")
def c13_deadline_is_total(ctx):
    """The handshake deadline bounds the whole negotiation: a client that trickles one byte
    of an option every 0.5 s is closed about --handshake-timeout seconds after connecting."""
    img = ctx.make_image(f"c13c-{ctx.counter()}.img", MiB, [(0, MiB, "data")])
    s = F.Server(ctx, img, ["--handshake-timeout", "2"])
    for tcp in (True, False):
        w = s.wire(tcp).start()
        msg = struct.pack(">QII", W.IHAVEOPT, W.OPT_GO, 6 + 4) + W.info_payload("disk")
        t0 = time.monotonic()
        closed_at = None
        for b in msg * 4:
            try:
                w.send(bytes([b]))
                data = w.pending_bytes(0.5)
            except (OSError, W.Closed):
                closed_at = time.monotonic() - t0
                break
            if data:
                break
            if time.monotonic() - t0 > 8:
                break
        w.close()
        assert closed_at is not None and closed_at < 5, \
            f"trickling client ({'TCP' if tcp else 'Unix'}) still connected after " \
            f"{time.monotonic() - t0:.1f} s (--handshake-timeout 2)"
    s.stop()


def _refused_at_once(s, tcp):
    """Connects and returns the seconds until the server closed the socket without a
    greeting; fails if a greeting came or nothing happened within 5 s."""
    t0 = time.monotonic()
    c = _raw_connect(s, tcp, 5)
    try:
        data = c.recv(16)
    except ConnectionResetError:
        data = b""
    except socket.timeout:
        raise AssertionError("at --max-connections, a new connection was neither greeted nor "
                             "closed within 5 s")
    finally:
        c.close()
    assert data == b"", \
        f"at --max-connections, a new connection got {data!r} (no greeting expected)"
    return time.monotonic() - t0


def _socket_fds(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


@case("C13")
def c13_max_connections(ctx):
    """--max-connections 2: two clients in transmission; further connections over TCP and
    the Unix socket are closed at once, before the greeting, with one log line for the
    spell; when a client leaves, the next is served. Connections that never negotiate do
    not lock a real client out: the oldest of them is closed to make room."""
    img = ctx.make_image(f"c13d-{ctx.counter()}.img", MiB, [(0, MiB, "data")])
    want = open(img, "rb").read(4096)
    s = F.Server(ctx, img, ["--max-connections", "2", "--handshake-timeout", "30"])
    a = s.libnbd(tcp=True)
    b = s.libnbd(tcp=False)
    assert a.pread(4096, 0) == want and b.pread(4096, 0) == want
    waits = [_refused_at_once(s, tcp) for tcp in (True, False, True, True, False)]
    assert max(waits) < 2.0, f"refusals took {waits} s"
    assert a.pread(4096, 0) == want and b.pread(4096, 0) == want, \
        "the two admitted clients were disturbed by the refusals"
    spell = s.log_text().count("at the connection limit (--max-connections); new connections")
    assert spell == 1, f"{spell} log lines for one spell of refusals: {s.log_tail(8)}"
    a.shutdown()
    deadline = time.monotonic() + 5
    while True:  # the server notices a's end at once; allow for the thread to finish
        try:
            c = s.libnbd(tcp=True)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise AssertionError("no client served 5 s after one of two left: "
                                     f"{s.log_tail(5)}")
            time.sleep(0.1)
    assert c.pread(4096, 0) == want
    c.shutdown()
    # A client that sends NBD_CMD_DISC, closes without waiting and connects again at once
    # is let in (the connection it left counts as leaving): 40 times in a row, both
    # transports, with b still holding the other place.
    for i in range(40):
        try:
            w = s.wire(i % 2 == 0).start()
            w.go("disk")
        except (OSError, W.Closed, AssertionError) as e:
            raise AssertionError(f"reconnection {i} right after NBD_CMD_DISC was refused: {e!r}"
                                 f" | {s.log_tail(3)}")
        w.read(0, 4096)
        w.disconnect()
    b.shutdown()
    # Two connections that never negotiate fill the limit; a real client is still served.
    socks = _flood(s, 2, flags_every=0)
    try:
        time.sleep(0.3)
        dt = _normal_client_time(s)
        assert dt < 3.0, f"a normal client took {dt:.1f} s behind 2 idle connections"
        assert "(--max-connections); closing the oldest still negotiating" in s.log_text(), \
            f"no eviction line: {s.log_tail(5)}"
        assert _all_closed(socks[:1], 3) == 0, "the oldest idle connection was not closed"
    finally:
        for c in socks:
            c.close()
    assert s.alive(), s.log_tail()
    s.stop()
    # the spell of closures is still on (under 5 s): its count comes after the signal's line
    log = s.log_text()
    at_signal, at_count = log.find("signal 15"), log.find("to make room before the server stopped")
    assert 0 <= at_signal < at_count, f"shutdown lines out of order: {log[-600:]}"
    return f"refused in at most {max(waits) * 1000:.0f} ms; normal client {dt:.2f} s"


def _leave_unread(w, n=24):
    """Sends n READs of 2 MiB and NBD_CMD_DISC and reads nothing: the connection is past
    its last request, and it cannot end while its replies wait to be read."""
    for _ in range(n):
        w.send_request(W.CMD_READ, 0, 2 * MiB, register=False)
    w.send_request(W.CMD_DISC)


def _drain_after(w, delay):
    def drain():
        time.sleep(delay)
        try:
            while w.s.recv(1 << 20):
                pass
        except OSError:
            pass
        w.close()
    t = threading.Thread(target=drain)
    t.start()
    return t


@case("C13")
def c13_max_connections_leaving(ctx):
    """Connections past their last request at --max-connections, both engines:
    (1) at 1, A sends READs and NBD_CMD_DISC and reads its replies only 0.5 s later; B,
    connecting right after, is let in once A ends (the event-loop engine refused it after
    0.2 s: its DISC did not mark A as leaving); (2) at 2, A does the same and never reads,
    B connects and never negotiates, and a real client C is still served: B is closed to
    make room (C waited 1 s and was refused, again and again, while A held its place)."""
    img = ctx.make_image(f"c13f-{ctx.counter()}.img", 4 * MiB, [(0, 4 * MiB, "data")])
    out = []
    for engine in ("uring", "threads"):
        s = F.Server(ctx, img, ["--max-connections", "1", "--engine", engine])
        a = s.wire(True).start()
        a.go("disk")
        _leave_unread(a, 12)
        # The server must have parsed A's NBD_CMD_DISC before B connects, or it rightly
        # treats A as an active connection; on two loaded cores under ASan that has taken
        # more than 0.3 s.
        time.sleep(1.0)
        t0 = time.monotonic()
        drainer = _drain_after(a, 0.5)
        try:
            b = s.wire(False).start()
            b.go("disk")
        except (OSError, W.Closed, AssertionError) as e:
            raise AssertionError(f"{engine}: B refused after {time.monotonic() - t0:.2f} s "
                                 f"while A, past NBD_CMD_DISC, drained: {e!r} | {s.log_tail(3)}")
        waited = time.monotonic() - t0
        b.read(0, 4096)
        b.disconnect()
        drainer.join()
        s.stop()

        s = F.Server(ctx, img, ["--max-connections", "2", "--engine", engine])
        a = s.wire(True).start()
        a.go("disk")
        _leave_unread(a)
        time.sleep(0.05)
        idle = _raw_connect(s, True, 5)
        time.sleep(0.05)
        try:
            dt = _normal_client_time(s)
        finally:
            idle.close()
            a.close()
        assert dt < 3.0, f"{engine}: a real client took {dt:.1f} s"
        assert "closing the oldest still negotiating" in s.log_text(), s.log_tail(5)
        s.stop()
        out.append(f"{engine}: B in after {waited:.2f} s, C in {dt:.2f} s")
    return "; ".join(out)


@case("C13")
def c13_max_connections_flood(ctx):
    """--max-connections 2 under a flood of connections that never negotiate (4 threads,
    TCP and Unix, each keeping 50 open): the server's sockets never exceed the limit plus
    its listeners and the one being admitted (it held 100-140 when connections closed to
    make room still counted as gone); closing to make room is logged once for the spell,
    with the count once it is over (a line per connection: 17,000 lines a second); and a
    client whose NBD_OPT_GO succeeded is never closed to make room."""
    import nbd
    img = ctx.make_image(f"c13e-{ctx.counter()}.img", MiB, [(0, MiB, "data")])
    want = open(img, "rb").read(4096)
    # --verbose: the "peer closed ... without NBD_CMD_DISC" line checked below is debug
    s = F.Server(ctx, img, ["--max-connections", "2", "--handshake-timeout", "30", "--verbose"])
    base = _socket_fds(s.pid)  # the listeners
    stop = threading.Event()
    peak = [0]

    def flooder(tcp):
        held = []
        while not stop.is_set():
            try:
                c = _raw_connect(s, tcp, 2)
            except OSError:
                time.sleep(0.01)
                continue
            held.append(c)
            if len(held) > 50:
                held.pop(0).close()
            # a flood, not a busy loop: 4 flooders at up to 500 connects a second each,
            # which a server built with ASan also accepts as fast as they come (with a
            # listen backlog of thousands, an unpaced flood that outruns the server queues
            # ahead of every real client)
            time.sleep(0.002)
        for c in held:
            c.close()

    def sampler():
        while not stop.is_set():
            peak[0] = max(peak[0], _socket_fds(s.pid) - base)
            time.sleep(0.005)

    threads = [threading.Thread(target=flooder, args=(i % 2 == 0,)) for i in range(4)]
    threads.append(threading.Thread(target=sampler))
    for t in threads:
        t.start()
    served = 0
    try:
        # 3 s of flood, longer (up to 15 s) until a client gets through: under ASan a
        # handshake takes long enough that most attempts are the oldest still negotiating
        # when two flood connections arrive after them, and are closed to make room.
        t_start = time.monotonic()
        while time.monotonic() < t_start + 3 or (served == 0 and
                                                  time.monotonic() < t_start + 15):
            h = nbd.NBD()
            try:
                h.connect_uri(s.uri(True))
            except nbd.Error:
                continue  # closed to make room while negotiating: allowed
            try:
                assert h.pread(4096, 0) == want
                h.shutdown()
                served += 1
            except nbd.Error as e:
                raise AssertionError(f"a client was closed after NBD_OPT_GO succeeded "
                                     f"({served} served before): {e.string}")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert served > 0, f"no client was served during the flood: {s.log_tail(5)}"
    assert peak[0] <= 2 + 1, f"{peak[0]} client sockets open at once with --max-connections 2"
    log = s.log_text()
    lines = log.count("to make room (further such closures are counted")
    assert lines == 1, f"{lines} lines for one spell of closures to make room"
    assert "peer closed the connection without NBD_CMD_DISC" not in log, \
        "a connection closed to make room was logged as the client's doing"
    ended = None
    deadline = time.monotonic() + 10
    while ended is None and time.monotonic() < deadline:
        ended = next((ln for ln in s.log_text().splitlines()
                      if "still negotiating were closed to make room" in ln), None)
        time.sleep(0.2)
    assert ended is not None, f"no line with the count after the spell: {s.log_tail(5)}"
    assert s.alive(), s.log_tail()
    s.stop()
    return f"{served} clients served; peak {peak[0]} client sockets; {ended.split(': ', 1)[-1]}"


@case("C13")
def c13_documented(ctx):
    out = F.run([ctx.diskgate, "serve", "--help"])
    for opt in ("--handshake-timeout", "--max-handshakes", "--max-connections"):
        assert opt in out, f"`diskgate serve --help` does not document {opt}"
    readme = os.path.join(ctx.srcdir, "README.md")
    if os.path.exists(readme):
        text = open(readme).read()
        for opt in ("--handshake-timeout", "--max-handshakes", "--max-connections"):
            assert opt in text, f"README.md does not document {opt}"
