# SPDX-License-Identifier: MIT
"""nbdwire.py: a raw-socket NBD client for the conformance suite (tests/conformance).

It sends what libnbd will not: any client flags, options with any payload (malformed,
truncated, oversized), requests with any type/flags/offset/length, compact or extended
(32-byte) request headers, and it can upgrade to TLS after NBD_OPT_STARTTLS (python's ssl).

Every message the server sends is checked against doc/proto.md as it is parsed, whatever
the test is about. A violation raises Violation (an AssertionError) whose message starts
with the rule of docs/spec-rules.md it breaks, e.g. "rule 20: ...". The checks:
  - option replies: magic, the client's option number, error strings (rules 4, 15);
  - replies: the reply style negotiated (simple only without structured replies; no simple
    reply to READ once structured replies are on; only 32-byte extended replies once
    extended headers are on; rules 16, 19), known cookies (rule 18), error values (rule 35);
  - structured/extended chunks: flags, lengths per type, READ chunks inside the request,
    non-overlapping, >= 1 byte, covering the request when no error, DONE last, NONE only
    with DONE, at most one content chunk with DF (rule 20), block-status chunk layout
    (rules 16, 30), error chunk layout and offsets (rule 31), extended-header offset echo
    (rule 16).
Sources: /tmp/proto.md (doc/proto.md of the NBD project) and, for extended headers, the
extension-ext-header branch of the same file.
"""
import errno
import os
import select
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
# the constants (doc/proto.md "Values"), the encoders (enc_name, info_payload, meta_payload,
# request_header) and Conn; re-exported: the tests use them as W.NAME
from nbdproto import *  # noqa: E402,F401,F403
from nbdproto import Conn  # noqa: E402

REP_NAMES = {REP_ACK: "ACK", REP_SERVER: "SERVER", REP_INFO: "INFO",
             REP_META_CONTEXT: "META_CONTEXT", REP_ERR_UNSUP: "ERR_UNSUP",
             REP_ERR_POLICY: "ERR_POLICY", REP_ERR_INVALID: "ERR_INVALID",
             REP_ERR_PLATFORM: "ERR_PLATFORM", REP_ERR_TLS_REQD: "ERR_TLS_REQD",
             REP_ERR_UNKNOWN: "ERR_UNKNOWN", REP_ERR_SHUTDOWN: "ERR_SHUTDOWN",
             REP_ERR_BLOCK_SIZE_REQD: "ERR_BLOCK_SIZE_REQD", REP_ERR_TOO_BIG: "ERR_TOO_BIG",
             REP_ERR_EXT_HEADER_REQD: "ERR_EXT_HEADER_REQD"}


CMD_NAMES = {0: "READ", 1: "WRITE", 2: "DISC", 3: "FLUSH", 4: "TRIM", 5: "CACHE",
             6: "WRITE_ZEROES", 7: "BLOCK_STATUS", 8: "RESIZE"}

REPLY_FLAG_DONE = 1
RT_NONE, RT_OFFSET_DATA, RT_OFFSET_HOLE = 0, 1, 2
RT_BLOCK_STATUS, RT_BLOCK_STATUS_EXT = 5, 6
RT_ERROR, RT_ERROR_OFFSET = (1 << 15) | 1, (1 << 15) | 2

STATE_HOLE, STATE_ZERO = 1, 2

ALLOWED_ERRORS = {EPERM, EIO, ENOMEM, EINVAL, ENOSPC, EOVERFLOW, ENOTSUP, ESHUTDOWN}
ERR_NAMES = {0: "0", EPERM: "EPERM", EIO: "EIO", ENOMEM: "ENOMEM", EINVAL: "EINVAL",
             ENOSPC: "ENOSPC", EOVERFLOW: "EOVERFLOW", ENOTSUP: "ENOTSUP",
             ESHUTDOWN: "ESHUTDOWN"}

MAX_STRING = 4096


def rep_name(t):
    return REP_NAMES.get(t, f"{t:#x}")


def err_name(e):
    return ERR_NAMES.get(e, str(e))


class Violation(AssertionError):
    """The server broke the protocol; the message names the rule."""


def violation(rule, msg):
    raise Violation(f"{'rule ' if isinstance(rule, int) else ''}{rule}: {msg}")


