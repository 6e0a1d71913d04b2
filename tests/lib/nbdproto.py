# SPDX-License-Identifier: MIT
"""nbdproto.py: the raw-socket NBD client every Python test shares (tests/lib; run with
/usr/bin/python3). It sends what libnbd will not: any client flags, options and requests with
any fields and payloads, compact or extended request headers.

Here:
  - the protocol's constants (doc/proto.md "Values", the spec's names without NBD_);
  - the encoders of option payloads and request headers;
  - Conn, a connection with the handshake and transmission framing: greeting, client flags,
    options and their replies, request headers, simple replies. Conn reports a protocol
    fault through self.bad(rule, message), which raises AssertionError(message); a subclass
    can raise its own error instead. The server closing the connection in the middle of a
    message goes through self.eof(got, wanted), likewise;
  - Raw, the plain raw client over Conn: fixed newstyle, NBD_OPT_EXPORT_NAME / NBD_OPT_GO,
    optional extended headers, requests with any type, flags, cookie, offset, length and
    payload. Every failure raises AssertionError with a message, so a test prints one line
    and fails.

Suite-specific clients built on Conn keep only what is theirs:
  tests/conformance/nbdwire.py  checks every server message against the spec (Violation)
  tests/tls/nbdtls.py           STARTTLS and the TLS rule checks
and tests/durability/vanishing_clients.py and tests/fuzz/make_corpus.py use the encoders
for their byte streams.

Importing: a test puts this folder on sys.path (PYTHONPATH=$SRCDIR/tests/lib from a shell
test; `sys.path.insert` of tests/lib from a module beside it).
"""
import socket
import struct
import time

# ---- constants (doc/proto.md "Values") ----
NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
EXT_REQUEST_MAGIC = 0x21E41C71
SIMPLE_REPLY_MAGIC = 0x67446698
STRUCTURED_REPLY_MAGIC = 0x668E33EF
EXT_REPLY_MAGIC = 0x6E8A278C

FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES = 1, 2

OPT_EXPORT_NAME, OPT_ABORT, OPT_LIST, OPT_PEEK_EXPORT, OPT_STARTTLS = 1, 2, 3, 4, 5
OPT_INFO, OPT_GO, OPT_STRUCTURED_REPLY, OPT_LIST_META_CONTEXT = 6, 7, 8, 9
OPT_SET_META_CONTEXT, OPT_EXTENDED_HEADERS = 10, 11

REP_ACK, REP_SERVER, REP_INFO, REP_META_CONTEXT = 1, 2, 3, 4
REP_FLAG_ERROR = 1 << 31
REP_ERR_UNSUP = REP_FLAG_ERROR | 1
REP_ERR_POLICY = REP_FLAG_ERROR | 2
REP_ERR_INVALID = REP_FLAG_ERROR | 3
REP_ERR_PLATFORM = REP_FLAG_ERROR | 4
REP_ERR_TLS_REQD = REP_FLAG_ERROR | 5
REP_ERR_UNKNOWN = REP_FLAG_ERROR | 6
REP_ERR_SHUTDOWN = REP_FLAG_ERROR | 7
REP_ERR_BLOCK_SIZE_REQD = REP_FLAG_ERROR | 8
REP_ERR_TOO_BIG = REP_FLAG_ERROR | 9
REP_ERR_EXT_HEADER_REQD = REP_FLAG_ERROR | 10

INFO_EXPORT, INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE = 0, 1, 2, 3

TF_HAS_FLAGS = 1 << 0
TF_READ_ONLY = 1 << 1
TF_SEND_FLUSH = 1 << 2
TF_SEND_FUA = 1 << 3
TF_ROTATIONAL = 1 << 4
TF_SEND_TRIM = 1 << 5
TF_SEND_WRITE_ZEROES = 1 << 6
TF_SEND_DF = 1 << 7
TF_CAN_MULTI_CONN = 1 << 8
TF_SEND_RESIZE = 1 << 9
TF_SEND_CACHE = 1 << 10
TF_SEND_FAST_ZERO = 1 << 11
TF_BLOCK_STATUS_PAYLOAD = 1 << 12

CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH, CMD_TRIM = 0, 1, 2, 3, 4
CMD_CACHE, CMD_WRITE_ZEROES, CMD_BLOCK_STATUS, CMD_RESIZE = 5, 6, 7, 8

