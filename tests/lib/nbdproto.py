"""nbdproto.py: what the raw-socket NBD test clients share (tests/lib; run with /usr/bin/python3).

The clients built on it, each keeping its own checks and conveniences:
  tests/conformance/nbdwire.py  checks every server message against the spec (Violation)
  tests/interop/nbdraw.py       any client flags, EXPORT_NAME / GO, simple replies only
  tests/tls/nbdtls.py           STARTTLS and the TLS rule checks
  tests/regress/rawnbd.py       GO, optional extended headers, for the regression checks
and tests/durability/c01_clients.py uses the encoders for its byte stream.

Here: the protocol's constants (doc/proto.md "Values", the spec's names without NBD_), the
encoders of option payloads and request headers, and Conn, a connection with the handshake
and transmission framing: greeting, client flags, options and their replies, request
headers, simple replies. Conn reports a protocol fault through self.bad(rule, message),
which raises AssertionError(message); a client can raise its own error instead (nbdwire:
a Violation naming the rule). The server closing the connection in the middle of a message
goes through self.eof(got, wanted), likewise.

Importing: the clients put this folder on sys.path (see `lib_path` in each), so nothing
needs PYTHONPATH beyond the client's own folder.
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
        ../shared/nbd-spec-rules.md, for clients that name it)."""
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
