"""rawnbd.py: a tiny raw-socket NBD client for regression tests (fixed newstyle, NBD_OPT_GO,
optional structured replies / extended headers). Only what the tests here need."""
import socket
import struct

NBD_MAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REP_MAGIC = 0x0003E889045565A9
REQ_MAGIC = 0x25609513
EXT_REQ_MAGIC = 0x21E41C71
SIMPLE_MAGIC = 0x67446698
EXT_REPLY_MAGIC = 0x6E8A278C


class Client:
    def __init__(self, sock_path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(10)
        self.s.connect(sock_path)
        magic, opt, flags = struct.unpack(">QQH", self.recv(18))
        assert magic == NBD_MAGIC and opt == IHAVEOPT, "bad greeting"
        self.s.sendall(struct.pack(">I", 3))  # FIXED_NEWSTYLE | NO_ZEROES
        self.ext = False

    def recv(self, n):
        b = b""
        while len(b) < n:
            chunk = self.s.recv(n - len(b))
            if not chunk:
                raise EOFError("server closed the connection")
            b += chunk
        return b

    def option(self, opt, data=b""):
        self.s.sendall(struct.pack(">QII", IHAVEOPT, opt, len(data)) + data)
        replies = []
        while True:
            magic, o, rtype, length = struct.unpack(">QIII", self.recv(20))
            assert magic == REP_MAGIC
            replies.append((rtype, self.recv(length)))
            if rtype == 1 or rtype & 0x80000000:
                return replies

    def go(self, name=b""):
        return self.option(7, struct.pack(">I", len(name)) + name + struct.pack(">H", 0))

    def extended_headers(self):
        r = self.option(11)
        assert r[-1][0] == 1, "extended headers refused"
        self.ext = True

    def request(self, cmd, offset, length, flags=0, cookie=1, payload=b""):
        if self.ext:
            hdr = struct.pack(">IHHQQQ", EXT_REQ_MAGIC, flags, cmd, cookie, offset, length)
        else:
            hdr = struct.pack(">IHHQQI", REQ_MAGIC, flags, cmd, cookie, offset, length)
        self.s.sendall(hdr + payload)

    def reply(self, read_length=0):
        """Returns (error, cookie, data) of a simple reply, or of one extended chunk."""
        if self.ext:
            magic, flags, rtype, cookie, offset, length = struct.unpack(">IHHQQQ", self.recv(32))
            assert magic == EXT_REPLY_MAGIC, hex(magic)
            body = self.recv(length)
            if rtype & 0x8000:
                return struct.unpack(">I", body[:4])[0], cookie, b""
            return 0, cookie, body[8:] if rtype == 1 else b""
        magic, error, cookie = struct.unpack(">IIQ", self.recv(16))
        assert magic == SIMPLE_MAGIC, hex(magic)
        data = self.recv(read_length) if error == 0 and read_length else b""
        return error, cookie, data