CMD_FLAG_FUA = 1 << 0
CMD_FLAG_NO_HOLE = 1 << 1
CMD_FLAG_DF = 1 << 2
CMD_FLAG_REQ_ONE = 1 << 3
CMD_FLAG_FAST_ZERO = 1 << 4
CMD_FLAG_PAYLOAD_LEN = 1 << 5

# NBD error values (the eight the spec allows)
EPERM, EIO, ENOMEM, EINVAL, ENOSPC, EOVERFLOW, ENOTSUP, ESHUTDOWN = 1, 5, 12, 22, 28, 75, 95, 108


# ---- encoders ----
def enc_name(name):
    """A name (str or bytes) as bytes (str: UTF-8)."""
    return name if isinstance(name, bytes) else name.encode()


def info_payload(name, infos=()):
    """NBD_OPT_INFO / NBD_OPT_GO data: name length, name, count, info types."""
    n = enc_name(name)
    return struct.pack(">I", len(n)) + n + struct.pack(">H", len(infos)) + \
        b"".join(struct.pack(">H", i) for i in infos)


def meta_payload(name, queries=()):
    """NBD_OPT_LIST_META_CONTEXT / NBD_OPT_SET_META_CONTEXT data."""
    n = enc_name(name)
    out = struct.pack(">I", len(n)) + n + struct.pack(">I", len(queries))
    for q in queries:
        q = enc_name(q)
        out += struct.pack(">I", len(q)) + q
    return out


def option_header(option, length):
    """The 16-byte option header (IHAVEOPT, option, data length)."""
    return struct.pack(">QII", IHAVEOPT, option, length)


def request_header(cmd, cookie, offset=0, length=0, flags=0, ext=False):
    """A request header: compact (28 bytes; length cut to 32 bits) or, with ext, extended
    (32 bytes, 64-bit length)."""
    if ext:
        return struct.pack(">IHHQQQ", EXT_REQUEST_MAGIC, flags, cmd, cookie, offset, length)
    return struct.pack(">IHHQQI", REQUEST_MAGIC, flags, cmd, cookie, offset,
                       length & 0xFFFFFFFF)


def export_info(replies):
    """(size, transmission flags) from the NBD_INFO_EXPORT among [(type, data)] option
    replies, or (None, None) when there is none."""
    for rtype, data in replies:
        if rtype == REP_INFO and len(data) >= 12 and \
                struct.unpack(">H", data[:2])[0] == INFO_EXPORT:
            return struct.unpack(">QH", data[2:12])
    return None, None