class OptReply:
    def __init__(self, option, rtype, data):
        self.option, self.type, self.data = option, rtype, data

    @property
    def is_error(self):
        return bool(self.type & REP_FLAG_ERROR)

    def __repr__(self):
        return f"<{rep_name(self.type)} for option {self.option} ({len(self.data)} bytes)>"


class ExportInfo:
    """What an INFO/GO told us."""
    def __init__(self):
        self.size = self.tflags = None
        self.name = self.description = None
        self.block_size = None       # (min, preferred, max)
        self.infos = []              # (type, raw payload) in order
        self.raw_export = None

    def same_as(self, other):
        return (self.size, self.tflags, self.name, self.description, self.block_size) == \
            (other.size, other.tflags, other.name, other.description, other.block_size)


class Request:
    def __init__(self, cmd, cookie, offset, length, flags, ext):
        self.cmd, self.cookie, self.offset, self.length, self.flags = cmd, cookie, offset, length, flags
        self.ext = ext


class Reply:
    """Every message of one request's reply, assembled."""
    def __init__(self, req):
        self.req = req
        self.simple = None           # True: simple reply; False: chunks
        self.done = False
        self.error = 0               # first error value seen (0: success)
        self.errors = []             # (type, error, message, offset or None)
        self.chunks = []             # (flags, type, length) in arrival order
        self.content = []            # READ content chunks: (offset, length, kind)
        self.data = None             # READ: bytearray of the request's length
        self.extents = {}            # context id -> [(length, flags)]
        self.ext_offsets = []        # extended headers: the offset field of each chunk

    @property
    def ok(self):
        return self.done and self.error == 0

    def describe(self):
        r = self.req
        return f"{CMD_NAMES.get(r.cmd, r.cmd)} offset {r.offset} length {r.length} flags {r.flags:#x}"


class Closed(Exception):
    """The server closed the connection."""