class Conn:
    """One connection to the server: a Unix socket path, a (host, port) pair, or a socket
    made elsewhere (sock). `s` is the socket (a client may replace it, as by TLS)."""

    # what ends wait_closed() as "the server closed it" besides EOF (nbdtls adds ssl.SSLError)
    close_errors = (ConnectionResetError, BrokenPipeError)
    # a reset while recv_exact() reads counts as the server closing (else it is raised)
    reset_is_eof = False

    def __init__(self, unix=None, tcp=None, timeout=10.0, sock=None):
        if sock is not None:
            self.s = sock
        elif unix is not None:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.settimeout(timeout)
            self.s.connect(unix)
        else:
            self.s = socket.create_connection(tcp, timeout=timeout)
        self.timeout = timeout
        self.s.settimeout(timeout)
        self.server_flags = None

    # ---- how faults are reported (a client may override) ----
    def bad(self, rule, msg):
        """The server broke the protocol (rule: the rule's number in
        docs/spec-rules.md, for clients that name it)."""
        raise AssertionError(msg)

    def eof(self, got, wanted):
        """The server closed the connection after `got` of `wanted` bytes of a message."""
        raise AssertionError(f"server closed the connection after {got} of {wanted} bytes")

    # ---- bytes ----
    def send(self, data):
        self.s.sendall(data)

    def recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.s.recv(min(n - len(buf), 1 << 20))
            except ConnectionResetError:
                if not self.reset_is_eof:
                    raise
                chunk = b""
            if not chunk:
                self.eof(len(buf), n)
            buf += chunk
        return bytes(buf)

    def wait_closed(self, wait=5.0):
        """Reads until EOF. Returns (closed, data): closed is False when the connection
        stayed open for `wait` s; data is whatever arrived before."""
        deadline = time.monotonic() + wait
        data = b""
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False, data
                self.s.settimeout(left)
                chunk = self.s.recv(65536)
                if not chunk:
                    return True, data
                data += chunk
        except self.close_errors:
            return True, data
        except socket.timeout:
            return False, data
        finally:
            try:
                self.s.settimeout(self.timeout)
            except OSError:
                pass

    def closed_by_server(self, wait=5.0):
        """True if the server ends the connection (EOF or reset) within `wait` s."""
        return self.wait_closed(wait)[0]

    # ---- handshake ----
    def greeting(self):
        """Reads NBDMAGIC, IHAVEOPT and the 16-bit handshake flags; returns the flags."""
        magic, opt, flags = struct.unpack(">QQH", self.recv_exact(18))
        if magic != NBDMAGIC or opt != IHAVEOPT:
            self.bad(1, f"bad greeting magics {magic:#x} {opt:#x}")
        self.server_flags = flags
        return flags

    def send_client_flags(self, flags):
        self.send(struct.pack(">I", flags))

    def send_option(self, option, data=b"", length=None):
        """One option; length: the length field, when it is to lie about the data."""
        self.send(option_header(option, len(data) if length is None else length) + data)

    def recv_option_reply(self, expect_option=None):
        """One option reply: checks its magic and (when given) the option it names; returns
        (option, type, data)."""
        magic, opt, rtype, length = struct.unpack(">QIII", self.recv_exact(20))
        if magic != REPLY_MAGIC:
            self.bad(4, f"bad option reply magic {magic:#x}, expected {REPLY_MAGIC:#x}")
        if expect_option is not None and opt != expect_option:
            self.bad(4, f"option reply names option {opt:#x}, the client sent "
                        f"{expect_option:#x}")
        return opt, rtype, self.recv_exact(length) if length else b""

    def option_replies(self, option, data=b""):
        """Sends an option; returns its replies [(type, data)] up to the final one (ACK or
        an error)."""
        self.send_option(option, data)
        replies = []
        while True:
            _, rtype, rdata = self.recv_option_reply(option)
            replies.append((rtype, rdata))
            if rtype == REP_ACK or rtype & REP_FLAG_ERROR:
                return replies

    # ---- transmission ----
    def send_request(self, cmd, cookie, offset=0, length=0, flags=0, payload=b"", ext=False):
        self.send(request_header(cmd, cookie, offset, length, flags, ext) + payload)

    def reply_magic(self):
        return struct.unpack(">I", self.recv_exact(4))[0]

    def simple_reply_tail(self, cookie=None):
        """After a simple-reply magic: returns (error, cookie); with `cookie`, checks it."""
        error, got = struct.unpack(">IQ", self.recv_exact(12))
        if cookie is not None and got != cookie:
            self.bad(18, f"reply cookie {got:#x}, expected {cookie:#x}")
        return error, got

    def simple_reply(self, cookie=None):
        """The next reply, which must be simple: returns (error, cookie)."""
        magic = self.reply_magic()
        if magic != SIMPLE_REPLY_MAGIC:
            self.bad(19, f"reply magic {magic:#x}, expected a simple reply")
        return self.simple_reply_tail(cookie)

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class Raw(Conn):
    """A raw client: the handshake step by step (haggling, negotiated) or all at once, then
    requests. Replies are simple unless extended headers were negotiated (extended_headers);
    request() reads simple replies only, reply() either kind."""

    def __init__(self, unix=None, tcp=None, timeout=10.0):
        super().__init__(unix=unix, tcp=tcp, timeout=timeout)
        self.size = self.tflags = None
        self.ext = False  # extended headers negotiated: requests and replies are 32 bytes

    def pending(self, wait=0.3):
        """Bytes the server sent that nobody asked for (waits `wait` s; b'' if none)."""
        self.s.settimeout(wait)
        try:
            return self.s.recv(65536)
        except socket.timeout:
            return b""
        finally:
            self.s.settimeout(self.timeout)

    # ---- handshake (greeting, send_client_flags, send_option: Conn) ----
    def export_name(self, name, no_zeroes):
        """NBD_OPT_EXPORT_NAME: reads exactly 10 (+124 zero) bytes; no more may follow."""
        self.send_option(OPT_EXPORT_NAME, name.encode())
        self.size, self.tflags = struct.unpack(">QH", self.recv_exact(10))
        if not no_zeroes:
            pad = self.recv_exact(124)
            assert pad == bytes(124), "the 124 bytes after size+flags are not all zero"
        return self.size, self.tflags

    def go(self, name=""):
        """NBD_OPT_GO (no info requests): reads REP_INFO(s) up to REP_ACK."""
        self.send_option(OPT_GO, info_payload(name))
        while True:
            opt, rtype, data = self.recv_option_reply()
            assert opt == OPT_GO, f"option reply for option {opt}, expected {OPT_GO}"
            if rtype == REP_ACK:
                break
            assert rtype == REP_INFO, f"NBD_OPT_GO failed: reply type {rtype:#x} {data!r}"
            size, tflags = export_info([(rtype, data)])
            if size is not None:
                self.size, self.tflags = size, tflags
        assert self.size is not None, "no NBD_INFO_EXPORT before NBD_REP_ACK"
        return self.size, self.tflags

    def extended_headers(self):
        """NBD_OPT_EXTENDED_HEADERS, which must be acknowledged; later requests default to
        extended headers and reply() reads extended replies."""
        r = self.option_replies(OPT_EXTENDED_HEADERS)
        assert r[-1][0] == REP_ACK, "extended headers refused"
        self.ext = True

    @classmethod
    def haggling(cls, unix=None, tcp=None):
        """A connection in option haggling: the greeting read, fixed newstyle (+ NO_ZEROES
        when the server offers it) sent."""
        c = cls(unix=unix, tcp=tcp)
        flags = c.greeting()
        c.send_client_flags(FLAG_FIXED_NEWSTYLE | (flags & FLAG_NO_ZEROES))
        return c

    @classmethod
    def negotiated(cls, unix=None, tcp=None, name=""):
        """A connection in transmission phase (haggling, then NBD_OPT_GO)."""
        c = cls.haggling(unix=unix, tcp=tcp)
        c.go(name)
        return c

    # ---- transmission (simple_reply: Conn) ----
    def send_request(self, cmd, cookie, offset=0, length=0, flags=0, payload=b"", ext=None):
        """Conn.send_request with ext defaulting to whether extended headers were
        negotiated."""
        super().send_request(cmd, cookie, offset, length, flags, payload,
                             self.ext if ext is None else ext)

    def request(self, cmd, cookie, offset=0, length=0, flags=0, payload=b"", read_len=None):
        """Sends one request and waits for its simple reply. Returns (error, data): data is
        read only when error == 0 and the command is READ (read_len bytes, default
        `length`)."""
        self.send_request(cmd, cookie, offset, length, flags, payload)
        error, _ = self.simple_reply(cookie)
        data = b""
        if error == 0 and cmd == CMD_READ:
            data = self.recv_exact(length if read_len is None else read_len)
        return error, data

    def reply(self, read_length=0):
        """The next reply, whatever its cookie: (error, cookie, data) of a simple reply
        (data: read_length bytes on success), or of one extended chunk (data: an
        OFFSET_DATA chunk's bytes)."""
        if self.ext:
            magic, _flags, rtype, cookie, _offset, length = \
                struct.unpack(">IHHQQQ", self.recv_exact(32))
            assert magic == EXT_REPLY_MAGIC, hex(magic)
            body = self.recv_exact(length)
            if rtype & 0x8000:
                return struct.unpack(">I", body[:4])[0], cookie, b""
            return 0, cookie, body[8:] if rtype == 1 else b""
        magic, error, cookie = struct.unpack(">IIQ", self.recv_exact(16))
        assert magic == SIMPLE_REPLY_MAGIC, hex(magic)
        data = self.recv_exact(read_length) if error == 0 and read_length else b""
        return error, cookie, data

    def read(self, offset, length, cookie=0x5EAD):
        error, data = self.request(CMD_READ, cookie, offset, length)
        assert error == 0, f"READ {offset}+{length} failed with NBD error {error}"
        return data

    def close(self):
        """NBD_CMD_DISC (when the connection still takes it), then close."""
        try:
            self.send_request(CMD_DISC, 0)
        except OSError:
            pass
        self.s.close()