class Wire(Conn):
    reset_is_eof = True

    def __init__(self, unix=None, tcp=None, timeout=10.0, sock=None):
        super().__init__(unix=unix, tcp=tcp, timeout=timeout, sock=sock)
        self.no_zeroes = False
        self.sr = False              # structured replies negotiated
        self.eh = False              # extended headers negotiated
        self.info = None             # ExportInfo of the export in use
        self.pending = {}            # cookie -> Reply (not yet DONE)
        self.finished = {}           # cookie -> Reply (DONE, not yet collected)
        self.next_cookie = 1
        self.contexts = {}           # meta context id -> name (SET_META_CONTEXT)

    # ---- faults: a Violation naming the rule; Closed at EOF (nbdproto.Conn's hooks) ----
    def bad(self, rule, msg):
        violation(rule, msg)

    def eof(self, got, wanted):
        raise Closed(f"server closed the connection after {got} of {wanted} bytes")

    # ---- bytes (recv_exact, send, wait_closed: nbdproto.Conn) ----
    def pending_bytes(self, wait=0.3):
        """Bytes the server sent that nobody asked for within `wait` s (b'' if none;
        raises Closed at EOF)."""
        self.s.settimeout(wait)
        try:
            data = self.s.recv(65536)
            if not data:
                raise Closed("server closed the connection")
            return data
        except socket.timeout:
            return b""
        except ConnectionResetError:
            raise Closed("connection reset by the server")
        finally:
            self.s.settimeout(self.timeout)

    def expect_hard_close(self, what, rule, wait=5.0):
        """The server must close without sending anything."""
        closed, data = self.wait_closed(wait)
        if data:
            violation(rule, f"{what}: server sent {len(data)} bytes ({data[:40].hex()}) "
                            "instead of closing the connection")
        if not closed:
            violation(rule, f"{what}: connection still open after {wait} s (expected a "
                            "hard close)")

    # ---- handshake (greeting, send_option: nbdproto.Conn) ----
    def client_flags(self, flags):
        self.no_zeroes = bool(flags & FLAG_NO_ZEROES)
        self.send_client_flags(flags)

    def start(self, no_zeroes=True):
        """Greeting, then FIXED_NEWSTYLE (+ NO_ZEROES when advertised and wanted)."""
        flags = self.greeting()
        self.client_flags(FLAG_FIXED_NEWSTYLE |
                          (FLAG_NO_ZEROES if no_zeroes and flags & FLAG_NO_ZEROES else 0))
        return self

    def option_reply(self, expect_option=None):
        opt, rtype, data = self.recv_option_reply(expect_option)
        r = OptReply(opt, rtype, data)
        if r.is_error and data:
            check_string(data, f"error message of {rep_name(rtype)}")
        return r

    def option(self, option, data=b"", length=None):
        """Sends one option; returns (final reply, [earlier replies])."""
        self.send_option(option, data, length)
        return self.replies_until_final(option)

    def replies_until_final(self, option):
        earlier = []
        while True:
            r = self.option_reply(option)
            if r.type == REP_ACK or r.is_error:
                return r, earlier
            earlier.append(r)

    def simple_option(self, option, data=b""):
        """An option whose only reply is ACK or an error (STRUCTURED_REPLY, ...)."""
        final, earlier = self.option(option, data)
        if earlier:
            violation(4, f"option {option}: unexpected replies {earlier} before {final}")
        return final

    def structured_reply(self):
        r = self.simple_option(OPT_STRUCTURED_REPLY)
        assert r.type == REP_ACK, f"NBD_OPT_STRUCTURED_REPLY refused: {r} {r.data!r}"
        self.sr = True
        return r

    def extended_headers(self):
        r = self.simple_option(OPT_EXTENDED_HEADERS)
        assert r.type == REP_ACK, f"NBD_OPT_EXTENDED_HEADERS refused: {rep_name(r.type)} {r.data!r}"
        self.eh = True
        return r

    def info_or_go(self, option, name, infos=(), data=None, send=True):
        """NBD_OPT_INFO / NBD_OPT_GO. Returns (final reply, ExportInfo). Checks rule 8 on
        success: NBD_INFO_EXPORT of length 12 before the ACK. send=False: the option was
        already sent; only read its replies."""
        if send:
            self.send_option(option, info_payload(name, infos) if data is None else data)
        final, earlier = self.replies_until_final(option)
        info = ExportInfo()
        for r in earlier:
            if r.type != REP_INFO:
                violation(8, f"reply {rep_name(r.type)} to INFO/GO (only REP_INFO before the end)")
            if len(r.data) < 2:
                violation(8, f"REP_INFO with {len(r.data)} bytes")
            itype = struct.unpack(">H", r.data[:2])[0]
            info.infos.append((itype, r.data))
            if itype == INFO_EXPORT:
                if len(r.data) != 12:
                    violation(8, f"NBD_INFO_EXPORT of length {len(r.data)}, must be 12")
                info.size, info.tflags = struct.unpack(">QH", r.data[2:])
                info.raw_export = r.data
            elif itype == INFO_NAME:
                info.name = check_string(r.data[2:], "NBD_INFO_NAME")
            elif itype == INFO_DESCRIPTION:
                info.description = check_string(r.data[2:], "NBD_INFO_DESCRIPTION")
            elif itype == INFO_BLOCK_SIZE:
                if len(r.data) != 14:
                    violation(10, f"NBD_INFO_BLOCK_SIZE of length {len(r.data)}, must be 14")
                info.block_size = struct.unpack(">III", r.data[2:])
        if final.type == REP_ACK:
            if info.size is None:
                violation(8, "INFO/GO succeeded without NBD_INFO_EXPORT")
            if option == OPT_GO:
                self.info = info
        return final, info

    def go(self, name="", infos=()):
        final, info = self.info_or_go(OPT_GO, name, infos)
        assert final.type == REP_ACK, \
            f"NBD_OPT_GO '{name}' failed: {rep_name(final.type)} {final.data[:200]!r}"
        return info

    def export_name(self, name):
        """NBD_OPT_EXPORT_NAME success: size, flags, 124 zeroes unless NO_ZEROES."""
        self.send_option(OPT_EXPORT_NAME, enc_name(name))
        size, tflags = struct.unpack(">QH", self.recv_exact(10))
        if not self.no_zeroes:
            pad = self.recv_exact(124)
            if pad != bytes(124):
                violation(7, "the 124 bytes after size and flags are not all zero")
        self.info = ExportInfo()
        self.info.size, self.info.tflags = size, tflags
        return self.info

    def meta_context(self, option, name, queries=(), data=None):
        """LIST/SET_META_CONTEXT. Returns (final reply, [(id, name)])."""
        final, earlier = self.option(option, meta_payload(name, queries) if data is None else data)
        out = []
        for r in earlier:
            if r.type != REP_META_CONTEXT:
                violation(14, f"reply {rep_name(r.type)} to a meta-context option")
            if len(r.data) < 5:
                violation(14, f"NBD_REP_META_CONTEXT of {len(r.data)} bytes")
            cid = struct.unpack(">I", r.data[:4])[0]
            out.append((cid, check_string(r.data[4:], "meta context name", rule=14)))
        return final, out

    def negotiate(self, name="", sr=False, eh=False, meta=(), infos=(), no_zeroes=True):
        """Greeting, flags, optional SR/EH and SET_META_CONTEXT, then GO."""
        self.start(no_zeroes)
        if sr:
            self.structured_reply()
        if eh:
            self.extended_headers()
        if meta:
            final, ctx = self.meta_context(OPT_SET_META_CONTEXT, name, meta)
            assert final.type == REP_ACK, f"SET_META_CONTEXT failed: {rep_name(final.type)}"
            self.contexts = dict(ctx)
        self.go(name, infos)
        return self

    # ---- transmission ----
    def cookie(self):
        c = self.next_cookie
        self.next_cookie += 1
        return c

    def send_request(self, cmd, offset=0, length=0, flags=0, payload=b"", cookie=None,
                     ext=None, register=True):
        """Sends one request (compact header, or extended once negotiated or when ext=True).
        Returns the cookie. For DISC nothing is registered (no reply exists)."""
        if cookie is None:
            cookie = self.cookie()
        ext = self.eh if ext is None else ext
        hdr = request_header(cmd, cookie, offset, length, flags, ext)
        if register and cmd != CMD_DISC:
            if cookie in self.pending:
                raise ValueError(f"cookie {cookie:#x} already in flight")
            self.pending[cookie] = Reply(Request(cmd, cookie, offset, length, flags, ext))
        self.send(hdr + payload)
        return cookie

    def recv_message(self):
        """Reads one reply message (a simple reply or one chunk), checks it, and files it
        under its request. Returns the Reply it belongs to."""
        head = self.recv_exact(4)
        magic = struct.unpack(">I", head)[0]
        if magic == SIMPLE_REPLY_MAGIC:
            error, cookie = struct.unpack(">IQ", self.recv_exact(12))
            rep = self._reply_for(cookie, "simple reply")
            req = rep.req
            if self.eh:
                violation(16, f"simple reply to {rep.describe()} after extended headers")
            if self.sr and req.cmd == CMD_READ:
                violation(19, f"simple reply (error {err_name(error)}) to {rep.describe()} "
                              "although structured replies were negotiated")
            if rep.chunks:
                violation(18, f"simple reply to {rep.describe()} after structured chunks")
            check_error_value(error, rep)
            rep.simple = True
            rep.error = error
            if error == 0 and req.cmd == CMD_READ and req.length:
                rep.data = bytearray(self.recv_exact(req.length))
            elif error:
                rep.errors.append((None, error, "", None))
            self._finish(rep)
            return rep
        if magic == STRUCTURED_REPLY_MAGIC:
            flags, rtype, cookie, length = struct.unpack(">HHQI", self.recv_exact(16))
            offset_field = None
            if self.eh:
                violation(16, "structured (20-byte) chunk after extended headers were negotiated")
            if not self.sr:
                violation(19, "structured reply chunk although structured replies were not "
                              "negotiated")
        elif magic == EXT_REPLY_MAGIC:
            flags, rtype, cookie, offset_field, length = struct.unpack(">HHQQQ",
                                                                      self.recv_exact(28))
            if not self.eh:
                violation(16, "extended reply header although extended headers were not "
                              "negotiated")
        else:
            violation(18, f"reply magic {magic:#x} is none of simple/structured/extended")
        rep = self._reply_for(cookie, f"chunk type {rtype}")
        if length > (64 << 20) + 64 and rtype != RT_BLOCK_STATUS and rtype != RT_BLOCK_STATUS_EXT:
            violation(20, f"chunk of {length} bytes for {rep.describe()}")
        payload = self.recv_exact(length) if length else b""
        self._chunk(rep, flags, rtype, payload, offset_field)
        return rep

    def _reply_for(self, cookie, what):
        rep = self.pending.get(cookie)
        if rep is None:
            if cookie in self.finished:
                violation(20, f"{what} for cookie {cookie:#x} after its final (DONE) chunk")
            violation(18, f"{what} for cookie {cookie:#x}, which no request in flight has")
        return rep

    def _finish(self, rep):
        rep.done = True
        del self.pending[rep.req.cookie]
        self.finished[rep.req.cookie] = rep

    def _chunk(self, rep, flags, rtype, payload, offset_field):
        req = rep.req
        rep.chunks.append((flags, rtype, len(payload)))
        rep.simple = False
        if flags & ~REPLY_FLAG_DONE:
            violation(20, f"chunk flags {flags:#x} (only DONE is defined) in reply to {rep.describe()}")
        if offset_field is not None:
            rep.ext_offsets.append(offset_field)
            if offset_field != req.offset:
                violation(16, f"extended reply offset {offset_field} differs from the request's "
                              f"{req.offset} ({rep.describe()})")
        n = len(payload)
        if rtype & 0x8000:                                   # error chunks
            if rtype == RT_ERROR:
                if n < 6:
                    violation(31, f"NBD_REPLY_TYPE_ERROR of length {n} (< 6)")
            elif rtype == RT_ERROR_OFFSET:
                if n < 14:
                    violation(31, f"NBD_REPLY_TYPE_ERROR_OFFSET of length {n} (< 14)")
            elif n < 6:
                violation(31, f"error chunk type {rtype:#x} of length {n} (< 6)")
            error, mlen = struct.unpack(">IH", payload[:6])
            if error == 0:
                violation(31, f"error chunk with error 0 in reply to {rep.describe()}")
            check_error_value(error, rep)
            tail = 8 if rtype == RT_ERROR_OFFSET else 0
            if mlen > n - 6 - tail:
                violation(31, f"error message length {mlen} exceeds the chunk ({n} bytes)")
            if mlen > MAX_STRING:
                violation(31, f"error message of {mlen} bytes (> 4096)")
            msg = check_string(payload[6:6 + mlen], "error message", rule=31)
            eoff = None
            if rtype == RT_ERROR_OFFSET:
                eoff = struct.unpack(">Q", payload[6 + mlen:6 + mlen + 8])[0]
                if not (req.offset <= eoff < req.offset + max(req.length, 1)):
                    violation(31, f"NBD_REPLY_TYPE_ERROR_OFFSET offset {eoff} outside the "
                                  f"request ({rep.describe()})")
                if req.cmd not in (CMD_READ, CMD_WRITE, CMD_TRIM, CMD_CACHE, CMD_WRITE_ZEROES,
                                   CMD_BLOCK_STATUS):
                    violation(31, f"ERROR_OFFSET is not valid for {rep.describe()}")
            if not rep.error:
                rep.error = error
            rep.errors.append((rtype, error, msg, eoff))
        elif rtype == RT_NONE:
            if n != 0:
                violation(20, f"NBD_REPLY_TYPE_NONE with length {n}")
            if not flags & REPLY_FLAG_DONE:
                violation(20, "NBD_REPLY_TYPE_NONE without the DONE flag")
        elif rtype in (RT_OFFSET_DATA, RT_OFFSET_HOLE):
            if req.cmd != CMD_READ:
                violation(20, f"content chunk in reply to {rep.describe()}")
            if rtype == RT_OFFSET_DATA:
                if n < 9:
                    violation(20, f"NBD_REPLY_TYPE_OFFSET_DATA of length {n} (< 9)")
                off = struct.unpack(">Q", payload[:8])[0]
                clen, data = n - 8, payload[8:]
            else:
                if n != 12:
                    violation(20, f"NBD_REPLY_TYPE_OFFSET_HOLE of length {n} (must be 12)")
                off, clen = struct.unpack(">QI", payload)
                data = None
                if clen == 0:
                    violation(20, "NBD_REPLY_TYPE_OFFSET_HOLE with hole size 0")
            if off < req.offset or off + clen > req.offset + req.length:
                violation(20, f"content chunk [{off}, {off + clen}) outside the request "
                              f"[{req.offset}, {req.offset + req.length})")
            for (o, l, _k) in rep.content:
                if off < o + l and o < off + clen:
                    violation(20, f"content chunk [{off}, {off + clen}) overlaps [{o}, {o + l})")
            for (_t, _e, _m, eo) in rep.errors:
                if eo is not None and off <= eo < off + clen:
                    violation(20, f"content chunk [{off}, {off + clen}) after an error chunk "
                                  f"at {eo}")
            if req.flags & CMD_FLAG_DF and rep.content:
                violation(20, "more than one content chunk although DF was set")
            rep.content.append((off, clen, rtype))
            if rep.data is None:
                rep.data = bytearray(req.length)
            rel = off - req.offset
            if data is not None:
                rep.data[rel:rel + clen] = data
            else:
                rep.data[rel:rel + clen] = bytes(clen)
        elif rtype in (RT_BLOCK_STATUS, RT_BLOCK_STATUS_EXT):
            if req.cmd != CMD_BLOCK_STATUS:
                violation(30, f"block status chunk in reply to {rep.describe()}")
            if rtype == RT_BLOCK_STATUS:
                if self.eh:
                    violation(16, "NBD_REPLY_TYPE_BLOCK_STATUS after extended headers "
                                  "(must be BLOCK_STATUS_EXT)")
                if n < 12 or (n - 4) % 8:
                    violation(30, f"NBD_REPLY_TYPE_BLOCK_STATUS of length {n} "
                                  "(must be 4 + 8k, k >= 1)")
                cid = struct.unpack(">I", payload[:4])[0]
                ext = [struct.unpack(">II", payload[i:i + 8]) for i in range(4, n, 8)]
            else:
                if not self.eh:
                    violation(16, "NBD_REPLY_TYPE_BLOCK_STATUS_EXT without extended headers")
                if n < 24 or (n - 8) % 16:
                    violation(16, f"NBD_REPLY_TYPE_BLOCK_STATUS_EXT of length {n} "
                                  "(must be 8 + 16k, k >= 1)")
                cid, count = struct.unpack(">II", payload[:8])
                if count * 16 + 8 != n:
                    violation(16, f"BLOCK_STATUS_EXT descriptor count {count} but length {n}")
                ext = [struct.unpack(">QQ", payload[i:i + 16]) for i in range(8, n, 16)]
            if cid in rep.extents:
                violation(30, f"two block status chunks for context {cid}")
            for (elen, _f) in ext:
                if elen == 0:
                    violation(30, "block status descriptor of length 0")
            rep.extents[cid] = ext
        else:
            violation(20, f"unknown chunk type {rtype} in reply to {rep.describe()}")
        if flags & REPLY_FLAG_DONE:
            if req.cmd == CMD_READ and rep.error == 0 and req.length:
                covered = sum(l for (_o, l, _k) in rep.content)
                if covered != req.length:
                    violation(20, f"successful structured READ covers {covered} of "
                                  f"{req.length} bytes ({rep.describe()})")
            self._finish(rep)

    def wait(self, cookie):
        """Reads messages until the reply to `cookie` is complete; returns its Reply."""
        while cookie not in self.finished:
            if cookie not in self.pending:
                raise KeyError(f"cookie {cookie:#x} was never sent")
            self.recv_message()
        return self.finished.pop(cookie)

    def request(self, cmd, offset=0, length=0, flags=0, payload=b"", ext=None):
        """Sends one request and returns its complete Reply."""
        return self.wait(self.send_request(cmd, offset, length, flags, payload, ext=ext))

    def read(self, offset, length, flags=0):
        rep = self.request(CMD_READ, offset, length, flags)
        assert rep.error == 0, f"READ {offset}+{length} failed: {err_name(rep.error)} " \
                               f"{rep.errors}"
        return bytes(rep.data or b"")

    def write(self, offset, data, flags=0):
        if self.eh:
            flags |= CMD_FLAG_PAYLOAD_LEN
        rep = self.request(CMD_WRITE, offset, len(data), flags, data)
        assert rep.error == 0, f"WRITE {offset}+{len(data)} failed: {err_name(rep.error)}"
        return rep

    def disconnect(self):
        try:
            self.send_request(CMD_DISC)
        except OSError:
            pass
        self.close()


def check_string(data, what, rule=15):
    """Strings (names, messages): no NUL, at most 4096 bytes, UTF-8 (doc/proto.md)."""
    if len(data) > MAX_STRING:
        violation(rule, f"{what} of {len(data)} bytes (> 4096)")
    if b"\0" in data:
        violation(rule, f"{what} contains a NUL byte: {data[:80]!r}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        violation(rule, f"{what} is not UTF-8: {data[:80]!r}")


def check_error_value(error, rep):
    if error and error not in ALLOWED_ERRORS:
        violation(35, f"error value {error} ({errno.errorcode.get(error, '?')}) in reply to "
                      f"{rep.describe()}: only EPERM EIO ENOMEM EINVAL ENOSPC EOVERFLOW "
                      "ENOTSUP ESHUTDOWN may be sent")


def wait_readable(sock, timeout):
    r, _, _ = select.select([sock], [], [], timeout)
    return bool(r)
